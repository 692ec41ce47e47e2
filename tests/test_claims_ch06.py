"""attnbook.claims.ch06: each threshold of chapter 6's verdicts from both sides."""

import numpy as np
import pytest

from attnbook.claims import ch06
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


def test_statistical_term_and_one_over_n():
    assert ch06.statistical_term(-1.5, -1.45, 51200).status == REPRODUCED
    assert ch06.statistical_term(-1.0, -1.45, 51200).status == NOT_REPRODUCED
    assert ch06.error_one_over_n({0.1: -1.05}, {0.1: -0.95}).status == REPRODUCED
    assert ch06.error_one_over_n({0.1: -1.05}, {0.1: -1.3}).status == PARTLY
    assert ch06.error_one_over_n({0.1: -1.5}, {0.1: -0.5}).status == NOT_REPRODUCED


def test_minimax_rate_judges_the_exponent_not_the_constant():
    verdict = ch06.minimax_rate(-1.05, -1.0, 4.0)
    assert verdict.status == REPRODUCED and "constant" in verdict.reason
    assert ch06.minimax_rate(-1.3, -1.0, 1.0).status == PARTLY
    assert ch06.minimax_rate(-1.5, -1.0, 1.0).status == NOT_REPRODUCED


def test_geometric_rate_thresholds():
    assert ch06.geometric_rate([1e-4, 1e-3], ["a", "b"]).status == REPRODUCED
    assert ch06.geometric_rate([2e-3], ["a"]).status == NOT_REPRODUCED
    assert ch06.geometric_finite_n_fast([2000, 1500], [0, 1]).status == REPRODUCED
    assert ch06.geometric_finite_n_fast([2001, 1500], [0, 1]).status == PARTLY
    assert ch06.geometric_finite_n_fast([6e4, 9e4], [0, 1]).status == NOT_REPRODUCED
    assert ch06.kappa_free_rate(1e-9).status == REPRODUCED
    assert ch06.kappa_free_rate(1e-8).status == NOT_REPRODUCED


def test_prompts_bias_is_not_testable_when_the_tokens_matter():
    confounded = ch06.prompts_bias((-1.1, -0.7), -0.9, -1.2, "n = 640..5000", (-0.93, 0.26),
                                   (-1.73, 0.14))
    assert [v.status for v in confounded] == [NOT_TESTABLE, NOT_TESTABLE]
    bound, one = ch06.prompts_bias((-1.1, -0.9), -1.0, -1.2, "n", (-1.0, 0.2), (-1.1, 0.2))
    assert bound.status == NOT_REPRODUCED and one.status == REPRODUCED
    bound, one = ch06.prompts_bias((-1.5, -1.3), -1.4, -1.2, "n", (-1.0, 0.2), (-1.1, 0.2))
    assert bound.status == REPRODUCED and one.status == NOT_REPRODUCED
    _, one = ch06.prompts_bias((-2.0, -0.2), -1.1, -1.2, "n", (-1.0, 0.2), (-1.1, 0.2))
    assert one.status == NOT_TESTABLE                       # interval wider than +- 0.35


def test_delta_method_thresholds():
    assert ch06.delta_method([np.log(1.4)], ["n=40"]).status == REPRODUCED
    assert ch06.delta_method([np.log(2.0)], ["n=40"]).status == PARTLY
    assert ch06.delta_method([np.log(4.0)], ["n=40"]).status == NOT_REPRODUCED


def test_dimension_free_rate_per_dimension():
    assert ch06.dimension_free_rate([5, 10], [0.9385, 0.938], [0.9385, 0.9385]).status == (
        REPRODUCED)
    assert ch06.dimension_free_rate([5, 20], [0.9385, 0.936], [0.9385, 0.9385]).status == PARTLY


def test_geometric_finite_n_needs_only_mu_below_one():
    # the null of the stricter reading: a slow rate below 1 satisfies the summaries' mu < 1
    slow = ch06.geometric_finite_n({0: 0.999729}, {0: 0.999892})
    assert slow.status == REPRODUCED and "0.999729 < 1" in slow.reason
    assert ch06.geometric_finite_n_fast([6.39e4], [0]).status == NOT_REPRODUCED
    stalled = ch06.geometric_finite_n({0: 0.999729, 1: 1.0}, {0: 0.999892, 1: 0.9999})
    assert stalled.status == PARTLY                        # mu = 1: no geometric decay
    assert ch06.geometric_finite_n({0: 1.0001}, {0: 1.0}).status == NOT_REPRODUCED


def _two_modes(d_gap: float, size: int = 700, start: float = 0.1) -> np.ndarray:
    """An excess risk made of the slowest mode (rate 0.9385) and a nearby faster one of equal
    weight, stopped at 1e-20 like chapter 6's runs."""
    m = np.arange(size)
    curve = start / 2 * (0.9385 ** m + (0.9385 - d_gap) ** m)
    return np.where(curve >= 1e-20, curve, np.nan)


def test_window_rate_reads_the_slowest_mode_late():
    exact = _two_modes(0.0)
    assert abs(ch06.window_rate(exact) - 0.9385) < 1e-12        # one mode: any window
    near = _two_modes(0.004)                                   # a mode close to the slowest
    late = abs(ch06.window_rate(near) - 0.9385)
    early = abs(ch06.window_rate(near, window=(1e-6, 1e-3)) - 0.9385)
    assert late < early / 2
    # the same curve judged in each window: a nearby mode fails the early one only
    assert ch06.dimension_free_rate([20], [0.9385 - late], [0.9385]).status == REPRODUCED
    assert ch06.dimension_free_rate([20], [0.9385 - early], [0.9385],
                                    earlier_window=True).status == NOT_REPRODUCED
    with pytest.raises(ValueError, match="1e-20"):              # the window reaches the stop
        ch06.window_rate(_two_modes(0.0, start=1e-5))
    with pytest.raises(ValueError, match="0 < low < high < 1"):
        ch06.window_rate(exact, window=(1e-10, 1e-16))


def test_dimension_free_rate_prints_both_windows():
    new = ch06.dimension_free_rate([5, 20], [0.9385, 0.9376], [0.9385, 0.9385])
    assert new.status == REPRODUCED and "1e-16..1e-10 of its start" in new.reason
    old = ch06.dimension_free_rate([5, 20], [0.9385, 0.9368], [0.9385, 0.9385],
                                   earlier_window=True)
    assert old.status == PARTLY and old.claim == ch06.EARLIER_WINDOW_CLAIM
    assert old.claim != new.claim and "1e-18..1e-6" in old.reason
