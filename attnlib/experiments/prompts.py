"""Registered runs of the prompts reconstruction (chapters 5 and 6; :mod:`attnlib.prompts`).

Every run is a grid of independent seeded tasks (one function call each); the registered
function maps the tasks in order and stacks the results, so the stored arrays do not depend on
how many processes ran them (environment variable ``ATTNLIB_EXPERIMENT_WORKERS``, default 1).

The task is seed 0's default problem of ``paper1_defaults`` (:func:`attnlib.experiments.ablations.defaults_data`),
d = 10, p = 20, kappa = 10, with M multiplied by ``scale`` and noise level ``noise_std``.

``paper1_prompts_bias`` (chapter 6). sigma = 0, pooled whitening
(:func:`attnlib.prompts.sample_prompts`), for each scale in ``BIAS_SCALES``, context length n in
``BIAS_N`` and replicate r: ``prompts(n) = max(1, BIAS_TOKENS // n)`` prompts drawn from
``default_rng([BIAS_SEED_BASE, scale index, n, r])``; the certified minimizer of the
prompt-averaged Q_hat = L_hat + R_hat (lambda = 1) reached from the spectral start (which lies
on the true S) with :func:`attnlib.reference.reference_minimizer` (gtol ``BIAS_GTOL``). Keys
(K scales, J values of n, R replicates; NaN where a replicate was not run): ``excess_risk``
(K, J, R), ``delta`` (K, J, R, p, d) = ``U V^T - X*`` at the minimizer (whitened coordinates of
the true Sigma), ``value``, ``grad_norm``, ``evaluations``, ``prompts`` (J,),
``deployed_minimizer``, ``deployed_minimizer_se`` (deployed excess risk of the minimizer with a
fresh context of n tokens) and ``deployed_start``, ``deployed_start_se`` (of the spectral start,
a point of S: this is the finite-context loss gap ``L_n - L`` on S).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ProcessPoolExecutor
from typing import Callable, Sequence

import numpy as np

from .. import algorithm, population, prompts, reference
from .._progress import progress as progress_bar
from ..data import RegressionProblem
from . import register
from .ablations import defaults_data

__all__ = ["BIAS_N", "BIAS_SCALES", "scaled_task", "bias_task", "map_tasks"]

BIAS_N = (10, 20, 40, 80, 160, 320, 640, 1280, 2560, 5000)
BIAS_SCALES = (1.0, 0.5)
BIAS_TOKENS = 4000
BIAS_REPLICATES = 4
BIAS_REPLICATES_LONG = 3          # for n >= BIAS_LONG_N (budget)
BIAS_LONG_N = 2560
BIAS_GTOL = 1e-7
BIAS_SEED_BASE = 12
DEPLOY_PROMPTS, DEPLOY_QUERIES = 40, 100


def scaled_task(scale: float = 1.0, noise_std: float = 0.0) -> RegressionProblem:
    """Seed 0's default problem with ``M -> scale M`` and the given noise level."""
    problem, _, _ = defaults_data(0)
    return RegressionProblem(Sigma=problem.Sigma, M=scale * problem.M, noise_std=noise_std)


def map_tasks(fn: Callable[..., dict[str, np.ndarray]], tasks: Sequence[tuple],
              *, progress: bool = False) -> list[dict[str, np.ndarray]]:
    """``[fn(*task) for task in tasks]``, in order, on ``ATTNLIB_EXPERIMENT_WORKERS`` processes."""
    workers = int(os.environ.get("ATTNLIB_EXPERIMENT_WORKERS", "1"))
    if workers <= 1 or len(tasks) <= 1:
        return [fn(*task) for task in progress_bar(tasks, total=len(tasks), desc="tasks",
                                                   enabled=progress)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(fn, *task) for task in tasks]
        return [future.result() for future in progress_bar(futures, total=len(futures),
                                                           desc="tasks", enabled=progress)]


def bias_prompts(n: int) -> int:
    """Number of prompts at context length n in ``paper1_prompts_bias``."""
    return max(1, BIAS_TOKENS // n)


def bias_task(scale_index: int, n: int, replicate: int) -> dict[str, np.ndarray]:
    """One (scale, n, replicate) cell of ``paper1_prompts_bias`` (module docstring)."""
    task = scaled_task(BIAS_SCALES[scale_index])
    rng = np.random.default_rng([BIAS_SEED_BASE, scale_index, n, replicate])
    x, y = prompts.sample_prompts(task, bias_prompts(n), n, rng=rng, whiten=True)
    loss = algorithm.prompts_loss(x, y, moments=(task.Sigma, task.M))
    start = loss.manifold.point()
    optimum = reference.reference_minimizer(loss.reference_objective(1.0), start, task.Sigma,
                                            gtol=BIAS_GTOL, hessian=False)
    u, v = loss.manifold.factor(optimum.A, optimum.B)
    deployed = [prompts.deployed_risk(a, b, task, n, rng=rng, prompts=DEPLOY_PROMPTS,
                                      queries=DEPLOY_QUERIES)
                for a, b in ((optimum.A, optimum.B), start)]
    return dict(excess_risk=np.asarray(population.population_loss(optimum.A, optimum.B,
                                                                  task.Sigma, task.M)),
                delta=u @ v.T - loss.manifold.Xstar, value=np.asarray(optimum.value),
                grad_norm=np.asarray(optimum.grad_norm),
                evaluations=np.asarray(optimum.evaluations, dtype=float),
                deployed_minimizer=np.asarray(deployed[0][0]),
                deployed_minimizer_se=np.asarray(deployed[0][1]),
                deployed_start=np.asarray(deployed[1][0]),
                deployed_start_se=np.asarray(deployed[1][1]))


def bias_replicates(n: int) -> int:
    """Replicates at context length n in ``paper1_prompts_bias``."""
    return BIAS_REPLICATES_LONG if n >= BIAS_LONG_N else BIAS_REPLICATES


@register("paper1_prompts_bias")
def paper1_prompts_bias(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Finite-context bias at sigma = 0 for n = 10..5000 (prompts, pooled whitening)."""
    scales = range(len(BIAS_SCALES)) if full else range(1)
    n_values = BIAS_N if full else BIAS_N[:1]
    tasks = [(k, n, r) for k in scales for n in n_values for r in range(bias_replicates(n))]
    if not full:
        tasks = tasks[:1]
    results = map_tasks(bias_task, tasks, progress=progress)
    shape = (len(scales), len(n_values), BIAS_REPLICATES)
    history: dict[str, np.ndarray] = {}
    for key, first in results[0].items():
        history[key] = np.full(shape + np.shape(first), np.nan)
    for (k, n, r), result in zip(tasks, results):
        for key, value in result.items():
            history[key][k, n_values.index(n), r] = value
    history["n_values"] = np.asarray(n_values)
    history["scales"] = np.asarray([BIAS_SCALES[k] for k in scales])
    history["prompts"] = np.asarray([bias_prompts(n) for n in n_values])
    history["config"] = np.asarray(json.dumps(dict(
        problem="seed 0 default problem, M scaled, noise_std = 0", scales=list(BIAS_SCALES),
        n_values=list(BIAS_N), tokens=BIAS_TOKENS, replicates=BIAS_REPLICATES,
        replicates_long=BIAS_REPLICATES_LONG, long_n=BIAS_LONG_N, gtol=BIAS_GTOL, lam=1.0,
        mask="loo", whiten=True, seed_base=BIAS_SEED_BASE, deploy_prompts=DEPLOY_PROMPTS,
        deploy_queries=DEPLOY_QUERIES, start="spectral (on S)")))
    return history
