"""Chapter 5 (rerunning the experiment): the objects the chapter builds and its report re-checks.

``notebooks/ch05_experiment.ipynb`` calls these functions and shows what they return;
``notebooks/report_ch05_experiment.ipynb`` calls the same functions for its verdicts
(:mod:`attnbook.claims.ch05`). Most take the stored run ``paper1_defaults`` (``runs``: three
seeds, the five methods of :data:`attnlib.algorithm.METHODS`, 2000 iterations, certified
minima), which the chapter replays and the report loads
(``experiments.load("paper1_defaults")``).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

import numpy as np

from attnlib import algorithm
from attnbook.claims import ch05 as judge
from attnbook.experiments import part1

__all__ = ["METHODS", "LABELS", "L_STAR", "CONVERGED", "INIT_SCALES", "NOISE_AXIS",
           "StartComparison", "seeds", "stacked", "lowest_minima", "gap", "start_comparison"]

#: The five methods, in the order of the stored run's method axis.
METHODS: tuple[str, ...] = tuple(algorithm.METHODS)
#: How the chapter names each method.
LABELS = {"algorithm1": "Algorithm 1", "random+precond+reg": "random + precond + reg",
          "gd": "GD", "sgd": "SGD", "adam": "Adam"}
#: The optimal population loss ``L* = p sigma^2 / 2`` of the defaults.
L_STAR = part1.SETTINGS.p * part1.SETTINGS.noise_std ** 2 / 2
#: [choice] An optimization gap below this fraction of the initial gap counts as converged.
CONVERGED = judge.CONVERGED
#: The random start's scales c of observation 1, entries ``N(0, c^2/d)`` (``c = sqrt(d)`` gives unit variance).
#: With :data:`NOISE_AXIS`, the axes of :func:`attnbook.experiments.ablations.start_claims_grid`.
INIT_SCALES = (0.3, 1.0, 2.0, float(np.sqrt(part1.SETTINGS.d)), 5.0)
#: The noise levels sigma of observation 1.
NOISE_AXIS = (0.01, 0.03, 0.1)


class StartComparison(NamedTuple):
    """Observation 1 at the book's random start: the spectral against the random start."""

    e_spectral: np.ndarray
    """Excess risk ``L(theta_0) - L*`` of the spectral start (Algorithm 1's first iterate),
    per seed."""
    e_random: np.ndarray
    """Excess risk of the random start (random-init SGD's first iterate), per seed."""
    ratios: list[tuple[float, float]]
    """The pair (loss ratio, excess-risk ratio), random over spectral, of each seed."""
    loss_ratio: float
    """The median over seeds of the loss ratio."""
    excess_ratio: float
    """The median over seeds of the excess-risk ratio."""


def seeds(runs: Mapping[str, np.ndarray]) -> tuple[int, ...]:
    """The seeds of the stored run ``runs``, in the order of its seed axis (problem and data
    from ``default_rng(s)``)."""
    return tuple(int(s) for s in runs["seeds"])


def stacked(runs: Mapping[str, np.ndarray], key: str, method: str) -> np.ndarray:
    """The (seeds, iterations) array of the stored curve ``key`` for one method."""
    return runs[key][:, :, METHODS.index(method)]


def lowest_minima(runs: Mapping[str, np.ndarray]) -> dict[tuple[str, int], float]:
    """``Q*`` for each objective and seed: the lowest known minimum the gap is measured to.

    Keys are ``(tag, seed)`` with the tag of :func:`attnbook.experiments.part1.reference_tag`:
    ``"Q"`` (``Q_hat = L_hat + R_hat``, the lam = 1 methods) takes the lowest known minimum of
    chapters 5, 6 and 12 (:func:`attnbook.experiments.part1.lowest_known_minima`), ``"L"``
    (``L_hat`` alone, GD, SGD and Adam) the lowest of the stored run's certified minima of L_hat.
    Section "Optimization gap and excess risk against iterations" (eq. ch05-gap).
    """
    lowest = part1.lowest_known_minima()
    return {**{("Q", s): lowest[s]["value"] for s in seeds(runs)},
            **{("L", s): runs["ref_L_value"][i].min() for i, s in enumerate(seeds(runs))}}


def gap(runs: Mapping[str, np.ndarray], best: Mapping[tuple[str, int], float],
        method: str) -> np.ndarray:
    """The optimization gap ``gap_k = Q_hat(theta_k) - Q_hat*`` (eq. ch05-gap) of each seed.

    ``Q_hat`` is the objective ``method`` trains, ``Q_hat*`` its lowest known minimum in
    ``best`` (:func:`lowest_minima`); returns a (seeds, iterations) array.
    """
    tag = part1.reference_tag(algorithm.METHODS[method])
    minima = np.array([best[tag, s] for s in seeds(runs)])
    return stacked(runs, "objective", method) - minima[:, None]


def start_comparison(runs: Mapping[str, np.ndarray]) -> StartComparison:
    """Observation 1: how much higher the random start begins than the spectral start.

    With ``e_s`` and ``e_r`` the excess risks of the spectral and the random start, the loss
    ratio is ``(e_r + L*) / (e_s + L*)`` (capped by the noise floor ``L*``) and the excess-risk
    ratio ``e_r / e_s``, per seed, and their medians over seeds. Section "Observation 1: the
    initial gap"; the report judges "three orders of magnitude" from the median loss ratio.
    """
    e_spectral, e_random = (runs["excess_risk"][:, 0, METHODS.index(m)]
                            for m in ("algorithm1", "sgd"))
    ratios = [((r + L_STAR) / (s + L_STAR), r / s) for s, r in zip(e_spectral, e_random)]
    loss_ratio, excess_ratio = np.median(ratios, axis=0)
    return StartComparison(e_spectral, e_random, ratios, loss_ratio, excess_ratio)

