"""Tests of attnlib.reference: the certified minimizer lands on S for the closed form, agrees
with an independent derivative-free solver on a tiny finite problem, and fails loudly."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import optimize

from attnlib import algorithm, data, geometry, reference


def test_closed_form_minimizer_lands_on_s_with_the_derived_hessian() -> None:
    problem = data.default_problem(rng=np.random.default_rng(0), d=3, p=5, kappa=4.0)
    loss = algorithm.closed_form_loss(problem.Sigma, problem.M)
    start = algorithm.random_init(3, 5, rng=np.random.default_rng(1), scale=1.0)
    optimum = reference.reference_minimizer(loss.reference_objective(1.0), start, problem.Sigma)
    manifold = loss.manifold
    assert optimum.grad_norm <= 1e-9
    assert manifold.distance(optimum.A, optimum.B) < 1e-8          # on S to round-off
    assert optimum.value == pytest.approx(0.0, abs=1e-15)
    derived = geometry.minimum_hessian_eigenvalues(manifold.singular_values, 5, lam=1.0)
    np.testing.assert_allclose(optimum.hessian_eigenvalues, np.sort(derived), atol=1e-6)


def test_finite_problem_agrees_with_an_independent_derivative_free_solver() -> None:
    rng = np.random.default_rng(2)
    problem = data.default_problem(rng=rng, d=2, p=3, kappa=3.0, noise_std=0.1)
    x, y = problem.sample(25, rng=rng)
    loss = algorithm.empirical_loss(x, y)
    objective = loss.reference_objective(1.0)
    optimum = reference.reference_minimizer(objective, loss.manifold.point(), loss.Sigma_hat)
    assert optimum.smallest_eigenvalue > 0                           # a strict local minimum

    shapes = (optimum.A.shape, optimum.B.shape)
    split = optimum.A.size

    def value(z: np.ndarray) -> float:                                # value only: no gradient
        return objective(z[:split].reshape(shapes[0]), z[split:].reshape(shapes[1]))[0]

    elsewhere = np.concatenate([optimum.A.ravel(), optimum.B.ravel()])
    elsewhere = elsewhere + 0.1 * np.random.default_rng(3).standard_normal(elsewhere.size)
    independent = optimize.minimize(value, elsewhere, method="Nelder-Mead",
                                    options=dict(xatol=1e-10, fatol=1e-15, maxiter=200000,
                                                 maxfev=200000, adaptive=True))
    assert independent.fun == pytest.approx(optimum.value, abs=1e-10)
    assert independent.fun >= optimum.value - 1e-12
    np.testing.assert_allclose(independent.x[:split].reshape(shapes[0]), optimum.A, atol=1e-4)


def test_raises_when_the_tolerance_is_not_reached_and_on_bad_options() -> None:
    problem = data.default_problem(rng=np.random.default_rng(4), d=3, p=4, kappa=2.0)
    loss = algorithm.closed_form_loss(problem.Sigma, problem.M)
    start = algorithm.random_init(3, 4, rng=np.random.default_rng(5), scale=1.0)
    with pytest.raises(reference.ReferenceNotConverged, match="gradient norm"):
        reference.reference_minimizer(loss.reference_objective(1.0), start, problem.Sigma,
                                      max_quasi_newton=1, max_newton=0)
    with pytest.raises(ValueError, match="gtol"):
        reference.reference_minimizer(loss.reference_objective(1.0), start, problem.Sigma,
                                      gtol=-1.0)
    with pytest.raises(ValueError, match="start"):
        reference.reference_minimizer(loss.reference_objective(1.0), (start[0], start[1][:2]),
                                      problem.Sigma)


def test_largest_curvature_matches_the_hessian_at_s() -> None:
    problem = data.default_problem(rng=np.random.default_rng(6), d=3, p=4, kappa=2.0)
    loss = algorithm.closed_form_loss(problem.Sigma, problem.M)
    top = reference.largest_curvature(loss.reference_objective(1.0), loss.manifold.point(),
                                      problem.Sigma, rng=np.random.default_rng(7),
                                      iterations=300)
    derived = geometry.minimum_hessian_eigenvalues(loss.manifold.singular_values, 4, lam=1.0)
    assert top == pytest.approx(np.max(derived), rel=1e-5)
