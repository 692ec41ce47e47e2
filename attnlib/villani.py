"""Villani diagnostics of Part II (chapters 8 and 9) for factorized, regularized losses.

A loss ``f : R^D -> R`` is *Villani* (chapter 7) when it is smooth, tends to +infinity at
infinity, ``exp(-2 f / s)`` is integrable and the *Villani quantity*

    V_s(theta) = ||grad f(theta)||^2 / s - Laplacian f(theta)

tends to +infinity as ``||theta|| -> infinity``, for every temperature ``s > 0``.

This module holds

* :class:`FactorizedLoss`, the common base of the two models of Part II (the attention
  regression loss of :mod:`attnlib.qk_attention`, the LoRA loss of :mod:`attnlib.lora`): a data
  loss ``L(W_1, W_2)`` that depends on the two trained blocks only through their product, plus a
  regularizer on each block, ``f = L + R(W_1) + R(W_2)``. It provides the flat parameter
  vector ``theta = (vec W_1, vec W_2)`` (row-major), the batched loss and gradient used by the
  Langevin chains, the exact Laplacian (the sum of exact second directional derivatives along
  the D coordinate axes, no finite differences) and Hutchinson's estimate of it;
* :func:`villani_quantity`, ``V_s`` at a point (exact or Hutchinson Laplacian);
* the scale orbit ``(rho W_1, W_2 / rho)`` through a stationary point ``theta*`` of the data
  loss and its closed form. Along the orbit ``L`` is constant, ``grad L = 0`` and the data
  Laplacian is exactly ``a rho^2 + b / rho^2`` with ``a`` the Laplacian in the ``W_2`` block
  and ``b`` the one in the ``W_1`` block at ``rho = 1`` [derived, chapter 8]. So::

      V_s(rho) = [4 lam^2 t_1 g'(t_1)^2 + 4 lam^2 t_2 g'(t_2)^2] / s - a rho^2 - b / rho^2
                 - 2 lam (D_1 g'(t_1) + 2 t_1 g''(t_1)) - 2 lam (D_2 g'(t_2) + 2 t_2 g''(t_2)),
      t_1 = q rho^2,  t_2 = k / rho^2,  q = ||W_1*||_F^2,  k = ||W_2*||_F^2.

  :func:`orbit_villani_over_rho2` evaluates ``V_s / rho^2`` in arbitrary precision (mpmath)
  from ``log rho``, so radii such as ``rho = 10^300`` (where ``rho^2`` overflows float64)
  are fine; :func:`crossover_log_radius` finds the largest root ``log rho*`` numerically and
  :func:`asymptotic_crossover_log_radius` gives the leading-order closed forms derived in
  chapter 8; :func:`weight_decay_threshold` is ``4 lam^2 q / a``. The orbit has two ends:
  :func:`orbit_crossovers` gives the crossover of each (rho -> infinity, and rho -> 0 read
  through :meth:`OrbitConstants.swapped`); the Villani quantity is positive on the whole
  orbit outside the larger of the two, which is therefore the one that decides.

The orbit symbol is ``rho`` (not the design notes' ``r``) because ``r`` is the LoRA rank.
"""

from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy import optimize, special

from ._constants import documented
from ._validation import (as_matrix, check_generator, check_int, check_memory, check_positive,
                          finite_result)
from .regularizers import Regularizer

if TYPE_CHECKING:
    import mpmath


def _mpmath():  # noqa: ANN202 (the module)
    """mpmath, for the arbitrary-precision orbit functions (the ``precision`` extra)."""
    try:
        import mpmath
    except ImportError:
        raise ImportError("the orbit and crossover functions of attnlib.villani compute in "
                          "arbitrary precision with mpmath: pip install 'attnlib[precision]'") from None
    return mpmath

__all__ = [
    "FactorizedLoss",
    "VillaniValue",
    "villani_quantity",
    "minimize_data_loss",
    "OrbitConstants",
    "orbit_constants",
    "orbit_points",
    "orbit_villani_over_rho2",
    "orbit_villani_scaled",
    "crossover_log_radius",
    "OrbitCrossovers",
    "orbit_crossovers",
    "asymptotic_crossover_log_radius",
    "weight_decay_threshold",
    "villani_lower_bound",
    "lower_bound_log_radius",
    "EveryDirectionCheck",
    "every_direction_check",
    "radial_log_partition",
    "MAX_PRECISION",
    "MAX_RANDOM_DIRECTIONS",
]


