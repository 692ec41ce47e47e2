"""attnlib.claims.ch06b: the chapter's own verdicts on both sides of their thresholds."""

import pytest

from attnlib.claims import ch06b
from attnlib.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


def test_curvature_law_within_and_beyond_two_standard_errors():
    assert ch06b.curvature_law({"a": (-1.1, 0.1, -1.0)}).status == REPRODUCED
    assert ch06b.curvature_law({"a": (-1.3, 0.1, -1.0)}).status == NOT_REPRODUCED
    assert ch06b.curvature_law({"a": (-1.1, 0.1, -1.0),
                                "b": (-0.7, 0.05, -1.5)}).status == PARTLY


def test_n_free_method_needs_a_method_that_always_reached_the_gap():
    assert ch06b.n_free_method({"a": 0.2, "b": 0.9},
                               {"a": [True, True], "b": [True]}).status == REPRODUCED
    assert ch06b.n_free_method({"a": 0.3}, {"a": [True]}).status == NOT_REPRODUCED
    missed = ch06b.n_free_method({"a": 0.1, "b": 0.5}, {"a": [True, False], "b": [True]})
    assert missed.status == NOT_REPRODUCED and "b = 0.5" in missed.reason
    none = ch06b.n_free_method({"a": 0.1, "b": 0.2}, {"a": [False, False], "b": [True, False]})
    assert none.status == NOT_REPRODUCED and "b = 1" in none.reason
    with pytest.raises(ValueError, match="same methods"):
        ch06b.n_free_method({"a": 0.1}, {"b": [True]})
