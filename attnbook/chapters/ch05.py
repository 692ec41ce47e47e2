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

from attnlib import algorithm, analysis
from attnbook.claims import ch05 as judge
from attnbook.experiments import part1
from attnbook.tables import ResultTable, result_table

__all__ = ["METHODS", "LABELS", "L_STAR", "CONVERGED", "INIT_SCALES", "NOISE_AXIS",
           "StartComparison", "seeds", "stacked", "lowest_minima", "gap", "start_comparison",
           "HeadlineCurves", "headline_curves", "slow_directions", "describe_starts",
           "describe_zero_noise", "describe_start_grid", "describe_algorithm1", "end_readings",
           "end_readings_table", "sweep_tables"]

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



# ---------------------------------------------------------------------------------------------
# What the chapter's cells print: the computations above, formatted (the cells show the idea).
# ---------------------------------------------------------------------------------------------

class HeadlineCurves(NamedTuple):
    """Section "Where the headline holds": Algorithm 1 from the spectral start of seed 0 on
    three objectives, keyed ``"population"``, ``"closed_form"`` and ``"finite"``."""

    relative: dict[str, np.ndarray]
    """The optimization gap divided by the gap at k = 0."""
    iterations: dict[str, np.ndarray]
    """The iterations at which the gaps are recorded."""
    steps: dict[str, float]
    """The step eta of each run."""
    curvature: dict[str, float]
    """The curvature that sets the predicted rate, s_d (infinite data) or h_min (finite)."""


def headline_curves(headline: Mapping[str, np.ndarray],
                    runs: Mapping[str, np.ndarray]) -> HeadlineCurves:
    """The three curves of the headline figure: the two infinite-data objectives of
    ``headline`` (:func:`attnbook.experiments.ablations.headline_comparison`, seed 0) and
    Algorithm 1 on the finite-sample objective of the stored run ``runs``, whose gap is
    measured to the minimizer of its basin and whose curvature is the smallest Hessian
    eigenvalue there (eqs. ch05-rate and ch05-finite-rate)."""
    finite_gap = runs["objective"][0, :, 0] - float(runs["basin_value"][0])
    relative = {"population": headline["gap_population"] / headline["gap_population"][0],
                "closed_form": headline["gap_closed_form"] / headline["gap_closed_form"][0],
                "finite": finite_gap / finite_gap[0]}
    iterations = {"population": headline["iteration"], "closed_form": headline["iteration"],
                  "finite": runs["iteration"]}
    steps = {"population": float(headline["step_population"]),
             "closed_form": float(headline["step_closed_form"]),
             "finite": float(runs["step"][0, 0])}
    curvature = {"population": float(headline["s_d_population"]),
                 "closed_form": float(headline["s_d_closed_form"]),
                 "finite": float(runs["basin_hessian"][0][0])}
    return HeadlineCurves(relative, iterations, steps, curvature)


def slow_directions(hessian: np.ndarray, *, below: float = 0.05) -> str:
    """How many eigenvalues of the ascending Hessian spectrum ``hessian`` (seed 0's, at the
    minimizer of the finite-sample objective) lie ``below``, with the smallest and largest."""
    return (f"finite Q_hat, seed 0: {np.sum(hessian < below)} of {hessian.size} Hessian "
            f"eigenvalues below {below:g};\n"
            f"  h_min = {hessian[0]:.2g}, h_max = {hessian[-1]:.3g}")


def describe_starts(comparison: StartComparison) -> str:
    """The medians of :func:`start_comparison`: the loss ratio and the excess-risk ratio."""
    return (f"median loss ratio {comparison.loss_ratio:.3g} "
            f"(log10 {np.log10(comparison.loss_ratio):.2f}); "
            f"excess-risk ratio {comparison.excess_ratio:.3g}")


def describe_zero_noise(starts: list[Mapping[str, float]]) -> str:
    """The spectral start's excess risk and the random over spectral ratio at sigma = 0, per
    seed (``starts``: :func:`attnbook.experiments.ablations.start_excess_risks` results)."""
    return ("sigma = 0: spectral start " + " / ".join(f"{r['spectral']:.2g}" for r in starts)
            + ", ratio " + " / ".join(f"{r['random'] / r['spectral']:.3g}" for r in starts))


