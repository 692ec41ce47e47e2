"""Tests of attnlib.landscape: normal directions, one-point scans against the Hessian at S,
stationary points and the condition-number sweep."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import data, geometry, landscape as ls


@pytest.fixture(scope="module")
def manifold() -> geometry.MinimizerManifold:
    problem = data.default_problem(rng=np.random.default_rng(11), d=3, p=5)
    return geometry.minimizer_manifold(problem.Sigma, problem.M)


@pytest.mark.parametrize("kind", ["random", "symmetry", "saddle"])
def test_normal_directions_are_unit_and_normal_to_S(manifold, kind) -> None:
    rng = np.random.default_rng(0)
    du, dv = ls.normal_direction(manifold, kind, rng=rng)
    assert np.sum(du ** 2) + np.sum(dv ** 2) == pytest.approx(1.0, rel=1e-12)
    for _ in range(5):
        w = rng.standard_normal((3, 3))
        w = w - w.T
        inner = np.sum(du * (manifold.U_star @ w)) + np.sum(dv * (manifold.V_star @ w))
        assert abs(inner) < 1e-12


def test_unknown_kind_is_rejected(manifold) -> None:
    with pytest.raises(ValueError, match="kind"):
        ls.normal_direction(manifold, "diagonal", rng=np.random.default_rng(0))


@pytest.mark.parametrize("kind, lam", [("random", 0.0), ("random", 1.0), ("symmetry", 1.0)])
def test_small_radius_ratios_match_the_hessian_at_S(manifold, kind, lam) -> None:
    """For r -> 0, alpha_ratio -> <d, H d> and beta_ratio -> ||H d||^2 (unit normal d)."""
    hessian = geometry.factor_hessian(manifold.U_star, manifold.V_star, manifold.Xstar, lam=lam)
    du, dv = ls.normal_direction(manifold, kind, rng=np.random.default_rng(5))
    direction = np.concatenate([du.ravel(), dv.ravel()])
    radius = 1e-6
    a, b = manifold.unfactor(manifold.U_star + radius * du, manifold.V_star + radius * dv)
    alpha, beta, dist = geometry.one_point_ratios(a, b, manifold, lam=lam, geometry="P")
    assert dist == pytest.approx(radius, rel=1e-5)
    assert alpha == pytest.approx(direction @ hessian @ direction, rel=1e-4)
    assert beta == pytest.approx(np.sum((hessian @ direction) ** 2), rel=1e-4)


def test_scan_is_invariant_under_the_rotation_of_the_base_point(manifold) -> None:
    scan = ls.one_point_scan(manifold, np.array([0.05, 0.2]), kind="saddle", lam=1.0,
                             n_samples=4, rng=np.random.default_rng(1))
    np.testing.assert_allclose(scan.alpha_P, scan.alpha_P[:, :1].repeat(4, axis=1), rtol=1e-8)
    np.testing.assert_allclose(scan.dist_P, scan.dist_P[:, :1].repeat(4, axis=1), rtol=1e-8)


def test_symmetry_directions_need_the_regularizer(manifold) -> None:
    radii = np.array([1e-3, 1e-2])
    plain = ls.one_point_scan(manifold, radii, kind="symmetry", lam=0.0, n_samples=5,
                              rng=np.random.default_rng(2))
    regular = ls.one_point_scan(manifold, radii, kind="symmetry", lam=1.0, n_samples=5,
                                rng=np.random.default_rng(2))
    assert np.all(plain.alpha() < 1e-3 * regular.alpha())
    # L is flat to first order along the GL orbit: the ratio grows like r^2
    assert plain.alpha()[1] / plain.alpha()[0] == pytest.approx(100, rel=0.5)
    assert np.all(plain.dist_P <= radii[:, None] * (1 + 1e-12))


def test_saddle_ray_hits_a_stationary_point(manifold) -> None:
    s_min = manifold.singular_values[-1]
    saddle_r = np.sqrt(2 * s_min)
    scan = ls.one_point_scan(manifold, np.array([0.5 * saddle_r, saddle_r]), kind="saddle",
                             lam=1.0, n_samples=1, rng=np.random.default_rng(3))
    assert scan.alpha()[0] > 1e-3
    assert abs(scan.alpha()[1]) < 1e-10
    assert scan.failure_radius(threshold=1e-10) == pytest.approx(saddle_r)
    assert np.isnan(scan.failure_radius(threshold=-1.0))


def test_stationary_point_table(manifold) -> None:
    d, p = 3, 5
    table = {row.name: row for row in ls.stationary_point_table(manifold, lam=1.0, c=2.0)}
    assert all(row.grad_L < 1e-12 for row in table.values())
    on_s = table["point of S (global minimum)"]
    assert on_s.grad_Q < 1e-12 and on_s.n_negative("Q") == 0
    assert on_s.n_zero("L") == d * d and on_s.n_zero("Q") == d * (d - 1) // 2
    np.testing.assert_allclose(on_s.hessian_Q, geometry.minimum_hessian_eigenvalues(
        manifold.singular_values, p, lam=1.0), atol=1e-10)
    for name in ("origin", "balanced saddle, smallest s dropped",
                 "balanced saddle, largest s dropped"):
        assert table[name].grad_Q < 1e-12 and table[name].n_negative("Q") >= 1
    assert table["balanced saddle, smallest s dropped"].hessian_Q[0] == pytest.approx(
        -manifold.singular_values[-1], rel=1e-8)
    for name in ("unbalanced minimum of L (c = 2)", "unbalanced saddle of L (c = 2)"):
        assert table[name].grad_Q > 1e-2


def test_condition_sweep_euclidean_degrades_p_does_not() -> None:
    problem = data.default_problem(rng=np.random.default_rng(7), d=3, p=4)
    xstar = geometry.minimizer_manifold(problem.Sigma, problem.M).Xstar
    sweep = ls.condition_sweep(xstar, np.array([1.0, 100.0]), radius=1e-3, lam=1.0,
                               n_samples=4, rng=np.random.default_rng(8))
    assert sweep["alpha_P"][0] == pytest.approx(sweep["alpha_E"][0], rel=1e-6)
    assert sweep["alpha_E"][1] < 0.1 * sweep["alpha_E"][0]
    assert sweep["alpha_P"][1] > 0.3 * sweep["alpha_P"][0]
    with pytest.raises(ValueError, match="kappas"):
        ls.condition_sweep(xstar, np.array([0.5]), radius=1e-3, lam=1.0, n_samples=1,
                           rng=np.random.default_rng(0))
