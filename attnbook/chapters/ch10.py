"""Chapter 10 (Langevin training of attention and LoRA): its models, stored runs and temperatures.

The chapter (``notebooks/ch10_langevin.ipynb``) replays the stored runs named here and reads its
temperatures with :func:`shared_temperatures`; its Reproduction report page
(``notebooks/report_ch10_langevin.ipynb``) loads the temperature runs with
:func:`temperature_runs` and reads Theorem 3.3 on them, fitting their relaxation curves with
:func:`relaxation_fits`. The runs themselves are configured in :mod:`attnbook.experiments.part2`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from attnbook import experiments
from attnbook.claims import ch10 as claims

__all__ = ["MODELS", "KINDS", "run_name", "run_names", "temperature_runs",
           "shared_temperatures", "relaxation_fits"]

#: The chapter's two models, attention in ``(W_Q, W_K)`` and LoRA in ``(U, V)``.
MODELS = ("attention", "lora")
#: The chapter's two experiments per model, one regularizer at several temperatures
#: ("temperatures", sections "The expected loss converges to the Gibbs mean" and "Time to reach
#: epsilon"), and several regularizers at one temperature ("norms", section "Without a
#: regularizer the parameters drift along the symmetry orbit").
KINDS = ("temperatures", "norms")

Run = Mapping[str, np.ndarray]


def run_name(kind: str, model: str) -> str:
    """The stored run of experiment ``kind`` (one of :data:`KINDS`) on ``model`` (one of
    :data:`MODELS`), e.g. ``"langevin_temperatures_lora"``."""
    if kind not in KINDS or model not in MODELS:
        raise ValueError(f"expected kind in {KINDS} and model in {MODELS}, got {kind!r}, "
                         f"{model!r}")
    return f"langevin_{kind}_{model}"


def run_names(kinds: Sequence[str] = KINDS, models: Sequence[str] = MODELS) -> list[str]:
    """The stored runs of ``kinds`` on ``models``, kind by kind (the chapter's replay order)."""
    return [run_name(kind, model) for kind in kinds for model in models]


def temperature_runs(models: Sequence[str] = MODELS) -> dict[str, dict[str, np.ndarray]]:
    """The stored temperature runs of ``models``, by run name (checked loads).

    Each holds, per record time ``t`` and temperature ``s``, the mean over the chains of the
    regularized loss ``f(theta_t)`` (``loss_mean``, with ``loss_sem``), its long-time average
    ``F_s`` over the second half (``tail_mean``, ``tail_sem``) and the lowest loss ``f*`` that
    BFGS found (``f_star``).
    """
    return {name: experiments.load(name) for name in run_names(("temperatures",), models)}


def shared_temperatures(runs: Mapping[str, Run], models: Sequence[str] = MODELS) -> list[float]:
    """The temperatures ``s`` of the temperature runs in ``runs`` (a mapping from run name to
    run, as :func:`temperature_runs` returns), which every model shares: the chapter and the
    report index both models' arrays with them. Raises ``ValueError`` when the runs differ."""
    found = {model: experiments.config(runs[run_name("temperatures", model)])["temperatures"]
             for model in models}
    first = found[models[0]]
    if any(temperatures != first for temperatures in found.values()):
        raise ValueError(f"the temperature runs differ in their temperatures: {found}")
    return first


def relaxation_fits(runs: Mapping[str, Run], models: Sequence[str] = MODELS, *,
                    power_max: float | None = None
                    ) -> dict[str, tuple[claims.ApproachFit, np.ndarray, np.ndarray]]:
    """The chain-mean loss of each temperature run in ``runs`` (as :func:`temperature_runs`
    returns them) fitted by one and two exponential rates and a power law
    (:func:`attnbook.claims.ch10.exponential_approach`, with the run's correlation
    :func:`attnbook.claims.ch10.correlation_records` from its tail and the power at most
    ``power_max``), keyed ``"<model> s = <s>"`` model by model; each with the curve's times and
    standard errors, which :func:`attnbook.claims.ch10.calibrate` needs."""
    temperatures = shared_temperatures(runs, models)
    fits = {}
    for model in models:
        run = runs[run_name("temperatures", model)]
        for j, s in enumerate(temperatures):
            sem = run["loss_sem"][:, j]
            tau = claims.correlation_records(sem, run["tail_sem"][j])
            fit = claims.exponential_approach(run["times"], run["loss_mean"][:, j], sem,
                                              correlation=tau, power_max=power_max)
            fits[f"{model} s = {s:g}"] = (fit, run["times"], sem)
    return fits
