"""Stored runs as grids of independent seeded tasks (one home for merging their results).

A stored run is written as a list of task specifications, one function that runs one task and
returns its slice of the history (keys unique to the task), and a merge. A parallel runner can
distribute the tasks and call :func:`merge_tasks` on the results.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np


def merge_tasks(parts: Sequence[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """Merge task histories; tasks must write disjoint keys (a clash is a ``ValueError``)."""
    out: dict[str, np.ndarray] = {}
    for part in parts:
        clash = set(out) & set(part)
        if clash:
            raise ValueError(f"tasks write the same keys: {sorted(clash)[:3]}")
        out.update(part)
    return out
