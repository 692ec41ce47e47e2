"""Measurements of Part I's landscape (chapter 3): stationary points and one-point conditions.

The objects (the manifold S, the P-geometry, the Procrustes projection, the one-point ratios at
a single point, the exact Hessian in (U, V)) live in :mod:`attnlib.geometry`; this module
samples them.

Stationary points [derived, chapter 3]. With ``X* = Phi Gamma Psi^T`` (thin SVD), the population loss
``L - L* = 1/2 ||U V^T - X*||^2`` and the regularized ``Q - L* = L - L* + lambda/8
||U^T U - V^T V||^2`` have the stationary points

* the origin and the balanced partial-SVD points ``(Phi Gamma_J^{1/2}, Psi Gamma_J^{1/2})`` (J a proper
  subset of the singular values): stationary for both, strict saddles (the Hessian has a
  negative eigenvalue) -- the regularizer does not remove them;
* unbalanced points ``(c U, V / c)``, c != 1, of any stationary point of L with ``U != 0``:
  stationary for L (which is invariant under ``(U G, V G^{-T})``) but not for Q.

:func:`stationary_point_table` evaluates gradients and Hessian spectra at these points.

One-point conditions [seed: they hold near S; constants: none in the sources, measured here].
For theta at P-distance about r from S,

    alpha_ratio = <grad_P Q, theta - Pi_S theta>_P / dist_P^2 ,
    beta_ratio  = ||grad_P Q||_P^2 / dist_P^2 ,

and the Euclidean versions with Frobenius norms in (A, B), anchored at the same ``Pi_S theta``
(the P-projection; the Euclidean projection onto S has no closed form).
:func:`one_point_scan` samples ``theta = (U* O + r dU, V* O + r dV)`` with O Haar on O(d) (both
components) and a unit direction normal to S at that point, of one of three kinds:

* ``"random"``: Gaussian, with its component tangent to S removed;
* ``"symmetry"``: ``(U* K, -V* K) O`` with K symmetric Gaussian, the direction of the GL(d)
  orbit of L normal to S (L is flat along it to first order);
* ``"saddle"``: towards the balanced saddle that drops the smallest singular value,
  ``(-p_d s_d^{1/2} e_d^T, -q_d s_d^{1/2} e_d^T) O``, reached at ``r = sqrt(2 s_d)``.

Because ``(U, V) -> (U O, V O)`` is a P-isometry that preserves S, Q and the P-projection,
sampling the direction at O = I and rotating it is the same as sampling at the rotated point.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ._constants import documented
from ._validation import (as_matrix, check_finite, check_generator, check_int, check_memory,
                          check_positive, check_positive_entries, finite_result)
from .data import covariance, random_rotation
from .geometry import MinimizerManifold, _manifold, factor_hessian, one_point_ratios
from .population import factor_loss_and_grad, factor_regularizer_and_grad, spd_sqrt

__all__ = [
    "DirectionKind",
    "normal_direction",
    "OnePointScan",
    "one_point_scan",
    "StationaryPoint",
    "stationary_point_table",
    "condition_sweep",
    "MAX_SCAN_SAMPLES",
]

DirectionKind = Literal["random", "symmetry", "saddle"]
_KINDS = ("random", "symmetry", "saddle")
#: Largest ``n_samples`` per radius of :func:`one_point_scan` and :func:`condition_sweep`:
#: each sample is a Python-level step (a rotation, a direction, two ratio evaluations); the
#: book uses at most 20.
MAX_SCAN_SAMPLES = documented(10 ** 6, """\
Largest ``n_samples`` per radius of ``one_point_scan`` and ``condition_sweep``:
each sample is a Python-level step (a rotation, a direction, two ratio evaluations); the
book uses at most 20.""")


def _tangent_free(manifold: MinimizerManifold, dU: np.ndarray,
                  dV: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Remove from (dU, dV) its P-orthogonal projection on the tangent of S at O = I.

    The tangent is ``{(U* W, V* W) : W antisymmetric}``. Minimising
    ``||dU - U* W||^2 + ||dV - V* W||^2`` over antisymmetric W gives
    ``D W + W D = (C - C^T) / 2`` with ``C = U*^T dU + V*^T dV``, i.e.
    ``W_ij = (C - C^T)_ij / (2 (s_i + s_j))``.
    """
    s = manifold.singular_values
    c = manifold.U_star.T @ dU + manifold.V_star.T @ dV
    w = (c - c.T) / (2.0 * (s[:, None] + s[None, :]))
    return dU - manifold.U_star @ w, dV - manifold.V_star @ w


