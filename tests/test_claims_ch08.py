"""attnbook.claims.ch08: the verdicts of chapter 8 on both sides of their thresholds."""

from __future__ import annotations

from attnbook.claims import ch08
from attnbook.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


def test_symmetry_at_rounding_level():
    assert ch08.symmetry([0.0, 1e-16], 2e-16).status == REPRODUCED
    assert ch08.symmetry([0.0, 1e-11], 2e-16).status == PARTLY
    assert ch08.symmetry([1e-3], 1e-2).status == NOT_REPRODUCED


def test_not_normalizable_on_both_sides_of_one_half():
    assert ch08.not_normalizable(0.51).status == REPRODUCED
    assert ch08.not_normalizable(0.49).status == NOT_REPRODUCED


def test_theorem_31_needs_both_parts():
    good = {"log s = 1": 18.0, "power s = 1": 3.4}
    combined, parts = ch08.theorem_31(good, {"log": 66.1, "power": 0.0})
    assert combined.status == REPRODUCED
    combined, parts = ch08.theorem_31({**good, "log s = 100": 301.0}, {"log": 1.0, "power": 1.0})
    assert parts[0].status == PARTLY and combined.status == PARTLY
    combined, parts = ch08.theorem_31(good, {"log": -0.1, "power": -2.0})
    assert parts[1].status == NOT_REPRODUCED and combined.status == PARTLY


def test_any_data_and_size_on_both_sides():
    good = {"a": {"log": (17.9, 2723.0), "power": (3.4, 8.0)}, "b": {"log": (71.7, 3603.8)}}
    combined, parts = ch08.any_data_and_size(good)
    assert combined.status == REPRODUCED
    bad = {**good, "c": {"log": (300.5, float("inf"))}}
    combined, parts = ch08.any_data_and_size(bad)
    assert [p.status for p in parts] == [PARTLY, PARTLY] and combined.status == PARTLY
    assert ch08.any_data_and_size({"c": {"log": (301.0, 2e5)}})[0].status == NOT_REPRODUCED


def test_symmetry_prints_round_off_changes_against_a_floor_not_their_digits():
    # 1.2e-16 on one CPU and 0.0 on another: both print as "< 1e-14", so the stored output is the
    # same on every machine; a change above the floor still prints its value.
    reasons = {ch08.symmetry([value], 0.0).reason for value in (0.0, 1.2e-16, 3e-15)}
    assert len(reasons) == 1 and "< 1e-14 <= 1.0e-12" in reasons.pop()
    assert "= 2.0e-13 <= 1.0e-12" in ch08.symmetry([2e-13], 0.0).reason
