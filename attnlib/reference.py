"""Certified reference optimum of a Part I objective (chapters 5 and 6).

"Fast global convergence" is a statement about the optimization gap
``Q_hat(theta_k) - Q_hat*`` of the objective being trained. This module computes ``Q_hat*``
and a minimizer ``theta_hat*`` for any Part I objective given as a function
``(A, B) -> (value, dQ/dA, dQ/dB)`` (the finite-data ``L_hat + R_hat`` with either mask, the
closed form with ``(Sigma_hat, M_hat)`` plugged in, or another reconstruction):

1. quasi-Newton: L-BFGS (``scipy.optimize.minimize``) with the exact gradient;
2. Newton-type polish: a trust-region Newton-CG method (``trust-ncg``) whose
   Hessian-vector products are central finite differences of the exact gradient,
   ``H v ~ (g(x + h v) - g(x - h v)) / (2 h)``, ``h = fd_step / ||v||``;
3. certificate: the gradient norm (must be below ``gtol``) and the full Hessian spectrum,
   built column by column from the same finite differences and symmetrized.

Everything runs in the factorization coordinates of ``Sigma`` (pass ``Sigma_hat``):
``U = A Sigma^{1/2}``, ``V = Sigma^{1/2} B Sigma^{1/2}``, where the gradient is
``(dQ/dA Sigma^{-1/2}, Sigma^{-1/2} dQ/dB Sigma^{-1/2})`` and Algorithm 1's preconditioned step
is plain gradient descent, so the Hessian eigenvalues there are exactly the curvatures that
set Algorithm 1's rate. "Certified" means: stationary to ``gtol``, Hessian positive
semidefinite up to finite-difference error (a local minimum, strictly one when the smallest
eigenvalue is positive), and -- checked by the callers, not here -- no lower value from the
other starts tried. Global optimality of a nonconvex objective is not certified by this.

A reference knows which objective it certifies when the objective says so: the functions made
by :meth:`attnlib.algorithm.DataLoss.reference_objective` carry an :class:`ObjectiveIdentity`
(the data, ``lam``, the regularizer's form and the mask), which the optimum keeps, and
:func:`attnlib.algorithm.train` refuses a reference certified for another objective
(:func:`attnlib.algorithm.reference_optimum` makes the right one for a method and its data).

Examples
--------
The reference optimum of Algorithm 1's objective on a small sample, certified by its
gradient norm and the sign of its Hessian spectrum:

>>> import numpy as np
>>> from attnlib import algorithm, data, reference
>>> rng = np.random.default_rng(0)
>>> X, Y = data.default_problem(rng=rng, d=3, p=4).sample(100, rng=rng)
>>> loss = algorithm.empirical_loss(X, Y)
>>> optimum = reference.reference_minimizer(loss.reference_objective(1.0),
...                                         loss.manifold.point(), loss.Sigma_hat)
>>> bool(optimum.grad_norm <= 1e-8), bool(optimum.smallest_eigenvalue > 0)
(True, True)
>>> optimum.objective.lam
1.0
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np
from scipy import optimize

from ._validation import (ANY_NDIM, as_matrix, check_generator, check_int, check_pair,
                          check_positive, finite_result)
from ._constants import documented
from .population import spd_sqrt

__all__ = ["ObjectiveFn", "ObjectiveIdentity", "ReferenceOptimum", "ReferenceNotConverged",
           "BelowReferenceError", "reference_minimizer", "factor_gradient", "largest_curvature",
           "MAX_POWER_ITERATIONS"]

#: A Part I objective, ``(A, B) -> (value, dQ/dA, dQ/dB)``.
ObjectiveFn = Callable[[np.ndarray, np.ndarray], tuple[float, np.ndarray, np.ndarray]]


class ReferenceNotConverged(RuntimeError):
    """Raised when the reference minimizer does not reach its gradient tolerance."""


class BelowReferenceError(ValueError):
    """A run went below the value ``Q_hat*`` of the reference it is measured against, by more
    than round-off: the reference is not the lowest minimum known of this objective, and every
    gap measured against it would be wrong. ``result`` holds the run so far where the caller
    has one (a :class:`attnlib.algorithm.TrainResult`); recompute the reference from its end
    point."""

    def __init__(self, message: str, *, result: object | None = None) -> None:
        super().__init__(message)
        self.result = result


@dataclass(frozen=True)
class ObjectiveIdentity:
    """Which Part I objective a function computes: ``kind`` of data loss ("empirical",
    "prompts", "closed_form"), its ``mask``, the regularizer weight ``lam`` and form
    ``regularizer``, and ``data``, a SHA-256 digest of the arrays the loss is built from (the
    samples X, Y, or Sigma_hat, M_hat for the closed form). Two functions with equal identities
    compute the same ``Q_hat``."""

    kind: str
    mask: str
    lam: float
    regularizer: str
    data: str

    def describe(self) -> str:
        """One line naming the objective, e.g. ``Q_hat = empirical loss (mask 'loo') + lam 1 *
        balancing R_hat on data 3fa2c1d0``."""
        data = "the closed form" if self.kind == "closed_form" else f"{self.kind} loss"
        return (f"Q_hat = {data} (mask {self.mask!r}) + lam {self.lam:g} * {self.regularizer} "
                f"R_hat on data {self.data[:8]}")

    def to_dict(self) -> dict[str, object]:
        """The identity as plain values (JSON)."""
        return asdict(self)


@dataclass(frozen=True, eq=False)
class ReferenceOptimum:
    """A certified stationary point ``(A, B)`` of an objective and its certificate.

    ``value`` is ``Q_hat*``; ``grad_norm`` the Frobenius norm of the gradient in (U, V)
    coordinates; ``hessian_eigenvalues`` the Hessian spectrum in (U, V) coordinates, ascending
    (empty when not computed); ``evaluations`` counts objective calls; ``objective`` the
    :class:`ObjectiveIdentity` of the objective minimized, when it carried one (None for an
    objective written by hand).
    """

    A: np.ndarray
    B: np.ndarray
    value: float
    grad_norm: float
    hessian_eigenvalues: np.ndarray
    evaluations: int
    objective: ObjectiveIdentity | None = None

    def __repr__(self) -> str:
        spectrum = ("" if self.hessian_eigenvalues.size == 0 else
                    f", Hessian eigenvalues in [{self.smallest_eigenvalue:.3g}, "
                    f"{self.largest_eigenvalue:.3g}]")
        certifies = "" if self.objective is None else f", {self.objective.describe()}"
        return (f"ReferenceOptimum(value={self.value:.10g}, grad_norm={self.grad_norm:.2g}"
                f"{spectrum}{certifies})")

    @property
    def smallest_eigenvalue(self) -> float:
        """Smallest Hessian eigenvalue in (U, V) coordinates."""
        return float(self.hessian_eigenvalues[0])

    @property
    def largest_eigenvalue(self) -> float:
        """Largest Hessian eigenvalue in (U, V) coordinates."""
        return float(self.hessian_eigenvalues[-1])

    def gap(self, values: np.ndarray) -> np.ndarray:
        """Optimization gap ``values - Q_hat*`` (e.g. a history's ``objective``; any number of
        axes; NaN, a history's "no value here", and +inf, a diverged value, pass through; -inf
        raises ``ValueError``: the objective is bounded below by ``Q_hat*``)."""
        array = as_matrix("values", values, ndim=ANY_NDIM, finite=False)
        if np.any(np.isneginf(array)):
            raise ValueError("values contains -inf: the objective is bounded below by Q_hat*")
        return array - self.value


@finite_result
def factor_gradient(grad_a: np.ndarray, grad_b: np.ndarray,
                    inv_half: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Chain rule to (U, V): ``(dQ/dA Sigma^{-1/2}, Sigma^{-1/2} dQ/dB Sigma^{-1/2})``."""
    inverse = as_matrix("inv_half", inv_half)
    d = inverse.shape[0]
    inverse = as_matrix("inv_half", inverse, shape=(d, d))
    return (as_matrix("grad_a", grad_a, shape=(None, d)) @ inverse,
            inverse @ as_matrix("grad_b", grad_b, shape=(d, d)) @ inverse)


