"""Registered experiment of chapter 6 (scaling laws): ``python -m attnbook.experiments scaling``.

One configuration, three parts, all on the book's default task family (d = 10, p = 20, Sigma with
condition number 10 and a random rotation, M with i.i.d. N(0, 1/(p d)) entries, drawn once from
``default_rng(SETTINGS.problem_seed)``), each for the noise levels ``SETTINGS.noise_levels``
(sigma = 0.1, the book's default, and sigma = 0). Algorithm 1 throughout has the defaults of
:func:`attnlib.algorithm.train` (spectral init, preconditioner, lambda = 1, the step rule). Every
setting is a field of :data:`SETTINGS` (a frozen :class:`ScalingSettings`); the stored ``config``
is written from it.

1. ``finite_*``: excess risk against n on the finite-n objective (the layer's empirical loss; the
   sample matters here). For each noise level, each n in ``SETTINGS.n_values`` and each seed s, the
   training set is drawn from ``default_rng([SETTINGS.problem_seed, s, n])`` (X, then the noise:
   the two noise levels share X and the standard normal draws) and a test set of
   ``SETTINGS.n_test`` points from ``default_rng([SETTINGS.problem_seed, s, n, 1])``. Algorithm 1
   runs ``SETTINGS.iterations`` iterations (the finite-n objective does not reach a small gradient
   norm within any affordable budget; the stored gradient norm says how far it got). Stored, shape
   (noise, n, seed, grid), on the grid ``finite_iteration`` (every iteration up to 100, then every
   10th): ``finite_excess_risk``, ``finite_grad_norm``, ``finite_objective``; shape (noise, n,
   seed): ``finite_ols_excess_risk`` (OLS fit on the same data, exact excess risk),
   ``finite_test_risk_init``, ``finite_test_risk_final`` (deployed predictor with the training set
   as context, noise-free targets, at iterations 0 and ``SETTINGS.iterations``), ``finite_step``.
2. ``closed_*``: the closed-form objective (Sigma_hat, M_hat plugged into the population loss;
   costs nothing in n) over the wide grid ``SETTINGS.closed_n_values``. Its minimizers are S_hat,
   where the spectral initialization already lies, so Algorithm 1 is converged at m = 0:
   ``closed_spectral_excess_risk`` (noise, n, ``SETTINGS.closed_seeds``) and the OLS excess risk
   ``closed_ols_excess_risk`` on the same data (``default_rng([SETTINGS.problem_seed, 100 + s,
   n])``). For the (n, m) picture, the same objective is also run from a random initialization (the
   "random + preconditioner + regularizer" method, A then B drawn from
   ``default_rng([SETTINGS.problem_seed, 100 + s, n, 2])``) at sigma = 0.1 for
   ``SETTINGS.heatmap_seeds`` seeds: ``heatmap_excess_risk`` (n, seed, grid) on
   ``heatmap_iteration`` (every ``SETTINGS.heatmap_every``-th iteration up to
   ``SETTINGS.heatmap_iterations``).
3. ``rate_*``: the geometric rate mu on the closed-form objective with the true moments
   (optimization alone). ``X* = P diag(geomspace(1, 1/kappa_X, d)) Q^T`` with fixed random
   orthonormal P, Q, and ``M = X* Sigma^{-1/2}``; Sigma = covariance(d, kappa=kappa_Sigma) with a
   fixed rotation. Runs: kappa_X in ``SETTINGS.kappa_x`` at kappa_Sigma = 10, then kappa_Sigma in
   ``SETTINGS.kappa_sigma`` at kappa_X = ``SETTINGS.kappa_x_fixed`` (preconditioned, Algorithm 1's
   step), then the same kappa_Sigma sweep without the preconditioner (plain GD on the same
   regularized objective, same step). Every run starts from the same random point drawn in factor
   coordinates, U_0, V_0 i.i.d. N(0, 0.3^2 / d) [choice: so that only Sigma, not the start, changes
   across the kappa_Sigma sweep], mapped to (A, B) with Sigma. A run stops when the excess risk
   falls below ``SETTINGS.rate_floor`` or after ``SETTINGS.rate_iterations`` iterations. Stored:
   ``rate_kappa_x``, ``rate_kappa_sigma``, ``rate_precondition`` (runs,), ``rate_step``,
   ``rate_iterations`` (iterations run), ``rate_mu_measured`` and ``rate_mu_stderr`` (fit of the
   excess risk inside ``SETTINGS.rate_band``, or over the last ``SETTINGS.rate_tail`` iterations
   when the run never reached the band's lower end), ``rate_mu_predicted``
   (:func:`attnlib.fitting.local_gd_rate` squared: the excess risk is quadratic in the distance to
   S), and ``rate_excess_risk`` (runs, grid) every ``SETTINGS.rate_every``-th iteration, NaN after
   the stop.

``full=False`` replays the leading block of every array (small n, first seeds, first runs,
few iterations); :func:`attnbook.experiments.leading_block` cuts the stored arrays to the replayed
shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnlib import algorithm, data, population
from attnlib._progress import progress as progress_bar
from attnlib._validation import DivergenceError, check_int, check_positive
from attnlib.fitting import fit_geometric_rate, local_gd_rate
from attnlib.geometry import gd_contraction_factor
from . import register
from .part1 import recorded_iterations


@dataclass(frozen=True)
class ScalingSettings:
    """Every setting of the ``scaling`` run (module docstring), each a [choice] of this book;
    the stored ``config`` is ``dataclasses.asdict`` of it plus ``full``."""

    d: int = 10
    p: int = 20
    kappa: float = 10.0
    problem_seed: int = 6
    noise_levels: tuple[float, ...] = (0.1, 0.0)
    n_values: tuple[int, ...] = (50, 100, 200, 400, 800, 1600)
    seeds: int = 4
    iterations: int = 1000
    n_test: int = 1000
    closed_n_values: tuple[int, ...] = tuple(50 * 2 ** k for k in range(11))   # 50 ... 51200
    closed_seeds: int = 8
    heatmap_seeds: int = 2
    heatmap_iterations: int = 1500
    heatmap_every: int = 5
    kappa_x: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0, 16.0, 32.0)
    kappa_sigma: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)
    kappa_x_fixed: float = 8.0
    rate_iterations: int = 8000
    rate_floor: float = 1e-20
    rate_band: tuple[float, float] = (1e-18, 1e-6)
    rate_tail: int = 1000
    rate_every: int = 5
    init_scale: float = 0.3
    algorithm: str = "train() defaults: spectral init, preconditioner, lam=1, step rule"


#: the settings of the stored run
SETTINGS = ScalingSettings()

# reduced configuration replayed by the chapter (full=False)
PREFIX = dict(n_values=2, seeds=2, iterations=20, closed_n_values=3, closed_seeds=2,
              heatmap_n_values=2, heatmap_seeds=1, heatmap_iterations=50, rate_runs=2,
              rate_iterations=50)


def default_task(noise_std: float) -> data.RegressionProblem:
    """The chapter's task: :func:`attnlib.data.default_problem` from ``SETTINGS.problem_seed``."""
    return data.default_problem(rng=np.random.default_rng(SETTINGS.problem_seed), d=SETTINGS.d,
                                p=SETTINGS.p, kappa=SETTINGS.kappa,
                                noise_std=noise_std)


