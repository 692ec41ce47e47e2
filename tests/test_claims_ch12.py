"""attnbook.claims.ch12: the verdicts of chapter 12 on both sides of their thresholds."""

from __future__ import annotations

import pytest

from attnbook.claims import ch12
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


def test_speedup_on_both_sides_of_2_and_1():
    assert ch12.preconditioner_speedup([2.0, 23.1], [1, 10]).status == REPRODUCED
    assert ch12.preconditioner_speedup([1.9, 23.1], [1, 10]).status == PARTLY
    assert ch12.preconditioner_speedup([0.9, 0.0], [1, 10]).status == NOT_REPRODUCED


def test_theorem_33_parts_on_both_sides_of_eps_and_10_eps():
    combined, parts = ch12.theorem_33_on_part1({"a": 0.99, "b": 9.9}, {"a": 0.08, "b": 0.8})
    assert [p.status for p in parts] == [REPRODUCED, PARTLY] and combined.status == PARTLY
    assert "0.8 eps" in parts[1].reason
    combined, parts = ch12.theorem_33_on_part1({"a": 10.1}, {"a": 0.1})
    assert combined.status == NOT_REPRODUCED
    assert ch12.theorem_33_on_part1({"a": 1.0}, {"a": 0.1})[0].status == REPRODUCED


def test_theorem_33_null_cases_of_the_offset_rule():
    # offset below eps and final gap below eps: the part passes
    assert ch12.theorem_33_on_part1({"a": 0.5}, {"a": 0.9})[1][0].status == REPRODUCED
    # offset below eps and final gap above 10 eps: the part fails
    assert ch12.theorem_33_on_part1({"a": 10.5}, {"a": 0.9})[1][0].status == NOT_REPRODUCED
    # offset above eps: not testable at this temperature, whatever the gap, offset in the reason
    for gap in (0.5, 5.0, 32.1):
        part = ch12.theorem_33_on_part1({"a": gap}, {"a": 7.85})[1][0]
        assert part.status == NOT_TESTABLE and not part.measurements
        assert "not testable at this temperature" in part.reason and "7.85 eps" in part.reason


def test_theorem_33_combined_rests_on_the_testable_parts_and_names_the_other():
    combined, parts = ch12.theorem_33_on_part1({"annealed": 5.67, "langevin": 32.1},
                                               {"annealed": 0.0785, "langevin": 7.85})
    assert [p.status for p in parts] == [PARTLY, NOT_TESTABLE]
    assert combined.status == PARTLY
    assert combined.reason == ("annealed: final gap <= eps: partly reproduced; not testable: "
                               "langevin: final gap <= eps (its Gibbs offset 7.85 eps > eps)")
    # a reproduced part beside an untestable one is still only partly (never beyond what was
    # measured); no testable part: not testable
    assert ch12.theorem_33_on_part1({"a": 0.5, "b": 0.5}, {"a": 0.1, "b": 2.0})[0].status == PARTLY
    assert ch12.theorem_33_on_part1({"b": 0.5}, {"b": 2.0})[0].status == NOT_TESTABLE


def test_theorem_33_needs_the_same_methods_in_both_mappings():
    with pytest.raises(ValueError, match="same methods"):
        ch12.theorem_33_on_part1({"a": 1.0}, {"b": 0.1})
