"""Benchmark of Algorithm 1's hot path (issue 3): prints figures, asserts nothing.

For d = 10, p = 20 and n in {500, 2000, 8000} it prints, each configuration measured in its own
subprocess:

* seconds per evaluation of the training objective and its gradient,
  ``attnlib.algorithm.empirical_objective_and_grad`` (attention loss + R_hat, leave-one-out);
* seconds per iteration of ``attnlib.algorithm.train`` with its full history
  (objective, excess risk, dist_P, dist_P_hat; no test set);
* peak memory: rise of the process's peak RSS over its RSS just before the first call;
* the achieved floating-point rate, counting ``8 n^2 d`` flops per evaluation (four n x n x d
  products: logits, attention output, and the two backward products; exponentials and
  elementwise work not counted), as a fraction of the numpy matmul rate measured in the same
  subprocess (a 1500 x 1500 float64 product).

Usage: ``python benchmarks/bench_algorithm.py [--sizes 500 2000 8000] [--repeats 5]``.
The BLAS thread count is inherited from the environment (``OPENBLAS_NUM_THREADS``); on a
loaded 2-core machine a single thread was about 8x faster than two at n = 500 (chapter 4).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

D, P = 10, 20


def _rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def measure(n: int, repeats: int) -> dict[str, float]:
    """Measure one configuration in this process and return the figures."""
    import numpy as np

    from attnlib import algorithm, data, population

    rng = np.random.default_rng(0)
    problem = data.default_problem(rng=rng, d=D, p=P)
    x, y = problem.sample(n, rng=rng)
    sigma_hat, m_hat = population.empirical_moments(x, y)
    a, b = algorithm.spectral_init(sigma_hat, m_hat)

    big = rng.standard_normal((1500, 1500))
    big @ big
    start = time.perf_counter()
    for _ in range(3):
        big @ big
    matmul_rate = 3 * 2 * 1500 ** 3 / (time.perf_counter() - start)
    del big

    baseline = _rss_mb()
    peak_before = _peak_rss_mb()
    algorithm.empirical_objective_and_grad(a, b, x, y, sigma_hat)        # warm-up
    start = time.perf_counter()
    for _ in range(repeats):
        algorithm.empirical_objective_and_grad(a, b, x, y, sigma_hat)
    per_eval = (time.perf_counter() - start) / repeats
    peak = max(_peak_rss_mb(), peak_before) - baseline

    start = time.perf_counter()
    algorithm.train(algorithm.empirical_loss(x, y), iterations=repeats, problem=problem)
    per_iteration = (time.perf_counter() - start) / (repeats + 1)
    rate = 8 * n * n * D / per_eval
    return dict(n=n, seconds_per_eval=per_eval, seconds_per_iteration=per_iteration,
                peak_mb=peak, gflops=rate / 1e9, matmul_gflops=matmul_rate / 1e9,
                fraction_of_matmul=rate / matmul_rate)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000, 8000])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--child", type=int, default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(measure(args.child, args.repeats)))
        return
    threads = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    print(f"d = {D}, p = {P}, leave-one-out mask, float64, OPENBLAS_NUM_THREADS = {threads}")
    print(f"{'n':>6} {'s / eval':>10} {'s / iter':>10} {'peak MB':>9} {'GFLOP/s':>8} "
          f"{'matmul GFLOP/s':>15} {'fraction':>9}")
    for n in args.sizes:
        repeats = args.repeats if n <= 2000 else max(2, args.repeats // 2)
        output = subprocess.run([sys.executable, __file__, "--child", str(n), "--repeats",
                                 str(repeats)], capture_output=True, text=True, check=True)
        row = json.loads(output.stdout.strip().splitlines()[-1])
        print(f"{row['n']:>6} {row['seconds_per_eval']:>10.4f} "
              f"{row['seconds_per_iteration']:>10.4f} {row['peak_mb']:>9.1f} "
              f"{row['gflops']:>8.2f} {row['matmul_gflops']:>15.1f} "
              f"{row['fraction_of_matmul']:>9.3f}")


if __name__ == "__main__":
    main()