def _finite_part(n_values: tuple[int, ...], seeds: int, iterations: int,
                 progress: bool) -> dict[str, np.ndarray]:
    shape = (len(SETTINGS.noise_levels), len(n_values), seeds)
    grid = recorded_iterations(iterations)
    curves = {key: np.full(shape + (grid.size,), np.nan)
              for key in ("finite_excess_risk", "finite_grad_norm", "finite_objective")}
    scalars = {key: np.full(shape, np.nan) for key in
               ("finite_ols_excess_risk", "finite_test_risk_init", "finite_test_risk_final",
                "finite_step")}
    jobs = [(i, j, s) for i in range(len(SETTINGS.noise_levels)) for j in range(len(n_values))
            for s in range(seeds)]
    for i, j, s in progress_bar(jobs, total=len(jobs), desc="finite n", enabled=progress):
        problem = default_task(SETTINGS.noise_levels[i])
        n = n_values[j]
        x, y = problem.sample(n, rng=np.random.default_rng([SETTINGS.problem_seed, s, n]))
        test = problem.sample(SETTINGS.n_test,
                              rng=np.random.default_rng([SETTINGS.problem_seed, s, n, 1]))
        try:
            result = algorithm.train(algorithm.empirical_loss(x, y), problem=problem,
                                     iterations=iterations, test=test,
                                     test_every=max(iterations, 1))
        except DivergenceError as error:                      # keep the run up to there
            result = error.result
        history = result.history
        kept = grid[grid < history["excess_risk"].size]      # all of it unless diverged
        for key in ("excess_risk", "grad_norm", "objective"):
            curves[f"finite_{key}"][i, j, s, :kept.size] = history[key][kept]
        _, m_hat = population.empirical_moments(x, y)
        scalars["finite_ols_excess_risk"][i, j, s] = population.linear_excess_risk(
            m_hat, problem.Sigma, problem.M)
        scalars["finite_test_risk_init"][i, j, s] = history["test_risk"][0]
        scalars["finite_test_risk_final"][i, j, s] = history["test_risk"][-1]
        scalars["finite_step"][i, j, s] = result.step
    return {"finite_iteration": grid, **curves, **scalars}


