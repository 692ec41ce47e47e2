"""Chapter 3 (the landscape): verdicts on the manifold of minima and one-point convexity."""

from __future__ import annotations

from typing import Mapping

from .. import verdicts

__all__ = ["CLAIMS", "ROUND_OFF", "connected_manifold", "one_point_convexity", "regularizer_keeps_manifold"]

CLAIMS = {
    "p1-connected-manifold":
        "the global minima of the regularized population loss form a smooth connected manifold S",
    "p1-one-point-convexity":
        "near S the loss is one-point strongly convex and one-point smooth in the P-norm",
    "p1-regularizer-keeps-manifold":
        "the regularizer preserves the manifold of global minima (R = 0 and grad Q = 0 on S)",
}


#: values below this are round-off, which differs between machines: they print as this value
ROUND_OFF = 1e-14


def connected_manifold(components: int, starts: int) -> verdicts.Verdict:
    """Connected means one component: the distinct signs of det O over the minima reached from
    ``starts`` random starts must number ``components <= 1``."""
    return verdicts.verdict(
        CLAIMS["p1-connected-manifold"], components, 1, direction="<=",
        quantity=f"components of S reached from {starts} random starts (distinct signs of det O)")


def one_point_convexity(smallest_alpha: Mapping[str, float], largest_beta: Mapping[str, float],
                        beta_bound: float) -> list[verdicts.Verdict]:
    """Strong convexity: every sampled direction's smallest alpha-ratio ``> 0``; smoothness:
    every largest beta-ratio ``<= beta_bound`` ((2 s_max)^2). Both over radii r <= 0.03 of the
    regularized loss, keyed by the kind of direction. Returns the two parts and the combined
    verdict, in that order."""
    convex = verdicts.verdict(
        "one-point strong convexity", list(smallest_alpha.values()), 0.0, direction=">",
        labels=list(smallest_alpha), quantity="smallest alpha-ratio (P, r up to 0.03)")
    smooth = verdicts.verdict(
        "one-point smoothness", list(largest_beta.values()), beta_bound, direction="<=",
        labels=list(largest_beta),
        quantity="largest beta-ratio (P, r up to 0.03, bound (2 s_max)^2)")
    return [convex, smooth, verdicts.combine(CLAIMS["p1-one-point-convexity"], [convex, smooth])]


def regularizer_keeps_manifold(largest_regularizer: float, largest_excess: float,
                               largest_gradient: float, rotations: int, *,
                               tolerance: float = 1e-12) -> verdicts.Verdict:
    """At sampled points of S: R, L - L* and the gradient norm of Q = L + R all ``<= tolerance``
    (round-off), so every point of S stays a global minimum of Q with value L*. Values below
    ``ROUND_OFF`` (machine dependent) are judged and printed as ``ROUND_OFF``."""
    shown = [max(v, ROUND_OFF) for v in (largest_regularizer, largest_excess, largest_gradient)]
    return verdicts.verdict(
        CLAIMS["p1-regularizer-keeps-manifold"], shown, tolerance, fmt=".0e",
        quantity=f"largest over {rotations} points of S (round-off shown as 1e-14),",
        labels=["R", "L - L*", "gradient norm of Q"])
