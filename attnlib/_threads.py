"""Threads for the blocked attention layer (private; :mod:`attnlib.attention` is its one user).

The query rows of a blocked evaluation are split into blocks (:func:`blocks`); ``workers``
threads (the calling thread and ``workers - 1`` threads of a persistent pool) take the next
block from a shared counter, and every block runs with one BLAS thread
(:func:`one_blas_thread`), through ``threadpoolctl`` when it is installed (the ``threads``
extra). Without it the BLAS libraries keep their own thread count: the results are the same,
up to round-off, and a threaded BLAS may then compete with the block threads for the cores.
A pool thread that wakes on the caller's core moves to the process's other cores
(:func:`_leave_cpu`, Linux only): two threads on one core are no faster than one.
"""

from __future__ import annotations

import ctypes
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Callable, Iterator, TypeVar

import numpy as np

from ._constants import documented
from ._validation import check_int

try:
    from threadpoolctl import ThreadpoolController, threadpool_limits
except ImportError:                     # the threads extra is not installed
    ThreadpoolController = threadpool_limits = None   # type: ignore[assignment,misc]

T = TypeVar("T")

#: Below this many bytes of one n x n array (float32 at n = 500), the blocks run on the calling
#: thread whatever ``workers`` says: a second thread's hand-over costs about what it saves
#: there (float32, n = 500: 1.18 ms on two threads against 1.20 ms on one; float64, 2 MB:
#: 1.39 against 2.02 ms). Smaller blocks, which keep a block in a 2 MB L2 cache, were faster on
#: one thread (n = 2000, float64: 32-row blocks 25 ms against 30 ms for 131 rows) but slower on
#: two (25 against 16 ms: many short calls contend for the GIL), and the blocks may not depend
#: on the thread count.
PARALLEL_BYTES = documented(2 ** 20, """\
Below this many bytes of one n x n array (float32 at n = 500), the blocks run on the calling
thread whatever ``workers`` says: a second thread's hand-over costs about what it saves
there (float32, n = 500: 1.18 ms on two threads against 1.20 ms on one; float64, 2 MB:
1.39 against 2.02 ms). Smaller blocks, which keep a block in a 2 MB L2 cache, were faster on
one thread (n = 2000, float64: 32-row blocks 25 ms against 30 ms for 131 rows) but slower on
two (25 against 16 ms: many short calls contend for the GIL), and the blocks may not depend
on the thread count.""")


def blocks(n_queries: int, block: int) -> Iterator[tuple[int, int]]:
    """The ``(start, stop)`` row spans of ``block`` query rows each (the last may be shorter)."""
    for start in range(0, n_queries, block):
        yield start, min(start + block, n_queries)


_DEFAULT_WORKERS = min(2, os.cpu_count() or 1)
#: The most threads ``workers`` may ask for (threads beyond the cores only compete for them;
#: each costs a stack and a work array).
MAX_WORKERS = documented(256, """\
The most threads ``workers`` may ask for (threads beyond the cores only compete for them;
each costs a stack and a work array).""")


def resolve_workers(workers: int | None, n_blocks: int, work_bytes: int) -> int:
    """Threads for ``n_blocks`` blocks of ``work_bytes`` bytes of work arrays in all: at most
    ``workers`` and the number of blocks, one below ``PARALLEL_BYTES``."""
    if workers is None:
        workers = _DEFAULT_WORKERS
    workers = check_int("workers", workers, minimum=1, maximum=MAX_WORKERS)
    return 1 if work_bytes < PARALLEL_BYTES else min(workers, n_blocks)


#: The BLAS libraries loaded with numpy (found once: inspecting them costs about 0.2 ms).
_BLAS = ThreadpoolController() if ThreadpoolController is not None else None


