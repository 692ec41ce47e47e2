"""attnlib.claims.ch04: each threshold of chapter 4's verdicts from both sides."""

from attnlib.claims import ch04
from attnlib.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


def test_spectral_start_and_preconditioner_thresholds():
    assert ch04.spectral_start([0.2, 0.25], [0, 1]).status == REPRODUCED
    assert ch04.spectral_start([0.2, 0.26], [0, 1]).status == PARTLY
    assert ch04.preconditioner(0.5).status == REPRODUCED
    assert ch04.preconditioner(0.51).status == NOT_REPRODUCED


def test_a_saddle_is_removed_only_when_it_stops_being_stationary():
    unbalanced, saddle, combined = ch04.regularizer(0.1, 1e-6)
    assert (unbalanced.status, saddle.status, combined.status) == (REPRODUCED,) * 3
    _, saddle, combined = ch04.regularizer(0.1, 1e-12)       # gradient zero: still a saddle
    assert saddle.status == NOT_REPRODUCED and combined.status == PARTLY
    unbalanced, _, combined = ch04.regularizer(0.6, 1e-12)
    assert unbalanced.status == NOT_REPRODUCED and combined.status == NOT_REPRODUCED


def test_renormalization_is_not_called_reproduced():
    verdict = ch04.renormalization(1.0)
    assert verdict.status == NOT_TESTABLE and "by construction" in verdict.reason
    assert ch04.scale_invariant_regularizer().status == NOT_TESTABLE


def test_spectral_start_ball_needs_most_seeds_inside():
    assert ch04.spectral_start_ball(95, 100).status == REPRODUCED
    assert ch04.spectral_start_ball(94, 100).status == NOT_REPRODUCED
