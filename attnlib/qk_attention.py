"""Attention regression trained in W_Q and W_K (chapter 8; used in chapters 10 and 11).

The model of Part II ([choice]: the source's Definitions 2.4 and 2.5 are not available to the
book): an input is a token matrix ``X_i`` (N tokens x d), the target ``Y_i`` is N x d_out,

    Yhat(X) = RowSoftmax( X W_Q W_K^T X^T / sqrt(d_k) ) X W_V,

with ``W_V`` (d x d_out) fixed and ``W_Q, W_K`` (d x d_k) trained. The regularized loss is

    f(W_Q, W_K) = 1/(2n) sum_i ||Yhat(X_i) - Y_i||_F^2 + R(W_Q) + R(W_K).

The data loss depends on ``(W_Q, W_K)`` only through ``P = W_Q W_K^T``, so it is invariant under
``(W_Q, W_K) -> (W_Q G, W_K G^{-T})`` for every invertible d_k x d_k matrix G (the GL(d_k)
symmetry), and it is bounded: each output row is a convex combination of the rows of
``X W_V``.

Exact derivatives (with ``A = X P X^T / sqrt(d_k)``, ``S`` its row-softmax, ``Z = X W_V``,
``E = S Z - Y``):

* ``dL/dS_i = E_i Z_i^T / n``; ``dL/dA = S o (dL/dS - rowsum(S o dL/dS))``;
  ``M = dL/dP = sum_i X_i^T (dL/dA_i) X_i / sqrt(d_k)``; ``grad_{W_Q} = M W_K``,
  ``grad_{W_K} = M^T W_Q``.
* Along a direction ``(dW_Q, dW_K)``: ``dP = dW_Q W_K^T + W_Q dW_K^T``,
  ``d2P = 2 dW_Q dW_K^T``; per row of the softmax with ``c = dA - <S, dA>``:
  ``dS = S o c``, ``d2S = S o (c^2 - <S, c^2>) + S o (d2A - <S, d2A>)``; and
  ``d^2 L = (1/n) sum_i (||dS_i Z_i||^2 + <E_i, d2S_i Z_i>)``.

The flat parameter is ``theta = (vec W_Q, vec W_K)`` (row-major), D = 2 d d_k.

Bounds valid at every ``(W_Q, W_K)`` [derived, chapter 8, "The argument in every direction"]:
the softmax Jacobian ``J = diag(s) - s s^T`` has ``||J||_2 <= 1/2`` (Gershgorin: row sums
``2 s_j (1 - s_j)``) and its second directional derivative satisfies
``||D^2 s[u, u]||_2 <= 2 Var_s(u) <= ||u||_2^2`` (Popoviciu); with them
:meth:`AttentionProblem.derivative_constants` gives ``C`` and ``C'`` with::

    ||grad_{W_Q} L||_F <= C ||W_K||_F,      ||grad_{W_K} L||_F <= C ||W_Q||_F,
    |Laplacian_{W_Q} L| <= C' ||W_K||_F^2,  |Laplacian_{W_K} L| <= C' ||W_Q||_F^2.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ._validation import (MAX_SIZE, as_matrix, check_generator, check_int, check_memory,
                          check_positive, finite_result)
from .attention import row_softmax
from .regularizers import Regularizer
from .villani import FactorizedLoss

__all__ = ["AttentionProblem", "make_problem", "softmax_directional_derivatives"]


@finite_result
def softmax_directional_derivatives(z: np.ndarray, u: np.ndarray
                                    ) -> tuple[np.ndarray, np.ndarray]:
    """First and second derivatives of ``softmax`` at logits ``z`` along ``u`` (last axis).

    With ``s = softmax(z)`` and ``c = u - <s, u>``: ``D s[u] = s o c`` (that is ``J u`` with
    ``J = diag(s) - s s^T``) and ``D^2 s[u, u] = s o (c^2 - <s, c^2>)``.
    """
    z = as_matrix("z", z, ndim=tuple(range(1, 33)))
    u = as_matrix("u", u, ndim=tuple(range(1, 33)))
    if z.shape != u.shape:
        raise ValueError(f"z has shape {z.shape} and u has shape {u.shape}; they must have the "
                         "same non-scalar shape")
    s = row_softmax(z)
    c = u - np.sum(s * u, axis=-1, keepdims=True)
    sq = c * c
    return s * c, s * (sq - np.sum(s * sq, axis=-1, keepdims=True))


@dataclass(frozen=True, eq=False)
class AttentionProblem(FactorizedLoss):
    """The attention regression loss in ``(W_Q, W_K)`` for data ``X (n, N, d)``, ``Y (n, N, d_out)``.

    ``W_V`` is ``(d, d_out)``; ``regularizer`` acts on each of ``W_Q`` and ``W_K``;
    ``theta_teacher`` (optional) records the parameters that generated ``Y``. ``d_k`` is at
    most ``MAX_SIZE`` = 10^8 (``attnlib._validation``), and the queries and keys it makes
    must fit in the memory available.
    """

    X: np.ndarray
    Y: np.ndarray
    W_V: np.ndarray
    d_k: int
    regularizer: Regularizer = field(default_factory=Regularizer)
    theta_teacher: np.ndarray | None = None

    def __post_init__(self) -> None:
        X = as_matrix("X", self.X, ndim=3)
        n, N, d = X.shape
        W_V = as_matrix("W_V", self.W_V, shape=(d, None))
        Y = as_matrix("Y", self.Y, shape=(n, N, W_V.shape[1]), ndim=3)
        object.__setattr__(self, "X", X)
        object.__setattr__(self, "Y", Y)
        object.__setattr__(self, "W_V", W_V)
        object.__setattr__(self, "d_k", check_int("d_k", self.d_k, minimum=1, maximum=MAX_SIZE))
        check_memory("d_k", self.d_k, 4 * 8 * self.d_k * (2 * d + 2 * n * N),
                     "the parameters and the queries and keys")
        if not isinstance(self.regularizer, Regularizer):
            raise TypeError("regularizer must be a Regularizer, got "
                            f"{type(self.regularizer).__name__}")
        object.__setattr__(self, "_Z", X @ W_V)
        object.__setattr__(self, "_XT", np.swapaxes(X, 1, 2))

    @property
    def block_shapes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """``W_Q`` and ``W_K`` are both ``(d, d_k)``."""
        d = self.X.shape[2]
        return (d, self.d_k), (d, self.d_k)

    @property
    def n(self) -> int:
        """Number of inputs."""
        return self.X.shape[0]

    def _softmax(self, P: np.ndarray) -> np.ndarray:
        """Attention weights ``S`` of shape ``(c, n, N, N)`` for ``P (c, d, d)``."""
        logits = (self.X[None] @ P[:, None]) @ self._XT[None] / math.sqrt(self.d_k)
        return row_softmax(logits)

    @finite_result
    def predict(self, theta: np.ndarray) -> np.ndarray:
        """Outputs ``Yhat(X_i)``, shape ``(n, N, d_out)`` for theta ``(D,)``
        (``(c, n, N, d_out)`` for theta ``(c, D)``)."""
        theta = self._theta(theta, batched=None)
        W_Q, W_K = self.unpack(np.atleast_2d(theta))
        out = self._softmax(W_Q @ np.swapaxes(W_K, 1, 2)) @ self._Z[None]
        return out[0] if theta.ndim == 1 else out

    def _data_loss_and_grad(self, W1: np.ndarray, W2: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        P = W1 @ np.swapaxes(W2, 1, 2)
        S = self._softmax(P)
        E = S @ self._Z[None] - self.Y[None]
        loss = 0.5 * np.sum(E * E, axis=(1, 2, 3)) / self.n
        G_S = E @ np.swapaxes(self._Z, 1, 2)[None] / self.n
        G_A = S * (G_S - np.sum(G_S * S, axis=-1, keepdims=True))
        M = np.sum(self._XT[None] @ G_A @ self.X[None], axis=1) / math.sqrt(self.d_k)
        return loss, M @ W2, np.swapaxes(M, 1, 2) @ W1

    def _data_second_derivative(self, W1: np.ndarray, W2: np.ndarray, dW1: np.ndarray,
                                dW2: np.ndarray) -> np.ndarray:
        P = (W1 @ W2.T)[None]
        S = self._softmax(P)[0]
        E = S @ self._Z - self.Y
        dP = dW1 @ W2.T + W1 @ np.swapaxes(dW2, 1, 2)
        d2P = 2 * dW1 @ np.swapaxes(dW2, 1, 2)
        scale = 1 / math.sqrt(self.d_k)
        dA = (self.X[None] @ dP[:, None]) @ self._XT[None] * scale
        d2A = (self.X[None] @ d2P[:, None]) @ self._XT[None] * scale
        centred = dA - np.sum(S * dA, axis=-1, keepdims=True)
        dS = S * centred
        sq = centred * centred
        d2S = S * (sq - np.sum(S * sq, axis=-1, keepdims=True)) \
            + S * (d2A - np.sum(S * d2A, axis=-1, keepdims=True))
        dF = dS @ self._Z[None]
        d2F = d2S @ self._Z[None]
        return (np.sum(dF * dF, axis=(1, 2, 3)) + np.sum(E[None] * d2F, axis=(1, 2, 3))) / self.n

    def derivative_constants(self) -> tuple[float, float]:
        """``(C, C')`` of the module docstring, from the data alone.

        With ``x_i = ||X_i||_2``, ``z_i = ||X_i W_V||_2`` (operator norms) and
        ``r_i = sqrt(N) max_row ||(X_i W_V)_row|| + ||Y_i||_F`` (a bound on the residual
        ``||Yhat_i - Y_i||_F``, since each output row is a convex combination of rows of
        ``X_i W_V``)::

            ||dL/dP||_F <= C = sum_i x_i^2 r_i z_i / (2 n sqrt(d_k)),
            |D^2_P L[H, H]| <= h ||H||_F^2,  h = sum_i x_i^4 z_i (z_i / 4 + r_i) / (n d_k),
            C' = d h    (sum over the d d_k unit directions E of ||E W_K^T||_F^2 = d ||W_K||_F^2).
        """
        N = self.X.shape[1]
        x = np.linalg.norm(self.X, ord=2, axis=(1, 2))
        z = np.linalg.norm(self._Z, ord=2, axis=(1, 2))
        r = math.sqrt(N) * np.linalg.norm(self._Z, axis=2).max(axis=1) \
            + np.linalg.norm(self.Y, axis=(1, 2))
        grad = float(np.sum(x ** 2 * r * z) / (2 * self.n * math.sqrt(self.d_k)))
        hess = float(np.sum(x ** 4 * z * (z / 4 + r)) / (self.n * self.d_k))
        return grad, self.X.shape[2] * hess

    @finite_result
    def query_key_product(self, theta: np.ndarray) -> np.ndarray:
        """The product ``W_Q W_K^T`` (d x d) of each parameter vector: the quantity to monitor.

        The data loss depends on ``(W_Q, W_K)`` only through ``P = W_Q W_K^T``, which
        :meth:`act` leaves unchanged: ``(W_Q G)(W_K G^{-T})^T = W_Q W_K^T`` for every invertible
        G. Langevin chains diffuse along these non-compact orbits (held only by the
        regularizer), so the raw weights do not mix; P, a function on the orbits, is the
        observable whose :func:`attnlib.langevin.split_rhat` and
        :func:`attnlib.langevin.effective_sample_size` mean something.

        Parameters
        ----------
        theta : (..., D) array
            Flat parameters ``(vec W_Q, vec W_K)`` with any leading axes: one vector (D,),
            chains (chains, D), or a sampler's recorded states (R, chains, D).

        Returns
        -------
        (..., d, d) array
            ``W_Q W_K^T`` for each parameter vector.

        Raises
        ------
        ValueError
            When the last axis of ``theta`` is not D, or for non-finite entries.

        Examples
        --------
        >>> import numpy as np
        >>> from attnlib import qk_attention
        >>> problem = qk_attention.make_problem(rng=np.random.default_rng(0), d=3, d_k=2)
        >>> theta = problem.theta_teacher
        >>> moved = problem.act(theta, np.array([[2.0, 1.0], [0.0, 0.5]]))
        >>> product = problem.query_key_product(np.stack([theta, moved]))
        >>> product.shape, bool(np.allclose(product[0], product[1]))
        ((2, 3, 3), True)
        """
        raw = np.asarray(theta)
        if raw.ndim < 1 or raw.shape[-1] != self.dim:
            raise ValueError(f"theta must have shape (..., {self.dim}) (the D = 2 d d_k "
                             f"parameters last), got {raw.shape}")
        theta = as_matrix("theta", raw, ndim=tuple(range(1, 33)))
        (d, d_k), _ = self.block_shapes
        batch = theta.shape[:-1]
        check_memory("theta", f"an array of shape {theta.shape}",
                     8 * math.prod(batch) * (d * d + 2 * d * d_k), "the products")
        W_Q = theta[..., :d * d_k].reshape(batch + (d, d_k))
        W_K = theta[..., d * d_k:].reshape(batch + (d, d_k))
        return W_Q @ np.swapaxes(W_K, -1, -2)

    @finite_result
    def act(self, theta: np.ndarray, G: np.ndarray) -> np.ndarray:
        """``(W_Q G, W_K G^{-T})`` for an invertible ``G (d_k, d_k)``; theta ``(D,)`` or ``(c, D)``."""
        G = as_matrix("G", G, shape=(self.d_k, self.d_k))
        if np.linalg.cond(G) > 1e12:
            raise ValueError("G must be invertible (its condition number exceeds 1e12)")
        W_Q, W_K = self.unpack(theta)
        return self.pack(W_Q @ G, W_K @ np.linalg.inv(G).T)


@finite_result
def make_problem(*, rng: np.random.Generator, n: int = 6, N: int = 5, d: int = 3,
                 d_k: int = 2, d_out: int | None = None, noise_std: float = 0.5,
                 teacher_scale: float = 1.0,
                 regularizer: Regularizer | None = None) -> AttentionProblem:
    """A seeded synthetic attention regression problem.

    ``X_i`` has i.i.d. N(0, 1) entries, ``W_V`` i.i.d. N(0, 1/d) entries (d x d_out, d_out = d
    by default), a teacher ``(W_Q*, W_K*)`` has i.i.d. N(0, teacher_scale^2 / d) entries, and
    ``Y_i = Yhat_teacher(X_i) + noise_std * xi_i`` with standard normal ``xi_i``. The teacher is
    stored in ``theta_teacher``. All draws come from ``rng`` in this order. ``n``, ``N``,
    ``d``, ``d_k`` and ``d_out`` are at most ``MAX_SIZE`` = 10^8 (``attnlib._validation``),
    and the arrays they make (the logits are ``n N^2``) must fit in the memory available.
    """
    rng = check_generator("rng", rng)
    n = check_int("n", n, minimum=1, maximum=MAX_SIZE)
    N = check_int("N", N, minimum=1, maximum=MAX_SIZE)
    d = check_int("d", d, minimum=1, maximum=MAX_SIZE)
    d_k = check_int("d_k", d_k, minimum=1, maximum=MAX_SIZE)
    d_out = d if d_out is None else check_int("d_out", d_out, minimum=1, maximum=MAX_SIZE)
    per_context = N * (N + d + 2 * d_out + 2 * d_k)
    for name, value, size in (("n", n, n * per_context), ("N", N, n * per_context),
                              ("d", d, n * N * d + d * (d_out + 2 * d_k)),
                              ("d_k", d_k, d_k * (2 * d + 2 * n * N)),
                              ("d_out", d_out, d_out * (d + 2 * n * N))):
        check_memory(name, value, 4 * 8 * size, "the data, the weights and the logits")
    noise_std = check_positive("noise_std", noise_std, allow_zero=True)
    teacher_scale = check_positive("teacher_scale", teacher_scale, allow_zero=True)
    X = rng.standard_normal((n, N, d))
    W_V = rng.standard_normal((d, d_out)) / math.sqrt(d)
    teacher = rng.standard_normal(2 * d * d_k) * teacher_scale / math.sqrt(d)
    noise = rng.standard_normal((n, N, d_out))
    clean = AttentionProblem(X=X, Y=np.zeros((n, N, d_out)), W_V=W_V, d_k=d_k)
    Y = clean.predict(teacher) + noise_std * noise
    return AttentionProblem(X=X, Y=Y, W_V=W_V, d_k=d_k,
                            regularizer=regularizer if regularizer is not None else Regularizer(),
                            theta_teacher=teacher)
