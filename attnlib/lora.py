"""LoRA on a depth-2 net (chapter 9; used in chapter 10).

The model ([choice]: the source's Definitions 2.6 and 2.7 are not available to the book):

    yhat(x) = a^T tanh((W_pre + U V) x),     x in R^d,

with frozen output weights ``a`` (width) and pretrained ``W_pre`` (width x d), and the trained
low-rank update ``U`` (width x r), ``V`` (r x d) (in the chapters ``U_lo, V_lo`` where they meet
Part I's U, V). The regularized loss is

    f(U, V) = 1/(2n) sum_i (yhat(x_i) - y_i)^2 + R(U) + R(V).

It depends on (U, V) only through ``U V``, so it is invariant under
``(U, V) -> (U G, G^{-1} V)`` for every invertible r x r matrix G, and it is bounded because
tanh is (``|yhat| <= ||a||_1``). On the set ``V = 0`` the data loss equals its value at
``W_pre`` for every U: a flat affine subspace.

Exact derivatives (``H = W x``, ``T = tanh(H)``, ``e_i = yhat(x_i) - y_i``,
``tanh' = 1 - T^2``, ``tanh'' = -2 T (1 - T^2)``):

* ``dL/dW = (1/n) sum_i e_i (a o tanh'(H_i)) x_i^T``; ``grad_U = (dL/dW) V^T``,
  ``grad_V = U^T (dL/dW)``.
* Along ``(dU, dV)``: ``dW = dU V + U dV``, ``d2W = 2 dU dV``,
  ``d yhat = a^T (tanh' o dW x)``, ``d2 yhat = a^T (tanh'' o (dW x)^2 + tanh' o d2W x)`` and
  ``d^2 L = (1/n) sum_i (d yhat_i^2 + e_i d2 yhat_i)``.

The flat parameter is ``theta = (vec U, vec V)`` (row-major), D = r (width + d).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._validation import (MAX_SIZE, as_matrix, check_finite, check_generator, check_int,
                          check_memory, check_positive, finite_result)
from .regularizers import Regularizer
from .villani import FactorizedLoss

__all__ = ["LoRAProblem", "make_problem"]


@dataclass(frozen=True, eq=False)
class LoRAProblem(FactorizedLoss):
    """The LoRA loss in ``(U, V)`` for data ``x (n, d)``, ``y (n,)`` and frozen ``a``, ``W_pre``.

    ``rank`` is r; ``regularizer`` acts on each of U and V; ``theta_teacher`` (optional)
    records the low-rank update that generated ``y``. The parameters ``(U, V)``
    (``rank (width + d)`` numbers) must fit in the memory available.
    """

    x: np.ndarray
    y: np.ndarray
    a: np.ndarray
    W_pre: np.ndarray
    rank: int
    regularizer: Regularizer = field(default_factory=Regularizer)
    theta_teacher: np.ndarray | None = None

    def __post_init__(self) -> None:
        x = as_matrix("x", self.x)
        n, d = x.shape
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "y", as_matrix("y", self.y, shape=(n,), ndim=1))
        a = as_matrix("a", self.a, ndim=1)
        object.__setattr__(self, "a", a)
        object.__setattr__(self, "W_pre", as_matrix("W_pre", self.W_pre, shape=(a.size, d)))
        object.__setattr__(self, "rank", check_int("rank", self.rank, minimum=1,
                                                   maximum=MAX_SIZE))
        check_memory("rank", self.rank, 4 * 8 * self.rank * (a.size + d),
                     "the parameters U (width x rank) and V (rank x d)")
        if not isinstance(self.regularizer, Regularizer):
            raise TypeError("regularizer must be a Regularizer, got "
                            f"{type(self.regularizer).__name__}")

    @property
    def block_shapes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """``U`` is ``(width, r)`` and ``V`` is ``(r, d)``."""
        return (self.a.size, self.rank), (self.rank, self.x.shape[1])

    @property
    def n(self) -> int:
        """Number of samples."""
        return self.x.shape[0]

    def predict(self, theta: np.ndarray) -> np.ndarray:
        """``yhat(x_i)``: shape ``(n,)`` for theta ``(D,)``, ``(c, n)`` for theta ``(c, D)``."""
        theta = self._theta(theta, batched=None)
        U, V = self.unpack(np.atleast_2d(theta))
        out = np.tanh((self.W_pre[None] + U @ V) @ self.x.T).transpose(0, 2, 1) @ self.a
        return out[0] if theta.ndim == 1 else out

    def _data_loss_and_grad(self, W1: np.ndarray, W2: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        T = np.tanh((self.W_pre[None] + W1 @ W2) @ self.x.T)          # (c, width, n)
        e = np.einsum("w,cwn->cn", self.a, T) - self.y[None]
        loss = 0.5 * np.sum(e * e, axis=1) / self.n
        dH = (e / self.n)[:, None, :] * self.a[None, :, None] * (1 - T * T)
        grad_W = dH @ self.x                                            # (c, width, d)
        return loss, grad_W @ np.swapaxes(W2, 1, 2), np.swapaxes(W1, 1, 2) @ grad_W

    def _data_second_derivative(self, W1: np.ndarray, W2: np.ndarray, dW1: np.ndarray,
                                dW2: np.ndarray) -> np.ndarray:
        T = np.tanh((self.W_pre + W1 @ W2) @ self.x.T)                  # (width, n)
        e = self.a @ T - self.y
        s1 = 1 - T * T
        s2 = -2 * T * s1
        dH = (dW1 @ W2 + W1 @ dW2) @ self.x.T                           # (m, width, n)
        d2H = 2 * (dW1 @ dW2) @ self.x.T
        dout = np.einsum("w,mwn->mn", self.a, s1 * dH)
        d2out = np.einsum("w,mwn->mn", self.a, s2 * dH * dH + s1 * d2H)
        return (np.sum(dout * dout, axis=1) + d2out @ e) / self.n

    @finite_result
    def act(self, theta: np.ndarray, G: np.ndarray) -> np.ndarray:
        """``(U G, G^{-1} V)`` for an invertible ``G (r, r)``; theta ``(D,)`` or ``(c, D)``."""
        G = as_matrix("G", G, shape=(self.rank, self.rank))
        if np.linalg.cond(G) > 1e12:
            raise ValueError("G must be invertible (its condition number exceeds 1e12)")
        U, V = self.unpack(theta)
        return self.pack(U @ G, np.linalg.inv(G) @ V)

    def derivative_constants(self) -> tuple[float, float]:
        """``(C, C')`` with ``||grad_U L||_F <= C ||V||_F``, ``||grad_V L||_F <= C ||U||_F``,
        ``|Laplacian_U L| <= C' ||V||_F^2`` and ``|Laplacian_V L| <= C' ||U||_F^2`` at every
        point, from the data alone [derived, chapter 9].

        ``L`` depends on ``W = W_pre + U V`` only; the residual is bounded because ``tanh`` is:
        ``|e_i| <= r_i = ||a||_1 + |y_i|``. With ``x_i = ||x_i||_2`` and
        ``kappa = max |tanh''| = 4 / (3 sqrt 3)``::

            ||grad_W L||_F <= C = sum_i r_i ||a||_2 x_i / n,
            |D^2_W L[H, H]| <= h ||H||_F^2,  h = sum_i x_i^2 (||a||_2^2 + kappa ||a||_inf r_i) / n,
            C' = max(m, d) h

        (``grad_U L = grad_W L V^T``; moving ``U`` by a unit ``E`` moves ``W`` by ``E V``, and the
        ``m r`` unit directions give ``sum ||E V||_F^2 = m ||V||_F^2``; ``d`` likewise for ``V``).
        """
        x = np.linalg.norm(self.x, axis=1)
        r = np.abs(self.a).sum() + np.abs(self.y)
        a2 = float(self.a @ self.a)
        kappa = 4.0 / (3.0 * math.sqrt(3.0))
        grad = float(np.sum(r * x) * math.sqrt(a2) / self.n)
        hess = float(np.sum(x**2 * (a2 + kappa * np.abs(self.a).max() * r)) / self.n)
        return grad, max(self.a.size, self.x.shape[1]) * hess

    @finite_result
    def svd_factorization(self, theta: np.ndarray, alpha: float) -> np.ndarray:
        """The point ``(P S^alpha, S^(1 - alpha) Q^T)`` of the ``GL(r)`` orbit of ``theta (D,)``,
        from the thin SVD ``U V = P S Q^T`` (rank r); ``alpha = 1/2`` is the balanced
        factorization (``U^T U = V V^T``). ``U V`` is unchanged, so is the data loss."""
        alpha = check_finite("alpha", alpha)
        if not 0.0 <= alpha <= 1.0:
            raise ValueError(f"alpha must be in [0, 1], got {alpha}")
        U, V = self.unpack(self._theta(theta, batched=False))
        P, S, Qt = np.linalg.svd(U @ V, full_matrices=False)
        P, S, Qt = P[:, :self.rank], S[:self.rank], Qt[:self.rank]
        if S[-1] <= 1e-12 * S[0]:
            raise ValueError("theta must have U V of full rank r to be refactorized")
        return self.pack(P * S**alpha, S[:, None] ** (1.0 - alpha) * Qt)


def make_problem(*, rng: np.random.Generator, n: int = 20, d: int = 3, width: int = 8,
                 rank: int = 1, noise_std: float = 0.1, update_scale: float = 1.0,
                 regularizer: Regularizer | None = None) -> LoRAProblem:
    """A seeded synthetic LoRA problem: a pretrained net to be adapted by a rank-r update.

    ``x_i`` ~ N(0, I_d); ``W_pre`` has i.i.d. N(0, 1/d) entries, ``a`` i.i.d. N(0, 1/width)
    entries times 2; the teacher update is ``U* V*`` with ``U*`` i.i.d. N(0, update_scale^2 / r)
    and ``V*`` i.i.d. N(0, 1/d) entries; ``y_i = a^T tanh((W_pre + U* V*) x_i) + noise_std xi_i``.
    All draws come from ``rng`` in this order; the teacher is stored in ``theta_teacher``.
    ``n``, ``d``, ``width`` and ``rank`` are at most ``MAX_SIZE`` = 10^8
    (``attnlib._validation``), and the arrays they make must fit in the memory available.

    Examples
    --------
    Without noise the teacher update fits the data exactly, and the data loss depends on
    ``(U, V)`` only through ``U V``: it is invariant under ``(U G, G^{-1} V)``:

    >>> import numpy as np
    >>> from attnlib import lora
    >>> rng = np.random.default_rng(0)
    >>> problem = lora.make_problem(rng=rng, rank=2, noise_std=0.0)
    >>> problem.block_shapes, problem.dim               # U (width, r), V (r, d); r (width + d)
    (((8, 2), (2, 3)), 22)
    >>> problem.data_loss(problem.theta_teacher) < 1e-25
    True
    >>> theta = rng.standard_normal(problem.dim)
    >>> G = np.array([[2.0, 1.0], [0.0, 0.5]])
    >>> bool(np.isclose(problem.loss(problem.act(theta, G)), problem.loss(theta)))
    True
    """
    rng = check_generator("rng", rng)
    n = check_int("n", n, minimum=1, maximum=MAX_SIZE)
    d = check_int("d", d, minimum=1, maximum=MAX_SIZE)
    width = check_int("width", width, minimum=1, maximum=MAX_SIZE)
    rank = check_int("rank", rank, minimum=1, maximum=MAX_SIZE)
    for name, value, size in (("n", n, n * (d + width + 2)), ("d", d, d * (n + width + rank)),
                              ("width", width, width * (n + d + rank)),
                              ("rank", rank, rank * (width + d))):
        check_memory(name, value, 4 * 8 * size, "the data and the weights")
    noise_std = check_positive("noise_std", noise_std, allow_zero=True)
    update_scale = check_positive("update_scale", update_scale, allow_zero=True)
    x = rng.standard_normal((n, d))
    W_pre = rng.standard_normal((width, d)) / math.sqrt(d)
    a = 2 * rng.standard_normal(width) / math.sqrt(width)
    U_star = rng.standard_normal((width, rank)) * update_scale / math.sqrt(rank)
    V_star = rng.standard_normal((rank, d)) / math.sqrt(d)
    noise = rng.standard_normal(n)
    clean = LoRAProblem(x=x, y=np.zeros(n), a=a, W_pre=W_pre, rank=rank)
    teacher = clean.pack(U_star, V_star)
    y = clean.predict(teacher) + noise_std * noise
    return LoRAProblem(x=x, y=y, a=a, W_pre=W_pre, rank=rank,
                       regularizer=regularizer if regularizer is not None else Regularizer(),
                       theta_teacher=teacher)
