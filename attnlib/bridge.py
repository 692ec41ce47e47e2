"""Part I's attention regression trained by Part II's Langevin dynamics (chapter 12).

The two papers on one problem. The parameters ``theta = (A, B)`` of Part I's layer are one
flat vector ``theta = [vec A, vec B]`` (row-major, ``D = p d + d^2`` entries) so that
:func:`attnlib.langevin.euler_maruyama` can run many chains of them at once. The potential is

    f(A, B) = Q_hat(A, B) + R_mild(A) + R_mild(B),       Q_hat = L_hat + R_hat,

with Q_hat Part I's objective (:meth:`attnlib.algorithm.DataLoss.objective`: the data loss and
the balancing regularizer ``lam/8 ||U^T U - V^T V||_F^2`` of Sigma_hat) and R_mild one of Part
II's mild regularizers on each block (:class:`attnlib.regularizers.Regularizer`, e.g. the
log-amplified ``lam_m ||W||_F^2 log(1 + ||W||_F^2)``), on the trained weights A and B
(``coordinates="weights"``) or on the factorization coordinates ``U = A S^{1/2}``,
``V = S^{1/2} B S^{1/2}`` of ``S = Sigma_hat`` (``coordinates="factor"``; chain rule
``dR/dA = R'(U) S^{1/2}``, ``dR/dB = S^{1/2} R'(V) S^{1/2}``). Langevin at temperature s samples
``mu_s ~ exp(-2 f / s)`` (Part II's convention, :mod:`attnlib.langevin`).

Algorithm 1's preconditioner (:func:`attnlib.algorithm.precondition`) is a constant linear map
of the gradient, ``(G_A, G_B) -> (G_A S^{-1}, S^{-1} G_B S^{-1})`` with ``S = Sigma_hat``; in
the flat coordinates it is the block-diagonal SPD matrix
``P = diag(I_p kron S^{-1}, S^{-1} kron S^{-1})`` (:func:`preconditioner_matrix`, built by
applying that transform to the unit vectors, so the two cannot disagree). Preconditioned
Langevin ``theta <- theta - h P grad f + sqrt(s h) P^{1/2} xi`` has the same Gibbs measure
[derived, :func:`attnlib.langevin.euler_maruyama`]; it is plain Langevin in the factorization
coordinates ``(U, V) = (A S^{1/2}, S^{1/2} B S^{1/2})``, as Algorithm 1's step is plain gradient
descent there.
"""

from __future__ import annotations

from typing import Callable, Literal

import numpy as np

from . import algorithm
from ._validation import as_matrix, check_int, check_memory, check_positive, finite_result
from .population import population_loss, spd_sqrt
from .regularizers import Regularizer

__all__ = ["flatten", "unflatten", "preconditioner_matrix", "Potential", "excess_risks"]


