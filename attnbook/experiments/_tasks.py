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

Resuming (``TaskCache``). The command line runs every experiment with a task cache:
each task's result is kept, as it finishes, in ``$ATTNBOOK_CACHE/tasks/NAME/`` (default
``~/.cache/attnbook/tasks/NAME/``, outside the repository), under a key made of the task's
arguments, the experiment's settings, and the code's version (a hash of the sources of
``attnlib``, ``attnbook.experiments`` and the task's own module, and the numpy, scipy and Python
versions). A rerun after Ctrl-C, a crash or a failed save takes the finished tasks from there
(saying how many) and runs only the rest; the results are read back bit for bit, so the run is
the uninterrupted one. A run of several phases keeps each finished phase the same way
(``checkpoint``). The cache of an experiment is deleted once its run is saved. Only results
that are dicts of arrays, numbers and strings are kept (others are simply recomputed).
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import inspect
import io
import json
import os
import pickle
import platform
import shutil
import sys
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import numpy as np

from attnlib._files import atomic_write
from attnlib.sweep import (CLUSTER_START_ATTEMPTS, CONNECT_TIMEOUT, LOOPBACK,  # noqa: F401
                           LOST_WORKER_RETRIES, SHUTDOWN_TIMEOUT, WORKER_BYTES,
                           WORKERS_PER_CORE, check_workers, local_cluster, require_distributed,
                           run_tasks)

__all__ = ["TaskGrid", "run_grid", "merge_tasks", "stack_tasks", "one_task", "local_cluster",
           "check_workers", "TaskCache", "checkpoint", "cache_folder", "CACHE_VARIABLE"]

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
             security: object | None = None, progress: bool = False,
             cache: TaskCache | None = None) -> History:
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

    ``cache`` (a ``TaskCache``): tasks it holds are not run again (a line on stderr says
    how many were reused), and each task that finishes is added to it at once, so an
    interrupted run resumes where it stopped; serial runs also make it the cache of
    ``checkpoint`` inside the tasks.
    """
    if not isinstance(grid, TaskGrid):
        raise TypeError(f"grid must be a TaskGrid, got {type(grid).__name__}")
    if cache is None:
        return grid.assemble(run_tasks(grid.task, grid.tasks, workers=workers,
                                       scheduler=scheduler, security=security,
                                       progress=progress))
    keys = [cache.key("task", grid.task, args) for args in grid.tasks]
    results: list[Any] = [cache.get(key) for key in keys]
    missing = [i for i, result in enumerate(results) if result is None]
    if len(missing) < len(results):
        cache.report(f"reused {len(results) - len(missing)} of {len(results)} tasks finished "
                     "before")
    if missing:
        def keep(position: int, result: Any) -> None:
            cache.put(keys[missing[position]], result)

        with _active(cache):
            fresh = run_tasks(grid.task, [grid.tasks[i] for i in missing], workers=workers,
                              scheduler=scheduler, security=security, progress=progress,
                              on_result=keep)
        for i, result in zip(missing, fresh):
            results[i] = result
    return grid.assemble(results)


# ------------------------------------------------------------------------------ resuming
#: The environment variable naming the folder of the task caches (default
#: ``$XDG_CACHE_HOME/attnbook``, that is ``~/.cache/attnbook``).
CACHE_VARIABLE = "ATTNBOOK_CACHE"
#: Where ``checkpoint`` finds the cache of the run in progress.
_ACTIVE: contextvars.ContextVar[TaskCache | None] = contextvars.ContextVar("task_cache",
                                                                           default=None)
#: How a kept value comes back: as an array, a numpy scalar or a Python number or string.
_KINDS = {"array": lambda a: a, "numpy": lambda a: a[()], "python": lambda a: a.item()}


def cache_folder(name: str) -> Path:
    """The folder of the finished tasks of experiment ``name``:
    ``$ATTNBOOK_CACHE/tasks/NAME``, by default ``~/.cache/attnbook/tasks/NAME`` (outside the
    repository, so nothing there is ever committed)."""
    root = os.environ.get(CACHE_VARIABLE) or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "attnbook"
    return Path(root).expanduser() / "tasks" / name


@functools.lru_cache(maxsize=None)
def _source_hash(*paths: str) -> str:
    """SHA-256 of the ``.py`` files under ``paths`` (folders or files), names included."""
    digest = hashlib.sha256()
    for path in paths:
        root = Path(path)
        files = sorted(root.rglob("*.py")) if root.is_dir() else [root]
        for file in files:
            digest.update(str(file.relative_to(root.parent)).encode() + b"\0")
            digest.update(file.read_bytes())
    return digest.hexdigest()


def _code_version(task: Callable[..., Any]) -> str:
    """The version of the code a task runs: the sources of attnlib, of attnbook's experiments
    and seeds and of the task's own module, and the numpy, scipy and Python versions."""
    import attnlib
    import scipy

    here = Path(__file__).resolve().parent
    while isinstance(task, functools.partial):
        task = task.func
    module = inspect.getmodule(task)
    own = getattr(module, "__file__", None)
    sources = (str(Path(attnlib.__file__).resolve().parent), str(here),
               str(here.parent / "seeds.py")) + ((str(Path(own).resolve()),) if own else ())
    return (f"{_source_hash(*sources)} numpy {np.__version__} scipy {scipy.__version__} "
            f"python {platform.python_version()}")


