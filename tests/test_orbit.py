"""Tests of attnlib.orbit: the orbit tangent is the span of (U K, V K), it is exactly flat for
the closed form, the restricted Hessian is the full Hessian's restriction, and every method
reaches a target it records honestly (evaluations counted, budget kept, bad input refused)."""

from __future__ import annotations

import numpy as np
import pytest

from scipy.linalg import expm

from attnlib import algorithm, attention, data, orbit, population, reference


def _finite_problem(n: int = 60, seed: int = 3):
    rng = np.random.default_rng(seed)
    problem = data.default_problem(rng=rng, d=3, p=4, kappa=3.0, noise_std=0.2)
    x, y = problem.sample(n, rng=rng)
    loss = algorithm.empirical_loss(x, y)
    objective = loss.reference_objective(1.0)
    return loss, objective


def _closed_form(sigma: np.ndarray):
    problem = data.default_problem(rng=np.random.default_rng(1), d=4, p=5, kappa=3.0)
    loss = algorithm.closed_form_loss(sigma, problem.M)
    return orbit.factor_problem(loss.reference_objective(1.0), loss.manifold.point(),
                                      sigma)


def test_tangent_is_an_orthonormal_basis_of_the_skew_directions() -> None:
    rng = np.random.default_rng(0)
    sigma = data.covariance(4, spectrum=[1.0, 0.7, 0.4, 0.2], rng=np.random.default_rng(5))
    factor_problem, z = _closed_form(sigma)
    u, v = z[:20].reshape(5, 4), z[20:].reshape(4, 4)
    basis = orbit.orbit_tangent(factor_problem, z)
    assert basis.shape == (5 * 4 + 4 * 4, 6)
    np.testing.assert_allclose(basis.T @ basis, np.eye(6), atol=1e-12)
    skew = rng.standard_normal((4, 4))
    skew -= skew.T
    direction = np.concatenate([(u @ skew).ravel(), (v @ skew).ravel()])
    np.testing.assert_allclose(basis @ (basis.T @ direction), direction, atol=1e-12)
    symmetric = skew @ skew                                  # not a rotation: not in the span
    other = np.concatenate([(u @ symmetric).ravel(), (v @ symmetric).ravel()])
    assert np.linalg.norm(other - basis @ (basis.T @ other)) > 0.1 * np.linalg.norm(other)


def test_tangent_of_another_covariance_is_the_twisted_orbit() -> None:
    sigma = data.covariance(4, spectrum=[1.0, 0.7, 0.4, 0.2], rng=np.random.default_rng(5))
    factor_problem, z = _closed_form(sigma)
    own = orbit.orbit_tangent(factor_problem, z)
    np.testing.assert_allclose(orbit.orbit_tangent(factor_problem, z, sigma) @ own.T @ own,
                               orbit.orbit_tangent(factor_problem, z, sigma), atol=1e-12)
    other = orbit.orbit_tangent(factor_problem, z, np.eye(4))   # W = O: (A O, B O)
    a, b = factor_problem.split(z)
    skew = np.zeros((4, 4))
    skew[0, 1], skew[1, 0] = 1.0, -1.0
    direction = factor_problem.flat(a @ skew, b @ skew)
    np.testing.assert_allclose(other @ (other.T @ direction), direction, atol=1e-12)
    assert np.linalg.norm(direction - own @ (own.T @ direction)) > 1e-3 * np.linalg.norm(direction)


def test_tangent_refuses_a_rank_deficient_point() -> None:
    factor_problem, z = _closed_form(np.eye(4))
    with pytest.raises(ValueError, match="rank d"):
        orbit.orbit_tangent(factor_problem, np.zeros_like(z))
    with pytest.raises(ValueError, match="z"):
        orbit.orbit_tangent(factor_problem, z[:-1])
    with pytest.raises(ValueError, match="Sigma"):
        orbit.orbit_tangent(factor_problem, z, np.eye(3))


def test_the_orbit_is_flat_for_the_closed_form_and_tilted_at_finite_n() -> None:
    problem = data.default_problem(rng=np.random.default_rng(1), d=3, p=4, kappa=3.0)
    closed = algorithm.closed_form_loss(problem.Sigma, problem.M)
    factor_problem, z = orbit.factor_problem(closed.reference_objective(1.0),
                                                   closed.manifold.point(), problem.Sigma)
    flat = orbit.restricted_hessian(factor_problem, z, orbit.orbit_tangent(factor_problem, z))
    assert np.max(np.abs(flat)) < 1e-8                       # finite-difference error only
    loss, objective = _finite_problem()
    optimum = reference.reference_minimizer(objective, loss.manifold.point(), loss.Sigma_hat)
    factor_problem, z = orbit.factor_problem(objective, (optimum.A, optimum.B),
                                                   loss.Sigma_hat)
    tangent = orbit.orbit_tangent(factor_problem, z)
    restricted = orbit.restricted_hessian(factor_problem, z, tangent)
    full = factor_problem.hessian(z, 1e-5)
    np.testing.assert_allclose(restricted, tangent.T @ full @ tangent, atol=1e-7)
    assert np.linalg.eigvalsh(restricted)[0] > 1e-6          # the finite sample tilts it
    assert factor_problem.evaluations >= 2 * tangent.shape[1]


