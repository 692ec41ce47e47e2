"""Stored Langevin runs of Part II (chapter 10): attention in (W_Q, W_K) and LoRA in (U, V).

Two families of configurations, each for both models (``attention``: ``qk_attention.make_problem``
with its defaults, D = 12; ``lora``: ``lora.make_problem`` with its defaults, D = 11; both with
the problem seed 0):

* ``langevin_temperatures_<model>``: the log-amplified regularizer (lambda = 0.01) at three
  temperatures s; all chains start from one common point; records the chain mean of the loss
  and its standard error, the mean block norms, and (full run only) the long-time average
  over the second half (the estimate of the Gibbs mean) and the lowest loss found by BFGS.
* ``langevin_norms_<model>``: one temperature, four regularizers (none, weight decay, log,
  power; lambda = 0.01); records the chain means of both block norms and of the loss; the
  common start has i.i.d. N(0, 0.5^2) entries.

``full=False`` runs only the first ``PREFIX_STEPS`` steps of every run with the same seeds, so
its history is the prefix of the full one (see :func:`attnlib.experiments.assert_prefix_matches`).
"""

from __future__ import annotations

import json

import numpy as np

from .. import langevin, lora, qk_attention
from ..regularizers import make_regularizer
from ..villani import FactorizedLoss, minimize_data_loss
from . import register

MODELS = {"attention": qk_attention.make_problem, "lora": lora.make_problem}
PROBLEM_SEED = 0
INIT_SEED = 1
LAM = 0.01
STEP = 0.02
PREFIX_STEPS = 250

TEMPERATURES = (0.02, 0.05, 0.2)
TEMPERATURE_CHAINS = 128
TEMPERATURE_STEPS = 5000        # time 100
TEMPERATURE_RECORD = 5
TEMPERATURE_INIT_SCALE = 1.5     # a start far above the Gibbs mean, so the approach is visible
NORM_INIT_SCALE = 0.5

NORM_REGULARIZERS = ("none", "weight_decay", "log", "power")
NORM_TEMPERATURE = 0.05
NORM_CHAINS = 64
NORM_STEPS = 20000              # time 400
NORM_RECORD = 50


