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

Three more for the constants of chapter 10, on the LoRA model only ([choice]: it is about three
times cheaper per step than the attention model, and the CPU budget is small); each is a grid
of independent seeded tasks (one function per task, stacked afterwards):

* ``langevin_constants_lora``: weight decay, log and power (lambda = 0.01) at three
  temperatures, chains started at the regularized minimizer; records the chain means of the
  slow observables ``log(||U|| / ||V||)`` (the position along the scale orbit) and
  ``||U||^2 - ||V||^2``, and of the loss, and (full run) their integrated autocorrelation
  times after a burn-in;
* ``langevin_mala_lora``: Euler-Maruyama against MALA at the same step, log form, three
  temperatures, from the minimizer: the step-size bias of the Gibbs mean;
* ``langevin_anneal_lora``: Theorem 3.3 as stated: for each epsilon the temperature is lowered
  to ``s = 2 epsilon / D`` and the chains start far away; records the chain-mean loss, whose
  first passage below ``f* + epsilon`` for good is the time to reach epsilon, and (full run)
  every chain's first passage below ``f* + eps`` for a grid of ``eps`` (the expected hitting
  time reading of the theorem).

The three grids store their arrays with the grid axes first and coordinate arrays naming them
(R regularizers, S temperatures, K records at the times ``times`` (K,)):
``langevin_constants_lora``: ``regularizers`` (R,), ``temperatures`` (S,),
``log_ratio_mean``, ``balance_mean``, ``loss_mean`` (R, S, K), and (full run)
``log_ratio_tau``, ``balance_tau``, ``loss_tau`` (R, S); ``langevin_mala_lora``: ``samplers``
(``em``, ``mala``), ``temperatures`` (S,), ``loss_mean`` (2, S, K), and (full run)
``gibbs_mean`` (2, S, 2: estimate and standard error) and ``acceptance`` (2, S; NaN for
Euler-Maruyama, which has no acceptance step); ``langevin_anneal_lora``: ``epsilons`` (E,),
``loss_mean``, ``loss_sem`` (E, K), and (full run) ``first_passage`` (E, len(passage_epsilons),
chains) and ``f_star``.

Every setting of a run is a field of its frozen settings dataclass (``TEMPERATURES[model]``,
``NORMS[model]``, ``CONSTANTS``, ``MALA``, ``ANNEAL``; ``experiments.settings(NAME)``), read
by the code from there; the stored ``config`` is ``dataclasses.asdict`` of it plus ``full``.

