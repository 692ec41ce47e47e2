"""attnbook.claims.ch09: Theorem 3.2's verdict on both sides of its thresholds."""

from __future__ import annotations

from attnbook.claims import ch09
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


def test_theorem_32_on_both_sides_of_300_decades_and_zero_margin():
    combined, parts = ch09.theorem_32({"log s = 1": 14.2, "power s = 1": 299.9},
                                      {"log": 0.0, "power": 3.0})
    assert [p.status for p in parts] == [REPRODUCED, REPRODUCED] and combined.status == REPRODUCED
    combined, parts = ch09.theorem_32({"log s = 1": 300.1}, {"log": 1.0})
    assert parts[0].status == NOT_REPRODUCED and combined.status == PARTLY
    combined, parts = ch09.theorem_32({"log s = 1": 14.2}, {"log": -0.1, "power": 2.0})
    assert parts[1].status == PARTLY and combined.status == PARTLY
    assert ch09.theorem_32({"a": 300.1}, {"log": 1.0}, maximum=301.0)[0].status == REPRODUCED


def test_lora_any_data_and_size_on_both_sides_and_with_untested_instances():
    good = {"a": {"log": (14.2, 441.7), "power": (3.2, 6.4)}, "b": {"log": (299.9, 99999.0)}}
    combined, parts = ch09.lora_any_data_and_size(good, {})
    assert combined.status == REPRODUCED and len(parts) == 2
    assert combined.claim == ch09.CLAIMS["p2-lora-any-data-size"]
    combined, parts = ch09.lora_any_data_and_size({**good, "c": {"log": (300.1, 7.0)}}, {})
    assert [p.status for p in parts] == [PARTLY, REPRODUCED] and combined.status == PARTLY
    combined, parts = ch09.lora_any_data_and_size({**good, "c": {"log": (3.0, 1e5 + 1)}}, {})
    assert [p.status for p in parts] == [REPRODUCED, PARTLY] and combined.status == PARTLY
    assert ch09.lora_any_data_and_size({"c": {"log": (301.0, 2e5)}}, {})[0].status == NOT_REPRODUCED
    combined, parts = ch09.lora_any_data_and_size(good, {"n=20 d=5": "no stationary point found"})
    assert parts[-1].status == NOT_TESTABLE and combined.status == PARTLY
    assert "n=20 d=5" in combined.reason and "no stationary point found" in parts[-1].reason
