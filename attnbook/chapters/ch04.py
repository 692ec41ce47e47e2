"""Chapter 4 (Algorithm 1): the objects the chapter builds and its report page re-checks.

``notebooks/ch04_algorithm1.ipynb`` calls these functions and shows what they return;
``notebooks/report_ch04_algorithm1.ipynb`` calls the same functions for its verdicts
(:mod:`attnbook.claims.ch04`). Every random draw comes from a fixed seed, as in
``paper1_defaults``: a seed's problem and samples from ``default_rng(seed)``, its random start
from the stream ``"start"`` of :mod:`attnbook.seeds`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from attnlib import algorithm, geometry, population
from attnlib.data import RegressionProblem
from attnbook.experiments import ablations, part1
from attnbook.seeds import stream

__all__ = ["SEEDS", "KAPPA_ILL", "ITER_COND", "ITER_UNBAL", "SeedData",
           "StartMeasures", "SaddleCurvature", "seed_data", "start_measures",
           "ill_conditioned_data", "conditioning_runs", "unbalanced_minimizer", "unbalanced_run",
           "mildest_saddle", "saddle_curvature"]

#: The seeds of ``paper1_defaults`` (problem and samples from ``default_rng(seed)``).
SEEDS: tuple[int, ...] = part1.SETTINGS.seeds
#: The condition number of Sigma in the section "The preconditioner".
KAPPA_ILL = 1000.0
#: Iterations of the two runs of the section "The preconditioner".
ITER_COND = 300
#: Iterations of the runs from the unbalanced minimizer (section "The regularizer").
ITER_UNBAL = 300


class SeedData(NamedTuple):
    """One seed of ``paper1_defaults``: the problem, the samples and their manifolds."""

    problem: RegressionProblem
    X: np.ndarray
    Y: np.ndarray
    Sigma_hat: np.ndarray
    M_hat: np.ndarray
    S: geometry.MinimizerManifold
    """The true manifold of minima, from (Sigma, M)."""
    S_hat: geometry.MinimizerManifold
    """The empirical manifold, from (Sigma_hat, M_hat)."""


class StartMeasures(NamedTuple):
    """Where a start lies at iteration 0 (section "Spectral initialization")."""

    distance: float
    """``dist_P((A, B), S)``, the P-distance to the true manifold."""
    loss: float
    """The population loss ``L(A, B)``."""
    excess: float
    """The excess risk ``L(A, B) - L*``."""
    distance_hat: float
    """``dist_P((A, B), S_hat)``, the P-distance to the empirical manifold."""
    balanced_scale: float
    """``sqrt(tr D)`` of S: ``||U||_F = ||V||_F`` at every point of S, for scale."""


class SaddleCurvature(NamedTuple):
    """The first and second derivatives of ``Q = L + lam R`` at a point of ``(U, V)``."""

    gradient_norm: float
    """The Frobenius norm of the full gradient in (U, V)."""
    hessian_eigenvalues: np.ndarray
    """The Hessian's eigenvalues in (U, V), ascending."""


def seed_data(seed: int = 0) -> SeedData:
    """Seed ``seed`` of ``paper1_defaults`` with its moments and both manifolds of minima.

    The problem and the n = 500 samples ``X, Y`` are drawn as ``paper1_defaults`` draws them
    (:func:`attnbook.experiments.ablations.defaults_data`); the moments are
    ``Sigma_hat = X^T X / n`` and ``M_hat = Y^T X (X^T X)^{-1}`` (eq. ch04-moments); ``S`` is
    the manifold of minima of (Sigma, M) and ``S_hat`` that of (Sigma_hat, M_hat). The chapter's
    setting cell uses seed 0; the section "Spectral initialization" every seed of :data:`SEEDS`.
    """
    problem, (x, y), _ = ablations.defaults_data(seed)
    sigma_hat, m_hat = population.empirical_moments(x, y)
    return SeedData(problem, x, y, sigma_hat, m_hat,
                    geometry.minimizer_manifold(problem.Sigma, problem.M),
                    geometry.minimizer_manifold(sigma_hat, m_hat))


def start_measures(seeds: tuple[int, ...] = SEEDS) -> dict[tuple[int, str], StartMeasures]:
    """The spectral and the random start of each seed, measured at iteration 0.

    For each seed, the spectral start ``(A_0, B_0)`` of (Sigma_hat, M_hat) (eq. ch04-spectral)
    and the random start with i.i.d. ``N(0, 0.3^2 / d)`` entries from
    ``stream("start", seed)``: their P-distances to S and S_hat, their population loss
    ``L = 1/2 ||(A Sigma B^T - M) Sigma^{1/2}||_F^2 + p sigma^2 / 2`` and excess risk
    ``L - L*``. Keys are ``(seed, "spectral")`` and ``(seed, "random")``, seeds in order.
    Section "Spectral initialization"; the report judges "spectral initialization starts close
    to the optimum" from the distances.
    """
    measures = {}
    for seed in seeds:
        data = seed_data(seed)
        problem = data.problem
        starts = {"spectral": algorithm.spectral_init(data.Sigma_hat, data.M_hat),
                  "random": algorithm.random_init(problem.d, problem.p,
                                                  rng=stream("start", seed))}
        for name, (a, b) in starts.items():
            loss = population.population_loss(a, b, problem.Sigma, problem.M,
                                              noise_std=problem.noise_std)
            measures[seed, name] = StartMeasures(data.S.distance(a, b), loss,
                                                 loss - problem.L_star, data.S_hat.distance(a, b),
                                                 data.S.balanced_scale)
    return measures


