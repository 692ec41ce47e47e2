"""Wall time to rerun the stored experiments serially and on 2 Dask workers (appendix).

Usage (from the repository root)::

    python benchmarks/bench_rerun.py [--budget 30] [--output PATH]

For every stored experiment registered as a task grid (:func:`attnbook.experiments.register_grid`)
it takes the grid's tasks in order and runs them serially in this process, one at a time, until
their total exceeds ``--budget`` seconds (at least two tasks): that set of tasks is the
*measured subset* (the whole run when every task fitted). It then runs the same tasks through
:func:`attnbook.experiments.run_grid` with ``workers=2`` (a fresh LocalCluster of two
single-threaded worker processes, its start-up included) and checks that every task's result is
identical to the serial one (except wall-clock times a task records about itself). Each task
also records the CPU seconds its process spent on it (``time.process_time``): CPU time per task
does not depend on how busy the machine is, wall time does. Experiments that are not grids are
one task each: two workers cannot speed them up, and they are listed without a measurement. Nothing is saved to the
stored runs. The 1-minute load average is recorded before and after every figure (the machine
is shared); the results go to ``benchmarks/results/benchmark_rerun.json``.

First, on synthetic grids of four tasks that each keep a core busy for a set CPU time (0.25 s
to 20 s), it measures serial against 2 workers (cluster start and stop included): the speed-up
and the overhead over the ideal split, which say from which task length on workers pay.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from functools import partial
from pathlib import Path

import numpy as np

from attnlib import attention
from attnbook import experiments
from attnbook.experiments import TaskGrid, run_grid


def _same(first: dict, second: dict) -> bool:
    """Same keys and identical arrays, except the wall-clock times a task records about itself
    (keys starting with ``seconds``), which no two runs share."""
    return set(first) == set(second) and all(
        np.array_equal(np.asarray(first[k]), np.asarray(second[k]), equal_nan=True)
        for k in first if not k.startswith("seconds"))


def _results(results: list) -> dict:
    return {"results": results}


def _timed(task, *args) -> tuple[dict, float, float]:
    """``task(*args)`` with the wall and CPU seconds of this process spent on it."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = task(*args)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def measure(name: str, grid: TaskGrid, budget: float) -> dict:
    """Serial time of the measured subset, then its time on 2 workers (module docstring)."""
    serial, load_before = [], os.getloadavg()[0]
    for args in grid.tasks:
        serial.append(_timed(grid.task, *args))
        if len(serial) >= 2 and sum(wall for _, wall, _ in serial) > budget:
            break
    load_mid = os.getloadavg()[0]
    subset = TaskGrid(list(grid.tasks[:len(serial)]), partial(_timed, grid.task), _results)
    start = time.perf_counter()
    parallel = run_grid(subset, workers=2)["results"]
    seconds_2 = time.perf_counter() - start
    return {"name": name, "tasks_total": len(grid.tasks), "tasks_measured": len(serial),
            "whole_run": len(serial) == len(grid.tasks),
            "serial_seconds": sum(wall for _, wall, _ in serial),
            "task_seconds": [wall for _, wall, _ in serial],
            "task_cpu_seconds": [cpu for _, _, cpu in serial],
            "workers2_seconds": seconds_2,
            "workers2_task_seconds": [wall for _, wall, _ in parallel],
            "workers2_task_cpu_seconds": [cpu for _, _, cpu in parallel],
            "identical": all(_same(a[0], b[0]) for a, b in zip(serial, parallel)),
            "load_before_serial": load_before, "load_before_workers2": load_mid,
            "load_after": os.getloadavg()[0]}


def cluster_startup() -> float:
    """Seconds to start and stop an empty LocalCluster of 2 worker processes."""
    from distributed import Client

    from attnbook.experiments._tasks import local_cluster

    start = time.perf_counter()
    with local_cluster(2) as cluster, Client(cluster) as client:
        client.wait_for_workers(2)
    return time.perf_counter() - start


#: CPU seconds per task of the synthetic grids (4 tasks each) that show from which task length
#: on two workers pay (the stored grids' tasks mostly take a second or two).
SWEEP_SECONDS = (0.25, 1.0, 4.0, 10.0, 20.0)
SWEEP_TASKS = 4