def _closed_part(n_values: tuple[int, ...], seeds: int, heatmap_n_values: int,
                 heatmap_seeds: int, heatmap_iterations: int,
                 progress: bool) -> dict[str, np.ndarray]:
    spectral = np.full((len(SETTINGS.noise_levels), len(n_values), seeds), np.nan)
    ols = np.full_like(spectral, np.nan)
    grid = np.arange(0, heatmap_iterations + 1, SETTINGS.heatmap_every)
    heatmap = np.full((heatmap_n_values, heatmap_seeds, grid.size), np.nan)
    jobs = [(i, j, s) for i in range(len(SETTINGS.noise_levels)) for j in range(len(n_values))
            for s in range(seeds)]
    for i, j, s in progress_bar(jobs, total=len(jobs), desc="closed form", enabled=progress):
        problem = default_task(SETTINGS.noise_levels[i])
        n = n_values[j]
        x, y = problem.sample(n, rng=np.random.default_rng([SETTINGS.problem_seed, 100 + s, n]))
        sigma_hat, m_hat = population.empirical_moments(x, y)
        a0, b0 = algorithm.spectral_init(sigma_hat, m_hat)
        spectral[i, j, s] = population.population_loss(a0, b0, problem.Sigma, problem.M)
        ols[i, j, s] = population.linear_excess_risk(m_hat, problem.Sigma, problem.M)
        if i == 0 and j < heatmap_n_values and s < heatmap_seeds:
            method = algorithm.Method(init="random", init_scale=SETTINGS.init_scale)
            result = algorithm.train(algorithm.closed_form_loss(sigma_hat, m_hat), method,
                                     problem=problem, iterations=heatmap_iterations,
                                     rng=np.random.default_rng([SETTINGS.problem_seed, 100 + s,
                                                                n, 2]),
                                     record_at=grid)
            heatmap[j, s] = result.history["excess_risk"]
    return {"closed_spectral_excess_risk": spectral, "closed_ols_excess_risk": ols,
            "heatmap_excess_risk": heatmap, "heatmap_iteration": grid}


def rate_problem(kappa_x: float, kappa_sigma: float) -> data.RegressionProblem:
    """Noise-free task with ``X* = P diag(geomspace(1, 1/kappa_x, d)) Q^T`` and
    ``Sigma = covariance(d, kappa=kappa_sigma)``; P, Q and Sigma's rotation are fixed
    (``default_rng([SETTINGS.problem_seed, 7])``), so only the two condition numbers change."""
    rng = np.random.default_rng([SETTINGS.problem_seed, 7])
    rotation = data.random_rotation(SETTINGS.d, rng=rng)
    left, _ = np.linalg.qr(rng.standard_normal((SETTINGS.p, SETTINGS.d)))
    right = data.random_rotation(SETTINGS.d, rng=rng)
    eigenvalues = np.geomspace(1.0, 1.0 / kappa_sigma, SETTINGS.d)
    sigma = (rotation * eigenvalues) @ rotation.T
    xstar = (left * np.geomspace(1.0, 1.0 / kappa_x, SETTINGS.d)) @ right.T
    _, inv_half = population.spd_sqrt(sigma)
    return data.RegressionProblem(Sigma=sigma, M=xstar @ inv_half, noise_std=0.0)


