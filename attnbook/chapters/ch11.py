"""Chapter 11 (Darcy flow with a one-attention-layer ViT): its Phase-2 runs and their summaries.

The chapter (``notebooks/ch11_darcy.ipynb``, section "Phase 2: only the query and key matrices")
replays the stored Phase-2 runs of :data:`PHASE2_RUNS` and summarizes them with
:func:`phase2_summaries`; its Reproduction report page (``notebooks/report_ch11_darcy.ipynb``)
loads the same runs with :func:`phase2_runs` and judges the source's four findings on the same
summaries. The chapter's tables of those summaries (:func:`error_table`, :func:`norm_table`,
:func:`gap_table`), its parameter count and its Gibbs yardstick (:func:`gibbs_mode_radius`) are
here too. The runs are configured in :mod:`attnbook.experiments.darcy_runs`.
"""

from __future__ import annotations

import dataclasses
from typing import Mapping

import numpy as np

from attnbook import experiments
from attnbook.experiments import darcy_runs
from attnbook.tables import result_table

__all__ = ["PHASE2_RUNS", "STRONG", "LAST_EPOCHS", "phase2_runs", "phase2_summaries",
           "strong_lambda", "parameter_summary", "error_table", "norm_table", "gap_table",
           "gibbs_mode_radius"]

#: The chapter's Phase-2 runs by label (Adam, plain SGD and noisy SGD, the Euler-Maruyama step
#: of Langevin dynamics, at the book's small strength lambda, and noisy SGD at a hundred times
#: that strength, label :data:`STRONG`).
PHASE2_RUNS = {"adam": "darcy_phase2_adam", "sgd": "darcy_phase2_sgd",
               "noisy": "darcy_phase2_noisy", "noisy, strong": "darcy_phase2_noisy_strong"}
#: The label of the strong-lambda run.
STRONG = "noisy, strong"
#: [choice] The last epochs of a run over which the test loss, the generalization gap and the
#: log-slopes of the norms are averaged.
LAST_EPOCHS = 20

Run = Mapping[str, np.ndarray]


def phase2_runs(runs: Mapping[str, str] = PHASE2_RUNS) -> dict[str, dict[str, np.ndarray]]:
    """The stored Phase-2 histories of ``runs`` (label -> stored run name), by label (checked
    loads; every regime and seed of each run)."""
    return {label: experiments.load(name) for label, name in runs.items()}


def phase2_summaries(stored: Mapping[str, Run], *, last: int = LAST_EPOCHS
                     ) -> dict[str, dict[str, dict[str, float]]]:
    """Per run label and regime (none, log, power), the seed means and standard errors of the
    Phase-2 measurements (:func:`attnbook.experiments.darcy_runs.summarize_phase2`): final test
    RMSE and relative L2 error, the norms ``||W_Q||_F``, ``||W_K||_F`` at the start and the end
    and their log-slopes over the last ``last`` epochs, and the generalization gap (test minus
    train loss) at the start, averaged over the last ``last`` epochs and its slope per epoch over
    the second half."""
    return {label: darcy_runs.summarize_phase2(run, last=last) for label, run in stored.items()}


def strong_lambda(stored: Mapping[str, Run]) -> float:
    """The regularization strength lambda of the strong run (label :data:`STRONG`), from the
    settings stored with it."""
    return experiments.config(stored[STRONG])["lam"]


# ---------------------------------------------------------------------------------------------
# The chapter's tables and yardsticks, so that its open cells show the idea.
# ---------------------------------------------------------------------------------------------


def parameter_summary(params: Mapping[str, np.ndarray]) -> str:
    """The shapes of the ViT's parameters (``attnlib.vit.init_params``), five a line, and their
    total count with the share of ``W_Q`` and ``W_K`` (what Phase 2 trains)."""
    shapes = [f"{name} {tuple(value.shape)}" for name, value in params.items()]
    total = sum(int(np.prod(value.shape)) for value in params.values())
    trained = sum(int(np.prod(params[name].shape)) for name in ("W_Q", "W_K"))
    lines = ["parameters: " + ", ".join(shapes[:5])]
    lines += ["            " + ", ".join(shapes[k:k + 5]) for k in range(5, len(shapes), 5)]
    return "\n".join(lines + [f"total {total} parameters, of which W_Q and W_K {trained}"])


def _rows(summaries: Mapping[str, Mapping[str, Mapping[str, float]]]):
    return [(label, regime, m) for label, by_regime in summaries.items()
            for regime, m in by_regime.items()]


def error_table(summaries: Mapping[str, Mapping[str, Mapping[str, float]]]):
    """Per run and regime of :func:`phase2_summaries`: the final test relative L2 error and the
    test loss over the last epochs, each with its standard error over seeds."""
    return result_table(["run", "regime", "rel. L2 (+- SE)", "test loss, last 20 (+- SE)"],
                        [[label, regime, f"{m['rel_l2']:.2%} +- {m['rel_l2_sem']:.2%}",
                          f"{m['test_loss']:.3e} +- {m['test_loss_sem']:.1e}"]
                         for label, regime, m in _rows(summaries)])


def norm_table(summaries: Mapping[str, Mapping[str, Mapping[str, float]]]):
    """Per run and regime of :func:`phase2_summaries`: ``||W_Q||_F`` and ``||W_K||_F`` at the
    start and at the end of Phase 2 (seed mean, with the standard error at the end)."""
    return result_table(["run", "regime", "|W_Q| start -> end", "|W_K| start -> end"],
                        [[label, regime,
                          f"{m['norm_WQ0']:.2f} -> {m['norm_WQ']:.2f} +- {m['norm_WQ_sem']:.2f}",
                          f"{m['norm_WK0']:.2f} -> {m['norm_WK']:.2f} +- {m['norm_WK_sem']:.2f}"]
                         for label, regime, m in _rows(summaries)])


def gap_table(summaries: Mapping[str, Mapping[str, Mapping[str, float]]]):
    """Per run and regime of :func:`phase2_summaries`: the generalization gap (test minus train
    loss) at the start and over the last epochs, with its standard error."""
    return result_table(["run", "regime", "gap: start -> last 20 (+- SE)"],
                        [[label, regime, f"{m['gap0']:.2e} -> {m['gap']:.2e} +- {m['gap_sem']:.1e}"]
                         for label, regime, m in _rows(summaries)])


def gibbs_mode_radius(setup: darcy_runs.DarcySetup, regime: str, lam: float) -> float:
    """The most likely ``||W||_F`` of one block of ``D d_k`` entries under the Gibbs density of
    the ``regime``'s regularizer at strength ``lam``, at noisy SGD's temperature
    ``s = sigma^2 / eta`` (:func:`attnbook.experiments.darcy_runs.gibbs_mode_norm`)."""
    regularizer = darcy_runs.regularizer_for(regime, dataclasses.replace(setup, lam=lam))
    return darcy_runs.gibbs_mode_norm(regularizer, temperature=setup.noise_std ** 2 / setup.sgd_lr,
                                      entries=setup.width * setup.key_dim)
