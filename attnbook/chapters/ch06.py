"""Chapter 6 (scaling laws): what the chapter computes and its Reproduction report re-checks.

Every function reads the chapter's stored runs (``scaling``, ``paper1_curvature_vs_n``, loaded
with :func:`attnbook.experiments.load` or :func:`attnbook.experiments.replay`) or plain arrays;
nothing is computed at import. The statistical term: the excess risks against the sample size n
(:func:`sample_size_risks`), their power-law fits (:func:`sample_size_fits`,
:func:`closed_form_fits`) and Algorithm 1 against the exact OLS risk (:func:`ols_formula`,
:func:`alg1_over_ols`). The optimization term: the rate runs on the closed form
(:func:`rate_runs`) and the slow directions at finite n (:func:`orbit_dimension`,
:func:`slowest_curvatures`, :func:`iterations_to_shrink`, which chapter 6b uses too).
"""

from __future__ import annotations

from typing import Mapping, NamedTuple

import numpy as np

from attnlib import fitting, population
from attnbook import experiments
from attnbook.tables import ResultTable, result_table

__all__ = ["SEED_BOOT", "N_BOOT", "LATE_N", "SampleSizeRisks", "RateRuns", "sample_size_risks",
           "bootstrap_fit", "sample_size_fits", "closed_form_fits", "ols_formula", "alg1_over_ols",
           "rate_runs", "orbit_dimension", "slowest_curvatures", "iterations_to_shrink",
           "describe_fit", "describe_sample_size_fits", "describe_alg1_over_ols",
           "spectral_over_ols", "spectral_over_ols_table", "describe_closed_form_fits",
           "describe_rate_runs", "describe_dimension_rates", "describe_finite_runs",
           "tail_rates_table", "settling_iterations", "describe_settling"]

#: Seed of the generator of the chapter's seed bootstraps (one generator for all its fits).
SEED_BOOT = 6
#: Bootstrap resamples per power-law fit.
N_BOOT = 2000
#: The closed-form fits are repeated for n >= LATE_N, where n^-2 log^6 n is steeper than -1.19.
LATE_N = 1600


class SampleSizeRisks(NamedTuple):
    """The finite-n excess risks of the ``scaling`` run, each (noise level, n, seed)."""

    final: np.ndarray
    """Algorithm 1's excess risk L(theta_m) - L* at its last iteration m."""
    start: np.ndarray
    """The excess risk at m = 0, the spectral initialization (a closed-form minimizer)."""
    deployed: np.ndarray
    """The deployed test risk at the last iteration (the training set as the context)."""
    ols_fit: np.ndarray
    """The exact excess risk of the OLS fit on the same data."""


class RateRuns(NamedTuple):
    """The ``rate_*`` runs of the ``scaling`` run (closed form, true moments), one entry per run."""

    kappa_x: np.ndarray
    """The condition number kappa(X*) = s_1 / s_d."""
    kappa_sigma: np.ndarray
    """The condition number of Sigma."""
    preconditioned: np.ndarray
    """True for Algorithm 1's preconditioned step, False for plain gradient descent."""
    mu_measured: np.ndarray
    """The geometric rate fitted to the excess risk."""
    mu_predicted: np.ndarray
    """The local rate ``max_h |1 - eta h|^2`` over the Hessian's nonzero eigenvalues h at S."""


def sample_size_risks(stored: Mapping[str, np.ndarray]) -> SampleSizeRisks:
    """The excess risks against n of the stored ``scaling`` run (chapter 6, "The statistical
    term: excess risk against n")."""
    curves = stored["finite_excess_risk"]                  # (noise, n, seed, iteration grid)
    return SampleSizeRisks(final=curves[..., -1], start=curves[..., 0],
                           deployed=stored["finite_test_risk_final"],
                           ols_fit=stored["finite_ols_excess_risk"])


def bootstrap_fit(x: np.ndarray, values: np.ndarray,
                  rng: np.random.Generator) -> fitting.PowerLawFit:
    """The fit ``values ~ C x^b`` by least squares of log values on log x over every seed (the
    columns of ``values``), with a percentile bootstrap over seeds (:data:`N_BOOT` resamples
    drawn from ``rng``) for the 95% interval of b."""
    return fitting.fit_power_law(x, values, rng=rng, n_boot=N_BOOT)


