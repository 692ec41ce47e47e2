"""Parameter sweeps as tables: one function over a grid of settings, serially or on Dask.

:func:`run_sweep` calls a function at every point of the Cartesian product of named axes,
``task(seed=..., n=...)`` for ``{"seed": [0, 1, 2], "n": [100, 200, 400]}``, and returns a
:class:`Sweep`, which keeps each result next to its grid point: :meth:`Sweep.to_frame` gives a
pandas DataFrame with one row per grid point and one column per axis and per result key,
:meth:`Sweep.array` the values of one key as an array with one axis per grid axis.

:func:`run_tasks` is the runner underneath (also the one of the book's stored runs,
``attnbook.experiments``): it calls ``task(*arguments[i])`` for every ``i`` and returns the
results in that order.

Where the tasks run (``workers`` and ``scheduler``):

* serially in this process (the default, ``workers=None`` or ``1``): exactly the loop
  ``[task(*args) for args in arguments]``;
* ``workers=K`` (K >= 2): a ``dask.distributed.LocalCluster`` of K single-threaded worker
  processes on this machine (``local_cluster``), started for the call and shut down after
  it within ``SHUTDOWN_TIMEOUT`` seconds;
* ``scheduler="tls://host:port"`` (or ``tcp://``): an existing Dask cluster (``dask
  scheduler`` / ``dask worker``, dask-jobqueue, Kubernetes).

Every worker process uses one BLAS thread (``attnlib.attention.limit_blas_threads``, when
threadpoolctl is installed), as the cores are shared by the worker processes. The results are
put back in task order, so they do not depend on the number of workers or on the order in
which the tasks finish: serial and parallel runs give the same numbers, bit for bit when the
serial process uses one BLAS thread too (``limit_blas_threads(1)``; a threaded BLAS may sum
in another order, which changes the last bits of some products). The task
must be picklable (Dask sends it to the workers): a module-level function, a
``functools.partial`` of one, or a function of the running script (Dask pickles those by
value). A progress bar (``progress=True``, tqdm) counts finished tasks; an interrupt (Ctrl-C)
cancels the submitted tasks, shuts down a cluster this module started and re-raises
``KeyboardInterrupt``. :func:`run_tasks` hands each result to ``on_result`` as soon as its
task finishes, so a caller can keep it (``attnbook.experiments`` does, to resume a run).

The main guard: the worker processes of a local cluster are started by multiprocessing's
``spawn`` method, which imports the running script again in each of them and so runs its
top-level code again. A script that starts a sweep with workers at its top level, outside
``if __name__ == "__main__":``, would start it again in every worker; :func:`run_sweep` and
:func:`run_tasks` detect this before any process starts and raise :class:`MainGuardError`
naming the fix (the Examples of :func:`run_sweep` show a complete script). They read the
script's source at the line its top-level code is running: a call inside the guard (also
through a function called there) passes, a call outside it fails, and a guard of another form
(a flag set from ``__name__``, ``multiprocessing.parent_process()``) is trusted. Notebooks,
interactive sessions and ``python -c`` are not imported again and need no guard.

Failures and security: the first task that fails (its own exception, or ``KilledWorker`` once
its worker was lost more than ``LOST_WORKER_RETRIES`` times) cancels the others and is
re-raised at once with a note naming the task; a local cluster whose start fails (a worker
lost while starting) is started again, up to ``CLUSTER_START_ATTEMPTS`` times. A local cluster
is at most ``WORKERS_PER_CORE`` workers per core and listens on 127.0.0.1 only (scheduler,
workers, nannies, HTTP servers). ``tcp://`` is plaintext and unauthenticated and Dask exchanges
pickles (code) over it: use an external ``tcp://`` scheduler only on a trusted network, else
``tls://`` with a ``distributed.Security`` (``security=``).

Dask and pandas are optional (``pip install 'attnlib[sweep]'``) and imported on first use:
serial sweeps need numpy only, workers and schedulers need Dask's ``distributed``, and
:meth:`Sweep.to_frame` needs pandas. Each raises an ``ImportError`` naming the extra when its
package is missing.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import linecache
import logging
import os
import sys
from dataclasses import dataclass
from types import FrameType, ModuleType
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from ._constants import documented
from ._progress import progress as progress_bar
from ._validation import MAX_SIZE, check_int, check_memory

# local_cluster is public too (attnbook and the benchmarks start clusters with it) but not
# listed: it starts processes that its caller must close, which a generic call cannot.
__all__ = ["run_sweep", "Sweep", "run_tasks", "MainGuardError", "check_workers",
           "require_distributed", "WORKERS_PER_CORE", "WORKER_BYTES", "LOOPBACK",
           "LOST_WORKER_RETRIES", "CLUSTER_START_ATTEMPTS", "SHUTDOWN_TIMEOUT", "CONNECT_TIMEOUT"]

#: Local worker processes allowed per core (more only queue for the same cores).
WORKERS_PER_CORE = documented(4, """\
Local worker processes allowed per core (more only queue for the same cores).""")
#: Memory a local worker process needs before it runs a task (interpreter, numpy,
#: Dask): 200 MiB.
WORKER_BYTES = documented(200 * 2 ** 20, """\
Memory a local worker process needs before it runs a task (interpreter, numpy,
Dask): 200 MiB.""")
#: The only interface a local cluster listens on.
LOOPBACK = documented("127.0.0.1", """\
The only interface a local cluster listens on.""")
#: How often a task may lose its worker (killed, out of memory) before it fails.
LOST_WORKER_RETRIES = documented(3, """\
How often a task may lose its worker (killed, out of memory) before it fails.""")
#: Attempts to start a local cluster (a worker may die while it starts).
CLUSTER_START_ATTEMPTS = documented(3, """\
Attempts to start a local cluster (a worker may die while it starts).""")
#: Seconds allowed for closing the client and the local cluster, also after a failure.
SHUTDOWN_TIMEOUT = documented(10, """\
Seconds allowed for closing the client and the local cluster, also after a failure.""")
#: Seconds to wait for a scheduler to answer before saying none did.
CONNECT_TIMEOUT = documented(20, """\
Seconds to wait for a scheduler to answer before saying none did.""")

#: What to install for the optional packages of this module.
_EXTRA = "pip install 'attnlib[sweep]'"
#: One task: its positional and its keyword arguments.
_Call = tuple[tuple, Mapping[str, Any]]
#: ``on_result(index, result)``: called in this process as each task finishes.
_OnResult = Callable[[int, Any], None]


class MainGuardError(RuntimeError):
    """A sweep with worker processes was started by a script's top-level code outside
    ``if __name__ == "__main__":``; the worker processes, which import the script again, would
    each start it again (module docstring)."""


def _import(name: str, purpose: str) -> ModuleType:
    """The optional module ``name`` (``distributed``, ``dask`` or ``pandas``), imported on first
    use, or an ``ImportError`` that names ``purpose`` and the extra to install.

    The one place this module imports them, by name (``importlib``): ``import attnlib.sweep``
    loads neither, as tests/test_package_wall.py checks for every library module."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ImportError(f"{purpose} needs {name}: {_EXTRA}") from exc


