"""Registered runs of chapter 6b: the orbit's curvature at finite n, and methods compared on
the finite-sample objective Q_hat = L_hat + R_hat (lambda = 1) from Algorithm 1's spectral
start.

Each task draws its data as ``paper1_defaults`` does
(:func:`attnbook.experiments.ablations.defaults_data`: problem, n samples from
``default_rng(seed)``), computes the certified minimizer of the spectral start's basin
(:func:`attnlib.reference.reference_minimizer`) and the Hessian of Q_hat restricted to the
orbit tangent there (:func:`attnlib.orbit.restricted_hessian`, 45 eigenvalues for d = 10).

Every setting is a field of ``METHODS_SETTINGS`` or ``SPECTRA_SETTINGS`` (frozen
dataclasses; the stored ``config`` is written from them); below ``S`` is the run's settings.

``finite_sample_methods``: grid (n, seed) over ``S.n_values`` x ``S.seeds`` at the default noise.
Five methods [choice of this book], each until its value is within ``S.stop_ratio`` of the
initial gap above the basin minimum (checked every ``S.stop_every`` iterations of the gradient
methods), or its budget is spent:

* ``algorithm1``: Algorithm 1 (chapter 4's step rule), at most ``S.alg1_iterations`` iterations;
* ``nesterov``: the curvature step ``1 / h_max`` with Nesterov momentum ``S.nesterov_decay``
  (chapter 5; the power iteration for h_max, ``S.curvature_iterations`` steps, costs
  ``S.curvature_evaluations`` evaluations, counted);
* ``newton_polish``: ``S.polish_after`` Algorithm 1 iterations, then the trust-region Newton-CG
  polish (:func:`attnlib.orbit.newton_polish`);
* ``lbfgs``: L-BFGS with 30 correction pairs (:func:`attnlib.orbit.lbfgs`);
* ``orbit_nesterov``: the orbit-aware method (:func:`attnlib.orbit.orbit_nesterov`, curvature
  step, ``S.orbit``: warm-up 300, refresh every 100, orbit step at most 0.01 long; h_max counted).

Every method but ``algorithm1`` has a budget of ``S.max_evaluations`` gradient evaluations.
Keys (grid axes first: ``n_values``, ``seeds``; ``methods`` names the method axis):
``values``, ``evaluations`` (n, seed, method, ``S.max_evaluations + 2``; NaN-padded: the objective at
each iterate and the evaluations spent to reach it), ``final_excess_risk``, ``final_distance``
(Euclidean, in (U, V), to the basin minimizer), ``seconds`` (wall-clock, including the
power iteration where it is counted; the runs share the machine, so compare evaluations first)
(n, seed, method), ``alg1_excess_risk``
(n, seed, S.alg1_iterations + 1; NaN after a stop), ``basin_value``, ``basin_excess_risk``,
``ols_excess_risk``, ``initial_value``, ``h_max``, ``step`` (Algorithm 1's), (n, seed), and
``orbit_hessian`` (n, seed, 45) ascending.

``finite_sample_spectra``: grid (noise, n, seed) over ``S.noise_levels`` (the default 0.1, and
noise-free targets ``Y = X M^T`` on the same inputs) x ``S.n_values`` x ``S.seeds``: at the basin
minimizer, ``hessian`` (the full spectrum in (U, V), ascending, 300 values),
``orbit_sample`` and ``orbit_true`` (the 45 eigenvalues of the Hessian restricted to the orbit
of Sigma_hat's coordinates, and of the true Sigma's: the family along which the expected loss
is flat), ``basin_value``; coordinates ``noise_levels``, ``n_values``, ``seeds``.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, replace
from functools import partial
from typing import Mapping

import numpy as np

from attnbook.seeds import stream
from attnlib import algorithm, analysis, attention, orbit, population, reference
from . import TaskGrid, leading_block, register_grid
from ._tasks import stack_tasks
from .ablations import defaults_data
from .part1 import SETTINGS as DEFAULTS
from .part1 import derive

__all__ = ["METHODS_SETTINGS", "SPECTRA_SETTINGS", "MethodsSettings", "SpectraSettings",
           "OrbitSettings", "REPLAYED_KEYS", "methods_task",
           "spectra_task", "recorded_prefix"]


@dataclass(frozen=True)
class OrbitSettings:
    """The orbit-aware method's settings (:func:`attnlib.orbit.orbit_nesterov`)."""

    warmup: int = 300
    refresh: int = 100
    radius: float = 0.01


