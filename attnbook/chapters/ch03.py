"""Chapter 3 (the landscape): the tables and lines the chapter prints, so that its open cells
show the idea.

``notebooks/ch03_landscape.ipynb`` computes the manifold of minima, the stationary points and
the one-point scans with :mod:`attnlib.geometry` and :mod:`attnlib.landscape` in its open
cells and hands the results to these functions, which arrange and print them. The checks of
the manifold against its closed form (:func:`gram_table`) and the one-step inequality along a
run (:func:`path_check`) are here too, so that the chapter and its tests share them.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import numpy as np

from attnlib import geometry, landscape
from attnbook.tables import ResultTable, result_table

__all__ = ["ROUNDING", "gram_table", "shown", "gradient_table", "count_table", "scan_lines",
           "hessian_constant_lines", "random_alpha_lines", "euclidean_ratio_lines",
           "step_lines", "PathCheck", "path_check", "path_lines", "sweep_lines"]

#: Values below this size are round-off in the chapter's products and gradients.
ROUNDING = 1e-12


def gram_table(manifold: geometry.MinimizerManifold, rotations: Mapping[str, np.ndarray],
               root: np.ndarray, *, resolution: float = ROUNDING) -> ResultTable:
    """At the points ``(Phi Gamma^{1/2} O, Psi Gamma^{1/2} O)`` of S, one column per named
    rotation ``O``: the Frobenius norms of ``U^T U - root``, ``V V^T - root``,
    ``U U^T - Phi Gamma Phi^T``, ``U^T U - V^T V`` and ``U^T U - O^T Gamma O``, where ``root``
    is ``(X*^T X*)^{1/2}`` computed independently of the SVD. Norms below ``resolution`` print
    as ``"< 1e-12"`` (round-off differs between machines)."""
    Phi, Gamma = manifold.left, np.diag(manifold.singular_values)
    labels = ["U^T U - root", "V V^T - root", "U U^T - Phi G Phi^T", "U^T U - V^T V",
              "U^T U - O^T G O"]
    columns = {}
    for name, O in rotations.items():
        U, V = manifold.factor(*manifold.point(O))
        sizes = [np.linalg.norm(m) for m in (U.T @ U - root, V @ V.T - root,
                                             U @ U.T - Phi @ Gamma @ Phi.T, U.T @ U - V.T @ V,
                                             U.T @ U - O.T @ Gamma @ O)]
        columns[name] = [f"{v:.3g}" if v >= resolution else f"< {resolution:.0e}"
                         for v in sizes]
    return result_table(["Frobenius norm of", *columns], list(zip(labels, *columns.values())))


def shown(value: float) -> str:
    """A gradient norm or eigenvalue as the chapter shows it: ``"0"`` at rounding level (below
    :data:`ROUNDING` in absolute value, whose digits differ between machines), else 3 digits."""
    return "0" if abs(value) < ROUNDING else f"{value:.3g}"


def gradient_table(table: Sequence[landscape.StationaryPoint]) -> ResultTable:
    """Per point of ``table``: the gradient norms of L and Q and their smallest Hessian
    eigenvalues (values at rounding level as 0, :func:`shown`)."""
    return result_table(["point", "|grad L|", "|grad Q|", "min eig L", "min eig Q"],
                        [(row.name, shown(row.grad_L), shown(row.grad_Q),
                          shown(row.hessian_L[0]), shown(row.hessian_Q[0])) for row in table])


def count_table(table: Sequence[landscape.StationaryPoint]) -> ResultTable:
    """Per point of ``table``: the number of negative Hessian eigenvalues of Q and of zero
    ones of L and of Q."""
    return result_table(["point", "#neg Q", "#0 L", "#0 Q"],
                        [(row.name, row.n_negative("Q"), row.n_zero("L"), row.n_zero("Q"))
                         for row in table])


def scan_lines(scans: Mapping[tuple[str, float], landscape.OnePointScan]) -> str:
    """The ratios of each scan ``(kind, lambda)`` at its smallest radius, in the P-geometry
    and the Euclidean one, and the smallest ``dist_P / r`` over all samples."""
    lines = [f"{'direction':9s} {'lambda':>6s} | {'alpha_P':>8s} {'beta_P':>8s} | "
             f"{'alpha_E':>8s} {'beta_E':>8s}   (at r = 1e-3)"]
    for (kind, lam), scan in scans.items():
        lines.append(f"{kind:9s} {lam:6.0f} | {scan.alpha('P')[0]:8.2e} "
                     f"{scan.beta('P')[0]:8.2e} | {scan.alpha('euclidean')[0]:8.2e} "
                     f"{scan.beta('euclidean')[0]:8.2e}")
    ratio = min(float(np.min(scan.dist_P / scan.radii[:, None])) for scan in scans.values())
    lines.append(f"smallest dist_P / r over all samples: {ratio:.3f}")
    return "\n".join(lines)


def hessian_constant_lines(hessian_Q: np.ndarray, s: np.ndarray) -> str:
    """The smallest nonzero and the largest eigenvalue of the Hessian of Q at a point of S
    (against ``s_min`` and ``2 s_max`` of the singular values ``s``, descending) and the
    worst-case one-point constants ``alpha = s_min``, ``beta = (2 s_max)^2``."""
    nonzero = hessian_Q[np.abs(hessian_Q) > 1e-9 * hessian_Q.max()]
    return (f"Hessian of Q at S: smallest nonzero eigenvalue {nonzero.min():.4f} "
            f"(s_min = {s[-1]:.4f}),\n  largest {nonzero.max():.4f} (2 s_max = {2 * s[0]:.4f})\n"
            f"worst-case one-point constants:\n  alpha = s_min = {s[-1]:.3g}, "
            f"beta = (2 s_max)^2 = {(2 * s[0]) ** 2:.3g}")


def random_alpha_lines(scans: Mapping[tuple[str, float], landscape.OnePointScan],
                       radii: np.ndarray) -> str:
    """For the random scans at lambda = 0 and 1: the range of the alpha-ratio for r < 1 and
    its values at the next radius and the largest."""
    lines = []
    for lam in (0.0, 1.0):
        alpha, flat = scans["random", lam].alpha("P"), radii < 1.0
        lines.append(f"random, lambda = {lam:g}: alpha-ratio {alpha[flat].min():.3f} to "
                     f"{alpha[flat].max():.3f} for r <= {radii[flat][-1]:.2f},\n  then "
                     f"{alpha[~flat][0]:.3f} at r = {radii[~flat][0]:.2f} and "
                     f"{alpha[-1]:.3f} at r = {radii[-1]:.0f}")
    return "\n".join(lines)


def euclidean_ratio_lines(scans: Mapping[tuple[str, float], landscape.OnePointScan]) -> str:
    """The median, over all radii and scans, of the Euclidean ratio over the P-ratio, for
    alpha and for beta."""
    lines = []
    for which in ("alpha", "beta"):
        ratio = np.concatenate([getattr(scan, which)("euclidean") / getattr(scan, which)("P")
                                for scan in scans.values()])
        lines.append(f"Euclidean / P {which}-ratio, median over all radii and scans: "
                     f"{np.median(ratio):.3f}")
    return "\n".join(lines)


def step_lines(alpha: float, beta: float) -> str:
    """The step sizes that contract (``0 < eta < 2 alpha / beta``), the best one and its rate
    ``rho = 1 - alpha^2 / beta`` (eq. ch03-8)."""
    eta = alpha / beta
    return (f"0 < eta < 2 alpha / beta = {2 * alpha / beta:.3f}; eta = alpha / beta = "
            f"{eta:.4f};\n  rho = 1 - alpha^2 / beta = {1 - alpha ** 2 / beta:.5f}")


class PathCheck(NamedTuple):
    """The one-point ratios along a run and the one-step inequality (eq. ch03-6) there."""

    alpha: np.ndarray
    """The alpha-ratio at each iterate theta_0, ..., theta_T."""
    beta: np.ndarray
    """The beta-ratio at each iterate."""
    distance: np.ndarray
    """``dist_P(theta_t, S)`` at each iterate."""
    shrink: np.ndarray
    """``dist_P(theta_{t+1}, S)^2 / dist_P(theta_t, S)^2``, one per step."""
    held: bool
    """Whether every step shrinks by at most ``1 - 2 eta alpha_t + eta^2 beta_t`` (up to a
    relative 1e-9 for rounding)."""


def path_check(path: Sequence[tuple[np.ndarray, np.ndarray]],
               manifold: geometry.MinimizerManifold, eta: float, *,
               lam: float = 1.0) -> PathCheck:
    """The ratios of :func:`attnlib.geometry.one_point_ratios` at every iterate ``(A, B)`` of
    ``path`` (a run of gradient descent in the P-geometry with step ``eta``) and whether the
    one-step inequality {eq}`eq-ch03-6` held at every step, with the ratios measured there."""
    alpha, beta, distance = np.array([geometry.one_point_ratios(A, B, manifold, lam=lam)
                                      for A, B in path]).T
    shrink = distance[1:] ** 2 / distance[:-1] ** 2
    bound = 1 - 2 * eta * alpha[:-1] + eta ** 2 * beta[:-1]
    return PathCheck(alpha, beta, distance, shrink, bool(np.all(shrink <= bound * (1 + 1e-9))))


def path_lines(check: PathCheck) -> str:
    """The distance at the start and the end, the extreme ratios along the path, the range of
    the per-step shrink factor and whether the one-step bound held."""
    return (f"dist_P {check.distance[0]:.3f} -> {check.distance[-1]:.4f} in "
            f"{check.shrink.size} steps; along the path alpha-ratio >= "
            f"{check.alpha.min():.4f},\n  beta-ratio <= {check.beta.max():.3f}; dist^2 shrinks "
            f"by {check.shrink.min():.3f} to {check.shrink.max():.3f} per step;\n"
            f"  one-step bound held: {check.held}")


def sweep_lines(kappas: np.ndarray, sweep: Mapping[str, np.ndarray]) -> str:
    """Per condition number kappa of Sigma: alpha, beta and alpha^2 / beta in the P-geometry
    and the Euclidean one (:func:`attnlib.landscape.condition_sweep`)."""
    lines = [f"{'kappa':>6s} | {'alpha_P':>8s} {'beta_P':>8s} {'a^2/b P':>8s} | "
             f"{'alpha_E':>8s} {'beta_E':>8s} {'a^2/b E':>8s}"]
    for i, kappa in enumerate(kappas):
        row = []
        for tag in ("P", "E"):
            a, b = sweep[f"alpha_{tag}"][i], sweep[f"beta_{tag}"][i]
            row.append(f"{a:8.2e} {b:8.2e} {a ** 2 / b:8.2e}")
        lines.append(f"{kappa:6.0f} | " + " | ".join(row))
    return "\n".join(lines)