def busy_task(index: int, seconds: float) -> dict:
    """A task that keeps one core busy for ``seconds`` of this thread's CPU time (200 x 200
    products; the thread's own clock, so that no other thread of the process shortens it)."""
    start = time.thread_time()
    x = np.random.default_rng(index).standard_normal((200, 200))
    while time.thread_time() - start < seconds:
        x = np.tanh(x @ x.T / 200.0)
    return {f"task{index}": np.asarray(float(x.sum()))}


def task_length_sweep() -> list[dict]:
    """Serial against 2 workers on grids of ``SWEEP_TASKS`` busy tasks of each length; the
    2-worker time includes starting and stopping the cluster. ``overhead_seconds`` is the
    2-worker time minus the ideal split (serial / 2)."""
    from attnbook.experiments._tasks import merge_tasks

    rows = []
    for seconds in SWEEP_SECONDS:
        grid = TaskGrid([(i, seconds) for i in range(SWEEP_TASKS)], busy_task, merge_tasks)
        load = os.getloadavg()[0]
        start = time.perf_counter()
        serial = run_grid(grid)
        serial_seconds = time.perf_counter() - start
        start = time.perf_counter()
        parallel = run_grid(grid, workers=2)
        workers_seconds = time.perf_counter() - start
        rows.append({"task_seconds": seconds, "tasks": SWEEP_TASKS,
                     "serial_seconds": serial_seconds, "workers2_seconds": workers_seconds,
                     "speedup": serial_seconds / workers_seconds,
                     "overhead_seconds": workers_seconds - serial_seconds / 2,
                     "identical": _same(serial, parallel), "load_before": load,
                     "load_after": os.getloadavg()[0]})
        print(f"{SWEEP_TASKS} tasks of {seconds:g} s: serial {serial_seconds:.1f} s, 2 workers "
              f"{workers_seconds:.1f} s, speed-up {rows[-1]['speedup']:.2f}, load {load:.1f}",
              flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=30.0,
                        help="serial seconds per experiment before the subset stops")
    parser.add_argument("--names", nargs="*", default=None, help="default: every stored run")
    parser.add_argument("--output", default=None)
    args = parser.parse_args()
    names = args.names or experiments.stored_names()
    # The serial run on one BLAS thread, as the book's scripts run it (scripts/setup.sh) and as
    # each Dask worker runs: otherwise a product on two OpenBLAS threads would already use both
    # cores serially, and the serial and worker results would differ by round-off.
    attention.limit_blas_threads(1)
    autogroup = Path("/proc/sys/kernel/sched_autogroup_enabled")
    meta = {"sched_autogroup": autogroup.read_text().strip() if autogroup.exists() else None,
            "date_utc": time.strftime("%Y-%m-%d %H:%M", time.gmtime()),
            "python": platform.python_version(), "cpu_count": os.cpu_count(),
            "budget_seconds": args.budget, "blas_threads_env": os.environ.get(
                "OPENBLAS_NUM_THREADS"), "blas_threads": 1, "load_average_before": os.getloadavg()}
    meta["cluster_startup_seconds"] = cluster_startup()
    sweep = task_length_sweep()
    rows, single = [], []
    for name in names:
        grid = experiments.task_grid(name)
        if len(grid.tasks) == 1:
            single.append(name)
            continue
        print(f"{name:32s} ...", end=" ", flush=True)
        row = measure(name, grid, args.budget)
        rows.append(row)
        print(f"{row['tasks_measured']}/{row['tasks_total']} tasks: serial "
              f"{row['serial_seconds']:.1f} s, 2 workers {row['workers2_seconds']:.1f} s, "
              f"identical {row['identical']}, load {row['load_before_serial']:.1f}", flush=True)
    meta["load_average_after"] = os.getloadavg()
    output = Path(args.output) if args.output else experiments.benchmark_path("rerun")
    output.write_text(json.dumps({"meta": meta, "task_length_sweep": sweep, "rows": rows,
                                  "single_task": single}, indent=1) + "\n")
    print(f"wrote {output}")


if __name__ == "__main__":
    main()
