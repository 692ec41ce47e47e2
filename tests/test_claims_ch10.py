"""attnbook.claims.ch10: the Box-Cox rule separates log(1/eps) from power laws; thresholds."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook.claims import ch10
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED

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


def _ar1_noise(size: int, rho: float, sd: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = np.empty(size)
    noise[0] = rng.standard_normal()
    for k in range(1, size):
        noise[k] = rho * noise[k - 1] + np.sqrt(1 - rho**2) * rng.standard_normal()
    return sd * noise


def test_log_time_as_stated_is_not_testable():
    assert ch10.log_time_as_stated().status == NOT_TESTABLE


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_exactly_exponential_approach_is_reproduced(seed):
    """The null: two exponential rates plus noise correlated along the record (as the chain
    means are) pass; so does one rate, and the old Box-Cox rule is what rejected them."""
    t = np.linspace(0.0, 100.0, 1001)
    sem = np.full(t.size, 0.003)
    two = 0.1 + 0.5 * np.exp(-t / 3.0) + 0.2 * np.exp(-t / 30.0) + _ar1_noise(t.size, 0.98, 0.003, seed)
    one = 0.1 + 0.7 * np.exp(-t / 10.0) + _ar1_noise(t.size, 0.98, 0.003, seed + 10)
    fits = {"two rates": ch10.exponential_approach(t, two, sem),
            "one rate": ch10.exponential_approach(t, one, sem)}
    assert ch10.exponential_verdict(fits).status == REPRODUCED
    assert fits["two rates"].parameters[2] > fits["two rates"].parameters[4]   # fast rate first


def test_a_power_law_approach_is_not_exponential():
    t = np.linspace(0.0, 100.0, 1001)
    sem = np.full(t.size, 1e-4)
    power = 0.1 + (1.0 + t / 0.01) ** -0.5 + _ar1_noise(t.size, 0.5, 1e-4, 3)
    fit = ch10.exponential_approach(t, power, sem)
    assert fit.power_law < 2.0 < fit.exponential
    assert ch10.exponential_verdict({"power": fit}).status == NOT_REPRODUCED


def test_exponential_approach_refuses_bad_input():
    with pytest.raises(ValueError, match="sem"):
        ch10.exponential_approach(np.arange(10.0), np.ones(10), -np.ones(10))
    with pytest.raises(ValueError, match="at least 8"):
        ch10.exponential_approach(np.arange(10.0), np.ones(10), np.zeros(10))