def limit_blas_threads(threads: int) -> None:
    """Use ``threads`` BLAS threads in this process from now on (every BLAS library loaded so
    far: numpy's and scipy's OpenBLAS, MKL, BLIS, ..., through ``threadpoolctl``). At most the
    number of cores (``os.cpu_count()``): more threads than cores only compete for them."""
    if threadpool_limits is None:
        raise ImportError("limit_blas_threads needs threadpoolctl: pip install 'attnlib[threads]'")
    threadpool_limits(limits=check_int("threads", threads, minimum=1,
                                       maximum=os.cpu_count() or 1), user_api="blas")


#: Work arrays up to this many entries per thread are kept between calls (see _scratch).
_SCRATCH_KEEP = 4 * 2 ** 18      # four of attention.BLOCK_ELEMENTS
_THREAD_STATE = threading.local()
_POOLS: dict[int, ThreadPoolExecutor] = {}
os.register_at_fork(after_in_child=_POOLS.clear)


def _scratch(count: int, block: int, width: int, dtype: np.dtype) -> list[np.ndarray]:
    """``count`` work arrays of shape ``(block, width)`` for the calling thread.

    Small ones (the automatic block sizes) are cached per thread and reused across blocks and
    calls: allocating fresh multi-megabyte arrays costs page faults that, measured on the
    book's machine, took several times longer than the arithmetic done on them.
    """
    size = block * width
    cached = getattr(_THREAD_STATE, "scratch", None)
    if (cached is None or len(cached) < count or cached[0].dtype != dtype
            or cached[0].size < size):
        cached = [np.empty(size, dtype=dtype) for _ in range(count)]
        if count * size <= _SCRATCH_KEEP:
            _THREAD_STATE.scratch = cached
    return [array[:size].reshape(block, width) for array in cached[:count]]


def _load_sched_getcpu() -> Callable[[], int] | None:
    """The C library's ``sched_getcpu`` (Linux: the core the calling thread runs on), or None
    where there is none."""
    try:
        function = ctypes.CDLL(None).sched_getcpu
    except (OSError, AttributeError, TypeError):
        return None
    function.restype, function.argtypes = ctypes.c_int, []
    return function


_SCHED_GETCPU = _load_sched_getcpu() if hasattr(os, "sched_setaffinity") else None


def _current_cpu() -> int | None:
    """The core the calling thread runs on now (None where that cannot be read)."""
    cpu = _SCHED_GETCPU() if _SCHED_GETCPU is not None else -1
    return cpu if cpu >= 0 else None


def _leave_cpu(cpu: int) -> None:
    """Let the calling thread run on every core the process may use (its main thread's
    affinity) except ``cpu``; nothing if no other core is allowed.

    Called by a pool thread that wakes on the caller's core. The scheduler otherwise leaves
    it there while the other core is busy, for example with OpenBLAS's worker, which waits
    busily for about 0.1 s after a product on several threads, and the two threads then
    share one core (measured on the book's machine, ``benchmarks/bench_two_threads.py``,
    float64, two threads against one right after a two-thread product: 1.07, 1.05 and 1.00 of
    one thread's time at n = 500, 1000 and 2000; with this move 0.81, 0.74 and 0.76). The
    affinity stays with the pool thread until its next move.
    """
    try:
        others = os.sched_getaffinity(os.getpid()) - {cpu}
        if others:
            os.sched_setaffinity(0, others)
    except OSError:                         # the process's affinity changed meanwhile
        pass


