"""Tests of attnlib.lora: exact derivatives against finite differences, the (U G, G^{-1} V)
symmetry, the flat set V = 0, batching and input checks."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import lora
from attnlib.regularizers import Regularizer

def problem(seed: int = 0, **kwargs) -> lora.LoRAProblem:
    return lora.make_problem(rng=np.random.default_rng(seed), n=10, d=3, width=5, rank=2,
                             **kwargs)


def test_flat_set_v_zero() -> None:
    p = problem()
    rng = np.random.default_rng(3)
    U = 10 * rng.standard_normal((8, 5, 2))
    thetas = p.pack(U, np.zeros((8, 2, 3)))
    base = 0.5 * np.mean((p.a @ np.tanh(p.W_pre @ p.x.T) - p.y) ** 2)
    np.testing.assert_allclose(p.data_loss(thetas), base, rtol=1e-13)
    grad_U, grad_V = p.unpack(p.gradient(thetas))
    assert np.all(grad_U == 0)
    assert np.all(np.abs(grad_V).max(axis=(1, 2)) > 0)


def test_loss_is_bounded_by_the_output_weights() -> None:
    p = problem()
    thetas = 50 * np.random.default_rng(4).standard_normal((20, p.dim))
    assert np.all(np.abs(p.predict(thetas)) <= np.abs(p.a).sum() + 1e-12)


def test_batched_equals_unbatched_and_pack_roundtrips() -> None:
    p = problem(regularizer=Regularizer("log", 0.1))
    thetas = np.random.default_rng(5).standard_normal((6, p.dim))
    loss, grad = p.loss_and_grad_flat(thetas)
    for c in range(6):
        assert loss[c] == pytest.approx(p.loss(thetas[c]), rel=1e-13)
        np.testing.assert_allclose(grad[c], p.gradient(thetas[c]), rtol=1e-12)
    U, V = p.unpack(thetas)
    assert U.shape == (6, 5, 2) and V.shape == (6, 2, 3)
    np.testing.assert_array_equal(p.pack(U, V), thetas)
    np.testing.assert_allclose(p.act(thetas, 2 * np.eye(2))[3], p.act(thetas[3], 2 * np.eye(2)))


def test_make_problem_is_seeded_and_realizable_without_noise() -> None:
    np.testing.assert_array_equal(problem(seed=9).y, problem(seed=9).y)
    clean = problem(seed=9, noise_std=0.0)
    assert clean.data_loss(clean.theta_teacher) == pytest.approx(0.0, abs=1e-25)


def test_bad_inputs() -> None:
    p = problem()
    with pytest.raises(ValueError, match=r"theta must have shape \(chains, 16\)"):
        p.loss_and_grad_flat(np.zeros(16))
    with pytest.raises(ValueError, match="invertible"):
        p.act(np.zeros(16), np.ones((2, 2)))
    with pytest.raises(ValueError, match="W_pre must have shape"):
        lora.LoRAProblem(x=np.zeros((4, 3)), y=np.zeros(4), a=np.ones(5), W_pre=np.zeros((5, 2)),
                         rank=1)
    with pytest.raises(ValueError, match="y must have shape"):
        lora.LoRAProblem(x=np.zeros((4, 3)), y=np.zeros(3), a=np.ones(5), W_pre=np.zeros((5, 3)),
                         rank=1)
    with pytest.raises(ValueError, match="rank must be at least 1"):
        lora.make_problem(rng=np.random.default_rng(0), rank=0)
    with pytest.raises(ValueError, match="W2 must have shape"):
        p.pack(np.zeros((5, 2)), np.zeros((3, 2)))


def test_svd_factorization_keeps_the_product_and_balances_at_one_half():
    problem = lora.make_problem(rng=np.random.default_rng(0), n=20, d=3, width=8, rank=2)
    theta = problem.theta_teacher
    U, V = problem.unpack(theta)
    for alpha in (0.0, 0.5, 1.0):
        U2, V2 = problem.unpack(problem.svd_factorization(theta, alpha))
        np.testing.assert_allclose(U2 @ V2, U @ V, atol=1e-12)
    U2, V2 = problem.unpack(problem.svd_factorization(theta, 0.5))
    np.testing.assert_allclose(U2.T @ U2, V2 @ V2.T, atol=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        problem.svd_factorization(theta, 1.5)
    with pytest.raises(ValueError, match="full rank"):
        problem.svd_factorization(np.zeros(problem.dim), 0.5)


def test_derivative_constants_bound_gradients_and_laplacians_at_random_points():
    problem = lora.make_problem(rng=np.random.default_rng(0), n=20, d=3, width=8, rank=2)
    C, C2 = problem.derivative_constants()
    rng = np.random.default_rng(1)
    worst = 0.0
    for scale in (0.1, 1.0, 10.0):
        for _ in range(10):
            theta = scale * rng.standard_normal(problem.dim)
            U, V = problem.unpack(theta)
            gU, gV = problem.unpack(problem.gradient(theta))
            lU, lV = problem.data_laplacian_blocks(theta)
            worst = max(worst, np.linalg.norm(gU) / (C * np.linalg.norm(V)),
                        np.linalg.norm(gV) / (C * np.linalg.norm(U)),
                        abs(lU) / (C2 * np.sum(V**2)), abs(lV) / (C2 * np.sum(U**2)))
    assert 0.0 < worst <= 1.0
    # and not vacuous: random points reach more than 1% of the bound
    assert worst > 0.01