@dataclass(frozen=True)
class MethodsSettings:
    """Every setting of ``finite_sample_methods`` (module docstring), each a [choice] of this
    book; ``curvature_evaluations`` is derived (the power iteration's ``2 curvature_iterations +
    2`` gradient evaluations). The stored ``config`` is ``dataclasses.asdict`` of it."""

    lam: float = 1.0
    start: str = "spectral"
    mask: attention.Mask = "loo"
    n_values: tuple[int, ...] = (125, 250, 500, 1000, 2000, 4000)
    seeds: tuple[int, ...] = (0, 1)
    methods: tuple[str, ...] = ("algorithm1", "nesterov", "newton_polish", "lbfgs",
                                "orbit_nesterov")
    stop_ratio: float = 1e-9
    stop_every: int = 10
    max_evaluations: int = 2000
    alg1_iterations: int = 1000
    polish_after: int = 200
    nesterov_decay: float = 0.9
    curvature_iterations: int = 100
    orbit: OrbitSettings = OrbitSettings()
    curvature_evaluations: int = field(init=False)

    def __post_init__(self) -> None:
        derive(self, curvature_evaluations=2 * self.curvature_iterations + 2)


#: the settings of the stored run ``finite_sample_methods``
METHODS_SETTINGS = MethodsSettings()


@dataclass(frozen=True)
class SpectraSettings:
    """Every setting of ``finite_sample_spectra`` (module docstring), each a [choice] of this
    book (the grid of ``finite_sample_methods``, and the default noise level with noise-free
    targets). The stored ``config`` is ``dataclasses.asdict`` of it."""

    lam: float = METHODS_SETTINGS.lam
    start: str = METHODS_SETTINGS.start
    mask: attention.Mask = METHODS_SETTINGS.mask
    noise_levels: tuple[float, ...] = (DEFAULTS.noise_std, 0.0)
    n_values: tuple[int, ...] = METHODS_SETTINGS.n_values
    seeds: tuple[int, ...] = METHODS_SETTINGS.seeds


#: the settings of the stored run ``finite_sample_spectra``
SPECTRA_SETTINGS = SpectraSettings()

# the replayed prefix (full=False): n = 125, seed 0, smaller budgets
PREFIX_N = 125
PREFIX_ALG1_ITERATIONS = 60


def _basin(loss: algorithm.DataLoss, *, lam: float, hessian: bool = False
           ) -> tuple[reference.ReferenceOptimum, orbit.FactorProblem, np.ndarray]:
    """The spectral start's basin minimizer, its problem in flat (U, V) coordinates and point."""
    objective = loss.reference_objective(lam)
    basin = reference.reference_minimizer(objective, loss.manifold.point(), loss.Sigma_hat,
                                          hessian=hessian)
    problem, z = orbit.factor_problem(objective, (basin.A, basin.B), loss.Sigma_hat)
    return basin, problem, z


def _orbit_spectrum(problem: orbit.FactorProblem, z: np.ndarray,
                    Sigma: np.ndarray | None = None) -> np.ndarray:
    """Eigenvalues of the Hessian restricted to :func:`attnlib.orbit.orbit_tangent`."""
    tangent = orbit.orbit_tangent(problem, z, Sigma)
    return np.linalg.eigvalsh(orbit.restricted_hessian(problem, z, tangent))


