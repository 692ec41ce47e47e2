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

__all__ = ["SEED_BOOT", "N_BOOT", "LATE_N", "SampleSizeRisks", "RateRuns", "sample_size_risks",
           "bootstrap_fit", "sample_size_fits", "closed_form_fits", "ols_formula", "alg1_over_ols",
           "rate_runs", "orbit_dimension", "slowest_curvatures", "iterations_to_shrink"]

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
