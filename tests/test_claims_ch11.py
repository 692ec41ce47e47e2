"""attnbook.claims.ch11: the Darcy findings, fed numbers on both sides of every threshold."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook.claims import ch11
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


def _entry(**values: float) -> dict[str, float]:
    """A summarize_phase2-like entry: every key gets a ``_sem`` companion (1% of it)."""
    base = dict(rel_l2=0.06, rmse=0.01, norm_WQ0=5.0, norm_WK0=5.0, growth_WQ=0.0,
                growth_WK=0.0, slope_WQ=0.0, slope_WK=0.0, gap=5e-4, gap0=5e-4, test_loss=5e-3,
                gap_slope=0.0)
    base.update(values)
    out = dict(base)
    out.update({f"{key}_sem": 0.01 * abs(value) + 1e-9 for key, value in base.items()})
    return out


FLAT = {"none": _entry(), "log": _entry(rel_l2=0.0605), "power": _entry(rel_l2=0.064)}
GROWING = {"none": _entry(growth_WQ=2.0, growth_WK=2.0, slope_WQ=3e-3, slope_WK=3e-3,
                          gap_slope=1e-5, gap=7e-4, gap0=5e-4),
           "log": _entry(growth_WQ=1.9, gap=6e-4, test_loss=5.05e-3),
           "power": _entry(growth_WQ=0.5, gap=6e-4, test_loss=4.9e-3)}


def test_same_error_reads_rmse_and_relative_l2_on_both_sides_of_2_and_5_percent():
    verdict, _ = ch11.same_error({"flat": FLAT})
    assert verdict.status == PARTLY                        # power's rel. L2 is 6.7% off
    within = {"none": _entry(), "log": _entry(rel_l2=0.0611, rmse=0.0101),
              "power": _entry(rel_l2=0.0590, rmse=0.0099)}
    assert ch11.same_error({"r": within})[0].status == REPRODUCED         # 1.8%, 1.0%, 1.7%
    rmse_off = dict(within, log=_entry(rel_l2=0.0611, rmse=0.0103))       # RMSE 3% off
    assert ch11.same_error({"r": rmse_off})[1][0].status == PARTLY
    far = {"none": _entry(), "log": _entry(rel_l2=0.07, rmse=0.02),
           "power": _entry(rel_l2=0.07, rmse=0.02)}
    assert ch11.same_error({"r": far})[0].status == NOT_REPRODUCED
    assert "RMSE log" in str(ch11.same_error({"r": far})[1][0])


def test_norms_grow_and_contained_on_both_sides():
    verdict, parts = ch11.norms_grow({"flat": FLAT, "growing": GROWING})
    assert verdict.status == PARTLY
    assert not ch11.grows(parts, "flat") and ch11.grows(parts, "growing")
    assert ch11.relative_growth(GROWING["none"]) == pytest.approx((2.0 - 2 * 0.02) / 5.0)
    slow = dict(GROWING, none=_entry(growth_WQ=2.0, growth_WK=2.0, slope_WQ=2e-3,
                                     slope_WK=2e-3))
    slow["none"]["slope_WQ_sem"] = slow["none"]["slope_WK_sem"] = 1e-3   # 2 SE: not rising
    assert ch11.norms_grow({"g": slow})[1][1].status == NOT_REPRODUCED
    verdict3, parts3 = ch11.norms_contained({"flat": FLAT, "growing": GROWING},
                                            {"flat": False, "growing": True})
    assert parts3[0].status == NOT_TESTABLE and parts3[1].status == PARTLY  # log 0.95, power 0.25
    assert verdict3.status == PARTLY


def test_gap_finding_is_an_and_per_optimizer():
    verdict, per_run, conditions = ch11.gap_grows_without_lower_with({"growing": GROWING})
    assert [c.status for c in conditions] == [REPRODUCED] * 4   # 1% and -2% test loss: fair
    assert per_run[0].status == REPRODUCED and verdict.status == REPRODUCED
    worse = dict(GROWING, log=_entry(growth_WQ=1.9, gap=6e-4, test_loss=5.5e-3))  # 10% worse
    verdict, per_run, conditions = ch11.gap_grows_without_lower_with({"worse": worse})
    assert conditions[3].status == PARTLY and per_run[0].status == NOT_REPRODUCED
    assert verdict.status == NOT_REPRODUCED            # three of four conditions is not the claim
    drifting = dict(GROWING, log=_entry(gap=6e-4, gap_slope=1e-5))
    assert ch11.gap_grows_without_lower_with({"g": drifting})[2][1].status == PARTLY
    barely = dict(GROWING, log=_entry(gap=6.9e-4), power=_entry(gap=6.9e-4))
    assert ch11.gap_grows_without_lower_with({"g": barely})[2][2].status == NOT_REPRODUCED
    # one optimizer shows the finding, another does not: partly, never pooled sub-parts
    verdict, per_run, _ = ch11.gap_grows_without_lower_with({"a": GROWING, "b": worse})
    assert [p.status for p in per_run] == [REPRODUCED, NOT_REPRODUCED]
    assert verdict.status == PARTLY
    assert verdict.reason == "a, all four: reproduced, b, all four: not reproduced"


def test_low_regularization_regime_stops_at_the_first_failure():
    rows = {1e-5: {"log": 0.01, "power": 0.005}, 1e-4: {"log": 0.015, "power": 0.01},
            1e-3: {"log": 0.05, "power": 0.01}, 1e-2: {"log": 0.001, "power": 0.001}}
    assert ch11.low_regularization_regime(rows) == 1e-4
    assert np.isnan(ch11.low_regularization_regime({1e-5: {"log": 0.5}}))
    assert ch11.accuracy_gap({"none": {"rmse": 2.0}, "log": {"rmse": 2.1}}, "log",
                             metric="rmse") == pytest.approx(0.05)