def require_distributed() -> None:
    """Raise a clear ``ImportError`` when Dask's ``distributed`` (the ``sweep`` extra of
    attnlib) is missing: serial runs need nothing more than the core install."""
    _import("distributed", "running tasks on Dask workers (workers >= 2, a scheduler or a "
                           "security configuration)")


# --------------------------------------------------------------------------- the runner
def _one_blas_thread() -> None:
    """Worker-process setup: one BLAS thread (the cores are shared by the worker processes);
    without threadpoolctl (the ``threads`` extra) the BLAS keeps its own count."""
    from .attention import limit_blas_threads

    try:
        limit_blas_threads(1)
    except ImportError:
        pass


def _call(fn: Callable[..., Any], args: tuple, kwargs: Mapping[str, Any]) -> Any:
    _one_blas_thread()
    return fn(*args, **kwargs)


def _describe(call: _Call) -> str:
    """A task's arguments for an error note: the tuple, or the grid point of a sweep."""
    args, kwargs = call
    return f"{(dict(kwargs) if kwargs and not args else args)!r:.200}"


def _run_on_client(task: Callable[..., Any], calls: Sequence[_Call], client: Any,
                   progress: bool, on_result: _OnResult | None) -> list[Any]:
    """Submit every task, collect the results in task order (handing each to ``on_result`` as
    it arrives); on the first failed task cancel the others and re-raise its exception at once,
    with a note naming the task."""
    as_completed = _import("distributed", "running tasks on Dask workers").as_completed
    futures = [client.submit(_call, task, args, kwargs, pure=False) for args, kwargs in calls]
    index = {future.key: i for i, future in enumerate(futures)}
    results: list[Any] = [None] * len(futures)
    try:
        for future in progress_bar(as_completed(futures), total=len(futures), desc="tasks",
                                   enabled=progress):
            i = index[future.key]
            if future.status == "error":
                error = future.exception()
                error.add_note(f"(task {i} of {len(futures)}, arguments {_describe(calls[i])}; "
                               "the other tasks were cancelled)")
                raise error
            results[i] = future.result()
            if on_result is not None:
                on_result(i, results[i])
    except BaseException:
        client.cancel(futures)
        raise
    return results


