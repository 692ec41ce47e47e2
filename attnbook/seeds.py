"""The book's random streams: one generator per purpose and seed, one home for the offsets.

A run with seed s draws each kind of randomness from its own stream, so that adding draws of
one kind never moves the numbers of another: ``default_rng(s)`` draws the problem and its
samples (``"data"``), ``default_rng(100 + s)`` the random start and then SGD's minibatches
(``"start"``), ``default_rng(200 + s)`` the random rotations behind the other starts of a
multi-start search (``"rotations"``), ``default_rng(300 + s)`` the random probes of curvature
estimates and the random rotations of landscape checks (``"probe"``), ``default_rng(1000 + s)``
the training noise and minibatches of the Darcy runs (``"training"``). Part II's instances with
non-Gaussian inputs draw those inputs from ``default_rng(100 + s)`` (``"inputs"``), a stream
of other experiments than ``"start"``.

Examples
--------
>>> from attnbook.seeds import stream
>>> int(stream("start", 0).integers(1000)) == int(np.random.default_rng(100).integers(1000))
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["OFFSETS", "stream"]

#: The offset of each stream from a run's seed.
OFFSETS = {"data": 0, "start": 100, "inputs": 100, "rotations": 200, "probe": 300,
           "training": 1000}


def stream(name: str, seed: int) -> np.random.Generator:
    """``numpy.random.default_rng(OFFSETS[name] + seed)``: the generator of stream ``name``
    for the run with ``seed`` (a non-negative integer)."""
    if name not in OFFSETS:
        raise ValueError(f"name must be one of {sorted(OFFSETS)}, got {name!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.default_rng(OFFSETS[name] + int(seed))
