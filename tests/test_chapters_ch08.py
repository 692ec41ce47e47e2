"""Tests of attnbook.chapters.ch08: the attention problem, its stationary point and orbit, and
the functions Chapters 8 and 9 share (regularizers, partition function, closed form, crossover
radii, Holley-Stroock bound)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from attnlib import villani
from attnbook.chapters import ch08


@pytest.fixture(scope="module")
def orbit() -> tuple:
    problem = ch08.attention_problem()
    theta_star, grad_norm = ch08.attention_stationary_point(problem)
    return problem, theta_star, grad_norm, villani.orbit_constants(problem, theta_star)


def test_the_problem_is_the_seeded_12_parameter_instance() -> None:
    problem, again = ch08.attention_problem(), ch08.attention_problem()
    assert problem.X.shape == (6, 5, 3) and problem.d_k == 2 and problem.dim == 12
    assert np.array_equal(problem.X, again.X) and np.array_equal(problem.Y, again.Y)


def test_regularizers_are_the_four_profiles_at_one_strength() -> None:
    regs = ch08.regularizers(0.1)
    assert list(regs) == ["none", "weight_decay", "log", "power"]
    assert not regs["none"].active
    assert all(reg.lam == 0.1 for name, reg in regs.items() if name != "none")
    assert regs["power"].eps == 0.5
    assert ch08.regularizers()["log"].lam == ch08.LAM


def test_the_stationary_point_is_stationary_and_fits_the_laplacian_law(orbit) -> None:
    problem, theta_star, grad_norm, consts = orbit
    assert grad_norm < 1e-7
    assert np.linalg.norm(problem.gradient(theta_star)) == pytest.approx(grad_norm)
    assert problem.data_loss(theta_star) < problem.data_loss(problem.theta_teacher)
    a_fit, b_fit, residual = ch08.laplacian_law_fit(problem, theta_star, np.logspace(-2, 2, 9))
    # Laplacian L = a rho^2 + b / rho^2 with a, b the block Laplacians at rho = 1
    assert residual < 1e-10
    assert a_fit == pytest.approx(consts.a, rel=1e-8)
    assert b_fit == pytest.approx(consts.b, rel=1e-8)


def test_the_closed_form_matches_direct_evaluation_for_every_regularizer(orbit) -> None:
    problem, theta_star, _, consts = orbit
    log_rho = np.log(np.array([0.1, 1.0, 10.0, 100.0]))
    gaps = ch08.closed_form_gaps(problem, theta_star, consts, ch08.regularizers(), log_rho)
    assert list(gaps) == ["none", "weight_decay", "log", "power"]
    for direct, gap in gaps.values():
        assert direct.shape == (4,)
        assert gap < 1e-9
        assert direct[-1] < 0                     # at rho = 100 the -a rho^2 term still wins


def test_crossover_radii_cover_each_mild_form_and_temperature(orbit) -> None:
    _, _, _, consts = orbit
    regs = ch08.regularizers()
    crossovers = ch08.orbit_crossover_radii(consts, regs)
    assert list(crossovers) == list(itertools.product(ch08.MILD_FORMS, ch08.TEMPERATURES))
    for form in ch08.MILD_FORMS:
        decisive = [crossovers[form, s].decisive for s in ch08.TEMPERATURES]
        assert 0 < decisive[0] < decisive[1] < decisive[2] < 300 * math.log(10)
    # the log form at s = 1: the exact root agrees with the leading order (the chapter's table)
    leading = villani.asymptotic_crossover_log_radius(consts, regs["log"], 1.0)
    assert crossovers["log", 1.0].up == pytest.approx(leading, abs=0.01 * math.log(10))
    table = ch08.crossover_table(consts, regs, crossovers)
    assert len(table.rows) == 6 and len(table.columns) == 7


def test_log_partition_curves_grow_without_a_regularizer_and_level_off_with_one() -> None:
    problem = ch08.attention_problem()
    radii = np.linspace(0.0, 12.0, 25)
    log_z = ch08.log_partition_curves(problem, 1.0, radii, n_directions=50)
    assert list(log_z) == ["none", "weight_decay", "log", "power"]
    growth = {name: values[-1] - values[12] for name, values in log_z.items()}   # R = 6 -> 12
    assert growth["none"] > 0.5 * problem.dim * math.log(2)
    assert all(growth[name] < 1.0 for name in ("weight_decay", "log", "power"))


def test_holley_stroock_bound_is_the_log10_of_its_formula() -> None:
    # C_P <= exp(2 sup L / s) s / (4 lambda)
    assert ch08.log10_holley_stroock_bound(0.0, 0.04, 0.01) == pytest.approx(0.0, abs=1e-15)
    assert ch08.log10_holley_stroock_bound(10.0, 1.0, 0.01) == pytest.approx(
        math.log10(math.exp(20.0) / 0.04))
    assert ch08.log10_holley_stroock_bound(10.0, 0.1, 0.01) > ch08.log10_holley_stroock_bound(
        10.0, 1.0, 0.01)