class FactorizedLoss(ABC):
    """Base of the two-block losses ``f(W_1, W_2) = L(W_1, W_2) + R(W_1) + R(W_2)``.

    Subclasses are frozen dataclasses with a field ``regularizer`` and implement the data
    loss and gradient (batched over chains), the exact second directional derivative of the
    data loss, the block shapes and the group action of the symmetry.
    """

    regularizer: Regularizer

    # ----- to implement -------------------------------------------------------------------
    @property
    @abstractmethod
    def block_shapes(self) -> tuple[tuple[int, int], tuple[int, int]]:
        """Shapes of the two trained blocks ``W_1`` and ``W_2``."""

    @abstractmethod
    def _data_loss_and_grad(self, W1: np.ndarray, W2: np.ndarray
                            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Data loss ``(c,)`` and its gradients ``(c, *shape_1)``, ``(c, *shape_2)``."""

    @abstractmethod
    def _data_second_derivative(self, W1: np.ndarray, W2: np.ndarray, dW1: np.ndarray,
                                dW2: np.ndarray) -> np.ndarray:
        """``d^2/dt^2 L(W_1 + t dW_1, W_2 + t dW_2)`` at t = 0 for m directions, shape (m,)."""

    @abstractmethod
    def act(self, theta: np.ndarray, G: np.ndarray) -> np.ndarray:
        """The symmetry: the point ``G . theta`` of the same orbit (data loss unchanged)."""

    # ----- parameters ---------------------------------------------------------------------
    @property
    def dim(self) -> int:
        """Number of trained parameters ``D = D_1 + D_2``."""
        (a, b), (c, d) = self.block_shapes
        return a * b + c * d

    @property
    def block_dims(self) -> tuple[int, int]:
        """Entries of each block ``(D_1, D_2)``."""
        (a, b), (c, d) = self.block_shapes
        return a * b, c * d

    def pack(self, W1: np.ndarray, W2: np.ndarray) -> np.ndarray:
        """``theta = (vec W_1, vec W_2)`` (row-major); leading batch axes are kept."""
        s1, s2 = self.block_shapes
        W1 = as_matrix("W1", W1, shape=(None,) * (np.ndim(W1) - 2) + s1, ndim=tuple(range(2, 65)))
        W2 = as_matrix("W2", W2, shape=(None,) * (np.ndim(W2) - 2) + s2, ndim=tuple(range(2, 65)))
        if W1.shape[:-2] != W2.shape[:-2]:
            raise ValueError(f"W1 has batch axes {W1.shape[:-2]} and W2 has {W2.shape[:-2]}: "
                             "the leading (batch) axes of the blocks must be equal")
        batch = W1.shape[:-2]
        return np.concatenate([W1.reshape(batch + (-1,)), W2.reshape(batch + (-1,))], axis=-1)

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Inverse of :meth:`pack`: ``theta (..., D) -> (W_1 (..., *s_1), W_2 (..., *s_2))``."""
        theta = self._theta(theta, batched=None)
        s1, s2 = self.block_shapes
        d1 = s1[0] * s1[1]
        batch = theta.shape[:-1]
        return theta[..., :d1].reshape(batch + s1), theta[..., d1:].reshape(batch + s2)

    def with_regularizer(self, regularizer: Regularizer):
        """A copy of this problem with another regularizer on each block."""
        if not isinstance(regularizer, Regularizer):
            raise TypeError(f"regularizer must be a Regularizer, got {type(regularizer).__name__}")
        return dataclasses.replace(self, regularizer=regularizer)

    def _theta(self, theta: np.ndarray, *, batched: bool | None,
               name: str = "theta") -> np.ndarray:
        """Check ``theta`` (called ``name`` in errors): a finite real array of shape (D,) if
        batched is False, (c, D) if True, either if None."""
        ndims = {False: (1,), True: (2,), None: (1, 2)}[batched]
        raw = np.asarray(theta)
        expected = {1: f"({self.dim},)", 2: f"(chains, {self.dim})"}
        if raw.ndim not in ndims or raw.shape[-1] != self.dim:
            raise ValueError(f"{name} must have shape " + " or ".join(expected[k] for k in ndims)
                             + f", got {raw.shape}")
        return as_matrix(name, raw, ndim=ndims)

    # ----- loss and gradient --------------------------------------------------------------
    @finite_result
    def loss_and_grad_flat(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Regularized loss ``(chains,)`` and gradient ``(chains, D)`` for ``theta (chains, D)``.

        Vectorised over chains (no Python loop): this is the interface of the Langevin
        integrator, ``f = L(W_1, W_2) + R(W_1) + R(W_2)``.
        """
        theta = self._theta(theta, batched=True)
        W1, W2 = self.unpack(theta)
        loss, g1, g2 = self._data_loss_and_grad(W1, W2)
        reg = self.regularizer
        if reg.active:
            loss = loss + reg.value(W1, batch_ndim=1) + reg.value(W2, batch_ndim=1)
            g1 = g1 + reg.gradient(W1, batch_ndim=1)
            g2 = g2 + reg.gradient(W2, batch_ndim=1)
        return loss, self.pack(g1, g2)

    @finite_result
    def loss(self, theta: np.ndarray) -> float | np.ndarray:
        """Regularized loss at ``theta (D,)`` (a float) or ``(chains, D)`` (an array)."""
        theta = self._theta(theta, batched=None)
        value = self.loss_and_grad_flat(np.atleast_2d(theta))[0]
        return float(value[0]) if theta.ndim == 1 else value

    @finite_result
    def gradient(self, theta: np.ndarray) -> np.ndarray:
        """Gradient of the regularized loss, the same shape as ``theta``."""
        theta = self._theta(theta, batched=None)
        grad = self.loss_and_grad_flat(np.atleast_2d(theta))[1]
        return grad[0] if theta.ndim == 1 else grad

    @finite_result
    def data_loss(self, theta: np.ndarray) -> float | np.ndarray:
        """Unregularized loss ``L`` at ``theta (D,)`` or ``(chains, D)``."""
        theta = self._theta(theta, batched=None)
        W1, W2 = self.unpack(np.atleast_2d(theta))
        value = self._data_loss_and_grad(W1, W2)[0]
        return float(value[0]) if theta.ndim == 1 else value

    # ----- second derivatives and Laplacians ---------------------------------------------
    @finite_result
    def second_derivative(self, theta: np.ndarray, directions: np.ndarray) -> np.ndarray:
        """``u^T Hess f(theta) u`` for each row u of ``directions (m, D)`` (exact, analytic).

        The data part is the second derivative of ``t -> L(theta + t u)`` at 0; the
        regularizer part is ``lam [2 g'(t) ||u_W||^2 + 4 g''(t) <W, u_W>^2]`` per block.
        """
        theta = self._theta(theta, batched=False)
        directions = as_matrix("directions", directions, shape=(None, self.dim))
        W1, W2 = self.unpack(theta)
        dW1, dW2 = self.unpack(directions)
        out = self._data_second_derivative(W1, W2, dW1, dW2)
        reg = self.regularizer
        if reg.active:
            for W, dW in ((W1, dW1), (W2, dW2)):
                t = float(np.sum(W * W))
                inner = np.einsum("ij,mij->m", W, dW)
                curvature = 4 * reg.d2g(t) * inner ** 2 if t > 0 else 0.0
                out = out + reg.lam * (2 * reg.dg(t) * np.sum(dW * dW, axis=(1, 2))
                                       + curvature)
        return out

    @finite_result
    def data_laplacian_blocks(self, theta: np.ndarray, *, chunk: int = 256
                              ) -> tuple[float, float]:
        """Exact Laplacian of the data loss in each block: ``(Delta_1 L, Delta_2 L)``.

        The trace of the Hessian block, summed from the exact second derivatives along the
        coordinate axes (``chunk`` axes at a time).
        """
        theta = self._theta(theta, batched=False)
        chunk = check_int("chunk", chunk, minimum=1)
        W1, W2 = self.unpack(theta)
        diag = np.empty(self.dim)
        for start in range(0, self.dim, chunk):
            idx = np.arange(start, min(start + chunk, self.dim))
            basis = np.zeros((idx.size, self.dim))
            basis[np.arange(idx.size), idx] = 1.0
            dW1, dW2 = self.unpack(basis)
            diag[idx] = self._data_second_derivative(W1, W2, dW1, dW2)
        d1 = self.block_dims[0]
        return float(diag[:d1].sum()), float(diag[d1:].sum())

    def regularizer_laplacian(self, theta: np.ndarray) -> float:
        """Closed-form ``Laplacian R(W_1) + Laplacian R(W_2)``."""
        theta = self._theta(theta, batched=False)
        if not self.regularizer.active:
            return 0.0
        W1, W2 = self.unpack(theta)
        return float(self.regularizer.laplacian(W1) + self.regularizer.laplacian(W2))

    @finite_result
    def laplacian(self, theta: np.ndarray) -> float:
        """Exact Laplacian of the regularized loss at ``theta (D,)``."""
        return float(sum(self.data_laplacian_blocks(theta))) + self.regularizer_laplacian(theta)

    @finite_result
    def hutchinson_laplacian(self, theta: np.ndarray, *, rng: np.random.Generator,
                             n_probes: int = 64) -> tuple[float, float]:
        """Hutchinson's estimate of the Laplacian and its standard error.

        ``Delta f ~ (1/m) sum_j z_j^T Hess L z_j + Delta R`` with Rademacher probes ``z_j``
        (``E z z^T = I``) for the data part and the closed form for the regularizer. The error
        bar is the sample standard deviation of the m probe values over ``sqrt(m)``.
        ``n_probes`` is at most :data:`MAX_RANDOM_DIRECTIONS` (and the probes must fit in
        memory).
        """
        theta = self._theta(theta, batched=False)
        rng = check_generator("rng", rng)
        n_probes = check_int("n_probes", n_probes, minimum=2, maximum=MAX_RANDOM_DIRECTIONS)
        check_memory("n_probes", n_probes, 4 * 8 * n_probes * self.dim, "the probes")
        probes = rng.choice(np.array([-1.0, 1.0]), size=(n_probes, self.dim))
        W1, W2 = self.unpack(theta)
        dW1, dW2 = self.unpack(probes)
        values = self._data_second_derivative(W1, W2, dW1, dW2)
        estimate = float(values.mean()) + self.regularizer_laplacian(theta)
        return estimate, float(values.std(ddof=1) / math.sqrt(n_probes))


# ----- Villani quantity at a point ---------------------------------------------------------
@dataclass(frozen=True)
class VillaniValue:
    """``value = grad_sq / s - laplacian``; ``stderr`` is 0 for the exact Laplacian."""

    value: float
    grad_sq: float
    laplacian: float
    stderr: float


@finite_result
def villani_quantity(problem: FactorizedLoss, theta: np.ndarray, s: float, *,
                     method: str = "exact", rng: np.random.Generator | None = None,
                     n_probes: int = 64) -> VillaniValue:
    """``||grad f(theta)||^2 / s - Laplacian f(theta)`` for the regularized loss of ``problem``.

    ``method="exact"`` uses :meth:`FactorizedLoss.laplacian`; ``method="hutchinson"`` uses
    :meth:`FactorizedLoss.hutchinson_laplacian` with ``n_probes`` probes drawn from ``rng``
    (the error bar of the quantity is that of the Laplacian).

    Examples
    --------
    The LoRA loss of :mod:`attnlib.lora` with weight decay: the Villani quantity grows like
    ``||theta||^2`` along a ray (the regularizer's gradient dominates), and Hutchinson's
    estimate of the Laplacian agrees with the exact one within its error bar:

    >>> import numpy as np
    >>> from attnlib import lora
    >>> from attnlib.regularizers import make_regularizer
    >>> from attnlib.villani import villani_quantity
    >>> rng = np.random.default_rng(0)
    >>> decay = make_regularizer("weight_decay", lam=0.1)
    >>> problem = lora.make_problem(rng=rng, regularizer=decay)
    >>> theta = rng.standard_normal(problem.dim)
    >>> exact = villani_quantity(problem, theta, s=0.1)
    >>> bool(np.isclose(exact.value, exact.grad_sq / 0.1 - exact.laplacian)), exact.stderr
    (True, 0.0)
    >>> [f"{villani_quantity(problem, r * theta, s=0.1).value:.2g}" for r in (1, 10, 100)]
    ['14', '3.6e+02', '3.7e+04']
    >>> estimate = villani_quantity(problem, theta, s=0.1, method="hutchinson",
    ...                             rng=np.random.default_rng(1), n_probes=4000)
    >>> bool(abs(estimate.laplacian - exact.laplacian) < 3 * estimate.stderr)
    True
    """
    s = check_positive("s", s)
    theta = problem._theta(theta, batched=False)
    grad = problem.gradient(theta)
    grad_sq = float(grad @ grad)
    if method == "exact":
        lap, err = problem.laplacian(theta), 0.0
    elif method == "hutchinson":
        if rng is None:
            raise ValueError("rng is required for method='hutchinson'")
        lap, err = problem.hutchinson_laplacian(theta, rng=rng, n_probes=n_probes)
    else:
        raise ValueError(f"method must be 'exact' or 'hutchinson', got {method!r}")
    return VillaniValue(grad_sq / s - lap, grad_sq, lap, err)


@finite_result
def minimize_data_loss(problem: FactorizedLoss, theta0: np.ndarray, *, gtol: float = 1e-10,
                       max_iter: int = 5000) -> tuple[np.ndarray, float]:
    """A stationary point of the *regularized* loss of ``problem`` from ``theta0`` (BFGS).

    Pass the unregularized problem to find a stationary point of the data loss. Returns
    ``(theta*, ||grad f(theta*)||)``. Raises ``ValueError`` when the loss or its gradient is
    not finite at ``theta0`` (a start so large that it overflows), and ``RuntimeError`` when
    the gradient norm is not below ``1e3 * gtol`` (no stationary point found, e.g. the run
    escaped to infinity) or when the point is a numerical plateau rather than a stationary
    point: a gradient of exactly 0 with a second derivative of exactly 0 along each of
    ``_PLATEAU_PROBES`` fixed random directions. That happens where the softmax or tanh
    saturates in float64 (e.g. a start of 1000 x standard normal entries): the exact gradient
    there is tiny but not 0, and BFGS would stop at once and report the start. ``max_iter``
    (BFGS iterations) is at most 10^6.
    """
    theta0 = problem._theta(theta0, batched=False, name="theta0")
    gtol = check_positive("gtol", gtol)
    max_iter = check_int("max_iter", max_iter, minimum=1, maximum=10 ** 6)

    def fun(theta: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad = problem.loss_and_grad_flat(theta[None, :])
        return float(loss[0]), grad[0]

    with np.errstate(over="ignore", invalid="ignore"):
        try:
            loss0, grad0 = fun(theta0)
        except ValueError as exc:                       # e.g. NaN logits from an overflow
            raise ValueError(f"theta0: the loss cannot be evaluated there ({exc}); start "
                             "closer to the origin") from exc
    if not (np.isfinite(loss0) and np.all(np.isfinite(grad0))):
        raise ValueError("theta0: the loss or its gradient is not finite there (overflow); "
                         "start closer to the origin")
    result = optimize.minimize(fun, theta0, jac=True, method="BFGS",
                               options={"gtol": gtol, "maxiter": max_iter})
    theta = result.x
    grad_norm = float(np.linalg.norm(problem.gradient(theta)))
    if grad_norm > 1e3 * gtol:
        raise RuntimeError(f"no stationary point found: ||grad|| = {grad_norm:.3g} after "
                           f"{result.nit} BFGS iterations ({result.message})")
    if grad_norm == 0.0:
        probes = np.random.default_rng(0).standard_normal((_PLATEAU_PROBES, problem.dim))
        if np.all(problem.second_derivative(theta, probes) == 0.0):
            raise RuntimeError("no stationary point found: the loss is numerically flat at "
                               "the returned point (gradient and curvature exactly 0 in float64, "
                               "a saturated softmax or tanh), so it is a plateau, not a "
                               "stationary point; start closer to the origin")
    return theta, grad_norm


#: Random directions probed for curvature at a zero-gradient point (see minimize_data_loss).
_PLATEAU_PROBES = 8


# ----- the scale orbit through a stationary point ----------------------------------------
@dataclass(frozen=True)
class OrbitConstants:
    """Constants of the scale orbit ``(rho W_1*, W_2*/rho)`` through a stationary point.

    ``a`` = data Laplacian in the ``W_2`` block at rho = 1 (it scales like rho^2), ``b`` = data
    Laplacian in the ``W_1`` block (scales like 1/rho^2), ``q = ||W_1*||_F^2``,
    ``k = ||W_2*||_F^2``, ``dim1, dim2`` the block sizes.
    """

    a: float
    b: float
    q: float
    k: float
    dim1: int
    dim2: int

    def swapped(self) -> "OrbitConstants":
        """Constants for the limit rho -> 0 read as rho' = 1/rho -> infinity."""
        return OrbitConstants(self.b, self.a, self.k, self.q, self.dim2, self.dim1)


@finite_result
def orbit_constants(problem: FactorizedLoss, theta_star: np.ndarray) -> OrbitConstants:
    """The :class:`OrbitConstants` at ``theta_star`` (exact data Laplacians per block)."""
    theta_star = problem._theta(theta_star, batched=False, name="theta_star")
    lap1, lap2 = problem.data_laplacian_blocks(theta_star)
    W1, W2 = problem.unpack(theta_star)
    d1, d2 = problem.block_dims
    return OrbitConstants(a=lap2, b=lap1, q=float(np.sum(W1 ** 2)), k=float(np.sum(W2 ** 2)),
                          dim1=d1, dim2=d2)


@finite_result
def orbit_points(problem: FactorizedLoss, theta_star: np.ndarray,
                 log_rho: np.ndarray) -> np.ndarray:
    """Points ``(rho W_1*, W_2*/rho)`` for each ``log rho``; shape ``(len(log_rho), D)``."""
    theta_star = problem._theta(theta_star, batched=False, name="theta_star")
    log_rho = as_matrix("log_rho", np.atleast_1d(log_rho), ndim=1)
    W1, W2 = problem.unpack(theta_star)
    rho = np.exp(log_rho)[:, None, None]
    return problem.pack(rho * W1, W2 / rho)


def _orbit_over_rho2_mp(consts: OrbitConstants, reg: Regularizer, s: float,
                        u: mpmath.mpf) -> mpmath.mpf:
    """``V_s(rho) / rho^2`` at ``u = log rho`` in mpmath (see the module docstring)."""
    mpmath = _mpmath()
    rho2 = mpmath.exp(2 * u)
    value = -consts.a - consts.b / rho2 ** 2
    if reg.active:
        for t, dim in ((consts.q * rho2, consts.dim1), (consts.k / rho2, consts.dim2)):
            value += (reg.grad_sq_t(t) / s - reg.laplacian_t(t, dim)) / rho2
    return value


#: Largest number of random probes or directions (``n_probes`` of
#: :meth:`FactorizedLoss.hutchinson_laplacian`, ``n_directions`` of
#: :func:`radial_log_partition`): the book uses at most a few hundred.
MAX_RANDOM_DIRECTIONS = documented(10 ** 6, """\
Largest number of random probes or directions (``n_probes`` of
``FactorizedLoss.hutchinson_laplacian``, ``n_directions`` of
``radial_log_partition``): the book uses at most a few hundred.""")
#: Largest mpmath ``precision`` (significant digits) of the orbit and crossover functions.
#: The book uses 40, and 1000 digits already cost seconds per crossover (the cost grows faster
#: than the square of the digits).
MAX_PRECISION = documented(1000, """\
Largest mpmath ``precision`` (significant digits) of the orbit and crossover functions.
The book uses 40, and 1000 digits already cost seconds per crossover (the cost grows faster
than the square of the digits).""")


def _check_precision(precision: object) -> int:
    """``precision`` as a number of significant digits in ``[15, MAX_PRECISION]``."""
    return check_int("precision", precision, minimum=15, maximum=MAX_PRECISION)


@finite_result
def orbit_villani_over_rho2(consts: OrbitConstants, regularizer: Regularizer, s: float,
                            log_rho: np.ndarray, *, precision: int = 40) -> np.ndarray:
    """``V_s / rho^2`` on the orbit through a stationary point, at each ``log rho``.

    The closed form of the module docstring, evaluated with ``precision`` significant digits
    (mpmath; 15 to :data:`MAX_PRECISION`) and returned as float64 (finite for any
    ``|log rho|`` up to about 300 / eps).
    Its sign is the sign of the Villani quantity; for weight decay it tends to
    ``4 lam^2 q / s - a`` as rho -> infinity.
    """
    mpmath = _mpmath()
    s = check_positive("s", s)
    log_rho = as_matrix("log_rho", np.atleast_1d(log_rho), ndim=1)
    with mpmath.workdps(_check_precision(precision)):
        return np.array([float(_orbit_over_rho2_mp(consts, regularizer, s, mpmath.mpf(u)))
                         for u in log_rho])


@finite_result
def orbit_villani_scaled(consts: OrbitConstants, regularizer: Regularizer, s: float,
                         log_rho: np.ndarray, *, precision: int = 40) -> np.ndarray:
    """``V_s / max(rho^2, rho^-2)`` on the orbit: the sign of ``V_s`` with a finite scale at
    both ends (for weight decay the limits are ``4 lam^2 q / s - a`` as rho -> infinity and
    ``4 lam^2 k / s - b`` as rho -> 0). Negative ``log rho`` is read through
    :meth:`OrbitConstants.swapped` at ``-log rho``. ``precision``: as in
    :func:`orbit_villani_over_rho2` (at most :data:`MAX_PRECISION` digits)."""
    log_rho = as_matrix("log_rho", np.atleast_1d(log_rho), ndim=1)
    out = np.empty_like(log_rho)
    up = log_rho >= 0
    if up.any():
        out[up] = orbit_villani_over_rho2(consts, regularizer, s, log_rho[up],
                                          precision=precision)
    if (~up).any():
        out[~up] = orbit_villani_over_rho2(consts.swapped(), regularizer, s, -log_rho[~up],
                                           precision=precision)
    return out


@finite_result
def villani_lower_bound(t: np.ndarray, regularizer: Regularizer, s: float, *,
                        grad_constant: float, laplacian_constant: float,
                        block_dim: int) -> np.ndarray:
    """A lower bound on ``V_s(theta)`` in terms of ``t = max(||W_1||_F^2, ||W_2||_F^2)`` alone.

    Assume ``||grad_{W_1} L|| <= C ||W_2||``, ``||grad_{W_2} L|| <= C ||W_1||`` and
    ``|Laplacian_{W_b} L| <= C' ||W_other||^2`` (for attention:
    :meth:`attnlib.qk_attention.AttentionProblem.derivative_constants`), and that ``g'`` and
    ``t g''`` are nondecreasing (true for weight decay, log and power). On the larger block
    ``||grad f|| >= ||W|| (2 lam g'(t) - C)`` and ``Laplacian f <= 2 C' t + 4 lam (D g'(t) +
    2 t g''(t))`` with ``D = block_dim`` (the larger block size), so [derived, chapter 8]

        V_s >= B(t) = t max(2 lam g'(t) - C, 0)^2 / s - 2 C' t - 4 lam (D g'(t) + 2 t g''(t)).

    For the log and power forms ``g'(t) -> infinity``, so ``B(t) -> +infinity`` for every
    ``s > 0``: condition 4 holds in every direction. For weight decay ``B(t) / t`` tends to
    ``max(2 lam - C, 0)^2 / s - 2 C'``. A bound beyond float64 (``C' t`` near 1e308) raises
    ``ValueError`` naming the extreme argument rather than returning ``-inf``.
    """
    s = check_positive("s", s)
    C = check_positive("grad_constant", grad_constant, allow_zero=True)
    C2 = check_positive("laplacian_constant", laplacian_constant, allow_zero=True)
    block_dim = check_int("block_dim", block_dim, minimum=1)
    t = as_matrix("t", t, ndim=tuple(range(0, 33)))
    if np.any(t < 0):
        raise ValueError("t must be finite and >= 0 (a squared norm)")
    push = np.maximum(2 * regularizer.lam * regularizer.dg(t) - C, 0.0)
    return t * push ** 2 / s - 2 * C2 * t - 2 * regularizer.laplacian_t(t, block_dim)


@finite_result
def weight_decay_threshold(consts: OrbitConstants, lam: float) -> float:
    """``4 lam^2 q / a``: with weight decay the orbit quantity tends to -infinity as
    rho -> infinity when ``s`` exceeds it (to +infinity when ``s`` is below it)."""
    lam = check_positive("lam", lam)
    if consts.a <= 0:
        raise ValueError(f"consts must have a > 0 (a local minimum) for a threshold, got "
                         f"a = {consts.a:.3g}")
    return 4 * lam ** 2 * consts.q / consts.a


def _last_root(h, max_u: float, precision: int, s: float) -> float:
    """Largest root of ``h(u)`` on ``[0, max_u]`` (``u`` a log scale), in mpmath.

    ``h`` is scanned on 81 linear points in ``[0, 8]`` then 239 geometric points up to
    ``max_u``; the last sign change from ``<= 0`` to ``> 0`` is refined by bisection. Returns
    ``inf`` when ``h(max_u) <= 0`` and ``-inf`` when ``h > 0`` on the whole scan; raises
    ``ValueError`` naming the temperature ``s`` when the bisection cannot resolve the root.
    """
    mpmath = _mpmath()
    with mpmath.workdps(_check_precision(precision)):
        grid = np.concatenate([np.linspace(0.0, 8.0, 81), np.geomspace(8.0, max_u, 240)[1:]])
        values = np.array([float(mpmath.sign(h(mpmath.mpf(u)))) for u in grid])
        if values[-1] <= 0:
            return math.inf
        negative = np.nonzero(values <= 0)[0]
        if negative.size == 0:
            return -math.inf
        lo, hi = grid[negative[-1]], grid[negative[-1] + 1]
        try:
            root = mpmath.findroot(h, (mpmath.mpf(lo), mpmath.mpf(hi)), solver="bisect",
                                   tol=mpmath.mpf(10) ** (-20), maxsteps=200)
        except ValueError as exc:    # |h| beyond what bisection resolves to 1e-20
            raise ValueError(f"s = {s:.3g}: the root in [{lo:.3g}, {hi:.3g}] could not "
                             f"be resolved ({exc}); the temperature or the constants are too "
                             "extreme") from exc
        return float(root)


def crossover_log_radius(consts: OrbitConstants, regularizer: Regularizer, s: float, *,
                         max_log_rho: float = 1e5, precision: int = 40) -> float:
    """``log rho*``: the largest root of the orbit quantity ``V_s(rho)`` (rho -> infinity side).

    Beyond ``rho*`` the quantity is positive. Returns ``inf`` when it is still negative at
    ``log rho = max_log_rho`` (weight decay above its threshold, or no regularizer) and
    ``-inf`` when it is positive on the whole scan from ``log rho = 0``. The root is
    bracketed on a geometric scan of ``log rho`` and refined by bisection in mpmath with
    ``precision`` significant digits (15 to :data:`MAX_PRECISION`).
    """
    s = check_positive("s", s)
    max_log_rho = check_positive("max_log_rho", max_log_rho)
    return _last_root(lambda u: _orbit_over_rho2_mp(consts, regularizer, s, u), max_log_rho,
                      precision, s)


@dataclass(frozen=True)
class EveryDirectionCheck:
    """The inequalities of the every-direction argument at sample points: the largest ratios
    ``||grad_{W_b} L|| / (C ||W_other||)`` and ``|Laplacian_{W_b} L| / (C' ||W_other||^2)``
    (each must be <= 1), the smallest ``V_s - B(t)`` per regularizer name (must be >= 0) and
    how many of the checks had ``B > 0`` (where the bound says something)."""

    grad_ratio: float
    laplacian_ratio: float
    worst_margin: dict[str, float]
    positive: int


@finite_result
def every_direction_check(problem: FactorizedLoss, points: np.ndarray,
                          regularizers: list[tuple[str, Regularizer]], temperatures: list[float],
                          *, grad_constant: float, laplacian_constant: float
                          ) -> EveryDirectionCheck:
    """Check :func:`villani_lower_bound`'s assumptions and conclusion at ``points (k, D)``:
    the gradient and Laplacian bounds of the data loss with the constants ``(C, C')`` (e.g.
    ``problem.derivative_constants()``), and ``V_s(theta) >= B(t)`` for every
    ``(name, regularizer)`` pair and temperature, with ``t`` the larger squared block norm and
    the larger block size as ``block_dim``. Pairs sharing a name are pooled in ``worst_margin``."""
    points = as_matrix("points", points, shape=(None, problem.dim))
    if not regularizers or not temperatures:
        raise ValueError("regularizers and temperatures must be non-empty")
    C = check_positive("grad_constant", grad_constant)
    C2 = check_positive("laplacian_constant", laplacian_constant)
    block_dim = max(problem.block_dims)
    grad_ratio, laplacian_ratio, positive = 0.0, 0.0, 0
    worst = {name: math.inf for name, _ in regularizers}
    for row, theta in enumerate(points):
        W1, W2 = problem.unpack(theta)
        try:
            g1, g2 = problem.unpack(problem.gradient(theta))
            lap1, lap2 = problem.data_laplacian_blocks(theta)
        except ValueError as exc:
            raise ValueError(f"points[{row}] is too large: the loss's derivatives there are not "
                             f"finite in float64 ({exc})") from exc
        n1, n2 = float(np.sum(W1**2)), float(np.sum(W2**2))
        if n1 == 0 or n2 == 0:
            raise ValueError(f"points[{row}] has a zero block (W_1 or W_2 = 0): the "
                             "assumptions compare with ||W_1|| and ||W_2||, so each must be "
                             "nonzero")
        grad_ratio = max(grad_ratio, np.linalg.norm(g1) / (C * math.sqrt(n2)),
                         np.linalg.norm(g2) / (C * math.sqrt(n1)))
        laplacian_ratio = max(laplacian_ratio, abs(lap1) / (C2 * n2), abs(lap2) / (C2 * n1))
        for name, regularizer in regularizers:
            for s in temperatures:
                bound = float(villani_lower_bound(max(n1, n2), regularizer, s, grad_constant=C,
                                                  laplacian_constant=C2, block_dim=block_dim))
                value = villani_quantity(problem.with_regularizer(regularizer), theta, s).value
                worst[name] = min(worst[name], value - bound)
                positive += bound > 0
    return EveryDirectionCheck(float(grad_ratio), float(laplacian_ratio), worst, positive)


def lower_bound_log_radius(regularizer: Regularizer, s: float, *, grad_constant: float,
                           laplacian_constant: float, block_dim: int, max_log_t: float = 1e6,
                           precision: int = 40) -> float:
    """``log t_B``: beyond ``t = t_B`` the bound of :func:`villani_lower_bound` is positive.

    The largest root in ``u = log t`` of ``B(e^u) / e^u`` (mpmath, so ``t = e^{10^4}`` is
    fine); ``inf`` when the bound never turns positive (weight decay with
    ``2 lam <= C`` or ``s >= (2 lam - C)^2 / (2 C')``). ``precision``: mpmath digits, 15 to
    :data:`MAX_PRECISION`.
    """
    mpmath = _mpmath()
    s = check_positive("s", s)
    C = check_positive("grad_constant", grad_constant, allow_zero=True)
    C2 = check_positive("laplacian_constant", laplacian_constant, allow_zero=True)
    block_dim = check_int("block_dim", block_dim, minimum=1)

    def h(u: mpmath.mpf) -> mpmath.mpf:
        t = mpmath.exp(u)
        push = max(2 * regularizer.lam * regularizer.dg(t) - C, 0)
        return push ** 2 / s - 2 * C2 - 2 * regularizer.laplacian_t(t, block_dim) / t

    return _last_root(h, check_positive("max_log_t", max_log_t), precision, s)


@dataclass(frozen=True)
class OrbitCrossovers:
    """Both ends of the orbit: ``up = log rho*`` (positive for larger rho), ``down =
    log(1/rho_*)`` (positive for smaller rho); ``decisive`` is the larger of the two."""

    up: float
    down: float

    @property
    def decisive(self) -> float:
        """``max(up, down)``: the distance (in log rho from rho = 1) beyond which the orbit
        quantity is positive at both ends."""
        return max(self.up, self.down)

    @property
    def decisive_end(self) -> str:
        """``"rho -> oo"`` or ``"rho -> 0"``: the end whose crossover is further out."""
        return "rho -> oo" if self.up >= self.down else "rho -> 0"


def orbit_crossovers(consts: OrbitConstants, regularizer: Regularizer, s: float,
                     **options: float) -> OrbitCrossovers:
    """The crossover of each end of the orbit (:func:`crossover_log_radius` of ``consts`` and
    of ``consts.swapped()``; ``options`` are passed on)."""
    return OrbitCrossovers(up=crossover_log_radius(consts, regularizer, s, **options),
                           down=crossover_log_radius(consts.swapped(), regularizer, s,
                                                     **options))


@finite_result
def asymptotic_crossover_log_radius(consts: OrbitConstants, regularizer: Regularizer,
                                    s: float) -> float:
    """Leading-order closed forms for ``log rho*`` (derived with sympy in chapter 8).

    Keeping only ``||grad R(W_1)||^2 / s`` and ``a rho^2``:

    * log-amplified, ``g' ~ log t + 1``:
      ``log rho* ~ sqrt(s a / q) / (4 lam) - (log q)/2 - 1/2``;
    * super-quadratic, ``g' ~ (1 + eps/2) t^(eps/2)``:
      ``log rho* ~ log[ s a / (4 lam^2 (1 + eps/2)^2 q^(1 + eps)) ] / (2 eps)``.
    """
    s = check_positive("s", s)
    if consts.a <= 0 or consts.q <= 0:
        raise ValueError(f"consts must have a > 0 and q > 0 for the asymptotic forms, got "
                         f"a = {consts.a:.3g}, q = {consts.q:.3g}")
    lam, eps = regularizer.lam, regularizer.eps
    if not regularizer.active:
        raise ValueError("regularizer must be active (lam > 0) for the asymptotic forms")
    if regularizer.name == "log":
        return math.sqrt(s * consts.a / consts.q) / (4 * lam) - 0.5 * math.log(consts.q) - 0.5
    if regularizer.name in ("power", "power_source"):
        p = 1 + eps / 2
        return math.log(s * consts.a / (4 * lam ** 2 * p ** 2 * consts.q ** (1 + eps))) / (2 * eps)
    raise ValueError(f"regularizer must be 'log', 'power' or 'power_source' for an asymptotic "
                     f"crossover, got {regularizer.name!r} (weight decay has a threshold "
                     "instead: see weight_decay_threshold)")


# ----- the partition function over growing balls ------------------------------------------
def radial_log_partition(problem: FactorizedLoss, s: float, radii: np.ndarray, *,
                         n_directions: int, rng: np.random.Generator) -> np.ndarray:
    """``log Z_R`` with ``Z_R = integral over ||theta|| <= R of exp(-2 f(theta) / s)``.

    In polar coordinates ``Z_R = |S^{D-1}| int_0^R rho^{D-1} m(rho) d rho`` with ``m(rho)`` the
    mean of ``exp(-2 f(rho u) / s)`` over directions u uniform on the unit sphere;
    ``m`` is estimated with the same ``n_directions`` random directions at every radius and the
    radial integral is the trapezoid rule on ``radii`` (increasing, starting at 0), all in
    log space. Returns ``log Z_R`` at each radius (``-inf`` at R = 0). The Monte Carlo
    estimate of ``m`` is exact when ``f`` is radially symmetric. ``n_directions`` is at most
    :data:`MAX_RANDOM_DIRECTIONS` (and the directions must fit in memory).
    """
    s = check_positive("s", s)
    radii = as_matrix("radii", radii, ndim=1)
    if radii.size < 2 or radii[0] != 0 or np.any(np.diff(radii) <= 0):
        raise ValueError("radii must be increasing, start at 0 and have at least 2 entries")
    n_directions = check_int("n_directions", n_directions, minimum=1,
                             maximum=MAX_RANDOM_DIRECTIONS)
    rng = check_generator("rng", rng)
    dim = problem.dim
    check_memory("n_directions", n_directions, 4 * 8 * n_directions * dim, "the directions")
    directions = rng.standard_normal((n_directions, dim))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    log_integrand = np.full(radii.size, -np.inf)
    for i, rho in enumerate(radii[1:], start=1):
        try:
            losses = problem.loss(rho * directions)
        except ValueError as exc:    # the loss overflows float64 at this radius
            raise ValueError(f"radii has entries up to {radii[-1]:.3g}: the loss is not finite "
                             f"at radius {rho:.3g} ({exc})") from exc
        log_mean = special.logsumexp(-2 * losses / s) - math.log(n_directions)
        log_integrand[i] = (dim - 1) * math.log(rho) + log_mean
    log_sphere = math.log(2) + 0.5 * dim * math.log(math.pi) - special.gammaln(0.5 * dim)
    pieces = np.logaddexp(log_integrand[:-1], log_integrand[1:]) + np.log(np.diff(radii) / 2)
    return np.concatenate([[-np.inf], np.logaddexp.accumulate(pieces)]) + log_sphere