def describe_start_grid(grid: Mapping[str, np.ndarray]) -> str:
    """The log10 loss ratio over :data:`INIT_SCALES` for each of :data:`NOISE_AXIS`
    (``grid``: :func:`attnbook.experiments.ablations.start_claims_grid`), with the spectral
    start's largest relative excess loss at that noise level."""
    lines = ["log10 loss ratio at c = " + " / ".join(f"{c:.3g}" for c in INIT_SCALES)]
    for j, sigma in enumerate(NOISE_AXIS):
        lines.append(f"  sigma = {sigma:<4g}: "
                     + " / ".join(f"{v:.2f}" for v in grid["log10_ratio"][:, j])
                     + f"  (spectral (L - L*)/L* <= {grid['start'][j].max():.2g})")
    return "\n".join(lines)


def describe_algorithm1(alg1_gap: np.ndarray, alg1_excess: np.ndarray) -> str:
    """Observation 2 in numbers: Algorithm 1's population loss over L* and its optimization
    gap at the start and at the end (medians over seeds), and each seed's gap ratio."""
    ratio = alg1_gap[:, -1] / alg1_gap[:, 0]
    return (f"Algorithm 1 (medians): population loss / L* "
            f"{1 + np.median(alg1_excess[:, 0]) / L_STAR:.3f} at 0, "
            f"{1 + np.median(alg1_excess[:, -1]) / L_STAR:.3f} at 2000\n"
            f"  gap {np.median(alg1_gap[:, 0]):.2e} at 0, "
            f"{np.median(alg1_gap[:, -1]):.2e} at 2000\n"
            "  gap(2000)/gap(0) per seed " + " / ".join(f"{r:.2g}" for r in ratio))


def end_readings(runs: Mapping[str, np.ndarray], best: Mapping[tuple[str, int], float]
                 ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Every method at its last iteration under the two readings of converged, per seed:
    ``(L - L*)/L*`` (the summaries') and ``gap(2000)/gap(0)`` (the stricter one)."""
    relative_loss = {m: stacked(runs, "excess_risk", m)[:, -1] / L_STAR for m in METHODS}
    gap_ratio = {m: gap(runs, best, m)[:, -1] / gap(runs, best, m)[:, 0] for m in METHODS}
    return relative_loss, gap_ratio


def end_readings_table(relative_loss: Mapping[str, np.ndarray],
                       gap_ratio: Mapping[str, np.ndarray]) -> ResultTable:
    """The two readings of :func:`end_readings` as a table, one row per method."""
    return result_table(["method", "(L - L*)/L* (seeds 0, 1, 2)", "gap(2000)/gap(0)"],
                        [[LABELS[m], " / ".join(f"{v:.3g}" for v in relative_loss[m]),
                          " / ".join(f"{v:.2g}" for v in gap_ratio[m])] for m in METHODS])


def sweep_tables(sweep: Mapping[str, np.ndarray]) -> list[tuple[str, ResultTable]]:
    """Section "Conditioning": for each excess-risk threshold of the stored run
    ``paper1_condition_sweep``, a heading and the table of iterations to reach it, per method
    and condition number, one entry per seed ("> cap" where it was not reached)."""
    kappas, cap = sweep["kappas"], int(sweep["iteration"][-1])
    seeds_shown = ", ".join(str(int(s)) for s in sweep["seeds"])
    first = sweep["first_iteration"]                              # seeds, K, M, T
    tables = []
    for t, threshold in enumerate(sweep["thresholds"]):
        rows = []
        for j, method in enumerate(METHODS):
            cells = [" / ".join(analysis.format_iterations(first[s, i, j, t], cap)
                                .replace("not reached (", "").replace(")", "")
                                for s in range(first.shape[0])) for i in range(len(kappas))]
            rows.append([LABELS[method], *cells])
        heading = (f"iterations to excess risk at most {threshold:g} (seeds {seeds_shown}; "
                   f"cap {cap})")
        tables.append((heading, result_table(["method", *(f"kappa = {k:.0f}" for k in kappas)],
                                             rows)))
    return tables
