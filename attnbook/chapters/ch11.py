"""Chapter 11 (Darcy flow with a one-attention-layer ViT): its Phase-2 runs and their summaries.

The chapter (``notebooks/ch11_darcy.ipynb``, section "Phase 2: only the query and key matrices")
replays the stored Phase-2 runs of :data:`PHASE2_RUNS` and summarizes them with
:func:`phase2_summaries`; its Reproduction report page (``notebooks/report_ch11_darcy.ipynb``)
loads the same runs with :func:`phase2_runs` and judges the source's four findings on the same
summaries. The runs are configured in :mod:`attnbook.experiments.darcy_runs`.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from attnbook import experiments
from attnbook.experiments import darcy_runs

__all__ = ["PHASE2_RUNS", "STRONG", "LAST_EPOCHS", "phase2_runs", "phase2_summaries",
           "strong_lambda"]

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
