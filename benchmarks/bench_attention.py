"""Benchmark the self-attention loss-and-gradient (issue 8; appendix "Benchmarks").

Usage (from the repository root)::

    python benchmarks/bench_attention.py [--ns 500 2000 8000 20000]
        [--torch-python /tmp/venvtorch/bin/python] [--output PATH]

Every configuration runs in its own fresh subprocess (``--worker JSON``), which builds the data
from a fixed seed, records its resident set size (VmRSS) just before the first call, resets the
peak (``echo 5 > /proc/self/clear_refs``, Linux), makes one call and reports the peak memory as
the rise of the peak RSS (VmHWM) over that baseline; it then times further calls (median and
minimum of wall-clock seconds). Configurations, for d = 10, p = 20, leave-one-out mask:

* ``attnlib``: ``attention.loss_and_grad`` as a user calls it (automatic block size, float64,
  default threads; through the fused kernel when numba is installed, ``engine`` says which);
  ``attnlib-1thread``: the same with ``workers=1``; ``attnlib-float32``: ``dtype=np.float32``
  (its relative error against float64 is recorded); ``attnlib-numpy`` and
  ``attnlib-numpy-float32``: the numpy path (``attention.ENGINE = "numpy"``), when the kernel is
  installed. The kernel is compiled (or loaded from numba's cache) on a small problem before
  the baseline is taken, so that neither numba's import nor its compiler counts as the call's
  memory;
* ``direct``: one block of n rows (``block_size=n``) on the numpy path, i.e. the unblocked
  computation with its n x n arrays;
* ``torch``: the same loss written in PyTorch and differentiated by autograd on the CPU, run
  with ``--torch-python`` (a Python that has torch and attnlib); it checks its gradient against
  attnlib's and records the relative difference; ``torch-1thread`` the same with
  ``torch.set_num_threads(1)``;
* ``floor``: the floor of ``bench_floor.py`` in float64 on 2 threads: n^2 exponentials (in
  tiles of attnlib's block shape) plus the 8 n^2 d flops of the products at the rate of a
  2000 x 2000 float64 matmul, both measured in the same run;
* ``langevin``: throughput of ``attnlib.langevin.euler_maruyama`` (chain-steps per second) on
  Part II's attention and LoRA problems, when those modules exist.

The direct and autograd versions at n = 20,000 need about 13 to 14 GB; they are skipped with a
note unless ``--include-huge`` is given. The machine is shared: the load average before and
after the run is stored with the results, and figures are compared as ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _problem import D, P, SEED, problem as _problem, relative as _relative, status_kb as _status_kb

HERE = Path(__file__).resolve().parent
HUGE_N = 20_000


# ------------------------------------------------------------------ measurement helpers
def _measure(call, repeats: int) -> dict:
    """Peak-memory rise of the first call, then wall time of ``repeats`` more calls."""
    baseline = _status_kb("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")
    start = time.perf_counter()
    call()
    first = time.perf_counter() - start
    peak_mb = max(_status_kb("VmHWM") - baseline, 0) / 1024
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return {"peak_mb": peak_mb, "seconds_first": first, "seconds_median": float(np.median(times)),
            "seconds_min": float(np.min(times)), "repeats": repeats}


# ------------------------------------------------------------------------------ workers
def worker_attnlib(config: dict) -> dict:
    from attnlib import attention

    if config.get("engine") == "numpy":
        attention.ENGINE = "numpy"
    a, b, x, y = _problem(config["n"])
    options = {k: config[k] for k in ("block_size", "workers") if config.get(k) is not None}
    if config.get("dtype") == "float32":
        options["dtype"] = np.float32
    engine = "kernel" if attention._use_kernel(x.shape[1], len(x) ** 2) else "numpy"
    if engine == "kernel":           # compiled or loaded from the cache before the baseline
        attention.loss_and_grad(a, b, x[:200], y[:200], **{**options, "block_size": None})
    result = _measure(lambda: attention.loss_and_grad(a, b, x, y, **options), config["repeats"])
    result["engine"] = engine
    result["block_size"] = options.get("block_size", attention.auto_block_size(len(x), len(x)))
    if config.get("dtype") == "float32":
        exact = attention.loss_and_grad(a, b, x, y)
        single = attention.loss_and_grad(a, b, x, y, **options)
        result["rel_error_vs_float64"] = {
            "loss": abs(single[0] - exact[0]) / exact[0],
            "grad_A": _relative(single[1], exact[1]), "grad_B": _relative(single[2], exact[2])}
    return result


def worker_torch(config: dict) -> dict:
    import torch

    from attnlib import attention

    if config.get("threads"):
        torch.set_num_threads(config["threads"])
    a, b, x, y = _problem(config["n"])
    n = len(x)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)
    eye = torch.eye(n, dtype=torch.bool)
    at = torch.tensor(a, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)

    def call():
        at.grad = bt.grad = None
        logits = (xt @ bt) @ xt.T
        weights = torch.softmax(logits.masked_fill(eye, float("-inf")), dim=1)
        residual = yt - (weights @ xt) @ at.T
        value = (residual * residual).sum() / (2 * n)
        value.backward()
        return value

    result = _measure(call, config["repeats"])
    value = call()
    exact = attention.loss_and_grad(a, b, x, y)
    result["rel_diff_vs_attnlib"] = {
        "loss": abs(float(value) - exact[0]) / exact[0],
        "grad_A": _relative(at.grad.numpy(), exact[1]),
        "grad_B": _relative(bt.grad.numpy(), exact[2])}
    result["torch_version"] = torch.__version__
    result["torch_threads"] = torch.get_num_threads()
    return result


def worker_floor(config: dict) -> dict:
    """The floor of ``bench_floor.py`` for float64 on 2 threads (attnlib's default workers)."""
    from bench_floor import exp_seconds, gemm_rate

    n = config["n"]
    rate, _ = gemm_rate("float64", 2)
    exp_time, _ = exp_seconds(n, "float64", 2)
    product_seconds = 8 * n * n * D / rate
    return {"exp_seconds": exp_time, "matmul_gflops": rate / 1e9,
            "product_seconds": product_seconds, "floor_seconds": exp_time + product_seconds}


def worker_langevin(config: dict) -> dict:
    from attnlib import langevin, lora, qk_attention

    results = {}
    for name, module in (("qk_attention", qk_attention), ("lora", lora)):
        problem = module.make_problem(rng=np.random.default_rng(SEED))
        chains, steps = config["chains"], config["steps"]
        theta0 = 0.1 * np.random.default_rng(1).standard_normal((chains, problem.dim))
        run = lambda: langevin.euler_maruyama(  # noqa: E731
            problem.loss_and_grad_flat, theta0, step=1e-3, temperature=0.1, n_steps=steps,
            rng=np.random.default_rng(2), record_every=steps)
        run()
        start = time.perf_counter()
        run()
        seconds = time.perf_counter() - start
        results[name] = {"chains": chains, "steps": steps, "dim": problem.dim,
                         "chain_steps_per_second": chains * steps / seconds}
    return results


WORKERS = {"attnlib": worker_attnlib, "torch": worker_torch, "floor": worker_floor,
           "langevin": worker_langevin}


# ---------------------------------------------------------------------------- driver
def _run(python: str, config: dict) -> dict | None:
    command = [python, str(Path(__file__).resolve()), "--worker", json.dumps(config)]
    done = subprocess.run(command, capture_output=True, text=True, cwd=HERE.parent)
    if done.returncode != 0:
        print(f"  FAILED {config}: {done.stderr.strip().splitlines()[-1:]}", flush=True)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _repeats(n: int) -> int:
    return {500: 20, 2000: 5, 8000: 3}.get(n, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[500, 2000, 8000, 20_000])
    parser.add_argument("--torch-python", default=None,
                        help="a Python interpreter with torch and attnlib installed")
    parser.add_argument("--include-huge", action="store_true",
                        help="also run direct and torch at n = 20,000 (about 14 GB each)")
    parser.add_argument("--block-sweep-n", type=int, default=8000,
                        help="n at which block sizes are swept (0: no sweep)")
    parser.add_argument("--output", default=None,
                        help="where to write the results (default: attnlib's package data, "
                             "benchmarks/results/benchmark_attention.json)")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        config = json.loads(args.worker)
        print(json.dumps(WORKERS[config["kind"]](config)))
        return

    import attnlib
    from attnbook import experiments

    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "python": platform.python_version(), "numpy": np.__version__,
            "attnlib": attnlib.__version__, "cpu_count": os.cpu_count(),
            "machine": platform.machine(), "d": D, "p": P, "mask": "loo",
            "load_average_before": os.getloadavg()}
    from attnlib import _kernel

    kernel = _kernel.available() and not _kernel.disabled_by_environment()
    meta["engine"] = "kernel" if kernel else "numpy"
    rows, notes = [], []
    plan = []
    for n in args.ns:
        base = {"n": n, "repeats": _repeats(n)}
        plan.append(("floor", sys.executable, {**base, "kind": "floor"}))
        plan.append(("attnlib", sys.executable, {**base, "kind": "attnlib"}))
        plan.append(("attnlib-1thread", sys.executable, {**base, "kind": "attnlib", "workers": 1}))
        plan.append(("attnlib-float32", sys.executable,
                     {**base, "kind": "attnlib", "dtype": "float32"}))
        if kernel:
            plan.append(("attnlib-numpy", sys.executable,
                         {**base, "kind": "attnlib", "engine": "numpy"}))
            plan.append(("attnlib-numpy-float32", sys.executable,
                         {**base, "kind": "attnlib", "engine": "numpy", "dtype": "float32"}))
        huge = n >= HUGE_N and not args.include_huge
        if huge:
            notes.append(f"n = {n}: direct and torch skipped (about 13-14 GB each); "
                         "rerun with --include-huge on an otherwise idle machine")
        else:
            plan.append(("direct", sys.executable,            # the numpy path's n x n arrays
                         {**base, "kind": "attnlib", "block_size": n, "workers": 1,
                          "engine": "numpy"}))
            if args.torch_python:
                plan.append(("torch", args.torch_python, {**base, "kind": "torch"}))
                plan.append(("torch-1thread", args.torch_python,
                             {**base, "kind": "torch", "threads": 1}))
    if not args.torch_python:
        notes.append("torch not measured (no --torch-python given)")
    if args.block_sweep_n:
        n = args.block_sweep_n
        for block in (8, 32, 128, 512, 2048):
            plan.append((f"attnlib-block{block}", sys.executable,
                         {"n": n, "repeats": 3, "kind": "attnlib", "block_size": block}))
    for name, python, config in plan:
        print(f"{name:18s} n = {config['n']:6d} ...", end=" ", flush=True)
        result = _run(python, config)
        if result is None:
            notes.append(f"{name} at n = {config['n']} failed")
            continue
        rows.append({"impl": name, "n": config["n"], **result})
        seconds = result.get("seconds_median", result.get("floor_seconds"))
        print(f"{seconds:.4g} s, peak {result.get('peak_mb', float('nan')):.0f} MB", flush=True)
    langevin = None
    if (HERE.parent / "attnlib" / "langevin.py").exists():
        langevin = _run(sys.executable, {"kind": "langevin", "chains": 256, "steps": 200})
    meta["load_average_after"] = os.getloadavg()
    output = Path(args.output) if args.output else experiments.benchmark_path("attention")
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps({"meta": meta, "rows": rows, "notes": notes,
                                  "langevin": langevin}, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
