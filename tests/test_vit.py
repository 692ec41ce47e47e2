"""Tests of attnlib.vit: shapes, the exact backward pass, symmetry, optimisers, freezing."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib import vit
from attnlib.regularizers import Regularizer


def _problem(hidden: int, seed: int = 0, batch: int = 3):
    config = vit.ViTConfig(size=4, patch=2, width=5, key_dim=3, hidden=hidden)
    rng = np.random.default_rng(seed)
    params = vit.init_params(config, rng=rng)
    params = {key: value + 0.1 * rng.standard_normal(value.shape) for key, value in params.items()}
    patches = vit.patchify(rng.standard_normal((batch, 4, 4)), 2)
    targets = vit.patchify(rng.standard_normal((batch, 4, 4)), 2)
    return config, params, patches, targets


@pytest.mark.parametrize("hidden", [0, 4])
def test_gradients_match_central_differences(hidden: int) -> None:
    _, params, patches, targets = _problem(hidden)
    _, grads = vit.loss_and_gradients(params, patches, targets)
    assert set(grads) == set(params)
    step = 1e-6
    for name, value in params.items():
        numeric = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            plus = {**params, name: value.copy()}
            minus = {**params, name: value.copy()}
            plus[name][index] += step
            minus[name][index] -= step
            numeric[index] = (vit.loss_and_gradients(plus, patches, targets)[0]
                              - vit.loss_and_gradients(minus, patches, targets)[0]) / (2 * step)
        np.testing.assert_allclose(grads[name], numeric, rtol=1e-6, atol=1e-9, err_msg=name)


def test_loss_is_half_mean_squared_error() -> None:
    _, params, patches, targets = _problem(4)
    out, _ = vit.forward(params, patches)
    loss, _ = vit.loss_and_gradients(params, patches, targets)
    assert loss == pytest.approx(0.5 * np.mean((out - targets) ** 2), rel=1e-12)


@settings(deadline=None, max_examples=20)
@given(st.integers(min_value=0, max_value=10_000))
def test_loss_invariant_under_general_linear_group(seed: int) -> None:
    """L(W_Q G, W_K G^{-T}) = L(W_Q, W_K) for invertible G (the scale redundancy)."""
    _, params, patches, targets = _problem(4, seed=seed % 7)
    rng = np.random.default_rng(seed)
    g = np.eye(3) + 0.5 * rng.standard_normal((3, 3))
    if abs(np.linalg.det(g)) < 0.1:
        g = g + 2 * np.eye(3)
    moved = {**params, "W_Q": params["W_Q"] @ g, "W_K": params["W_K"] @ np.linalg.inv(g).T}
    base = vit.loss_and_gradients(params, patches, targets)[0]
    assert vit.loss_and_gradients(moved, patches, targets)[0] == pytest.approx(base, rel=1e-9)


def test_balancedness_identity_of_the_gradient() -> None:
    """Invariance under (r W_Q, W_K / r) gives <W_Q, grad_Q L> = <W_K, grad_K L>."""
    _, params, patches, targets = _problem(4, seed=3)
    _, grads = vit.loss_and_gradients(params, patches, targets)
    left = np.sum(params["W_Q"] * grads["W_Q"])
    right = np.sum(params["W_K"] * grads["W_K"])
    assert left == pytest.approx(right, rel=1e-9, abs=1e-14)
    assert abs(left) > 1e-8


def test_attention_rows_are_stable_for_huge_scores() -> None:
    _, params, patches, _ = _problem(0)
    big = {**params, "W_Q": 1e4 * params["W_Q"]}
    out, cache = vit.forward(big, patches)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(cache["attn"].sum(axis=-1), 1.0, rtol=1e-12)


def test_patchify_round_trip_and_token_order() -> None:
    fields = np.arange(2 * 6 * 6, dtype=float).reshape(2, 6, 6)
    patches = vit.patchify(fields, 3)
    assert patches.shape == (2, 4, 9)
    np.testing.assert_array_equal(patches[0, 1], fields[0, :3, 3:].ravel())
    np.testing.assert_array_equal(vit.unpatchify(patches, 3), fields)


def test_field_metrics() -> None:
    true = np.ones((2, 3, 3))
    predicted = true.copy()
    predicted[1] *= 1.5
    metrics = vit.field_metrics(predicted, true)
    assert metrics["rel_l2"] == pytest.approx(0.25)
    assert metrics["rmse"] == pytest.approx(np.sqrt(0.5 * 0.25))


def _training_problem():
    config = vit.ViTConfig(size=8, patch=4, width=6, key_dim=4, hidden=6)
    rng = np.random.default_rng(4)
    params = vit.init_params(config, rng=rng)
    fields = rng.standard_normal((16, 8, 8))
    patches = vit.patchify(fields, 4)
    targets = vit.patchify(np.cumsum(fields, axis=2) / 4, 4)
    return params, patches, targets


@pytest.mark.parametrize("optimizer, lr", [("adam", 1e-2), ("sgd", 0.2)])
def test_training_decreases_the_loss(optimizer: str, lr: float) -> None:
    params, patches, targets = _training_problem()
    _, history = vit.train(params, patches, targets, epochs=15, batch_size=4, lr=lr,
                           optimizer=optimizer, rng=np.random.default_rng(0))
    assert history["train_loss"].shape == (16,)
    assert history["train_loss"][-1] < 0.7 * history["train_loss"][0]


def test_frozen_parameters_do_not_move_and_training_is_deterministic() -> None:
    params, patches, targets = _training_problem()
    kwargs = dict(epochs=3, batch_size=5, lr=1e-2, rng=None, trainable=("W_Q", "W_K"),
                  regularizer=Regularizer("log", lam=1e-3))
    first, h1 = vit.train(params, patches, targets, **{**kwargs, "rng": np.random.default_rng(1)})
    second, h2 = vit.train(params, patches, targets, **{**kwargs, "rng": np.random.default_rng(1)})
    for name in params:
        if name in ("W_Q", "W_K"):
            assert not np.allclose(first[name], params[name])
        else:
            np.testing.assert_array_equal(first[name], params[name])
        np.testing.assert_array_equal(first[name], second[name])
    np.testing.assert_array_equal(h1["norm_WQ"], h2["norm_WQ"])
    assert h1["reg"][0] == pytest.approx(
        float(Regularizer("log", lam=1e-3).value(params["W_Q"])
              + Regularizer("log", lam=1e-3).value(params["W_K"])))


def test_sgd_step_with_regularizer_and_noise_is_the_euler_maruyama_step() -> None:
    """One full-batch step: theta - lr (grad L + grad R) + noise_std xi, xi from the same rng."""
    params, patches, targets = _training_problem()
    reg = Regularizer("power", lam=1e-2, eps=0.5)
    lr, noise = 0.1, 0.01
    moved, _ = vit.train(params, patches, targets, epochs=1, batch_size=16, lr=lr,
                         optimizer="sgd", trainable=("W_Q", "W_K"), regularizer=reg,
                         noise_std=noise, rng=np.random.default_rng(5))
    rng = np.random.default_rng(5)
    order = rng.permutation(16)
    _, grads = vit.loss_and_gradients(params, patches[order], targets[order])
    for name in ("W_Q", "W_K"):
        expected = params[name] - lr * (grads[name] + reg.gradient(params[name]))
        expected = expected + noise * rng.standard_normal(params[name].shape)
        np.testing.assert_allclose(moved[name], expected, rtol=1e-12, atol=1e-14)


def test_plain_gradient_flow_keeps_the_norm_gap_nearly_constant() -> None:
    """Small-step SGD on W_Q, W_K: ||W_Q||^2 - ||W_K||^2 changes only at order lr^2."""
    params, patches, targets = _training_problem()
    _, history = vit.train(params, patches, targets, epochs=5, batch_size=16, lr=1e-3,
                           optimizer="sgd", trainable=("W_Q", "W_K"),
                           rng=np.random.default_rng(2))
    gap = history["norm_WQ"] ** 2 - history["norm_WK"] ** 2
    total = history["norm_WQ"] ** 2 + history["norm_WK"] ** 2
    assert np.abs(gap - gap[0]).max() < 1e-6
    assert np.abs(total - total[0]).max() > 1e-6   # the parameters did move


def test_input_errors_name_the_argument() -> None:
    params, patches, targets = _training_problem()
    with pytest.raises(ValueError, match="size .* divisible by patch"):
        vit.ViTConfig(size=10, patch=4, width=2, key_dim=2)
    with pytest.raises(ValueError, match="optimizer"):
        vit.train(params, patches, targets, epochs=1, batch_size=4, lr=0.1,
                  optimizer="rmsprop", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="noise_std"):
        vit.train(params, patches, targets, epochs=1, batch_size=4, lr=0.1, noise_std=0.1,
                  optimizer="adam", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="trainable"):
        vit.train(params, patches, targets, epochs=1, batch_size=4, lr=0.1,
                  trainable=("W_X",), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="regularizer"):
        vit.train(params, patches, targets, epochs=1, batch_size=4, lr=0.1, trainable=("W_Q",),
                  regularizer=Regularizer("log", lam=0.1), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="targets"):
        vit.train(params, patches, targets[:3], epochs=1, batch_size=4, lr=0.1,
                  rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="standard deviation"):
        vit.Standardizer.fit(np.zeros(4))
