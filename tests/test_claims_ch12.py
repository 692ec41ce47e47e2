"""attnbook.claims.ch12: the verdicts of chapter 12 on both sides of their thresholds."""

from __future__ import annotations

from attnbook.claims import ch12
from attnbook.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


def test_speedup_on_both_sides_of_2_and_1():
    assert ch12.preconditioner_speedup([2.0, 23.1], [1, 10]).status == REPRODUCED
    assert ch12.preconditioner_speedup([1.9, 23.1], [1, 10]).status == PARTLY
    assert ch12.preconditioner_speedup([0.9, 0.0], [1, 10]).status == NOT_REPRODUCED


def test_theorem_33_parts_on_both_sides_of_eps_and_10_eps():
    combined, parts = ch12.theorem_33_on_part1({"a": 0.99, "b": 9.9}, {"a": 0.08, "b": 7.8})
    assert [p.status for p in parts] == [REPRODUCED, PARTLY] and combined.status == PARTLY
    assert "7.8 eps" in parts[1].reason
    combined, parts = ch12.theorem_33_on_part1({"a": 10.1}, {"a": 0.1})
    assert combined.status == NOT_REPRODUCED
    assert ch12.theorem_33_on_part1({"a": 1.0}, {"a": 0.1})[0].status == REPRODUCED
