"""Tests of attnlib.population: closed-form loss, gradients, factorization, symmetries, OLS."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib import data, population
from conftest import central_differences


def _setup(seed: int, d: int = 4, p: int = 5):
    rng = np.random.default_rng(seed)
    problem = data.default_problem(rng=rng, d=d, p=p, kappa=5.0, noise_std=0.3)
    a = rng.standard_normal((p, d)) / np.sqrt(d)
    b = rng.standard_normal((d, d)) / np.sqrt(d)
    return rng, problem, a, b


@pytest.mark.parametrize("seed", [0, 1])
def test_population_loss_gradient_matches_finite_differences(seed: int) -> None:
    _, problem, a, b = _setup(seed)
    value, grad_a, grad_b = population.population_loss_and_grad(
        a, b, problem.Sigma, problem.M, noise_std=problem.noise_std)
    fd_a, fd_b = central_differences(
        lambda a_, b_: population.population_loss(a_, b_, problem.Sigma, problem.M,
                                                  noise_std=problem.noise_std), a, b)
    np.testing.assert_allclose(grad_a, fd_a, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(grad_b, fd_b, rtol=1e-7, atol=1e-9)
    # the value: 1/2 ||(A Sigma B^T - M) Sigma^{1/2}||^2 + p sigma^2 / 2, and L >= L*
    half, _ = population.spd_sqrt(problem.Sigma)
    direct = 0.5 * np.sum(((a @ problem.Sigma @ b.T - problem.M) @ half) ** 2) + problem.L_star
    assert value == pytest.approx(direct, rel=1e-13)
    assert value >= problem.L_star


@pytest.mark.parametrize("lam", [0.5, 2.0])
def test_regularizer_and_objective_gradients_match_finite_differences(lam: float) -> None:
    _, problem, a, b = _setup(3)
    _, grad_a, grad_b = population.regularizer_and_grad(a, b, problem.Sigma, lam=lam)
    fd_a, fd_b = central_differences(
        lambda a_, b_: population.regularizer(a_, b_, problem.Sigma, lam=lam), a, b)
    np.testing.assert_allclose(grad_a, fd_a, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(grad_b, fd_b, rtol=1e-7, atol=1e-9)
    _, q_a, q_b = population.objective_and_grad(a, b, problem.Sigma, problem.M, lam=lam)
    fd_a, fd_b = central_differences(
        lambda a_, b_: population.objective_and_grad(a_, b_, problem.Sigma, problem.M,
                                                     lam=lam)[0], a, b)
    np.testing.assert_allclose(q_a, fd_a, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(q_b, fd_b, rtol=1e-7, atol=1e-9)


def test_factor_gradients_match_finite_differences() -> None:
    rng = np.random.default_rng(4)
    u, v = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    xstar = rng.standard_normal((5, 3))
    _, gu, gv = population.factor_loss_and_grad(u, v, xstar)
    fd = central_differences(lambda u_, v_: population.factor_loss_and_grad(u_, v_, xstar)[0],
                             u, v)
    np.testing.assert_allclose(gu, fd[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gv, fd[1], rtol=1e-7, atol=1e-9)
    _, gu, gv = population.factor_regularizer_and_grad(u, v, lam=1.5)
    fd = central_differences(
        lambda u_, v_: population.factor_regularizer_and_grad(u_, v_, lam=1.5)[0], u, v)
    np.testing.assert_allclose(gu, fd[0], rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(gv, fd[1], rtol=1e-7, atol=1e-9)


def test_factor_coordinates_round_trip_and_give_the_same_loss() -> None:
    _, problem, a, b = _setup(5)
    u, v = population.to_factor(a, b, problem.Sigma)
    a2, b2 = population.from_factor(u, v, problem.Sigma)
    np.testing.assert_allclose(a2, a, atol=1e-12)
    np.testing.assert_allclose(b2, b, atol=1e-12)
    xstar = population.target(problem.M, problem.Sigma)
    in_factor = population.factor_loss_and_grad(u, v, xstar)[0] + problem.L_star
    in_ab = population.population_loss(a, b, problem.Sigma, problem.M, noise_std=problem.noise_std)
    assert in_factor == pytest.approx(in_ab, rel=1e-12)


@settings(deadline=None, max_examples=25)
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_loss_is_invariant_under_the_gl_symmetry(seed: int) -> None:
    rng, problem, a, b = _setup(seed % 1000)
    gen = np.random.default_rng(seed)
    g = np.eye(problem.d) + 0.5 * gen.standard_normal((problem.d, problem.d)) / np.sqrt(problem.d)
    u, v = population.to_factor(a, b, problem.Sigma)
    xstar = population.target(problem.M, problem.Sigma)
    before = population.factor_loss_and_grad(u, v, xstar)[0]
    after = population.factor_loss_and_grad(u @ g, v @ np.linalg.inv(g).T, xstar)[0]
    assert after == pytest.approx(before, rel=1e-9, abs=1e-12)
    # the same symmetry in (A, B): (A K, B Sigma K^{-T} Sigma^{-1}) leaves A Sigma B^T unchanged
    sigma = problem.Sigma
    k = g
    a_k, b_k = a @ k, b @ sigma @ np.linalg.inv(k).T @ np.linalg.inv(sigma)
    np.testing.assert_allclose(a_k @ sigma @ b_k.T, a @ sigma @ b.T, atol=1e-10)
    assert population.population_loss(a_k, b_k, sigma, problem.M) == pytest.approx(
        population.population_loss(a, b, sigma, problem.M), rel=1e-9, abs=1e-12)


@settings(deadline=None, max_examples=25, derandomize=True)   # the GL check can fail by chance
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_regularizer_is_invariant_under_orthogonal_maps(seed: int) -> None:
    gen = np.random.default_rng(seed)
    u, v = gen.standard_normal((6, 4)), gen.standard_normal((4, 4))
    o = data.random_rotation(4, rng=gen)
    if gen.random() < 0.5:
        o[:, 0] *= -1.0                       # the det = -1 component too
    before = population.factor_regularizer_and_grad(u, v, lam=1.0)[0]
    after = population.factor_regularizer_and_grad(u @ o, v @ o, lam=1.0)[0]
    assert after == pytest.approx(before, rel=1e-10, abs=1e-12)
    # and it is not invariant under a general GL map (the regularizer breaks that symmetry)
    g = np.diag([2.0, 1.0, 1.0, 1.0])
    broken = population.factor_regularizer_and_grad(u @ g, v @ np.linalg.inv(g).T, lam=1.0)[0]
    assert broken != pytest.approx(before, rel=1e-3)


def test_empirical_moments_are_the_ols_fit_and_reject_bad_data() -> None:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((50, 3))
    m = rng.standard_normal((2, 3))
    y = x @ m.T
    sigma_hat, m_hat = population.empirical_moments(x, y)
    np.testing.assert_allclose(sigma_hat, x.T @ x / 50, atol=1e-14)
    np.testing.assert_allclose(m_hat, m, atol=1e-12)          # noiseless: OLS is exact
    with pytest.raises(ValueError, match="n >= d"):
        population.empirical_moments(x[:2], y[:2])
    singular = np.column_stack([x[:, 0], x[:, 0], x[:, 1]])
    with pytest.raises(ValueError, match="singular"):
        population.empirical_moments(singular, y)


def test_ols_excess_risk_matches_monte_carlo() -> None:
    """E 1/2||(M_hat - M) Sigma^{1/2}||^2 = p sigma^2 d / (2 (n - d - 1)) for Gaussian x."""
    rng = np.random.default_rng(7)
    d, p, n, noise, draws = 3, 2, 12, 0.5, 20000
    problem = data.default_problem(rng=rng, d=d, p=p, kappa=4.0, noise_std=noise)
    chol = np.linalg.cholesky(problem.Sigma)
    x = rng.standard_normal((draws, n, d)) @ chol.T
    eps = noise * rng.standard_normal((draws, n, p))
    # M_hat - M = E^T X (X^T X)^{-1}; risk = 1/2 tr((M_hat - M) Sigma (M_hat - M)^T)
    gram = np.einsum("kni,knj->kij", x, x)
    diff = np.linalg.solve(gram, np.einsum("kni,knj->kij", x, eps)).transpose(0, 2, 1)
    risks = 0.5 * np.einsum("kpi,ij,kpj->k", diff, problem.Sigma, diff)
    formula = population.ols_excess_risk(n, d, p, noise)
    standard_error = risks.std(ddof=1) / np.sqrt(draws)
    assert abs(risks.mean() - formula) < 4 * standard_error
    assert standard_error < 0.05 * formula                    # the check has power
    # linear_excess_risk computes the same quantity for one fit
    one = population.linear_excess_risk(problem.M + diff[0], problem.Sigma, problem.M)
    assert one == pytest.approx(risks[0], rel=1e-12)


def test_ols_formula_rejects_small_n() -> None:
    with pytest.raises(ValueError, match="n > d \\+ 1"):
        population.ols_excess_risk(11, 10, 20, 0.1)
    assert population.ols_excess_risk(500, 10, 20, 0.1) == pytest.approx(20 * 0.01 * 10 / (2 * 489))


def test_spd_sqrt_and_singular_sigma() -> None:
    sigma = data.covariance(4, kappa=7.0, rng=np.random.default_rng(8))
    half, inv_half = population.spd_sqrt(sigma)
    np.testing.assert_allclose(half @ half, sigma, atol=1e-13)
    np.testing.assert_allclose(half @ inv_half, np.eye(4), atol=1e-12)
    with pytest.raises(ValueError, match="Sigma"):
        population.spd_sqrt(np.diag([1.0, 0.0]))