def _pool(threads: int) -> ThreadPoolExecutor:
    """A persistent pool per thread count (its threads keep their scratch arrays)."""
    if threads not in _POOLS:
        _POOLS[threads] = ThreadPoolExecutor(max_workers=threads,
                                             thread_name_prefix="attnlib-attention")
    return _POOLS[threads]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the body with one thread in every BLAS library found at import (``_BLAS``).

    Used around the blocks (:func:`run_blocks`) and around the other products of an
    evaluation (``X B``, the sums over rows), so that they run on one thread too: a product
    on several OpenBLAS threads wakes its worker threads, which then wait busily for more
    work while the block threads run (measured on the book's machine: at n = 8000 with one
    block thread, about 0.11 s of another thread's CPU time per 0.7 s call). Nested uses
    switch nothing. It is entered inside the functions' bodies, not as a decorator: the
    problem sets' grader names the first attnlib function an answer enters. Only the
    libraries not already on one thread are switched, and restored afterwards:
    ``threadpoolctl``'s general ``limit`` context re-inspects the libraries on every entry,
    which cost 0.07 to 0.3 ms per call, a tenth of a whole evaluation at n = 500.
    """
    switched = []
    for library in _BLAS.lib_controllers if _BLAS is not None else ():
        count = library.get_num_threads() if library.user_api == "blas" else 1
        if count != 1:
            library.set_num_threads(1)
            switched.append((library, count))
    try:
        yield
    finally:
        for library, count in switched:
            library.set_num_threads(count)


def run_blocks(work: Callable[[int, int, list[np.ndarray]], T], n_queries: int, block: int,
                workers: int | None, *, buffers: int, width: int, dtype: np.dtype) -> list[T]:
    """``[work(start, stop, scratch) for each block]`` in block order, on ``workers`` threads.

    The calling thread and ``workers - 1`` pool threads take the next block from a shared
    counter until none is left: one hand-over to the pool per call, not one per block, and
    the caller starts at once instead of sleeping until the pool is done (on the book's
    machine a pool thread started 0.06 to 0.1 ms after the hand-over and a waiting caller
    resumed up to 0.3 ms after the pool finished, a tenth of an evaluation at n = 500).
    The caller then waits only for the blocks a pool thread is still computing, not for a
    pool thread that has not started: one that wakes late, because its core was idle or busy
    with another library's threads, finds no block left and takes none (n = 1000, float64,
    right after a two-thread BLAS product, in rounds that also time back-to-back calls: two
    threads 1.05 times one thread's time when the caller waited for every pool thread, 0.77
    since; in rounds of such calls only, 1.06 and 1.04). A pool thread that starts on the
    caller's core first moves off it (:func:`_leave_cpu`). ``scratch`` holds ``buffers`` work
    arrays with ``stop - start`` rows and ``width`` columns (from :func:`_scratch`); the
    blocks run with a single BLAS thread (module docstring). The results are returned in
    block order whichever thread computed them. A block's error stops the handing out of
    blocks and is raised once the blocks already started have finished.
    """
    spans = list(blocks(n_queries, block))
    threads = resolve_workers(workers, len(spans), n_queries * width * dtype.itemsize)
    results: list[T] = [None] * len(spans)          # type: ignore[list-item]
    taken = iter(range(len(spans)))
    errors: list[BaseException] = []
    lock = threading.Lock()
    helpers_idle = threading.Condition(lock)
    busy_helpers = 0
    caller_cpu = _current_cpu() if threads > 1 else None

    def drain(helper: bool) -> None:
        nonlocal busy_helpers
        if helper and caller_cpu is not None and _current_cpu() == caller_cpu:
            _leave_cpu(caller_cpu)
        scratch = None
        while True:
            with lock:
                index = None if errors else next(taken, None)
                if index is None:
                    return
                busy_helpers += helper
            try:
                if scratch is None:
                    scratch = _scratch(buffers, block, width, dtype)
                start, stop = spans[index]
                results[index] = work(start, stop, [array[:stop - start] for array in scratch])
            except BaseException as error:          # re-raised by the caller, Ctrl-C too
                with lock:
                    errors.append(error)
                return
            finally:
                if helper:
                    with lock:
                        busy_helpers -= 1
                        helpers_idle.notify_all()

    with one_blas_thread():
        for _ in range(threads - 1):
            _pool(threads - 1).submit(drain, True)
        drain(False)
        with lock:                                  # a helper still on a block: wait for it
            helpers_idle.wait_for(lambda: busy_helpers == 0)
    if errors:
        raise errors[0]
    return results
