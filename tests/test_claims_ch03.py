"""attnbook.claims.ch03: verdicts on the manifold of minima and one-point convexity."""


from attnbook.claims import ch03
from attnbook.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


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


def test_the_ledger_lists_the_thresholds_in_the_order_of_the_parts():
    from attnbook import ledger

    convex, smooth, combined = ch03.one_point_convexity({"random": 0.25}, {"random": 0.14},
                                                        0.744)
    claim = {"id": "p1-one-point-convexity", "label": "[summary]", "claim": combined.claim,
             "notebook": "notebooks/ch03_landscape.ipynb", "section": "s", "evidence": "s"}
    row = ledger.Row(claim, ledger.Printed("ch03_landscape.ipynb", 1, "s", "[summary]",
                                           combined, (convex, smooth)), "Chapter 3", None)
    _, measured, thresholds, _ = ledger._cells(row)
    assert [m.split(":")[0] for m in measured] == ["one-point strong convexity",
                                                   "one-point smoothness"]
    assert thresholds == [r"\> 0", r"\<= 0.744"]            # alpha's, then beta's
