"""Tests of attnlib.fitting: power-law and geometric-rate fits against known answers."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib.fitting import (fit_geometric_rate, fit_power_law, fit_power_law_weighted,
                             local_gd_rate)


@settings(deadline=None, max_examples=25)
@given(exponent=st.floats(-3.0, 1.0), prefactor=st.floats(1e-3, 1e3))
def test_power_law_exact_data_recovered(exponent: float, prefactor: float) -> None:
    x = np.array([50.0, 100.0, 200.0, 400.0, 800.0, 1600.0])
    fit = fit_power_law(x, prefactor * x ** exponent)
    assert fit.exponent == pytest.approx(exponent, abs=1e-10)
    assert fit.prefactor == pytest.approx(prefactor, rel=1e-8)
    assert fit.stderr < 1e-8
    assert fit.n_points == 6


def test_power_law_matches_scipy_linregress() -> None:
    from scipy import stats

    rng = np.random.default_rng(0)
    x = np.geomspace(30, 3000, 7)
    y = 2.0 * x[:, None] ** -1.0 * np.exp(0.2 * rng.standard_normal((7, 5)))
    fit = fit_power_law(x, y)
    reference = stats.linregress(np.repeat(np.log(x), 5), np.log(y).ravel())
    assert fit.exponent == pytest.approx(reference.slope, rel=1e-12)
    assert fit.stderr == pytest.approx(reference.stderr, rel=1e-10)
    half = stats.t.ppf(0.975, 7 * 5 - 2) * reference.stderr
    assert fit.ci == pytest.approx((reference.slope - half, reference.slope + half), rel=1e-10)


def test_power_law_interval_covers_truth_at_nominal_rate() -> None:
    """Monte Carlo coverage of the t-interval under the model it assumes (lognormal noise)."""
    rng = np.random.default_rng(1)
    x = np.geomspace(50, 1600, 6)
    hits = 0
    trials = 200
    for _ in range(trials):
        y = x[:, None] ** -1.0 * np.exp(0.3 * rng.standard_normal((6, 4)))
        low, high = fit_power_law(x, y).ci
        hits += low <= -1.0 <= high
    assert 0.89 <= hits / trials <= 0.995


def test_power_law_bootstrap_interval_contains_estimate_and_is_deterministic() -> None:
    rng = np.random.default_rng(2)
    x = np.geomspace(50, 1600, 6)
    y = x[:, None] ** -2.0 * np.exp(0.1 * rng.standard_normal((6, 6)))
    first = fit_power_law(x, y, rng=np.random.default_rng(5), n_boot=300)
    second = fit_power_law(x, y, rng=np.random.default_rng(5), n_boot=300)
    assert first.bootstrap and first.ci == second.ci
    assert first.ci[0] < first.exponent < first.ci[1]
    assert first.ci[1] - first.ci[0] < 0.2


@pytest.mark.parametrize("bad_x, bad_y, match", [
    (np.array([1.0, 2.0, 3.0]), np.array([1.0, -1.0, 2.0]), "positive"),
    (np.array([2.0, 2.0, 2.0]), np.array([1.0, 2.0, 3.0]), "distinct"),
    (np.array([1.0, 2.0]), np.array([1.0, 2.0]), "at least 3 points"),
    (np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0]), "shape"),
])
def test_power_law_rejects_bad_input(bad_x, bad_y, match) -> None:
    with pytest.raises(ValueError, match=match):
        fit_power_law(bad_x, bad_y)


def test_power_law_bootstrap_needs_two_seeds() -> None:
    with pytest.raises(ValueError, match="2 seeds"):
        fit_power_law(np.arange(1.0, 5.0), np.arange(1.0, 5.0), rng=np.random.default_rng(0),
                      n_boot=10)


@settings(deadline=None, max_examples=25)
@given(rate=st.floats(0.5, 0.999), scale=st.floats(1e-3, 1e3))
def test_geometric_rate_exact_sequence(rate: float, scale: float) -> None:
    m = np.arange(200)
    fit = fit_geometric_rate(m, scale * rate ** m)
    assert fit.rate == pytest.approx(rate, rel=1e-10)
    assert np.exp(fit.intercept) == pytest.approx(scale, rel=1e-8)
    assert fit.stderr < 1e-10


def test_geometric_rate_band_excludes_transient_and_floor() -> None:
    m = np.arange(400)
    # a fast transient, then rate 0.95, then a floor at 1e-12 (as in floating point)
    values = 0.95 ** m + 50 * 0.5 ** m + 1e-12
    fit = fit_geometric_rate(m, values, band=(1e-8, 1e-2))
    assert fit.rate == pytest.approx(0.95, rel=1e-5)
    assert fit.start == int(np.argmax(values <= 1e-2))
    unbanded = fit_geometric_rate(m, values)
    assert abs(unbanded.rate - 0.95) > 1e-4          # the floor biases an unbanded fit


def test_geometric_rate_window_by_iterations() -> None:
    m = np.arange(100)
    values = np.where(m < 50, 0.9 ** m, 0.9 ** 50 * 0.8 ** (m - 50))
    assert fit_geometric_rate(m, values, start=50).rate == pytest.approx(0.8, rel=1e-10)
    assert fit_geometric_rate(m, values, stop=49).rate == pytest.approx(0.9, rel=1e-10)


def test_geometric_rate_errors() -> None:
    m = np.arange(10.0)
    with pytest.raises(ValueError, match="positive"):
        fit_geometric_rate(m, np.linspace(1, -1, 10))
    with pytest.raises(ValueError, match="need at least 3"):
        fit_geometric_rate(m, 0.5 ** m, band=(0.3, 1.0))
    with pytest.raises(ValueError, match="band"):
        fit_geometric_rate(m, 0.5 ** m, band=(1.0, 0.1))
    with pytest.raises(ValueError, match="shape"):
        fit_geometric_rate(m, np.ones(5))


def _problem(kappa_sigma: float, seed: int = 0):
    from attnlib import data

    rng = np.random.default_rng(seed)
    sigma = data.covariance(4, kappa=kappa_sigma, rng=rng)
    return sigma, rng.standard_normal((6, 4)) / np.sqrt(24)


@pytest.mark.parametrize("lam", [0.5, 1.0, 2.0])
def test_local_rate_preconditioned_matches_closed_form_spectrum(lam: float) -> None:
    from attnlib.geometry import gd_contraction_factor, minimizer_manifold

    sigma, m = _problem(10.0)
    s = minimizer_manifold(sigma, m).singular_values
    for step in (0.1 / s[0], 0.4 / s[0], 0.9 / (max(1, lam) * s[0])):
        assert local_gd_rate(step, sigma, m, lam=lam) == pytest.approx(
            gd_contraction_factor(step, s, 6, lam=lam), abs=1e-10)


@pytest.mark.parametrize("precondition", [True, False])
def test_local_rate_predicts_measured_contraction(precondition: bool) -> None:
    """Start next to S, run GD on the closed-form objective, compare dist_P decay with mu."""
    from attnlib import algorithm
    from attnlib.geometry import minimizer_manifold

    sigma, m = _problem(5.0, seed=3)
    manifold = minimizer_manifold(sigma, m)
    rng = np.random.default_rng(4)
    a0, b0 = manifold.point()
    a0 = a0 + 1e-6 * rng.standard_normal(a0.shape)
    b0 = b0 + 1e-6 * rng.standard_normal(b0.shape)
    step = 0.2 / manifold.singular_values[0]
    # without the preconditioner the two slowest modes are close: wait longer for the slowest
    iterations = 400 if precondition else 3000
    method = algorithm.Method(precondition=precondition, lam=1.0,
                              update=algorithm.GD(step=step))
    result = algorithm.train(algorithm.closed_form_loss(sigma, m), method, init=(a0, b0),
                             iterations=iterations)
    dist = result.history["dist_P_hat"]
    fit = fit_geometric_rate(np.arange(dist.size), dist, start=iterations - 400)
    predicted = local_gd_rate(step, sigma, m, lam=1.0, precondition=precondition)
    assert fit.rate == pytest.approx(predicted, abs=3e-4)
    assert predicted < 1.0


def test_local_rate_ignores_sigma_only_with_preconditioner() -> None:
    """Same X* = M Sigma^{1/2}, different Sigma: the preconditioned rate is identical."""
    from attnlib.population import spd_sqrt, target

    sigma1, m1 = _problem(1.0)
    sigma2, _ = _problem(100.0)
    m2 = target(m1, sigma1) @ spd_sqrt(sigma2)[1]          # M = X* Sigma^{-1/2}
    step = 0.1
    assert local_gd_rate(step, sigma2, m2) == pytest.approx(local_gd_rate(step, sigma1, m1),
                                                            abs=1e-10)
    assert local_gd_rate(step, sigma2, m2, precondition=False) > local_gd_rate(
        step, sigma2, m2) + 1e-3


def test_spectrum_gap_rate_matches_gd_on_a_quadratic() -> None:
    """GD on f(z) = 1/2 z^T H z: the gap f(z_m) decays at max_h (1 - eta h)^2."""
    from attnlib.fitting import spectrum_gap_rate

    eigenvalues = np.array([1e-3, 0.05, 0.8])
    step = 1.0
    z = np.ones(3)
    gaps = []
    for _ in range(3000):
        gaps.append(0.5 * np.sum(eigenvalues * z ** 2))
        z = z - step * eigenvalues * z
    fit = fit_geometric_rate(np.arange(3000), np.array(gaps), start=1000)
    assert fit.rate == pytest.approx(spectrum_gap_rate(step, eigenvalues), rel=1e-9)
    with pytest.raises(ValueError, match="positive"):
        spectrum_gap_rate(step, np.array([0.1, -1.0]))


def test_weighted_power_law_recovers_exact_data_and_covers_truth() -> None:
    x = np.array([160.0, 320, 640, 1280, 2560, 5000])
    truth = 0.7 * x ** -1.6
    exact = fit_power_law_weighted(x, truth, 0.05 * truth)
    assert exact.exponent == pytest.approx(-1.6, abs=1e-8)
    assert exact.prefactor == pytest.approx(0.7, rel=1e-6)
    rng = np.random.default_rng(7)
    errors = np.full(x.size, 0.3 * truth[-1]) + 0.1 * truth     # the last points hardly resolved
    covered, trials = 0, 400
    for _ in range(trials):
        noisy = truth + errors * rng.standard_normal(x.size)     # some estimates go negative
        fit = fit_power_law_weighted(x, noisy, errors)
        covered += fit.ci[0] <= -1.6 <= fit.ci[1]
    assert 0.90 <= covered / trials <= 0.99                       # nominal 95%
    with pytest.raises(ValueError, match="stderr must be positive"):
        fit_power_law_weighted(x, truth, 0 * truth)
    with pytest.raises(ValueError, match="at least 2 positive"):
        fit_power_law_weighted(x, -truth, truth)
