"""Tests of attnbook.chapters.ch09: the LoRA problem, the weight-decay warm start and the
balanced stationary point of Chapter 9 and its report page."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import villani
from attnbook.chapters import ch08, ch09


@pytest.fixture(scope="module")
def stationary() -> tuple:
    problem = ch09.lora_problem()
    warm, theta_star = ch09.balanced_stationary_point(problem)
    return problem, warm, theta_star


def _imbalance(problem, theta: np.ndarray) -> float:
    U, V = problem.unpack(theta)
    return float(np.abs(U.T @ U - V @ V.T).max())


def test_the_problem_is_the_seeded_22_parameter_instance() -> None:
    problem, again = ch09.lora_problem(), ch09.lora_problem()
    assert (problem.n, problem.x.shape[1], problem.a.size, problem.rank) == (20, 3, 8, 2)
    assert problem.dim == 22
    assert np.array_equal(problem.x, again.x) and np.array_equal(problem.y, again.y)


@pytest.mark.parametrize("lam", [1e-3, 1e-1])
def test_a_weight_decay_minimizer_is_balanced(lam: float) -> None:
    # U^T grad_U f - (grad_V f) V^T = 2 lambda (U^T U - V V^T): balanced at a stationary point
    problem = ch09.lora_problem()
    minimizer = ch09.weight_decay_minimizer(problem, lam)
    assert _imbalance(problem, minimizer) < 1e-6
    assert _imbalance(problem, problem.theta_teacher) > 1e-2


def test_the_stationary_point_is_balanced_stationary_and_moved_from_the_warm_start(
        stationary) -> None:
    problem, warm, theta_star = stationary
    assert np.array_equal(warm, ch09.weight_decay_minimizer(problem, ch09.WARM_DECAY))
    assert np.linalg.norm(problem.gradient(theta_star)) < 1e-7
    assert _imbalance(problem, theta_star) < 1e-10
    assert problem.data_loss(theta_star) < problem.data_loss(warm)
    # the polish moves the product U V, not only the factorization (the chapter prints 5.63)
    (U_w, V_w), (U_s, V_s) = problem.unpack(warm), problem.unpack(theta_star)
    assert np.linalg.norm(U_s @ V_s - U_w @ V_w) > 1.0


def test_the_rho_to_zero_end_decides_on_the_lora_orbit(stationary) -> None:
    problem, _, theta_star = stationary
    consts = villani.orbit_constants(problem, theta_star)
    assert consts.q == pytest.approx(consts.k, rel=1e-10)       # balanced: ||U*|| = ||V*||
    crossovers = ch08.orbit_crossover_radii(consts, ch08.regularizers())
    assert all(both.decisive_end == "rho -> 0" for both in crossovers.values())


# --- the chapter's computations behind its open cells ---------------------------------------


def test_the_group_leaves_the_data_loss_and_moves_the_weight_decay_loss() -> None:
    rows = ch09.symmetry_changes(ch09.lora_problem(), lam=0.01)
    assert len(rows) == 4
    for cond, relative, decayed in rows:
        assert cond >= 1.0 and relative < 1e-12 and decayed > 1e-3


def test_the_flat_ray_has_constant_scaled_columns() -> None:
    problem = ch09.lora_problem()
    base = ch09.flat_ray(problem)
    U0, V0 = problem.unpack(base)
    assert np.linalg.norm(U0) == pytest.approx(1.0) and not V0.any()
    c1, c2 = ch09.flat_constants(problem, base)
    assert c1 > 0 and c2 > 0
    table = ch09.flat_table(problem, base, rhos=(1.0, 1e3))
    first, last = table.rows
    assert first[1:] == last[1:]                       # L, grad^2/rho^2, Laplacians/rho^2
    assert float(first[2]) == pytest.approx(c1, rel=1e-5)


def test_the_balance_deviation_is_within_its_bound() -> None:
    deviation, bound, scale = ch09.balance_deviation(ch09.lora_problem(), 0.1)
    assert deviation <= bound < 1e-6 < scale


def test_the_orbit_grid_and_its_group_elements() -> None:
    grid = ch09.orbit_grid()
    assert grid.shape == (ch09.ORBIT_ANGLES * ch09.ORBIT_DELTAS, 2)
    assert grid[:, 1].max() == ch09.ORBIT_MAX_DELTA == 2 * max(ch09.ORBIT_BOUNDS)
    G = ch09.group_element(0.3, 2.0)
    assert np.linalg.det(G) == pytest.approx(1.0)
    assert np.linalg.svd(G, compute_uv=False) == pytest.approx([np.e, 1 / np.e])


def test_the_block_norm_does_not_move_along_the_rho_curve(stationary) -> None:
    problem, _, theta_star = stationary
    log_form = ch08.regularizers()["log"]
    values = [ch09.log10_block_norm(problem, problem.act(theta_star, c * np.eye(2)), log_form)
              for c in (1e-3, 1.0, 1e3)]
    assert max(values) - min(values) < 1e-9
    leading = ch09.log10_block_norm(problem, theta_star, log_form, exact=False)
    assert leading == pytest.approx(values[1], abs=1e-6)


def test_one_angle_and_one_log_ratio_sample_the_orbit(stationary) -> None:
    problem, _, theta_star = stationary
    log_form = ch08.regularizers()["log"]
    assert ch09.reduction_gap({"LoRA": (problem, theta_star)}, log_form, count=2) < 1e-9
    grid = ch09.orbit_grid()[::97]
    screen = ch09.screen_orbit(problem, theta_star, log_form, grid)
    ranges, gap = ch09.orbit_ranges(problem, theta_star, log_form, grid, screen, bounds=(6.0,))
    low, high = ranges[6.0]
    assert low <= ch09.log10_block_norm(problem, theta_star, log_form) <= high and gap < 1e-6


def test_the_comparison_says_whether_the_ranges_overlap() -> None:
    points = {"attention": 18.0, "LoRA": 14.0}
    text = ch09.comparison_text(points, {"attention": [16.0, 24.0], "LoRA": [11.0, 18.0]})
    assert "LoRA closer in by 4.00 decades" in text and "overlap 16.00 to 18.00" in text
    text = ch09.comparison_text(points, {"attention": [16.0, 24.0], "LoRA": [11.0, 15.0]})
    assert "no overlap" in text
