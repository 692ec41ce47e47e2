"""Registered Part I runs measured against a certified optimum (chapters 5 and 6).

Both experiments are grids of independent tasks (one function call per seed or per (n, seed)),
registered with :func:`attnlib.experiments.register_grid` and combined by stacking; each task draws its data exactly as ``paper1_defaults`` does
(:func:`attnlib.experiments.ablations.defaults_data`: problem, n training and test samples from
``default_rng(seed)``).

``paper1_slow_directions`` (chapters 5 and 6). For seed 0 (``SLOW_SEEDS``; one seed keeps the
stored run within about ten minutes of one core), Algorithm 1 for ``LONG_ITERATIONS``
iterations and three remedies for its slow directions [choice], all from the spectral start on
the finite-data objective Q_hat = L_hat + R_hat (lambda = 1, n = 500), with the optimization gap
to the minimizer Q_hat* of the spectral start's basin (:mod:`attnlib.reference`):

* ``algorithm1``: the step rule of chapter 4 (a curvature *bound*, c = 0.5);
* ``curvature_step``: gradient descent with ``eta = 1 / h_max``, h_max the largest Hessian
  eigenvalue at the start measured by power iteration (:func:`attnlib.reference.largest_curvature`);
* ``curvature_nesterov``: the same step with Nesterov momentum 0.9 (:class:`attnlib.algorithm.Momentum`);
* ``newton_polish``: Algorithm 1 for ``POLISH_AFTER`` iterations, then the trust-region Newton
  polish of :func:`attnlib.reference.reference_minimizer` (recorded: gradient evaluations used
  and the final gap).

Runs stop once the gap is below ``STOP_RATIO`` times the initial gap. Keys (S seeds, the seed
axis first, seeds listed in ``seeds`` (S,); G = every ``EVERY``-th iteration up to
``LONG_ITERATIONS``, listed in ``iteration`` (G,); NaN after a run stopped): ``gap``,
``dist_ref``, ``excess_risk`` (S, G, 3 gradient methods), ``step`` (S, 3), ``h_max``,
``basin_value`` (S,), ``basin_hessian`` (S, p d + d^2; the spectrum at Q_hat*),
``polish_evaluations``, ``polish_gap``, ``polish_start_gap`` (S,).

``paper1_curvature_vs_n`` (chapter 6). For n in ``N_VALUES`` and each seed, the Hessian spectrum
of Q_hat at the minimizer reached from the spectral start, in (U, V) coordinates, and
Algorithm 1's step at that n: ``hessian`` (len(N_VALUES), seeds, p d + d^2), ``step`` (n, seeds),
``value``, ``excess_risk`` (n, seeds).
"""

from __future__ import annotations

import json
from functools import partial
from typing import Mapping, Sequence

import numpy as np

from .. import algorithm, population, reference
from . import TaskGrid, register_grid
from ._tasks import stack_tasks
from .ablations import defaults_data

__all__ = ["LONG_ITERATIONS", "GRADIENT_METHODS", "N_VALUES", "slow_directions_task",
           "curvature_task"]

LONG_ITERATIONS = 12000
PREFIX_ITERATIONS = 30
EVERY = 10
POLISH_AFTER = 2000
STOP_RATIO = 1e-10
NESTEROV_DECAY = 0.9
GRADIENT_METHODS = ("algorithm1", "curvature_step", "curvature_nesterov")
N_VALUES = (125, 250, 500, 1000, 2000)
CURVATURE_SEEDS = (0, 1)
SLOW_SEEDS = (0,)


def _gradient_methods(loss: algorithm.DataLoss, seed: int) -> tuple[dict[str, algorithm.Method],
                                                                   float]:
    h_max = reference.largest_curvature(loss.reference_objective(1.0), loss.manifold.point(),
                                        loss.Sigma_hat, rng=np.random.default_rng(300 + seed))
    algorithm1 = algorithm.METHODS["algorithm1"]
    methods = {
        "algorithm1": algorithm1,
        "curvature_step": algorithm.Method(update=algorithm.GD(step=1.0 / h_max)),
        "curvature_nesterov": algorithm.Method(update=algorithm.Momentum(
            decay=NESTEROV_DECAY, nesterov=True, step=1.0 / h_max)),
    }
    return methods, h_max