def check_workers(workers: object) -> int:
    """``workers`` as the size of a local cluster: an integer from 1 to
    ``WORKERS_PER_CORE`` times the number of cores, whose processes fit in the available
    memory (``WORKER_BYTES`` each); raises ``ValueError`` naming ``workers`` otherwise."""
    cores = os.cpu_count() or 1
    workers = check_int("workers", workers, minimum=1, maximum=WORKERS_PER_CORE * cores)
    check_memory("workers", workers, workers * WORKER_BYTES, "the worker processes")
    return workers


def local_cluster(workers: int) -> Any:
    """A ``dask.distributed.LocalCluster`` of ``workers`` single-threaded processes on this
    machine. Every service (scheduler, workers, nannies and their HTTP servers) listens on
    127.0.0.1 only, without a dashboard; a task survives ``LOST_WORKER_RETRIES`` losses of its
    worker (killed, out of memory) before it fails. Use it as a context manager, or close it."""
    purpose = "a local Dask cluster"
    dask = _import("dask", purpose)
    local = _import("distributed", purpose).LocalCluster
    workers = check_workers(workers)
    loopback = str(LOOPBACK)                    # the plain values, for Dask's configuration
    with dask.config.set({"distributed.scheduler.allowed-failures": int(LOST_WORKER_RETRIES)}):
        return local(n_workers=workers, threads_per_worker=1, processes=True,
                     host=loopback, dashboard_address=f"{loopback}:0",
                     worker_dashboard_address=f"{loopback}:0",
                     scheduler_kwargs={"dashboard": False},
                     silence_logs=logging.CRITICAL)   # a failed task is re-raised here


def _start_local_cluster(workers: int, hint: str = "") -> Any:
    """``local_cluster``, retried when a worker dies while the cluster starts; ``hint`` is
    added to the error when every attempt failed."""
    for attempt in range(1, CLUSTER_START_ATTEMPTS + 1):
        try:
            return local_cluster(workers)
        except (ValueError, TypeError):
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. "Nanny failed to start"
            if attempt == CLUSTER_START_ATTEMPTS:
                raise RuntimeError(f"the local Dask cluster of {workers} workers did not start "
                                   f"in {attempt} attempts ({type(exc).__name__}: {exc}){hint}"
                                   ) from exc


def _connect(scheduler: str, security: object) -> Any:
    """A Dask client of the scheduler at ``scheduler``, or a ``ConnectionError`` that names the
    address and says what was expected. A server that is not a Dask scheduler makes Dask's
    protocol read garbage (a huge frame length ends in ``MemoryError``, other replies in
    decoding errors), so every failure to connect is reported the same way."""
    client = _import("distributed", "a Dask scheduler").Client
    if "://" not in scheduler or not scheduler.split("://", 1)[1].rpartition(":")[2].isdigit():
        raise ValueError(f"scheduler must be an address such as 'tcp://127.0.0.1:8786' or "
                         f"'tls://host:8786' (scheme, host and port), got {scheduler!r}")
    try:
        return client(scheduler, security=security, timeout=CONNECT_TIMEOUT)
    except Exception as exc:   # noqa: BLE001 - MemoryError, OSError, TimeoutError, decode errors
        raise ConnectionError(f"scheduler: no Dask scheduler answered at {scheduler!r} "
                              f"within {CONNECT_TIMEOUT} s ({type(exc).__name__}: {exc}); "
                              "start one with `dask scheduler` and give its address") from exc


def _check_placement(workers: object, scheduler: object, security: object) -> int | None:
    """Check ``workers``, ``scheduler`` and ``security`` before anything runs; return
    ``workers`` as an int (None stays None)."""
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
        security_class = _import("distributed", "a security configuration").Security
        if not isinstance(security, security_class):
            raise TypeError(f"security must be a distributed.Security, got "
                            f"{type(security).__name__}")
        if scheduler is None:
            raise ValueError("security applies to an existing cluster: give scheduler too")
    return workers  # type: ignore[return-value]


def _execute(task: Callable[..., Any], calls: Sequence[_Call], *, workers: object,
             scheduler: object, security: object, progress: bool, caller: str,
             on_result: _OnResult | None = None) -> list[Any]:
    """``[task(*args, **kwargs) for args, kwargs in calls]``, serially or on Dask, each result
    handed to ``on_result(index, result)`` as it arrives."""
    workers = _check_placement(workers, scheduler, security)
    if scheduler is None and (workers is None or workers == 1):
        results = []
        for args, kwargs in progress_bar(calls, total=len(calls), desc="tasks",
                                         enabled=progress):
            results.append(task(*args, **kwargs))
            if on_result is not None:
                on_result(len(results) - 1, results[-1])
        return results
    if scheduler is not None:
        client = _connect(scheduler, security)  # type: ignore[arg-type]
        with client:
            return _run_on_client(task, calls, client, progress, on_result)
    hint = _check_main_guard(workers, caller)
    client_class = _import("distributed", "running tasks on Dask workers").Client
    cluster = _start_local_cluster(workers, hint)
    try:
        client = client_class(cluster)
        try:
            return _run_on_client(task, calls, client, progress, on_result)
        finally:
            client.close(timeout=SHUTDOWN_TIMEOUT)
    finally:
        cluster.close(timeout=SHUTDOWN_TIMEOUT)


