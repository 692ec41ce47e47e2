"""attnbook.claims.ch06b: the chapter's own verdicts on both sides of their thresholds."""

import pytest

from attnbook.claims import ch06b
from attnbook.verdicts import NOT_REPRODUCED, PARTLY, REPRODUCED


def test_curvature_law_within_and_beyond_two_standard_errors():
    assert ch06b.curvature_law({"a": (-1.1, 0.1, -1.0)}).status == REPRODUCED
    assert ch06b.curvature_law({"a": (-1.3, 0.1, -1.0)}).status == NOT_REPRODUCED
    assert ch06b.curvature_law({"a": (-1.1, 0.1, -1.0),
                                "b": (-0.7, 0.05, -1.5)}).status == PARTLY


def test_the_corrected_law_is_its_own_claim():
    corrected = ch06b.curvature_law({"a": (-0.9, 0.1, -1.0)},
                                    claim="book-orbit-curvature-corrected")
    assert corrected.status == REPRODUCED and "noise-free targets" in corrected.claim
    with pytest.raises(ValueError, match="curvature law"):
        ch06b.curvature_law({"a": (-1.0, 0.1, -1.0)}, claim="book-n-free-method")


def test_shared_key_tilt_passes_exact_power_laws_and_rejects_the_first_law():
    """A null that satisfies the claim (exponents -1, -3/2, -1) is reproduced; tilts that fall
    like the first law said (-3/2 with shared keys) are not."""
    exact = {"shared": (-1.0, -1.0), "fresh": (-1.5, -1.5), "noise": (-1.0, -1.0)}
    assert ch06b.shared_key_tilt(exact).status == REPRODUCED
    first_law = {"shared": (-1.5, -1.0), "fresh": (-1.5, -1.5), "noise": (-1.0, -1.0)}
    assert ch06b.shared_key_tilt(first_law).status == PARTLY
    assert ch06b.shared_key_tilt({"shared": (-1.25, -1.0)}).status == NOT_REPRODUCED


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
