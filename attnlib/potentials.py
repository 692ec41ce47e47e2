"""Low-dimensional test potentials with exact gradients (chapter 7 and the Langevin tests).

Every potential has the batched form of Part II's models,
``f(theta: (chains, D)) -> (loss: (chains,), grad: (chains, D))``, so it can be handed to
:func:`attnlib.langevin.euler_maruyama` and to the Gibbs helpers of :mod:`attnlib.langevin`
(use ``functools.partial`` to fix the keyword parameters).

* :func:`quadratic`: ``f = (a/2) ||theta||^2`` (the Ornstein-Uhlenbeck process);
* :func:`double_well`: ``f = (x^2 - 1)^2 + c x`` in 1-D;
* :func:`double_well_2d`: ``f = (x^2 - 1)^2 + c x + (k/2)(y - b x^2)^2`` in 2-D;
* :func:`bounded_well`: ``f = 1 - exp(-||theta||^2 / 2)`` (bounded: fails Villani 2-4);
* :func:`log_well`: ``f = alpha log(1 + ||theta||^2)`` (grows too slowly: fails Villani 4).
"""

from __future__ import annotations

import numpy as np

from ._validation import as_matrix, check_finite, check_positive, finite_result

__all__ = ["quadratic", "double_well", "double_well_2d", "bounded_well", "log_well"]


@finite_result
def quadratic(theta: np.ndarray, *, curvature: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """``f = (a/2) ||theta||^2``, ``grad f = a theta`` (any D; ``a = curvature > 0``).

    Langevin dynamics in this potential is the Ornstein-Uhlenbeck process
    ``d theta = -a theta dt + sqrt(s) dB``, with Gibbs measure ``N(0, s / (2a) I)``.

    Examples
    --------
    Batched over chains (rows): one value and one gradient row per chain.

    >>> import numpy as np
    >>> from attnlib.potentials import quadratic
    >>> theta = np.array([[1.0, 2.0], [0.0, -1.0], [3.0, 0.0]])
    >>> loss, grad = quadratic(theta, curvature=2.0)
    >>> loss.tolist(), grad[0].tolist()
    ([5.0, 1.0, 9.0], [2.0, 4.0])
    """
    x = as_matrix("theta", theta)
    a = check_positive("curvature", curvature)
    return 0.5 * a * np.sum(x * x, axis=1), a * x


@finite_result
def double_well(theta: np.ndarray, *, tilt: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """1-D double well ``f(x) = (x^2 - 1)^2 + c x``, ``f'(x) = 4 x (x^2 - 1) + c``.

    ``theta`` has shape ``(chains, 1)``; ``c = tilt`` makes the wells unequal.
    """
    x = as_matrix("theta", theta, shape=(None, 1))
    tilt = check_finite("tilt", tilt)
    u = x[:, 0]
    loss = (u * u - 1.0) ** 2 + tilt * u
    grad = 4.0 * u * (u * u - 1.0) + tilt
    return loss, grad[:, None]


@finite_result
def double_well_2d(theta: np.ndarray, *, tilt: float = 0.0, stiffness: float = 2.0,
                   bend: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """2-D curved double well ``f(x, y) = (x^2 - 1)^2 + c x + (k/2)(y - b x^2)^2``.

    The valley ``y = b x^2`` bends the path between the wells at ``(+-1, b)``, so the
    density does not factorise. Gradient:
    ``df/dx = 4 x (x^2 - 1) + c - 2 k b x (y - b x^2)``, ``df/dy = k (y - b x^2)``.
    """
    z = as_matrix("theta", theta, shape=(None, 2))
    k = check_positive("stiffness", stiffness)
    tilt = check_finite("tilt", tilt)
    bend = check_finite("bend", bend)
    x, y = z[:, 0], z[:, 1]
    r = y - bend * x * x
    loss = (x * x - 1.0) ** 2 + tilt * x + 0.5 * k * r * r
    gx = 4.0 * x * (x * x - 1.0) + tilt - 2.0 * k * bend * x * r
    gy = k * r
    return loss, np.stack([gx, gy], axis=1)


def bounded_well(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bounded potential ``f = 1 - exp(-||theta||^2 / 2)``, ``grad f = theta exp(-||theta||^2/2)``.

    f is smooth but tends to 1, not infinity: ``exp(-2 f / s) -> exp(-2 / s) > 0`` at infinity,
    so the Gibbs measure is not normalisable for any s (Villani conditions 2, 3 and 4 fail).
    """
    x = as_matrix("theta", theta)
    g = np.exp(-0.5 * np.sum(x * x, axis=1))
    return 1.0 - g, x * g[:, None]


@finite_result
def log_well(theta: np.ndarray, *, alpha: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """Slowly growing ``f = alpha log(1 + ||theta||^2)``.

    Gradient ``grad f = 2 alpha theta / (1 + ||theta||^2)``.

    f tends to infinity, but ``exp(-2 f / s) = (1 + ||theta||^2)^(-2 alpha / s)`` is integrable
    on R^D only when ``4 alpha / s > D``, and ``||grad f||^2 / s - Laplacian f -> 0``, so
    Villani condition 4 fails for every s; the Gibbs measure, when it exists, has polynomial
    tails and satisfies no Poincare inequality.
    """
    x = as_matrix("theta", theta)
    a = check_positive("alpha", alpha)
    q = 1.0 + np.sum(x * x, axis=1)
    return a * np.log(q), (2.0 * a / q)[:, None] * x
