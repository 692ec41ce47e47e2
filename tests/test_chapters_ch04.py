"""attnbook.chapters.ch04: the objects chapter 4 builds and its report page re-checks."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import algorithm, analysis, population
from attnbook.chapters import ch04
from attnbook.seeds import stream


@pytest.fixture(scope="module")
def seed0() -> ch04.SeedData:
    return ch04.seed_data(0)


def test_seed_data_holds_the_moments_and_both_manifolds(seed0: ch04.SeedData) -> None:
    n = seed0.X.shape[0]
    np.testing.assert_allclose(seed0.Sigma_hat, seed0.X.T @ seed0.X / n, rtol=1e-12)
    np.testing.assert_allclose(seed0.M_hat @ (seed0.X.T @ seed0.X), seed0.Y.T @ seed0.X,
                               rtol=1e-10, atol=1e-12)
    assert seed0.M_hat.shape == (seed0.problem.p, seed0.problem.d)
    np.testing.assert_array_equal(seed0.S.Sigma, seed0.problem.Sigma)
    np.testing.assert_array_equal(seed0.S_hat.Sigma, seed0.Sigma_hat)
    # the spectral start solves the closed-form problem: it lies on S_hat, not on S
    spectral = algorithm.spectral_init(seed0.Sigma_hat, seed0.M_hat)
    assert seed0.S_hat.distance(*spectral) < 1e-10
    assert seed0.S.distance(*spectral) > 0.1


def test_start_measures_compare_the_two_starts_of_each_seed() -> None:
    measures = ch04.start_measures((0, 1))
    assert list(measures) == [(0, "spectral"), (0, "random"), (1, "spectral"), (1, "random")]
    for seed in (0, 1):
        spectral, random = measures[seed, "spectral"], measures[seed, "random"]
        problem = ch04.seed_data(seed).problem
        for m in (spectral, random):
            assert m.excess == pytest.approx(m.loss - problem.L_star, abs=1e-15)
        assert spectral.distance_hat < 1e-10                     # on S_hat up to rounding
        # the chapter's claim: the spectral start is far closer to S than a random start
        assert spectral.distance < 0.25 * random.distance
        assert random.excess > 10 * spectral.excess
        a, b = algorithm.random_init(problem.d, problem.p,
                                     rng=stream("start", seed))
        assert random.loss == population.population_loss(a, b, problem.Sigma, problem.M,
                                                         noise_std=problem.noise_std)


def test_conditioning_runs_start_together_and_the_preconditioner_wins() -> None:
    data = ch04.ill_conditioned_data()
    problem = data[0]
    assert np.linalg.cond(problem.Sigma) == pytest.approx(ch04.KAPPA_ILL, rel=1e-6)
    runs = ch04.conditioning_runs(*data, iterations=100)
    assert set(runs) == {True, False}
    risk = {key: run.history["excess_risk"] for key, run in runs.items()}
    assert risk[True][0] == risk[False][0]                           # the same random start
    assert risk[True][100] <= 0.5 * risk[False][100]                # the report's threshold
    # the values the chapter prints (0.00819 and 0.118 at iteration 100)
    assert risk[True][100] == pytest.approx(0.00819, abs=5e-6)
    assert risk[False][100] == pytest.approx(0.118, abs=5e-4)


def test_unbalanced_minimizer_fits_exactly_and_only_the_regularizer_moves_it(
        seed0: ch04.SeedData) -> None:
    start = ch04.unbalanced_minimizer(seed0.S_hat)
    a, b = start
    np.testing.assert_allclose(a @ seed0.Sigma_hat @ b.T, seed0.M_hat, atol=1e-10)
    assert analysis.balance(a, b, seed0.Sigma_hat)[0] > 1.0          # unbalanced
    assert seed0.S_hat.distance(*ch04.unbalanced_minimizer(seed0.S_hat, spread=1.0)) < 1e-10
    still = ch04.unbalanced_run(seed0.Sigma_hat, seed0.M_hat, start, lam=0.0, iterations=50)
    back = ch04.unbalanced_run(seed0.Sigma_hat, seed0.M_hat, start, lam=1.0, iterations=50)
    d_still, d_back = still.history["dist_P_hat"], back.history["dist_P_hat"]
    assert d_still[-1] == pytest.approx(d_still[0], rel=1e-8)      # zero gradient: it stays
    assert d_back[-1] < 0.9 * d_back[0]                             # it returns toward S_hat


@pytest.mark.parametrize("lam", [0.0, 1.0])
def test_mildest_saddle_is_a_strict_saddle_at_minus_s_min(seed0: ch04.SeedData,
                                                          lam: float) -> None:
    u, v = ch04.mildest_saddle(seed0.S_hat)
    gradient_norm, eigenvalues = ch04.saddle_curvature(u, v, seed0.S_hat.Xstar, lam=lam)
    s_min = seed0.S_hat.singular_values[-1]
    assert gradient_norm < 1e-12
    assert np.all(np.diff(eigenvalues) >= 0)
    assert eigenvalues[0] == pytest.approx(-s_min, rel=1e-8)
    assert int(np.sum(eigenvalues < -1e-9)) == 1


# --- what the chapter prints ------------------------------------------------------------------


def test_the_step_rule_bounds_the_curvature_at_both_starts(seed0: ch04.SeedData) -> None:
    starts = {"spectral": algorithm.spectral_init(seed0.Sigma_hat, seed0.M_hat),
              "random": algorithm.random_init(seed0.problem.d, seed0.problem.p,
                                              rng=stream("start", 0))}
    rules = {name: ch04.step_rule(start, seed0.Sigma_hat, seed0.M_hat, seed0.S_hat)
             for name, start in starts.items()}
    for name, rule in rules.items():
        assert rule.h_max <= rule.bound                         # the bound holds
        assert rule.eta * rule.bound <= 1.25 + 1e-12            # 5c/2 at c = 0.5
        assert rule.eta == algorithm.default_step(*starts[name], seed0.Sigma_hat, seed0.M_hat,
                                                  lam=1.0, precondition=True)
    table = ch04.step_size_table(rules)
    assert [row[0] for row in table.rows] == ["spectral", "random"]
    assert table.columns[-2:] == ("eta beta", "eta h_max")


def test_the_start_table_and_ratios_describe_the_measures() -> None:
    measures = ch04.start_measures((0,))
    table = ch04.start_table(measures)
    assert table.columns == ("seed", "start", "dist_P(S)", "loss L", "excess L - L*",
                             "sqrt(tr D)")
    assert [row[:2] for row in table.rows] == [("0", "spectral"), ("0", "random")]
    ratio = measures[0, "random"].excess / measures[0, "spectral"].excess
    assert ch04.start_ratio_lines(measures).endswith(f"{ratio:.3g} in excess risk")


def test_the_unbalanced_lines_and_the_hessian_table(seed0: ch04.SeedData) -> None:
    start = ch04.unbalanced_minimizer(seed0.S_hat)
    table = ch04.hessian_table(seed0.S_hat, start)
    assert [row[0] for row in table.rows] == ["on S_hat", "unbalanced"]
    assert all(row[-1] == "100" for row in table.rows)            # the d^2 orbit directions
    run = ch04.unbalanced_run(seed0.Sigma_hat, seed0.M_hat, start, lam=1.0, iterations=120)
    line = ch04.unbalanced_line(run, 1.0, seed0.Sigma_hat)
    assert line.startswith("lam = 1: step ") and "dist_P(S_hat) at 0/100/120: " in line
    assert f"{run.history['dist_P_hat'][100]:.3g} / " in line


def test_the_saddle_table_shows_rounding_as_zero(seed0: ch04.SeedData) -> None:
    u, v = ch04.mildest_saddle(seed0.S_hat)
    rows = ch04.saddle_table(u, v, seed0.S_hat.Xstar).rows
    assert [row[0] for row in rows] == ["0", "1"]
    assert all(row[1] == "0" and row[3] == "1" for row in rows)


def test_the_renormalization_lines_compare_the_two_runs() -> None:
    off = np.array([0.2, 0.1, 0.05])
    on = off * (1 + np.array([0.0, 1e-3, 2e-3]))
    text = ch04.renormalization_lines(on, off, np.array([1.0, 1.2, 0.9]), 1.1)
    assert "exceeds tau\n  at 33% of the recorded iterations (max 1.2)" in text
    assert "largest relative difference in excess risk over 2000 iterations: 0.002" in text
