"""attnlib.claims.ch03: verdicts on the manifold of minima and one-point convexity."""

from attnlib.claims import ch03
from attnlib.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


def test_connected_manifold_needs_one_component():
    assert ch03.connected_manifold(1, 8).status == REPRODUCED
    assert ch03.connected_manifold(2, 8).status == NOT_REPRODUCED


def test_one_point_convexity_needs_both_parts():
    convex, smooth, combined = ch03.one_point_convexity({"random": 0.2}, {"random": 0.5}, 0.7)
    assert (convex.status, smooth.status, combined.status) == (REPRODUCED,) * 3
    assert combined.claim == ch03.CLAIMS["p1-one-point-convexity"]
    _, _, combined = ch03.one_point_convexity({"random": 0.0}, {"random": 0.5}, 0.7)
    assert combined.status == PARTLY                       # alpha must be strictly positive
    _, smooth, combined = ch03.one_point_convexity({"a": 0.2}, {"a": 0.8}, 0.7)
    assert smooth.status == NOT_REPRODUCED and combined.status == PARTLY


def test_regularizer_keeps_manifold_at_round_off_only():
    assert ch03.regularizer_keeps_manifold(1e-31, 1e-31, 1e-15, 8).status == REPRODUCED
    assert ch03.regularizer_keeps_manifold(1e-31, 1e-31, 1e-6, 8).status == PARTLY
    assert ch03.regularizer_keeps_manifold(1e-3, 1e-3, 1e-6, 8).status == NOT_REPRODUCED
