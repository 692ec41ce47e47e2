"""Chapter 10 (Langevin training of attention and LoRA): its models, stored runs and temperatures.

The chapter (``notebooks/ch10_langevin.ipynb``) replays the stored runs named here and reads its
temperatures with :func:`shared_temperatures`; its Reproduction report page
(``notebooks/report_ch10_langevin.ipynb``) loads the temperature runs with
:func:`temperature_runs` and reads Theorem 3.3 on them, fitting their relaxation curves with
:func:`relaxation_fits`; the chapter's tables (the Gibbs offsets, the hitting times, the block
norms) are :func:`gibbs_offset_table`, :func:`hitting_table` and :func:`norm_table`. The runs
themselves are configured in :mod:`attnbook.experiments.part2`.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from attnbook import experiments
from attnbook.claims import ch10 as claims
from attnbook.tables import result_table

__all__ = ["MODELS", "KINDS", "run_name", "run_names", "temperature_runs",
           "shared_temperatures", "relaxation_fits", "EPSILONS", "gibbs_offset_table",
           "epsilon_grid", "hitting_table", "norm_table"]

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


# ---------------------------------------------------------------------------------------------
# The chapter's tables, so that its open cells show the idea and not the formatting.
# ---------------------------------------------------------------------------------------------

#: The number of values of epsilon per temperature run (section "Time to reach epsilon").
EPSILONS = 8


def gibbs_offset_table(runs: Mapping[str, Run], models: Sequence[str] = MODELS):
    """Per model and temperature ``s`` of the temperature runs in ``runs``: the minimum ``f*``,
    the Gibbs mean ``F_s`` (long-time average, with its standard error), the offset
    ``F_s - f*``, the equipartition value ``s D / 4``, their ratio and ``D_eff = 4 (F_s - f*) / s``
    (eq-ch10-offset), as a :func:`attnbook.tables.result_table`."""
    rows = []
    for model in models:
        run = runs[run_name("temperatures", model)]
        dim, f_star = experiments.config(run)["dim"], float(run["f_star"])
        for j, s in enumerate(shared_temperatures(runs, models)):
            excess = run["tail_mean"][j] - f_star
            rows.append([f"{model} (D = {dim})", f"{s:.2f}", f"{f_star:.4f}",
                         f"{run['tail_mean'][j]:.4f} +- {run['tail_sem'][j]:.4f}",
                         f"{excess:.4f}", f"{s * dim / 4:.4f}", f"{excess / (s * dim / 4):.2f}",
                         f"{4 * excess / s:.1f}"])
    return result_table(["model", "s", "f*", "F_s", "F_s - f*", "s D / 4", "ratio", "D_eff"],
                        rows)


def epsilon_grid(run: Run, j: int, count: int = EPSILONS) -> np.ndarray:
    """The values of epsilon for temperature ``j`` of a temperature run: ``count`` values,
    geometrically spaced from half the initial gap ``g(0) = |f(0) - F_s|`` down to three times
    the noise of the gap (the median standard error of a single-time mean plus that of
    ``F_s``). Raises ``ValueError`` when the start is too close to the Gibbs mean for that."""
    gap = np.abs(run["loss_mean"][:, j] - run["tail_mean"][j])
    noise = np.median(run["loss_sem"][:, j]) + run["tail_sem"][j]
    if not gap[0] / 2 > 3 * noise:
        raise ValueError(f"the start is too close to the Gibbs mean: g(0) / 2 = {gap[0] / 2:.3g} "
                         f"is not above three times the noise {noise:.3g}")
    return np.geomspace(gap[0] / 2, 3 * noise, count)


def hitting_table(hitting: Mapping[tuple[str, float], tuple[np.ndarray, np.ndarray]]):
    """Per ``(model, s)`` of ``hitting`` (``epsilon`` values of :func:`epsilon_grid` and their
    hitting times): the range of epsilon and of ``t_eps``, the noise (a third of the smallest
    epsilon), and the slopes ``d t_eps / d log(1/eps)`` of the first four and the last four
    points (eq-ch10-hitting), as a :func:`attnbook.tables.result_table`."""
    rows = []
    for (model, s), (eps, t_eps) in hitting.items():
        first = np.polyfit(np.log(1 / eps[:4]), t_eps[:4], 1)[0]
        late = np.polyfit(np.log(1 / eps[-4:]), t_eps[-4:], 1)[0]
        rows.append([model, f"{s:.2f}", f"{eps[0]:.3f} to {eps[-1]:.4f}", f"{eps[-1] / 3:.4f}",
                     f"{t_eps[0]:.1f} to {t_eps[-1]:.1f}", f"{first:.2f}", f"{late:.2f}"])
    return result_table(["model", "s", "eps", "noise", "t_eps", "slope, first four",
                         "last four"], rows)


def norm_table(runs: Mapping[str, Run], models: Sequence[str] = MODELS):
    """Per model and regularizer of the norm runs in ``runs``: the chain-mean block norms at a
    quarter of the run and at its end, and the mean loss over its second half, as a
    :func:`attnbook.tables.result_table` (section "Without a regularizer the parameters drift
    along the symmetry orbit")."""
    from attnbook.plotting import SERIES

    rows = []
    for model in models:
        run = runs[run_name("norms", model)]
        times = run["times"]
        for j, name in enumerate(experiments.config(run)["regularizers"]):
            first, last = run["norm_mean"][[len(times) // 4, -1], j]
            rows.append([model, SERIES[name]["label"], f"{first[0]:.2f}, {first[1]:.2f}",
                         f"{last[0]:.2f}, {last[1]:.2f}",
                         float(run["loss_mean"][len(times) // 2:, j].mean())])
    quarter = float(times[len(times) // 4])
    return result_table(["model", "regularizer", f"norms, t = {quarter:g}",
                         f"norms, t = {float(times[-1]):g}",
                         f"loss, t in [{float(times[len(times) // 2]):g}, {float(times[-1]):g}]"],
                        rows, number_format=".4f")