def normal_direction(manifold: MinimizerManifold, kind: DirectionKind, *,
                     rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A unit (Frobenius in (U, V), i.e. P-norm) direction normal to S at ``(U*, V*)``.

    See the module docstring for the three kinds; ``"saddle"`` is deterministic (``rng`` is
    not used).
    """
    if kind not in _KINDS:
        raise ValueError(f"kind must be one of {_KINDS}, got {kind!r}")
    rng = check_generator("rng", rng)
    p, d = manifold.Xstar.shape
    if kind == "random":
        du, dv = _tangent_free(manifold, rng.standard_normal((p, d)), rng.standard_normal((d, d)))
    elif kind == "symmetry":
        k = rng.standard_normal((d, d))
        k = (k + k.T) / 2.0
        du, dv = manifold.U_star @ k, -manifold.V_star @ k
    else:
        du = np.zeros((p, d))
        dv = np.zeros((d, d))
        du[:, -1] = -manifold.U_star[:, -1]
        dv[:, -1] = -manifold.V_star[:, -1]
    norm = np.sqrt(np.sum(du ** 2) + np.sum(dv ** 2))
    return du / norm, dv / norm


@dataclass(frozen=True)
class OnePointScan:
    """Ratios sampled by :func:`one_point_scan`; arrays have shape ``(len(radii), n_samples)``.

    ``alpha_P``/``beta_P`` use the P-geometry, ``alpha_E``/``beta_E`` the Euclidean one in
    (A, B) anchored at the P-projection; ``dist_P`` is the exact P-distance of each sample to
    S (at most r; equal to r to first order), ``dist_E`` the Euclidean distance to the anchor.
    """

    radii: np.ndarray
    kind: str
    lam: float
    alpha_P: np.ndarray
    beta_P: np.ndarray
    alpha_E: np.ndarray
    beta_E: np.ndarray
    dist_P: np.ndarray
    dist_E: np.ndarray

    def alpha(self, geometry: str = "P") -> np.ndarray:
        """Per radius, the smallest alpha ratio over the samples (an estimate of alpha(r))."""
        return np.min(self._pick(geometry)[0], axis=1)

    def beta(self, geometry: str = "P") -> np.ndarray:
        """Per radius, the largest beta ratio over the samples (an estimate of beta(r))."""
        return np.max(self._pick(geometry)[1], axis=1)

    def failure_radius(self, geometry: str = "P", *, threshold: float = 0.0) -> float:
        """The smallest radius whose smallest alpha ratio is ``<= threshold`` (NaN if none)."""
        failed = np.nonzero(self.alpha(geometry) <= check_finite("threshold", threshold))[0]
        return float(self.radii[failed[0]]) if failed.size else float("nan")

    def _pick(self, geometry: str) -> tuple[np.ndarray, np.ndarray]:
        if geometry == "P":
            return self.alpha_P, self.beta_P
        if geometry == "euclidean":
            return self.alpha_E, self.beta_E
        raise ValueError(f"geometry must be 'P' or 'euclidean', got {geometry!r}")


@finite_result
def one_point_scan(manifold: MinimizerManifold, radii: np.ndarray, *, kind: DirectionKind,
                   lam: float, n_samples: int, rng: np.random.Generator) -> OnePointScan:
    """Sample the one-point ratios of ``Q = L + R`` (``lam = 0``: of L alone) around S.

    For each radius r and each sample: O Haar on O(d) (both components), a unit normal
    direction of the given ``kind`` at O = I rotated by O, and
    ``theta = (U* O + r dU O, V* O + r dV O)`` mapped to (A, B); then
    :func:`attnlib.geometry.one_point_ratios` in both geometries. Draw order per sample: O,
    then the direction. ``n_samples`` is at most :data:`MAX_SCAN_SAMPLES` per radius.
    """
    r = check_positive_entries("radii", as_matrix("radii", radii, ndim=1))
    lam = check_positive("lam", lam, allow_zero=True)
    n_samples = check_int("n_samples", n_samples, minimum=1, maximum=MAX_SCAN_SAMPLES)
    check_memory("n_samples", n_samples, 6 * 8 * r.size * n_samples, "the ratios")
    rng = check_generator("rng", rng)
    d = manifold.singular_values.size
    out = {key: np.empty((r.size, n_samples))
           for key in ("alpha_P", "beta_P", "alpha_E", "beta_E", "dist_P", "dist_E")}
    for i, radius in enumerate(r):
        for j in range(n_samples):
            rotation = random_rotation(d, rng=rng)
            du, dv = normal_direction(manifold, kind, rng=rng)
            a, b = manifold.unfactor((manifold.U_star + radius * du) @ rotation,
                                     (manifold.V_star + radius * dv) @ rotation)
            out["alpha_P"][i, j], out["beta_P"][i, j], out["dist_P"][i, j] = \
                one_point_ratios(a, b, manifold, lam=lam, geometry="P")
            out["alpha_E"][i, j], out["beta_E"][i, j], out["dist_E"][i, j] = \
                one_point_ratios(a, b, manifold, lam=lam, geometry="euclidean")
    return OnePointScan(radii=r, kind=kind, lam=lam, **out)


@dataclass(frozen=True)
class StationaryPoint:
    """Gradient norms and Hessian spectra (in (U, V), i.e. the P-geometry) at one point.

    ``grad_L``/``grad_Q``: Frobenius norm of the (U, V) gradient of L and of Q = L + R;
    ``hessian_L``/``hessian_Q``: sorted Hessian eigenvalues; ``n_zero_*`` counts eigenvalues
    with ``|h| <= zero_tol * max|h|``.
    """

    name: str
    grad_L: float
    grad_Q: float
    hessian_L: np.ndarray
    hessian_Q: np.ndarray
    zero_tol: float

    def n_negative(self, which: str = "Q") -> int:
        """Number of eigenvalues below ``-zero_tol * max|h|`` (strict-saddle directions)."""
        h = self._hessian(which)
        return int(np.sum(h < -self.zero_tol * np.abs(h).max()))

    def n_zero(self, which: str = "Q") -> int:
        """Number of eigenvalues with ``|h| <= zero_tol * max|h|`` (flat directions)."""
        h = self._hessian(which)
        return int(np.sum(np.abs(h) <= self.zero_tol * np.abs(h).max()))

    def _hessian(self, which: str) -> np.ndarray:
        if which not in ("Q", "L"):
            raise ValueError(f"which must be 'Q' or 'L', got {which!r}")
        return self.hessian_Q if which == "Q" else self.hessian_L


@finite_result
def stationary_point_table(manifold: MinimizerManifold, *, lam: float = 1.0, c: float = 2.0,
                           zero_tol: float = 1e-9) -> list[StationaryPoint]:
    """Evaluate L and Q = L + R at the stationary points of the module docstring.

    Points (in (U, V)): the origin; the balanced partial-SVD points dropping the smallest and
    the largest singular value; a point of S; the unbalanced global minimum of L
    ``(c U*, V* / c)``; the unbalanced saddle of L ``(c U_J, V_J / c)`` dropping the smallest
    singular value.

    Examples
    --------
    The balanced points are stationary points of Q; only the point of S has no direction of
    negative curvature, and its ``d (d - 1) / 2`` flat directions are the rotations of S:

    >>> import numpy as np
    >>> from attnlib.data import default_problem
    >>> from attnlib.geometry import minimizer_manifold
    >>> from attnlib.landscape import stationary_point_table
    >>> problem = default_problem(rng=np.random.default_rng(0), d=3, p=5)
    >>> table = stationary_point_table(minimizer_manifold(problem.Sigma, problem.M))
    >>> for row in table[:4]:
    ...     print(f"{row.name}: {row.grad_Q < 1e-10}, {row.n_negative()} negative")
    origin: True, 9 negative
    balanced saddle, smallest s dropped: True, 1 negative
    balanced saddle, largest s dropped: True, 3 negative
    point of S (global minimum): True, 0 negative
    >>> table[3].n_zero()
    3
    """
    lam = check_positive("lam", lam)
    c = check_positive("c", c)
    zero_tol = check_positive("zero_tol", zero_tol)
    d = manifold.singular_values.size
    drop_min = np.ones(d, dtype=bool)
    drop_min[-1] = False
    drop_max = np.ones(d, dtype=bool)
    drop_max[0] = False

    def factor_of(keep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return manifold.factor(*manifold.balanced_svd_point(keep))

    u_j, v_j = factor_of(drop_min)
    points = [
        ("origin", factor_of(np.zeros(d, dtype=bool))),
        ("balanced saddle, smallest s dropped", (u_j, v_j)),
        ("balanced saddle, largest s dropped", factor_of(drop_max)),
        ("point of S (global minimum)", (manifold.U_star, manifold.V_star)),
        (f"unbalanced minimum of L (c = {c:g})", (c * manifold.U_star, manifold.V_star / c)),
        (f"unbalanced saddle of L (c = {c:g})", (c * u_j, v_j / c)),
    ]
    table = []
    for name, (u, v) in points:
        _, gu, gv = factor_loss_and_grad(u, v, manifold.Xstar)
        _, ru, rv = factor_regularizer_and_grad(u, v, lam=lam)
        table.append(StationaryPoint(
            name=name,
            grad_L=float(np.sqrt(np.sum(gu ** 2) + np.sum(gv ** 2))),
            grad_Q=float(np.sqrt(np.sum((gu + ru) ** 2) + np.sum((gv + rv) ** 2))),
            hessian_L=np.linalg.eigvalsh(factor_hessian(u, v, manifold.Xstar, lam=0.0)),
            hessian_Q=np.linalg.eigvalsh(factor_hessian(u, v, manifold.Xstar, lam=lam)),
            zero_tol=zero_tol))
    return table


@finite_result
def condition_sweep(Xstar: np.ndarray, kappas: np.ndarray, *, radius: float, lam: float,
                    n_samples: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One-point constants at one radius as the condition number of Sigma grows, X* fixed.

    For each kappa: ``Sigma = covariance(d, kappa=kappa, rng=rng)`` (random rotation,
    geometric spectrum), ``M = X* Sigma^{-1/2}`` (so S in (U, V) is the same for every
    kappa), then :func:`one_point_scan` with random and symmetry directions (``n_samples``
    each). Returns per kappa the smallest alpha ratio and the largest beta ratio over both
    kinds, in each geometry (keys ``alpha_P, beta_P, alpha_E, beta_E``) and ``kappa``.
    ``n_samples`` is at most :data:`MAX_SCAN_SAMPLES`.
    """
    xstar = as_matrix("Xstar", Xstar)
    radius = check_positive("radius", radius)
    n_samples = check_int("n_samples", n_samples, minimum=1, maximum=MAX_SCAN_SAMPLES)
    ks = as_matrix("kappas", kappas, ndim=1)
    if np.any(ks < 1):
        raise ValueError("kappas must be >= 1 (condition numbers)")
    rng = check_generator("rng", rng)
    d = xstar.shape[1]
    result = {key: np.empty(ks.size) for key in ("alpha_P", "beta_P", "alpha_E", "beta_E")}
    for i, kappa in enumerate(ks):
        sigma = covariance(d, kappa=float(kappa), rng=rng)
        _, inv_half = spd_sqrt(sigma)
        manifold = _manifold(sigma, xstar @ inv_half, name="Xstar")
        scans = [one_point_scan(manifold, np.array([radius]), kind=kind, lam=lam,
                                n_samples=n_samples, rng=rng) for kind in ("random", "symmetry")]
        for geometry, tag in (("P", "P"), ("euclidean", "E")):
            result[f"alpha_{tag}"][i] = min(float(s.alpha(geometry)[0]) for s in scans)
            result[f"beta_{tag}"][i] = max(float(s.beta(geometry)[0]) for s in scans)
    result["kappa"] = ks.copy()
    return result
