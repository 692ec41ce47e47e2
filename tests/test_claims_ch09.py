"""attnlib.claims.ch09: Theorem 3.2's verdict on both sides of the crossover threshold."""

from __future__ import annotations

from attnlib.claims import ch09
from attnlib.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


def test_theorem_32_orbit_part_on_both_sides_of_300_decades():
    combined, orbit = ch09.theorem_32({"log s = 1": 14.2, "power s = 1": 299.9})
    assert orbit.status == REPRODUCED
    assert combined.status == PARTLY and "not testable: the other directions" in combined.reason
    assert ch09.theorem_32({"log s = 1": 300.1})[1].status == NOT_REPRODUCED
    assert ch09.theorem_32({"a": 300.1}, maximum=301.0)[1].status == REPRODUCED
