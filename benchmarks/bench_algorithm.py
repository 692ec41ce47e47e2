"""Algorithm 1's cost per iteration against one loss-and-gradient call (appendix "Benchmarks").

Usage (from the repository root)::

    python benchmarks/bench_algorithm.py [--n 500] [--iterations 2000] [--rounds 5] [--output PATH]

On the data of chapter 5's ``paper1_defaults`` (seed 0: d = 10, p = 20, kappa = 10, noise
0.1, n = 500 samples, 500 test pairs) it times, interleaved in every round (shuffled order):

* ``loss_and_grad``: one ``attention.loss_and_grad`` call (the hot path);
* ``objective``: one evaluation of Algorithm 1's objective ``L_hat + R_hat`` and its gradient
  (``DataLoss.objective``);
* ``train_bare``: ``algorithm.train`` with Algorithm 1 and its default history (objective,
  loss, gradient norm, dist_P to S_hat, time), per iteration;
* ``train_chapter``: as chapter 5's stored run calls it (``part1.run_defaults_seed``): with
  the truth (excess risk, dist_P), the certified basin minimizer (gap, dist_ref) and the
  deployed test risk every 10 iterations, the history recorded at
  ``part1.recorded_iterations`` (every iteration up to 100, then every 10th);
* ``train_chapter_every``: the same with the history recorded at every iteration.

The default length is the chapter's, ``part1.SETTINGS.iterations`` (2000): the first 100
iterations, all recorded, weigh less in a longer run.

A per-iteration time is the training time divided by ``iterations + 1`` (one objective
evaluation per recorded point 0..iterations). Ratios to ``loss_and_grad`` are taken per round;
the median over rounds and the range are reported with the 1-minute load average, and the
same ratio in CPU seconds of the process (the work done, whatever share of the cores the
process got on a shared machine). Results:
``benchmarks/results/benchmark_algorithm.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

#: the target for an iteration of Algorithm 1 [choice]: at most this many loss_and_grad
#: calls (stored with the run, so the appendix judges by it)
TARGET = 1.15


def _setup(n: int, iterations: int) -> dict:
    """The timed calls, built once (data, reference minimizer) outside the timing."""
    from attnlib import algorithm, attention, data, reference
    from attnbook.experiments import part1

    settings = part1.SETTINGS
    rng = np.random.default_rng(0)
    problem = data.default_problem(rng=rng, d=settings.d, p=settings.p, kappa=settings.kappa,
                                   noise_std=settings.noise_std)
    x, y = problem.sample(n, rng=rng)
    test = problem.sample(settings.n_test, rng=rng)
    loss = algorithm.empirical_loss(x, y)
    basin = reference.reference_minimizer(loss.reference_objective(1.0), loss.manifold.point(),
                                          loss.Sigma_hat, hessian=False)
    a, b = loss.manifold.point()
    objective = loss.objective(1.0)
    chapter = dict(problem=problem, reference=basin, test=test, test_every=settings.test_every)
    per_iteration = 1.0 / (iterations + 1)
    return {
        "loss_and_grad": (lambda: attention.loss_and_grad(a, b, x, y), 1.0),
        "objective": (lambda: objective(a, b), 1.0),
        "train_bare": (lambda: algorithm.train(loss, iterations=iterations), per_iteration),
        "train_chapter": (
            lambda: algorithm.train(loss, iterations=iterations, **chapter,
                                    record_at=part1.recorded_iterations(iterations)),
            per_iteration),
        "train_chapter_every": (lambda: algorithm.train(loss, iterations=iterations, **chapter),
                                per_iteration),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--iterations", type=int, default=None,
                        help="default: chapter 5's, part1.SETTINGS.iterations")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--calls", type=int, default=20,
                        help="loss_and_grad and objective calls per round")
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffled orders")
    parser.add_argument("--output", default=None,
                        help="default: benchmarks/results/benchmark_algorithm.json")
    args = parser.parse_args()

    import attnlib
    from attnbook import experiments

    if args.iterations is None:
        from attnbook.experiments import part1
        args.iterations = part1.SETTINGS.iterations
    calls = _setup(args.n, args.iterations)
    for call, _ in calls.values():
        call()                                                   # warm-up
    shuffle = random.Random(args.seed)
    seconds: dict[str, list[float]] = {name: [] for name in calls}
    cpu_seconds: dict[str, list[float]] = {name: [] for name in calls}
    loads = []
    meta = {"date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "command": " ".join([Path(sys.argv[0]).name] + sys.argv[1:]),
            "python": platform.python_version(), "numpy": np.__version__,
            "attnlib": attnlib.__version__, "cpu_count": os.cpu_count(), "n": args.n,
            "iterations": args.iterations, "rounds": args.rounds, "target": TARGET,
            "blas_threads_env": os.environ.get("OPENBLAS_NUM_THREADS"),
            "load_average_before": os.getloadavg()}
    for index in range(args.rounds):
        order = list(calls)
        shuffle.shuffle(order)
        for name in order:
            call, scale = calls[name]
            repeats = args.calls if scale == 1.0 else 1
            start, cpu = time.perf_counter(), time.process_time()
            for _ in range(repeats):
                call()
            seconds[name].append((time.perf_counter() - start) / repeats * scale)
            cpu_seconds[name].append((time.process_time() - cpu) / repeats * scale)
        loads.append(os.getloadavg()[0])
        print(f"round {index + 1}/{args.rounds} done, load {loads[-1]:.2f}", flush=True)
    meta["load_average_after"] = os.getloadavg()
    base = np.asarray(seconds["loss_and_grad"])
    cpu_base = np.asarray(cpu_seconds["loss_and_grad"])
    rows = []
    print(f"n = {args.n}, {args.iterations} iterations per training run, {args.rounds} rounds; "
          f"load {min(loads):.1f}-{max(loads):.1f}")
    print(f"{'call':24s} {'ms (median)':>11} {'x loss_and_grad [range]':>26} {'in CPU time':>11}")
    for name, values in seconds.items():
        ratios = np.asarray(values) / base
        row = {"name": name, "seconds_median": float(np.median(values)),
               "ratio_median": float(np.median(ratios)), "ratio_min": float(ratios.min()),
               "ratio_max": float(ratios.max()), "seconds": values,
               "cpu_ratio_median": float(np.median(np.asarray(cpu_seconds[name]) / cpu_base))}
        rows.append(row)
        print(f"{name:24s} {row['seconds_median'] * 1e3:11.3f} {row['ratio_median']:12.3f} "
              f"[{row['ratio_min']:.3f}, {row['ratio_max']:.3f}] {row['cpu_ratio_median']:11.3f}")
    output = Path(args.output) if args.output else experiments.benchmark_path("algorithm")
    output.write_text(json.dumps({"meta": meta, "rows": rows, "load": loads}, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