def flatten(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``theta = [vec A, vec B]`` (row-major) for ``A`` (p x d) and ``B`` (d x d)."""
    b = as_matrix("B", B)
    d = b.shape[0]
    b = as_matrix("B", b, shape=(d, d))
    return np.concatenate([as_matrix("A", A, shape=(None, d)).ravel(), b.ravel()])


def unflatten(theta: np.ndarray, p: int, d: int) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`flatten` for one vector (``(p d + d^2,)``) or a batch with one or two
    leading axes (``(..., p d + d^2)`` -> ``A`` (..., p, d), ``B`` (..., d, d))."""
    p = check_int("p", p, minimum=1)
    d = check_int("d", d, minimum=1)
    x = as_matrix("theta", theta, ndim=(1, 2, 3))
    if x.shape[-1] != p * d + d * d:
        raise ValueError(f"theta must have p d + d^2 = {p * d + d * d} entries on its last axis "
                         f"(p = {p}, d = {d}), got shape {x.shape}")
    lead = x.shape[:-1]
    return (x[..., : p * d].reshape(lead + (p, d)), x[..., p * d:].reshape(lead + (d, d)))


def preconditioner_matrix(Sigma_hat: np.ndarray, p: int) -> np.ndarray:
    """Algorithm 1's preconditioner as a ``(D, D)`` matrix on :func:`flatten` coordinates.

    Column j is :func:`attnlib.algorithm.precondition` applied to the j-th unit vector, so
    ``P @ flatten(G_A, G_B) = flatten(G_A S^{-1}, S^{-1} G_B S^{-1})``; P is symmetric positive
    definite (``diag(I_p kron S^{-1}, S^{-1} kron S^{-1})``). The dense matrix (``D = p d +
    d^2``) must fit in the memory available.
    """
    p = check_int("p", p, minimum=1)
    transform = algorithm.precondition(Sigma_hat)
    d = np.shape(Sigma_hat)[0]
    size = p * d + d * d
    check_memory("p", p, 4 * 8 * size * size, f"the {size} x {size} matrix (D = p d + d^2)")
    columns = []
    state = transform.init(unflatten(np.zeros(size), p, d))
    for unit in np.eye(size):
        (ga, gb), _ = transform.update(unflatten(unit, p, d), state)
        columns.append(flatten(ga, gb))
    matrix = np.column_stack(columns)
    return 0.5 * (matrix + matrix.T)


class Potential:
    """``f = Q_hat + R_mild(A) + R_mild(B)`` in the batched form of :mod:`attnlib.langevin`.

    ``data`` is a Part I data loss (:func:`attnlib.algorithm.empirical_loss`), ``lam`` the weight
    of the balancing regularizer in Q_hat (1 in Algorithm 1) and ``mild`` the Part II
    regularizer applied to each block (``Regularizer("none")`` for none) of the weights
    (``coordinates="weights"``: A and B) or of the factors (``"factor"``: U and V). Calling it with
    ``theta`` (chains, D) returns ``(f (chains,), grad f (chains, D))``, one layer evaluation
    per chain. :meth:`mild_value` gives ``R_mild(A) + R_mild(B)`` per chain, so
    ``Q_hat = f - mild_value``.

    Examples
    --------
    Three chains of ``theta = [vec A, vec B]``; the gradient is exact (it matches a central
    difference), and removing the mild term leaves Part I's objective Q_hat:

    >>> import numpy as np
    >>> from attnlib import algorithm, bridge, data
    >>> from attnlib.regularizers import make_regularizer
    >>> rng = np.random.default_rng(0)
    >>> X, Y = data.default_problem(rng=rng, d=2, p=3).sample(40, rng=rng)
    >>> f = bridge.Potential(algorithm.empirical_loss(X, Y), mild=make_regularizer("log", lam=0.01))
    >>> f.dim                                       # p d + d^2
    10
    >>> theta = 0.5 * rng.standard_normal((3, f.dim))
    >>> values, grads = f(theta)
    >>> values.shape, grads.shape
    ((3,), (3, 10))
    >>> v, h = rng.standard_normal(f.dim), 1e-6
    >>> central = (f(theta + h * v)[0] - f(theta - h * v)[0]) / (2 * h)
    >>> bool(np.allclose(central, grads @ v, rtol=1e-6))
    True
    >>> A, B = bridge.unflatten(theta[0], 3, 2)
    >>> Q_hat = algorithm.empirical_loss(X, Y).objective(1.0)(A, B)[0]
    >>> bool(np.isclose(values[0] - f.mild_value(theta[0]), Q_hat))
    True
    """

    def __init__(self, data: algorithm.DataLoss, *, lam: float = 1.0,
                 mild: Regularizer = Regularizer("none"),
                 coordinates: Literal["weights", "factor"] = "weights") -> None:
        if not isinstance(data, algorithm.DataLoss):
            raise TypeError(f"data must be an attnlib.algorithm.DataLoss, got "
                            f"{type(data).__name__}")
        if not isinstance(mild, Regularizer):
            raise TypeError(f"mild must be an attnlib.regularizers.Regularizer, got "
                            f"{type(mild).__name__}")
        if coordinates not in ("weights", "factor"):
            raise ValueError(f"coordinates must be 'weights' or 'factor', got {coordinates!r}")
        self.data = data
        self.coordinates = coordinates
        half = spd_sqrt(data.Sigma_hat)[0]
        self._half = np.eye(half.shape[0]) if coordinates == "weights" else half
        self.lam = check_positive("lam", lam, allow_zero=True)
        self.mild = mild
        self.p, self.d = data.M_hat.shape
        self.dim = self.p * self.d + self.d * self.d
        self._objective = data.objective(self.lam)

    def __call__(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x = as_matrix("theta", theta, shape=(None, self.dim))
        values = np.empty(x.shape[0])
        grads = np.empty_like(x)
        for i, (a, b) in enumerate(zip(*unflatten(x, self.p, self.d))):
            value, _, grad_a, grad_b = self._objective(a, b)
            if self.mild.active:
                u, v = a @ self._half, self._half @ b @ self._half
                value += float(self.mild.value(u) + self.mild.value(v))
                grad_a = grad_a + self.mild.gradient(u) @ self._half
                grad_b = grad_b + self._half @ self.mild.gradient(v) @ self._half
            values[i] = value
            grads[i] = flatten(grad_a, grad_b)
        return values, grads

    @finite_result
    def mild_value(self, theta: np.ndarray) -> np.ndarray:
        """The mild term (of A and B, or of U and V) for ``theta`` of shape ``(..., D)``
        (shape ``(...)``)."""
        a, b = unflatten(theta, self.p, self.d)
        lead = np.ndim(theta) - 1
        u, v = a @ self._half, self._half @ b @ self._half
        return self.mild.value(u, batch_ndim=lead) + self.mild.value(v, batch_ndim=lead)

    def reference_objective(self) -> Callable[[np.ndarray, np.ndarray],
                                              tuple[float, np.ndarray, np.ndarray]]:
        """``(A, B) -> (f, df/dA, df/dB)``, for :func:`attnlib.reference.reference_minimizer`."""

        def value_and_grad(A: np.ndarray, B: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            value, grad = self(flatten(A, B)[None, :])
            grad_a, grad_b = unflatten(grad[0], self.p, self.d)
            return float(value[0]), grad_a, grad_b

        return value_and_grad


@finite_result
def excess_risks(theta: np.ndarray, p: int, d: int, Sigma: np.ndarray, M: np.ndarray
                 ) -> np.ndarray:
    """Excess population risk ``L(A, B) - L* = 1/2 ||(A Sigma B^T - M) Sigma^{1/2}||_F^2`` of
    every flat parameter vector in ``theta`` (shape ``(..., D)``; result shape ``(...)``)."""
    p, d = check_int("p", p, minimum=1), check_int("d", d, minimum=1)
    a, b = unflatten(theta, p, d)
    flat_a = a.reshape((-1, p, d))
    flat_b = b.reshape((-1, d, d))
    values = [population_loss(x, y, Sigma, M) for x, y in zip(flat_a, flat_b)]
    return np.asarray(values).reshape(a.shape[:-2])
