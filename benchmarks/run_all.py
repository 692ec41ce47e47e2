"""Run every benchmark the appendix "Benchmarks" prints, storing each one's results.

Usage (from the repository root, on an otherwise idle machine; torch from the ``bench`` extra)::

    python benchmarks/run_all.py [--torch-python PYTHON] [--skip NAME ...]

In order, each in its own process, with the 1-minute load average printed before and after:
``bench_floor.py`` (attnlib / floor: the numpy path, the fused kernel when numba is installed
and, with torch, the PyTorch competitors, interleaved), ``bench_algorithm.py`` (Algorithm 1 per iteration),
``bench_attention.py`` (memory, block sizes, float32, Langevin), ``bench_competitors.py`` (the
PyTorch a user would write; default threads, then PyTorch on one thread) and ``bench_rerun.py``
(serial against 2 Dask workers). The PyTorch benchmarks need a Python with torch
(``--torch-python``, default: this one if it has torch); without one they are skipped with a
note and their stored results are kept. Each benchmark stores its results in
``benchmarks/results/benchmark_*.json``, which ``notebooks/appendix_benchmarks.ipynb``
prints: re-execute it afterwards.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: the thread variables the book's scripts set to 1 (bench_floor.py and bench_rerun.py set the
#: BLAS threads themselves; bench_competitors.py runs once with them and once without)
ONE_THREAD = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def plan(torch_python: str | None) -> list[tuple[str, list[str], dict[str, str]]]:
    """(name, command, extra environment) of every benchmark, in the order they run."""
    python = sys.executable
    # the floor run times attnlib's two engines and, with torch, the PyTorch competitors in the
    # same interleaved rounds (PYTHON then needs attnlib and numba too)
    floor = [torch_python, "bench_floor.py", "--competitors"] if torch_python else [
        python, "bench_floor.py"]
    steps = [("floor", floor, {}),
             # one BLAS thread, as chapter 5 runs (scripts/setup.sh, execute_notebooks.py)
             ("algorithm", [python, "bench_algorithm.py", "--rounds", "15"], ONE_THREAD),
             ("two_threads", [python, "bench_two_threads.py"], {})]
    attention = [python, "bench_attention.py"]
    if torch_python:
        attention += ["--torch-python", torch_python]
    steps.append(("attention", attention, {}))
    if torch_python:
        steps.append(("competitors", [torch_python, "bench_competitors.py"], {}))
        steps.append(("competitors_1thread",
                      [torch_python, "bench_competitors.py", "--keep-thread-env", "--output",
                       str(HERE / "results" / "benchmark_competitors_1thread.json")], ONE_THREAD))
    steps.append(("rerun", [python, "bench_rerun.py", "--budget", "10"], {}))
    return steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--torch-python", default=None,
                        help="a Python with torch and attnlib (default: this one, if it has torch)")
    parser.add_argument("--skip", nargs="*", default=[], help="benchmark names not to run")
    args = parser.parse_args()
    torch_python = args.torch_python
    if torch_python is None and importlib.util.find_spec("torch") is not None:
        torch_python = sys.executable
    if torch_python is None:
        print("note: no Python with torch; the PyTorch comparisons keep their stored results")
    failed = []
    for name, command, extra in plan(torch_python):
        if name in args.skip:
            print(f"== {name}: skipped")
            continue
        print(f"== {name}: {' '.join(Path(part).name for part in command)} "
              f"(load average {os.getloadavg()[0]:.2f})", flush=True)
        start = time.perf_counter()
        done = subprocess.run(command, cwd=HERE, env={**os.environ, **extra})
        print(f"== {name}: {time.perf_counter() - start:.0f} s, exit {done.returncode} "
              f"(load average {os.getloadavg()[0]:.2f})", flush=True)
        if done.returncode != 0:
            failed.append(name)
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


if __name__ == "__main__":
    main()
