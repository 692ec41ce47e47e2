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

from attnlib import algorithm, analysis, geometry, population
from attnlib.data import RegressionProblem
from attnbook.experiments import ablations, part1
from attnbook.seeds import stream
from attnbook.tables import ResultTable, result_table

__all__ = ["SEEDS", "KAPPA_ILL", "ITER_COND", "ITER_UNBAL", "SeedData",
           "StartMeasures", "SaddleCurvature", "seed_data", "start_measures",
           "ill_conditioned_data", "conditioning_runs", "unbalanced_minimizer", "unbalanced_run",
           "mildest_saddle", "saddle_curvature", "StepRule", "step_rule", "step_size_table",
           "start_table", "start_ratio_lines", "conditioning_table", "hessian_table",
           "unbalanced_line", "saddle_table", "renormalization_lines"]

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


# ---------------------------------------------------------------------------------------------
# What the chapter prints: its open cells compute with the functions above and attnlib, and hand
# the results to these, which only arrange them.
# ---------------------------------------------------------------------------------------------


class StepRule(NamedTuple):
    """The step-size rule (eq. ch04-eta) at one start, against the curvature it bounds."""

    size: float
    """``N_0 = ||U_0||_F^2 + ||V_0||_F^2``."""
    bound: float
    """The curvature bound ``beta(N_0) = s_max + 3/2 (1 + lam) N_0`` (eq. ch04-hessian-bound)."""
    h_max: float
    """The largest Hessian eigenvalue of the closed-form objective at the start."""
    eta: float
    """The step the rule gives (preconditioned)."""


def step_rule(start: tuple[np.ndarray, np.ndarray], Sigma_hat: np.ndarray, M_hat: np.ndarray,
              S_hat: geometry.MinimizerManifold, *, lam: float = 1.0) -> StepRule:
    """The step-size rule at ``start = (A, B)``: ``N_0``, the bound ``beta(N_0)``, the true
    largest curvature ``h_max`` of ``1/2 ||U V^T - X*_hat||^2 + lam/8 ||U^T U - V^T V||^2`` in
    (U, V) and the step ``eta`` of :func:`attnlib.algorithm.default_step`. Section "Where the
    step size comes from"."""
    u, v = S_hat.factor(*start)
    size = np.sum(u ** 2) + np.sum(v ** 2)
    bound = S_hat.singular_values[0] + 1.5 * (1 + lam) * size
    h_max = np.linalg.eigvalsh(geometry.factor_hessian(u, v, S_hat.Xstar, lam=lam))[-1]
    eta = algorithm.default_step(*start, Sigma_hat, M_hat, lam=lam, precondition=True)
    return StepRule(size, bound, h_max, eta)


def step_size_table(rules: dict[str, StepRule]) -> ResultTable:
    """One row per named start: ``N_0``, ``beta(N_0)``, ``h_max``, ``eta`` and the products
    ``eta beta(N_0)`` and ``eta h_max``."""
    return result_table(["start", "N_0", "beta(N_0)", "h_max", "eta", "eta beta", "eta h_max"],
                        [(name, r.size, r.bound, r.h_max, r.eta, r.eta * r.bound,
                          r.eta * r.h_max) for name, r in rules.items()])


def start_table(measures: dict[tuple[int, str], StartMeasures]) -> ResultTable:
    """The starts of :func:`start_measures`, one row per (seed, start): the P-distance to S,
    the population loss, the excess risk and the scale ``sqrt(tr D)`` of S."""
    return result_table(["seed", "start", "dist_P(S)", "loss L", "excess L - L*",
                         "sqrt(tr D)"],
                        [(seed, name, m.distance, m.loss, m.excess, m.balanced_scale)
                         for (seed, name), m in measures.items()])


def start_ratio_lines(measures: dict[tuple[int, str], StartMeasures]) -> str:
    """Per seed: the random start's population loss and excess risk over the spectral start's."""
    seeds = dict.fromkeys(seed for seed, _ in measures)
    return "\n".join(
        f"seed {seed}: random / spectral = "
        f"{measures[seed, 'random'].loss / measures[seed, 'spectral'].loss:.3g} in loss, "
        f"{measures[seed, 'random'].excess / measures[seed, 'spectral'].excess:.3g} "
        f"in excess risk" for seed in seeds)


