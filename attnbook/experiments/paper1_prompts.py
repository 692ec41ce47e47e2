"""Registered runs of the prompts reconstruction (chapters 5 and 6; :mod:`attnlib.prompts`).

Every run is a grid of independent seeded tasks (one function call each) registered with
:func:`attnbook.experiments.register_grid`: the results are stacked in task order, so the stored
arrays do not depend on how many processes ran them (``python -m attnbook.experiments NAME
--workers K`` or ``--scheduler ADDRESS``).

The task is seed 0's default problem of ``paper1_defaults`` (:func:`attnbook.experiments.ablations.defaults_data`),
d = 10, p = 20, kappa = 10, with M multiplied by ``scale`` and noise level ``noise_std``.

Every setting of a run is a field of its frozen settings instance (``BIAS_SETTINGS``,
``TOKENS_SETTINGS``, ``EXPERIMENT_SETTINGS``, ``MAP_SETTINGS``, ``VARIANCE_SETTINGS``,
``FORMS_SETTINGS``, ``RENORM_SETTINGS``); the stored ``config`` is written from it. A setting
a run shares with another without storing it (the deployment's prompts and queries of the bias
check and the regularizer forms) is read from the run it names.

``paper1_prompts_bias`` (chapter 6; ``S = BIAS_SETTINGS``). sigma = 0, pooled whitening
(:func:`attnlib.prompts.sample_prompts`), for each scale in ``S.scales``, context length n in
``S.n_values`` and replicate r: ``prompts(n) = max(1, S.tokens // n)`` prompts drawn from
``default_rng([S.seed_base, scale index, n, r])`` (scale 0.5 on the coarser grid
``S.n_values_small_scale``; replicate indices per n in ``S.replicates``); the certified minimizer
of the prompt-averaged Q_hat = L_hat + R_hat (lambda = 1) reached from the spectral start (which
lies on the true S) with :func:`attnlib.reference.reference_minimizer` (gtol ``S.gtol``). Keys
(K scales, J values of n, R replicates; NaN where a replicate was not run): ``excess_risk``
(K, J, R), ``delta`` (K, J, R, p, d) = ``U V^T - X*`` at the minimizer (whitened coordinates of
the true Sigma), ``value``, ``grad_norm``, ``evaluations``, ``prompts`` (J,),
``deployed_minimizer``, ``deployed_minimizer_se`` (deployed excess risk of the minimizer with a
fresh context of n tokens) and ``deployed_start``, ``deployed_start_se`` (of the spectral start,
a point of S: this is the finite-context loss gap ``L_n - L`` on S).

``paper1_prompts_experiment`` and ``paper1_prompts_claims_map`` (chapter 5),
``paper1_prompts_variance``, ``paper1_prompts_regularizer_forms`` and
``paper1_prompts_renormalization`` (chapter 6) are described in their functions' docstrings;
:func:`start_ratio_map` is the live map of claims (1) and (2) over ``||M|| x sigma x c`` (chapter 5;
c the random start's scale).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Sequence

import numpy as np

from attnbook.seeds import stream
from attnlib import algorithm, attention, population, prompts, reference
from attnlib._validation import check_positive
from attnlib.data import RegressionProblem
from . import TaskGrid, register_grid
from .ablations import defaults_data
from .part1 import derive, method_options, recorded_iterations

__all__ = ["BIAS_SETTINGS", "TOKENS_SETTINGS", "EXPERIMENT_SETTINGS", "MAP_SETTINGS",
           "VARIANCE_SETTINGS", "FORMS_SETTINGS", "RENORM_SETTINGS", "BiasSettings",
           "TokensSettings", "ExperimentSettings", "ClaimsMapSettings", "VarianceSettings",
           "FormsSettings", "RenormalizationSettings", "scaled_task", "bias_task", "bias_tasks",
           "assemble_bias",
           "experiment_data", "experiment_task", "experiment_tasks",
           "assemble_experiment", "start_ratio_map", "variance_task",
           "variance_tasks", "assemble_variance", "claims_map_task", "claims_map_tasks",
           "assemble_claims_map", "claims_map_cell", "claim_values"]


@dataclass(frozen=True)
class BiasSettings:
    """Every setting of ``paper1_prompts_bias`` (module docstring), each a [choice] of this book;
    the stored ``config`` is ``dataclasses.asdict`` of it. ``n_values_small_scale``: the coarser
    grid of scale 0.5 (budget). ``replicates``: the replicate indices per context length (three
    from n = 80 to 640 and at n = 5000: the CPU budget of the stored runs; at n = 5000
    replicate 0 was stopped unfinished after about 25 minutes of CPU, its minimizer converging
    slowly along the weakly pinned orbit directions). ``deploy_prompts``, ``deploy_queries``:
    the fresh contexts of :func:`attnlib.prompts.deployed_risk`."""

    problem: str = "seed 0 default problem, M scaled, noise_std = 0"
    scales: tuple[float, ...] = (1.0, 0.5)
    n_values: tuple[int, ...] = (10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5000)
    n_values_small_scale: tuple[int, ...] = (10, 40, 160)
    tokens: int = 4000
    replicates: dict[int, tuple[int, ...]] = field(default_factory=lambda: {
        10: (0, 1, 2, 3), 20: (0, 1, 2, 3), 40: (0, 1, 2, 3), 80: (0, 1, 2), 160: (0, 1, 2),
        320: (0, 1, 2), 640: (0, 1, 2), 1280: (0, 1, 2, 3), 2560: (0, 1, 2, 3),
        5000: (1, 2, 3)})
    gtol: float = 1e-6
    lam: float = 1.0
    mask: attention.Mask = "loo"
    whiten: bool = True
    seed_base: int = 12
    deploy_prompts: int = 40
    deploy_queries: int = 100
    start: str = "spectral (on S)"


#: the absolute tolerance a replay compares ``delta = U V^T - X*`` to
#: (``experiments.replay(absolute=...)``): its entries are near 0, and the minimizers are
#: certified to gradient norm 1e-6, the scale to which they are determined
DELTA_ROUND_OFF = {"delta": 1e-6}

#: the settings of the stored run ``paper1_prompts_bias``
BIAS_SETTINGS = BiasSettings()


def scaled_task(scale: float = 1.0, noise_std: float = 0.0) -> RegressionProblem:
    """Seed 0's default problem with ``M -> scale M`` and the given noise level."""
    problem, _, _ = defaults_data(0)
    return RegressionProblem(Sigma=problem.Sigma, M=scale * problem.M, noise_std=noise_std)