def rate_runs() -> list[tuple[float, float, bool]]:
    """(kappa_X, kappa_Sigma, precondition) of every rate run, in stored order."""
    runs = [(kx, 10.0, True) for kx in SETTINGS.kappa_x]
    runs += [(SETTINGS.kappa_x_fixed, ks, True) for ks in SETTINGS.kappa_sigma]
    runs += [(SETTINGS.kappa_x_fixed, ks, False) for ks in SETTINGS.kappa_sigma]
    return runs


def _rate_part(n_runs: int, iterations: int, progress: bool) -> dict[str, np.ndarray]:
    runs = rate_runs()[:n_runs]
    start = np.random.default_rng([SETTINGS.problem_seed, 8])
    std = SETTINGS.init_scale / np.sqrt(SETTINGS.d)
    u0 = std * start.standard_normal((SETTINGS.p, SETTINGS.d))
    v0 = std * start.standard_normal((SETTINGS.d, SETTINGS.d))
    grid = np.arange(0, iterations + 1, SETTINGS.rate_every)
    out = {key: np.full(len(runs), np.nan) for key in
           ("rate_kappa_x", "rate_kappa_sigma", "rate_precondition", "rate_step",
            "rate_iterations", "rate_mu_measured", "rate_mu_stderr", "rate_mu_predicted")}
    curves = np.full((len(runs), grid.size), np.nan)
    for r, (kappa_x, kappa_sigma, precondition) in progress_bar(
            list(enumerate(runs)), total=len(runs), desc="rates", enabled=progress):
        problem = rate_problem(kappa_x, kappa_sigma)
        _, inv_half = population.spd_sqrt(problem.Sigma)
        init = (u0 @ inv_half, inv_half @ v0 @ inv_half)

        def below_floor(k: int, a: np.ndarray, b: np.ndarray,
                        problem: data.RegressionProblem = problem) -> bool:
            return population.population_loss(a, b, problem.Sigma, problem.M) < SETTINGS.rate_floor

        method = algorithm.Method(lam=1.0, precondition=precondition)
        result = algorithm.train(algorithm.closed_form_loss(problem.Sigma, problem.M), method,
                                 init=init, problem=problem, iterations=iterations,
                                 callback=below_floor)
        excess = result.history["excess_risk"]
        steps = np.arange(excess.size)
        kept = grid[grid < excess.size]
        curves[r, :kept.size] = excess[kept]
        if excess.min() <= SETTINGS.rate_band[0]:
            fit = fit_geometric_rate(steps, excess, band=SETTINGS.rate_band)
        else:
            fit = fit_geometric_rate(steps, excess, start=max(0, excess.size - SETTINGS.rate_tail))
        out["rate_kappa_x"][r], out["rate_kappa_sigma"][r] = kappa_x, kappa_sigma
        out["rate_precondition"][r] = float(precondition)
        out["rate_step"][r] = result.step
        out["rate_iterations"][r] = excess.size - 1
        out["rate_mu_measured"][r], out["rate_mu_stderr"][r] = fit.rate, fit.stderr
        out["rate_mu_predicted"][r] = local_gd_rate(
            result.step, problem.Sigma, problem.M, lam=1.0, precondition=precondition) ** 2
    out["rate_excess_risk"] = curves
    out["rate_iteration"] = grid
    return out


