"""Tests of attnlib.villani: the Villani quantity, the orbit closed form against direct
evaluation, the crossover radius and the weight-decay threshold."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from attnlib import lora
from attnlib import qk_attention as qa
from attnlib import villani as vl
from attnlib.regularizers import Regularizer


@pytest.fixture(scope="module")
def attention_star() -> tuple[qa.AttentionProblem, np.ndarray]:
    p = qa.make_problem(rng=np.random.default_rng(0))
    theta, grad_norm = vl.minimize_data_loss(p, p.theta_teacher)
    assert grad_norm < 1e-7
    return p, theta


@pytest.fixture(scope="module")
def lora_star() -> tuple[lora.LoRAProblem, np.ndarray]:
    p = lora.make_problem(rng=np.random.default_rng(0))
    theta, grad_norm = vl.minimize_data_loss(p, p.theta_teacher)
    assert grad_norm < 1e-7
    return p, theta


def test_villani_quantity_is_grad_sq_over_s_minus_laplacian(attention_star) -> None:
    p, _ = attention_star
    pr = p.with_regularizer(Regularizer("log", 0.1))
    theta = np.random.default_rng(1).standard_normal(p.dim)
    out = vl.villani_quantity(pr, theta, 0.5)
    grad = pr.gradient(theta)
    assert out.value == pytest.approx(grad @ grad / 0.5 - pr.laplacian(theta), rel=1e-13)
    assert out.stderr == 0.0
    hutch = vl.villani_quantity(pr, theta, 0.5, method="hutchinson",
                                rng=np.random.default_rng(2), n_probes=400)
    assert hutch.stderr > 0 and abs(hutch.value - out.value) < 4 * hutch.stderr


@pytest.mark.parametrize("fixture", ["attention_star", "lora_star"])
def test_orbit_laplacian_is_a_rho2_plus_b_over_rho2_at_any_point(fixture, request) -> None:
    p, _ = request.getfixturevalue(fixture)
    theta = np.random.default_rng(3).standard_normal(p.dim)
    c = vl.orbit_constants(p, theta)
    log_rho = np.array([-1.5, 0.4, 2.0])
    for u, point in zip(log_rho, vl.orbit_points(p, theta, log_rho)):
        lap1, lap2 = p.data_laplacian_blocks(point)
        assert lap1 == pytest.approx(c.b * math.exp(-2 * u), rel=1e-9)
        assert lap2 == pytest.approx(c.a * math.exp(2 * u), rel=1e-9)
        assert p.data_loss(point) == pytest.approx(p.data_loss(theta), rel=1e-12)


@pytest.mark.parametrize("fixture", ["attention_star", "lora_star"])
@pytest.mark.parametrize("reg", [Regularizer(), Regularizer("weight_decay", 0.3),
                                 Regularizer("log", 0.05), Regularizer("power", 0.05),
                                 Regularizer("power_source", 0.05)], ids=lambda r: r.name)
def test_orbit_closed_form_matches_direct_evaluation(fixture, reg, request) -> None:
    p, theta_star = request.getfixturevalue(fixture)
    c = vl.orbit_constants(p, theta_star)
    pr = p.with_regularizer(reg)
    log_rho = np.array([-1.0, 0.0, 1.0, 2.5])
    for s in (0.1, 10.0):
        closed = vl.orbit_villani_over_rho2(c, reg, s, log_rho) * np.exp(2 * log_rho)
        direct = [vl.villani_quantity(pr, x, s).value
                  for x in vl.orbit_points(p, theta_star, log_rho)]
        np.testing.assert_allclose(direct, closed, rtol=1e-6)


def test_lower_bound_radius_for_weak_weight_decay_is_infinite() -> None:
    # 2 lam <= C: the bound never turns positive; log form: finite however small lam is
    assert vl.lower_bound_log_radius(Regularizer("weight_decay", 1.0), 1.0, grad_constant=3.0,
                                     laplacian_constant=1.0, block_dim=4) == math.inf
    assert math.isfinite(vl.lower_bound_log_radius(Regularizer("log", 0.1), 1.0,
                                                   grad_constant=3.0, laplacian_constant=1.0,
                                                   block_dim=4))


def test_weight_decay_limit_and_threshold() -> None:
    c = vl.OrbitConstants(a=32.0, b=5.0, q=6.0, k=2.0, dim1=6, dim2=6)
    reg = Regularizer("weight_decay", 1.0)
    s_star = vl.weight_decay_threshold(c, 1.0)
    assert s_star == pytest.approx(4 * 6 / 32)
    far = vl.orbit_villani_over_rho2(c, reg, 0.5, np.array([300.0]))[0]
    assert far == pytest.approx(4 * 6 / 0.5 - 32, rel=1e-12)
    assert math.isfinite(vl.crossover_log_radius(c, reg, 0.9 * s_star))
    assert vl.crossover_log_radius(c, reg, 1.1 * s_star) == math.inf
    assert vl.crossover_log_radius(c, Regularizer(), 1.0) == math.inf


@pytest.mark.parametrize("reg", [Regularizer("log", 0.01), Regularizer("power", 0.01),
                                 Regularizer("power_source", 0.01)], ids=lambda r: r.name)
def test_crossover_is_a_sign_change_and_matches_asymptotics(reg: Regularizer) -> None:
    c = vl.OrbitConstants(a=32.0, b=5.0, q=6.0, k=2.0, dim1=6, dim2=6)
    gaps = []
    for s in (0.1, 1.0, 100.0):
        root = vl.crossover_log_radius(c, reg, s)
        below, above = vl.orbit_villani_over_rho2(c, reg, s, np.array([root - 1e-6, root + 1e-6]))
        assert below < 0 < above
        gaps.append(abs(root - vl.asymptotic_crossover_log_radius(c, reg, s)) / root)
    assert gaps[-1] < 1e-3
    if reg.name == "log":   # the design note's check: a = 32, q = 6, lam = 0.01, s = 1
        assert vl.crossover_log_radius(c, reg, 1.0) == pytest.approx(56.3, abs=0.05)


def test_orbit_crossovers_cover_both_ends() -> None:
    c = vl.OrbitConstants(a=32.0, b=5.0, q=6.0, k=2.0, dim1=6, dim2=6)
    reg = Regularizer("log", 0.01)
    both = vl.orbit_crossovers(c, reg, 1.0)
    assert both.up == vl.crossover_log_radius(c, reg, 1.0)
    # the rho -> 0 end: negative just inside 1/rho_*, positive beyond, read at log rho = -down
    inside, outside = vl.orbit_villani_over_rho2(c, reg, 1.0,
                                                 np.array([-both.down + 1e-6, -both.down - 1e-6]))
    assert inside < 0 < outside
    assert both.decisive == max(both.up, both.down)
    assert both.decisive_end == ("rho -> oo" if both.up >= both.down else "rho -> 0")
    # the scaled quantity is V_s / max(rho^2, rho^-2) at both ends
    log_rho = np.array([-3.0, -0.5, 0.0, 2.0])
    scaled = vl.orbit_villani_scaled(c, reg, 1.0, log_rho)
    over = vl.orbit_villani_over_rho2(c, reg, 1.0, log_rho)
    np.testing.assert_allclose(scaled, over * np.exp(2 * log_rho) / np.exp(2 * np.abs(log_rho)),
                               rtol=1e-12)
    wd = vl.orbit_villani_scaled(c, Regularizer("weight_decay", 1.0), 0.5, np.array([-300.0]))
    assert wd[0] == pytest.approx(4 * 2 / 0.5 - 5, rel=1e-12)
    # swapping the blocks swaps the ends
    mirrored = vl.orbit_crossovers(c.swapped(), reg, 1.0)
    assert (mirrored.up, mirrored.down) == (both.down, both.up)


def test_orbit_evaluation_survives_overflowing_radii() -> None:
    c = vl.OrbitConstants(a=32.0, b=5.0, q=6.0, k=2.0, dim1=6, dim2=6)
    value = vl.orbit_villani_over_rho2(c, Regularizer("log", 0.01), 1.0, np.array([600.0]))[0]
    with mpmath.workdps(30):
        t = 6 * mpmath.exp(1200)
        g1 = mpmath.log1p(t) + t / (1 + t)
        expected = 4e-4 * 6 * g1 ** 2 - 32
    assert np.isfinite(value) and value == pytest.approx(float(expected), rel=1e-6)


def test_bad_inputs(attention_star) -> None:
    p, theta = attention_star
    with pytest.raises(ValueError, match="s must be a finite number > 0"):
        vl.villani_quantity(p, theta, 0.0)
    with pytest.raises(ValueError, match="rng is required"):
        vl.villani_quantity(p, theta, 1.0, method="hutchinson")
    with pytest.raises(ValueError, match="method must be"):
        vl.villani_quantity(p, theta, 1.0, method="fd")
    with pytest.raises(ValueError, match="weight decay has a threshold"):
        vl.asymptotic_crossover_log_radius(vl.orbit_constants(p, theta),
                                           Regularizer("weight_decay", 1.0), 1.0)
    with pytest.raises(RuntimeError, match="no stationary point"):
        vl.minimize_data_loss(p, theta + 1.0, max_iter=1)


def test_radial_partition_function_matches_gaussian_closed_form() -> None:
    from scipy import stats

    base = lora.make_problem(rng=np.random.default_rng(0), n=5, d=2, width=3, rank=1)
    flat = lora.LoRAProblem(x=base.x, y=base.y, a=np.zeros(3), W_pre=base.W_pre, rank=1,
                            regularizer=Regularizer("weight_decay", 0.5))
    s = 0.8
    const = 0.5 * np.mean(base.y ** 2)                       # the data loss is constant
    radii = np.linspace(0, 4, 401)
    log_z = vl.radial_log_partition(flat, s, radii, n_directions=3, rng=np.random.default_rng(1))
    var = s / (4 * 0.5)
    D = flat.dim
    for i in (100, 200, 400):
        expected = (-2 * const / s + 0.5 * D * math.log(2 * math.pi * var)
                    + math.log(stats.chi2.cdf(radii[i] ** 2 / var, D)))
        assert log_z[i] == pytest.approx(expected, abs=2e-4)


def test_unregularized_partition_function_grows_like_the_ball_volume(attention_star) -> None:
    p, _ = attention_star
    radii = np.linspace(0, 20, 41)
    log_z = vl.radial_log_partition(p, 1.0, radii, n_directions=50, rng=np.random.default_rng(2))
    Z = p.X @ p.W_V
    sup = 0.5 * np.sum((np.abs(Z).max(axis=1)[:, None, :] + np.abs(p.Y)) ** 2) / p.n
    D = p.dim
    log_ball = 0.5 * D * math.log(math.pi) - math.lgamma(0.5 * D + 1) + D * np.log(radii[1:])
    assert np.all(log_z[1:] >= log_ball - 2 * sup - 0.1)
    assert np.all(np.diff(log_z[1:]) > 0)


@pytest.mark.parametrize("reg", [Regularizer("weight_decay", 200.0), Regularizer("log", 50.0),
                                 Regularizer("power", 50.0)], ids=lambda r: r.name)
def test_villani_lower_bound_holds_at_random_points(reg: Regularizer) -> None:
    from attnlib import qk_attention as qa

    problem = qa.make_problem(rng=np.random.default_rng(8), n=6, N=5, d=3, d_k=2)
    C, C2 = problem.derivative_constants()
    regularized = problem.with_regularizer(reg)
    rng = np.random.default_rng(13)
    checked = 0
    for scale in (0.3, 1.0, 3.0, 10.0, 30.0):
        for _ in range(4):
            theta = scale * rng.standard_normal(problem.dim)
            W_Q, W_K = problem.unpack(theta)
            t = max(np.sum(W_Q ** 2), np.sum(W_K ** 2))
            for s in (0.1, 1.0, 10.0):
                bound = vl.villani_lower_bound(t, reg, s, grad_constant=C, laplacian_constant=C2,
                                               block_dim=max(problem.block_dims))
                value = vl.villani_quantity(regularized, theta, s).value
                assert value >= bound - 1e-9 * abs(bound)
                checked += bound > 0
    assert checked > 0          # the bound is not vacuous: it is positive somewhere
    log_t = vl.lower_bound_log_radius(reg, 1.0, grad_constant=C, laplacian_constant=C2,
                                      block_dim=6)
    around = np.exp(log_t + np.array([-1e-6, 1e-6])) if math.isfinite(log_t) else [0.5, 1.0]
    below, above = vl.villani_lower_bound(np.asarray(around), reg, 1.0, grad_constant=C,
                                          laplacian_constant=C2, block_dim=6)
    assert above > 0 and (below <= 0 or log_t == -math.inf)   # -inf: positive from t = 1 on
    with pytest.raises(ValueError, match="t must be"):
        vl.villani_lower_bound(-1.0, reg, 1.0, grad_constant=C, laplacian_constant=C2,
                               block_dim=6)


def test_every_direction_check_reports_ratios_and_margins():
    problem = lora.make_problem(rng=np.random.default_rng(0), n=20, d=3, width=8, rank=2)
    C, C2 = problem.derivative_constants()
    points = np.random.default_rng(2).standard_normal((4, problem.dim))
    pairs = [("log", Regularizer("log", 0.01)), ("log", Regularizer("log", 50.0))]
    check = vl.every_direction_check(problem, points, pairs, [1.0], grad_constant=C,
                                     laplacian_constant=C2)
    assert 0 < check.grad_ratio <= 1 and 0 < check.laplacian_ratio <= 1
    assert list(check.worst_margin) == ["log"] and check.worst_margin["log"] >= 0
    tight = vl.every_direction_check(problem, points, pairs, [1.0], grad_constant=C / 100,
                                     laplacian_constant=C2 / 1000)
    assert tight.grad_ratio > 1 and tight.laplacian_ratio > 1   # constants too small: caught
    with pytest.raises(ValueError, match="points"):
        vl.every_direction_check(problem, points[:, :3], pairs, [1.0], grad_constant=C,
                                 laplacian_constant=C2)
