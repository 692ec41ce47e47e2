"""attnlib against the PyTorch a user would write: interleaved, repeated (appendix "Benchmarks").

Usage (from the repository root, with torch installed: ``pip install -e ".[bench]"``)::

    python benchmarks/bench_competitors.py [--ns 500 2000 8000 20000] [--output PATH]
        [--keep-thread-env]

The stored runs: ``benchmark_competitors.json`` (default threads) and
``benchmark_competitors_1thread.json`` (``OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1`` and
``--keep-thread-env``: PyTorch on one thread, attnlib with its two block threads).

The loss and gradient of paper 1's layer (d = 10, p = 20, leave-one-out mask) in float64 and
float32, by five implementations:

* ``attnlib``: ``attention.loss_and_grad`` as a user calls it (defaults; ``dtype`` set);
* ``torch_naive``: the full n x n computation differentiated by autograd;
* ``torch_blocked``: the same by hand in blocks of 256 query rows, ``backward()`` per block
  (gradients accumulate), so only 256 x n arrays exist at a time;
* ``torch_compile``: ``torch.compile(dynamic=True)`` of the naive loss, then ``backward()``.

Each implementation runs in its own persistent process with its default threads (PyTorch's
intra-op threads, one per core; attnlib's two block threads), whatever ``OMP_NUM_THREADS`` the
caller has set. For each n every configuration is first called
once (the warm-up; for ``torch_compile`` it compiles) and once more. Its *memory* is measured
in a fresh process (:func:`fresh_memory`): the rise of the peak resident set size over the RSS
before one call, the peak reset just before (``/proc/self/clear_refs``); in a warm process the
allocator keeps freed memory (glibc raises its mmap threshold after large frees, attnlib keeps
its work arrays), so a second call would not show it. Then come interleaved rounds: in each round the
configurations run in a freshly shuffled order, each timed over a few calls, so slow drifts of
the machine's load hit every implementation alike; a configuration's time is the median over
rounds, with the range. The 1-minute load average is recorded at every round. Every implementation's
loss and gradients are compared with attnlib's float64 result. At n = 20,000 the float64
naive and compiled versions (about 9 GB each) are skipped unless ``--include-huge``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _problem import D, P, problem as _problem, relative as _relative, status_kb as _status_kb

BLOCK = 256
#: Every implementation runs with its default threads: the thread variables that the book's
#: scripts set to 1 (scripts/setup.sh) are removed from the environment of its processes.
ENV = {key: value for key, value in os.environ.items()
       if key not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
IMPLS = ("attnlib", "torch_naive", "torch_blocked", "torch_compile")
DTYPES = ("float64", "float32")
#: (rounds, calls per round) by n: fewer repeats where one call takes seconds
REPEATS = {500: (7, 10), 2000: (5, 3), 8000: (3, 1), 20000: (1, 1)}


# ----------------------------------------------------------------- implementations
def _attnlib_call(n: int, dtype: str):
    from attnlib import attention

    a, b, x, y = _problem(n)
    return lambda: attention.loss_and_grad(a, b, x, y, dtype=np.dtype(dtype))


_COMPILED = {}


def _torch_call(impl: str, n: int, dtype: str):
    import torch

    a, b, x, y = _problem(n)
    kind = getattr(torch, dtype)
    xt, yt = torch.tensor(x, dtype=kind), torch.tensor(y, dtype=kind)
    at = torch.tensor(a, dtype=kind, requires_grad=True)
    bt = torch.tensor(b, dtype=kind, requires_grad=True)

    def naive_loss(at, bt, xt, yt):
        count = xt.shape[0]
        logits = (xt @ bt) @ xt.T
        eye = torch.eye(count, dtype=torch.bool)
        weights = torch.softmax(logits.masked_fill(eye, float("-inf")), dim=1)
        residual = yt - (weights @ xt) @ at.T
        return (residual * residual).sum() / (2 * count)

    if impl == "torch_naive":
        loss = naive_loss
    elif impl == "torch_compile":
        if dtype not in _COMPILED:
            _COMPILED[dtype] = torch.compile(naive_loss, dynamic=True)
        loss = _COMPILED[dtype]

    def call():
        at.grad = bt.grad = None
        if impl != "torch_blocked":
            value = loss(at, bt, xt, yt)
            value.backward()
            return float(value.detach()), at.grad.numpy(), bt.grad.numpy()
        total = 0.0
        for start in range(0, n, BLOCK):
            stop = min(start + BLOCK, n)
            logits = (xt[start:stop] @ bt) @ xt.T
            rows = torch.arange(stop - start)
            logits[rows, rows + start] = float("-inf")
            weights = torch.softmax(logits, dim=1)
            residual = yt[start:stop] - (weights @ xt) @ at.T
            value = (residual * residual).sum() / (2 * n)
            value.backward()
            total += float(value.detach())
        return total, at.grad.numpy(), bt.grad.numpy()

    return call


def serve(impl: str) -> None:
    """A persistent worker: reads JSON commands on stdin, answers one JSON line each."""
    answers = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)                       # anything else printed (compiler logs) goes to stderr
    calls, exact_by_n = {}, {}
    info = {}
    if impl != "attnlib":
        import torch

        info = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    print(json.dumps(info), file=answers, flush=True)
    for line in sys.stdin:
        command = json.loads(line)
        key = (command["n"], command["dtype"])
        try:
            if command["cmd"] == "setup":
                make = _attnlib_call if impl == "attnlib" else (
                    lambda n, dtype: _torch_call(impl, n, dtype))
                for other in [k for k in calls if k[0] != command["n"]
                              and not command.get("keep")]:   # bench_floor.py keeps every n
                    del calls[other]            # keep the other dtype of this n only
                start = time.perf_counter()
                calls[key] = make(*key)
                first = calls[key]()
                warmup = time.perf_counter() - start
                baseline = _status_kb("VmRSS")
                Path("/proc/self/clear_refs").write_text("5")
                start = time.perf_counter()
                calls[key]()
                second = time.perf_counter() - start
                peak = max(_status_kb("VmHWM") - baseline, 0) / 1024
                from attnlib import attention

                if command["n"] not in exact_by_n:
                    exact_by_n[command["n"]] = attention.loss_and_grad(*_problem(command["n"]))
                exact = exact_by_n[command["n"]]
                answer = {"warmup_seconds": warmup, "second_call_seconds": second,
                          "peak_mb_warm": peak,
                          "rel_diff_vs_attnlib64": {
                              "loss": abs(first[0] - exact[0]) / exact[0],
                              "grad_A": _relative(first[1], exact[1]),
                              "grad_B": _relative(first[2], exact[2])}}
            elif command["cmd"] == "time":
                if command.get("threads") and impl != "attnlib":   # bench_floor.py's threads
                    import torch

                    torch.set_num_threads(command["threads"])
                times = []
                for _ in range(command["calls"]):
                    start = time.perf_counter()
                    calls[key]()
                    times.append(time.perf_counter() - start)
                answer = {"seconds": times}
            else:
                answer = {"error": f"unknown command {command['cmd']}"}
        except Exception as exc:  # noqa: BLE001 - reported, e.g. torch.compile without a compiler
            answer = {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300]}"}
        print(json.dumps(answer), file=answers, flush=True)


def fresh_memory(impl: str, n: int, dtype: str) -> float:
    """Peak RSS rise (MB) of one call in a fresh process (``torch_compile``: compiled first,
    on a call at n = 64, so the compiler's own memory is not counted)."""
    make = (f"b._attnlib_call({n}, {dtype!r})" if impl == "attnlib"
            else f"b._torch_call({impl!r}, {n}, {dtype!r})")
    warm = (f"b._torch_call({impl!r}, 64, {dtype!r})(); " if impl == "torch_compile" else "")
    code = ("import bench_competitors as b; from pathlib import Path; "
            f"{warm}call = {make}; base = b._status_kb('VmRSS'); "
            "Path('/proc/self/clear_refs').write_text('5'); call(); "
            "print(max(b._status_kb('VmHWM') - base, 0) / 1024)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent, check=True, env=ENV)
    return float(done.stdout.strip().splitlines()[-1])


def remeasure_memory(path: Path) -> None:
    """Replace ``peak_mb`` of every row of a stored run by :func:`fresh_memory`."""
    results = json.loads(path.read_text())
    for row in results["rows"]:
        if row["impl"] == "attnlib":
            continue                     # already measured in a fresh process by the run
        row["peak_mb"] = fresh_memory(row["impl"], row["n"], row["dtype"])
        print(f"n = {row['n']:6d} {row['impl']:14s} {row['dtype']}: {row['peak_mb']:.0f} MB "
              f"(warm process: {row['peak_mb_warm']:.0f} MB)", flush=True)
    results["meta"]["memory"] = "first call in a fresh process (remeasured)"
    results["meta"]["load_average_memory"] = os.getloadavg()
    path.write_text(json.dumps(results, indent=1) + "\n")


class Worker:
    def __init__(self, impl: str):
        self.impl = impl
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", impl],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, cwd=Path(__file__).resolve().parent.parent,
                                        env=ENV)
        self.info = json.loads(self.process.stdout.readline())

    def ask(self, **command) -> dict:
        self.process.stdin.write(json.dumps(command) + "\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


def _available_gb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 2 ** 20
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[500, 2000, 8000, 20000])
    parser.add_argument("--include-huge", action="store_true")
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--output", default=None)
    parser.add_argument("--memory-only", default=None, metavar="JSON",
                        help="only remeasure the memory of the rows of a stored run")
    parser.add_argument("--keep-thread-env", action="store_true",
                        help="keep OMP_NUM_THREADS etc. of the environment (with them set to "
                             "1, PyTorch runs on one thread)")
    args = parser.parse_args()
    if args.keep_thread_env:
        ENV.update(os.environ)
    if args.serve:
        serve(args.serve)
        return
    if args.memory_only:
        remeasure_memory(Path(args.memory_only))
        return
    from attnbook import experiments

    rng = random.Random(0)
    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "python": platform.python_version(), "numpy": np.__version__,
            "cpu_count": os.cpu_count(), "d": D, "p": P, "block_rows_torch": BLOCK,
            "repeats": {str(n): list(REPEATS.get(n, (2, 1))) for n in args.ns},
            "load_average_before": os.getloadavg()}
    workers = {impl: Worker(impl) for impl in IMPLS}
    meta["torch"] = workers["torch_naive"].info
    rows, notes = [], []
    try:
        for n in args.ns:
            configs = []
            for impl in IMPLS:
                for dtype in DTYPES:
                    huge = (n >= 20000 and dtype == "float64" and not args.include_huge
                            and impl in ("torch_naive", "torch_compile"))
                    if huge:
                        notes.append(f"n = {n}: {impl} {dtype} skipped (about 9 GB and minutes "
                                     "per call on this shared machine; --include-huge runs it)")
                        continue
                    print(f"n = {n:6d} {impl:14s} {dtype}: setup ...", end=" ", flush=True)
                    setup = workers[impl].ask(cmd="setup", n=n, dtype=dtype)
                    print(setup.get("error") or f"{setup['warmup_seconds']:.2f} s warm-up",
                          flush=True)
                    if "error" in setup:
                        notes.append(f"n = {n}: {impl} {dtype} failed: {setup['error']}")
                        continue
                    row = {"impl": impl, "dtype": dtype, "n": n, **setup, "seconds": [],
                           "load": []}
                    row["peak_mb"] = fresh_memory(impl, n, dtype)
                    configs.append(row)
            rounds, calls = REPEATS.get(n, (2, 1))
            for _ in range(rounds):
                rng.shuffle(configs)
                for row in configs:
                    answer = workers[row["impl"]].ask(cmd="time", n=n, dtype=row["dtype"],
                                                      calls=calls)
                    if "error" in answer:
                        raise RuntimeError(f"{row['impl']} {row['dtype']} n = {n}: "
                                           f"{answer['error']}")
                    row["seconds"].append(float(np.median(answer["seconds"])))
                    row["load"].append(os.getloadavg()[0])
            for row in configs:
                row["seconds_median"] = float(np.median(row["seconds"]))
                print(f"n = {n:6d} {row['impl']:14s} {row['dtype']}: "
                      f"{row['seconds_median']:.4g} s, {row['peak_mb']:.0f} MB", flush=True)
            rows.extend(configs)
    finally:
        for worker in workers.values():
            worker.close()
    meta["load_average_after"] = os.getloadavg()
    meta["mem_available_gb_after"] = _available_gb()
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    meta["sched_autogroup"] = autogroup.read_text().strip() if autogroup.exists() else None
    output = Path(args.output) if args.output else experiments.benchmark_path("competitors")
    output.write_text(json.dumps({"meta": meta, "rows": rows, "notes": notes}, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
