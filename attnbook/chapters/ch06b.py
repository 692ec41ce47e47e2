"""Chapter 6b (the finite sample and the orbit): what the chapter computes and its Reproduction
report re-checks.

Every function reads the chapter's stored run ``finite_sample_methods`` (loaded with
:func:`attnbook.experiments.load` or :func:`attnbook.experiments.replay`) or plain arrays;
nothing is computed at import. Five methods on equal footing: the lowest known minimum of each
data set (:func:`lowest_known_minimum`) and the gradient evaluations each method needs to reach
a relative gap (:func:`evaluations_to`, :func:`evaluation_counts`). When Algorithm 1 is done:
the early-stopping rule on its excess risk (:func:`early_stops`). The orbit curvatures come from
:func:`attnbook.chapters.ch06.slowest_curvatures` with :data:`N_SLOW`.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from attnlib import analysis

__all__ = ["LEVELS", "N_SLOW", "EARLY_STOP_TOLERANCE", "lowest_known_minimum", "evaluations_to",
           "evaluation_counts", "early_stops"]

#: The relative gaps a method is asked to reach.
LEVELS = (1e-3, 1e-6, 1e-9)
#: The orbit's dimension ``d(d-1)/2`` at d = 10, the number of soft Hessian eigenvalues at the minimizer.
N_SLOW = 45
#: [choice] The early-stopping rule stops at Algorithm 1's excess risk within this fraction of the
#: reference minimizer's.
EARLY_STOP_TOLERANCE = 0.1


def lowest_known_minimum(stored: Mapping[str, np.ndarray]) -> np.ndarray:
    """The lowest known value of Q_hat on each data set (n, seed): the smaller of the reference
    route's minimum (``basin_value``) and the lowest value any method recorded (chapter 6b,
    "Five methods on equal footing")."""
    return np.minimum(stored["basin_value"], np.nanmin(stored["values"], axis=(-2, -1)))


def evaluations_to(stored: Mapping[str, np.ndarray], level: float,
                   reference: np.ndarray) -> np.ndarray:
    """The gradient evaluations (n, seed, method) each method spent until its value first came
    within ``level`` times the initial gap above ``reference`` (n, seed):
    the first record k with (Q_k - Q_ref) / (Q_0 - Q_ref) <= level, counted in evaluations
    (what the method spent before it started included); inf where it is not reached within
    the budget."""
    initial_gap = stored["initial_value"] - reference
    first = analysis.iterations_to_threshold(
        (stored["values"] - reference[..., None, None]) / initial_gap[..., None, None], level)
    index = np.where(np.isfinite(first), first, 0).astype(int)[..., None]
    spent = np.take_along_axis(stored["evaluations"], index, axis=-1)[..., 0]
    return np.where(np.isfinite(first), spent, np.inf)


def evaluation_counts(stored: Mapping[str, np.ndarray], reference: np.ndarray,
                      levels: tuple[float, ...] = LEVELS) -> dict[float, np.ndarray]:
    """:func:`evaluations_to` at each relative gap of ``levels``, keyed by the gap."""
    return {level: evaluations_to(stored, level, reference) for level in levels}


def early_stops(alg1_risk: np.ndarray, basin_risk: np.ndarray, *,
                tolerance: float = EARLY_STOP_TOLERANCE) -> list[int | None]:
    """The early-stopping rule of chapter 6b ("When is Algorithm 1 done?"): for each data set
    (n, seed), in that order, the first iteration m with ``|E_m - E_ref| <= tolerance * E_ref``,
    where E = L(theta) - L* is the excess risk, E_m Algorithm 1's at iteration m (``alg1_risk``,
    shape (n, seed, iteration)) and E_ref the reference minimizer's (``basin_risk``, (n, seed));
    None where it never comes that close."""
    within = np.abs(alg1_risk - basin_risk[..., None]) <= tolerance * basin_risk[..., None]
    return [int(np.argmax(w)) if w.any() else None for w in within.reshape(-1, within.shape[-1])]
