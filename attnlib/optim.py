"""Optimizer updates shared by Part I's baselines (:mod:`attnlib.algorithm`) and Part II's ViT
(:mod:`attnlib.vit`): one home for Adam (Kingma and Ba, ICLR 2015)."""

from __future__ import annotations

import numpy as np

__all__ = ["adam_increment"]


def adam_increment(grad: np.ndarray, moment1: np.ndarray, moment2: np.ndarray, *, lr: float,
                   t: int, betas: tuple[float, float], eps: float) -> np.ndarray:
    """Advance Adam's moments in place and return the step to subtract from the parameter.

    ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2`` (updated in place), then with the
    bias corrections ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)`` (t = 1, 2, ...)
    the step is ``lr * m_hat / (sqrt(v_hat) + eps)``.
    """
    beta1, beta2 = betas
    moment1 *= beta1
    moment1 += (1 - beta1) * grad
    moment2 *= beta2
    moment2 += (1 - beta2) * grad ** 2
    return lr * (moment1 / (1 - beta1 ** t)) / (np.sqrt(moment2 / (1 - beta2 ** t)) + eps)
