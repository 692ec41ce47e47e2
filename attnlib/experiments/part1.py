"""Registered experiments of Part I (paper 1): stored runs replayed by chapters 4-6.

``paper1_defaults``: the design's default problem (d = 10, p = 20, n = 500, kappa = 10,
noise_std = 0.1) and the five methods of :data:`attnlib.algorithm.METHODS` (Algorithm 1;
random init + preconditioner + regularizer; plain GD; minibatch SGD; Adam), 2000 iterations
each, for three seeds. Seed s draws, from ``default_rng(s)``, the problem (Sigma, then M),
the n training samples and ``N_TEST`` test samples, in that order; every random-init method
starts from the same draw of ``default_rng(100 + s)`` (A then B), and SGD then draws its
minibatches from the same generator.

Stored history (keys; G = grid of recorded iterations, every iteration up to 100 then every
10th; methods along the last axis in the order of ``config["methods"]``):
``iteration`` (G,), ``test_iteration`` (T,), and per seed s: ``excess_risk_seed{s}``,
``objective_seed{s}``, ``loss_seed{s}``, ``dist_P_seed{s}``, ``dist_P_hat_seed{s}``,
``grad_norm_seed{s}`` (G, 5); ``test_risk_seed{s}`` (T, 5) (deployed predictor, noise-free
targets, every ``TEST_EVERY`` iterations); ``step_seed{s}`` (5,); ``ols_fit_excess_risk_seed{s}``
(the OLS fit on the same data) and ``ols_formula`` (``p sigma^2 d / (2 (n - d - 1))``);
``seconds_seed{s}`` (5,) wall time (not reproducible; excluded by :func:`prefix_keys`).
``full=False`` runs seed 0 only, for ``PREFIX_ITERATIONS`` iterations.
"""

from __future__ import annotations

import json
from typing import Mapping

import numpy as np

from .. import algorithm, data, population
from . import register

D, P, N, KAPPA, NOISE_STD = 10, 20, 500, 10.0, 0.1
SEEDS = (0, 1, 2)
ITERATIONS = 2000
PREFIX_ITERATIONS = 20
N_TEST = 500
TEST_EVERY = 10
CURVES = ("excess_risk", "objective", "loss", "dist_P", "dist_P_hat", "grad_norm")


def recorded_iterations(iterations: int) -> np.ndarray:
    """Iterations at which Part I histories are recorded: every one up to 100, then every 10th."""
    return np.unique(np.concatenate([np.arange(min(iterations, 100) + 1),
                                     np.arange(0, iterations + 1, 10)]))


def prefix_keys(history: Mapping[str, np.ndarray]) -> list[str]:
    """Keys of a Part I history that a replayed prefix must reproduce (all but wall time and
    the JSON ``config``)."""
    return [key for key in history if key != "config" and not key.startswith("seconds")]


def run_defaults_seed(seed: int, *, iterations: int, progress: bool = False
                      ) -> dict[str, np.ndarray]:
    """One seed of ``paper1_defaults`` (see the module docstring), keys suffixed ``_seed{s}``."""
    rng = np.random.default_rng(seed)
    problem = data.default_problem(rng=rng, d=D, p=P, kappa=KAPPA, noise_std=NOISE_STD)
    x, y = problem.sample(N, rng=rng)
    test = problem.sample(N_TEST, rng=rng)
    grid = recorded_iterations(iterations)
    out: dict[str, list] = {key: [] for key in CURVES + ("test_risk", "step", "seconds")}
    for options in algorithm.METHODS.values():
        result = algorithm.train(x, y, **options, iterations=iterations, problem=problem,
                                 test=test, test_every=TEST_EVERY,
                                 rng=np.random.default_rng(100 + seed), progress=progress)
        if result.diverged:
            raise RuntimeError(f"seed {seed}, options {options}: training diverged")
        for key in CURVES:
            out[key].append(result.history[key][grid])
        out["test_risk"].append(result.history["test_risk"])
        out["step"].append(result.step)
        out["seconds"].append(result.history["time"][-1])
    sigma_hat, m_hat = population.empirical_moments(x, y)
    history = {f"{key}_seed{seed}": np.column_stack(values) if key in CURVES + ("test_risk",)
               else np.asarray(values) for key, values in out.items()}
    history[f"ols_fit_excess_risk_seed{seed}"] = np.asarray(
        population.linear_excess_risk(m_hat, problem.Sigma, problem.M))
    return history


@register("paper1_defaults")
def paper1_defaults(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Part I defaults (d=10, p=20, n=500): Algorithm 1 vs random+precond+reg, GD, SGD, Adam."""
    iterations = ITERATIONS if full else PREFIX_ITERATIONS
    seeds = SEEDS if full else SEEDS[:1]
    history: dict[str, np.ndarray] = {
        "iteration": recorded_iterations(iterations),
        "test_iteration": np.unique(np.r_[np.arange(0, iterations + 1, TEST_EVERY), iterations]),
        "ols_formula": np.asarray(population.ols_excess_risk(N, D, P, NOISE_STD)),
    }
    for seed in seeds:
        history.update(run_defaults_seed(seed, iterations=iterations, progress=progress))
    config = dict(d=D, p=P, n=N, kappa=KAPPA, noise_std=NOISE_STD, seeds=list(seeds),
                  iterations=iterations, n_test=N_TEST, test_every=TEST_EVERY,
                  methods=list(algorithm.METHODS), method_options=algorithm.METHODS,
                  init_scale=0.3, batch_size=32, adam_learning_rate=1e-2, step_scale=0.5,
                  grid="every iteration up to 100, then every 10th",
                  seeding="problem, train, test from default_rng(s); init and SGD batches "
                          "from default_rng(100 + s)")
    history["config"] = np.asarray(json.dumps(config))
    return history
