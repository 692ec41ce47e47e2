"""attnlib's loss and gradient against this machine's floor (appendix "Benchmarks").

Usage (from the repository root)::

    python benchmarks/bench_floor.py [--ns 500 2000 8000] [--rounds 7] [--output PATH]

For d = 10, p = 20, the leave-one-out mask, float64 and float32, 1 and 2 threads:

* ``attnlib``: ``attention.loss_and_grad(A, B, X, Y, dtype=dtype, workers=threads)`` on the
  data of ``bench_attention.py`` (seed 8);
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

The floor is split per configuration: ``products`` (the ``8 n^2 d`` flops at the GEMM rate),
``exp`` (the ``n^2`` exponentials at the sustained exp rate) and ``overhead`` = attnlib's time
minus both: what the passes around the exponential, the products' shortfall from the GEMM
rate and the call itself cost. Beside it, the passes over the n^2 entries attnlib makes
(:data:`PASSES`, counted from ``attention._softmax_rows`` and ``attention._block_rows``: every
numpy or BLAS call that reads or writes a whole ``block x n`` work array counts once, in
place or not; calls on one entry per row, such as the leave-one-out mask, do not count)
against :data:`MIN_PASSES`, the fewest the math needs.

Every round runs every configuration once, in a freshly shuffled order, and times its floor
and attnlib back to back, so a change of the machine's load hits both; the ratio attnlib /
floor is taken per round and reported as the median over rounds with its range. The 1-minute
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


def shift(x: np.ndarray, b: np.ndarray, dtype: str) -> str:
    """The softmax's shift ``attention._softmax_rows`` takes on this data (a key of PASSES):
    none when ``max_j ||x_j^T B|| max_i ||x_i||`` bounds the logits within its safe range."""
    from attnlib import attention

    bound = np.linalg.norm(x @ b, axis=1).max() * np.linalg.norm(x, axis=1).max()
    return "none" if bound <= attention._SAFE_LOGIT[np.dtype(dtype)] else "row maximum"


def measure(config: tuple[int, str, int], calls: int) -> dict:
    """One round of one configuration: its floor, then attnlib's time."""
    from attnlib import attention

    n, dtype, threads = config
    a, b, x, y = _problem(n)
    rate, cpu_rate = gemm_rate(dtype, threads)
    exp_per_second, exp_per_cpu_second = exp_rate(dtype, threads)
    earlier_exp_time, _ = exp_seconds(n, dtype, threads)
    products = 8 * n * n * D / rate
    exponentials = n * n / exp_per_second
    floor = products + exponentials
    earlier_floor = products + earlier_exp_time
    call = lambda: attention.loss_and_grad(a, b, x, y, dtype=np.dtype(dtype),  # noqa: E731
                                           workers=threads)
    call()
    seconds, cpu = _seconds(call, calls)
    result = {"seconds": seconds, "floor_seconds": floor, "products_seconds": products,
              "exp_seconds": exponentials, "overhead_seconds": seconds - floor,
              "gemm_gflops": rate / 1e9,
              "exp_per_second": exp_per_second, "ratio": seconds / floor,
              "earlier_floor_seconds": earlier_floor, "earlier_ratio": seconds / earlier_floor,
              "load": os.getloadavg()[0], "passes": PASSES[shift(x, b, dtype)]}
    if threads == 1:       # one thread: CPU seconds measure the work whatever the load
        result["cpu_ratio"] = cpu / (8 * n * n * D / cpu_rate + n * n / exp_per_cpu_second)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ns", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled orders")
    parser.add_argument("--output", default=None,
                        help="default: benchmarks/results/benchmark_floor.json")
    args = parser.parse_args()

    import attnlib
    from attnbook import experiments

    configs = [(n, dtype, threads) for n in args.ns for dtype in DTYPES for threads in THREADS]
    rounds: dict[tuple, list[dict]] = {config: [] for config in configs}
    shuffle = random.Random(args.seed)
    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "python": platform.python_version(), "numpy": np.__version__,
            "attnlib": attnlib.__version__, "cpu_count": os.cpu_count(), "d": D, "p": P,
            "mask": "loo", "rounds": args.rounds, "calls": {n: CALLS.get(n, 1) for n in args.ns},
            "load_average_before": os.getloadavg()}
    for index in range(args.rounds):
        order = configs[:]
        shuffle.shuffle(order)
        for config in order:
            rounds[config].append(measure(config, CALLS.get(config[0], 1)))
        print(f"round {index + 1}/{args.rounds} done, load {os.getloadavg()[0]:.2f}", flush=True)
    meta["load_average_after"] = os.getloadavg()
    rows = []
    print(f"{'n':>6} {'dtype':>8} {'threads':>7} | {'attnlib ms':>10} {'floor ms':>9} | "
          f"{'attnlib / floor [range]':>24} | {'target':>6} | {'products':>8} {'exp':>7} "
          f"{'overhead':>8} {'/ prod.':>7} | {'passes':>11} | {'earlier floor':>13} | "
          f"{'GEMM GF/s':>9} {'exp G/s':>7} | {'CPU ratio':>9} | load")
    for (n, dtype, threads), measured in rounds.items():
        ratios = [m["ratio"] for m in measured]
        medians = {key: float(np.median([m[key] for m in measured]))
                   for key in ("seconds", "floor_seconds", "products_seconds", "exp_seconds",
                               "overhead_seconds", "earlier_ratio", "gemm_gflops",
                               "exp_per_second")}
        row = {"n": n, "dtype": dtype, "threads": threads, "target": target(n),
               **{f"{key}_median": value for key, value in medians.items()},
               "ratio_median": float(np.median(ratios)), "ratio_min": float(min(ratios)),
               "ratio_max": float(max(ratios)), "passes": measured[0]["passes"],
               "min_passes": MIN_PASSES, "load": [m["load"] for m in measured]}
        if threads == 1:
            row["cpu_ratio_median"] = float(np.median([m["cpu_ratio"] for m in measured]))
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
    output = Path(args.output) if args.output else experiments.benchmark_path("floor")
    output.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
