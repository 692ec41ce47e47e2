"""Experiments for the resume tests (tests/test_resume.py): a grid of six seeded tasks and a
run of two phases, each of which can be told to raise ``KeyboardInterrupt`` once (a simulated
Ctrl-C) and records which tasks and steps actually ran."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnbook.experiments import TaskGrid, register, register_grid
from attnbook.experiments._tasks import checkpoint, stack_tasks

#: What ran, in order: ("task", i), ("phase 1",), ("phase 2", i).
RAN: list[tuple] = []
#: The task or step that raises KeyboardInterrupt the next time it starts (then None).
INTERRUPT: list[tuple | None] = [None]


@dataclass(frozen=True)
class ResumeSettings:
    """The fixture runs' only setting: their number of tasks or steps."""

    tasks: int


def _start(what: tuple) -> None:
    if INTERRUPT[0] == what:
        INTERRUPT[0] = None
        raise KeyboardInterrupt
    RAN.append(what)


def grid_task(index: int) -> dict[str, np.ndarray]:
    """A seeded random walk, its end point as a numpy scalar and its length as a Python int."""
    _start(("task", index))
    walk = np.cumsum(np.random.default_rng(index).standard_normal(50))
    return {"walk": walk, "end": walk[-1], "length": int(walk.size)}


@register_grid("resume_grid", settings=ResumeSettings(tasks=6))
def resume_grid(full: bool = True) -> TaskGrid:
    """Six seeded random walks (a test fixture)."""
    return TaskGrid([(i,) for i in range(6 if full else 1)], grid_task, stack_tasks)


def _phase_two_step(start: np.ndarray, index: int) -> dict[str, np.ndarray]:
    _start(("phase 2", index))
    return {"value": start * (index + 1) + np.random.default_rng(index).random(3)}


@register("resume_phases", settings=ResumeSettings(tasks=3))
def resume_phases(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Phase 1, then three Phase-2 steps that start from its result (a test fixture)."""
    def phase_one() -> dict[str, np.ndarray]:
        _start(("phase 1",))
        return {"start": np.random.default_rng(7).random(3)}

    start = checkpoint(("phase 1", full), phase_one)["start"]
    steps = [checkpoint(("phase 2", full, i), lambda: _phase_two_step(start, i))
             for i in range(3)]
    return {"start": start, "steps": np.stack([step["value"] for step in steps])}
