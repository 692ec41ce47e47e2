"""attnbook.claims.ch04: each threshold of chapter 4's verdicts from both sides."""

import pytest

from attnbook.claims import ch04
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


def test_spectral_start_and_preconditioner_thresholds():
    assert ch04.spectral_start([0.2, 0.25], [0, 1]).status == REPRODUCED
    assert ch04.spectral_start([0.2, 0.26], [0, 1]).status == PARTLY
    assert ch04.preconditioner(0.5).status == REPRODUCED
    assert ch04.preconditioner(0.51).status == NOT_REPRODUCED


def test_a_saddle_is_removed_only_when_it_stops_being_stationary():
    unbalanced, saddle, combined = ch04.regularizer_removes(0.1, 1e-6)
    assert (unbalanced.status, saddle.status, combined.status) == (REPRODUCED,) * 3
    assert combined.claim == ch04.CLAIMS["p1-regularizer-removes-spurious-points"]
    _, saddle, combined = ch04.regularizer_removes(0.1, 1e-12)   # gradient zero: still a saddle
    assert saddle.status == NOT_REPRODUCED and combined.status == PARTLY
    unbalanced, _, combined = ch04.regularizer_removes(0.6, 1e-12)
    assert unbalanced.status == NOT_REPRODUCED and combined.status == NOT_REPRODUCED
    _, saddle, _ = ch04.regularizer_removes(0.1, 1.01e-8)         # just above the tolerance
    assert saddle.status == REPRODUCED


AVOIDED = dict(final_excess=[1e-22] * 20, largest_rise=[-1e-23] * 20, lowest_spurious=1.3e-3)


def test_avoiding_spurious_points_holds_with_strict_saddles_that_stay_stationary():
    # the null of the stricter reading: saddles still stationary (removes: partly), but strict
    # and left by every random start, so "helps avoid" is reproduced
    *parts, combined = ch04.regularizer(0.1, -0.05, **AVOIDED)
    assert [p.status for p in parts] == [REPRODUCED] * 3 and combined.status == REPRODUCED
    assert combined.claim == ch04.CLAIMS["p1-regularizer-spurious-points"]
    assert ch04.regularizer_removes(0.1, 1e-15)[-1].status == PARTLY


def test_a_saddle_is_avoided_only_when_strict():
    _, strict, _, combined = ch04.regularizer(0.1, -0.99e-8, **AVOIDED)
    assert strict.status == NOT_REPRODUCED and combined.status == PARTLY   # flat: not strict
    assert ch04.regularizer(0.1, -1.01e-8, **AVOIDED)[1].status == REPRODUCED
    assert ch04.regularizer(0.1, 0.0, **AVOIDED)[1].status == NOT_REPRODUCED


def test_a_random_start_that_stays_above_the_lowest_saddle_value_counts_as_spurious():
    final = [1e-22] * 19 + [1.3e-3]                          # one start ends at the saddle value
    *_, starts, combined = ch04.regularizer(0.1, -0.05, final, [0.0] * 20, 1.3e-3)
    assert starts.status == NOT_REPRODUCED and combined.status == PARTLY
    assert "= 0.05" in starts.reason
    below = [1e-22] * 19 + [1.29e-3]                         # just below it: avoided
    assert ch04.regularizer(0.1, -0.05, below, [0.0] * 20, 1.3e-3)[2].status == REPRODUCED
    rising = [0.0] * 19 + [1e-10]                            # Q rose: not certified
    assert ch04.regularizer(0.1, -0.05, [1e-22] * 20, rising, 1.3e-3)[2].status == (
        NOT_REPRODUCED)
    assert ch04.regularizer(0.1, -0.05, [1e-22] * 20, [0.0] * 19 + [1e-13], 1.3e-3)[2].status \
        == REPRODUCED                                        # a round-off rise is no rise
    *parts, combined = ch04.regularizer(0.6, 0.0, final, [0.0] * 20, 1.3e-3)
    assert combined.status == NOT_REPRODUCED
    with pytest.raises(ValueError, match="equal 1-D"):
        ch04.regularizer(0.1, -0.05, [1e-22] * 3, [0.0] * 2, 1.3e-3)


def test_renormalization_is_not_called_reproduced():
    verdict = ch04.renormalization(1.0)
    assert verdict.status == NOT_TESTABLE and "by construction" in verdict.reason
    assert ch04.scale_invariant_regularizer().status == NOT_TESTABLE


def test_spectral_start_ball_needs_most_seeds_inside():
    assert ch04.spectral_start_ball(95, 100).status == REPRODUCED
    assert ch04.spectral_start_ball(94, 100).status == NOT_REPRODUCED
