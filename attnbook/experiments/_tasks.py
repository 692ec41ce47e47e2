"""Stored runs as grids of independent seeded tasks: what a grid is and how it is assembled.

A grid experiment declares three things (:class:`TaskGrid`):

* ``tasks``: a list of tuples, one per grid point (seed, context length, noise level, ...);
* ``task``: one pure function, ``task(*args) -> dict[str, np.ndarray]``, whose result depends
  only on its arguments (every random draw comes from a generator seeded by them). It must be
  importable by a worker process: a module-level function, or a ``functools.partial`` of one
  binding keyword options;
* ``assemble``: ``assemble(results) -> history``, combining the results given **in task
  order** (stacking them into arrays with :func:`stack_tasks`, or :func:`merge_tasks` for
  disjoint keys).

:func:`run_grid` runs the tasks with the library's runner, :func:`attnlib.sweep.run_tasks`,
the one home of the execution machinery (serially in this process by default: exactly what
the loop ``[task(*args) for args in tasks]`` computes; ``workers=K`` on a local Dask cluster
of K single-threaded worker processes, each set to one BLAS thread; ``scheduler=ADDRESS`` on
an existing cluster; results put back in task order; progress bar; Ctrl-C cancels the tasks,
shuts down the cluster and re-raises ``KeyboardInterrupt``; the first failed task is
re-raised at once with a note naming it; a local cluster whose start fails is started again;
the main guard of scripts). See :mod:`attnlib.sweep` for the details, the limits
(``WORKERS_PER_CORE``, ``LOST_WORKER_RETRIES``, ``CLUSTER_START_ATTEMPTS``,
``SHUTDOWN_TIMEOUT``, re-exported here) and the security notes (``tcp://`` is plaintext and
unauthenticated and Dask exchanges pickles over it: use ``tls://`` with ``security=`` off a
trusted network). ``assemble`` receives exactly the list the serial loop would build.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from attnlib.sweep import (CLUSTER_START_ATTEMPTS, CONNECT_TIMEOUT, LOOPBACK,  # noqa: F401
                           LOST_WORKER_RETRIES, SHUTDOWN_TIMEOUT, WORKER_BYTES,
                           WORKERS_PER_CORE, check_workers, local_cluster, require_distributed,
                           run_tasks)

__all__ = ["TaskGrid", "run_grid", "merge_tasks", "stack_tasks", "one_task", "local_cluster",
           "check_workers"]

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


def stack_tasks(results: Sequence[Mapping[str, np.ndarray]], shape: Sequence[int] | None = None,
                indices: Sequence[tuple[int, ...]] | None = None) -> History:
    """Stack task histories key by key: the grid axes first, then the task's own axes.

    ``history[key][i, ...] = results[i][key]`` with the flat task index ``i`` unravelled over
    ``shape`` (C order; default ``(len(results),)``), or at the grid cell ``indices[i]`` when
    given (each cell at most once), so ``history[key]`` has shape
    ``tuple(shape) + np.shape(results[0][key])``: the layout of every stored grid (its
    coordinates are separate arrays such as ``seeds``). A ragged key (values of different
    shapes) is padded with NaN to the largest size along each axis, and a key missing from a
    task, or a cell no task fills, is NaN; otherwise the values are stacked unchanged (same
    dtype, same bits).
    """
    shape = (len(results),) if shape is None else tuple(int(n) for n in shape)
    size = int(np.prod(shape))
    if indices is None:
        if size != len(results):
            raise ValueError(f"shape {shape} does not hold the {len(results)} task results")
    else:
        if len(indices) != len(results):
            raise ValueError(f"indices must give one cell per result, got {len(indices)} for "
                             f"{len(results)}")
        flat = [int(np.ravel_multi_index(tuple(index), shape)) for index in indices]
        if len(set(flat)) != len(flat):
            raise ValueError("indices name the same grid cell twice")
        slots: list[Mapping[str, np.ndarray]] = [{} for _ in range(size)]
        for position, result in zip(flat, results):
            slots[position] = result
        results = slots
    keys = list(dict.fromkeys(key for result in results for key in result))
    history: History = {}
    for key in keys:
        values = [np.asarray(result[key]) if key in result else None for result in results]
        shapes = {value.shape for value in values if value is not None}
        if len(shapes) == 1 and all(value is not None for value in values):
            history[key] = np.stack(values).reshape(shape + shapes.pop())
            continue
        ndim = {len(s) for s in shapes}
        if len(ndim) != 1:
            raise ValueError(f"task results give {key!r} different numbers of axes: {shapes}")
        size = tuple(max(sizes) for sizes in zip(*shapes))
        out = np.full((len(values),) + size, np.nan)
        for i, value in enumerate(values):
            if value is not None:
                out[(i,) + tuple(slice(0, n) for n in value.shape)] = value
        history[key] = out.reshape(shape + size)
    return history


def run_grid(grid: TaskGrid, *, workers: int | None = None, scheduler: str | None = None,
             security: object | None = None, progress: bool = False) -> History:
    """Run ``grid`` and return its history, ``grid.assemble(results)`` with the results of
    :func:`attnlib.sweep.run_tasks` in task order (module docstring).

    ``workers=None`` or ``1`` with no ``scheduler``: serially in this process. ``workers=K``
    (K >= 2): a LocalCluster of K single-threaded worker processes on 127.0.0.1
    (``local_cluster``; its start is retried ``CLUSTER_START_ATTEMPTS`` times), shut down
    afterwards within ``SHUTDOWN_TIMEOUT`` seconds. ``scheduler``: the address of a running
    Dask scheduler (``workers`` must then be None); ``tcp://`` is plaintext and
    unauthenticated and Dask exchanges pickles (code) over it, so use it only on a trusted
    network, or ``tls://`` with ``security`` (a ``distributed.Security``; None takes the TLS
    settings of the Dask configuration, ``distributed.comm.tls.*``). The first failed task
    (its exception, or ``KilledWorker`` once its worker was lost too often) cancels the others
    and is re-raised at once, with a note naming the task.
    """
    if not isinstance(grid, TaskGrid):
        raise TypeError(f"grid must be a TaskGrid, got {type(grid).__name__}")
    return grid.assemble(run_tasks(grid.task, grid.tasks, workers=workers, scheduler=scheduler,
                                   security=security, progress=progress))