def sample_size_fits(stored: Mapping[str, np.ndarray], rng: np.random.Generator
                     ) -> dict[tuple[float, str], fitting.PowerLawFit]:
    """Power-law fits in n of the excess risks of :func:`sample_size_risks` (chapter 6, "The
    statistical term").

    Keyed by (noise level sigma, what): ``"alg1"`` (Algorithm 1 at its last iteration),
    ``"init"`` (the spectral start), ``"deployed"`` (the deployed test risk) and, for sigma > 0
    only, ``"ols"`` (the OLS fit; at sigma = 0 it is exact, its excess risk round-off). Fitted in
    that order, noise level by noise level, each by :func:`bootstrap_fit` with ``rng`` (the
    chapter's generator from :data:`SEED_BOOT`, whose later draws go to
    :func:`closed_form_fits`).
    """
    risks, n_values = sample_size_risks(stored), stored["n_values"]
    fits = {}
    for i, sigma in enumerate(stored["noise_levels"]):
        measured = {"alg1": risks.final, "init": risks.start, "deployed": risks.deployed}
        if sigma > 0:
            measured["ols"] = risks.ols_fit
        for what, values in measured.items():
            fits[sigma, what] = bootstrap_fit(n_values, values[i], rng)
    return fits


def closed_form_fits(stored: Mapping[str, np.ndarray], rng: np.random.Generator
                     ) -> dict[tuple[float, str], fitting.PowerLawFit]:
    """Power-law fits in n of the closed-form minimizer's excess risk (the spectral start on
    S_hat) up to n = 51200 (chapter 6, the closed-form figure).

    Keyed by (noise level sigma, what): ``"closed"`` over every n and ``"late"`` over
    n >= :data:`LATE_N` only, fitted in that order, noise level by noise level, each by
    :func:`bootstrap_fit` with ``rng``.
    """
    closed_n, closed = stored["closed_n_values"], stored["closed_spectral_excess_risk"]
    late = closed_n >= LATE_N
    fits = {}
    for i, sigma in enumerate(stored["noise_levels"]):
        fits[sigma, "closed"] = bootstrap_fit(closed_n, closed[i], rng)
        fits[sigma, "late"] = bootstrap_fit(closed_n[late], closed[i][late], rng)
    return fits


def ols_formula(n_values: np.ndarray, *, d: int, p: int, noise_std: float) -> np.ndarray:
    """The expected excess risk of least squares on n Gaussian samples, at each n (each taken
    as an integer): p sigma^2 d / (2 (n - d - 1)), from the mean of an inverse Wishart matrix
    (chapter 6, eq-ch06-1 and exercise 2; :func:`attnlib.population.ols_excess_risk`)."""
    return np.array([population.ols_excess_risk(int(n), d, p, noise_std) for n in n_values])


def alg1_over_ols(stored: Mapping[str, np.ndarray]) -> dict[float, np.ndarray]:
    """Algorithm 1's excess risk at its last iteration, median over seeds, divided by
    :func:`ols_formula`, at each n of the ``scaling`` run; keyed by the noise levels sigma > 0
    (without noise OLS is exact). Chapter 6 prints it; its report reads the constant of the
    minimax claim from it."""
    config = experiments.config(stored)
    final = sample_size_risks(stored).final
    return {sigma: np.median(final[i], axis=1)
            / ols_formula(stored["n_values"], d=config["d"], p=config["p"], noise_std=sigma)
            for i, sigma in enumerate(stored["noise_levels"]) if sigma > 0}


def rate_runs(stored: Mapping[str, np.ndarray]) -> RateRuns:
    """The runs of the ``scaling`` run that isolate the optimization term (chapter 6,
    "Measured on the closed-form objective"): the kappa(X*) sweep at kappa(Sigma) = 10, then
    the kappa(Sigma) sweep at fixed kappa(X*) with and without the preconditioner."""
    return RateRuns(kappa_x=stored["rate_kappa_x"], kappa_sigma=stored["rate_kappa_sigma"],
                    preconditioned=stored["rate_precondition"].astype(bool),
                    mu_measured=stored["rate_mu_measured"],
                    mu_predicted=stored["rate_mu_predicted"])


def orbit_dimension(d: int) -> int:
    """d(d-1)/2, the dimension of the orbit of rotations (U, V) -> (UO, VO), O orthogonal,
    inside the set S of minimizers: the number of zero Hessian eigenvalues at S on the closed
    form (chapter 3)."""
    return d * (d - 1) // 2


def slowest_curvatures(hessian: np.ndarray, n_slow: int) -> tuple[np.ndarray, np.ndarray]:
    """The smallest Hessian eigenvalue h_min and the geometric mean
    exp(mean of log h_k, k = 1..n_slow) of the ``n_slow`` smallest, over the last axis of
    ``hessian`` (eigenvalues in ascending order). With n_slow = :func:`orbit_dimension` these
    are the curvatures of the rotations along S, exactly 0 on the closed form and small at
    finite n (chapter 6, "The slow directions at finite n"; chapter 6b)."""
    return hessian[..., 0], np.exp(np.mean(np.log(hessian[..., :n_slow]), axis=-1))


