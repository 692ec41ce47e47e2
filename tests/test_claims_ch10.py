"""attnlib.claims.ch10: the Box-Cox rule separates log(1/eps) from power laws; thresholds."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib.claims import ch10
from attnlib.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED

EPS = np.geomspace(0.4, 0.02, 8)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_growth_exponent_recovers_the_exponent(p):
    h = np.log(1 / EPS) if p == 0 else (EPS ** -p - 1) / p
    assert ch10.growth_exponent(EPS, 2.0 + 3.0 * h) == pytest.approx(p, abs=0.011)


def test_growth_exponent_needs_a_range():
    assert np.isnan(ch10.growth_exponent([0.4, 0.3, 0.2], [1.0, 2.0, 3.0]))       # 3 points
    assert np.isnan(ch10.growth_exponent(np.geomspace(0.4, 0.15, 6), np.arange(6.0)))  # 2.7x
    assert np.isfinite(ch10.growth_exponent(np.geomspace(0.4, 0.13, 6), np.arange(6.0)))
    times = np.log(1 / EPS)
    times[-2:] = np.nan                                     # not reached: dropped
    assert ch10.growth_exponent(EPS, times) == pytest.approx(0.0, abs=0.011)
    with pytest.raises(ValueError, match="epsilons"):
        ch10.growth_exponent([-0.1, 0.2, 0.3, 0.4], [1.0, 2.0, 3.0, 4.0])


def test_readings_on_both_sides_of_the_thresholds():
    combined, parts = ch10.fixed_temperature({"s = 0.02": 0.24}, {"s = 0.01": 0.0})
    assert combined.status == REPRODUCED
    combined, parts = ch10.fixed_temperature({"s = 0.02": 0.26}, {"s = 0.01": 0.0})
    assert parts[0].status == PARTLY and combined.status == PARTLY
    combined, parts = ch10.fixed_temperature({"a": 0.51}, {"b": 0.9})
    assert combined.status == NOT_REPRODUCED
    combined, parts = ch10.fixed_temperature({"a": 0.1, "b": float("nan")}, {"c": float("nan")})
    assert parts[0].status == REPRODUCED and parts[1].status == NOT_TESTABLE
    assert "1 of 2 testable" in parts[0].reason and combined.status == PARTLY
    assert ch10.annealed(0.49, 0.2).status == PARTLY
    assert ch10.annealed(0.2, 0.25).status == REPRODUCED
    assert ch10.annealed(0.6, 0.7).status == NOT_REPRODUCED