def run_tasks(task: Callable[..., Any], arguments: Sequence[tuple], *,
              workers: int | None = None, scheduler: str | None = None,
              security: object | None = None, progress: bool = False,
              on_result: _OnResult | None = None) -> list[Any]:
    """Return ``[task(*args) for args in arguments]``, computed serially or on Dask workers.

    The runner of :func:`run_sweep` (module docstring): the results come back in the order of
    ``arguments`` whatever the number of workers.

    Parameters
    ----------
    task : callable
        A pure function of its arguments (every random draw seeded by them), picklable for
        the workers.
    arguments : sequence of tuple
        The positional arguments of each task.
    workers : int, optional
        None or 1: serially in this process. K >= 2: a local Dask cluster of K
        single-threaded worker processes (``local_cluster``), at most
        ``WORKERS_PER_CORE`` per core.
    scheduler : str, optional
        The address of a running Dask scheduler, such as ``"tls://10.0.0.5:8786"``
        (``workers`` must then be None).
    security : object, optional
        A ``distributed.Security`` for a ``tls://`` scheduler (None takes the TLS settings of
        the Dask configuration, ``distributed.comm.tls.*``).
    progress : bool
        Show a progress bar of finished tasks (tqdm).
    on_result : callable, optional
        ``on_result(i, result)``, called in this process as soon as task ``i`` (the index in
        ``arguments``) has finished, in the order the tasks finish: to keep each result (a
        checkpoint) before the others are done, so an interrupted run loses no finished task.

    Returns
    -------
    list
        The task's results, in the order of ``arguments``.

    Raises
    ------
    MainGuardError
        When ``workers >= 2`` is asked for by a script's top-level code outside
        ``if __name__ == "__main__":`` (the worker processes would run it again).
    ImportError
        When ``workers >= 2``, ``scheduler`` or ``security`` is given and Dask's
        ``distributed`` is not installed (``pip install 'attnlib[sweep]'``).
    """
    if not callable(task):
        raise TypeError(f"task must be callable, got {type(task).__name__}")
    if isinstance(arguments, (str, bytes)) or not isinstance(arguments, Sequence):
        raise TypeError(f"arguments must be a sequence of tuples (one per task), got "
                        f"{type(arguments).__name__}")
    if not all(isinstance(args, tuple) for args in arguments):
        raise TypeError("arguments must be a sequence of tuples (the task's arguments)")
    if len(arguments) == 0:
        raise ValueError("arguments must hold at least one task")
    if on_result is not None and not callable(on_result):
        raise TypeError(f"on_result must be a function (index, result) -> None, got "
                        f"{type(on_result).__name__}")
    return _execute(task, [(args, {}) for args in arguments], workers=workers,
                    scheduler=scheduler, security=security, progress=progress,
                    caller="run_tasks", on_result=on_result)


# ------------------------------------------------------------------------ the main guard
#: Names whose presence in a test makes an ``if`` a main guard (``__name__ == "__main__"``,
#: ``multiprocessing.parent_process() is None``, ``current_process().name == "MainProcess"``).
_GUARD_NAMES = frozenset({"__name__", "parent_process", "current_process"})
#: Calls that end the script (an ``if __name__ != "__main__": sys.exit()`` guards what follows).
_EXITS = frozenset({"exit", "_exit", "quit", "abort"})


def _mentions_guard(node: ast.AST) -> bool:
    return any((isinstance(sub, ast.Name) and sub.id in _GUARD_NAMES)
               or (isinstance(sub, ast.Attribute) and sub.attr in _GUARD_NAMES)
               for sub in ast.walk(node))


def _exits(nodes: Iterable[ast.AST]) -> bool:
    for node in nodes:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Raise):
                return True
            if isinstance(sub, ast.Call):
                func = sub.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
                if name in _EXITS:
                    return True
    return False


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno] + [d.lineno for d in decorators])


def _holds(block: list[ast.stmt], line: int) -> bool:
    return bool(block) and _first_line(block[0]) <= line <= (block[-1].end_lineno or 0)


