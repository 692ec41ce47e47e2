"""Registered Part I runs measured against a certified optimum (chapters 5 and 6).

Both experiments are grids of independent tasks (one function call per seed or per (n, seed)),
registered with :func:`attnbook.experiments.register_grid` and combined by stacking; each task draws its data exactly as ``paper1_defaults`` does
(:func:`attnbook.experiments.ablations.defaults_data`: problem, n training and test samples from
``default_rng(seed)``).

Every setting is a field of ``SLOW_SETTINGS`` or ``CURVATURE_SETTINGS`` (frozen dataclasses; the
stored ``config`` is written from them).

``paper1_slow_directions`` (chapters 5 and 6). For seed 0 (``SLOW_SETTINGS.seeds``; one seed keeps
the stored run within about ten minutes of one core), Algorithm 1 for ``SLOW_SETTINGS.iterations``
iterations and three remedies for its slow directions [choice], all from the spectral start on
the finite-data objective Q_hat = L_hat + R_hat (lambda = 1, n = 500), with the optimization gap
to the minimizer Q_hat* of the spectral start's basin (:mod:`attnlib.reference`):

* ``algorithm1``: the step rule of chapter 4 (a curvature *bound*, c = 0.5);
* ``curvature_step``: gradient descent with ``eta = 1 / h_max``, h_max the largest Hessian
  eigenvalue at the start measured by power iteration (:func:`attnlib.reference.largest_curvature`);
* ``curvature_nesterov``: the same step with Nesterov momentum ``nesterov_decay`` = 0.9
  (:class:`attnlib.algorithm.Momentum`);
* ``newton_polish``: Algorithm 1 for ``polish_after`` iterations, then the trust-region Newton
  polish of :func:`attnlib.reference.reference_minimizer` (recorded: gradient evaluations used
  and the final gap).

Runs stop once the gap is below ``stop_ratio`` times the initial gap. Keys (S seeds, the seed
axis first, seeds listed in ``seeds`` (S,); G = every ``every``-th iteration up to
``iterations``, listed in ``iteration`` (G,); NaN after a run stopped): ``gap``,
``dist_ref``, ``excess_risk`` (S, G, 3 gradient methods), ``step`` (S, 3), ``h_max``,
``basin_value`` (S,), ``basin_hessian`` (S, p d + d^2; the spectrum at Q_hat*),
``polish_evaluations``, ``polish_gap``, ``polish_start_gap`` (S,).

``paper1_curvature_vs_n`` (chapter 6). For n in ``CURVATURE_SETTINGS.n_values`` and each seed, the
Hessian spectrum of Q_hat at the minimizer reached from the spectral start, in (U, V)
coordinates, and Algorithm 1's step at that n: ``hessian`` (n, seeds, p d + d^2), ``step`` (n, seeds),
``value``, ``excess_risk`` (n, seeds).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Mapping

import numpy as np

from attnbook.seeds import stream
from attnlib import algorithm, population, reference
from . import TaskGrid, register_grid
from ._tasks import stack_tasks
from .ablations import defaults_data
from .part1 import SETTINGS as DEFAULTS

__all__ = ["SLOW_SETTINGS", "CURVATURE_SETTINGS", "SlowDirectionsSettings", "CurvatureSettings",
           "slow_directions_task", "curvature_task"]


@dataclass(frozen=True)
class SlowDirectionsSettings:
    """Every setting of ``paper1_slow_directions`` (module docstring), each a [choice] of this
    book; the stored ``config`` is ``dataclasses.asdict`` of it. ``methods`` names the gradient
    methods (the curves' last axis) in :func:`slow_directions_task`'s order."""

    seeds: tuple[int, ...] = DEFAULTS.seeds[:1]
    iterations: int = 12000
    every: int = 10
    methods: tuple[str, ...] = ("algorithm1", "curvature_step", "curvature_nesterov")
    polish_after: int = 2000
    stop_ratio: float = 1e-10
    nesterov_decay: float = 0.9
    n: int = DEFAULTS.n
    lam: float = 1.0
    curvature: str = "power iteration, 100 steps, default_rng(300 + seed)"


@dataclass(frozen=True)
class CurvatureSettings:
    """Every setting of ``paper1_curvature_vs_n`` (module docstring), each a [choice] of this
    book; the stored ``config`` is ``dataclasses.asdict`` of it."""

    n_values: tuple[int, ...] = (125, 250, 500, 1000, 2000)
    seeds: tuple[int, ...] = DEFAULTS.seeds[:2]
    lam: float = 1.0
    start: str = "spectral"


#: the settings of the stored runs
SLOW_SETTINGS = SlowDirectionsSettings()
CURVATURE_SETTINGS = CurvatureSettings()
# iterations of the replayed prefix of ``paper1_slow_directions`` (full=False, no polish)
PREFIX_ITERATIONS = 30


def _gradient_methods(loss: algorithm.DataLoss, seed: int, settings: SlowDirectionsSettings
                      ) -> tuple[dict[str, algorithm.Method], float]:
    h_max = reference.largest_curvature(loss.reference_objective(settings.lam),
                                        loss.manifold.point(), loss.Sigma_hat,
                                        rng=stream("probe", seed))
    methods = {
        "algorithm1": algorithm.METHODS["algorithm1"],
        "curvature_step": algorithm.Method(update=algorithm.GD(step=1.0 / h_max)),
        "curvature_nesterov": algorithm.Method(update=algorithm.Momentum(
            decay=settings.nesterov_decay, nesterov=True, step=1.0 / h_max)),
    }
    return {name: methods[name] for name in settings.methods}, h_max


def slow_directions_task(seed: int, *, settings: SlowDirectionsSettings = SLOW_SETTINGS,
                         polish: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """One seed of ``paper1_slow_directions`` (module docstring) with ``settings``: its keys
    without the seed axis."""
    iterations, every = settings.iterations, settings.every
    problem, (x, y), _ = defaults_data(seed, n=settings.n)
    loss = algorithm.empirical_loss(x, y)
    objective = loss.reference_objective(settings.lam)
    basin = reference.reference_minimizer(objective, loss.manifold.point(),
                                          loss.Sigma_hat, hessian=polish)
    methods, h_max = _gradient_methods(loss, seed, settings)
    grid = np.arange(0, iterations + 1, every)
    curves = {key: np.full((grid.size, len(methods)), np.nan)
              for key in ("gap", "dist_ref", "excess_risk")}
    initial_gap = objective(*loss.manifold.point())[0] - basin.value     # every run starts there

    def small_gap(k: int, a: np.ndarray, b: np.ndarray) -> bool:
        return (k % every == 0
                and objective(a, b)[0] - basin.value <= settings.stop_ratio * initial_gap)

    steps = []
    for j, method in enumerate(methods.values()):
        result = algorithm.train(loss, method, iterations=iterations, problem=problem,
                                 reference=basin, callback=small_gap, progress=progress)
        if result.diverged:
            raise RuntimeError(f"seed {seed}: {list(methods)[j]} diverged")
        kept = grid[grid < result.history["gap"].size]
        for key in curves:
            curves[key][: kept.size, j] = result.history[key][kept]
        steps.append(result.step)
    out = {**curves, "step": np.asarray(steps), "h_max": np.asarray(h_max),
           "basin_value": np.asarray(basin.value)}
    if polish:
        start = algorithm.train(loss, iterations=settings.polish_after)
        polished = reference.reference_minimizer(objective,
                                                 (start.A, start.B), loss.Sigma_hat,
                                                 hessian=False)
        out.update(basin_hessian=basin.hessian_eigenvalues,
                   polish_evaluations=np.asarray(polished.evaluations),
                   polish_gap=np.asarray(polished.value - basin.value),
                   polish_start_gap=np.asarray(start.history["objective"][-1] - basin.value))
    return out


def _slow_directions_history(settings: SlowDirectionsSettings,
                             results: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    return {"iteration": np.arange(0, settings.iterations + 1, settings.every),
            "seeds": np.asarray(settings.seeds), **stack_tasks(results)}


@register_grid("paper1_slow_directions", settings=SLOW_SETTINGS)
def paper1_slow_directions(full: bool = True) -> TaskGrid:
    """Algorithm 1 for 12,000 iterations and three remedies, gap to the certified optimum."""
    run = SLOW_SETTINGS if full else replace(SLOW_SETTINGS, iterations=PREFIX_ITERATIONS)
    return TaskGrid([(seed,) for seed in run.seeds],
                    partial(slow_directions_task, settings=run, polish=full),
                    partial(_slow_directions_history, run))


def curvature_task(n: int, seed: int, *, lam: float = CURVATURE_SETTINGS.lam
                   ) -> dict[str, np.ndarray]:
    """One (n, seed) cell of ``paper1_curvature_vs_n``: Hessian spectrum at the basin minimizer
    of Q_hat = L_hat + lam R_hat and Algorithm 1's step there."""
    problem, (x, y), _ = defaults_data(seed, n=n)
    loss = algorithm.empirical_loss(x, y)
    basin = reference.reference_minimizer(loss.reference_objective(lam), loss.manifold.point(),
                                          loss.Sigma_hat)
    a0, b0 = loss.manifold.point()
    step = algorithm.default_step(a0, b0, loss.Sigma_hat, loss.M_hat, lam=lam, precondition=True)
    return dict(hessian=basin.hessian_eigenvalues, step=np.asarray(step),
                value=np.asarray(basin.value),
                excess_risk=np.asarray(population.population_loss(basin.A, basin.B,
                                                                  problem.Sigma, problem.M)))


def _curvature_history(settings: CurvatureSettings,
                       results: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    n_values, seeds = settings.n_values, settings.seeds
    history = {key: np.stack([r[key] for r in results]).reshape(
        (len(n_values), len(seeds)) + np.shape(results[0][key])) for key in results[0]}
    history["n_values"] = np.asarray(n_values)
    return history


@register_grid("paper1_curvature_vs_n", settings=CURVATURE_SETTINGS)
def paper1_curvature_vs_n(full: bool = True) -> TaskGrid:
    """Hessian spectrum of Q_hat at its minimizer for n = 125..2000: the slow directions."""
    run = CURVATURE_SETTINGS if full else replace(CURVATURE_SETTINGS,
                                                  n_values=CURVATURE_SETTINGS.n_values[:1],
                                                  seeds=CURVATURE_SETTINGS.seeds[:1])
    return TaskGrid([(n, s) for n in run.n_values for s in run.seeds],
                    partial(curvature_task, lam=run.lam),
                    partial(_curvature_history, run))
