"""Chapter 9 (LoRA, scale redundancy and its cure): the problem and its balanced stationary point.

The chapter's loss is ``f(U, V) = (1/2n) sum_i (a^T tanh((W_pre + U V) x_i) - y_i)^2 + R(U) +
R(V)``; its data loss depends on ``(U, V)`` only through ``U V``. Chapter 9 repeats Chapter 8's
computations on this model with the functions of :mod:`attnbook.chapters.ch08` (regularizers,
partition function, closed form on the orbit, crossover radii); what is LoRA's own is here: the
problem, and the stationary point, found from a weight-decay warm start and reported at the
balanced point of its ``GL(r)`` orbit.
"""

from __future__ import annotations

import numpy as np

from attnlib import lora, villani
from attnlib.regularizers import Regularizer

__all__ = ["PROBLEM_SEED", "BOUND_SEED", "WARM_DECAY", "lora_problem", "weight_decay_minimizer",
           "balanced_stationary_point"]

#: The seed of the synthetic problem.
PROBLEM_SEED = 0
#: The seed of the random parameters for the inequalities of the argument (report page).
BOUND_SEED = 5
#: The tiny weight decay of the warm start.
WARM_DECAY = 1e-3


def lora_problem() -> lora.LoRAProblem:
    """The chapter's synthetic problem (section "The model and its scale redundancy"):
    ``n = 20`` Gaussian samples in ``d = 3``, width ``m = 8``, rank ``r = 2``, so
    ``D = r (m + d) = 22`` parameters, with targets from a teacher rank-2 update plus noise of
    standard deviation 0.1 (seed :data:`PROBLEM_SEED`; the report's grid of instances,
    ``attnbook.experiments.part2.LORA_INSTANCE_GRID``, starts from the same one)."""
    return lora.make_problem(rng=np.random.default_rng(PROBLEM_SEED), n=20, d=3, width=8,
                             rank=2, noise_std=0.1)


def weight_decay_minimizer(problem: lora.LoRAProblem, lam: float) -> np.ndarray:
    """A minimizer of ``L + lam (||U||_F^2 + ||V||_F^2)`` by BFGS from the teacher
    (``gtol = 1e-9``). At a stationary point it is exactly balanced, ``U^T U = V V^T``
    (eq-ch09-balance: ``U^T grad_U f - (grad_V f) V^T = 2 lam (U^T U - V V^T)``)."""
    minimizer, _ = villani.minimize_data_loss(
        problem.with_regularizer(Regularizer("weight_decay", lam)), problem.theta_teacher,
        gtol=1e-9)
    return minimizer


def balanced_stationary_point(problem: lora.LoRAProblem) -> tuple[np.ndarray, np.ndarray]:
    """The chapter's stationary point of the data loss (section "The orbit through a
    stationary point"): BFGS from the weight-decay warm start
    (:func:`weight_decay_minimizer` with ``lam = WARM_DECAY``) without the decay, then the
    balanced point ``(P S^(1/2), S^(1/2) Q^T)`` of the SVD ``U V = P S Q^T`` of the polished
    point, which the product alone fixes (``U*^T U* = V* V*^T``). Returns
    ``(warm start, theta*)``."""
    warm = weight_decay_minimizer(problem, WARM_DECAY)
    polished, _ = villani.minimize_data_loss(problem, warm)
    return warm, problem.svd_factorization(polished, 0.5)
