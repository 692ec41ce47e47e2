"""attnlib.claims.ch09: Theorem 3.2's verdict on both sides of its thresholds."""

from __future__ import annotations

from attnlib.claims import ch09
from attnlib.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


def test_theorem_32_on_both_sides_of_300_decades_and_zero_margin():
    combined, parts = ch09.theorem_32({"log s = 1": 14.2, "power s = 1": 299.9},
                                      {"log": 0.0, "power": 3.0})
    assert [p.status for p in parts] == [REPRODUCED, REPRODUCED] and combined.status == REPRODUCED
    combined, parts = ch09.theorem_32({"log s = 1": 300.1}, {"log": 1.0})
    assert parts[0].status == NOT_REPRODUCED and combined.status == PARTLY
    combined, parts = ch09.theorem_32({"log s = 1": 14.2}, {"log": -0.1, "power": 2.0})
    assert parts[1].status == PARTLY and combined.status == PARTLY
    assert ch09.theorem_32({"a": 300.1}, {"log": 1.0}, maximum=301.0)[0].status == REPRODUCED
