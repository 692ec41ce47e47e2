"""Tiny task-grid experiments for tests/test_tasks.py (importable by Dask worker processes).

``tiny_grid``: six seeded tasks, each a loss and gradient of the attention layer on its own
random data. ``slow_grid``: tasks that announce themselves by creating a file in the folder
named by ``ATTNLIB_TEST_MARKERS`` and then sleep (for the Ctrl-C test).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from attnlib import attention
from attnbook.experiments import TaskGrid, register_grid
from attnbook.experiments._tasks import merge_tasks

SEEDS = tuple(range(6))


@dataclass(frozen=True)
class FixtureSettings:
    """The settings of the fixture grids (their only setting: the number of tasks)."""

    tasks: int


def tiny_task(seed: int, n: int) -> dict[str, np.ndarray]:
    """Loss and gradient at a random layer on random data, all from ``default_rng(seed)``."""
    rng = np.random.default_rng(seed)
    x, y = rng.standard_normal((n, 4)), rng.standard_normal((n, 3))
    value, grad_a, grad_b = attention.loss_and_grad(rng.standard_normal((3, 4)),
                                                    0.3 * rng.standard_normal((4, 4)), x, y)
    return {f"seed{seed}/loss": np.asarray(value), f"seed{seed}/grad_A": grad_a,
            f"seed{seed}/grad_B": grad_b}


@register_grid("tiny_grid", settings=FixtureSettings(tasks=len(SEEDS)))
def tiny_grid(full: bool = True) -> TaskGrid:
    """Six seeded attention losses and gradients (a test fixture)."""
    n = 300 if full else 40
    return TaskGrid([(seed,) for seed in (SEEDS if full else SEEDS[:1])],
                    partial(tiny_task, n=n), merge_tasks)


def slow_task(index: int) -> dict[str, np.ndarray]:
    """Create the marker file ``started<index>``, then sleep for a minute."""
    (Path(os.environ["ATTNLIB_TEST_MARKERS"]) / f"started{index}").touch()
    time.sleep(60)
    return {f"task{index}": np.asarray(float(index))}


@register_grid("slow_grid", settings=FixtureSettings(tasks=2))
def slow_grid(full: bool = True) -> TaskGrid:
    """Two tasks of a minute each (a test fixture for interrupting a run)."""
    return TaskGrid([(0,), (1,)], slow_task, merge_tasks)


def flaky_task(index: int) -> dict[str, np.ndarray]:
    """Task 0 kills its own worker process the first time it runs (a lost worker), then
    returns like the others; the marker file ``killed`` records the first run."""
    marker = Path(os.environ["ATTNLIB_TEST_MARKERS"]) / "killed"
    if index == 0 and not marker.exists():
        marker.touch()
        os.kill(os.getpid(), 9)
    return {f"task{index}": np.asarray(float(index))}


def killer_task(index: int) -> dict[str, np.ndarray]:
    """Task 1 kills its worker process every time it runs; the others sleep a minute."""
    if index == 1:
        os.kill(os.getpid(), 9)
    time.sleep(60)
    return {f"task{index}": np.asarray(float(index))}


def broken_task(index: int) -> dict[str, np.ndarray]:
    """Task 1 raises; the others sleep a minute (a failed task must not wait for them)."""
    if index == 1:
        raise ValueError("task 1 is broken")
    time.sleep(60)
    return {f"task{index}": np.asarray(float(index))}


@register_grid("broken_grid", settings=FixtureSettings(tasks=3))
def broken_grid(full: bool = True) -> TaskGrid:
    """Three tasks, the second of which raises (a test fixture for failing fast)."""
    return TaskGrid([(0,), (1,), (2,)], broken_task, merge_tasks)