def _stack_cells(shape: tuple[int, ...], indices: Sequence[tuple[int, ...]],
                 results: Sequence[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """One array per key of shape ``shape + (the key's value shape)``, with cell i's result
    at ``indices[i]`` and NaN where no cell was run (the stacking of every grid below)."""
    history = {key: np.full(tuple(shape) + np.shape(value), np.nan)
               for key, value in results[0].items()}
    for index, result in zip(indices, results):
        for key, value in result.items():
            history[key][index] = value
    return history


def bias_prompts(n: int, tokens: int = BIAS_SETTINGS.tokens) -> int:
    """Number of prompts at context length n in ``paper1_prompts_bias``: ``max(1, tokens // n)``."""
    return max(1, tokens // n)


def _prompt_minimizer(task: RegressionProblem, n: int, rng: np.random.Generator, *,
                      prompts_count: int, gtol: float,
                      mask: attention.Mask = BIAS_SETTINGS.mask,
                      lam: float = BIAS_SETTINGS.lam,
                      regularizer: algorithm.BalancingForm = "balancing"
                      ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Certified minimizer (gradient tolerance ``gtol``) of the prompt-averaged
    ``L_hat + lam R_hat`` (``regularizer``, ``mask``) on ``prompts_count`` whitened prompts of n
    tokens drawn from ``rng``, reached from the spectral start (a point of S): its excess risk,
    ``U V^T - X*``, the deployed excess risks of it and of the start (fresh contexts of n
    tokens, drawn next from ``rng``, as many as ``paper1_prompts_bias`` deploys); and its
    factors (U, V) in whitened coordinates."""
    x, y = prompts.sample_prompts(task, prompts_count, n, rng=rng, whiten=True)
    loss = algorithm.prompts_loss(x, y, moments=(task.Sigma, task.M), mask=mask)
    start = loss.manifold.point()
    optimum = reference.reference_minimizer(loss.reference_objective(lam, regularizer=regularizer),
                                            start, task.Sigma, gtol=gtol, hessian=False)
    u, v = loss.manifold.factor(optimum.A, optimum.B)
    deployed = [prompts.deployed_risk(a, b, task, n, rng=rng,
                                      prompts=BIAS_SETTINGS.deploy_prompts,
                                      queries=BIAS_SETTINGS.deploy_queries)
                for a, b in ((optimum.A, optimum.B), start)]
    return dict(excess_risk=np.asarray(population.population_loss(optimum.A, optimum.B,
                                                                  task.Sigma, task.M)),
                delta=u @ v.T - loss.manifold.Xstar, value=np.asarray(optimum.value),
                grad_norm=np.asarray(optimum.grad_norm),
                evaluations=np.asarray(optimum.evaluations, dtype=float),
                deployed_minimizer=np.asarray(deployed[0][0]),
                deployed_minimizer_se=np.asarray(deployed[0][1]),
                deployed_start=np.asarray(deployed[1][0]),
                deployed_start_se=np.asarray(deployed[1][1])), u, v


def bias_task(scale_index: int, n: int, replicate: int) -> dict[str, np.ndarray]:
    """One (scale, n, replicate) cell of ``paper1_prompts_bias`` (module docstring)."""
    settings = BIAS_SETTINGS
    rng = np.random.default_rng([settings.seed_base, scale_index, n, replicate])
    return _prompt_minimizer(scaled_task(settings.scales[scale_index]), n, rng,
                             prompts_count=bias_prompts(n, settings.tokens), gtol=settings.gtol,
                             mask=settings.mask, lam=settings.lam)[0]


def bias_tasks(full: bool = True) -> list[tuple[int, int, int]]:
    """The (scale index, n, replicate) cells of ``paper1_prompts_bias``; the prefix is the
    first cell (scale 1, n = 10, replicate 0)."""
    settings = BIAS_SETTINGS
    grids = (settings.n_values, settings.n_values_small_scale)
    tasks = [(k, n, r) for k in range(len(settings.scales)) for n in grids[k]
             for r in settings.replicates[n]]
    return tasks if full else tasks[:1]


def assemble_bias(tasks: Sequence[tuple[int, int, int]],
                  results: Sequence[dict[str, np.ndarray]]
                  ) -> dict[str, np.ndarray]:
    """Stack the cells of ``paper1_prompts_bias`` into arrays (K scales, J n values, R
    replicates, ...), NaN where a cell was not run."""
    n_values = sorted({n for _, n, _ in tasks})
    scales = sorted({k for k, _, _ in tasks})
    replicates = max(r for _, _, r in tasks) + 1
    history = _stack_cells((len(scales), len(n_values), replicates),
                           [(scales.index(k), n_values.index(n), r) for k, n, r in tasks], results)
    history["n_values"] = np.asarray(n_values)
    history["scales"] = np.asarray([BIAS_SETTINGS.scales[k] for k in scales])
    history["prompts"] = np.asarray([bias_prompts(n, BIAS_SETTINGS.tokens) for n in n_values])
    return history


@register_grid("paper1_prompts_bias", settings=BIAS_SETTINGS)
def paper1_prompts_bias(full: bool = True) -> TaskGrid:
    """Finite-context bias at sigma = 0 for n = 10..5000 (prompts, pooled whitening)."""
    tasks = bias_tasks(full)
    return TaskGrid(tasks, bias_task, partial(assemble_bias, tasks))


@dataclass(frozen=True)
class TokensSettings:
    """Every setting of ``paper1_prompts_bias_tokens`` (``tokens_task``) that differs from
    ``paper1_prompts_bias`` (the rest, read from :data:`BIAS_SETTINGS`: the tokens per prompt
    grid, lambda, mask, deployment), each a [choice] of this book; the stored ``config`` is
    ``dataclasses.asdict`` of it."""

    problem: str = "seed 0 default problem, noise_std = 0"
    n_values: tuple[int, ...] = (40, 640, 1280)
    prompts_factor: int = 4
    replicates: int = 3
    gtol: float = BIAS_SETTINGS.gtol
    seeding: str = f"default_rng([{BIAS_SETTINGS.seed_base}, 9, n, r])"
    whiten: bool = True


#: the settings of the stored run ``paper1_prompts_bias_tokens``
TOKENS_SETTINGS = TokensSettings()


def tokens_task(n: int, replicate: int) -> dict[str, np.ndarray]:
    """One cell of ``paper1_prompts_bias_tokens``: as :func:`bias_task` at scale 1, with
    ``TOKENS_SETTINGS.prompts_factor`` times as many prompts
    (``default_rng([BIAS_SETTINGS.seed_base, 9, n, r])``)."""
    rng = np.random.default_rng([BIAS_SETTINGS.seed_base, 9, n, replicate])
    return _prompt_minimizer(scaled_task(1.0), n, rng,
                             prompts_count=TOKENS_SETTINGS.prompts_factor * bias_prompts(n),
                             gtol=TOKENS_SETTINGS.gtol)[0]


def tokens_tasks(full: bool = True) -> list[tuple[int, int]]:
    """The (n, replicate) cells of ``paper1_prompts_bias_tokens``."""
    tasks = [(n, r) for n in TOKENS_SETTINGS.n_values for r in range(TOKENS_SETTINGS.replicates)]
    return tasks if full else tasks[:1]


def assemble_tokens(tasks: Sequence[tuple[int, int]],
                    results: Sequence[dict[str, np.ndarray]]
                    ) -> dict[str, np.ndarray]:
    """Stack the cells into arrays (n values, replicates, ...)."""
    settings = TOKENS_SETTINGS
    history = _stack_cells((len(settings.n_values), settings.replicates),
                           [(settings.n_values.index(n), r) for n, r in tasks], results)
    history["n_values"] = np.asarray(settings.n_values)
    history["prompts"] = np.asarray([settings.prompts_factor * bias_prompts(n)
                                     for n in settings.n_values])
    return history


@register_grid("paper1_prompts_bias_tokens", settings=TOKENS_SETTINGS)
def paper1_prompts_bias_tokens(full: bool = True) -> TaskGrid:
    """The finite-context bias at n = 40, 640 and 1280 with four times the tokens of
    ``paper1_prompts_bias``: does the estimate depend on the sample size?"""
    tasks = tokens_tasks(full)
    return TaskGrid(tasks, tokens_task, partial(assemble_tokens, tasks))


# ----------------------------------------------------------------------------------------
# The paper's experiment in the prompts setting (chapter 5) and the map over ||M|| x sigma.
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ExperimentSettings:
    """Every setting of ``paper1_prompts_experiment`` (its docstring), each a [choice] of this
    book; ``method_options`` is derived (the methods of :data:`attnlib.algorithm.METHODS` named
    in ``methods``). The stored ``config`` is ``dataclasses.asdict`` of it."""

    n: int = 500
    prompts: int = 8
    noise_levels: tuple[float, ...] = (0.1, 0.03)
    seeds: tuple[int, ...] = (0,)
    iterations: int = 2000
    methods: tuple[str, ...] = tuple(algorithm.METHODS)
    mask: attention.Mask = "loo"
    whiten: bool = False
    deploy_every: int = 100
    deploy_prompts: int = BIAS_SETTINGS.deploy_prompts
    deploy_queries: int = BIAS_SETTINGS.deploy_queries
    reference: str = "Q_hat basin from the spectral start, gtol 1e-8"
    seeding: str = ("problem from default_rng(s) (defaults_data), prompts from "
                    "default_rng([13, s]), init and SGD batches from default_rng(100 + s), "
                    "deployment from default_rng([14, s, k])")
    method_options: dict[str, dict[str, object]] = field(init=False)

    def __post_init__(self) -> None:
        derive(self, method_options=method_options(self.methods))


@dataclass(frozen=True)
class ClaimsMapSettings:
    """Every setting of ``paper1_prompts_claims_map`` (its docstring) that differs from
    ``paper1_prompts_experiment`` (the mask, the pooled moments, the reference's tolerance are
    its), each a [choice] of this book; the stored ``config`` is ``dataclasses.asdict`` of it."""

    n: int = 500
    prompts: int = 4
    scales: tuple[float, ...] = (0.5, 1.0, 2.0)
    noise_levels: tuple[float, ...] = (0.01, 0.03, 0.1)
    seed: int = 0
    iterations: int = 2000
    methods: tuple[str, ...] = ("algorithm1", "sgd")
    reference: str = "Q_hat basin from the spectral start, gtol 1e-8"
    seeding: str = "as paper1_prompts_experiment, seed 0"


#: the settings of the stored runs
EXPERIMENT_SETTINGS = ExperimentSettings()
MAP_SETTINGS = ClaimsMapSettings()
#: iterations of the replayed prefixes (full=False: the first cell) of the trained runs
EXPERIMENT_PREFIX = 10
#: the live map of :func:`start_ratio_map` (no stored run): ||M|| scales and noise levels
MAP_SCALES = (0.25, 0.5, 1.0, 2.0)
MAP_NOISE = (0.01, 0.03, 0.1, 0.3)


def experiment_data(noise_std: float, seed: int, *, scale: float = 1.0,
                    prompts_count: int = EXPERIMENT_SETTINGS.prompts,
                    n: int = EXPERIMENT_SETTINGS.n
                    ) -> tuple[RegressionProblem, algorithm.DataLoss]:
    """Seed s's default problem (``defaults_data(s)``: Sigma, M) with ``M -> scale M``, noise
    ``noise_std``, and ``prompts_count`` prompts of ``n`` tokens from ``default_rng([13, s])``
    (not whitened: the pooled moments are the sample's; mask ``EXPERIMENT_SETTINGS.mask``)."""
    problem, _, _ = defaults_data(seed)
    task = RegressionProblem(Sigma=problem.Sigma, M=scale * problem.M, noise_std=noise_std)
    x, y = prompts.sample_prompts(task, prompts_count, n, rng=np.random.default_rng([13, seed]),
                                  whiten=EXPERIMENT_SETTINGS.whiten)
    return task, algorithm.prompts_loss(x, y, mask=EXPERIMENT_SETTINGS.mask)


def _start_losses(task: RegressionProblem, loss: algorithm.DataLoss, seed: int
                  ) -> dict[str, np.ndarray]:
    """Excess risks of the spectral and the random start (``default_rng(100 + s)``)."""
    spectral = loss.manifold.point()
    random = algorithm.random_init(task.d, task.p, rng=stream("start", seed))
    return dict(start_excess=np.asarray([population.population_loss(*point, task.Sigma, task.M)
                                         for point in (spectral, random)]),
                L_star=np.asarray(task.L_star))


def experiment_task(noise_index: int, seed: int, *,
                    settings: ExperimentSettings = EXPERIMENT_SETTINGS, deploy: bool = True,
                    certify: bool = True) -> dict[str, np.ndarray]:
    """One (noise level ``settings.noise_levels[noise_index]``, seed) cell of
    ``paper1_prompts_experiment`` (see that function); ``certify=False`` skips the reference
    minimizer (basin entries NaN; the live replay)."""
    return _prompts_run(settings.noise_levels[noise_index], seed, iterations=settings.iterations,
                        methods=settings.methods, scale=1.0, prompts_count=settings.prompts,
                        n=settings.n, deploy=deploy, certify=certify)


def _prompts_run(noise: float, seed: int, *, iterations: int, methods: Sequence[str],
                 scale: float, prompts_count: int, n: int, deploy: bool,
                 certify: bool) -> dict[str, np.ndarray]:
    """The methods of :data:`attnlib.algorithm.METHODS` named in ``methods`` on
    :func:`experiment_data` (``noise``, ``seed``, ``scale``, ``prompts_count`` prompts of ``n``
    tokens), deployed (if ``deploy``) as ``paper1_prompts_experiment`` does, with the certified
    basin minimizer of Q_hat (gtol 1e-8) if ``certify``: the keys of
    :func:`paper1_prompts_experiment`."""
    task, loss = experiment_data(noise, seed, scale=scale, prompts_count=prompts_count, n=n)
    basin = (reference.reference_minimizer(loss.reference_objective(1.0), loss.manifold.point(),
                                           loss.Sigma_hat, gtol=1e-8, hessian=False)
             if certify else None)
    grid = recorded_iterations(iterations)
    deploy_grid = np.unique(np.r_[np.arange(0, iterations + 1, EXPERIMENT_SETTINGS.deploy_every),
                                  iterations])
    curves = {key: np.full((grid.size, len(methods)), np.nan)
              for key in ("objective", "loss", "excess_risk")}
    deployed = np.full((deploy_grid.size, len(methods)), np.nan)
    steps = []
    for j, name in enumerate(methods):
        rng = stream("start", seed)
        risks: list[float] = []

        def record(k: int, a: np.ndarray, b: np.ndarray) -> None:
            if deploy and k in deploy_grid:
                risks.append(prompts.deployed_risk(
                    a, b, task, n, rng=np.random.default_rng([14, seed, k]),
                    prompts=EXPERIMENT_SETTINGS.deploy_prompts,
                    queries=EXPERIMENT_SETTINGS.deploy_queries)[0])

        result = algorithm.train(loss, algorithm.METHODS[name], iterations=iterations,
                                 problem=task, rng=rng, callback=record, record_at=grid)
        if result.diverged:
            raise RuntimeError(f"prompts experiment: {name} diverged (noise {noise}, seed {seed})")
        for key in curves:
            curves[key][:, j] = result.history[key]
        if deploy:
            deployed[:, j] = risks
        steps.append(result.step)
    lam_zero = [j for j, name in enumerate(methods) if algorithm.METHODS[name].lam == 0]
    best_loss = float(np.nanmin(curves["loss"])) if lam_zero else np.nan
    certified = dict(basin_value=np.nan, basin_grad_norm=np.nan, basin_excess=np.nan)
    if basin is not None:
        certified = dict(basin_value=basin.value, basin_grad_norm=basin.grad_norm,
                         basin_excess=population.population_loss(basin.A, basin.B, task.Sigma,
                                                                  task.M))
    return dict(**curves, deployed=deployed, step=np.asarray(steps),
                **{key: np.asarray(value) for key, value in certified.items()},
                best_loss=np.asarray(best_loss), **_start_losses(task, loss, seed))


def experiment_tasks(full: bool = True) -> list[tuple[int, int]]:
    """The (noise index, seed) cells of ``paper1_prompts_experiment``."""
    tasks = [(i, s) for i in range(len(EXPERIMENT_SETTINGS.noise_levels))
             for s in EXPERIMENT_SETTINGS.seeds]
    return tasks if full else tasks[:1]


def assemble_experiment(tasks: Sequence[tuple[int, int]], results: Sequence[dict[str, np.ndarray]],
                        *, settings: ExperimentSettings = EXPERIMENT_SETTINGS
                        ) -> dict[str, np.ndarray]:
    """Stack the cells as arrays (noise levels, seeds, ...) of the noise levels and seeds the
    tasks ran, with those coordinates (``noise_levels``, ``seeds``), the grids and the config
    (``settings``, the run's)."""
    iterations = settings.iterations
    noise_indices = sorted({i for i, _ in tasks})
    seeds = sorted({s for _, s in tasks})
    history: dict[str, np.ndarray] = {
        "iteration": recorded_iterations(iterations),
        "deploy_iteration": np.unique(np.r_[np.arange(0, iterations + 1, settings.deploy_every),
                                            iterations]),
        "noise_levels": np.asarray(settings.noise_levels)[noise_indices],
        "seeds": np.asarray(seeds),
        **_stack_cells((len(noise_indices), len(seeds)),
                       [(noise_indices.index(i), seeds.index(s)) for i, s in tasks], results)}
    return history


@register_grid("paper1_prompts_experiment", settings=EXPERIMENT_SETTINGS)
def paper1_prompts_experiment(full: bool = True) -> TaskGrid:
    """The paper's experiment with N = 8 prompts of n = 500 tokens: five methods, 2000 iterations.

    For noise levels ``EXPERIMENT_SETTINGS.noise_levels`` and seeds ``EXPERIMENT_SETTINGS.seeds``:
    the five methods of
    :data:`attnlib.algorithm.METHODS` on the prompt-averaged objective. Keys (the grid axes
    first: I noise levels listed in ``noise_levels`` (I,), S seeds listed in ``seeds`` (S,)):
    ``objective``, ``loss`` (L_hat), ``excess_risk`` (I, S, G, 5) on the grid ``iteration``
    (G,), ``deployed`` (I, S, D, 5: deployed excess risk with a fresh context of n tokens, every
    ``deploy_every`` iterations, listed in ``deploy_iteration`` (D,)), ``step`` (I, S, 5), the
    certified basin minimizer of Q_hat (``basin_value``, ``basin_grad_norm``, ``basin_excess``,
    (I, S)), ``best_loss`` (I, S: the lowest L_hat seen, an upper bound on L_hat*, so
    ``L_hat - best_loss`` is a lower bound on the lambda = 0 methods' gap), ``start_excess``
    (I, S, 2: spectral, random) and ``L_star`` (I, S). ``full=False``: the first cell (I = S =
    1), ``EXPERIMENT_PREFIX`` iterations, no deployment and no reference minimizer (NaN).
    """
    tasks = experiment_tasks(full)
    run = EXPERIMENT_SETTINGS if full else replace(EXPERIMENT_SETTINGS,
                                                   iterations=EXPERIMENT_PREFIX)
    return TaskGrid(tasks, partial(experiment_task, settings=run, deploy=full, certify=full),
                    partial(assemble_experiment, tasks, settings=run))


def claims_map_task(scale_index: int, noise_index: int, *,
                    settings: ClaimsMapSettings = MAP_SETTINGS,
                    certify: bool = True) -> dict[str, np.ndarray]:
    """One (scale, noise) cell of ``paper1_prompts_claims_map``: the run of
    :func:`experiment_task` at ``settings.scales[scale_index]`` and
    ``settings.noise_levels[noise_index]`` with ``settings.prompts`` prompts of ``settings.n``
    tokens, the methods ``settings.methods``, seed ``settings.seed``, no deployment, certified
    basin minimizer."""
    return _prompts_run(settings.noise_levels[noise_index], settings.seed,
                        iterations=settings.iterations, methods=settings.methods,
                        scale=settings.scales[scale_index], prompts_count=settings.prompts,
                        n=settings.n, deploy=False, certify=certify)


def claims_map_tasks(full: bool = True) -> list[tuple[int, int]]:
    """The (scale index, noise index) cells of ``paper1_prompts_claims_map``."""
    tasks = [(i, j) for i in range(len(MAP_SETTINGS.scales))
             for j in range(len(MAP_SETTINGS.noise_levels))]
    return tasks if full else tasks[:1]


def assemble_claims_map(tasks: Sequence[tuple[int, int]], results: Sequence[dict[str, np.ndarray]],
                        *, settings: ClaimsMapSettings = MAP_SETTINGS
                        ) -> dict[str, np.ndarray]:
    """Stack the cells as arrays (scales, noise levels, ...) of the cells the tasks ran, with
    those coordinates (``scales``, ``noise_levels``) (read one cell with :func:`claims_map_cell`)
    and the config (``settings``, the run's)."""
    scale_indices = sorted({i for i, _ in tasks})
    noise_indices = sorted({j for _, j in tasks})
    history: dict[str, np.ndarray] = {
        "iteration": recorded_iterations(settings.iterations),
        "scales": np.asarray(settings.scales)[scale_indices],
        "noise_levels": np.asarray(settings.noise_levels)[noise_indices],
        **_stack_cells((len(scale_indices), len(noise_indices)),
                       [(scale_indices.index(i), noise_indices.index(j)) for i, j in tasks],
                       results)}
    return history


@register_grid("paper1_prompts_claims_map", settings=MAP_SETTINGS)
def paper1_prompts_claims_map(full: bool = True) -> TaskGrid:
    """Claims (1)-(4) over ``||M|| x sigma``: Algorithm 1 and SGD, 2000 iterations, N = 4.

    For each scale in ``MAP_SETTINGS.scales`` and noise level in ``MAP_SETTINGS.noise_levels``
    (seed 0's problem, ``MAP_SETTINGS.prompts`` prompts of ``MAP_SETTINGS.n`` tokens) the keys of
    :func:`experiment_task` stacked with the grid axes first, (K scales, J noise levels, ...),
    with ``scales`` (K,) and ``noise_levels`` (J,). ``full=False``: the first cell (K = J = 1)
    for ``EXPERIMENT_PREFIX`` iterations without the reference minimizer (the live replay).
    """
    tasks = claims_map_tasks(full)
    run = MAP_SETTINGS if full else replace(MAP_SETTINGS, iterations=EXPERIMENT_PREFIX)
    return TaskGrid(tasks, partial(claims_map_task, settings=run, certify=full),
                    partial(assemble_claims_map, tasks, settings=run))


def claims_map_cell(history: dict[str, np.ndarray], scale_index: int,
                    noise_index: int) -> dict[str, np.ndarray]:
    """One cell of ``paper1_prompts_claims_map`` in the form of ``paper1_prompts_experiment``
    (one noise level, seed 0: its arrays of shape (1, 1, ...)), for :func:`claim_values`."""
    cell = {key: value[scale_index:scale_index + 1, noise_index:noise_index + 1]
            for key, value in history.items() if np.ndim(value) >= 2}
    return dict(cell, iteration=history["iteration"], config=history["config"],
                noise_levels=history["noise_levels"][noise_index:noise_index + 1],
                seeds=np.asarray([0]))


def start_ratio_map(*, scales: Sequence[float] = MAP_SCALES, noise_levels: Sequence[float] = MAP_NOISE,
                    init_scales: Sequence[float] = (0.3,), seed: int = 0,
                    prompts_count: int = EXPERIMENT_SETTINGS.prompts) -> dict[str, np.ndarray]:
    """Claims (1) and (2) over ``||M|| x sigma x c`` (live, cheap): for each (scale, noise) cell
    the excess risks of the spectral start and of the random start with entries N(0, c^2/d)
    for each ``c`` in ``init_scales`` (:func:`experiment_data`, ``default_rng(100 + seed)``:
    the same standard-normal draws for every c), ``L*``, and the prompt-averaged training loss
    at both starts (the random one at ``init_scales[0]``). Arrays (len(scales),
    len(noise_levels)): ``spectral``, ``L_star``, ``train_spectral``, ``train_random``;
    ``random`` (len(scales), len(noise_levels), len(init_scales)); and ``gamma1``
    (len(scales),), the largest singular value of X* at each scale."""
    init_scales = tuple(check_positive("init_scales", c) for c in init_scales)
    if not init_scales:
        raise ValueError("init_scales must contain at least one scale")
    out = {key: np.zeros((len(scales), len(noise_levels)))
           for key in ("spectral", "L_star", "train_spectral", "train_random")}
    random = np.zeros((len(scales), len(noise_levels), len(init_scales)))
    gamma1 = np.zeros(len(scales))
    for i, scale in enumerate(scales):
        for j, noise in enumerate(noise_levels):
            task, loss = experiment_data(noise, seed, scale=scale, prompts_count=prompts_count)
            spectral = loss.manifold.point()
            out["spectral"][i, j] = population.population_loss(*spectral, task.Sigma, task.M)
            for k, c in enumerate(init_scales):
                random[i, j, k] = population.population_loss(*algorithm.random_init(
                    task.d, task.p, rng=stream("start", seed), scale=c),
                    task.Sigma, task.M)
            out["L_star"][i, j] = task.L_star
            out["train_spectral"][i, j] = loss(*spectral)[0]
            out["train_random"][i, j] = loss(*algorithm.random_init(
                task.d, task.p, rng=stream("start", seed), scale=init_scales[0]))[0]
        gamma1[i] = np.linalg.svd(population.target(task.M, task.Sigma), compute_uv=False)[0]
    return dict(out, random=random, gamma1=gamma1, scales=np.asarray(scales),
                noise_levels=np.asarray(noise_levels), init_scales=np.asarray(init_scales))


# ----------------------------------------------------------------------------------------
# The variance term: number of prompts N at sigma > 0 (chapter 6).
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class VarianceSettings:
    """Every setting of ``paper1_prompts_variance`` (:func:`variance_task`), each a [choice] of
    this book; the stored ``config`` is ``dataclasses.asdict`` of it."""

    n: int = 40
    prompts: tuple[int, ...] = (25, 100, 400)
    noise_std: float = 0.1
    replicates: int = 3
    gtol: float = BIAS_SETTINGS.gtol
    whiten: bool = False
    scale: float = 1.0
    seeding: str = "prompts from default_rng([15, N, r])"


#: the settings of the stored run ``paper1_prompts_variance``
VARIANCE_SETTINGS = VarianceSettings()


def variance_task(prompts_count: int, replicate: int) -> dict[str, np.ndarray]:
    """One (N, replicate) cell of ``paper1_prompts_variance``: N prompts of
    ``VARIANCE_SETTINGS.n`` tokens of the task at ``scale`` and sigma = ``noise_std`` (not
    whitened), the certified minimizer of Q_hat from the spectral start, its excess risk and
    ``U V^T - X*``."""
    settings = VARIANCE_SETTINGS
    task = scaled_task(settings.scale, settings.noise_std)
    x, y = prompts.sample_prompts(task, prompts_count, settings.n,
                                  rng=np.random.default_rng([15, prompts_count, replicate]),
                                  whiten=settings.whiten)
    loss = algorithm.prompts_loss(x, y)
    optimum = reference.reference_minimizer(loss.reference_objective(1.0), loss.manifold.point(),
                                            loss.Sigma_hat, gtol=settings.gtol, hessian=False)
    half, _ = population.spd_sqrt(task.Sigma)
    delta = (optimum.A @ half) @ (half @ optimum.B @ half).T - population.target(task.M,
                                                                                  task.Sigma)
    return dict(excess_risk=np.asarray(population.population_loss(optimum.A, optimum.B,
                                                                  task.Sigma, task.M)),
                delta=delta, grad_norm=np.asarray(optimum.grad_norm))


def variance_tasks(full: bool = True) -> list[tuple[int, int]]:
    """The (N, replicate) cells of ``paper1_prompts_variance``."""
    tasks = [(count, r) for count in VARIANCE_SETTINGS.prompts
             for r in range(VARIANCE_SETTINGS.replicates)]
    return tasks if full else tasks[:1]


def assemble_variance(tasks: Sequence[tuple[int, int]],
                      results: Sequence[dict[str, np.ndarray]]
                      ) -> dict[str, np.ndarray]:
    """Stack the cells as arrays (len(prompts), replicates, ...)."""
    counts = sorted({c for c, _ in tasks})
    replicates = max(r for _, r in tasks) + 1
    history = _stack_cells((len(counts), replicates), [(counts.index(c), r) for c, r in tasks],
                           results)
    history["prompts"] = np.asarray(counts)
    return history


@register_grid("paper1_prompts_variance", settings=VARIANCE_SETTINGS)
def paper1_prompts_variance(full: bool = True) -> TaskGrid:
    """Excess risk of the prompts minimizer against the number of prompts N (n = 40, sigma = 0.1)."""
    tasks = variance_tasks(full)
    return TaskGrid(tasks, variance_task, partial(assemble_variance, tasks))


def claim_values(history: dict[str, np.ndarray], noise_index: int,
                 seed: int = 0) -> dict[str, float]:
    """The four numbers that ``attnbook.claims.ch05.map_claims`` judges, for one cell of
    ``paper1_prompts_experiment``: ``start`` = ``(L(theta_0) - L*)/L*`` of the spectral start,
    ``orders`` = log10 of the population-loss ratio random / spectral start, ``alg1`` =
    Algorithm 1's gap ratio ``gap(last)/gap(0)`` to the certified basin minimizer, ``sgd`` = a
    certified lower bound of SGD's gap ratio, ``(L_hat(theta_last) - best_loss) / L_hat(theta_0)``
    (``best_loss`` is the lowest L_hat seen, at least L_hat*, and ``L_hat* >= 0``)."""
    seed_index = list(history["seeds"]).index(seed)

    def get(name: str) -> np.ndarray:
        return history[name][noise_index, seed_index]

    methods = list(json.loads(str(history["config"]))["methods"])
    start, l_star = get("start_excess"), float(get("L_star"))
    objective, loss = get("objective"), get("loss")
    alg1, sgd = methods.index("algorithm1"), methods.index("sgd")
    gap = objective[:, alg1] - float(get("basin_value"))
    return dict(start=float(start[0] / l_star),
                orders=float(np.log10((start[1] + l_star) / (start[0] + l_star))),
                alg1=float(gap[-1] / gap[0]),
                sgd=float((loss[-1, sgd] - float(get("best_loss"))) / loss[0, sgd]))


# ----------------------------------------------------------------------------------------
# Regularizer forms and renormalization at finite context (chapter 6).
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class FormsSettings:
    """Every setting of ``paper1_prompts_regularizer_forms`` (``form_task``), each a
    [choice] of this book; ``lam`` is each variant's regularizer weight (``"normalized"``:
    the normalized form of the balancing regularizer, ``"none"``: no regularizer); the
    deployment is ``paper1_prompts_bias``'s. The stored ``config`` is ``dataclasses.asdict`` of
    it."""

    problem: str = "seed 0 default problem, M scaled, noise_std = 0"
    scales: tuple[float, ...] = (1.0, 2.0)
    n_values: tuple[int, ...] = (40, 160)
    variants: tuple[str, ...] = ("balancing", "normalized", "none")
    replicates: int = 2
    tokens: int = BIAS_SETTINGS.tokens
    gtol: float = BIAS_SETTINGS.gtol
    lam: dict[str, float] = field(default_factory=lambda: {"balancing": 1.0, "normalized": 1.0,
                                                           "none": 0.0})
    whiten: bool = True
    seed_base: int = 17
    start: str = "spectral (on S)"


@dataclass(frozen=True)
class RenormalizationSettings:
    """Every setting of ``paper1_prompts_renormalization`` (``renormalization_task``), each a
    [choice] of this book (chapter 5's prompts data: ``paper1_prompts_experiment``'s n and
    prompts; the regularizer forms' scales); the deployment is ``paper1_prompts_experiment``'s.
    The stored ``config`` is ``dataclasses.asdict`` of it."""

    n: int = EXPERIMENT_SETTINGS.n
    prompts: int = EXPERIMENT_SETTINGS.prompts
    noise_std: float = 0.1
    seed: int = 0
    scales: tuple[float, ...] = (1.0, 2.0)
    variants: tuple[str, ...] = ("algorithm1", "renormalized", "normalized")
    iterations: int = EXPERIMENT_SETTINGS.iterations
    tau: str = "balanced scale sqrt(trace Gamma_hat)"
    reference: str = "gtol 1e-8 from the spectral start"


#: the settings of the stored runs
FORMS_SETTINGS = FormsSettings()
RENORM_SETTINGS = RenormalizationSettings()


def form_task(scale_index: int, n: int, variant_index: int,
              replicate: int) -> dict[str, np.ndarray]:
    """One cell of ``paper1_prompts_regularizer_forms``: the certified minimizer of the
    prompt-averaged ``L_hat + R`` with ``R`` the balancing regularizer (lambda = 1), its
    normalized form (lambda = 1) or none, on ``bias_prompts(n, tokens)`` whitened prompts at
    sigma = 0 from ``default_rng([FORMS_SETTINGS.seed_base, scale index, n, replicate])`` (the
    same prompts for the three variants). Besides the keys of :func:`bias_task`:
    ``logit_scale`` = ``||V||_F`` over its value ``sqrt(trace Gamma)`` on the balanced set S,
    and ``imbalance`` = ``||U^T U - V^T V||_F / ||X*||_F``."""
    settings = FORMS_SETTINGS
    task = scaled_task(settings.scales[scale_index])
    variant = settings.variants[variant_index]
    rng = np.random.default_rng([settings.seed_base, scale_index, n, replicate])
    result, u, v = _prompt_minimizer(
        task, n, rng, prompts_count=bias_prompts(n, settings.tokens), gtol=settings.gtol,
        lam=settings.lam[variant],
        regularizer="normalized" if variant == "normalized" else "balancing")
    manifold = algorithm.closed_form_loss(task.Sigma, task.M).manifold
    return dict(result, logit_scale=np.asarray(np.linalg.norm(v) / manifold.balanced_scale),
                imbalance=np.asarray(np.linalg.norm(u.T @ u - v.T @ v)
                                     / np.linalg.norm(manifold.Xstar)))


def form_tasks(full: bool = True) -> list[tuple[int, int, int, int]]:
    """The (scale index, n, variant index, replicate) cells of
    ``paper1_prompts_regularizer_forms``; the prefix is the first cell."""
    settings = FORMS_SETTINGS
    tasks = [(k, n, v, r) for k in range(len(settings.scales)) for n in settings.n_values
             for v in range(len(settings.variants)) for r in range(settings.replicates)]
    return tasks if full else tasks[:1]


def assemble_forms(tasks: Sequence[tuple[int, int, int, int]],
                   results: Sequence[dict[str, np.ndarray]]
                   ) -> dict[str, np.ndarray]:
    """Stack the cells into arrays (scales, n values, variants, replicates, ...)."""
    settings = FORMS_SETTINGS
    history = _stack_cells((len(settings.scales), len(settings.n_values), len(settings.variants),
                            settings.replicates),
                           [(k, settings.n_values.index(n), v, r) for k, n, v, r in tasks],
                           results)
    return history


@register_grid("paper1_prompts_regularizer_forms", settings=FORMS_SETTINGS)
def paper1_prompts_regularizer_forms(full: bool = True) -> TaskGrid:
    """Finite-context minimizers with the balancing regularizer, its normalized form and none
    (sigma = 0, M x 1 and M x 2, n = 40 and 160)."""
    tasks = form_tasks(full)
    return TaskGrid(tasks, form_task, partial(assemble_forms, tasks))


def renormalization_task(scale_index: int, variant_index: int, *,
                         settings: RenormalizationSettings = RENORM_SETTINGS,
                         certify: bool = True) -> dict[str, np.ndarray]:
    """One cell of ``paper1_prompts_renormalization`` with ``settings``: chapter 5's prompts data
    (N = 8 prompts of n = 500, seed 0, sigma = 0.1) with ``M x settings.scales[scale_index]``,
    trained for ``settings.iterations`` iterations
    from the spectral start by Algorithm 1 (``"algorithm1"``), Algorithm 1 with renormalization
    to ``||V||_F <= tau`` at the balanced scale ``tau = sqrt(trace Gamma_hat)``
    (``"renormalized"``), or Algorithm 1 with the normalized regularizer (``"normalized"``).
    Keys: ``gap`` against the certified minimizer of the variant's objective (the balancing
    Q_hat for the renormalized run, which is not a minimization of any objective), ``excess_risk``,
    ``logit_scale`` (``||V||_F / tau``) on the recorded iterations; ``optimum_excess``,
    ``optimum_logit_scale``; ``deployed`` and ``deployed_se`` at the last iterate (fresh
    contexts of n tokens from ``default_rng([18, scale index])``: the same contexts for every
    variant). ``certify=False``
    skips the reference minimizer (gap and optimum entries NaN: the live replay)."""
    iterations = settings.iterations
    variant = settings.variants[variant_index]
    regularizer = "normalized" if variant == "normalized" else "balancing"
    task, loss = experiment_data(settings.noise_std, settings.seed,
                                 scale=settings.scales[scale_index],
                                 prompts_count=settings.prompts, n=settings.n)
    optimum = (reference.reference_minimizer(
        loss.reference_objective(1.0, regularizer=regularizer), loss.manifold.point(),
        loss.Sigma_hat, gtol=1e-8, hessian=False) if certify else None)
    tau = loss.manifold.balanced_scale
    method = algorithm.Method(regularizer=regularizer,
                              tau=tau if variant == "renormalized" else None)
    scales: list[float] = []
    result = algorithm.train(
        loss, method, iterations=iterations, problem=task, reference=optimum,
        callback=lambda k, a, b: scales.append(np.linalg.norm(loss.manifold.factor(a, b)[1]) / tau))
    if result.diverged:
        raise RuntimeError(f"renormalization study: {variant} diverged at scale "
                           f"{settings.scales[scale_index]}")
    grid = recorded_iterations(iterations)
    deployed = prompts.deployed_risk(result.A, result.B, task, settings.n,
                                     rng=np.random.default_rng([18, scale_index]),
                                     prompts=EXPERIMENT_SETTINGS.deploy_prompts,
                                     queries=EXPERIMENT_SETTINGS.deploy_queries)
    at_optimum = dict(optimum_excess=np.nan, optimum_logit_scale=np.nan)
    if optimum is not None:
        at_optimum = dict(
            optimum_excess=population.population_loss(optimum.A, optimum.B, task.Sigma, task.M),
            optimum_logit_scale=np.linalg.norm(loss.manifold.factor(optimum.A, optimum.B)[1]) / tau)
    return dict(gap=result.history.get("gap", np.full(result.history["loss"].size, np.nan))[grid],
                excess_risk=result.history["excess_risk"][grid],
                logit_scale=np.asarray(scales)[grid],
                **{key: np.asarray(value) for key, value in at_optimum.items()},
                deployed=np.asarray(deployed[0]), deployed_se=np.asarray(deployed[1]))


def renormalization_tasks(full: bool = True) -> list[tuple[int, int]]:
    """The (scale index, variant index) cells of ``paper1_prompts_renormalization``."""
    tasks = [(k, v) for k in range(len(RENORM_SETTINGS.scales))
             for v in range(len(RENORM_SETTINGS.variants))]
    return tasks if full else tasks[:1]


def assemble_renormalization(tasks: Sequence[tuple[int, int]],
                             results: Sequence[dict[str, np.ndarray]], *,
                             settings: RenormalizationSettings = RENORM_SETTINGS
                             ) -> dict[str, np.ndarray]:
    """Stack the cells into arrays (scales, variants, ...) with the iteration grid and the
    config (``settings``, the run's)."""
    history = _stack_cells((len(settings.scales), len(settings.variants)), list(tasks), results)
    history["iteration"] = recorded_iterations(settings.iterations)
    return history


@register_grid("paper1_prompts_renormalization", settings=RENORM_SETTINGS)
def paper1_prompts_renormalization(full: bool = True) -> TaskGrid:
    """Algorithm 1 with and without renormalization, and with the normalized regularizer, on
    chapter 5's prompts data at M x 1 and M x 2 (2000 iterations; ``full=False``: the first
    cell for ``EXPERIMENT_PREFIX`` iterations)."""
    tasks = renormalization_tasks(full)
    run = RENORM_SETTINGS if full else replace(RENORM_SETTINGS, iterations=EXPERIMENT_PREFIX)
    return TaskGrid(tasks, partial(renormalization_task, settings=run, certify=full),
                    partial(assemble_renormalization, tasks, settings=run))