def ill_conditioned_data(kappa: float = KAPPA_ILL
                         ) -> tuple[RegressionProblem, np.ndarray, np.ndarray]:
    """Seed 0's default problem with condition number ``kappa``, ``X* = M Sigma^{1/2}`` fixed.

    ``Sigma_kappa = W diag(geomspace(1, 1/kappa, d)) W^T`` with the eigenvectors W of the
    default Sigma and ``M_kappa = X* Sigma_kappa^{-1/2}``; the samples use the same
    standard-normal draws (:func:`attnbook.experiments.ablations.defaults_data`). Returns
    ``(problem, X, Y)``. Section "The preconditioner".
    """
    problem, (x, y), _ = ablations.defaults_data(0, kappa=kappa)
    return problem, x, y


def conditioning_runs(problem: RegressionProblem, X: np.ndarray, Y: np.ndarray, *,
                      iterations: int = ITER_COND) -> dict[bool, algorithm.TrainResult]:
    """Algorithm 1 from a random start with and without the preconditioner, keyed by it.

    Both runs train the closed-form objective (the population loss with the moments of
    ``X, Y`` plugged in) with the regularizer (lam = 1) and the step rule (eq. ch04-eta), from
    the same random start of ``stream("start", 0)``; with the preconditioner the step is
    ``(A, B) <- (A - eta G_A Sigma_hat^{-1}, B - eta Sigma_hat^{-1} G_B Sigma_hat^{-1})``
    (eq. ch04-step), without it plain gradient descent. ``problem`` gives the recorded excess
    risk. Section "The preconditioner" (with :func:`ill_conditioned_data`); the report judges
    "the preconditioner speeds up training" from the excess risks at iteration 100.
    """
    runs = {}
    for precondition in (True, False):
        runs[precondition] = algorithm.train(
            algorithm.closed_form_loss(*population.empirical_moments(X, Y)),
            algorithm.Method(init="random", precondition=precondition, lam=1.0),
            iterations=iterations, problem=problem, rng=stream("start", 0))
    return runs


def unbalanced_minimizer(S_hat: geometry.MinimizerManifold, *, spread: float = 3.0
                         ) -> tuple[np.ndarray, np.ndarray]:
    """An unbalanced exact minimizer of the closed-form loss: ``(U* K, V* K^{-1})`` as (A, B).

    ``K = diag(geomspace(spread, 1/spread, d))``; the loss is invariant under
    ``(U, V) -> (U G, V G^{-T})``, so this point fits (Sigma_hat, M_hat) exactly as well as S_hat
    does, with imbalance ``||U^T U - V^T V||_F > 0``. Section "The regularizer".
    """
    d = S_hat.Sigma.shape[0]
    K = np.diag(np.geomspace(spread, 1.0 / spread, d))
    return S_hat.unfactor(S_hat.U_star @ K, S_hat.V_star @ np.linalg.inv(K))


def unbalanced_run(Sigma_hat: np.ndarray, M_hat: np.ndarray,
                   start: tuple[np.ndarray, np.ndarray], *, lam: float,
                   iterations: int = ITER_UNBAL) -> algorithm.TrainResult:
    """Algorithm 1's step (preconditioned, step rule) on the closed-form objective
    ``1/2 ||U V^T - X*_hat||_F^2 + lam/8 ||U^T U - V^T V||_F^2`` from ``start``.

    Section "The regularizer" runs it from :func:`unbalanced_minimizer` with lam = 0 (the
    gradient vanishes there: it stays) and lam = 1 (it returns toward S_hat); the report judges
    that the distance to S_hat halves within :data:`ITER_UNBAL` steps.
    """
    return algorithm.train(algorithm.closed_form_loss(Sigma_hat, M_hat),
                           algorithm.Method(lam=lam), init=start, iterations=iterations)


def mildest_saddle(S_hat: geometry.MinimizerManifold) -> tuple[np.ndarray, np.ndarray]:
    """``(U, V) = (Phi Gamma_J^{1/2}, Psi Gamma_J^{1/2})`` with J every index but the last.

    The balanced partial-SVD point that drops the smallest singular value of
    ``M_hat Sigma_hat^{1/2}``: a stationary point of Q_hat for every lam, whose excess
    ``s_min^2 / 2`` is the smallest of the spurious ones. Section "Saddles".
    """
    keep = np.ones(S_hat.singular_values.size, dtype=bool)
    keep[-1] = False
    return S_hat.factor(*S_hat.balanced_svd_point(keep))


def saddle_curvature(U: np.ndarray, V: np.ndarray, Xstar: np.ndarray, *,
                     lam: float) -> SaddleCurvature:
    """Gradient norm and Hessian spectrum of
    ``Q(U, V) = 1/2 ||U V^T - X*||_F^2 + lam/8 ||U^T U - V^T V||_F^2`` at ``(U, V)``.

    Section "Saddles" evaluates it at :func:`mildest_saddle` for lam = 0 and 1 (gradient zero to
    rounding, one negative eigenvalue ``-s_min``); the report judges "the regularizer helps
    avoid / removes the spurious stationary points" from it at lam = 1.
    """
    _, grad_u, grad_v = population.factor_loss_and_grad(U, V, Xstar)
    _, reg_u, reg_v = population.factor_regularizer_and_grad(U, V, lam=lam)
    gradient_norm = np.sqrt(np.sum((grad_u + reg_u) ** 2) + np.sum((grad_v + reg_v) ** 2))
    eigenvalues = np.linalg.eigvalsh(geometry.factor_hessian(U, V, Xstar, lam=lam))
    return SaddleCurvature(gradient_norm, eigenvalues)
