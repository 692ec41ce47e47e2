"""Helpers shared by the test files: central finite differences (gradients are checked
against them in float64) and stopping a process a test started; and nbval's comparison told to
leave the verdict records alone.

Import them as ``from conftest import central_difference`` (pytest puts ``tests/`` on the
path).
"""

from __future__ import annotations

import os
import signal
import subprocess
from typing import Callable

import numpy as np

# The tests are strict: a replayed prefix outside its tolerance fails (a reader's build only
# warns). Set before any notebook kernel starts, so nbval's kernels inherit it.
os.environ["ATTNBOOK_REPLAY"] = "strict"


def pytest_collection_modifyitems(items: list) -> None:
    """nbval compares every MIME type of an output as text; a verdict record
    (``attnbook.verdicts.RECORD_MIME``) holds the measured values at full precision, whose last
    digits differ between machines. The text of the same output is compared (with the
    sanitizers), and the build's staleness check compares the records within their spread."""
    from attnbook.verdicts import RECORD_MIME

    for item in items:
        notebook = item.parent
        if hasattr(notebook, "skip_compare") and RECORD_MIME not in notebook.skip_compare:
            notebook.skip_compare = (*notebook.skip_compare, RECORD_MIME)


def central_difference(f: Callable[[np.ndarray], float], theta: np.ndarray,
                       h: float = 1e-6) -> np.ndarray:
    """``(f(theta + h e_i) - f(theta - h e_i)) / (2 h)`` for every entry i of ``theta``: the
    gradient of the scalar ``f`` by central differences (error O(h^2))."""
    grad = np.zeros_like(theta)
    for index in np.ndindex(theta.shape):
        plus, minus = theta.copy(), theta.copy()
        plus[index] += h
        minus[index] -= h
        grad[index] = (f(plus) - f(minus)) / (2 * h)
    return grad


def central_differences(f: Callable[..., float], *params: np.ndarray,
                        h: float = 1e-6) -> list[np.ndarray]:
    """The gradient of the scalar ``f(*params)`` in each of ``params`` by
    :func:`central_difference`, the other arguments held fixed."""
    def partial(i: int) -> np.ndarray:
        return central_difference(
            lambda x: f(*params[:i], x, *params[i + 1:]), params[i], h)

    return [partial(i) for i in range(len(params))]


def stop_process(process: subprocess.Popen, timeout: float = 15) -> None:
    """Stop a process this test started together with the processes it started (its session,
    so it must have been started with ``start_new_session=True``): SIGTERM, then SIGKILL if it
    has not exited after ``timeout`` seconds."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