def _blocks(statement: ast.stmt) -> Iterator[list[ast.stmt]]:
    """The statement lists a compound statement runs in the same frame (not a def's body)."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return
    for field in ("body", "orelse", "finalbody"):
        block = getattr(statement, field, None)
        if isinstance(block, list) and block and isinstance(block[0], ast.stmt):
            yield block
    for holder in getattr(statement, "handlers", []) + getattr(statement, "cases", []):
        yield holder.body


def _main_only(test: ast.expr) -> bool | None:
    """True for ``__name__ == "__main__"`` (true in the main process only), False for
    ``__name__ != "__main__"`` (true in a process that imports the script again), None for any
    other test."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        sides = [test.left, test.comparators[0]]
        names = [isinstance(side, ast.Name) and side.id == "__name__" for side in sides]
        mains = [isinstance(side, ast.Constant) and side.value == "__main__" for side in sides]
        if any(names) and any(mains):
            if isinstance(test.ops[0], (ast.Eq, ast.Is)):
                return True
            if isinstance(test.ops[0], (ast.NotEq, ast.IsNot)):
                return False
    return None


def _statement_guarded(source: str, line: int) -> bool | None:
    """Whether the top-level statement of the script ``source`` that runs at ``line`` runs in
    the main process only.

    True inside ``if __name__ == "__main__":`` (or the ``else`` of ``!=``), or after an
    ``if __name__ != "__main__":`` that exits; False when no guard keeps a process that imports
    the script again from running it; None when undecided (the source does not parse, or a
    guard takes another form: a flag set from ``__name__``, ``multiprocessing.parent_process()``,
    an exit under another test). Only False makes :func:`_check_main_guard` raise.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    tests = {id(sub) for node in ast.walk(tree) if isinstance(node, (ast.If, ast.While))
             for sub in ast.walk(node.test)}
    for node in ast.walk(tree):          # a guard outside an if's test: not followed here
        if id(node) not in tests and (isinstance(node, ast.Compare) and _mentions_guard(node)
                                      or isinstance(node, ast.Call)
                                      and _mentions_guard(node.func)):
            return None
    body: list[ast.stmt] = tree.body
    while True:
        statement = next((s for s in body if _holds([s], line)), None)
        if statement is None:
            return None
        for earlier in body[:body.index(statement)]:
            if isinstance(earlier, (ast.If, ast.While)) and _mentions_guard(earlier.test):
                main_only = _main_only(earlier.test)
                if isinstance(earlier, ast.While) or main_only is None:
                    if _exits(earlier.body) or _exits(earlier.orelse):
                        return None
                elif _exits(earlier.orelse if main_only else earlier.body):
                    return True              # a re-importing process stops there
        if isinstance(statement, (ast.If, ast.While)) and _mentions_guard(statement.test):
            main_only = _main_only(statement.test)
            if isinstance(statement, ast.While) or main_only is None:
                return None
            other = statement.orelse if main_only else statement.body
            if not _holds(other, line):
                return True                  # in the branch of the main process only
            body = other                     # in the branch a re-importing process runs
            continue
        block = next((b for b in _blocks(statement) if _holds(b, line)), None)
        if block is None:
            return False
        body = block


def _reimported(main: ModuleType) -> bool:
    """Whether a process started by multiprocessing's spawn (or forkserver) method imports
    ``main`` again, as ``multiprocessing.spawn`` decides: a module run with ``-m`` (but not a
    package's ``__main__``), or a script file (not IPython); no file, no import."""
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return name != "__main__" and not name.endswith(".__main__")
    path = getattr(main, "__file__", None)
    return path is not None and os.path.splitext(os.path.basename(path))[0] != "ipython"


def _module_frames() -> Iterator[FrameType]:
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name == "<module>":
            yield frame
        frame = frame.f_back


def _check_main_guard(workers: int, caller: str) -> str:
    """Raise :class:`MainGuardError` when the worker processes of a local cluster would run
    this call again: it is made (directly or through functions) by the top-level code of a
    script that the spawned workers import again, outside ``if __name__ == "__main__":``
    (decided from the script's source, :func:`_statement_guarded`), or it is made in such a
    worker process, while it imports the script again (``__name__ == "__mp_main__"``).

    Returns a hint for the error of a failed cluster start: empty, unless the script's
    top-level code makes the call and its guard could not be read (the workers then stop at
    the call with this error, which Dask reports only as a worker that did not start)."""
    fix = 'wrap the call in if __name__ == "__main__": (see help(attnlib.sweep.run_sweep))'
    main = sys.modules.get("__main__")
    script = None
    for frame in _module_frames():
        if frame.f_globals.get("__name__") == "__mp_main__":
            raise MainGuardError(
                f"{caller}(workers={workers}) was called in a process started by "
                f"multiprocessing while it imports the parent's script "
                f"({frame.f_code.co_filename}, line {frame.f_lineno}) again; {fix}")
        if main is not None and frame.f_globals is vars(main):
            script = frame                       # the outermost: the script's own code
    if script is None or not _reimported(main):  # type: ignore[arg-type]
        return ""                                # interactive, a notebook, -c, after import
    dask = _import("dask", "a local Dask cluster")
    if dask.config.get("distributed.worker.multiprocessing-method", "spawn") == "fork":
        return ""                                # forked workers do not import the script
    path, line = script.f_code.co_filename, script.f_lineno
    name = os.path.basename(path)
    guarded = _statement_guarded("".join(linecache.getlines(path, script.f_globals)), line)
    if guarded is False:
        raise MainGuardError(
            f"{name} calls {caller}(workers={workers}) from its top-level code (line {line}) "
            f"without a main guard; the {workers} worker processes import the script again "
            f"when they start, and each would run this call again: {fix}")
    if guarded is None:
        return (f"; {name} makes this call from its top-level code (line {line}) and the "
                f"worker processes import it again: if they failed with MainGuardError, {fix}")
    return ""


# ---------------------------------------------------------------------------- sweeps
def _task_name(task: Callable[..., Any]) -> str:
    name = getattr(task, "__name__", None) or getattr(getattr(task, "func", None), "__name__",
                                                      None)
    return f"{name}()" if name else f"the task ({type(task).__name__})"


def _check_axes(task: Callable[..., Any], axes: object) -> dict[str, tuple]:
    """``axes`` as a dict of tuples, checked against the parameters of ``task``."""
    if not isinstance(axes, Mapping):
        raise TypeError(f"axes must be a mapping from the task's parameter names to their "
                        f"values, such as {{'seed': [0, 1, 2]}}, got {type(axes).__name__}")
    if not axes:
        raise ValueError("axes must name at least one parameter, such as "
                         "{'seed': [0, 1, 2]}; got an empty mapping")
    checked: dict[str, tuple] = {}
    for name, values in axes.items():
        if not isinstance(name, str) or not name.isidentifier():
            raise TypeError(f"axes: {name!r} is not a parameter name (a string such as "
                            f"'seed')")
        if isinstance(values, (str, bytes)):
            raise TypeError(f"axes[{name!r}] must be a collection of values, got the string "
                            f"{values!r:.60} (for a single value use [{values!r:.60}])")
        if isinstance(values, (set, frozenset)):
            raise TypeError(f"axes[{name!r}] is a set, whose order is not fixed: give a list, "
                            f"e.g. sorted(...)")
        if isinstance(values, Mapping):
            raise TypeError(f"axes[{name!r}] must be a collection of values, got a "
                            f"{type(values).__name__}")
        try:
            values = tuple(values)
        except TypeError:
            raise TypeError(f"axes[{name!r}] must be a collection of values (a list, a tuple, "
                            f"a range, a 1-d array), got {type(values).__name__} "
                            f"{values!r:.60} (for a single value use [{values!r:.60}])"
                            ) from None
        if not values:
            raise ValueError(f"axes[{name!r}] is empty: every axis needs at least one value")
        checked[name] = values
    try:
        signature = inspect.signature(task)
    except (TypeError, ValueError):         # no signature (some builtins): the calls will tell
        return checked
    parameters = signature.parameters
    accepts_any = any(p.kind is p.VAR_KEYWORD for p in parameters.values())
    names = [p.name for p in parameters.values() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                p.KEYWORD_ONLY)]
    for name in checked:
        parameter = parameters.get(name)
        if parameter is None:
            accepted = accepts_any
        else:
            accepted = parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
        if not accepted:
            raise TypeError(f"axes: {_task_name(task)} takes no keyword argument {name!r} "
                            f"(its keyword parameters: {', '.join(names) or 'none'})")
    missing = [p.name for p in parameters.values() if p.default is p.empty
               and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name not in checked]
    if missing:
        raise TypeError(f"axes: {_task_name(task)} needs {missing[0]!r}, which is not an axis; "
                        f"add it to axes (one value: [value]) or bind it with "
                        f"functools.partial")
    return checked


