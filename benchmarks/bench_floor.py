"""attnlib's loss and gradient against this machine's floor (appendix "Benchmarks").

Usage (from the repository root)::

    python benchmarks/bench_floor.py [--ns 500 2000 8000] [--rounds 7] [--output PATH]
        [--competitors] [--threads 1 2]

For d = 10, p = 20, the leave-one-out mask, float64 and float32, 1 and 2 threads:

* ``attnlib``: ``attention.loss_and_grad(A, B, X, Y, dtype=dtype, workers=threads)`` on the
  data of ``bench_attention.py`` (seed 8), as installed: through the fused kernel
  (``attnlib._kernel``) when numba is installed, else numpy. Both engines are timed in every
  round whenever the kernel is available, ``attention.ENGINE`` set to ``"numpy"`` (the
  reference path) and to ``"kernel"``; the stored row's headline figures are those of the
  engine a user gets (``engine``), the other's under ``impls``;
* ``--competitors``: the PyTorch a user would write (``bench_competitors.py``: naive autograd,
  hand-blocked in 256 rows, ``torch.compile``), each in its own persistent process with
  ``torch.set_num_threads(threads)``, timed in the same rounds, interleaved with attnlib and
  the floor (needs torch, the ``bench`` extra; without it they are left out with a note);
* ``floor``: ``8 n^2 d`` flops at this machine's GEMM rate plus ``n^2`` exponentials at its
  exp rate, both measured in the same round as sustained rates: the GEMM rate of a 2000 x 2000
  product in ``dtype`` on ``threads`` BLAS threads (best of 3), and the rate of ``numpy.exp``
  with ``threads`` threads each applying it 64 times to its own tile of
  ``attention.BLOCK_ELEMENTS`` entries (values in [-8, 0]; best of 3). The floor counts no
  memory traffic, no max / sum passes, no call overhead: no implementation that uses numpy's
  exp and this BLAS can reach it.
* ``earlier floor``: the rule of the first stored runs, printed beside it because it was
  changed after they were seen. The exponentials were timed at each n's size, ``n^2`` entries
  in all in tiles of attnlib's block shape, split between the threads. At small n that
  timing is mostly thread hand-over, and in the first stored runs two threads took as long as
  one, up to n = 2000. That floor was too lenient with two threads: attnlib came out faster than
  it (ratio 0.90 at n = 2000, float64), so a target counted as met there was not established.

* ``skinny``: the measured rate of the products as the numpy path makes them: the four
  products with an inner dimension of d (the logits, ``E X``, ``(G / z) X^T``, ``T X``) on
  blocks of attnlib's automatic shape, ``threads`` threads each taking its share of the n rows'
  blocks on one BLAS thread (best of 3). ``skinny floor`` = ``8 n^2 d`` flops at that rate
  plus the exponentials: the floor that is reachable with numpy's exp and these products, the
  numpy path's own floor. The fused kernel does not run these products and may beat it.

The floor is split per configuration: ``products`` (the ``8 n^2 d`` flops at the GEMM rate),
``exp`` (the ``n^2`` exponentials at the sustained exp rate) and ``overhead`` = attnlib's time
minus both: what the passes around the exponential, the products' shortfall from the GEMM
rate and the call itself cost. Beside it, the passes over the n^2 entries attnlib makes
(:data:`PASSES`, counted from ``attention._softmax_rows`` and ``attention._block_rows``: every
numpy or BLAS call that reads or writes a whole ``block x n`` work array counts once, in
place or not; calls on one entry per row, such as the leave-one-out mask, do not count; the
kernel's loops over a row's n entries, ``attnlib._kernel.source``) against :data:`MIN_PASSES`,
the fewest the math needs.

Every round runs every configuration once, in a freshly shuffled order, and times its floor
and then each implementation (in a freshly shuffled order too) back to back, so a change of the
machine's load hits all of them; each ratio to the floor is taken per round and reported as the
median over rounds with its range. The 1-minute
load average is recorded at every round (the machine is shared: quote ratios, and the load
beside them). With one thread the same ratio is also taken in CPU seconds of the process
(``cpu_ratio``): it measures the work done, whatever share of the cores the process got.
Results: ``benchmarks/results/benchmark_floor.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from _problem import D, P, problem as _problem

DTYPES = ("float64", "float32")
THREADS = (1, 2)
#: Passes over the n^2 entries per call, by the softmax's shift (attention._softmax_rows):
#: "none" (logits bounded: the bench's data) makes the logits product, exp, the row sums as a
#: product with ones, E X, T = (G / z) X^T, T *= E and T X; "row maximum" adds the maximum and
#: the subtraction.
PASSES = {"none": 7, "row maximum": 9}
#: The same for the fused kernel (attnlib._kernel.source): pass 1 (logits, exp, row sums, E X)
#: and pass 2 (T X with T = E (G / z) X^T made on the fly); "row maximum" adds the logits pass.
KERNEL_PASSES = {"none": 2, "row maximum": 3}
#: The PyTorch implementations of bench_competitors.py (with --competitors)
COMPETITORS = ("torch_naive", "torch_blocked", "torch_compile")
#: The fewest passes the math needs: one that makes E (logits and exponential fused) with its
#: row sums and E X, and one that reads E again for sum_i w_ji (g_j . x_i) x_i, which needs
#: g_j, known only once the row's h_j is.
MIN_PASSES = 2
#: calls per round by n (one call at n = 8000 takes a quarter to a few seconds)
CALLS = {500: 20, 2000: 3, 8000: 1}
_POOL = ThreadPoolExecutor(max_workers=max(THREADS))


def target(n: int) -> float:
    """The target for attnlib / floor [choice]: at most 2 below n = 2000, at most 1.5 from
    n = 2000 on (stored with each row, so the appendix judges by it)."""
    return 2.0 if n < 2000 else 1.5


def _seconds(call, calls: int) -> tuple[float, float]:
    """Wall and CPU seconds (of this process) per call."""
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(calls):
        call()
    return (time.perf_counter() - wall) / calls, (time.process_time() - cpu) / calls


def _best_of_3(call) -> tuple[float, float]:
    """The least wall and the least CPU seconds of ``call`` over 3 timings after a warm-up."""
    call()
    times = [_seconds(call, 1) for _ in range(3)]
    return min(t[0] for t in times), min(t[1] for t in times)


def gemm_rate(dtype: str, threads: int) -> tuple[float, float]:
    """Flops per wall second and per CPU second of a 2000 x 2000 product in ``dtype`` on
    ``threads`` BLAS threads (best of 3 each)."""
    left = np.random.default_rng(0).standard_normal((2000, 2000)).astype(dtype)
    with threadpool_limits(limits=threads, user_api="blas"):
        wall, cpu = _best_of_3(lambda: left @ left)
    return 2 * 2000 ** 3 / wall, 2 * 2000 ** 3 / cpu


#: numpy.exp passes per thread over its tile when the sustained exp rate is measured
EXP_PASSES = 64


def exp_rate(dtype: str, threads: int) -> tuple[float, float]:
    """Exponentials per wall second and per CPU second: ``threads`` threads (the caller and
    pool threads) each apply ``numpy.exp`` ``EXP_PASSES`` times to its own tile of
    ``attention.BLOCK_ELEMENTS`` entries (values in [-8, 0]) into its own output (best of 3)."""
    from attnlib import attention

    sources = [np.linspace(-8.0, 0.0, attention.BLOCK_ELEMENTS).astype(dtype)
               for _ in range(threads)]
    outputs = [np.empty_like(source) for source in sources]

    def run(k: int) -> None:
        for _ in range(EXP_PASSES):
            np.exp(sources[k], out=outputs[k])

    def all_threads() -> None:
        helpers = [_POOL.submit(run, k) for k in range(1, threads)]
        run(0)
        for helper in helpers:
            helper.result()

    wall, cpu = _best_of_3(all_threads)
    entries = threads * EXP_PASSES * attention.BLOCK_ELEMENTS
    return entries / wall, entries / cpu


def exp_seconds(n: int, dtype: str, threads: int) -> tuple[float, float]:
    """The earlier rule: seconds for ``threads`` threads to apply ``numpy.exp`` to n^2 entries
    in all, in tiles of attnlib's block shape (one output tile per thread; best of 3)."""
    from attnlib import attention

    block = attention.auto_block_size(n, n)
    source = np.linspace(-8.0, 0.0, block * n).astype(dtype).reshape(block, n)
    outputs = [np.empty_like(source) for _ in range(threads)]
    passes = -(-n // block)
    shares = [len(range(k, passes, threads)) for k in range(threads)]

    def run(k: int) -> None:
        for _ in range(shares[k]):
            np.exp(source, out=outputs[k])

    def all_threads() -> None:
        if threads == 1:
            run(0)
        else:
            list(_POOL.map(run, range(threads)))

    return _best_of_3(all_threads)


def skinny_rate(n: int, dtype: str, threads: int) -> tuple[float, float]:
    """Flops per wall second and per CPU second of the numpy path's four products with an inner
    dimension of D (the logits, ``E X``, ``(G / z) X^T``, ``T X``: ``8 b n D`` flops per block of
    b rows) on blocks of ``attention.auto_block_size(n, n)`` rows: ``threads`` threads (the
    caller and pool threads) each take their share of the n rows' blocks, each with its own
    arrays, on one BLAS thread (best of 3)."""
    from attnlib import attention

    block = attention.auto_block_size(n, n)
    rng = np.random.default_rng(1)
    arrays = []
    for _ in range(threads):
        arrays.append({"qb": rng.standard_normal((block, D)).astype(dtype),
                       "keys_t": rng.standard_normal((D, n)).astype(dtype),
                       "keys": rng.standard_normal((n, D)).astype(dtype),
                       "e": rng.uniform(0.0, 1.0, (block, n)).astype(dtype),
                       "t": np.empty((block, n), dtype),
                       "h": np.empty((block, D), dtype), "ds": np.empty((block, D), dtype)})
    spans = -(-n // block)
    shares = [len(range(k, spans, threads)) for k in range(threads)]

    def run(k: int) -> None:
        a = arrays[k]
        for _ in range(shares[k]):
            np.matmul(a["qb"], a["keys_t"], out=a["t"])          # logits
            np.matmul(a["e"], a["keys"], out=a["h"])             # E X
            np.matmul(a["h"], a["keys_t"], out=a["t"])           # (G / z) X^T
            np.matmul(a["t"], a["keys"], out=a["ds"])            # T X

    def all_threads() -> None:
        helpers = [_POOL.submit(run, k) for k in range(1, threads)]
        run(0)
        for helper in helpers:
            helper.result()

    with threadpool_limits(limits=1, user_api="blas"):
        wall, cpu = _best_of_3(all_threads)
    flops = 8 * spans * block * n * D
    return flops / wall, flops / cpu


def shift(x: np.ndarray, b: np.ndarray, dtype: str) -> str:
    """The softmax's shift ``attention._softmax_rows`` takes on this data (a key of PASSES):
    none when ``max_j ||x_j^T B|| max_i ||x_i||`` bounds the logits within its safe range."""
    from attnlib import attention

    bound = np.linalg.norm(x @ b, axis=1).max() * np.linalg.norm(x, axis=1).max()
    return "none" if bound <= attention._SAFE_LOGIT[np.dtype(dtype)] else "row maximum"


def engines() -> list[str]:
    """The attnlib engines to time: numpy, and the kernel when numba is installed."""
    from attnlib import _kernel

    return ["numpy", "kernel"] if _kernel.available() else ["numpy"]


def installed_engine() -> str:
    """The engine a user gets by default (``attention.ENGINE = "auto"``) at these sizes."""
    from attnlib import _kernel

    return "kernel" if _kernel.available() and not _kernel.disabled_by_environment() else "numpy"


def _attnlib_seconds(engine: str, problem, dtype: str, threads: int,
                     calls: int) -> tuple[float, float]:
    from attnlib import attention

    a, b, x, y = problem
    before = attention.ENGINE
    attention.ENGINE = engine
    try:
        call = lambda: attention.loss_and_grad(a, b, x, y, dtype=np.dtype(dtype),  # noqa: E731
                                               workers=threads)
        call()
        return _seconds(call, calls)
    finally:
        attention.ENGINE = before


def measure(config: tuple[int, str, int], calls: int, impls: list[str], shuffle: random.Random,
            competitors: dict | None = None) -> dict:
    """One round of one configuration: its floor, then every implementation of ``impls`` in a
    shuffled order (``competitors``: the persistent PyTorch workers by name)."""
    n, dtype, threads = config
    problem = _problem(n)
    a, b, x, y = problem
    rate, cpu_rate = gemm_rate(dtype, threads)
    exp_per_second, exp_per_cpu_second = exp_rate(dtype, threads)
    skinny, _ = skinny_rate(n, dtype, threads)
    earlier_exp_time, _ = exp_seconds(n, dtype, threads)
    products = 8 * n * n * D / rate
    exponentials = n * n / exp_per_second
    floor = products + exponentials
    skinny_floor = 8 * n * n * D / skinny + exponentials
    earlier_floor = products + earlier_exp_time
    cpu_floor = 8 * n * n * D / cpu_rate + n * n / exp_per_cpu_second
    order = impls[:]
    shuffle.shuffle(order)
    timed = {}
    for impl in order:
        if impl in ("numpy", "kernel"):
            seconds, cpu = _attnlib_seconds(impl, problem, dtype, threads, calls)
        else:
            answer = competitors[impl].ask(cmd="time", n=n, dtype=dtype, calls=calls,
                                           threads=threads)
            if "error" in answer:
                raise RuntimeError(f"{impl} {dtype} n = {n}: {answer['error']}")
            seconds, cpu = float(np.median(answer["seconds"])), float("nan")
        timed[impl] = {"seconds": seconds, "ratio": seconds / floor,
                       "skinny_ratio": seconds / skinny_floor,
                       "overhead_seconds": seconds - floor}
        if threads == 1 and impl in ("numpy", "kernel"):
            # one thread: CPU seconds measure the work whatever the load
            timed[impl]["cpu_ratio"] = cpu / cpu_floor
    kind = shift(x, b, dtype)
    passes = {"numpy": PASSES[kind], "kernel": KERNEL_PASSES[kind]}
    main = timed[installed_engine()]
    result = {**main, "floor_seconds": floor, "products_seconds": products,
              "exp_seconds": exponentials, "gemm_gflops": rate / 1e9,
              "exp_per_second": exp_per_second, "skinny_gflops": skinny / 1e9,
              "skinny_floor_seconds": skinny_floor,
              "earlier_floor_seconds": earlier_floor,
              "earlier_ratio": main["seconds"] / earlier_floor,
              "load": os.getloadavg()[0], "passes": passes[installed_engine()],
              "impls": timed, "impl_passes": passes}
    return result


def _start_competitors(ns: list[int], notes: list[str]) -> dict:
    """The PyTorch workers of bench_competitors.py, set up for every n and dtype (empty, with a
    note, when torch is missing or a setup fails)."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        notes.append("competitors not measured: torch is not installed (pip install -e "
                     "'.[bench]', or run this script with a Python that has torch)")
        return {}
    from bench_competitors import Worker

    workers = {impl: Worker(impl) for impl in COMPETITORS}
    for impl, worker in list(workers.items()):
        for n in ns:
            for dtype in DTYPES:
                print(f"setting up {impl} n = {n} {dtype} ...", end=" ", flush=True)
                answer = worker.ask(cmd="setup", n=n, dtype=dtype, keep=True)
                print(answer.get("error") or f"{answer['warmup_seconds']:.1f} s", flush=True)
                if "error" in answer:
                    notes.append(f"{impl} left out: {answer['error']}")
                    worker.close()
                    del workers[impl]
                    break
            if impl not in workers:
                break
    return workers


def _summary(measured: list[dict], key: str) -> dict:
    values = [m[key] for m in measured]
    return {f"{key}_median": float(np.median(values)), f"{key}_min": float(min(values)),
            f"{key}_max": float(max(values))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--threads", type=int, nargs="+", default=list(THREADS))
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled orders")
    parser.add_argument("--competitors", action="store_true",
                        help="also time PyTorch (bench_competitors.py) in the same rounds")
    parser.add_argument("--output", default=None,
                        help="default: benchmarks/results/benchmark_floor.json")
    args = parser.parse_args()

    import attnlib
    from attnbook import experiments

    configs = [(n, dtype, threads) for n in args.ns for dtype in DTYPES
               for threads in args.threads]
    rounds: dict[tuple, list[dict]] = {config: [] for config in configs}
    shuffle = random.Random(args.seed)
    notes: list[str] = []
    competitors = _start_competitors(args.ns, notes) if args.competitors else {}
    impls = engines() + list(competitors)
    if "kernel" not in impls:
        notes.append("kernel not measured: numba is not installed (pip install "
                     "'attnlib[fast]')")
    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "python": platform.python_version(), "numpy": np.__version__,
            "attnlib": attnlib.__version__, "cpu_count": os.cpu_count(), "d": D, "p": P,
            "mask": "loo", "rounds": args.rounds, "calls": {n: CALLS.get(n, 1) for n in args.ns},
            "engine": installed_engine(), "impls": impls,
            "load_average_before": os.getloadavg()}
    if "kernel" in impls:
        import numba

        meta["numba"] = numba.__version__
    if competitors:
        meta["torch"] = next(iter(competitors.values())).info
    try:
        for index in range(args.rounds):
            order = configs[:]
            shuffle.shuffle(order)
            for config in order:
                rounds[config].append(measure(config, CALLS.get(config[0], 1), impls, shuffle,
                                              competitors))
            print(f"round {index + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}",
                  flush=True)
    finally:
        for worker in competitors.values():
            worker.close()
    meta["load_average_after"] = os.getloadavg()
    rows = []
    engine = installed_engine()
    print(f"attnlib as installed: {engine}; load average (1 min) before "
          f"{meta['load_average_before'][0]:.2f}, after {meta['load_average_after'][0]:.2f}")
    print(f"{'n':>6} {'dtype':>8} {'threads':>7} | {'attnlib ms':>10} {'floor ms':>9} | "
          f"{'attnlib / floor [range]':>24} | {'target':>6} | {'products':>8} {'exp':>7} "
          f"{'overhead':>8} {'/ prod.':>7} | {'passes':>11} | {'earlier floor':>13} | "
          f"{'GEMM GF/s':>9} {'exp G/s':>7} | {'CPU ratio':>9} | load")
    for (n, dtype, threads), measured in rounds.items():
        ratios = [m["ratio"] for m in measured]
        medians = {key: float(np.median([m[key] for m in measured]))
                   for key in ("seconds", "floor_seconds", "products_seconds", "exp_seconds",
                               "overhead_seconds", "earlier_ratio", "gemm_gflops",
                               "exp_per_second", "skinny_gflops", "skinny_floor_seconds")}
        impl_rows = {}
        for impl in impls:
            per = [m["impls"][impl] for m in measured]
            impl_rows[impl] = {
                "seconds_median": float(np.median([m["seconds"] for m in per])),
                **_summary(per, "ratio"),
                "skinny_ratio_median": float(np.median([m["skinny_ratio"] for m in per])),
                "overhead_seconds_median": float(np.median([m["overhead_seconds"]
                                                            for m in per]))}
            if "cpu_ratio" in per[0]:
                impl_rows[impl]["cpu_ratio_median"] = float(np.median([m["cpu_ratio"]
                                                                       for m in per]))
            if impl in measured[0]["impl_passes"]:
                impl_rows[impl]["passes"] = measured[0]["impl_passes"][impl]
        row = {"n": n, "dtype": dtype, "threads": threads, "target": target(n),
               "engine": engine,
               **{f"{key}_median": value for key, value in medians.items()},
               "ratio_median": float(np.median(ratios)), "ratio_min": float(min(ratios)),
               "ratio_max": float(max(ratios)), "passes": measured[0]["passes"],
               "min_passes": MIN_PASSES, "load": [m["load"] for m in measured],
               "impls": impl_rows}
        if threads == 1:
            row["cpu_ratio_median"] = impl_rows[engine]["cpu_ratio_median"]
        rows.append(row)
        ms = {key: 1e3 * value for key, value in medians.items() if key.endswith("seconds")}
        print(f"{n:6d} {dtype:>8} {threads:7d} | {ms['seconds']:10.3f} {ms['floor_seconds']:9.3f} | "
              f"{row['ratio_median']:8.2f} [{row['ratio_min']:.2f}, {row['ratio_max']:.2f}]"
              f"{'':>6} | {'<= ' + format(row['target'], 'g'):>6} | "
              f"{ms['products_seconds']:8.3f} {ms['exp_seconds']:7.3f} "
              f"{ms['overhead_seconds']:8.3f} "
              f"{ms['overhead_seconds'] / ms['products_seconds']:7.2f} | "
              f"{row['passes']:3d} (min {MIN_PASSES}) | {row['earlier_ratio_median']:13.2f} | "
              f"{row['gemm_gflops_median']:9.1f} {row['exp_per_second_median'] / 1e9:7.3f} | "
              f"{row.get('cpu_ratio_median', float('nan')):9.2f} | "
              f"{min(row['load']):.1f}-{max(row['load']):.1f}")
    print()
    print("every implementation, same rounds: median ms, time / floor [range over rounds], "
          "time / skinny floor; the skinny products' own rate (numpy's four products with "
          "inner dimension d)")
    print(f"{'n':>6} {'dtype':>8} {'threads':>7} | {'floor ms':>8} {'skinny GF/s':>11} "
          f"{'skinny floor ms':>15} | " + " | ".join(f"{impl:>30}" for impl in impls))
    for row in rows:
        cells = []
        for impl in impls:
            r = row["impls"][impl]
            cpu = f" cpu {r['cpu_ratio_median']:.2f}" if "cpu_ratio_median" in r else ""
            cells.append(f"{1e3 * r['seconds_median']:8.3f} {r['ratio_median']:5.2f} "
                         f"[{r['ratio_min']:.2f},{r['ratio_max']:.2f}] "
                         f"{r['skinny_ratio_median']:4.2f}{cpu}".rjust(30))
        print(f"{row['n']:6d} {row['dtype']:>8} {row['threads']:7d} | "
              f"{1e3 * row['floor_seconds_median']:8.3f} {row['skinny_gflops_median']:11.1f} "
              f"{1e3 * row['skinny_floor_seconds_median']:15.3f} | " + " | ".join(cells))
    by_config = {(row["n"], row["dtype"], row["threads"]): row for row in rows}
    print()
    for (n, dtype, threads), row in by_config.items():
        one = by_config.get((n, dtype, 1))
        if threads == 2 and one is not None:
            print(f"n = {n:5d} {dtype}: two threads / one thread " + ", ".join(
                f"{impl} {row['impls'][impl]['seconds_median'] / one['impls'][impl]['seconds_median']:.2f}"
                for impl in impls))
    for note in notes:
        print(f"note: {note}")
    output = Path(args.output) if args.output else experiments.benchmark_path("floor")
    output.write_text(json.dumps({"meta": meta, "rows": rows, "notes": notes}, indent=1)
                      + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