class TaskCache:
    """The finished tasks of one experiment, kept on disk so that an interrupted run resumes
    (module docstring): ``key`` names a task, ``get`` returns its kept result (None if there
    is none), ``put`` keeps one (atomically), ``clear`` deletes them all.

    ``salt`` identifies the run (its name, ``full`` and settings); every key adds the code's
    version, so results of other code are never reused."""

    def __init__(self, name: str, salt: str, *, report: Callable[[str], None] | None = None
                 ) -> None:
        self.name = name
        self.folder = cache_folder(name)
        self.salt = salt
        self._report = report
        self._failed = False

    def key(self, kind: str, task: Callable[..., Any], args: tuple) -> str | None:
        """The key of ``task(*args)`` (None when the task or its arguments cannot be
        pickled: such a task is simply not kept)."""
        try:
            described = pickle.dumps((kind, task, args), protocol=4)
        except Exception:  # noqa: BLE001 - lambdas, local functions, open files: not kept
            return None
        digest = hashlib.sha256(self.salt.encode() + _code_version(task).encode() + described)
        return digest.hexdigest()

    def _path(self, key: str) -> Path:
        return self.folder / f"{key}.npz"

    def get(self, key: str | None) -> dict[str, Any] | None:
        """The kept result of ``key``, bit for bit as it was returned, or None (a damaged
        entry is deleted and counts as missing)."""
        if key is None or not self._path(key).exists():
            return None
        try:
            with np.load(self._path(key), allow_pickle=False) as stored:
                kinds = json.loads(str(stored["__kinds__"]))
                return {name: _KINDS[kind](stored[f"value{i}"])
                        for i, (name, kind) in enumerate(kinds)}
        except Exception:  # noqa: BLE001 - a damaged entry is recomputed
            self._path(key).unlink(missing_ok=True)
            return None

    def put(self, key: str | None, result: Any) -> None:
        """Keep ``result`` under ``key`` if it is a dict of arrays, numbers and strings. A
        failure to write (a full disk) warns once and does not stop the run."""
        if key is None or not isinstance(result, Mapping):
            return
        kinds, arrays = [], {}
        for i, (name, value) in enumerate(result.items()):
            if isinstance(value, np.ndarray):
                kind = "array"
            elif isinstance(value, np.generic):
                kind = "numpy"
            elif isinstance(value, (bool, int, float, str)):
                kind = "python"
            else:
                return
            array = np.asarray(value)
            if not isinstance(name, str) or array.dtype.hasobject:
                return
            kinds.append((name, kind))
            arrays[f"value{i}"] = array
        arrays["__kinds__"] = np.asarray(json.dumps(kinds))
        buffer = io.BytesIO()
        np.savez(buffer, **arrays)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            atomic_write(self._path(key), lambda stream: stream.write(buffer.getvalue()))
        except OSError as exc:
            if not self._failed:
                warnings.warn(f"the finished tasks of {self.name} cannot be kept in "
                              f"{self.folder} ({exc}); an interrupted run will start over",
                              RuntimeWarning, stacklevel=2)
            self._failed = True

    def clear(self) -> None:
        """Delete every kept task of this experiment (its run was saved)."""
        shutil.rmtree(self.folder, ignore_errors=True)

    def report(self, what: str) -> None:
        """Say on stderr (or to the ``report`` callback) what was reused."""
        line = f"{self.name}: {what} (kept in {self.folder})"
        if self._report is not None:
            self._report(line)
        else:
            print(line, file=sys.stderr)


@contextmanager
def _active(cache: TaskCache) -> Iterator[None]:
    token = _ACTIVE.set(cache)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def checkpoint(step: tuple, compute: Callable[[], Mapping[str, np.ndarray]]
               ) -> Mapping[str, np.ndarray]:
    """``compute()``, kept as a finished step of the run in progress: when the run has a task
    cache (the command line, run serially), a step finished before an interruption is taken
    from it instead of being computed again, and a new one is kept as soon as it finishes.
    ``step`` names the step (picklable values: a label, the settings it depends on; the code's
    version is added). Elsewhere (a replay, a test, a worker process) it is ``compute()``."""
    cache = _ACTIVE.get()
    if cache is None:
        return compute()
    key = cache.key("checkpoint", checkpoint, step)
    kept = cache.get(key)
    if kept is not None:
        cache.report(f"reused the finished step {step[0]!r}")
        return kept
    result = compute()
    cache.put(key, result)
    return result

