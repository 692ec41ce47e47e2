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

from attnlib import algorithm, analysis, attention, orbit

__all__ = ["LEVELS", "N_SLOW", "EARLY_STOP_TOLERANCE", "lowest_known_minimum", "evaluations_to",
           "evaluation_counts", "early_stops", "rotation_differences",
           "describe_rotation_differences", "tilt_spreads", "describe_method_counts",
           "describe_early_stops", "describe_end_points"]

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


# ---------------------------------------------------------------------------------------------
# The chapter's Monte Carlo runs and what its cells print (the cells show the idea).
# ---------------------------------------------------------------------------------------------

def rotation_differences(problem, a: np.ndarray, b: np.ndarray, rotation: np.ndarray,
                         mask: str, rng: np.random.Generator, *, stacks: int = 200,
                         prompts: int = 100, n: int = 8) -> np.ndarray:
    """Step 2 of "The orbit is flat at infinite n and tilted at finite n", by Monte Carlo:
    ``L_hat(A R, B R) - L_hat(A, B)`` for the point ``(a, b)`` and the orbit map ``rotation``
    (R = Sigma^1/2 O Sigma^-1/2), each averaged over ``prompts`` data sets of ``n`` samples of
    ``problem`` drawn from ``rng`` with ``mask``, for ``stacks`` independent stacks."""
    differences = []
    for _ in range(stacks):
        x_mc, y_mc = problem.sample(n * prompts, rng=rng)
        x_mc = x_mc.reshape(prompts, n, x_mc.shape[-1])
        y_mc = y_mc.reshape(prompts, n, y_mc.shape[-1])
        rotated, original = (attention.prompts_loss_and_grad(a_, b_, x_mc, y_mc, mask=mask)[0]
                             for a_, b_ in ((a @ rotation, b @ rotation), (a, b)))
        differences.append(rotated - original)
    return np.asarray(differences)


def describe_rotation_differences(differences: Mapping[str, np.ndarray]) -> str:
    """The mean of each mask's :func:`rotation_differences`, with its standard error."""
    lines = ["mean of L_hat(AR, BR) - L_hat(A, B):"]
    for mask, values in differences.items():
        stderr = values.std(ddof=1) / np.sqrt(values.size)
        lines.append(f"  mask {mask!r}: {values.mean():+.2e} "
                     f"+- {stderr:.1e} ({values.mean() / stderr:+.1f} standard errors)")
    return "\n".join(lines)


def tilt_spreads(problem, scale: float, keys: str, sizes: np.ndarray, draws: int, *,
                 noise_std: float = 0.1, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """"The shared keys, switched off": at the spectral start of the target map ``scale`` times
    ``problem.M`` (a point of S), the spread (interquartile range / 1.349) over ``draws`` data
    sets of the loss's slope along the orbit (:func:`attnlib.orbit.orbit_tilt` with ``keys``),
    per n of ``sizes``: its noise-free part and the part the label noise adds."""
    target = scale * problem.M
    a_s, b_s = algorithm.spectral_init(problem.Sigma, target)
    tilts = [orbit.orbit_tilt(a_s, b_s, problem.Sigma, target, n, draws=draws,
                              noise_std=noise_std, rng=np.random.default_rng(seed), keys=keys)
             for n in sizes]

    def spread(values: np.ndarray) -> float:
        return np.subtract(*np.percentile(values, [75, 25])) / 1.349

    return (np.array([spread(t.noise_free) for t in tilts]),
            np.array([spread(t.noise) for t in tilts]))


def describe_method_counts(stored: Mapping[str, np.ndarray], lowest: np.ndarray,
                           counts: Mapping[float, np.ndarray], methods: list[str]) -> str:
    """"Five methods on equal footing": on how many data sets a method found a minimum below
    the reference route's, and per method the runs reaching each relative gap of
    :data:`LEVELS` (``counts``: :func:`evaluation_counts`), with the fewest to most
    evaluations to the last."""
    basin = stored["basin_value"]
    below_basin = lowest < basin - 1e-12 * np.abs(basin)
    lines = [f"data sets where a method found a minimum below the reference route's: "
             f"{int(below_basin.sum())} of {below_basin.size}",
             f"runs (of {below_basin.size}) reaching a relative gap of 1e-3 / 1e-6 / 1e-9,\n"
             "and the fewest to most evaluations to 1e-9:"]
    for j, method in enumerate(methods):
        reached = [np.isfinite(counts[t][..., j]) for t in LEVELS]
        to_last = counts[LEVELS[-1]][..., j][reached[-1]]
        spread = f"{int(to_last.min())} to {int(to_last.max())}" if to_last.size else "-"
        lines.append(f"  {method:15s} {' / '.join(str(int(r.sum())) for r in reached):12s} "
                     f"{spread}")
    return "\n".join(lines)


def describe_early_stops(alg1_risk: np.ndarray, basin_risk: np.ndarray,
                         stops: list[int | None]) -> str:
    """Where :func:`early_stops` stopped, how many runs never came within the tolerance (and
    how many of those stayed below the minimizer's excess risk), and the latest iteration at
    which Algorithm 1's excess risk was lowest."""
    never = [k for k, stop in enumerate(stops) if stop is None]
    below = np.all(alg1_risk < basin_risk[..., None], axis=-1).ravel()
    return (f"early stop at iteration 0 (the spectral start is already within 10%):\n"
            f"  {sum(stop == 0 for stop in stops)} of {len(stops)} runs; later: "
            f"{sorted(stop for stop in stops if stop)}; never within 1000 iterations: "
            f"{len(never)},\n  {int(below[never].sum())} of them below the minimizer's "
            "throughout\n"
            f"Algorithm 1's lowest excess risk along its 1000 iterations came at\n"
            f"  iteration {int(np.max(np.nanargmin(alg1_risk, axis=-1)))} at the latest")


def describe_end_points(stored: Mapping[str, np.ndarray],
                        cases: tuple[tuple[int, int], ...] = ((125, 0), (500, 0))) -> str:
    """The excess risks of "When is Algorithm 1 done?": the reference minimizer's over the
    least-squares fit's, the spread of the five methods' end points on one data set, and
    Algorithm 1 at its start and end against the minimizer for the ``(n, seed index)``
    ``cases``."""
    alg1_risk, basin_risk = stored["alg1_excess_risk"], stored["basin_excess_risk"]
    ols_risk, ends = stored["ols_excess_risk"], stored["final_excess_risk"]
    spread = np.max(ends, -1) / np.min(ends, -1)
    lines = [f"reference minimizer's excess risk / OLS: {np.min(basin_risk / ols_risk):.1f} to "
             f"{np.max(basin_risk / ols_risk):.1f}",
             f"excess risks of the five end points on one data set, largest / smallest:\n  "
             f"{np.min(spread):.2f} to {np.max(spread):.2f}"]
    for n, s in cases:
        i = int(np.flatnonzero(stored["n_values"] == n)[0])
        lines.append(f"n = {n}, seed {stored['seeds'][s]}: Algorithm 1 {alg1_risk[i, s, 0]:.3g} "
                     f"at the start, {alg1_risk[i, s, -1]:.3g} at 1000;\n"
                     f"  the minimizer {basin_risk[i, s]:.3g}")
    return "\n".join(lines)
