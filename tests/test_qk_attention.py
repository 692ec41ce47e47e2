"""Tests of attnlib.qk_attention: exact derivatives against finite differences, the GL(d_k)
symmetry, boundedness, batching and input checks."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import qk_attention as qa
from attnlib.regularizers import Regularizer

def problem(seed: int = 0, **kwargs) -> qa.AttentionProblem:
    return qa.make_problem(rng=np.random.default_rng(seed), n=4, N=4, d=3, d_k=2, **kwargs)


def test_hutchinson_is_unbiased_within_its_error_bar() -> None:
    p = problem(regularizer=Regularizer("log", 0.05))
    theta = np.random.default_rng(3).standard_normal(p.dim)
    exact = p.laplacian(theta)
    estimate, stderr = p.hutchinson_laplacian(theta, rng=np.random.default_rng(4), n_probes=400)
    assert stderr > 0
    assert abs(estimate - exact) < 4 * stderr
    _, stderr_small = p.hutchinson_laplacian(theta, rng=np.random.default_rng(4), n_probes=25)
    assert stderr_small > 2 * stderr


def test_regularizer_breaks_the_symmetry() -> None:
    p = problem(regularizer=Regularizer("weight_decay", 0.1))
    theta = np.random.default_rng(5).standard_normal(p.dim)
    moved = p.act(theta, 3.0 * np.eye(2))
    assert p.data_loss(moved) == pytest.approx(p.data_loss(theta), rel=1e-12)
    assert p.loss(moved) > p.loss(theta) + 0.1


def test_outputs_are_convex_combinations_so_the_loss_is_bounded() -> None:
    p = problem()
    rng = np.random.default_rng(6)
    thetas = 30 * rng.standard_normal((20, p.dim))
    out = p.predict(thetas)                                   # (c, n, N, d_out)
    Z = p.X @ p.W_V
    lo, hi = Z.min(axis=1), Z.max(axis=1)                     # per input and output column
    assert np.all(out >= lo[None, :, None, :] - 1e-12)
    assert np.all(out <= hi[None, :, None, :] + 1e-12)
    bound = 0.5 * np.sum((np.abs(Z).max(axis=1)[:, None, :] + np.abs(p.Y)) ** 2) / p.n
    assert np.all(p.loss(thetas) <= bound)


def test_batched_equals_unbatched_and_pack_roundtrips() -> None:
    p = problem(regularizer=Regularizer("power", 0.1))
    thetas = np.random.default_rng(7).standard_normal((6, p.dim))
    loss, grad = p.loss_and_grad_flat(thetas)
    assert loss.shape == (6,) and grad.shape == (6, p.dim)
    for c in range(6):
        assert loss[c] == pytest.approx(p.loss(thetas[c]), rel=1e-13)
        np.testing.assert_allclose(grad[c], p.gradient(thetas[c]), rtol=1e-12)
        np.testing.assert_allclose(p.predict(thetas)[c], p.predict(thetas[c]), rtol=1e-13)
    W_Q, W_K = p.unpack(thetas)
    assert W_Q.shape == (6, 3, 2) and W_K.shape == (6, 3, 2)
    np.testing.assert_array_equal(p.pack(W_Q, W_K), thetas)


def test_make_problem_is_seeded_and_realizable_without_noise() -> None:
    a, b = problem(seed=11), problem(seed=11)
    np.testing.assert_array_equal(a.Y, b.Y)
    clean = problem(seed=11, noise_std=0.0)
    assert clean.data_loss(clean.theta_teacher) == pytest.approx(0.0, abs=1e-25)
    assert a.data_loss(a.theta_teacher) > 0


def test_bad_inputs() -> None:
    p = problem()
    with pytest.raises(ValueError, match=r"theta must have shape \(chains, 12\)"):
        p.loss_and_grad_flat(np.zeros(12))
    with pytest.raises(ValueError, match="theta must have shape"):
        p.loss(np.zeros(11))
    with pytest.raises(ValueError, match="NaN"):
        p.gradient(np.full(12, np.nan))
    with pytest.raises(ValueError, match="invertible"):
        p.act(np.zeros(12), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="X must have 3 axes"):
        qa.AttentionProblem(X=np.zeros((3, 2)), Y=np.zeros((3, 2, 2)), W_V=np.eye(2), d_k=1)
    with pytest.raises(ValueError, match="Y must have shape"):
        qa.AttentionProblem(X=np.zeros((3, 2, 2)), Y=np.zeros((3, 2, 3)), W_V=np.eye(2), d_k=1)
    with pytest.raises(ValueError, match="d_k must be at least 1"):
        qa.make_problem(rng=np.random.default_rng(0), d_k=0)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        qa.make_problem(rng=0)
    with pytest.raises(TypeError, match="regularizer must be a Regularizer"):
        p.with_regularizer("log")


def test_softmax_directional_derivatives_against_finite_differences_and_bounds() -> None:
    from attnlib.attention import row_softmax

    rng = np.random.default_rng(11)
    for scale in (0.1, 1.0, 10.0):
        z = scale * rng.standard_normal((50, 6))
        u = rng.standard_normal((50, 6))
        first, second = qa.softmax_directional_derivatives(z, u)
        h = 1e-4
        fd1 = (row_softmax(z + h * u) - row_softmax(z - h * u)) / (2 * h)
        fd2 = (row_softmax(z + h * u) - 2 * row_softmax(z) + row_softmax(z - h * u)) / h ** 2
        np.testing.assert_allclose(first, fd1, atol=1e-7)
        np.testing.assert_allclose(second, fd2, atol=1e-5)
        norm_u = np.linalg.norm(u, axis=1)
        assert np.all(np.linalg.norm(first, axis=1) <= 0.5 * norm_u + 1e-12)
        assert np.all(np.linalg.norm(second, axis=1) <= norm_u ** 2 + 1e-12)
    with pytest.raises(ValueError, match="same non-scalar shape"):
        qa.softmax_directional_derivatives(np.zeros(3), np.zeros(4))


def test_derivative_constants_bound_gradients_and_laplacians_everywhere() -> None:
    problem = qa.make_problem(rng=np.random.default_rng(8), n=6, N=5, d=3, d_k=2)
    C, C2 = problem.derivative_constants()
    rng = np.random.default_rng(12)
    for scale in (0.01, 0.3, 1.0, 3.0, 30.0):
        for _ in range(5):
            theta = scale * rng.standard_normal(problem.dim)
            theta *= np.exp(rng.uniform(-2, 2, size=2).repeat(problem.dim // 2))  # unbalanced
            W_Q, W_K = problem.unpack(theta)
            g_Q, g_K = problem.unpack(problem.gradient(theta))
            lap_Q, lap_K = problem.data_laplacian_blocks(theta)
            assert np.linalg.norm(g_Q) <= C * np.linalg.norm(W_K) * (1 + 1e-9)
            assert np.linalg.norm(g_K) <= C * np.linalg.norm(W_Q) * (1 + 1e-9)
            assert abs(lap_Q) <= C2 * np.sum(W_K ** 2) * (1 + 1e-9)
            assert abs(lap_K) <= C2 * np.sum(W_Q ** 2) * (1 + 1e-9)