@register("scaling", settings=SETTINGS)
def scaling(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Chapter 6: excess risk against n (finite-n and closed form), heatmap, rates vs kappa."""
    if full:
        n_values, seeds, iterations = SETTINGS.n_values, SETTINGS.seeds, SETTINGS.iterations
        closed = (SETTINGS.closed_n_values, SETTINGS.closed_seeds, len(SETTINGS.closed_n_values),
                  SETTINGS.heatmap_seeds, SETTINGS.heatmap_iterations)
        n_runs, rate_iterations = len(rate_runs()), SETTINGS.rate_iterations
    else:
        n_values = SETTINGS.n_values[: PREFIX["n_values"]]
        seeds, iterations = PREFIX["seeds"], PREFIX["iterations"]
        closed = (SETTINGS.closed_n_values[: PREFIX["closed_n_values"]], PREFIX["closed_seeds"],
                  PREFIX["heatmap_n_values"], PREFIX["heatmap_seeds"],
                  PREFIX["heatmap_iterations"])
        n_runs, rate_iterations = PREFIX["rate_runs"], PREFIX["rate_iterations"]
    history: dict[str, np.ndarray] = {
        "noise_levels": np.asarray(SETTINGS.noise_levels), "n_values": np.asarray(n_values),
        "closed_n_values": np.asarray(closed[0]),
    }
    history.update(_finite_part(n_values, seeds, iterations, progress))
    if not full:     # evaluated at the last iteration, which differs between the two modes
        del history["finite_test_risk_final"]
    history.update(_closed_part(*closed, progress=progress))
    if full:     # the fits of the rate sweep need the whole runs: the replay checks curves only
        history.update(_rate_part(n_runs, rate_iterations, progress))
    else:
        rates = _rate_part(n_runs, rate_iterations, progress)
        history.update({key: rates[key] for key in
                        ("rate_kappa_x", "rate_kappa_sigma", "rate_step", "rate_excess_risk")})
    return history


DIMENSIONS = (5, 10, 20)


def dimension_rates(dims: tuple[int, ...] = DIMENSIONS, *, kappa_x: float = SETTINGS.kappa_x_fixed,
                    step_scale: float = 0.5, iterations: int = 2000) -> dict[str, np.ndarray]:
    """Algorithm 1's geometric rate against the embedding dimension d at fixed kappa(X*)
    (chapter 6; seeds 000 and 001 say the rate does not depend on d).

    For each d: p = 2d, Sigma = I (the preconditioned step does not see Sigma), X* = P
    diag(geomspace(1, 1/kappa_x, d)) Q^T with random orthonormal P, Q from
    ``default_rng([SETTINGS.problem_seed, 9, d])``, the step ``eta = step_scale / (2 s_1)`` of the
    theory (the same for every d, since s_1 = 1), and a start at the point O = I of S plus
    N(0, 0.1^2/d) entries in (U, V) from the same generator. The excess risk is fitted by
    :func:`attnlib.fitting.fit_geometric_rate` inside ``SETTINGS.rate_band``. Returns ``d``, the
    measured rate of the excess risk ``mu_measured`` and the predicted ``mu_predicted``, the
    square of :func:`attnlib.geometry.gd_contraction_factor` (the excess risk is quadratic in the
    distance to S), and the runs' excess risk ``excess_risk`` (one row per d, one column per
    iteration from 0, NaN after a run stopped below ``SETTINGS.rate_floor``), which chapter 6's
    report refits (``attnbook.claims.ch06.window_rate``).
    """
    dims = tuple(check_int("dims", d, minimum=2) for d in dims)
    kappa_x = check_positive("kappa_x", kappa_x)
    step_scale = check_positive("step_scale", step_scale)
    iterations = check_int("iterations", iterations, minimum=10)
    measured, predicted, curves = [], [], np.full((len(dims), iterations + 1), np.nan)
    for i, d in enumerate(dims):
        rng = np.random.default_rng([SETTINGS.problem_seed, 9, d])
        left, _ = np.linalg.qr(rng.standard_normal((2 * d, d)))
        right = data.random_rotation(d, rng=rng)
        singular_values = np.geomspace(1.0, 1.0 / kappa_x, d)
        problem = data.RegressionProblem(Sigma=np.eye(d), M=(left * singular_values) @ right.T,
                                         noise_std=0.0)
        loss = algorithm.closed_form_loss(problem.Sigma, problem.M)
        a, b = loss.manifold.point()
        std = 0.1 / np.sqrt(d)
        init = (a + std * rng.standard_normal(a.shape), b + std * rng.standard_normal(b.shape))
        eta = step_scale / (2 * singular_values[0])
        result = algorithm.train(
            loss, algorithm.Method(lam=1.0, update=algorithm.GD(step=eta)), init=init,
            problem=problem, iterations=iterations,
            callback=lambda k, a, b, problem=problem: population.population_loss(
                a, b, problem.Sigma, problem.M) < SETTINGS.rate_floor)
        excess = result.history["excess_risk"]
        curves[i, :excess.size] = excess
        measured.append(fit_geometric_rate(np.arange(excess.size), excess,
                                           band=SETTINGS.rate_band).rate)
        predicted.append(gd_contraction_factor(eta, singular_values, 2 * d) ** 2)
    return dict(d=np.array(dims), mu_measured=np.array(measured),
                mu_predicted=np.array(predicted), excess_risk=curves)