class _FactorProblem:
    """The objective as a function of the flat vector ``z = [vec U, vec V]`` of the (U, V)
    coordinates of ``Sigma`` (module docstring), counting its evaluations.

    ``value_and_grad(z)`` is ``(Q, grad_z Q)``; ``hessp(z, v, step)`` the central difference
    ``(g(z + h v) - g(z - h v)) / (2 h)``, ``h = step / ||v||`` (two evaluations);
    ``split``/``flat`` convert between ``z`` and ``(A, B)``. Build one with :meth:`at` (or,
    from outside this module, :func:`attnlib.orbit.factor_problem`).
    """

    def __init__(self, objective: ObjectiveFn, Sigma: np.ndarray, p: int) -> None:
        self.objective = objective
        self.half, self.inv_half = spd_sqrt(Sigma)
        self.p, self.d = p, self.half.shape[0]
        self.evaluations = 0

    @classmethod
    def at(cls, objective: ObjectiveFn, point: tuple[np.ndarray, np.ndarray], Sigma: np.ndarray,
           name: str) -> tuple["_FactorProblem", np.ndarray]:
        """The problem and the flat (U, V) vector of ``point = (A, B)`` (argument ``name``)."""
        first, second = check_pair(name, point)
        sigma = as_matrix("Sigma", Sigma)
        d = sigma.shape[0]
        a = as_matrix(f"{name}[0] (A)", first, shape=(None, d))
        b = as_matrix(f"{name}[1] (B)", second, shape=(d, d))
        problem = cls(objective, sigma, a.shape[0])
        return problem, problem.flat(a, b)

    def split(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        u = z[: self.p * self.d].reshape(self.p, self.d)
        v = z[self.p * self.d:].reshape(self.d, self.d)
        return u @ self.inv_half, self.inv_half @ v @ self.inv_half

    def flat(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        return np.concatenate([(A @ self.half).ravel(), (self.half @ B @ self.half).ravel()])

    def value_and_grad(self, z: np.ndarray) -> tuple[float, np.ndarray]:
        self.evaluations += 1
        value, grad_a, grad_b = self.objective(*self.split(z))
        grad_u, grad_v = factor_gradient(grad_a, grad_b, self.inv_half)
        return float(value), np.concatenate([grad_u.ravel(), grad_v.ravel()])

    def grad(self, z: np.ndarray) -> np.ndarray:
        return self.value_and_grad(z)[1]

    def hessp(self, z: np.ndarray, direction: np.ndarray, step: float) -> np.ndarray:
        norm = float(np.linalg.norm(direction))
        if norm == 0.0:
            return np.zeros_like(direction)
        h = step / norm
        return (self.grad(z + h * direction) - self.grad(z - h * direction)) / (2.0 * h)

    def hessian(self, z: np.ndarray, step: float) -> np.ndarray:
        columns = [self.hessp(z, unit, step) for unit in np.eye(z.size)]
        matrix = np.column_stack(columns)
        return 0.5 * (matrix + matrix.T)


@finite_result
def reference_minimizer(objective: ObjectiveFn, start: tuple[np.ndarray, np.ndarray],
                        Sigma: np.ndarray, *, gtol: float = 1e-8, max_quasi_newton: int = 20000,
                        max_newton: int = 200, fd_step: float = 1e-5,
                        hessian: bool = True) -> ReferenceOptimum:
    """Minimize ``objective`` from ``start = (A0, B0)`` and certify the result.

    Runs L-BFGS to a gradient norm of about ``100 gtol`` (or ``max_quasi_newton`` iterations),
    then the trust-region Newton-CG polish (at most ``max_newton`` iterations) with
    finite-difference Hessian-vector products of step ``fd_step`` (in (U, V) units), and with
    ``hessian=True`` the full Hessian spectrum. ``Sigma`` (SPD, d x d) fixes the (U, V)
    coordinates: pass the ``Sigma_hat`` that the objective's regularizer uses.

    The default ``gtol = 1e-8`` pins the value: near a minimum with smallest Hessian eigenvalue
    h_min, ``Q - Q* <= ||g||^2 / (2 h_min)``, about 1e-13 for the h_min of about 5e-4 measured
    at n = 500, far below every gap the book reports.

    Parameters
    ----------
    objective : callable
        ``(A, B) -> (value, dQ/dA, dQ/dB)``, e.g. ``DataLoss.reference_objective(lam)``; its
        attribute ``identity`` (an :class:`ObjectiveIdentity`), when present, is kept as the
        optimum's ``objective``.
    start : tuple of ndarray
        ``(A0, B0)``.
    Sigma : ndarray
        SPD (d, d), fixes the (U, V) coordinates.
    gtol : float
        Required final gradient norm in (U, V).
    max_quasi_newton, max_newton : int
        Iteration caps of the two phases.
    fd_step : float
        Step of the finite-difference Hessian-vector products.
    hessian : bool
        Also compute the full Hessian spectrum (the certificate of a minimum).

    Returns
    -------
    ReferenceOptimum
        The point, ``Q*``, the gradient norm and the Hessian spectrum.

    Raises
    ------
    ReferenceNotConverged
        When the final gradient norm in (U, V) exceeds ``gtol``.
    """
    gtol = check_positive("gtol", gtol)
    fd_step = check_positive("fd_step", fd_step)
    max_quasi_newton = check_int("max_quasi_newton", max_quasi_newton, minimum=1)
    max_newton = check_int("max_newton", max_newton, minimum=0)
    problem, z = _FactorProblem.at(objective, start, Sigma, "start")

    quasi = optimize.minimize(problem.value_and_grad, z, jac=True, method="L-BFGS-B",
                              options=dict(maxiter=max_quasi_newton, maxcor=30, ftol=0.0,
                                           gtol=100 * gtol / np.sqrt(z.size), maxfun=10 ** 9))
    z = quasi.x
    if max_newton > 0:
        polish = optimize.minimize(lambda w: problem.value_and_grad(w)[0], z,
                                   jac=problem.grad, method="trust-ncg",
                                   hessp=lambda w, v: problem.hessp(w, v, fd_step),
                                   options=dict(maxiter=max_newton, gtol=0.5 * gtol))
        z = polish.x
    value, gradient = problem.value_and_grad(z)
    grad_norm = float(np.linalg.norm(gradient))
    if not grad_norm <= gtol:
        raise ReferenceNotConverged(
            f"reference minimizer stopped at gradient norm {grad_norm:.3g} > gtol = {gtol:.3g} "
            f"after {problem.evaluations} evaluations; raise max_quasi_newton/max_newton or gtol")
    eigenvalues = (np.linalg.eigvalsh(problem.hessian(z, fd_step)) if hessian
                   else np.empty(0))
    A, B = problem.split(z)
    identity = getattr(objective, "identity", None)
    return ReferenceOptimum(A=A, B=B, value=value, grad_norm=grad_norm,
                            hessian_eigenvalues=eigenvalues, evaluations=problem.evaluations,
                            objective=identity if isinstance(identity, ObjectiveIdentity)
                            else None)


#: Largest number of power iterations of ``largest_curvature`` (the book uses 100; each costs two
#: gradient evaluations, and beyond this many the estimate has long converged).
MAX_POWER_ITERATIONS = documented(10 ** 6, """Largest number of power iterations of
``largest_curvature`` (the book uses 100; each costs two gradient evaluations, and beyond this
many the estimate has long converged).""")


@finite_result
def largest_curvature(objective: ObjectiveFn, point: tuple[np.ndarray, np.ndarray],
                      Sigma: np.ndarray, *, rng: np.random.Generator, iterations: int = 100,
                      fd_step: float = 1e-5) -> float:
    """Largest-magnitude Hessian eigenvalue of ``objective`` at ``point`` in (U, V) coordinates.

    Power iteration ``v <- H v / ||H v||`` from a random unit vector (``rng``), with the
    finite-difference Hessian-vector products of :func:`reference_minimizer`; returns the
    Rayleigh quotient ``v^T H v`` after ``iterations`` steps (2 gradient evaluations each;
    at most :data:`MAX_POWER_ITERATIONS`).
    """
    iterations = check_int("iterations", iterations, minimum=1, maximum=MAX_POWER_ITERATIONS)
    fd_step = check_positive("fd_step", fd_step)
    rng = check_generator("rng", rng)
    problem, z = _FactorProblem.at(objective, point, Sigma, "point")
    vector = rng.standard_normal(z.size)
    vector /= np.linalg.norm(vector)
    for _ in range(iterations):
        image = problem.hessp(z, vector, fd_step)
        vector = image / np.linalg.norm(image)
    return float(vector @ problem.hessp(z, vector, fd_step))