@pytest.mark.parametrize("keys", ["shared", "independent"])
def test_orbit_tilt_is_the_derivative_of_the_loss_along_the_orbit(keys: str) -> None:
    """The slope equals a central difference of L_hat(A R_t, B R_t) on the same data, and the
    noise part is the noisy slope minus the noise-free one (float64)."""
    problem = data.default_problem(rng=np.random.default_rng(2), d=3, p=4, kappa=3.0)
    a, b = algorithm.spectral_init(problem.Sigma, problem.M)
    n = 7
    tilt = orbit.orbit_tilt(a, b, problem.Sigma, problem.M, n, draws=2, noise_std=0.1,
                            rng=np.random.default_rng(5), keys=keys)
    rng = np.random.default_rng(5)                 # the draws orbit_tilt makes, in its order
    skew = rng.standard_normal((3, 3))
    skew = (skew - skew.T) / np.linalg.norm(skew - skew.T)
    prompts = 1 if keys == "shared" else n
    x = rng.standard_normal((prompts, n, 3)) @ np.linalg.cholesky(problem.Sigma).T
    y = x @ problem.M.T + 0.1 * rng.standard_normal((prompts, n, 4))
    rows = None if keys == "shared" else np.arange(n) * n
    half, inv_half = population.spd_sqrt(problem.Sigma)

    def loss_at(t: float, targets: np.ndarray) -> float:
        rotation = half @ expm(t * skew) @ inv_half
        return attention.prompts_loss_and_grad(a @ rotation, b @ rotation, x, targets,
                                               rows=rows)[0]

    h = 1e-5
    clean = x @ problem.M.T
    central = (loss_at(h, clean) - loss_at(-h, clean)) / (2 * h)
    noisy = (loss_at(h, y) - loss_at(-h, y)) / (2 * h)
    assert tilt.noise_free[0] == pytest.approx(central, rel=1e-6, abs=1e-10)
    assert tilt.noise[0] == pytest.approx(noisy - central, rel=1e-6, abs=1e-10)
    with pytest.raises(ValueError, match="keys"):
        orbit.orbit_tilt(a, b, problem.Sigma, problem.M, n, draws=2, noise_std=0.1,
                         rng=np.random.default_rng(5), keys="fresh")


@pytest.mark.parametrize("method", ["lbfgs", "newton_polish", "orbit_nesterov"])
def test_methods_reach_the_target_and_count_their_evaluations(method: str) -> None:
    loss, objective = _finite_problem()
    optimum = reference.reference_minimizer(objective, loss.manifold.point(), loss.Sigma_hat,
                                            hessian=False)
    factor_problem, z0 = orbit.factor_problem(objective, loss.manifold.point(),
                                                    loss.Sigma_hat)
    start_value = factor_problem.value_and_grad(z0)[0]
    factor_problem.evaluations = 0
    target = optimum.value + 1e-8 * (start_value - optimum.value)
    extra = dict(step=0.5, warmup=20, refresh=10) if method == "orbit_nesterov" else {}
    result = getattr(orbit, method)(factor_problem, z0, target=target, max_evaluations=5000,
                                    spent=7, **extra)
    assert result.reached and result.values[-1] <= target
    assert result.values[0] == pytest.approx(start_value)
    assert result.evaluations[0] == 8 and np.all(np.diff(result.evaluations) >= 0)
    assert result.evaluations[-1] <= 7 + factor_problem.evaluations
    np.testing.assert_allclose(factor_problem.split(result.z)[0], optimum.A, atol=1e-3)


@pytest.mark.parametrize("method", ["lbfgs", "newton_polish", "orbit_nesterov"])
def test_methods_stop_at_their_budget(method: str) -> None:
    loss, objective = _finite_problem()
    factor_problem, z0 = orbit.factor_problem(objective, loss.manifold.point(),
                                                    loss.Sigma_hat)
    extra = dict(step=0.5) if method == "orbit_nesterov" else {}
    result = getattr(orbit, method)(factor_problem, z0, target=-np.inf, max_evaluations=30,
                                    **extra)
    assert not result.reached
    assert factor_problem.evaluations <= 30 + 60          # at most one Newton iteration over


def test_bad_input_names_the_argument() -> None:
    loss, objective = _finite_problem()
    factor_problem, z0 = orbit.factor_problem(objective, loss.manifold.point(),
                                                    loss.Sigma_hat)
    with pytest.raises(ValueError, match="step"):
        orbit.orbit_nesterov(factor_problem, z0, step=-1.0, target=0.0, max_evaluations=10)
    with pytest.raises(ValueError, match="radius"):
        orbit.orbit_nesterov(factor_problem, z0, step=0.5, target=0.0, max_evaluations=10,
                             radius=0.0)
    with pytest.raises(ValueError, match="max_evaluations"):
        orbit.lbfgs(factor_problem, z0, target=0.0, max_evaluations=0)
    with pytest.raises(ValueError, match="directions"):
        orbit.restricted_hessian(factor_problem, z0, np.ones((3, 2)))
