"""Stored runs as grids of independent seeded tasks, run serially or on Dask (one home).

A grid experiment declares three things (:class:`TaskGrid`):

* ``tasks``: a list of tuples, one per grid point (seed, context length, noise level, ...);
* ``task``: one pure function, ``task(*args) -> dict[str, np.ndarray]``, whose result depends
  only on its arguments (every random draw comes from a generator seeded by them). It must be
  importable by a worker process: a module-level function, or a ``functools.partial`` of one
  binding keyword options;
* ``assemble``: ``assemble(results) -> history``, combining the results given **in task
  order** (stacking them into arrays with :func:`stack_tasks`, or :func:`merge_tasks` for
  disjoint keys).

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

Failures and security: the first task that fails (its own exception, or ``KilledWorker`` once
its worker was lost more than ``LOST_WORKER_RETRIES`` times) cancels the others and is
re-raised at once with a note naming the task; a local cluster whose start fails (a worker
lost while starting) is started again, up to ``CLUSTER_START_ATTEMPTS`` times, and is shut
down within ``SHUTDOWN_TIMEOUT`` seconds. A local cluster is at most ``WORKERS_PER_CORE``
workers per core and listens on 127.0.0.1 only (scheduler, workers, nannies, HTTP servers).
``tcp://`` is plaintext and unauthenticated and Dask exchanges pickles (code) over it: use an
external ``tcp://`` scheduler only on a trusted network, else ``tls://`` with a
``distributed.Security`` (``security=``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from attnlib._progress import progress as progress_bar
from attnlib._validation import check_int, check_memory

__all__ = ["TaskGrid", "run_grid", "merge_tasks", "stack_tasks", "one_task", "local_cluster",
           "check_workers"]

#: Local worker processes allowed per core (more only queue for the same cores).
WORKERS_PER_CORE = 4
#: Memory a local worker process needs before it runs a task (interpreter, numpy, Dask).
WORKER_BYTES = 200 * 2 ** 20
#: The only interface a local cluster listens on.
LOOPBACK = "127.0.0.1"
#: How often a task may lose its worker (killed, out of memory) before it fails.
LOST_WORKER_RETRIES = 3
#: Attempts to start a local cluster (a worker may die while it starts).
CLUSTER_START_ATTEMPTS = 3
#: Seconds allowed for closing the client and the local cluster, also after a failure.
SHUTDOWN_TIMEOUT = 10

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


def require_distributed() -> None:
    """Raise a clear ``ImportError`` when Dask's ``distributed`` (the ``distributed`` extra of
    attnlib) is missing: serial runs need nothing more than the core install."""
    try:
        import distributed  # noqa: F401
    except ImportError as exc:
        raise ImportError("running a task grid on Dask workers (workers >= 2, a scheduler or "
                          "a security configuration) needs the 'distributed' extra: pip "
                          "install 'attnlib[distributed]'") from exc


def _one_blas_thread() -> None:
    """Worker-process setup: one BLAS thread (the cores are shared by the worker processes)."""
    from attnlib.attention import limit_blas_threads

    limit_blas_threads(1)


def _call(fn: Callable[..., Mapping[str, np.ndarray]], args: tuple) -> Mapping[str, np.ndarray]:
    _one_blas_thread()
    return fn(*args)


def _run_on_client(grid: TaskGrid, client: object, progress: bool
                   ) -> list[Mapping[str, np.ndarray]]:
    """Submit every task, collect the results in task order; on the first failed task cancel
    the others and re-raise its exception at once, with a note naming the task."""
    from distributed import as_completed

    futures = [client.submit(_call, grid.task, args, pure=False) for args in grid.tasks]
    index = {future.key: i for i, future in enumerate(futures)}
    results: list[Mapping[str, np.ndarray] | None] = [None] * len(futures)
    try:
        for future in progress_bar(as_completed(futures), total=len(futures), desc="tasks",
                                   enabled=progress):
            i = index[future.key]
            if future.status == "error":
                error = future.exception()
                error.add_note(f"(task {i} of {len(futures)}, arguments {grid.tasks[i]!r:.200}; "
                               "the other tasks were cancelled)")
                raise error
            results[i] = future.result()
    except BaseException:
        client.cancel(futures)
        raise
    return results  # type: ignore[return-value]


def check_workers(workers: object) -> int:
    """``workers`` as the size of a local cluster: an integer from 1 to
    ``WORKERS_PER_CORE`` times the number of cores, whose processes fit in the available
    memory (``WORKER_BYTES`` each); raises ``ValueError`` naming ``workers`` otherwise."""
    cores = os.cpu_count() or 1
    workers = check_int("workers", workers, minimum=1, maximum=WORKERS_PER_CORE * cores)
    check_memory("workers", workers, workers * WORKER_BYTES, "the worker processes")
    return workers


def local_cluster(workers: int) -> object:
    """A ``dask.distributed.LocalCluster`` of ``workers`` single-threaded processes on this
    machine. Every service (scheduler, workers, nannies and their HTTP servers) listens on
    127.0.0.1 only, without a dashboard; a task survives ``LOST_WORKER_RETRIES`` losses of its
    worker (killed, out of memory) before it fails."""
    import dask
    from distributed import LocalCluster

    workers = check_workers(workers)
    with dask.config.set({"distributed.scheduler.allowed-failures": LOST_WORKER_RETRIES}):
        return LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                            host=LOOPBACK, dashboard_address=f"{LOOPBACK}:0",
                            worker_dashboard_address=f"{LOOPBACK}:0",
                            scheduler_kwargs={"dashboard": False},
                            silence_logs=logging.CRITICAL)   # a failed task is re-raised here


def _start_local_cluster(workers: int) -> object:
    """:func:`local_cluster`, retried when a worker dies while the cluster starts."""
    for attempt in range(1, CLUSTER_START_ATTEMPTS + 1):
        try:
            return local_cluster(workers)
        except (ValueError, TypeError):
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. "Nanny failed to start"
            if attempt == CLUSTER_START_ATTEMPTS:
                raise RuntimeError(f"the local Dask cluster of {workers} workers did not start "
                                   f"in {attempt} attempts ({type(exc).__name__}: {exc})"
                                   ) from exc


#: Seconds to wait for a scheduler to answer before saying none did.
CONNECT_TIMEOUT = 20


def _connect(scheduler: str, security: object) -> "distributed.Client":
    """A Dask client of the scheduler at ``scheduler``, or a ``ConnectionError`` that names the
    address and says what was expected. A server that is not a Dask scheduler makes Dask's
    protocol read garbage (a huge frame length ends in ``MemoryError``, other replies in
    decoding errors), so every failure to connect is reported the same way."""
    from distributed import Client

    if "://" not in scheduler or not scheduler.split("://", 1)[1].rpartition(":")[2].isdigit():
        raise ValueError(f"scheduler must be an address such as 'tcp://127.0.0.1:8786' or "
                         f"'tls://host:8786' (scheme, host and port), got {scheduler!r}")
    try:
        return Client(scheduler, security=security, timeout=CONNECT_TIMEOUT)
    except Exception as exc:   # noqa: BLE001 - MemoryError, OSError, TimeoutError, decode errors
        raise ConnectionError(f"scheduler: no Dask scheduler answered at {scheduler!r} "
                              f"within {CONNECT_TIMEOUT} s ({type(exc).__name__}: {exc}); "
                              "start one with `dask scheduler` and give its address") from exc


def run_grid(grid: TaskGrid, *, workers: int | None = None, scheduler: str | None = None,
             security: object | None = None, progress: bool = False) -> History:
    """Run ``grid`` and return its history (module docstring).

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
    if workers is not None:
        workers = check_workers(workers)
    if scheduler is not None:
        if not isinstance(scheduler, str) or not scheduler:
            raise TypeError(f"scheduler must be an address string such as "
                            f"'tcp://127.0.0.1:8786', got {scheduler!r}")
        if workers is not None:
            raise ValueError("give workers (a local cluster) or scheduler (an existing "
                             "cluster), not both")
    if scheduler is not None or security is not None or (workers or 1) > 1:
        require_distributed()
    if security is not None:
        from distributed import Security

        if not isinstance(security, Security):
            raise TypeError(f"security must be a distributed.Security, got "
                            f"{type(security).__name__}")
        if scheduler is None:
            raise ValueError("security applies to an existing cluster: give scheduler too")
    if scheduler is None and (workers is None or workers == 1):
        return grid.assemble([grid.task(*args) for args in progress_bar(
            grid.tasks, total=len(grid.tasks), desc="tasks", enabled=progress)])
    from distributed import Client

    if scheduler is not None:
        client = _connect(scheduler, security)
        with client:
            return grid.assemble(_run_on_client(grid, client, progress))
    cluster = _start_local_cluster(workers)
    try:
        client = Client(cluster)
        try:
            results = _run_on_client(grid, client, progress)
        finally:
            client.close(timeout=SHUTDOWN_TIMEOUT)
    finally:
        cluster.close(timeout=SHUTDOWN_TIMEOUT)
    return grid.assemble(results)
