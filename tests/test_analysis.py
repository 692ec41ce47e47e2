"""Tests of attnlib.analysis: summaries of training histories (chapters 4-6)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib import analysis, data, geometry, population


def test_pad_histories_pads_with_nan_and_rejects_long_curves():
    out = analysis.pad_histories([np.arange(3.0), np.arange(5.0)])
    assert out.shape == (2, 5)
    np.testing.assert_array_equal(out[0, :3], [0.0, 1.0, 2.0])
    assert np.isnan(out[0, 3:]).all()
    np.testing.assert_array_equal(out[1], np.arange(5.0))
    assert analysis.pad_histories([np.ones(2)], length=4).shape == (1, 4)
    with pytest.raises(ValueError, match="length = 2"):
        analysis.pad_histories([np.ones(3)], length=2)
    with pytest.raises(ValueError, match="must have 1 axes"):
        analysis.pad_histories([np.ones((2, 2))])


def test_seed_summary_matches_numpy_and_ignores_nan():
    rng = np.random.default_rng(0)
    curves = rng.standard_normal((5, 7))
    summary = analysis.seed_summary(curves)
    np.testing.assert_allclose(summary.median, np.median(curves, axis=0))
    np.testing.assert_allclose(summary.lower, np.quantile(curves, 0.25, axis=0))
    np.testing.assert_allclose(summary.upper, np.quantile(curves, 0.75, axis=0))
    assert (summary.count == 5).all()
    curves[0, 3:] = np.nan            # a run that diverged after iteration 2
    curves[:, 6] = np.nan             # no run has a value at the last iteration
    summary = analysis.seed_summary(curves, lower=0.1, upper=0.9)
    np.testing.assert_allclose(summary.median[3], np.median(curves[1:, 3]))
    np.testing.assert_allclose(summary.upper[4], np.quantile(curves[1:, 4], 0.9))
    assert summary.count[3] == 4 and summary.count[6] == 0
    assert np.isnan(summary.median[6]) and np.isnan(summary.lower[6])
    with pytest.raises(ValueError, match="lower"):
        analysis.seed_summary(curves, lower=0.8, upper=0.2)


def test_iterations_to_threshold_first_crossing_and_not_reached():
    curve = np.array([1.0, 0.5, 0.2, 0.3, 0.05])
    assert analysis.iterations_to_threshold(curve, 0.25) == 2.0
    assert analysis.iterations_to_threshold(curve, 1.0) == 0.0
    assert analysis.iterations_to_threshold(curve, 0.01) == np.inf
    many = np.stack([curve, np.full(5, np.nan), curve[::-1]])
    np.testing.assert_array_equal(analysis.iterations_to_threshold(many, 0.25),
                                  [2.0, np.inf, 0.0])
    assert analysis.format_iterations(np.inf, 2000) == "not reached (> 2000)"
    assert analysis.format_iterations(12.0, 2000) == "12"
    with pytest.raises(ValueError, match=r"value must be a non-negative integer or \+inf"):
        analysis.format_iterations(-np.inf, 2000)            # not "not reached"
    with pytest.raises(ValueError, match="threshold"):
        analysis.iterations_to_threshold(curve, -1.0)


@settings(deadline=None, max_examples=40)
@given(st.lists(st.floats(0.0, 10.0), min_size=1, max_size=30), st.floats(0.0, 10.0))
def test_iterations_to_threshold_property(values, threshold):
    curve = np.array(values)
    k = analysis.iterations_to_threshold(curve, threshold)
    if np.isinf(k):
        assert (curve > threshold).all()
    else:
        assert curve[int(k)] <= threshold and (curve[: int(k)] > threshold).all()


def test_settling_iteration():
    curve = np.array([5.0, 1.0, 2.0, 1.05, 0.99, 1.0])
    assert analysis.settling_iteration(curve, rtol=0.1) == 3
    assert analysis.settling_iteration(curve, rtol=0.02) == 4
    assert analysis.settling_iteration(np.ones(4), rtol=0.0) == 0
    assert analysis.settling_iteration(np.arange(1.0, 5.0), rtol=0.0) == 3
    with pytest.raises(ValueError, match="NaN"):
        analysis.settling_iteration(np.array([1.0, np.nan]), rtol=0.1)


def test_balance_matches_regularizer_and_is_zero_on_s():
    rng = np.random.default_rng(2)
    problem = data.default_problem(rng=rng, d=4, p=6)
    a, b = rng.standard_normal((6, 4)), rng.standard_normal((4, 4))
    gap, scale = analysis.balance(a, b, problem.Sigma)
    assert gap ** 2 == pytest.approx(8.0 * population.regularizer(a, b, problem.Sigma, lam=1.0))
    u, v = population.to_factor(a, b, problem.Sigma)
    assert scale == pytest.approx(np.linalg.norm(v))
    manifold = geometry.minimizer_manifold(problem.Sigma, problem.M)
    gap, scale = analysis.balance(*manifold.point(), problem.Sigma)
    assert gap < 1e-12 and scale == pytest.approx(manifold.balanced_scale)