def methods_task(n: int, seed: int, *, settings: MethodsSettings = METHODS_SETTINGS
                 ) -> dict[str, np.ndarray]:
    """One (n, seed) cell of ``finite_sample_methods`` (module docstring) with ``settings``."""
    max_evaluations, alg1_iterations = settings.max_evaluations, settings.alg1_iterations
    polish_after, curvature_evaluations = settings.polish_after, settings.curvature_evaluations
    problem, (x, y), _ = defaults_data(seed, n=n)
    loss = algorithm.empirical_loss(x, y, mask=settings.mask)
    objective = loss.reference_objective(settings.lam)
    start = loss.manifold.point()
    basin, basin_problem, basin_z = _basin(loss, lam=settings.lam)
    orbit_hessian = _orbit_spectrum(basin_problem, basin_z)
    initial_value = objective(*start)[0]
    target = basin.value + settings.stop_ratio * (initial_value - basin.value)
    clock = time.perf_counter()
    h_max = reference.largest_curvature(objective, start, loss.Sigma_hat,
                                        rng=stream("probe", seed),
                                        iterations=settings.curvature_iterations)
    curvature_seconds = time.perf_counter() - clock

    def fresh() -> tuple[orbit.FactorProblem, np.ndarray]:
        return orbit.factor_problem(objective, start, loss.Sigma_hat)

    def stop(k: int, a: np.ndarray, b: np.ndarray) -> bool:    # bookkeeping, not counted
        return k % settings.stop_every == 0 and objective(a, b)[0] <= target

    traces, finals, seconds = [], [], []
    clock = time.perf_counter()
    alg1 = algorithm.train(loss, iterations=alg1_iterations, problem=problem, callback=stop)
    values = alg1.history["objective"]
    traces.append((values, np.arange(1, values.size + 1)))
    finals.append((alg1.A, alg1.B))
    seconds.append(time.perf_counter() - clock)
    clock = time.perf_counter()
    nesterov = algorithm.train(loss, algorithm.Method(update=algorithm.Momentum(
        decay=settings.nesterov_decay, nesterov=True, step=1.0 / h_max)),
        iterations=max_evaluations - 1, callback=stop)
    values = nesterov.history["objective"]
    traces.append((values, curvature_evaluations + np.arange(1, values.size + 1)))
    finals.append((nesterov.A, nesterov.B))
    seconds.append(time.perf_counter() - clock + curvature_seconds)
    clock = time.perf_counter()
    warm = algorithm.train(loss, iterations=polish_after)
    factor_problem, _ = fresh()
    polish = orbit.newton_polish(factor_problem, factor_problem.flat(warm.A, warm.B),
                                 target=target, max_evaluations=max_evaluations - polish_after,
                                 spent=polish_after + 1)
    warm_values = warm.history["objective"]
    traces.append((np.concatenate([warm_values, polish.values]),
                   np.concatenate([np.arange(1, warm_values.size + 1), polish.evaluations])))
    finals.append(factor_problem.split(polish.z))
    seconds.append(time.perf_counter() - clock)
    for run, before in ((orbit.lbfgs, 0.0),
                        (partial(orbit.orbit_nesterov, step=1.0 / h_max,
                                 spent=curvature_evaluations, **asdict(settings.orbit)),
                         curvature_seconds)):
        clock = time.perf_counter()
        factor_problem, z0 = fresh()
        result = run(factor_problem, z0, target=target, max_evaluations=max_evaluations)
        traces.append((result.values, result.evaluations))
        finals.append(factor_problem.split(result.z))
        seconds.append(time.perf_counter() - clock + before)
    return dict(
        values=analysis.pad_histories([v for v, _ in traces], max_evaluations + 2),
        evaluations=analysis.pad_histories([e for _, e in traces], max_evaluations + 2),
        seconds=np.asarray(seconds),
        final_excess_risk=np.asarray([population.population_loss(a, b, problem.Sigma, problem.M)
                                      for a, b in finals]),
        final_distance=np.asarray([np.linalg.norm(basin_problem.flat(a, b) - basin_z)
                                   for a, b in finals]),
        alg1_excess_risk=np.concatenate([alg1.history["excess_risk"], np.full(
            alg1_iterations + 1 - alg1.history["excess_risk"].size, np.nan)]),
        basin_value=np.asarray(basin.value),
        basin_excess_risk=np.asarray(population.population_loss(basin.A, basin.B,
                                                                problem.Sigma, problem.M)),
        ols_excess_risk=np.asarray(population.linear_excess_risk(
            population.empirical_moments(x, y)[1], problem.Sigma, problem.M)),
        initial_value=np.asarray(initial_value), h_max=np.asarray(h_max),
        step=np.asarray(alg1.step), orbit_hessian=orbit_hessian)


def spectra_task(noise: int, n: int, seed: int) -> dict[str, np.ndarray]:
    """One (noise, n, seed) cell of ``finite_sample_spectra`` (module docstring); ``noise``
    indexes ``SPECTRA_SETTINGS.noise_levels``."""
    settings = SPECTRA_SETTINGS
    problem, (x, y), _ = defaults_data(seed, n=n)
    if settings.noise_levels[noise] == 0.0:
        y = x @ problem.M.T                                   # the same inputs, no noise
    elif settings.noise_levels[noise] != problem.noise_std:
        raise ValueError(f"noise level {settings.noise_levels[noise]} is neither 0 nor the "
                         f"default problem's {problem.noise_std}")
    basin, basin_problem, z = _basin(algorithm.empirical_loss(x, y, mask=settings.mask),
                                     lam=settings.lam, hessian=True)
    return dict(hessian=basin.hessian_eigenvalues,
                orbit_sample=_orbit_spectrum(basin_problem, z),
                orbit_true=_orbit_spectrum(basin_problem, z, problem.Sigma),
                basin_value=np.asarray(basin.value))


