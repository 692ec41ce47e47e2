"""Stored runs as grids of independent seeded tasks, run serially or on Dask (one home).

A grid experiment declares three things (:class:`TaskGrid`):

* ``tasks``: a list of tuples, one per grid point (seed, context length, noise level, ...);
* ``task``: one pure function, ``task(*args) -> dict[str, np.ndarray]``, whose result depends
  only on its arguments (every random draw comes from a generator seeded by them). It must be
  importable by a worker process: a module-level function, or a ``functools.partial`` of one
  binding keyword options;
* ``assemble``: ``assemble(results) -> history``, combining the results given **in task
  order** (stacking them into arrays, or :func:`merge_tasks` for disjoint keys).

:func:`run_grid` runs the tasks serially in this process (the default: exactly what the loop
``[task(*args) for args in tasks]`` computes), or on Dask: ``workers=K`` starts a
``dask.distributed.LocalCluster`` of K single-threaded worker processes on this machine,
``scheduler="tcp://host:port"`` submits to an existing cluster (``dask scheduler`` /
``dask worker``, dask-jobqueue, Kubernetes). Every worker process is set to one BLAS thread
(:func:`attnlib.attention.limit_blas_threads`), as the serial run is by ``scripts/setup.sh``.
Results are put back in task order before ``assemble`` sees them, so the history does not
depend on the number of workers or on the order in which tasks finish. A progress bar counts
finished tasks; an interrupt (Ctrl-C) cancels the submitted tasks, shuts down a cluster this
function started, and re-raises ``KeyboardInterrupt`` (nothing is saved).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from .._progress import progress as progress_bar
from .._validation import check_int

__all__ = ["TaskGrid", "run_grid", "merge_tasks", "one_task", "local_cluster"]

History = dict[str, np.ndarray]


@dataclass(frozen=True)
class TaskGrid:
    """An experiment as ``assemble([task(*args) for args in tasks])`` (module docstring)."""

    tasks: Sequence[tuple]
    task: Callable[..., Mapping[str, np.ndarray]]
    assemble: Callable[[list[Mapping[str, np.ndarray]]], History]

    def __post_init__(self) -> None:
        if not callable(self.task) or not callable(self.assemble):
            raise TypeError("task and assemble must be callable")
        if not all(isinstance(args, tuple) for args in self.tasks):
            raise TypeError("tasks must be a sequence of tuples (the task's arguments)")
        if len(self.tasks) == 0:
            raise ValueError("tasks must hold at least one task")


def _identity(results: list[Mapping[str, np.ndarray]]) -> History:
    return dict(results[0])


def one_task(fn: Callable[..., Mapping[str, np.ndarray]], *args: object) -> TaskGrid:
    """An experiment that is not a grid, as a grid of one task ``fn(*args)``."""
    return TaskGrid([tuple(args)], fn, _identity)


def merge_tasks(parts: Sequence[Mapping[str, np.ndarray]]) -> History:
    """Merge task histories; tasks must write disjoint keys (a clash is a ``ValueError``)."""
    out: History = {}
    for part in parts:
        clash = set(out) & set(part)
        if clash:
            raise ValueError(f"tasks write the same keys: {sorted(clash)[:3]}")
        out.update(part)
    return out


def _one_blas_thread() -> None:
    """Worker-process setup: one BLAS thread (the cores are shared by the worker processes)."""
    from ..attention import limit_blas_threads

    limit_blas_threads(1)


def _call(fn: Callable[..., Mapping[str, np.ndarray]], args: tuple) -> Mapping[str, np.ndarray]:
    _one_blas_thread()
    return fn(*args)


def _run_on_client(grid: TaskGrid, client: object, progress: bool
                   ) -> list[Mapping[str, np.ndarray]]:
    from distributed import as_completed

    futures = [client.submit(_call, grid.task, args, pure=False) for args in grid.tasks]
    index = {future.key: i for i, future in enumerate(futures)}
    results: list[Mapping[str, np.ndarray] | None] = [None] * len(futures)
    try:
        finished = as_completed(futures, with_results=True)
        for future, result in progress_bar(finished, total=len(futures), desc="tasks",
                                           enabled=progress):
            results[index[future.key]] = result
    except BaseException:
        client.cancel(futures)
        raise
    return results  # type: ignore[return-value]


def local_cluster(workers: int) -> object:
    """A ``dask.distributed.LocalCluster`` of ``workers`` single-threaded processes on this
    machine, without a dashboard (its internal HTTP server takes a free port)."""
    from distributed import LocalCluster

    return LocalCluster(n_workers=check_int("workers", workers, minimum=1), threads_per_worker=1,
                        processes=True, dashboard_address=":0",
                        scheduler_kwargs={"dashboard": False})


def run_grid(grid: TaskGrid, *, workers: int | None = None, scheduler: str | None = None,
             progress: bool = False) -> History:
    """Run ``grid`` and return its history (module docstring).

    ``workers=None`` or ``1`` with no ``scheduler``: serially in this process. ``workers=K``
    (K >= 2): a LocalCluster of K single-threaded worker processes, shut down afterwards.
    ``scheduler``: the address of a running Dask scheduler (``workers`` must then be None).
    """
    if not isinstance(grid, TaskGrid):
        raise TypeError(f"grid must be a TaskGrid, got {type(grid).__name__}")
    if workers is not None:
        workers = check_int("workers", workers, minimum=1)
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler:
            raise TypeError(f"scheduler must be an address string such as "
                            f"'tcp://127.0.0.1:8786', got {scheduler!r}")
        if workers is not None:
            raise ValueError("give workers (a local cluster) or scheduler (an existing "
                             "cluster), not both")
    if scheduler is None and (workers is None or workers == 1):
        return grid.assemble([grid.task(*args) for args in progress_bar(
            grid.tasks, total=len(grid.tasks), desc="tasks", enabled=progress)])
    from distributed import Client

    if scheduler is not None:
        with Client(scheduler) as client:
            results = _run_on_client(grid, client, progress)
    else:
        with local_cluster(workers) as cluster, Client(cluster) as client:
            results = _run_on_client(grid, client, progress)
    return grid.assemble(results)
