"""Geometry of Part I's landscape (chapter 3): the manifold S, the P-geometry, Hessians.

Manifold of global minima [derived, checked]. With the thin SVD ``X* = Phi Gamma Psi^T``
(``X* = M Sigma^{1/2}`` of full column rank d, which needs p >= d) and lambda > 0, the global
minima of ``Q = L + R`` (:mod:`attnlib.population`) are exactly

::

    S = { (U, V) = (Phi Gamma^{1/2} O, Psi Gamma^{1/2} O) : O in O(d) },

two connected components (det O = +1, -1). In (A, B) coordinates
``A = U Sigma^{-1/2}``, ``B = Sigma^{-1/2} V Sigma^{-1/2}``. In code the SVD factors are
called ``left`` (Phi), ``singular_values`` (diag Gamma) and ``right`` (Psi), to keep the letters P and
Q for the norm and the objective.

P-geometry. ``<(A,B),(A',B')>_P = tr(A Sigma A'^T) + tr(Sigma B Sigma B'^T)``, which is the
Frobenius inner product of the (U, V) coordinates. The P-gradient of a function f is
``grad_P f = (df/dA Sigma^{-1}, Sigma^{-1} df/dB Sigma^{-1})`` (in (U, V) coordinates simply
``(df/dU, df/dV)``), and

::

    dist_P(theta, S)^2 = min_{O in O(d)} ||U - U* O||_F^2 + ||V - V* O||_F^2

is attained at the polar factor O of ``C = U*^T U + V*^T V`` (orthogonal Procrustes: maximise
``tr(O^T C)``), over both components of O(d), without a determinant correction.

Hessian at S [derived, chapter 3]. Rotate so that ``U* = [Gamma^{1/2}; 0]``, ``V* = Gamma^{1/2}``
and write s_i for the singular values. The quadratic form of the Hessian of Q in (U, V) is
``||dU V*^T + U* dV^T||^2 + lambda/4 ||dU^T U* + U*^T dU - dV^T V* - V*^T dV||^2``. It splits
into independent blocks: the (p - d) x d lower block of dU (eigenvalue s_j), each diagonal pair
(a_ii, b_ii) (eigenvalues 2 s_i and 2 lambda s_i) and each off-diagonal quadruple
(a_ij, a_ji, b_ij, b_ji), i < j, whose form is ``u1 u1^T + u2 u2^T + lambda/2 w w^T`` with
mutually orthogonal vectors of squared norms s_i + s_j, s_i + s_j and 2 (s_i + s_j): eigenvalues
s_i + s_j (twice), lambda (s_i + s_j), and 0 (the tangent direction of the O(d) orbit).
See :func:`minimum_hessian_eigenvalues`; ``tests/test_geometry.py`` checks it against
:func:`factor_hessian`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._validation import (MAX_SIZE, _extremes, as_matrix, check_int, check_memory,
                          check_pair, check_positive, check_spd, finite_result)
from .population import objective_and_grad, spd_sqrt

__all__ = [
    "MinimizerManifold",
    "minimizer_manifold",
    "p_inner",
    "p_norm",
    "one_point_ratios",
    "factor_hessian",
    "minimum_hessian_eigenvalues",
    "gd_contraction_factor",
]


@dataclass(frozen=True, eq=False)
class MinimizerManifold:
    """The manifold S of global minima of ``Q = L + R`` for a given (Sigma, M).

    Build it with :func:`minimizer_manifold`. ``U_star = left diag(sqrt(s))`` and
    ``V_star = right diag(sqrt(s))`` are the point with O = I; ``X*`` is ``Xstar``; ``half``
    and ``inv_half`` are ``Sigma^{1/2}`` and ``Sigma^{-1/2}``.
    Pass ``(Sigma_hat, M_hat)`` to get the empirical manifold S_hat.
    """

    Sigma: np.ndarray
    M: np.ndarray
    half: np.ndarray
    inv_half: np.ndarray
    Xstar: np.ndarray
    left: np.ndarray
    singular_values: np.ndarray
    right: np.ndarray

    @property
    def U_star(self) -> np.ndarray:
        """``Phi Gamma^{1/2}`` (p x d)."""
        return self.left * np.sqrt(self.singular_values)

    @property
    def V_star(self) -> np.ndarray:
        """``Psi Gamma^{1/2}`` (d x d)."""
        return self.right * np.sqrt(self.singular_values)

    @property
    def balanced_scale(self) -> float:
        """``sqrt(trace Gamma)``: the value of ``||V||_F`` (and ``||U||_F``) everywhere on S."""
        return float(np.sqrt(self.singular_values.sum()))

    def factor(self, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(U, V) = (A Sigma^{1/2}, Sigma^{1/2} B Sigma^{1/2})`` with this manifold's Sigma."""
        d = self.half.shape[0]
        a = as_matrix("A", A, shape=(self.Xstar.shape[0], d))
        b = as_matrix("B", B, shape=(d, d))
        return self._factor(a, b)

    def _factor(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`factor` of checked arrays (for loops that check their parameters once)."""
        return a @ self.half, self.half @ b @ self.half

    def unfactor(self, U: np.ndarray, V: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(A, B) = (U Sigma^{-1/2}, Sigma^{-1/2} V Sigma^{-1/2})``."""
        d = self.half.shape[0]
        u = as_matrix("U", U, shape=(self.Xstar.shape[0], d))
        v = as_matrix("V", V, shape=(d, d))
        return u @ self.inv_half, self.inv_half @ v @ self.inv_half

    def point(self, O: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The point of S with rotation ``O`` (default identity), as ``(A, B)``."""
        d = self.half.shape[0]
        rotation = np.eye(d) if O is None else as_matrix("O", O, shape=(d, d))
        if not np.allclose(rotation.T @ rotation, np.eye(d), atol=1e-10):
            raise ValueError("O must be an orthogonal d x d matrix (O^T O = I)")
        return self.unfactor(self.U_star @ rotation, self.V_star @ rotation)

    def project(self, A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Return ``(A_S, B_S, O)``: the P-nearest point ``Pi_S(A, B)`` and its rotation.

        ``O`` is the polar factor ``W Z^T`` of ``C = U*^T U + V*^T V = W diag(c) Z^T``.
        """
        u, v = self.factor(A, B)
        rotation = _polar(self.U_star.T @ u + self.V_star.T @ v)
        a_s, b_s = self.unfactor(self.U_star @ rotation, self.V_star @ rotation)
        return a_s, b_s, rotation

    @finite_result
    def distance(self, A: np.ndarray, B: np.ndarray) -> float:
        """``dist_P((A, B), S)`` by orthogonal Procrustes (see the module docstring)."""
        return self._factor_distance(*self.factor(A, B))

    def _factor_distance(self, u: np.ndarray, v: np.ndarray) -> float:
        """:meth:`distance` from the (U, V) coordinates of checked parameters."""
        u_star, v_star = self.U_star, self.V_star
        rotation = _polar(u_star.T @ u + v_star.T @ v)
        return float(np.sqrt(np.sum((u - u_star @ rotation) ** 2)
                             + np.sum((v - v_star @ rotation) ** 2)))

    def symmetry_normal_direction(self, K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the direction ``(U* K, -V* K)`` (as (dA, dB)) for a symmetric d x d K.

        These directions move along the GL(d) symmetry orbit of L, ``(U G, V G^{-T})`` with
        ``G = I + t K``, and are P-orthogonal to S (whose tangent is ``(U* W, V* W)``, W
        antisymmetric). L is flat along them to first order; only R curves them.
        """
        d = self.half.shape[0]
        k = as_matrix("K", K, shape=(d, d))
        if not np.allclose(k, k.T, atol=1e-12 * max(1.0, np.abs(k).max())):
            raise ValueError("K must be symmetric")
        return self.unfactor(self.U_star @ k, -self.V_star @ k)

    def balanced_svd_point(self, keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return the stationary point ``(Phi Gamma_J^{1/2}, Psi Gamma_J^{1/2})`` as (A, B).

        ``Gamma_J`` keeps the singular values with a true entry in the boolean mask ``keep``
        (length d) and zeroes the rest. For any J this is a stationary point of Q (the
        residual ``-Phi Gamma_{J^c} Psi^T`` is orthogonal to both factors and the factors are
        balanced); it is a global minimum only for J = all, a saddle otherwise (J = none is
        the origin).
        """
        mask = np.asarray(keep)
        if mask.dtype != bool:
            raise TypeError(f"keep must be a boolean array, got dtype {mask.dtype}")
        if mask.shape != self.singular_values.shape:
            raise ValueError(f"keep must be a boolean array of length {self.singular_values.size}"
                             f", got shape {mask.shape}")
        root = np.sqrt(np.where(mask, self.singular_values, 0.0))
        return self.unfactor(self.left * root, self.right * root)


def _polar(C: np.ndarray) -> np.ndarray:
    w, _, zt = np.linalg.svd(C)
    return w @ zt


def minimizer_manifold(Sigma: np.ndarray, M: np.ndarray, *, rtol: float = 1e-10
                       ) -> MinimizerManifold:
    """Return the manifold S of global minima of ``Q = L + R`` (any lambda > 0).

    Parameters
    ----------
    Sigma : ndarray
        Symmetric positive definite (d, d) (the true Sigma for S, Sigma_hat for S_hat).
    M : ndarray
        (p, d), p >= d.
    rtol : float
        Relative rank tolerance for ``X* = M Sigma^{1/2}``.

    Returns
    -------
    MinimizerManifold
        S with its distances, points and factor coordinates.

    Raises
    ------
    ValueError
        When p < d or when ``X*`` does not have full column rank (smallest singular value
        below ``rtol`` times the largest): S is then a different set (rank-deficient
        factors) and the formulas here do not apply.

    Examples
    --------
    Every rotation ``O`` gives a global minimum: ``A Sigma B^T = M`` (zero excess loss),
    balanced factors (zero regularizer) and a vanishing gradient of ``Q = L + R``:

    >>> import numpy as np
    >>> from attnlib.data import default_problem, random_rotation
    >>> from attnlib.geometry import minimizer_manifold
    >>> from attnlib.population import objective_and_grad
    >>> rng = np.random.default_rng(0)
    >>> problem = default_problem(rng=rng, d=3, p=5)
    >>> S = minimizer_manifold(problem.Sigma, problem.M)
    >>> A, B = S.point(random_rotation(3, rng=rng))
    >>> bool(np.allclose(A @ problem.Sigma @ B.T, problem.M))
    True
    >>> Q, grad_A, grad_B = objective_and_grad(A, B, problem.Sigma, problem.M)
    >>> bool(np.allclose(grad_A, 0.0, atol=1e-12)), bool(np.allclose(grad_B, 0.0, atol=1e-12))
    (True, True)
    >>> S.distance(A, B) < 1e-12
    True

    A perturbed point projects back onto S, at the P-distance of the perturbation or less:

    >>> dA = 1e-3 * rng.standard_normal(A.shape)
    >>> A_S, B_S, O = S.project(A + dA, B)
    >>> S.distance(A_S, B_S) < 1e-12, bool(np.allclose(O.T @ O, np.eye(3)))
    (True, True)
    >>> bool(S.distance(A + dA, B) <= np.sqrt(np.trace(dA @ problem.Sigma @ dA.T)))
    True
    """
    rtol = check_positive("rtol", rtol)
    if rtol >= 1:
        raise ValueError(f"rtol must be < 1 (a relative tolerance), got {rtol!r}")
    sigma = check_spd("Sigma", Sigma)
    return _manifold(sigma, as_matrix("M", M, shape=(None, sigma.shape[0])), rtol=rtol, name="M")


def _manifold(sigma: np.ndarray, m: np.ndarray, *, rtol: float = 1e-10,
              name: str = "M") -> MinimizerManifold:
    """S for a checked SPD ``sigma`` (d, d) and finite ``m`` (p, d); the errors for p < d and
    for a rank-deficient ``X* = M Sigma^(1/2)`` name ``name``, the caller's argument that set M."""
    p, d = m.shape
    if p < d:
        raise ValueError(f"{name} has p = {p} rows < d = {d}: X* = M Sigma^(1/2) has rank < d "
                         "and the manifold S of chapter 3 (full-rank balanced factors) does not "
                         "apply; this book needs p >= d")
    half, inv_half = spd_sqrt(sigma)
    xstar = m @ half
    left, singular, right_t = np.linalg.svd(xstar, full_matrices=False)
    if singular[-1] <= rtol * singular[0]:
        raise ValueError(f"{name} must give X* = M Sigma^(1/2) of full column rank d = {d}, but "
                         f"X* is rank deficient (singular values {singular[0]:.3g} ... "
                         f"{singular[-1]:.3g}); the manifold S needs rank d")
    return MinimizerManifold(Sigma=sigma, M=m, half=half, inv_half=inv_half, Xstar=xstar,
                             left=left, singular_values=singular, right=right_t.T)


@finite_result
def p_inner(first: tuple[np.ndarray, np.ndarray], second: tuple[np.ndarray, np.ndarray],
            Sigma: np.ndarray) -> float:
    """``<(A,B),(A',B')>_P = tr(A Sigma A'^T) + tr(Sigma B Sigma B'^T)``."""
    first, second = check_pair("first", first), check_pair("second", second)
    sigma = check_spd("Sigma", Sigma)
    d = sigma.shape[0]
    a1 = as_matrix("first[0]", first[0], shape=(None, d))
    b1 = as_matrix("first[1]", first[1], shape=(d, d))
    a2 = as_matrix("second[0]", second[0], shape=a1.shape)
    b2 = as_matrix("second[1]", second[1], shape=(d, d))
    return float(np.sum((a1 @ sigma) * a2) + np.sum((sigma @ b1 @ sigma) * b2))


@finite_result
def p_norm(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray) -> float:
    """``||(A, B)||_P = sqrt(<(A,B),(A,B)>_P)``."""
    sigma = check_spd("Sigma", Sigma)
    a = as_matrix("A", A, shape=(None, sigma.shape[0]))
    b = as_matrix("B", B, shape=sigma.shape)
    return float(np.sqrt(p_inner((a, b), (a, b), sigma)))


@finite_result
def one_point_ratios(A: np.ndarray, B: np.ndarray, manifold: MinimizerManifold, *,
                     lam: float = 1.0, geometry: str = "P") -> tuple[float, float, float]:
    """Return ``(alpha_ratio, beta_ratio, dist)`` at theta = (A, B) for ``Q = L + R``.

    With ``geometry="P"``: ``alpha_ratio = <grad_P Q, theta - Pi_S theta>_P / dist_P^2`` and
    ``beta_ratio = ||grad_P Q||_P^2 / dist_P^2``, ``dist = dist_P(theta, S)``; one-point strong
    convexity and smoothness near S say alpha_ratio >= alpha > 0 and beta_ratio <= beta.
    With ``geometry="euclidean"`` the same ratios use the Euclidean gradient and Frobenius
    norms in (A, B), anchored at the same ``Pi_S theta`` (the Euclidean distance to S has no
    closed-form projection). Sigma and M are those of ``manifold``.
    """
    if geometry not in ("P", "euclidean"):
        raise ValueError(f"geometry must be 'P' or 'euclidean', got {geometry!r}")
    a_s, b_s, _ = manifold.project(A, B)
    delta = (np.asarray(A, dtype=float) - a_s, np.asarray(B, dtype=float) - b_s)
    _, grad_a, grad_b = objective_and_grad(A, B, manifold.Sigma, manifold.M, lam=lam)
    if not (np.all(np.isfinite(grad_a)) and np.all(np.isfinite(grad_b))):
        raise ValueError("; ".join(_extremes({"A": A, "B": B, "lam": lam}))
                         + ": the gradient of Q overflows float64")
    if geometry == "P":
        sigma_inv = manifold.inv_half @ manifold.inv_half
        grad = (grad_a @ sigma_inv, sigma_inv @ grad_b @ sigma_inv)
        dist2 = p_inner(delta, delta, manifold.Sigma)
        inner = p_inner(grad, delta, manifold.Sigma)
        grad2 = p_inner(grad, grad, manifold.Sigma)
    else:
        dist2 = float(np.sum(delta[0] ** 2) + np.sum(delta[1] ** 2))
        inner = float(np.sum(grad_a * delta[0]) + np.sum(grad_b * delta[1]))
        grad2 = float(np.sum(grad_a ** 2) + np.sum(grad_b ** 2))
    if dist2 == 0.0:
        raise ValueError("A, B must lie off S (their distance to S is 0): the ratios are "
                         "undefined there")
    return inner / dist2, grad2 / dist2, float(np.sqrt(dist2))


@finite_result
def factor_hessian(U: np.ndarray, V: np.ndarray, Xstar: np.ndarray, *,
                   lam: float = 1.0) -> np.ndarray:
    """Return the exact Hessian of ``Q - L* = 1/2||U V^T - X*||^2 + lambda/8||U^T U - V^T V||^2``.

    Variables are ordered as ``concatenate([U.ravel(), V.ravel()])`` (row-major), so the
    result is ``((p + d) d, (p + d) d)``. Column k is the exact Hessian-vector product with
    the k-th basis vector: with ``R = U V^T - X*``, ``Dg = U^T U - V^T V`` and a direction
    (dU, dV), ``dR = dU V^T + U dV^T``, ``dDg = dU^T U + U^T dU - dV^T V - V^T dV`` and

        H (dU, dV) = (dR V + R dV + lambda/2 (dU Dg + U dDg),
                      dR^T U + R^T dU - lambda/2 (dV Dg + V dDg)).
    """
    xstar = as_matrix("Xstar", Xstar)
    p, d = xstar.shape
    u = as_matrix("U", U, shape=(p, d))
    v = as_matrix("V", V, shape=(d, d))
    lam = check_positive("lam", lam, allow_zero=True)
    residual = u @ v.T - xstar
    gap = u.T @ u - v.T @ v
    size = (p + d) * d
    hessian = np.empty((size, size))
    basis = np.zeros(size)
    for k in range(size):
        basis[k] = 1.0
        du = basis[: p * d].reshape(p, d)
        dv = basis[p * d:].reshape(d, d)
        d_res = du @ v.T + u @ dv.T
        d_gap = du.T @ u + u.T @ du - dv.T @ v - v.T @ dv
        h_u = d_res @ v + residual @ dv + lam / 2.0 * (du @ gap + u @ d_gap)
        h_v = d_res.T @ u + residual.T @ du - lam / 2.0 * (dv @ gap + v @ d_gap)
        hessian[:, k] = np.concatenate([h_u.ravel(), h_v.ravel()])
        basis[k] = 0.0
    return 0.5 * (hessian + hessian.T)


@finite_result
def minimum_hessian_eigenvalues(singular_values: np.ndarray, p: int, *,
                                lam: float = 1.0) -> np.ndarray:
    """Closed-form spectrum of the Hessian of Q (in (U, V)) at any point of S, sorted.

    From the block decomposition in the module docstring: ``s_j`` with multiplicity p - d for
    each j; ``2 s_i`` and ``2 lambda s_i`` for each i; for each pair i < j,
    ``s_i + s_j`` (twice), ``lambda (s_i + s_j)`` and ``0``. Total ``(p + d) d`` values
    (``p`` at most ``MAX_SIZE`` = 10^8 of ``attnlib._validation``, and they must fit in
    memory).
    """
    s = as_matrix("singular_values", singular_values, ndim=1)
    lam = check_positive("lam", lam, allow_zero=True)
    d = s.size
    p = check_int("p", p, minimum=1, maximum=MAX_SIZE)
    check_memory("p", p, 4 * 8 * (p + d) * d, "the (p + d) d eigenvalues")
    if p < d:
        raise ValueError(f"p must be >= d = {d}, got {p}")
    i, j = np.triu_indices(d, k=1)
    pair = s[i] + s[j]
    values = np.concatenate([np.repeat(s, p - d), 2 * s, 2 * lam * s, pair, pair, lam * pair,
                             np.zeros(pair.size)])
    return np.sort(values)


def gd_contraction_factor(step: float, singular_values: np.ndarray, p: int, *,
                          lam: float = 1.0) -> float:
    """Local contraction factor of gradient descent on (U, V) near S [derived].

    Linearised at S, one step maps the normal component ``delta`` to ``(I - step H) delta``;
    H is symmetric with the nonzero eigenvalues of :func:`minimum_hessian_eigenvalues`, so
    ``||delta_next|| <= mu ||delta||`` with ``mu = max_h |1 - step h|`` over those h, and
    ``dist_P`` (to first order the norm of the normal component) contracts by at most mu per
    step near S. mu < 1 iff ``0 < step < 2 / h_max``, ``h_max = 2 max(1, lambda) s_max``.
    Preconditioned GD on (A, B) is exactly GD on (U, V), so this is Algorithm 1's local rate
    on the closed-form objective.
    """
    step = check_positive("step", step)
    check_positive("lam", lam)  # lam = 0: S is not the set of minima (GL(d) orbit instead)
    h = minimum_hessian_eigenvalues(singular_values, p, lam=lam)
    h = h[h > 1e-12 * h.max()]
    if h.size == 0:
        raise ValueError("singular_values must have a positive entry (the Hessian is 0 "
                         "otherwise)")
    return float(np.max(np.abs(1.0 - step * h)))
