"""attnbook.chapters.ch06: what chapter 6 computes and its report re-checks, on the stored runs
and on small cases with known answers."""

import numpy as np
import pytest

from attnbook import experiments
from attnbook.chapters import ch06


@pytest.fixture(scope="module")
def scaling():
    return experiments.load("scaling")


def test_ols_formula_is_the_inverse_wishart_rate():
    n = np.array([50, 100, 1600])
    assert np.allclose(ch06.ols_formula(n, d=10, p=20, noise_std=0.1),
                       20 * 0.1 ** 2 * 10 / (2 * (n - 10 - 1)), rtol=1e-14)
    assert not ch06.ols_formula(n, d=10, p=20, noise_std=0.0).any()


def test_sample_size_risks_are_the_ends_of_the_stored_curves(scaling):
    risks = ch06.sample_size_risks(scaling)
    curves = scaling["finite_excess_risk"]
    assert np.array_equal(risks.final, curves[..., -1])
    assert np.array_equal(risks.start, curves[..., 0])
    assert risks.final.shape == risks.deployed.shape == risks.ols_fit.shape == curves.shape[:-1]


def test_sample_size_fits_follow_the_chapter(scaling):
    """Every noise level has the three fits, the noisy one the OLS fit too; one generator from
    SEED_BOOT gives the same intervals twice; the slopes are the chapter's (-1.28 and -1.09 at
    sigma = 0.1, each inside its bootstrap interval)."""
    fits = ch06.sample_size_fits(scaling, np.random.default_rng(ch06.SEED_BOOT))
    assert sorted(fits, key=str) == sorted([(0.1, "alg1"), (0.1, "init"), (0.1, "deployed"),
                                            (0.1, "ols"), (0.0, "alg1"), (0.0, "init"),
                                            (0.0, "deployed")], key=str)
    again = ch06.sample_size_fits(scaling, np.random.default_rng(ch06.SEED_BOOT))
    assert all(fits[key].ci == again[key].ci for key in fits)
    assert fits[0.1, "alg1"].exponent == pytest.approx(-1.28, abs=0.005)
    assert fits[0.1, "ols"].exponent == pytest.approx(-1.09, abs=0.005)
    assert all(fit.bootstrap and fit.ci[0] <= fit.exponent <= fit.ci[1] for fit in fits.values())


def test_closed_form_fits_fall_like_one_over_n_for_large_n(scaling):
    fits = ch06.closed_form_fits(scaling, np.random.default_rng(0))
    for sigma in scaling["noise_levels"]:
        assert abs(fits[sigma, "late"].exponent + 1) < 0.05
        assert fits[sigma, "late"].n_points < fits[sigma, "closed"].n_points


def test_alg1_over_ols_only_with_noise_and_about_four(scaling):
    ratios = ch06.alg1_over_ols(scaling)
    assert list(ratios) == [0.1]
    assert ratios[0.1].shape == scaling["n_values"].shape
    assert np.all((ratios[0.1][scaling["n_values"] >= 200] > 3.5)
                  & (ratios[0.1][scaling["n_values"] >= 200] < 4.5))


def test_rate_runs_preconditioned_rate_is_the_predicted_one(scaling):
    runs = ch06.rate_runs(scaling)
    assert runs.preconditioned.dtype == bool and runs.preconditioned.sum() == 10
    assert np.all(np.abs(runs.mu_measured - runs.mu_predicted)[runs.preconditioned] < 1e-3)


def test_slowest_curvatures_and_the_orbit_dimension():
    hessian = np.array([[1.0, 4.0, 16.0, 100.0], [0.5, 2.0, 8.0, 9.0]])
    smallest, geometric = ch06.slowest_curvatures(hessian, 3)
    assert np.array_equal(smallest, [1.0, 0.5])
    assert np.allclose(geometric, [4.0, 2.0], rtol=1e-14)
    assert ch06.orbit_dimension(10) == 45 and ch06.orbit_dimension(2) == 1


def test_iterations_to_shrink_the_slowest_mode_by_the_factor():
    step, h_min = np.array([0.07, 0.05]), np.array([1e-3, 2e-4])
    iterations = ch06.iterations_to_shrink(step, h_min, factor=1e3)
    assert np.allclose((1 - step * h_min) ** (2 * iterations), 1e-3, rtol=1e-10)
    assert np.all(ch06.iterations_to_shrink(step, h_min, factor=1e6) > iterations)


# ---------------------------------------------------------------------------------------------
# What the chapter's cells print
# ---------------------------------------------------------------------------------------------

def test_the_fit_descriptions_show_each_noise_level(scaling):
    rng = np.random.default_rng(ch06.SEED_BOOT)
    fits = ch06.sample_size_fits(scaling, rng)
    text = ch06.describe_sample_size_fits(scaling, fits)
    fit = fits[scaling["noise_levels"][0], "alg1"]
    assert f"slope {fit.exponent:+.2f} +- {fit.stderr:.2f}" in text
    assert text.count("sigma = ") == len(scaling["noise_levels"])
    closed = ch06.describe_closed_form_fits(scaling, ch06.closed_form_fits(scaling, rng))
    assert closed.count(f"n >= {ch06.LATE_N} only") == len(scaling["noise_levels"])
    assert "local slope over this range" in ch06.describe_alg1_over_ols(scaling)


def test_the_rate_and_finite_run_descriptions(scaling):
    rates = ch06.describe_rate_runs(scaling).splitlines()
    assert len(rates) == 2 + scaling["rate_kappa_x"].size
    assert ch06.describe_finite_runs(scaling).count("final gradient norm") == len(
        scaling["noise_levels"])
    table = ch06.tail_rates_table(scaling, 0)
    assert len(str(table).splitlines()) == 2 + scaling["finite_grad_norm"].shape[2]
    dimension = {"d": [5, 10], "mu_measured": [0.9, 0.8], "mu_predicted": [0.91, 0.81]}
    assert ch06.describe_dimension_rates(dimension).splitlines()[1] == (
        "d = 10, p = 20: measured mu = 0.800000, predicted 0.810000")


def test_settling_is_the_first_iteration_within_ten_percent_of_the_floor():
    heat = np.array([[1.0, 0.5, 0.105, 0.1], [1.0, 1.0, 1.0, 1.0]])
    settle = ch06.settling_iterations(heat, np.array([0, 10, 20, 30]))
    assert settle == [20, 0]
    assert ch06.describe_settling(np.array([50, 100]), heat, settle).splitlines()[0] == (
        "n =     50: stat(n) = 1.00e-01; within 10% of it from m = 20")


def test_spectral_over_ols_is_a_ratio_per_seed():
    ratios = ch06.spectral_over_ols(1.0, seeds=2)
    assert len(ratios) == 2 and all(r > 0 for r in ratios)
    table = str(ch06.spectral_over_ols_table({1.0: ratios}))
    assert "median" in table and "smallest" in table
