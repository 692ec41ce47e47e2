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

``threads`` in each row is what ``workers=2`` really uses: below
``attention.KERNEL_PARALLEL_BYTES`` of query-key pairs the kernel stays on one thread.

Each time is the mean of ``calls`` calls; the ratio two threads / one thread is taken per
round and reported as the median over rounds with its range and the load average.
Results: ``benchmarks/results/benchmark_two_threads.json``.
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


def measure(n: int, dtype: str, rounds: int, matmul: np.ndarray) -> dict:
    """Per setting: the median seconds of one and two workers and the per-round ratios."""
    from attnlib import attention

    a, b, x, y = problem(n)
    calls = max(1, int(2e-2 / (2e-9 * n * n)))          # about 20 ms of work per timing

    def run(workers: int) -> None:
        attention.loss_and_grad(a, b, x, y, workers=workers, dtype=dtype)

    seconds = {(setting, w): [] for setting in SETTINGS for w in (1, 2)}
    for workers in (1, 2):                              # warm-up (and the kernel's compile)
        run(workers)
    for setting in SETTINGS:        # all "alone" rounds first: no product has run before them
        for index in range(rounds):
            for workers in ((1, 2) if index % 2 else (2, 1)):
                if setting == "after_matmul":
                    matmul @ matmul
                elif setting == "after_idle":
                    time.sleep(IDLE_SECONDS)
                seconds[(setting, workers)].append(_time_calls(lambda: run(workers), calls))
    kernel = attention._use_kernel(x.shape[1], n * n)
    pair_bytes = n * n * np.dtype(dtype).itemsize
    threads = 2 if not kernel or pair_bytes >= attention.KERNEL_PARALLEL_BYTES else 1
    row = {"n": n, "dtype": dtype, "calls": calls, "engine": "kernel" if kernel else "numpy",
           "threads": threads}
    for setting in SETTINGS:
        one, two = (np.asarray(seconds[(setting, w)]) for w in (1, 2))
        ratios = two / one
        row[setting] = {"one_ms": float(np.median(one) * 1e3),
                        "two_ms": float(np.median(two) * 1e3),
                        "ratio_median": float(np.median(ratios)),
                        "ratio_min": float(ratios.min()), "ratio_max": float(ratios.max())}
    return row


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
    rows = []
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        for dtype in args.dtypes:
            for n in args.ns:
                rows.append(measure(n, dtype, args.rounds, matmul))
                for setting in SETTINGS:
                    r = rows[-1][setting]
                    print(f"n = {n:5d} {dtype} ({rows[-1]['threads']} thread(s) used) "
                          f"{setting:>12}: one thread {r['one_ms']:.3f} ms, two "
                          f"{r['two_ms']:.3f} ms, two / one {r['ratio_median']:.2f} "
                          f"[{r['ratio_min']:.2f}, {r['ratio_max']:.2f}]", flush=True)
    meta["load_average_after"] = os.getloadavg()
    output = Path(args.output) if args.output else (
        Path(__file__).resolve().parent / "results" / "benchmark_two_threads.json")
    output.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