``full=False`` runs only the first ``PREFIX_STEPS`` steps of every run with the same seeds, so
its history is the prefix of the full one along the record axis (replayed with
``align=experiments.leading_block`` for the grids; see
:func:`attnbook.experiments.assert_prefix_matches`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Mapping

import numpy as np
from scipy.optimize import least_squares

from attnbook.seeds import stream
from attnlib import langevin, lora, qk_attention
from attnlib.regularizers import Regularizer, make_regularizer
from attnlib.villani import (FactorizedLoss, lower_bound_log_radius, minimize_data_loss,
                       orbit_constants, orbit_crossovers)
from . import TaskGrid, register, register_grid
from ._tasks import stack_tasks

MODELS = {"attention": qk_attention.make_problem, "lora": lora.make_problem}
#: steps of every replayed prefix (``full=False``)
PREFIX_STEPS = 250


@dataclass(frozen=True, kw_only=True)
class LangevinSettings:
    """The settings every Langevin run of this module has, each a [choice] of this book; the
    stored ``config`` of a run is ``dataclasses.asdict`` of its settings plus ``full``."""

    model: str                     # "attention" or "lora" (:data:`MODELS`)
    lam: float = 0.01              # strength lambda of every regularizer
    step: float = 0.02             # the step h of Euler-Maruyama (and MALA)
    chains: int
    n_steps: int                   # steps of the full run
    record_every: int              # steps between two records
    problem_seed: int = 0          # the seed of the problem (:func:`problem`)


@dataclass(frozen=True, kw_only=True)
class TemperatureSettings(LangevinSettings):
    """``langevin_temperatures_<model>``: one regularizer at several temperatures, all chains
    from one far common point (:func:`initial_point`)."""

    dim: int                       # D, the number of trained parameters (checked when run)
    regularizer: str = "log"
    temperatures: tuple[float, ...] = (0.02, 0.05, 0.2)
    chains: int = 128
    n_steps: int = 5000            # time 100
    record_every: int = 5
    prefix_steps: int = PREFIX_STEPS
    init_scale: float = 1.5        # a start far above the Gibbs mean, so the approach is visible
    init_seed: int = 1


@dataclass(frozen=True, kw_only=True)
class NormSettings(LangevinSettings):
    """``langevin_norms_<model>``: several regularizers at one temperature, all chains from one
    common point (:func:`initial_point`)."""

    regularizers: tuple[str, ...] = ("none", "weight_decay", "log", "power")
    temperature: float = 0.05
    chains: int = 64
    n_steps: int = 20000           # time 400
    record_every: int = 50
    prefix_steps: int = PREFIX_STEPS
    init_scale: float = 0.5
    init_seed: int = 1


@dataclass(frozen=True, kw_only=True)
class ConstantSettings(LangevinSettings):
    """``langevin_constants_<model>``: regularizers x temperatures, chains started at the
    regularized minimizer; autocorrelation times after discarding the fraction ``burn``."""

    regularizers: tuple[str, ...]
    temperatures: tuple[float, ...]
    burn: float = 0.2              # fraction of the records discarded before the autocorrelation


@dataclass(frozen=True, kw_only=True)
class MalaSettings(LangevinSettings):
    """``langevin_mala_<model>``: Euler-Maruyama against MALA (:data:`SAMPLERS`) at each
    temperature, chains started at the regularized minimizer."""

    regularizer: str
    temperatures: tuple[float, ...]


@dataclass(frozen=True, kw_only=True)
class AnnealSettings(LangevinSettings):
    """``langevin_anneal_<model>``: for each epsilon, chains at the temperature
    ``temperatures[i] = anneal_temperature(epsilons[i], D)`` from one far common point;
    first passages below ``f* + eps`` for every ``eps`` of ``passage_epsilons``."""

    regularizer: str
    epsilons: tuple[float, ...]
    temperatures: tuple[float, ...]
    passage_epsilons: tuple[float, ...] = tuple(float(e) for e in np.geomspace(0.4, 0.05, 7))
    init_scale: float
    init_seed: int = 1


def anneal_temperature(epsilon: float, dim: int) -> float:
    """[choice] The temperature for target accuracy epsilon: ``s = 2 epsilon / D``, so that
    the Gibbs excess ``s D_eff / 4 <= epsilon / 2`` whenever ``D_eff <= D``."""
    return 2.0 * epsilon / dim


#: the settings of ``langevin_temperatures_<model>``, by model
TEMPERATURES = {"attention": TemperatureSettings(model="attention", dim=12),
                "lora": TemperatureSettings(model="lora", dim=11)}
#: the settings of ``langevin_norms_<model>``, by model
NORMS = {model: NormSettings(model=model) for model in MODELS}
#: [choice] the constants of chapter 10 on the LoRA model only (about three times cheaper per
#: step than attention), at the temperatures of ``langevin_temperatures_lora``
CONSTANTS = ConstantSettings(model="lora", regularizers=("weight_decay", "log", "power"),
                             temperatures=TEMPERATURES["lora"].temperatures, chains=64,
                             n_steps=20000, record_every=25)     # time 400, every 0.5
#: Euler-Maruyama against MALA for time 100 (Gibbs means over the second half)
MALA = MalaSettings(model="lora", regularizer="log", temperatures=CONSTANTS.temperatures,
                    chains=64, n_steps=5000, record_every=5)
_EPSILONS = (0.4, 0.2, 0.1, 0.05)     # the accuracies of ANNEAL, whose temperatures they set
#: Theorem 3.3 for time 100 from the far start of ``langevin_temperatures_lora``
ANNEAL = AnnealSettings(model="lora", regularizer="log", epsilons=_EPSILONS,
                        temperatures=tuple(anneal_temperature(eps, TEMPERATURES["lora"].dim)
                                           for eps in _EPSILONS),
                        init_scale=TEMPERATURES["lora"].init_scale, chains=64, n_steps=5000,
                        record_every=5)
del _EPSILONS


def problem(model: str, regularizer: str, *, lam: float, seed: int) -> FactorizedLoss:
    """The problem of ``model`` ('attention' or 'lora') drawn from ``default_rng(seed)``, with
    the named regularizer of strength ``lam``."""
    if model not in MODELS:
        raise ValueError(f"model must be one of {sorted(MODELS)}, got {model!r}")
    return MODELS[model](rng=np.random.default_rng(seed),
                         regularizer=make_regularizer(regularizer, lam))


def _problem(settings: LangevinSettings, regularizer: str) -> FactorizedLoss:
    return problem(settings.model, regularizer, lam=settings.lam, seed=settings.problem_seed)


def initial_point(prob: FactorizedLoss, chains: int, scale: float, *, seed: int) -> np.ndarray:
    """All chains start at one point with i.i.d. N(0, scale^2) entries (``default_rng(seed)``)."""
    start = scale * np.random.default_rng(seed).standard_normal(prob.dim)
    return np.tile(start, (chains, 1))


def blocks(prob: FactorizedLoss) -> dict[str, slice]:
    """Slices of the two trained blocks in the flat parameter vector."""
    d1 = prob.block_dims[0]
    return {"W1": slice(0, d1), "W2": slice(d1, prob.dim)}


def lowest_loss(prob: FactorizedLoss, *, seed: int, starts: int = 8) -> float:
    """Lowest regularized loss over BFGS runs from the teacher and ``starts - 1`` random points
    (drawn from ``default_rng(seed + 100)``, ``seed`` the problem's seed)."""
    rng = stream("start", seed)
    points = [prob.theta_teacher] + [rng.standard_normal(prob.dim) for _ in range(starts - 1)]
    best = np.inf
    for point in points:
        try:
            theta, _ = minimize_data_loss(prob, point, gtol=1e-8)
        except RuntimeError:
            continue
        best = min(best, float(prob.loss(theta)))
    return best


def _temperatures(settings: TemperatureSettings, full: bool, progress: bool
                  ) -> dict[str, np.ndarray]:
    prob = _problem(settings, settings.regularizer)
    if prob.dim != settings.dim:
        raise ValueError(f"settings.dim must be the problem's dimension {prob.dim}, got "
                         f"{settings.dim}")
    n_steps = settings.n_steps if full else settings.prefix_steps
    means, sems, norms, tails, tail_sems = [], [], [], [], []
    for i, s in enumerate(settings.temperatures):
        run = langevin.euler_maruyama(
            prob.loss_and_grad_flat,
            initial_point(prob, settings.chains, settings.init_scale, seed=settings.init_seed),
            step=settings.step, temperature=s, n_steps=n_steps,
            record_every=settings.record_every, blocks=blocks(prob),
            rng=np.random.default_rng(1000 + i), progress=progress)
        mean, sem = langevin.chain_mean(run.loss)
        means.append(mean)
        sems.append(sem)
        norms.append(run.block_norms.mean(axis=1))
        if full:
            tail, tail_sem = langevin.tail_mean(run.loss, fraction=0.5)
            tails.append(tail)
            tail_sems.append(tail_sem)
    history = {
        "times": run.times,
        "loss_mean": np.stack(means, axis=1),       # (R, temperatures)
        "loss_sem": np.stack(sems, axis=1),
        "norm_mean": np.stack(norms, axis=1),       # (R, temperatures, 2)
    }
    if full:
        history.update(tail_mean=np.array(tails), tail_sem=np.array(tail_sems),
                       f_star=np.array(lowest_loss(prob, seed=settings.problem_seed)))
    return history


def _norms(settings: NormSettings, full: bool, progress: bool) -> dict[str, np.ndarray]:
    n_steps = settings.n_steps if full else settings.prefix_steps
    means, norms = [], []
    for i, name in enumerate(settings.regularizers):
        prob = _problem(settings, name)
        run = langevin.euler_maruyama(
            prob.loss_and_grad_flat,
            initial_point(prob, settings.chains, settings.init_scale, seed=settings.init_seed),
            step=settings.step, temperature=settings.temperature, n_steps=n_steps,
            record_every=settings.record_every, blocks=blocks(prob),
            rng=np.random.default_rng(2000 + i), progress=progress)
        means.append(run.loss.mean(axis=1))
        norms.append(run.block_norms.mean(axis=1))
    return {
        "times": run.times,
        "loss_mean": np.stack(means, axis=1),       # (R, regularizers)
        "norm_mean": np.stack(norms, axis=1),       # (R, regularizers, 2)
    }


@register("langevin_temperatures_attention", settings=TEMPERATURES["attention"])
def temperatures_attention(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Langevin on the log-regularized attention loss at three temperatures (chapter 10)."""
    return _temperatures(TEMPERATURES["attention"], full, progress)


@register("langevin_temperatures_lora", settings=TEMPERATURES["lora"])
def temperatures_lora(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Langevin on the log-regularized LoRA loss at three temperatures (chapter 10)."""
    return _temperatures(TEMPERATURES["lora"], full, progress)


@register("langevin_norms_attention", settings=NORMS["attention"])
def norms_attention(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Block norms of W_Q, W_K under Langevin with four regularizers (chapter 10)."""
    return _norms(NORMS["attention"], full, progress)


@register("langevin_norms_lora", settings=NORMS["lora"])
def norms_lora(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Block norms of U, V under Langevin with four regularizers (chapter 10)."""
    return _norms(NORMS["lora"], full, progress)


# ----- the constants of chapter 10: grids of independent seeded tasks ----------------------
def regularized_minimizer(prob: FactorizedLoss) -> np.ndarray:
    """A minimizer of the regularized loss, by BFGS from the teacher."""
    return minimize_data_loss(prob, prob.theta_teacher, gtol=1e-8)[0]


def _times(settings: LangevinSettings, full: bool) -> np.ndarray:
    """The recorded times of a run of ``settings`` (full run or prefix)."""
    n_steps = settings.n_steps if full else PREFIX_STEPS
    return settings.step * settings.record_every * np.arange(n_steps // settings.record_every + 1)


def constants_task(settings: ConstantSettings, regularizer: str, s: float, index: int, *,
                   full: bool, progress: bool = False) -> dict[str, np.ndarray]:
    """One task of ``langevin_constants``: keys ``<observable>_mean`` (chain means per
    record) and, in the full run, ``<observable>_tau`` (autocorrelation time in time units,
    records after the burn-in)."""
    prob = _problem(settings, regularizer)
    start = np.tile(regularized_minimizer(prob), (settings.chains, 1))
    run = langevin.euler_maruyama(prob.loss_and_grad_flat, start, step=settings.step,
                                  temperature=s,
                                  n_steps=settings.n_steps if full else PREFIX_STEPS,
                                  record_every=settings.record_every, blocks=blocks(prob),
                                  rng=np.random.default_rng(3000 + index), progress=progress)
    first, second = run.block_norms[..., 0], run.block_norms[..., 1]
    series = {"log_ratio": np.log(first) - np.log(second),
              "balance": first ** 2 - second ** 2, "loss": run.loss}
    out = {f"{name}_mean": values.mean(axis=1) for name, values in series.items()}
    if full:
        burn = int(settings.burn * run.times.size)
        for name, values in series.items():
            out[f"{name}_tau"] = np.array(langevin.autocorrelation_time(values[burn:])
                                          * settings.step * settings.record_every)
    return out


def _constants_history(settings: ConstantSettings, full: bool,
                       results: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    shape = (len(settings.regularizers), len(settings.temperatures))
    return {"regularizers": np.asarray(settings.regularizers),
            "temperatures": np.asarray(settings.temperatures),
            **stack_tasks(results, shape=shape), "times": _times(settings, full)}


@register_grid("langevin_constants_lora", settings=CONSTANTS)
def constants_lora(full: bool = True) -> TaskGrid:
    """Autocorrelation times of slow observables, LoRA, three regularizers x temperatures."""
    tasks = [(reg, s) for reg in CONSTANTS.regularizers for s in CONSTANTS.temperatures]
    return TaskGrid([(reg, s, i) for i, (reg, s) in enumerate(tasks)],
                    partial(constants_task, CONSTANTS, full=full),
                    partial(_constants_history, CONSTANTS, full))


#: The samplers of ``langevin_mala_lora``: Euler-Maruyama and MALA.
SAMPLERS = ("em", "mala")


def mala_task(settings: MalaSettings, sampler: str, s: float, index: int, *, full: bool
              ) -> dict[str, np.ndarray]:
    """One task of ``langevin_mala``: the chain-mean loss of ``sampler`` ('em' or 'mala') and,
    in the full run, the Gibbs-mean estimate over the second half with its standard error."""
    prob = _problem(settings, settings.regularizer)
    start = np.tile(regularized_minimizer(prob), (settings.chains, 1))
    kwargs = dict(step=settings.step, temperature=s,
                  n_steps=settings.n_steps if full else PREFIX_STEPS,
                  record_every=settings.record_every, rng=np.random.default_rng(4000 + index))
    if sampler == "mala":
        run = langevin.mala(prob.loss_and_grad_flat, start, **kwargs)
    else:
        run = langevin.euler_maruyama(prob.loss_and_grad_flat, start, **kwargs)
    out = {"loss_mean": run.loss.mean(axis=1)}
    if full:
        mean, sem = langevin.tail_mean(run.loss, fraction=0.5)
        out["gibbs_mean"] = np.array([mean, sem])
        if sampler == "mala":
            out["acceptance"] = np.array(run.acceptance)
    return out


def _mala_history(settings: MalaSettings, full: bool, results: list[Mapping[str, np.ndarray]]
                  ) -> dict[str, np.ndarray]:
    return {"samplers": np.asarray(SAMPLERS), "temperatures": np.asarray(settings.temperatures),
            **stack_tasks(results, shape=(len(SAMPLERS), len(settings.temperatures))),
            "times": _times(settings, full)}


@register_grid("langevin_mala_lora", settings=MALA)
def mala_lora(full: bool = True) -> TaskGrid:
    """Euler-Maruyama against MALA at h = 0.02 on the log-regularized LoRA loss."""
    tasks = [(sampler, s) for sampler in SAMPLERS for s in MALA.temperatures]
    return TaskGrid([(sampler, s, i) for i, (sampler, s) in enumerate(tasks)],
                    partial(mala_task, MALA, full=full), partial(_mala_history, MALA, full))


def anneal_task(settings: AnnealSettings, epsilon: float, s: float, index: int, *, full: bool,
                progress: bool = False) -> dict[str, np.ndarray]:
    """One task of ``langevin_anneal``: chain mean and standard error of the loss at
    temperature ``s`` (which must be :func:`anneal_temperature` of ``epsilon``) from the far
    common start."""
    prob = _problem(settings, settings.regularizer)
    if s != anneal_temperature(epsilon, prob.dim):
        raise ValueError(f"s must be anneal_temperature({epsilon}, {prob.dim}) = "
                         f"{anneal_temperature(epsilon, prob.dim)}, got {s}")
    run = langevin.euler_maruyama(
        prob.loss_and_grad_flat,
        initial_point(prob, settings.chains, settings.init_scale, seed=settings.init_seed),
        step=settings.step, temperature=s, n_steps=settings.n_steps if full else PREFIX_STEPS,
        record_every=settings.record_every, rng=np.random.default_rng(5000 + index),
        progress=progress)
    mean, sem = langevin.chain_mean(run.loss)
    out = {"loss_mean": mean, "loss_sem": sem}
    if full:
        out["first_passage"] = first_passage_times(
            run.times, run.loss - lowest_loss(prob, seed=settings.problem_seed),
            settings.passage_epsilons)
    return out


def first_passage_times(times: np.ndarray, excess: np.ndarray, epsilons: tuple[float, ...]
                        ) -> np.ndarray:
    """Per chain, the first recorded time with ``excess <= eps`` (``excess`` of shape
    ``(records, chains)``, e.g. loss minus ``f*``): shape ``(len(epsilons), chains)``, ``inf``
    for a chain that never gets within ``eps``. Their mean over chains estimates the expected
    hitting time ``E[inf {t : f(theta_t) - f* <= eps}]``."""
    out = np.full((len(epsilons), excess.shape[1]), np.inf)
    for i, eps in enumerate(epsilons):
        below = excess <= eps
        hit = below.any(axis=0)
        out[i, hit] = times[np.argmax(below, axis=0)[hit]]
    return out


def _anneal_history(settings: AnnealSettings, full: bool,
                    results: list[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    out = {"epsilons": np.asarray(settings.epsilons), **stack_tasks(results),
           "times": _times(settings, full)}
    if full:
        out["f_star"] = np.array(lowest_loss(_problem(settings, settings.regularizer),
                                             seed=settings.problem_seed))
    return out


@register_grid("langevin_anneal_lora", settings=ANNEAL)
def anneal_lora(full: bool = True) -> TaskGrid:
    """Theorem 3.3 with s = 2 epsilon / D: time to reach f* + epsilon, LoRA, log form."""
    return TaskGrid([(eps, s, i) for i, (eps, s) in enumerate(zip(ANNEAL.epsilons,
                                                                   ANNEAL.temperatures))],
                    partial(anneal_task, ANNEAL, full=full), partial(_anneal_history, ANNEAL, full))

# ----- readings of Theorem 3.3 at a fixed temperature (chapter 10) --------------------------
OFFSET_FACTOR = 2.0     # [choice] eps "above the Gibbs offset" means eps >= 2 (F_s - f*)
READING_POINTS = 8      # [choice] eps values per fixed-temperature reading


def reach_times(times: np.ndarray, excess: np.ndarray, offset: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Fixed-temperature reading of the time to reach ``f* + eps`` by the chain-mean loss.

    ``excess`` is the chain-mean loss minus ``f*`` per record and ``offset = F_s - f*`` the
    Gibbs offset at this temperature. Returns ``READING_POINTS`` values of ``eps``, geometric
    from ``excess[0] / 2`` down to ``OFFSET_FACTOR * offset``, and for each the first recorded
    time after which the excess stays ``<= eps`` (:func:`attnlib.langevin.hitting_times`; NaN
    if never); two empty arrays when the start is not that far above the offset."""
    top, bottom = excess[0] / 2, OFFSET_FACTOR * offset
    if top <= bottom:
        return np.empty(0), np.empty(0)
    eps = np.geomspace(top, bottom, READING_POINTS)
    return eps, langevin.hitting_times(times, np.maximum(excess, 0.0), eps)


def expected_hitting_times(first_passage: np.ndarray, epsilons: tuple[float, ...],
                           offset: float) -> tuple[np.ndarray, np.ndarray]:
    """Expected-hitting-time reading: for each ``eps >= OFFSET_FACTOR * offset`` of
    ``epsilons``, the mean over chains of the first passage below ``f* + eps``
    (``first_passage`` of shape ``(len(epsilons), chains)``, see :func:`first_passage_times`);
    NaN where some chain never got there in the run (the mean would be censored)."""
    eps = np.asarray(epsilons, dtype=float)
    keep = eps >= OFFSET_FACTOR * offset
    passages = first_passage[keep]
    means = np.where(np.isfinite(passages).all(axis=1), passages.mean(axis=1), np.nan)
    return eps[keep], means


# ----- Theorems 3.1 and 3.2 over other data and sizes (chapters 8 and 9) --------------------
#: [choice] the attention grid is chapter 8's instance (seed 8, n = 6, N = 5, d = 3, d_k = 2,
#: Gaussian X), one size changed at a time, and two other laws of the inputs X (unit variance)
INSTANCE_SEED = 8
INSTANCE_GRID = (
    dict(n=6, N=5, d=3, d_k=2, law="gaussian"), dict(n=12, N=5, d=3, d_k=2, law="gaussian"),
    dict(n=6, N=8, d=3, d_k=2, law="gaussian"), dict(n=6, N=5, d=4, d_k=3, law="gaussian"),
    dict(n=6, N=5, d=3, d_k=1, law="gaussian"), dict(n=6, N=5, d=3, d_k=2, law="student-t3"),
    dict(n=6, N=5, d=3, d_k=2, law="uniform"))
#: [choice] the LoRA grid is chapter 9's instance (seed 0, n = 20, d = 3, width m = 8, rank r = 2,
#: Gaussian x), one size changed at a time (n, d, m, r both ways) and the two other input laws
LORA_INSTANCE_SEED = 0
LORA_INSTANCE_GRID = tuple(
    dict(dict(n=20, d=3, width=8, rank=2, law="gaussian"), **change)
    for change in ({}, dict(n=40), dict(d=4), dict(d=5), dict(width=16), dict(rank=1),
                   dict(rank=3), dict(law="student-t3"), dict(law="uniform")))
LORA_NOISE = 0.1
LORA_WARM_DECAY = 1e-3


def _inputs(law: str, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Inputs of unit variance drawn from ``law``: ``"student-t3"`` (Student t with 3 degrees
    of freedom over sqrt(3), heavy tails) or ``"uniform"`` (on ``[-sqrt 3, sqrt 3]``)."""
    if law == "student-t3":
        return rng.standard_t(3, size=shape) / np.sqrt(3.0)
    if law == "uniform":
        return rng.uniform(-np.sqrt(3.0), np.sqrt(3.0), size=shape)
    raise ValueError(f"law must be 'gaussian', 'student-t3' or 'uniform', got {law!r}")


def attention_instance(*, n: int, N: int, d: int, d_k: int, law: str,
                       seed: int = INSTANCE_SEED) -> qk_attention.AttentionProblem:
    """Chapter 8's synthetic problem (``qk_attention.make_problem``, noise 0.5) with the
    inputs ``X`` drawn from ``law``: ``"gaussian"`` (the default draw), ``"student-t3"`` or
    ``"uniform"`` (:func:`_inputs`, unit variance, from ``default_rng(seed + 100)``); the targets
    are the teacher's outputs on those inputs plus the same noise level."""
    problem = qk_attention.make_problem(rng=np.random.default_rng(seed), n=n, N=N, d=d,
                                        d_k=d_k, noise_std=0.5)
    if law == "gaussian":
        return problem
    rng = stream("inputs", seed)
    X = _inputs(law, problem.X.shape, rng)
    clean = qk_attention.AttentionProblem(X=X, Y=np.zeros_like(problem.Y), W_V=problem.W_V,
                                          d_k=d_k)
    Y = clean.predict(problem.theta_teacher) + 0.5 * rng.standard_normal(problem.Y.shape)
    return qk_attention.AttentionProblem(X=X, Y=Y, W_V=problem.W_V, d_k=d_k,
                                         theta_teacher=problem.theta_teacher)


def lora_instance(*, n: int, d: int, width: int, rank: int, law: str,
                  seed: int = LORA_INSTANCE_SEED) -> lora.LoRAProblem:
    """Chapter 9's synthetic problem (``lora.make_problem``, noise ``LORA_NOISE``) with the
    inputs ``x`` drawn from ``law`` as in :func:`attention_instance`; the targets are the
    teacher's outputs on those inputs plus the same noise level."""
    problem = lora.make_problem(rng=np.random.default_rng(seed), n=n, d=d, width=width,
                                rank=rank, noise_std=LORA_NOISE)
    if law == "gaussian":
        return problem
    rng = stream("inputs", seed)
    x = _inputs(law, problem.x.shape, rng)
    clean = lora.LoRAProblem(x=x, y=np.zeros(n), a=problem.a, W_pre=problem.W_pre, rank=rank)
    y = clean.predict(problem.theta_teacher) + LORA_NOISE * rng.standard_normal(n)
    return lora.LoRAProblem(x=x, y=y, a=problem.a, W_pre=problem.W_pre, rank=rank,
                            theta_teacher=problem.theta_teacher)


def lora_interpolates(problem: lora.LoRAProblem) -> bool:
    """True when the rank-``r`` updates have more degrees of freedom than there are samples,
    ``r (m + d - r) > n``: generic data are then fit exactly, and the global minima of the
    data loss form a continuum (not one ``GL(r)`` orbit), so which one a solver reaches depends
    on its path (and round-off moves the path)."""
    width, d = problem.a.size, problem.x.shape[1]
    return problem.rank * (width + d - problem.rank) > problem.n


def lora_stationary_point(problem: lora.LoRAProblem) -> tuple[np.ndarray, float]:
    """Chapter 9's stationary point of the LoRA data loss, by the first of three solver paths
    that reaches one. The warm start is BFGS with a tiny weight decay (``LORA_WARM_DECAY``)
    from the teacher, a balanced and well-conditioned start; then (1) a trust-region
    least-squares fit of the residuals from the warm start, then BFGS without the decay (the
    polish); (2) BFGS alone from the warm start; (3) the fit from the teacher, then BFGS.
    Path (1) first: its few Gauss-Newton-like steps reach the same stationary point on every
    CPU setting tried, where BFGS alone, over hundreds of iterations, can reach another one
    (the data loss has several) when round-off differs. The point returned is the
    balanced point of the stationary point's ``GL(r)`` orbit, ``(P S^(1/2), S^(1/2) Q^T)``
    from the SVD ``U V = P S Q^T`` (:meth:`attnlib.lora.LoRAProblem.svd_factorization`):
    where the polish stops along the flat orbit depends on round-off, the balanced point only
    on the product ``U V``, which the stationarity pins (unless the instance interpolates,
    :func:`lora_interpolates`). Returns ``(theta*, ||grad L(theta*)||)``; raises
    ``RuntimeError`` naming each path's failure when none finds a stationary point."""
    warm, _ = minimize_data_loss(
        problem.with_regularizer(Regularizer("weight_decay", LORA_WARM_DECAY)),
        problem.theta_teacher, gtol=1e-9)

    def fit_residuals(start: np.ndarray) -> np.ndarray:
        return least_squares(lambda theta: problem.predict(theta) - problem.y, start,
                             method="trf", xtol=1e-15, ftol=1e-15, gtol=1e-15).x

    paths = {"least squares from the warm start, then BFGS": lambda: fit_residuals(warm),
             "BFGS from the warm start": lambda: warm,
             "least squares from the teacher, then BFGS": lambda: fit_residuals(
                 problem.theta_teacher)}
    failures = []
    for path, start in paths.items():
        try:
            polished, _ = minimize_data_loss(problem, start())
        except RuntimeError as exc:
            failures.append(f"{path}: {exc}")
            continue
        balanced = problem.svd_factorization(polished, 0.5)
        return balanced, float(np.linalg.norm(problem.gradient(balanced)))
    raise RuntimeError("no stationary point of the LoRA data loss found by any solver path; "
                       + "; ".join(failures))


def villani_evidence(problem: FactorizedLoss, theta_star: np.ndarray,
                     regularizers: Mapping[str, Regularizer], s: float
                     ) -> dict[str, tuple[float, float]]:
    """Chapter 8's two pieces of evidence for the Villani condition on one instance, per
    regularizer: ``log10`` of the decisive crossover radius on the scale orbit through the
    stationary point ``theta_star`` of the data loss (:func:`attnlib.villani.orbit_crossovers`),
    and ``log10 ||theta||`` beyond which the every-direction lower bound ``B`` is positive
    (:func:`attnlib.villani.lower_bound_log_radius` with the instance's derivative constants
    and its larger block; ``inf`` if never)."""
    consts = orbit_constants(problem, theta_star)
    grad_constant, laplacian_constant = problem.derivative_constants()
    out = {}
    for name, regularizer in regularizers.items():
        orbit = orbit_crossovers(consts, regularizer, s).decisive / np.log(10)
        bound = lower_bound_log_radius(regularizer, s, grad_constant=grad_constant,
                                       laplacian_constant=laplacian_constant,
                                       block_dim=max(problem.block_dims)) / (2 * np.log(10))
        out[name] = (float(orbit), float(bound))
    return out


def attention_villani_evidence(problem: qk_attention.AttentionProblem,
                               regularizers: Mapping[str, Regularizer], s: float
                               ) -> dict[str, tuple[float, float]]:
    """:func:`villani_evidence` at the stationary point BFGS finds from the teacher."""
    theta_star, _ = minimize_data_loss(problem, problem.theta_teacher)
    return villani_evidence(problem, theta_star, regularizers, s)


def lora_grid_evidence(regularizers: Mapping[str, Regularizer], s: float, *,
                       grid: tuple[dict, ...] = LORA_INSTANCE_GRID
                       ) -> tuple[dict[str, dict[str, tuple[float, float]]], dict[str, float],
                                  dict[str, str]]:
    """:func:`villani_evidence` on every LoRA instance of ``grid`` (:func:`lora_instance`) at
    the stationary point of :func:`lora_stationary_point`. Returns ``(evidence, grad_norms,
    untested)``, keyed by an instance label (which ends in ``(interpolates)`` where
    :func:`lora_interpolates`: there the orbit crossover depends on which global minimum the
    solver reached): the evidence and ``||grad L(theta*)||`` where a stationary point was
    found, and the reason where none was (that instance is not tested)."""
    evidence: dict[str, dict[str, tuple[float, float]]] = {}
    grad_norms: dict[str, float] = {}
    untested: dict[str, str] = {}
    for sizes in grid:
        problem = lora_instance(**sizes)
        label = (f"n={sizes['n']} d={sizes['d']} m={sizes['width']} r={sizes['rank']} "
                 f"{sizes['law']}" + (" (interpolates)" if lora_interpolates(problem) else ""))
        try:
            theta_star, grad_norms[label] = lora_stationary_point(problem)
        except RuntimeError as error:
            untested[label] = str(error)
            continue
        evidence[label] = villani_evidence(problem, theta_star, regularizers, s)
    return evidence, grad_norms, untested
