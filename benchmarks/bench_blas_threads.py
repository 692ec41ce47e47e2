"""Do OpenBLAS threads left spinning after a large matmul slow the next evaluation? (appendix)

Usage: ``python benchmarks/bench_blas_threads.py [--n 8000] [--repeats 3]``.

``benchmarks/bench_algorithm.py`` times ``algorithm.empirical_objective_and_grad`` right after a
1500 x 1500 float64 matmul; with the default BLAS threads it measured 0.348 s per evaluation at
n = 8000 against 0.199 s with one thread. The suspected cause: OpenBLAS's worker threads keep
spinning for a while after the matmul and compete with attnlib's two block threads for the
two cores. Each scenario runs in a fresh process (the thread count is fixed at start-up) and
records the wall time and the CPU time of the whole process for one evaluation:

* ``default_after_matmul``: default BLAS threads, the evaluation right after the matmul;
* ``default_after_pause``: default BLAS threads, a 1 s pause between the matmul and the
  evaluation (spinning threads go to sleep);
* ``one_thread_after_matmul``: ``threadpoolctl`` limits BLAS to one thread before the matmul.

Spinning shows as CPU time beyond what the evaluation itself needs. Scenarios are interleaved
over the repeats; the load average is recorded with every measurement.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

SCENARIOS = ("default_after_matmul", "default_after_pause", "one_thread_after_matmul")


def child(scenario: str, n: int) -> dict:
    import numpy as np
    from threadpoolctl import threadpool_limits

    from attnlib import algorithm, data, population

    if scenario.startswith("one_thread"):
        threadpool_limits(limits=1, user_api="blas")
    rng = np.random.default_rng(0)
    problem = data.default_problem(rng=rng, d=10, p=20)
    x, y = problem.sample(n, rng=rng)
    sigma_hat, m_hat = population.empirical_moments(x, y)
    a, b = algorithm.spectral_init(sigma_hat, m_hat)
    algorithm.empirical_objective_and_grad(a, b, x, y, sigma_hat)        # warm-up
    big = rng.standard_normal((1500, 1500))
    big @ big
    if scenario == "default_after_pause":
        time.sleep(1.0)
    wall, cpu = time.perf_counter(), time.process_time()
    algorithm.empirical_objective_and_grad(a, b, x, y, sigma_hat)
    return {"wall_seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu,
            "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=8000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.n)))
        return
    from attnbook import experiments

    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    rows = []
    for repeat in range(args.repeats):
        for scenario in SCENARIOS[repeat % 3:] + SCENARIOS[:repeat % 3]:
            done = subprocess.run([sys.executable, __file__, "--child", scenario, "--n",
                                   str(args.n)], capture_output=True, text=True, env=env,
                                  check=True)
            row = {"scenario": scenario, **json.loads(done.stdout.strip().splitlines()[-1])}
            rows.append(row)
            print(f"{scenario:26s} wall {row['wall_seconds']:.3f} s, cpu "
                  f"{row['cpu_seconds']:.3f} s, load {row['load']:.1f}", flush=True)
    output = Path(args.output) if args.output else experiments.benchmark_path("blas_threads")
    output.write_text(json.dumps({"n": args.n, "cpu_count": os.cpu_count(),
                                  "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
                                  "rows": rows}, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