def iterations_to_shrink(step: np.ndarray, h_min: np.ndarray, factor: float) -> np.ndarray:
    """The iterations gradient descent with step eta needs to shrink the gap by ``factor`` in
    its slowest mode, of curvature h_min: ln(factor) / -ln((1 - eta h_min)^2) (the gap is
    quadratic in the distance, which shrinks by 1 - eta h_min per step)."""
    return np.log(factor) / -np.log((1 - step * h_min) ** 2)


# ---------------------------------------------------------------------------------------------
# What the chapter's cells print: the computations above, formatted (the cells show the idea).
# ---------------------------------------------------------------------------------------------

def describe_fit(label: str, fit) -> str:
    """One power-law fit: its slope, classical standard error and 95% interval."""
    return (f"  {label:32s} slope {fit.exponent:+.2f} +- {fit.stderr:.2f}, "
            f"95% CI [{fit.ci[0]:+.2f}, {fit.ci[1]:+.2f}]")


def describe_sample_size_fits(stored: Mapping[str, np.ndarray],
                              fits: Mapping[tuple[float, str], object]) -> str:
    """The slopes of :func:`sample_size_fits` for each noise level (without noise, the largest
    excess risk of the OLS fit in place of its slope)."""
    iterations = experiments.config(stored)["iterations"]
    ols_fit = sample_size_risks(stored).ols_fit
    lines = []
    for i, sigma in enumerate(stored["noise_levels"]):
        lines += [f"sigma = {sigma:g} (CI: bootstrap over seeds):",
                  describe_fit(f"Algorithm 1, finite n, m = {iterations}", fits[sigma, "alg1"]),
                  describe_fit("spectral init (m = 0)", fits[sigma, "init"]),
                  describe_fit(f"deployed test risk, m = {iterations}",
                               fits[sigma, "deployed"])]
        lines.append(describe_fit("OLS fit on the same data", fits[sigma, "ols"]) if sigma > 0
                     else f"  OLS fit: largest excess risk {ols_fit[i].max():.1e} "
                          "(M_hat = M up to rounding)")
    return "\n".join(lines)


def describe_alg1_over_ols(stored: Mapping[str, np.ndarray]) -> str:
    """:func:`alg1_over_ols` at each n, with the local slope of the OLS formula over the range."""
    config, n_values = experiments.config(stored), stored["n_values"]
    lines = []
    for sigma, ratio in alg1_over_ols(stored).items():
        formula = ols_formula(n_values, d=config["d"], p=config["p"], noise_std=sigma)
        lines += [f"sigma = {sigma:g}: Algorithm 1 / OLS formula (median):\n  "
                  + ", ".join(f"n={n}: {r:.1f}" for n, r in zip(n_values, ratio)),
                  f"  {'OLS formula p s^2 d / (2(n-d-1))':32s} local slope over this range "
                  f"{np.polyfit(np.log(n_values), np.log(formula), 1)[0]:+.2f}"]
    return "\n".join(lines)


def spectral_over_ols(noise_std: float, seeds: int = 8) -> list[float]:
    """The spectral start's excess risk over the OLS fit's on the same data, at n = 500 on
    chapter 5's default problem with noise ``noise_std``, for seeds 0 to ``seeds`` - 1 (closed
    forms: :func:`attnbook.experiments.ablations.start_excess_risks`)."""
    from attnbook.experiments import ablations

    starts = [ablations.start_excess_risks(s, noise_std=noise_std) for s in range(seeds)]
    return [r["spectral"] / r["ols_fit"] for r in starts]


def spectral_over_ols_table(ratios: Mapping[float, list[float]]) -> ResultTable:
    """The median, smallest and largest of :func:`spectral_over_ols` for each noise level."""
    return result_table(["sigma", "median", "smallest", "largest"],
                        [[sigma, np.median(r), min(r), max(r)] for sigma, r in ratios.items()])