@dataclass(frozen=True, eq=False)
class Sweep:
    """The results of :func:`run_sweep`, each next to its grid point.

    Iterating gives ``(point, result)`` pairs in grid order (C order: the last axis varies
    fastest), ``len`` the number of grid points.

    Attributes
    ----------
    axes : dict
        Axis name -> its values (a tuple), in the order given to :func:`run_sweep`.
    points : tuple of dict
        Every grid point, axis name -> value, in grid order.
    results : tuple
        What the task returned at each point, in grid order.
    """

    axes: dict[str, tuple]
    points: tuple[dict[str, Any], ...]
    results: tuple[Any, ...]

    @property
    def shape(self) -> tuple[int, ...]:
        """The number of values of each axis."""
        return tuple(len(values) for values in self.axes.values())

    def __len__(self) -> int:
        return len(self.points)

    def __iter__(self) -> Iterator[tuple[dict[str, Any], Any]]:
        return iter(zip(self.points, self.results))

    def __repr__(self) -> str:
        axes = ", ".join(f"{name}: {len(values)} value{'s' * (len(values) != 1)}"
                         for name, values in self.axes.items())
        return f"Sweep({axes}; {len(self)} result{'s' * (len(self) != 1)})"

    def records(self) -> list[dict[str, Any]]:
        """One dict per grid point: the axis values, then the result's keys (a result that is
        not a mapping under the key ``"result"``); a 0-d array becomes its scalar. Raises
        ``ValueError`` when a result key is also an axis name."""
        rows = []
        for point, result in self:
            values = dict(result) if isinstance(result, Mapping) else {"result": result}
            clash = [key for key in values if key in point]
            if clash:
                raise ValueError(f"the task's result key {clash[0]!r} is also an axis name; "
                                 f"rename one of them")
            rows.append({**point, **{key: value[()] if isinstance(value, np.ndarray)
                                     and value.ndim == 0 else value
                                     for key, value in values.items()}})
        return rows

    def to_frame(self) -> Any:
        """The sweep as a table: one row per grid point, in grid order.

        Returns
        -------
        pd.DataFrame
            One column per axis (its values), then one column per key of the task's results
            (a result that is not a mapping: one column ``"result"``). Scalar values (numbers,
            0-d arrays, strings) make ordinary columns; non-scalar values (arrays, lists) are
            kept as they are, one per cell, in an ``object`` column: use :meth:`array` to
            stack them, or return scalars from the task. A key missing from some results is
            NaN there.

        Raises
        ------
        ImportError
            Without pandas (``pip install 'attnlib[sweep]'``).
        ValueError
            When a result key is also an axis name.
        """
        pandas = _import("pandas", "Sweep.to_frame")
        rows = self.records()
        columns = list(dict.fromkeys(key for row in rows for key in row))
        return pandas.DataFrame(rows, columns=columns)

    def array(self, key: str | None = None) -> np.ndarray:
        """The values of result ``key`` (the whole results when None) as one array of shape
        ``self.shape + value shape``: ``array(key)[i, j] = results at (axis0[i], axis1[j])``.

        Raises ``ValueError`` when a result lacks ``key`` or the values differ in shape, and
        ``TypeError`` when ``key`` is None but the results are mappings.
        """
        values = []
        for point, result in self:
            if key is None:
                if isinstance(result, Mapping):
                    raise TypeError(f"key: the results are mappings, name one of their keys "
                                    f"({', '.join(map(repr, list(result)[:8]))})")
                values.append(np.asarray(result))
            elif not isinstance(result, Mapping) or key not in result:
                keys = list(result)[:8] if isinstance(result, Mapping) else []
                raise ValueError(f"key must be a key of every result, got {key!r}, which the "
                                 f"result at {point} lacks (its keys: "
                                 f"{', '.join(map(repr, keys)) or 'none'})")
            else:
                values.append(np.asarray(result[key]))
        shapes = sorted({value.shape for value in values})
        if len(shapes) != 1:
            raise ValueError(f"key {key!r}: the results have values of different shapes "
                             f"{shapes[:3]}; use to_frame() (one value per cell)")
        return np.stack(values).reshape(self.shape + shapes[0])


