"""Tests of attnlib.data: rotations, covariances, the regression sampler, the default task."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import data


def test_random_rotation_is_orthogonal_and_haar_moments() -> None:
    rng = np.random.default_rng(0)
    d, draws = 4, 4000
    rotations = np.array([data.random_rotation(d, rng=rng) for _ in range(draws)])
    eye = np.eye(d)
    assert np.abs(rotations[0] @ rotations[0].T - eye).max() < 1e-12
    # Haar on O(d): each entry has mean 0 and variance 1/d; both determinant signs occur
    # with probability 1/2. Tolerances: 5 Monte Carlo standard errors (Var(q^2) <= 1/d^2 * 2).
    entries = rotations.reshape(draws, -1)
    assert np.abs(entries.mean(axis=0)).max() < 5 * np.sqrt(1 / d / draws)
    assert np.abs((entries ** 2).mean(axis=0) - 1 / d).max() < 5 * np.sqrt(2 / d ** 2 / draws)
    positive = np.mean(np.linalg.det(rotations) > 0)
    assert abs(positive - 0.5) < 5 * np.sqrt(0.25 / draws)


@pytest.mark.parametrize("d,kappa", [(1, 1.0), (5, 3.0), (10, 10.0), (20, 1000.0)])
def test_covariance_spectrum_and_condition_number(d: int, kappa: float) -> None:
    sigma = data.covariance(d, kappa=kappa, rng=np.random.default_rng(1))
    assert np.array_equal(sigma, sigma.T)
    eigenvalues = np.linalg.eigvalsh(sigma)[::-1]
    np.testing.assert_allclose(eigenvalues, np.geomspace(1, 1 / kappa, d), rtol=1e-10)
    assert np.linalg.cond(sigma) == pytest.approx(kappa, rel=1e-9)


def test_covariance_given_spectrum_and_no_rotation() -> None:
    spectrum = np.array([3.0, 0.5, 2.0])
    diagonal = data.covariance(3, spectrum=spectrum, rotate=False)
    np.testing.assert_array_equal(diagonal, np.diag(spectrum))
    rotated = data.covariance(3, spectrum=spectrum, rng=np.random.default_rng(2))
    np.testing.assert_allclose(np.linalg.eigvalsh(rotated), np.sort(spectrum), rtol=1e-12)
    assert np.abs(rotated - np.diag(np.diag(rotated))).max() > 1e-3


@pytest.mark.parametrize("kwargs,error", [
    (dict(d=3, kappa=0.5, rng=np.random.default_rng(0)), ValueError),
    (dict(d=0, rng=np.random.default_rng(0)), ValueError),
    (dict(d=3, spectrum=[1.0, -1.0, 2.0], rotate=False), ValueError),
    (dict(d=3, spectrum=[1.0, 2.0], rotate=False), ValueError),
    (dict(d=3), TypeError),
    (dict(d=3, rng=0), TypeError),
])
def test_covariance_rejects_bad_input(kwargs: dict, error: type) -> None:
    with pytest.raises(error):
        data.covariance(**kwargs)


def test_sampler_moments() -> None:
    rng = np.random.default_rng(3)
    problem = data.default_problem(rng=rng, d=4, p=3, noise_std=0.5)
    n = 200_000
    x, y = problem.sample(n, rng=rng)
    assert x.shape == (n, 4) and y.shape == (n, 3)
    sigma = problem.Sigma
    # Sample covariance entry (a, b) has standard error sqrt((S_aa S_bb + S_ab^2) / n).
    standard_error = np.sqrt((np.outer(np.diag(sigma), np.diag(sigma)) + sigma ** 2) / n)
    assert np.all(np.abs(x.T @ x / n - sigma) < 5 * standard_error)
    assert np.all(np.abs(x.mean(axis=0)) < 5 * np.sqrt(np.diag(sigma) / n))
    noise = y - x @ problem.M.T
    # Noise variance estimate: standard error noise_std^2 sqrt(2 / n) per coordinate.
    assert np.all(np.abs(noise.var(axis=0) - 0.25) < 5 * 0.25 * np.sqrt(2 / n))
    assert np.abs(noise.T @ x / n).max() < 5 * 0.5 * np.sqrt(sigma.diagonal().max() / n)


def test_sampler_is_deterministic_given_seed() -> None:
    problem = data.default_problem(rng=np.random.default_rng(4))
    first = problem.sample(7, rng=np.random.default_rng(5))
    second = problem.sample(7, rng=np.random.default_rng(5))
    np.testing.assert_array_equal(first[0], second[0])
    np.testing.assert_array_equal(first[1], second[1])


def test_default_problem_defaults() -> None:
    problem = data.default_problem(rng=np.random.default_rng(6))
    assert (problem.d, problem.p, problem.noise_std) == (10, 20, 0.1)
    assert problem.L_star == pytest.approx(20 * 0.01 / 2)
    assert np.linalg.cond(problem.Sigma) == pytest.approx(10.0, rel=1e-9)
    # M entries are N(0, 1/(p d)): with 200 entries the sample variance times p d is
    # chi^2_200 / 200, within [0.6, 1.5] with probability > 1 - 1e-4.
    assert 0.6 < problem.M.var() * 200 < 1.5
    with pytest.raises(AttributeError):
        problem.noise_std = 1.0  # type: ignore[misc]


@pytest.mark.parametrize("sigma,m,noise,error", [
    (np.array([[1.0, 2.0], [2.0, 1.0]]), np.ones((3, 2)), 0.1, ValueError),   # not PD
    (np.array([[1.0, 0.5], [0.0, 1.0]]), np.ones((3, 2)), 0.1, ValueError),   # not symmetric
    (np.eye(2), np.ones((3, 4)), 0.1, ValueError),                           # M wrong d
    (np.eye(2), np.ones((3, 2)), -1.0, ValueError),                          # noise < 0
    (np.eye(2), np.full((3, 2), np.nan), 0.1, ValueError),                   # non-finite
])
def test_sampler_rejects_bad_input(sigma: np.ndarray, m: np.ndarray, noise: float,
                                   error: type) -> None:
    with pytest.raises(error):
        data.sample_regression(5, sigma, m, noise, rng=np.random.default_rng(0))
    with pytest.raises(error):
        data.RegressionProblem(Sigma=sigma, M=m, noise_std=noise)
