"""attnbook.claims.ch07: the Poincare verdict on both sides of its thresholds."""

from __future__ import annotations

from attnbook.claims import ch07
from attnbook.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


def test_poincare_on_both_sides_of_10_percent_and_1e_3():
    combined, examples = ch07.poincare(1.09, 1.0, 0.92, 1.0, 9e-4)
    assert examples.status == REPRODUCED
    assert combined.status == PARTLY            # "every Villani loss" is never testable here
    assert ch07.poincare(1.11, 1.0, 0.92, 1.0, 9e-4)[1].status == PARTLY
    assert ch07.poincare(1.0, 1.0, 1.0, 1.0, 1.1e-3)[1].status == PARTLY
    assert ch07.poincare(1.2, 1.0, 0.8, 1.0, 0.1)[1].status == NOT_REPRODUCED
    assert "every Villani loss" in combined.reason
