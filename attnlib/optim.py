"""Optimizer updates shared by Part I's baselines (:mod:`attnlib.algorithm`) and Part II's ViT
(:mod:`attnlib.vit`): one home for Adam (Kingma and Ba, ICLR 2015)."""

from __future__ import annotations

import numpy as np

from ._validation import check_in_range, check_int, check_positive

__all__ = ["check_betas", "adam_increment"]


def check_betas(betas: object) -> tuple[float, float]:
    """Return Adam's ``(b1, b2)`` after checking it is a pair of numbers in ``[0, 1)``."""
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(f"betas must be a pair (b1, b2) of numbers in [0, 1), got {betas!r}")
    return (check_in_range("betas[0]", betas[0], 0.0, 1.0, closed=(True, False)),
            check_in_range("betas[1]", betas[1], 0.0, 1.0, closed=(True, False)))


def adam_increment(grad: np.ndarray, moment1: np.ndarray, moment2: np.ndarray, *, lr: float,
                   t: int, betas: tuple[float, float], eps: float) -> np.ndarray:
    """Advance Adam's moments in place and return the step to subtract from the parameter.

    ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2`` (updated in place), then with the
    bias corrections ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)`` (t = 1, 2, ...)
    the step is ``lr * m_hat / (sqrt(v_hat) + eps)``.

    ``moment1`` and ``moment2`` must be float arrays of the gradient's shape (they are
    updated in place). Settings are checked: ``lr > 0``, ``t >= 1``, ``0 <= b1, b2 < 1``,
    ``eps >= 0``. A non-finite gradient is not an input error here: it passes through to the
    step, where the training loop's divergence check reports it.
    """
    beta1, beta2 = check_betas(betas)
    lr = check_positive("lr", lr)
    t = check_int("t", t, minimum=1)
    eps = check_positive("eps", eps, allow_zero=True)
    grad = np.asarray(grad)
    if grad.dtype.kind not in "biuf" or grad.size == 0:
        raise TypeError(f"grad must be a non-empty real array, got dtype {grad.dtype}, "
                        f"shape {grad.shape}")
    for name, moment in (("moment1", moment1), ("moment2", moment2)):
        if not isinstance(moment, np.ndarray) or moment.dtype.kind != "f":
            raise TypeError(f"{name} must be a float numpy array (updated in place), got "
                            f"{getattr(moment, 'dtype', type(moment).__name__)}")
        if moment.shape != grad.shape:
            raise ValueError(f"{name} has shape {moment.shape} but grad has shape "
                             f"{grad.shape}; they must match")
        if not np.all(np.isfinite(moment)):
            raise ValueError(f"{name} contains NaN or infinite entries")
    moment1 *= beta1
    moment1 += (1 - beta1) * grad
    moment2 *= beta2
    moment2 += (1 - beta2) * grad ** 2
    return lr * (moment1 / (1 - beta1 ** t)) / (np.sqrt(moment2 / (1 - beta2 ** t)) + eps)