#: The keys the replayed prefix (n = 125, seed 0, smaller budgets) reproduces; the wall-clock
#: times and the final points of runs stopped at another budget are not compared.
REPLAYED_KEYS = ("values", "evaluations", "alg1_excess_risk", "basin_value", "basin_excess_risk",
                 "ols_excess_risk", "initial_value", "h_max", "step", "orbit_hessian")


#: L-BFGS's records a replay compares: its line searches amplify a difference in round-off
#: about tenfold every 12 evaluations (measured on the replayed cell against the stored run, on
#: CPUs other than the storing one: 1e-14 relative after 50 evaluations, 1e-11 after 100,
#: 1e-7 after 150, 2e-4 after 250), so only this well-conditioned stretch is compared.
LBFGS_REPLAYED_RECORDS = 80


def recorded_prefix(stored: Mapping[str, np.ndarray], prefix: Mapping[str, np.ndarray]
                    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """An ``align`` for :func:`attnbook.experiments.replay`: the stored leading block
    (:func:`attnbook.experiments.leading_block`), compared only where the prefix recorded a
    value (its runs stop at a smaller budget, NaN after), and for L-BFGS only its first
    ``LBFGS_REPLAYED_RECORDS`` records (NaN in both after)."""
    cut, new = leading_block(stored, prefix)
    cut = {key: np.where(np.isnan(new[key]), np.nan, cut[key]) for key in cut}
    lbfgs = METHODS_SETTINGS.methods.index("lbfgs")
    for key in ("values", "evaluations"):
        for arrays in (cut, new):
            arrays[key] = np.array(arrays[key], dtype=float)
            arrays[key][..., lbfgs, LBFGS_REPLAYED_RECORDS:] = np.nan
    return cut, new


def _stacked(coordinates: Mapping[str, tuple], results: list[Mapping[str, np.ndarray]]
             ) -> dict[str, np.ndarray]:
    """The tasks stacked with the grid axes first, one coordinate array per axis."""
    history = stack_tasks(results, shape=tuple(len(v) for v in coordinates.values()))
    history.update({name: np.asarray(values) for name, values in coordinates.items()})
    return history


@register_grid("finite_sample_methods", settings=METHODS_SETTINGS)
def finite_sample_methods(full: bool = True) -> TaskGrid:
    """Five methods on Q_hat for n = 125..4000: evaluations to a gap of 1e-3..1e-9."""
    run = METHODS_SETTINGS if full else replace(
        METHODS_SETTINGS, n_values=(PREFIX_N,), seeds=METHODS_SETTINGS.seeds[:1],
        alg1_iterations=PREFIX_ALG1_ITERATIONS,
        max_evaluations=METHODS_SETTINGS.polish_after + PREFIX_ALG1_ITERATIONS)
    return TaskGrid([(n, s) for n in run.n_values for s in run.seeds],
                    partial(methods_task, settings=run),
                    partial(_stacked, dict(n_values=run.n_values, seeds=run.seeds)))


@register_grid("finite_sample_spectra", settings=SPECTRA_SETTINGS)
def finite_sample_spectra(full: bool = True) -> TaskGrid:
    """Hessian spectra of Q_hat at its minimizer, with and without noise, n = 125..4000."""
    run = SPECTRA_SETTINGS if full else replace(SPECTRA_SETTINGS,
                                                noise_levels=SPECTRA_SETTINGS.noise_levels[:1],
                                                n_values=(PREFIX_N,),
                                                seeds=SPECTRA_SETTINGS.seeds[:1])
    coordinates = dict(noise_levels=run.noise_levels, n_values=run.n_values, seeds=run.seeds)
    return TaskGrid([(i, n, s) for i in range(len(run.noise_levels)) for n in run.n_values
                     for s in run.seeds], spectra_task,
                    partial(_stacked, coordinates))