def problem(model: str, regularizer: str, lam: float = LAM) -> FactorizedLoss:
    """The seeded problem of ``model`` ('attention' or 'lora') with the named regularizer."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {model!r}")
    return MODELS[model](rng=np.random.default_rng(PROBLEM_SEED),
                         regularizer=make_regularizer(regularizer, lam))


def initial_point(prob: FactorizedLoss, chains: int, scale: float) -> np.ndarray:
    """All chains start at one point with i.i.d. N(0, scale^2) entries (seed ``INIT_SEED``)."""
    start = scale * np.random.default_rng(INIT_SEED).standard_normal(prob.dim)
    return np.tile(start, (chains, 1))


def blocks(prob: FactorizedLoss) -> dict[str, slice]:
    """Slices of the two trained blocks in the flat parameter vector."""
    d1 = prob.block_dims[0]
    return {"W1": slice(0, d1), "W2": slice(d1, prob.dim)}


def lowest_loss(prob: FactorizedLoss, *, starts: int = 8) -> float:
    """Lowest regularized loss over BFGS runs from the teacher and ``starts - 1`` random points."""
    rng = np.random.default_rng(PROBLEM_SEED + 100)
    points = [prob.theta_teacher] + [rng.standard_normal(prob.dim) for _ in range(starts - 1)]
    best = np.inf
    for point in points:
        try:
            theta, _ = minimize_data_loss(prob, point, gtol=1e-8)
        except RuntimeError:
            continue
        best = min(best, float(prob.loss(theta)))
    return best


def _temperatures(model: str, full: bool, progress: bool) -> dict[str, np.ndarray]:
    prob = problem(model, "log")
    n_steps = TEMPERATURE_STEPS if full else PREFIX_STEPS
    means, sems, norms, tails, tail_sems = [], [], [], [], []
    for i, s in enumerate(TEMPERATURES):
        run = langevin.euler_maruyama(
            prob.loss_and_grad_flat,
            initial_point(prob, TEMPERATURE_CHAINS, TEMPERATURE_INIT_SCALE), step=STEP,
            temperature=s, n_steps=n_steps, record_every=TEMPERATURE_RECORD,
            blocks=blocks(prob), rng=np.random.default_rng(1000 + i), progress=progress)
        mean, sem = langevin.chain_mean(run.loss)
        means.append(mean)
        sems.append(sem)
        norms.append(run.block_norms.mean(axis=1))
        if full:
            tail, tail_sem = langevin.tail_mean(run.loss, fraction=0.5)
            tails.append(tail)
            tail_sems.append(tail_sem)
    config = dict(model=model, regularizer="log", lam=LAM, step=STEP, temperatures=TEMPERATURES,
                  chains=TEMPERATURE_CHAINS, n_steps=TEMPERATURE_STEPS,
                  record_every=TEMPERATURE_RECORD, prefix_steps=PREFIX_STEPS,
                  init_scale=TEMPERATURE_INIT_SCALE,
                  problem_seed=PROBLEM_SEED, init_seed=INIT_SEED, dim=prob.dim)
    history = {
        "times": run.times,
        "loss_mean": np.stack(means, axis=1),       # (R, temperatures)
        "loss_sem": np.stack(sems, axis=1),
        "norm_mean": np.stack(norms, axis=1),       # (R, temperatures, 2)
    }
    if full:
        history.update(tail_mean=np.array(tails), tail_sem=np.array(tail_sems),
                       f_star=np.array(lowest_loss(prob)), config=np.array(json.dumps(config)))
    return history


def _norms(model: str, full: bool, progress: bool) -> dict[str, np.ndarray]:
    n_steps = NORM_STEPS if full else PREFIX_STEPS
    means, norms = [], []
    for i, name in enumerate(NORM_REGULARIZERS):
        prob = problem(model, name)
        run = langevin.euler_maruyama(
            prob.loss_and_grad_flat, initial_point(prob, NORM_CHAINS, NORM_INIT_SCALE),
            step=STEP,
            temperature=NORM_TEMPERATURE, n_steps=n_steps, record_every=NORM_RECORD,
            blocks=blocks(prob), rng=np.random.default_rng(2000 + i), progress=progress)
        means.append(run.loss.mean(axis=1))
        norms.append(run.block_norms.mean(axis=1))
    config = dict(model=model, regularizers=NORM_REGULARIZERS, lam=LAM, step=STEP,
                  temperature=NORM_TEMPERATURE, chains=NORM_CHAINS, n_steps=NORM_STEPS,
                  record_every=NORM_RECORD, prefix_steps=PREFIX_STEPS,
                  init_scale=NORM_INIT_SCALE,
                  problem_seed=PROBLEM_SEED, init_seed=INIT_SEED)
    history = {
        "times": run.times,
        "loss_mean": np.stack(means, axis=1),       # (R, regularizers)
        "norm_mean": np.stack(norms, axis=1),       # (R, regularizers, 2)
    }
    if full:
        history["config"] = np.array(json.dumps(config))
    return history


@register("langevin_temperatures_attention")
def temperatures_attention(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Langevin on the log-regularized attention loss at three temperatures (chapter 10)."""
    return _temperatures("attention", full, progress)


@register("langevin_temperatures_lora")
def temperatures_lora(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Langevin on the log-regularized LoRA loss at three temperatures (chapter 10)."""
    return _temperatures("lora", full, progress)


@register("langevin_norms_attention")
def norms_attention(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Block norms of W_Q, W_K under Langevin with four regularizers (chapter 10)."""
    return _norms("attention", full, progress)


@register("langevin_norms_lora")
def norms_lora(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Block norms of U, V under Langevin with four regularizers (chapter 10)."""
    return _norms("lora", full, progress)
