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
