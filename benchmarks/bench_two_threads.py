"""Two threads against one for ``loss_and_grad``: back to back, after the process sat idle and
right after a two-thread matmul (appendix "Benchmarks").

Usage (from the repository root)::

    python benchmarks/bench_two_threads.py [--ns 500 710 1000 1414 2000]
        [--dtypes float64 float32] [--rounds 21] [--output PATH]

``bench_floor.py`` times every configuration right after its floor, whose GEMM runs on two
OpenBLAS threads; OpenBLAS's workers keep spinning for a while after a product
(``bench_blas_threads.py``), so a two-thread call timed just after one shares the cores with
them. This benchmark times ``attention.loss_and_grad(A, B, X, Y, workers=w, dtype=...)`` (the
data of ``_problem.py``, the engine as installed) for ``w`` = 1 and 2 in three settings, one
after the other, with one and two workers interleaved in every round (alternating order):

* ``alone``: the calls back to back, as in a training loop;
* ``after_idle``: each timing after 0.15 s of sleep (an idle core wakes slowly: on the book's
  machine a second thread sped small calls up only some tens of milliseconds later);
* ``after_matmul``: each timing right after a 2000 x 2000 float64 product on two BLAS threads.

``workers=2`` runs two threads at every size here: ``attention.KERNEL_PARALLEL_BYTES`` is set
to 0 for the run, so the table shows what a second thread gives at each size and the
appendix derives from it where the library should use one (its threshold is stored in the
results). A null row times ``workers=1`` against ``workers=1`` (float64, the smallest n): a
comparison that meets "never slower" by construction, which shows what the instrument reads
for it.

Each time is the mean of ``calls`` calls (about 20 ms of work); the ratio two threads / one
thread is taken per round and reported as the median over rounds with its range and the load
average. Results: ``benchmarks/results/benchmark_two_threads.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

from _problem import problem

SETTINGS = ("alone", "after_idle", "after_matmul")
IDLE_SECONDS = 0.15
MATMUL_SIZE = 2000


def _time_calls(call, calls: int) -> float:
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls


def measure(n: int, dtype: str, rounds: int, matmul: np.ndarray, second: int = 2) -> dict:
    """Per setting: the median seconds of one and ``second`` workers and the per-round
    ratios (``second = 1``: the null row)."""
    from attnlib import attention

    a, b, x, y = problem(n)
    calls = max(1, int(2e-2 / (2e-9 * n * n)))          # about 20 ms of work per timing

    def run(workers: int) -> None:
        attention.loss_and_grad(a, b, x, y, workers=workers, dtype=dtype)

    seconds = {(setting, side): [] for setting in SETTINGS for side in ("one", "two")}
    for workers in (1, second):                         # warm-up (and the kernel's compile)
        run(workers)
    for setting in SETTINGS:        # all "alone" rounds first: no product has run before them
        for index in range(rounds):
            for side in (("one", "two") if index % 2 else ("two", "one")):
                if setting == "after_matmul":
                    matmul @ matmul
                elif setting == "after_idle":
                    time.sleep(IDLE_SECONDS)
                workers = 1 if side == "one" else second
                seconds[(setting, side)].append(_time_calls(lambda: run(workers), calls))
    row = {"n": n, "dtype": dtype, "calls": calls, "null": second == 1,
           "engine": "kernel" if attention._use_kernel(x.shape[1], n * n) else "numpy",
           "pair_bytes": n * n * np.dtype(dtype).itemsize}
    for setting in SETTINGS:
        one, two = (np.asarray(seconds[(setting, side)]) for side in ("one", "two"))
        ratios = two / one
        row[setting] = {"one_ms": float(np.median(one) * 1e3),
                        "two_ms": float(np.median(two) * 1e3),
                        "ratio_median": float(np.median(ratios)),
                        "ratio_min": float(ratios.min()), "ratio_max": float(ratios.max())}
    return row


def _report(row: dict) -> None:
    label = "null (one thread on both sides)" if row["null"] else "two threads"
    for setting in SETTINGS:
        r = row[setting]
        print(f"n = {row['n']:5d} {row['dtype']} {label:>31} {setting:>12}: one thread "
              f"{r['one_ms']:.3f} ms, other {r['two_ms']:.3f} ms, ratio "
              f"{r['ratio_median']:.2f} [{r['ratio_min']:.2f}, {r['ratio_max']:.2f}]",
              flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[500, 710, 1000, 1414, 2000])
    parser.add_argument("--dtypes", nargs="+", default=["float64", "float32"],
                        choices=["float64", "float32"])
    parser.add_argument("--rounds", type=int, default=21)
    parser.add_argument("--output", default=None,
                        help="default: benchmarks/results/benchmark_two_threads.json")
    args = parser.parse_args()
    import threadpoolctl

    import attnlib
    from attnlib import attention

    matmul = np.random.default_rng(0).standard_normal((MATMUL_SIZE, MATMUL_SIZE))
    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "python": platform.python_version(), "numpy": np.__version__,
            "attnlib": attnlib.__version__, "cpu_count": os.cpu_count(),
            "rounds": args.rounds, "idle_seconds": IDLE_SECONDS,
            "kernel_parallel_bytes": attention.KERNEL_PARALLEL_BYTES,
            "load_average_before": os.getloadavg()}
    library_threshold = attention.KERNEL_PARALLEL_BYTES
    attention.KERNEL_PARALLEL_BYTES = 0                 # two threads at every size
    rows = []
    try:
        with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
            rows.append(measure(min(args.ns), args.dtypes[0], args.rounds, matmul, second=1))
            _report(rows[-1])
            for dtype in args.dtypes:
                for n in args.ns:
                    rows.append(measure(n, dtype, args.rounds, matmul))
                    _report(rows[-1])
    finally:
        attention.KERNEL_PARALLEL_BYTES = library_threshold
    meta["load_average_after"] = os.getloadavg()
    output = Path(args.output) if args.output else (
        Path(__file__).resolve().parent / "results" / "benchmark_two_threads.json")
    output.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