def describe_closed_form_fits(stored: Mapping[str, np.ndarray],
                              fits: Mapping[tuple[float, str], object]) -> str:
    """The slopes of :func:`closed_form_fits` for each noise level, over all n and for
    n >= :data:`LATE_N`, with n times the median excess risk at the largest n."""
    closed_n, closed = stored["closed_n_values"], stored["closed_spectral_excess_risk"]
    lines = []
    for i, sigma in enumerate(stored["noise_levels"]):
        lines += [f"sigma = {sigma:g}, closed-form minimizer, n = {closed_n[0]} ... "
                  f"{closed_n[-1]}:",
                  describe_fit("spectral init on S_hat", fits[sigma, "closed"]),
                  describe_fit(f"same, n >= {LATE_N} only", fits[sigma, "late"]),
                  f"  n x median excess risk at n = {closed_n[-1]}: "
                  f"{np.median(closed[i][-1]) * closed_n[-1]:.3g}"]
    return "\n".join(lines)


def describe_rate_runs(stored: Mapping[str, np.ndarray]) -> str:
    """The step and, per run of :func:`rate_runs`, the condition numbers, the iterations run,
    the measured rate (with its standard error) against the predicted one, and 1 - mu."""
    kx, ks, pre, measured, predicted = rate_runs(stored)
    lines = [f"step eta = {stored['rate_step'][0]:.4f} in every run (the rule; same start in "
             "(U, V))",
             "kappa_X kappa_Sigma precond  iterations  mu measured      mu predicted  1 - mu"]
    for r in range(kx.size):
        lines.append(f"{kx[r]:7g} {ks[r]:11g} {str(pre[r]):7s} "
                     f"{stored['rate_iterations'][r]:10.0f}  "
                     f"{measured[r]:.6f}+-{stored['rate_mu_stderr'][r]:.0e}  {predicted[r]:.6f}"
                     f"      {1 - measured[r]:.2e}")
    return "\n".join(lines)


def describe_dimension_rates(dimension: Mapping[str, np.ndarray]) -> str:
    """The measured against the predicted rate for each dimension d of
    :func:`attnbook.experiments.scaling.dimension_rates`."""
    return "\n".join(f"d = {d:2d}, p = {2 * d:2d}: measured mu = {m:.6f}, predicted {p:.6f}"
                     for d, m, p in zip(dimension["d"], dimension["mu_measured"],
                                        dimension["mu_predicted"]))


def describe_finite_runs(stored: Mapping[str, np.ndarray]) -> str:
    """Algorithm 1 on the finite-n objective, per noise level and n (medians over seeds): its
    excess risk at the last iteration over that at the start, and its last gradient norm."""
    risks, iterations = sample_size_risks(stored), experiments.config(stored)["iterations"]
    n_values = stored["n_values"]
    lines = []
    for i, sigma in enumerate(stored["noise_levels"]):
        rise = np.median(risks.final[i] / risks.start[i], axis=1)
        gn = np.median(stored["finite_grad_norm"][i, :, :, -1], axis=1)
        lines.append(f"sigma = {sigma:g}, n = {', '.join(map(str, n_values))} (medians over "
                     f"seeds):\n  excess risk at m = {iterations} / at m = 0: "
                     + ", ".join(f"{r:.2f}" for r in rise) + "\n  final gradient norm: "
                     + ", ".join(f"{g:.1e}" for g in gn))
    return "\n".join(lines)


def tail_rates_table(stored: Mapping[str, np.ndarray], j: int) -> ResultTable:
    """Per seed at the ``j``-th n (the first noise level): the gradient norm at the start and at
    the end, and the geometric rate fitted over the second half of the run (squared: the
    excess risk's)."""
    its, iterations = stored["finite_iteration"], experiments.config(stored)["iterations"]
    rows = []
    for s in range(stored["finite_grad_norm"].shape[2]):
        g = stored["finite_grad_norm"][0, j, s]
        tail = fitting.fit_geometric_rate(its, g, start=iterations // 2)
        rows.append([s, f"{g[0]:.2e}", f"{g[-1]:.2e}", f"{tail.rate:.5f}",
                     f"{tail.rate ** 2:.5f}"])
    return result_table(["seed", "gradient norm at 0", f"at {iterations}", "tail rate",
                         "squared (excess risk)"], rows)


def settling_iterations(heat: np.ndarray, heat_m: np.ndarray) -> list[int]:
    """For each row of the heatmap ``heat`` (n, recorded iteration ``heat_m``): the first
    recorded iteration within 10% of the row's last value, its floor stat(n)."""
    return [int(heat_m[np.argmax(row <= 1.1 * row[-1])]) for row in heat]


def describe_settling(closed_n: np.ndarray, heat: np.ndarray, settle: list[int]) -> str:
    """stat(n) and the iteration from which each row of the heatmap is within 10% of it."""
    return "\n".join(f"n = {n:6d}: stat(n) = {row[-1]:.2e}; within 10% of it from m = {m}"
                     for n, row, m in zip(closed_n, heat, settle))
