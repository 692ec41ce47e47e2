"""Tests of attnlib.geometry: the manifold S, Procrustes distance, P-geometry, Hessians."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.linalg import expm
from scipy.optimize import minimize

from attnlib import data, geometry, population


def _manifold(seed: int, d: int = 3, p: int = 5) -> geometry.MinimizerManifold:
    problem = data.default_problem(rng=np.random.default_rng(seed), d=d, p=p, kappa=6.0)
    return geometry.minimizer_manifold(problem.Sigma, problem.M)


def _orthogonal(rng: np.random.Generator, d: int, reflect: bool) -> np.ndarray:
    o = data.random_rotation(d, rng=rng)
    if (np.linalg.det(o) < 0) != reflect:
        o[:, 0] *= -1.0
    return o


@pytest.mark.parametrize("reflect", [False, True])
def test_points_of_s_are_global_minima_with_zero_distance(reflect: bool) -> None:
    manifold = _manifold(0)
    rng = np.random.default_rng(1)
    a, b = manifold.point(_orthogonal(rng, 3, reflect))
    # A Sigma B^T = M, the regularizer vanishes, the gradient of Q is zero
    np.testing.assert_allclose(a @ manifold.Sigma @ b.T, manifold.M, atol=1e-12)
    value, grad_a, grad_b = population.objective_and_grad(a, b, manifold.Sigma, manifold.M,
                                                          lam=1.0)
    assert value == pytest.approx(0.0, abs=1e-24)
    assert max(np.abs(grad_a).max(), np.abs(grad_b).max()) < 1e-12
    assert manifold.distance(a, b) < 1e-12
    _, _, o = manifold.project(a, b)
    assert np.sign(np.linalg.det(o)) == (-1 if reflect else 1)
    u, v = manifold.factor(a, b)
    assert np.linalg.norm(v) == pytest.approx(manifold.balanced_scale, rel=1e-12)


@settings(deadline=None, max_examples=20)
@given(seed=st.integers(0, 2 ** 31 - 1))
def test_distance_is_invariant_under_orthogonal_maps(seed: int) -> None:
    manifold = _manifold(2)
    rng = np.random.default_rng(seed)
    u, v = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    o = _orthogonal(rng, 3, bool(seed % 2))
    first = manifold.distance(*manifold.unfactor(u, v))
    second = manifold.distance(*manifold.unfactor(u @ o, v @ o))
    assert second == pytest.approx(first, rel=1e-10)


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_distance_matches_brute_force_minimisation_over_both_components(seed: int) -> None:
    manifold = _manifold(seed)
    rng = np.random.default_rng(seed)
    u, v = rng.standard_normal((5, 3)), rng.standard_normal((3, 3))
    a, b = manifold.unfactor(u, v)
    reflection = np.diag([-1.0, 1.0, 1.0])

    def squared(w: np.ndarray, flip: bool) -> float:
        skew = np.array([[0, w[0], w[1]], [-w[0], 0, w[2]], [-w[1], -w[2], 0]])
        o = expm(skew) @ (reflection if flip else np.eye(3))
        return float(np.sum((u - manifold.U_star @ o) ** 2)
                     + np.sum((v - manifold.V_star @ o) ** 2))

    brute = min(minimize(squared, rng.uniform(-np.pi, np.pi, 3), args=(flip,),
                         method="BFGS").fun for flip in (False, True) for _ in range(6))
    assert manifold.distance(a, b) ** 2 == pytest.approx(brute, rel=1e-7)
    # the projection attains it and its residual is P-orthogonal to the tangent of S
    a_s, b_s, o = manifold.project(a, b)
    delta = (a - a_s, b - b_s)
    assert geometry.p_norm(*delta, manifold.Sigma) == pytest.approx(manifold.distance(a, b),
                                                                    rel=1e-12)
    skew = rng.standard_normal((3, 3))
    skew = skew - skew.T
    tangent = manifold.unfactor(manifold.U_star @ o @ skew, manifold.V_star @ o @ skew)
    assert abs(geometry.p_inner(delta, tangent, manifold.Sigma)) < 1e-10


def test_p_inner_is_the_frobenius_product_of_factor_coordinates() -> None:
    manifold = _manifold(6)
    rng = np.random.default_rng(6)
    first = (rng.standard_normal((5, 3)), rng.standard_normal((3, 3)))
    second = (rng.standard_normal((5, 3)), rng.standard_normal((3, 3)))
    u1, v1 = manifold.factor(*first)
    u2, v2 = manifold.factor(*second)
    assert geometry.p_inner(first, second, manifold.Sigma) == pytest.approx(
        np.sum(u1 * u2) + np.sum(v1 * v2), rel=1e-12)


def test_factor_hessian_matches_finite_differences_of_the_gradient() -> None:
    rng = np.random.default_rng(7)
    u, v = rng.standard_normal((4, 3)), rng.standard_normal((3, 3))
    xstar = rng.standard_normal((4, 3))
    lam = 0.7
    hessian = geometry.factor_hessian(u, v, xstar, lam=lam)

    def gradient(flat: np.ndarray) -> np.ndarray:
        u_, v_ = flat[:12].reshape(4, 3), flat[12:].reshape(3, 3)
        _, gu, gv = population.factor_loss_and_grad(u_, v_, xstar)
        _, ru, rv = population.factor_regularizer_and_grad(u_, v_, lam=lam)
        return np.concatenate([(gu + ru).ravel(), (gv + rv).ravel()])

    flat = np.concatenate([u.ravel(), v.ravel()])
    h = 1e-6
    fd = np.column_stack([(gradient(flat + h * e) - gradient(flat - h * e)) / (2 * h)
                          for e in np.eye(flat.size)])
    np.testing.assert_allclose(hessian, fd, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("lam", [0.3, 1.0, 2.5])
def test_closed_form_hessian_spectrum_at_s(lam: float) -> None:
    manifold = _manifold(8, d=3, p=5)
    rng = np.random.default_rng(8)
    u, v = manifold.factor(*manifold.point(_orthogonal(rng, 3, False)))
    numeric = np.linalg.eigvalsh(geometry.factor_hessian(u, v, manifold.Xstar, lam=lam))
    closed = geometry.minimum_hessian_eigenvalues(manifold.singular_values, 5, lam=lam)
    np.testing.assert_allclose(numeric, closed, atol=1e-10)
    assert np.sum(np.abs(closed) < 1e-12) == 3                 # d (d - 1) / 2 tangent directions


def test_partial_svd_points_are_stationary_strict_saddles() -> None:
    manifold = _manifold(9)
    for keep in ([True, False, True], [False, False, False]):
        a, b = manifold.balanced_svd_point(np.array(keep))
        _, grad_a, grad_b = population.objective_and_grad(a, b, manifold.Sigma, manifold.M)
        assert max(np.abs(grad_a).max(), np.abs(grad_b).max()) < 1e-12
        u, v = manifold.factor(a, b)
        smallest = np.linalg.eigvalsh(geometry.factor_hessian(u, v, manifold.Xstar, lam=1.0))[0]
        assert smallest < -1e-3


def test_one_point_ratios_tend_to_hessian_rayleigh_quotients() -> None:
    """Near S, <grad_P Q, delta>_P / |delta|^2 -> delta^T H delta / |delta|^2 (and the
    unregularized loss is flat along the GL-normal directions (U* K, -V* K))."""
    manifold = _manifold(10)
    rng = np.random.default_rng(10)
    k = rng.standard_normal((3, 3))
    k = k + k.T
    direction = manifold.symmetry_normal_direction(k)
    du, dv = manifold.factor(*direction)
    flat = np.concatenate([du.ravel(), dv.ravel()])
    flat /= np.linalg.norm(flat)
    a0, b0 = manifold.point()
    scale = geometry.p_norm(*direction, manifold.Sigma)
    r = 1e-5
    theta = (a0 + r * direction[0] / scale, b0 + r * direction[1] / scale)
    for lam in (1.0, 0.0):
        hessian = geometry.factor_hessian(manifold.U_star, manifold.V_star, manifold.Xstar,
                                          lam=lam)
        alpha, beta, dist = geometry.one_point_ratios(*theta, manifold, lam=lam)
        assert dist == pytest.approx(r, rel=1e-3)
        assert alpha == pytest.approx(flat @ hessian @ flat, rel=1e-3, abs=1e-4)
        assert beta == pytest.approx(np.sum((hessian @ flat) ** 2), rel=1e-3, abs=1e-4)
    assert alpha < 1e-4                                        # lam = 0: flat along GL orbit


def test_manifold_rejects_p_below_d_and_rank_deficiency() -> None:
    sigma = np.eye(3)
    with pytest.raises(ValueError, match="p = 2 rows < d = 3"):
        geometry.minimizer_manifold(sigma, np.ones((2, 3)))
    with pytest.raises(ValueError, match="rank deficient"):
        geometry.minimizer_manifold(sigma, np.ones((4, 3)))
    with pytest.raises(ValueError, match="symmetric"):
        _manifold(0).symmetry_normal_direction(np.triu(np.ones((3, 3))))