def run_sweep(task: Callable[..., Any], axes: Mapping[str, Iterable[Any]], *,
              workers: int | None = None, scheduler: str | None = None,
              security: object | None = None, progress: bool = False) -> Sweep:
    """Call ``task(**point)`` at every point of the grid ``axes`` and keep each result next to
    its point.

    The grid is the Cartesian product of the axes, in C order (the last axis varies fastest):
    ``{"seed": [0, 1], "n": [10, 20]}`` calls ``task(seed=0, n=10)``, ``task(seed=0, n=20)``,
    ``task(seed=1, n=10)``, ``task(seed=1, n=20)``. Where the calls run, and what workers
    need, is the module docstring's subject: serially by default, on local worker processes
    with ``workers=K``, on a Dask cluster with ``scheduler``; the results are the same.

    Parameters
    ----------
    task : callable
        A pure function of its keyword arguments (every random draw seeded by them, e.g.
        ``numpy.random.default_rng(seed)``) that returns a dict of numbers (one column each in
        :meth:`Sweep.to_frame`; arrays are kept whole) or a single value. Each axis must be
        one of its keyword parameters, and each of its parameters without a default must be
        an axis (bind fixed options with ``functools.partial``). With workers it must be
        picklable: a function of a module or of the running script, or a partial of one.
    axes : mapping
        Parameter name -> the values it takes (a list, tuple, range or 1-d array; at least
        one value, in a fixed order).
    workers : int, optional
        None or 1: serially in this process. K >= 2: on a local Dask cluster of K
        single-threaded worker processes, started for this call; a script must then call
        ``run_sweep`` under ``if __name__ == "__main__":`` (see Examples).
    scheduler : str, optional
        The address of a running Dask scheduler, such as ``"tls://10.0.0.5:8786"``.
    security : object, optional
        A ``distributed.Security`` for a ``tls://`` scheduler.
    progress : bool
        Show a progress bar of finished tasks (tqdm).

    Returns
    -------
    Sweep
        The axes, the grid points and the results, with :meth:`Sweep.to_frame` (a pandas
        DataFrame, one row per grid point) and :meth:`Sweep.array` (one axis per grid axis).

    Raises
    ------
    TypeError
        When ``task`` is not callable, ``axes`` is not a mapping, an axis is not a collection
        of values (a number, a string, a set), or names no keyword parameter of ``task``, or
        when a parameter of ``task`` without a default is not an axis.
    ValueError
        When ``axes`` or one of its axes is empty, the grid has more than ``MAX_SIZE``
        (10^8) points, or ``workers`` or ``scheduler`` is out of range.
    MainGuardError
        When ``workers >= 2`` is asked for by a script's top-level code outside
        ``if __name__ == "__main__":`` (each worker process would start the sweep again).
    ImportError
        When workers or a scheduler are asked for without Dask's ``distributed``
        (``pip install 'attnlib[sweep]'``).

    Examples
    --------
    A complete script, ``sweep_loss.py``, run as ``python sweep_loss.py``. The worker
    processes import the script again, so the sweep is started under the main guard (without
    it, ``run_sweep`` raises :class:`MainGuardError`)::

        import numpy as np

        from attnlib import attention, sweep


        def loss_at_random_layer(seed: int, n: int) -> dict[str, float]:
            # the attention loss of a random layer (A, B) on n random tokens
            rng = np.random.default_rng(seed)
            X, Y = rng.standard_normal((n, 4)), rng.standard_normal((n, 3))
            A, B = rng.standard_normal((3, 4)), 0.3 * rng.standard_normal((4, 4))
            return {"loss": attention.loss(A, B, X, Y)}


        if __name__ == "__main__":
            result = sweep.run_sweep(loss_at_random_layer,
                                     {"seed": [0, 1, 2], "n": [100, 200, 400]}, workers=2)
            print(result.to_frame())

    The same sweep, smaller and serial (the default), as it runs in a notebook:

    >>> import numpy as np
    >>> from attnlib import attention, sweep
    >>> def loss_at_random_layer(seed, n):
    ...     rng = np.random.default_rng(seed)
    ...     X, Y = rng.standard_normal((n, 4)), rng.standard_normal((n, 3))
    ...     A, B = rng.standard_normal((3, 4)), 0.3 * rng.standard_normal((4, 4))
    ...     return {"loss": attention.loss(A, B, X, Y)}
    >>> result = sweep.run_sweep(loss_at_random_layer, {"seed": [0, 1], "n": [20, 40]})
    >>> result
    Sweep(seed: 2 values, n: 2 values; 4 results)
    >>> for point, value in result:
    ...     print(point, round(value["loss"], 3))
    {'seed': 0, 'n': 20} 1.907
    {'seed': 0, 'n': 40} 3.026
    {'seed': 1, 'n': 20} 1.84
    {'seed': 1, 'n': 40} 1.975
    >>> result.to_frame().round(3)
       seed   n   loss
    0     0  20  1.907
    1     0  40  3.026
    2     1  20  1.840
    3     1  40  1.975
    >>> result.array("loss").round(3)        # axis 0: seed, axis 1: n
    array([[1.907, 3.026],
           [1.84 , 1.975]])
    """
    if not callable(task):
        raise TypeError(f"task must be callable, got {type(task).__name__}")
    checked = _check_axes(task, axes)
    size = int(np.prod([len(values) for values in checked.values()], dtype=object))
    if size > MAX_SIZE:
        raise ValueError(f"axes give {size} grid points, more than {MAX_SIZE}; sweep fewer "
                         f"values")
    points = tuple(dict(zip(checked, values)) for values in itertools.product(*checked.values()))
    results = _execute(task, [((), point) for point in points], workers=workers,
                       scheduler=scheduler, security=security, progress=progress,
                       caller="run_sweep")
    return Sweep(axes=checked, points=points, results=tuple(results))