def slow_directions_task(seed: int, *, iterations: int = LONG_ITERATIONS, polish: bool = True,
                         progress: bool = False) -> dict[str, np.ndarray]:
    """One seed of ``paper1_slow_directions`` (module docstring): its keys without the seed axis."""
    problem, (x, y), _ = defaults_data(seed)
    loss = algorithm.empirical_loss(x, y)
    basin = reference.reference_minimizer(loss.reference_objective(1.0), loss.manifold.point(),
                                          loss.Sigma_hat, hessian=polish)
    methods, h_max = _gradient_methods(loss, seed)
    grid = np.arange(0, iterations + 1, EVERY)
    curves = {key: np.full((grid.size, len(methods)), np.nan)
              for key in ("gap", "dist_ref", "excess_risk")}
    objective = loss.reference_objective(1.0)
    initial_gap = objective(*loss.manifold.point())[0] - basin.value     # every run starts there

    def small_gap(k: int, a: np.ndarray, b: np.ndarray) -> bool:
        return k % EVERY == 0 and objective(a, b)[0] - basin.value <= STOP_RATIO * initial_gap

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
        start = algorithm.train(loss, iterations=POLISH_AFTER)
        polished = reference.reference_minimizer(loss.reference_objective(1.0),
                                                 (start.A, start.B), loss.Sigma_hat,
                                                 hessian=False)
        out.update(basin_hessian=basin.hessian_eigenvalues,
                   polish_evaluations=np.asarray(polished.evaluations),
                   polish_gap=np.asarray(polished.value - basin.value),
                   polish_start_gap=np.asarray(start.history["objective"][-1] - basin.value))
    return out


def _slow_directions_history(seeds: Sequence[int], iterations: int,
                             results: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    history = {"iteration": np.arange(0, iterations + 1, EVERY), "seeds": np.asarray(seeds),
               **stack_tasks(results)}
    config = dict(seeds=list(seeds), iterations=iterations, every=EVERY, methods=GRADIENT_METHODS,
                  polish_after=POLISH_AFTER, stop_ratio=STOP_RATIO,
                  nesterov_decay=NESTEROV_DECAY, n=500, lam=1.0,
                  curvature="power iteration, 100 steps, default_rng(300 + seed)")
    history["config"] = np.asarray(json.dumps(config))
    return history


@register_grid("paper1_slow_directions")
def paper1_slow_directions(full: bool = True) -> TaskGrid:
    """Algorithm 1 for 12,000 iterations and three remedies, gap to the certified optimum."""
    iterations = LONG_ITERATIONS if full else PREFIX_ITERATIONS
    return TaskGrid([(seed,) for seed in SLOW_SEEDS],
                    partial(slow_directions_task, iterations=iterations, polish=full),
                    partial(_slow_directions_history, SLOW_SEEDS, iterations))


def curvature_task(n: int, seed: int) -> dict[str, np.ndarray]:
    """One (n, seed) cell of ``paper1_curvature_vs_n``: Hessian spectrum at the basin minimizer."""
    problem, (x, y), _ = defaults_data(seed, n=n)
    loss = algorithm.empirical_loss(x, y)
    basin = reference.reference_minimizer(loss.reference_objective(1.0), loss.manifold.point(),
                                          loss.Sigma_hat)
    a0, b0 = loss.manifold.point()
    step = algorithm.default_step(a0, b0, loss.Sigma_hat, loss.M_hat, lam=1.0, precondition=True)
    return dict(hessian=basin.hessian_eigenvalues, step=np.asarray(step),
                value=np.asarray(basin.value),
                excess_risk=np.asarray(population.population_loss(basin.A, basin.B,
                                                                  problem.Sigma, problem.M)))


def _curvature_history(n_values: Sequence[int], seeds: Sequence[int],
                       results: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    history = {key: np.stack([r[key] for r in results]).reshape(
        (len(n_values), len(seeds)) + np.shape(results[0][key])) for key in results[0]}
    history["n_values"] = np.asarray(n_values)
    history["config"] = np.asarray(json.dumps(dict(n_values=list(n_values), seeds=list(seeds),
                                                   lam=1.0, start="spectral")))
    return history


@register_grid("paper1_curvature_vs_n")
def paper1_curvature_vs_n(full: bool = True) -> TaskGrid:
    """Hessian spectrum of Q_hat at its minimizer for n = 125..2000: the slow directions."""
    n_values = N_VALUES if full else N_VALUES[:1]
    seeds = CURVATURE_SEEDS if full else CURVATURE_SEEDS[:1]
    return TaskGrid([(n, s) for n in n_values for s in seeds], curvature_task,
                    partial(_curvature_history, n_values, seeds))