def conditioning_table(runs: dict[bool, algorithm.TrainResult], *,
                       iterations: int = ITER_COND) -> ResultTable:
    """The runs of :func:`conditioning_runs`: step, excess risk at iterations 0, 10, 100 and
    the last, and the last P-distance to S_hat."""
    rows = [(str(precondition), run.step,
             *(run.history["excess_risk"][k] for k in (0, 10, 100, -1)),
             run.history["dist_P_hat"][-1]) for precondition, run in runs.items()]
    return result_table(["precondition", "step", "risk at 0", "10", "100", f"{iterations}",
                         f"dist_P(S_hat) at {iterations}"], rows)


def hessian_table(S_hat: geometry.MinimizerManifold,
                  unbalanced: tuple[np.ndarray, np.ndarray]) -> ResultTable:
    """The Hessian of the closed-form loss (lam = 0) in (U, V) on S_hat and at the point
    ``unbalanced = (A, B)``: largest and smallest nonzero eigenvalue, their ratio and the
    number of zero eigenvalues (relative tolerance 1e-9). Section "The regularizer"."""
    rows = []
    for name, (u, v) in {"on S_hat": (S_hat.U_star, S_hat.V_star),
                         "unbalanced": S_hat.factor(*unbalanced)}.items():
        eig = np.linalg.eigvalsh(geometry.factor_hessian(u, v, S_hat.Xstar, lam=0.0))
        nonzero = eig[eig > 1e-9 * eig[-1]]
        rows.append((name, eig[-1], nonzero[0], eig[-1] / nonzero[0], eig.size - nonzero.size))
    return result_table(["Hessian (lam = 0)", "largest", "smallest nonzero", "ratio",
                         "zero eigs"], rows)


def unbalanced_line(run: algorithm.TrainResult, lam: float, Sigma_hat: np.ndarray) -> str:
    """A run of :func:`unbalanced_run`: its step, its final imbalance and its P-distance to
    S_hat at iterations 0, 100 and the last."""
    d_hat, iterations = run.history["dist_P_hat"], run.history["iteration"]
    last, at_100 = int(iterations[-1]), d_hat[int(np.searchsorted(iterations, 100))]
    return (f"lam = {lam:.0f}: step {run.step:.3g}, imbalance at {last}: "
            f"{analysis.balance(run.A, run.B, Sigma_hat)[0]:.3g},\n"
            f"  dist_P(S_hat) at 0/100/{last}: "
            f"{d_hat[0]:.3g} / {at_100:.3g} / {d_hat[-1]:.3g}")


def saddle_table(U: np.ndarray, V: np.ndarray, Xstar: np.ndarray) -> ResultTable:
    """:func:`saddle_curvature` at ``(U, V)`` for lam = 0 and 1: the gradient norm (shown as 0
    below 1e-12, where only rounding is left), the smallest Hessian eigenvalue and the number
    of negative ones."""
    rows = []
    for lam in (0.0, 1.0):
        grad, eig = saddle_curvature(U, V, Xstar, lam=lam)
        rows.append((f"{lam:.0f}", "0" if grad < 1e-12 else f"{grad:.3g}", eig[0],
                     int(np.sum(eig < -1e-9))))
    return result_table(["lam", "gradient norm", "smallest Hessian eig", "negative eigs"], rows)


def renormalization_lines(on: np.ndarray, off: np.ndarray, scale: np.ndarray,
                          tau: float) -> str:
    """Algorithm 1 with renormalization (excess risk ``on``) and without (``off``, softmax
    scale ``scale``), recorded at the same iterations of 2000: how often the scale exceeds
    ``tau``, the largest relative difference in excess risk, and both at the end."""
    relative = np.abs(on - off) / off
    active = scale > tau * (1 + 1e-12)
    return (f"tau = {tau:.4g}; without renormalization ||V||_F exceeds tau\n"
            f"  at {np.mean(active):.0%} of the recorded iterations (max {scale.max():.4g})\n"
            f"largest relative difference in excess risk over 2000 iterations: "
            f"{relative.max():.2g}\n"
            f"excess risk at 2000: with tau {on[-1]:.4g}, without {off[-1]:.4g}")
