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


# ---------------------------------------------------------------------------------------------
# What the chapter's cells print
# ---------------------------------------------------------------------------------------------

def test_sup_loss_bound_bounds_the_data_loss() -> None:
    problem = ch08.attention_problem()
    bound = ch08.sup_loss_bound(problem)
    rng = np.random.default_rng(0)
    assert all(problem.data_loss(10 * rng.standard_normal(problem.dim)) <= bound
               for _ in range(20))


def test_log_ball_volume_is_the_volume_of_the_ball() -> None:
    radii = np.array([0.5, 1.0, 2.0])
    np.testing.assert_allclose(np.exp(ch08.log_ball_volume(2, radii)), math.pi * radii**2,
                               rtol=1e-14)
    np.testing.assert_allclose(np.exp(ch08.log_ball_volume(3, radii)),
                               4 / 3 * math.pi * radii**3, rtol=1e-14)


def test_the_orbit_tables_and_gaps(orbit) -> None:
    problem, theta_star, _, consts = orbit
    regs = ch08.regularizers()
    checked = ch08.closed_form_gaps(problem, theta_star, consts, regs, np.log([1.0, 10.0]))
    table = ch08.orbit_villani_table({name: (np.r_[direct, direct], gap)
                                      for name, (direct, gap) in checked.items()})
    assert "rho = 100" in str(table) and "closed form" not in str(table)
    assert ch08.describe_closed_form_gaps(checked).count("< 1e-09") == len(regs)


def test_crossover_leading_orders_match_the_formulas() -> None:
    import sympy as sp

    lam, s, a, q, eps, u = sp.symbols("lambda s a q epsilon u", positive=True)
    log_root, pow_root, threshold = ch08.crossover_leading_orders(lam, s, a, q, eps, u)
    expected = sp.sqrt(s * a / q) / (4 * lam) - sp.log(q) / 2 - sp.Rational(1, 2)
    assert sp.simplify(log_root - expected) == 0
    assert sp.simplify(threshold - 4 * lam**2 * q / a) == 0
    values = {lam: sp.Rational(1, 10), s: 1, a: 3, q: 2, eps: sp.Rational(1, 2)}
    g1 = (1 + eps / 2) * (q * sp.exp(2 * u)) ** (eps / 2)
    residual = (4 * lam**2 * q * g1**2 / s - a).subs(u, pow_root).subs(values)
    assert abs(float(residual)) < 1e-12


def test_the_ray_and_the_estimate_descriptions(orbit) -> None:
    problem, _, _, consts = orbit
    direction = np.random.default_rng(2).standard_normal(problem.dim)
    direction /= np.linalg.norm(direction)
    gap = ch08.smallest_logit_gap(problem, direction)
    assert gap > 0
    regs = ch08.regularizers()
    assert len(ch08.describe_ray(problem, direction, gap, regs, (1, 64)).splitlines()) == 3
    crossovers = ch08.orbit_crossover_radii(consts, regs)
    c_grad, c_lap = problem.derivative_constants()
    text = ch08.describe_estimate_radii(regs, ch08.TEMPERATURES, c_grad, c_lap,
                                        problem.dim // 2, crossovers, ch08.LAM)
    assert len(text.splitlines()) == 1 + len(ch08.MILD_FORMS) * len(ch08.TEMPERATURES)
    wd = ch08.describe_weight_decay_estimate(consts, ch08.LAM, 200.0, c_grad, c_lap)
    assert "never proves the condition" in wd and "4 lambda^2 min(q/a, k/b)" in wd
