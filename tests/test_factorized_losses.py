"""Part II's two factorized losses (attention in W_Q, W_K and LoRA), tested together: the exact
derivatives against central finite differences in float64 for every regularizer (gradient,
second derivatives along directions, Laplacian) and the GL(k) symmetry of the data loss."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib import lora
from attnlib import qk_attention as qa
from attnlib.regularizers import Regularizer
from attnlib.villani import FactorizedLoss

REGS = [Regularizer(), Regularizer("weight_decay", 0.05), Regularizer("log", 0.05),
        Regularizer("power", 0.05, eps=0.5)]
MODELS = {
    "attention": lambda reg: qa.make_problem(rng=np.random.default_rng(0), n=4, N=4, d=3, d_k=2,
                                             regularizer=reg),
    "lora": lambda reg: lora.make_problem(rng=np.random.default_rng(0), n=10, d=3, width=5,
                                          rank=2, regularizer=reg),
}


def cases() -> list:
    return [pytest.param(model, reg, id=f"{model}-{reg.name}") for model in MODELS for reg in REGS]


@pytest.mark.parametrize(("model", "reg"), cases())
def test_gradient_matches_finite_differences(model: str, reg: Regularizer) -> None:
    p: FactorizedLoss = MODELS[model](reg)
    theta = np.random.default_rng(1).standard_normal(p.dim)
    h = 1e-6
    fd = np.array([(p.loss(theta + h * e) - p.loss(theta - h * e)) / (2 * h)
                   for e in np.eye(p.dim)])
    np.testing.assert_allclose(p.gradient(theta), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize(("model", "reg"), cases())
def test_second_derivative_and_laplacian_match_finite_differences(model: str,
                                                                  reg: Regularizer) -> None:
    p: FactorizedLoss = MODELS[model](reg)
    rng = np.random.default_rng(2)
    theta = rng.standard_normal(p.dim)
    h = 1e-5
    directions = rng.standard_normal((3, p.dim))
    fd = [u @ (p.gradient(theta + h * u) - p.gradient(theta - h * u)) / (2 * h)
          for u in directions]
    np.testing.assert_allclose(p.second_derivative(theta, directions), fd, rtol=1e-6, atol=1e-7)
    fd_trace = sum((p.gradient(theta + h * e) - p.gradient(theta - h * e))[i] / (2 * h)
                   for i, e in enumerate(np.eye(p.dim)))
    assert p.laplacian(theta) == pytest.approx(fd_trace, rel=1e-6, abs=1e-7)


#: The product each model's data loss depends on: W_Q W_K^T (attention) and U V (LoRA).
PRODUCTS = {"attention": lambda W_Q, W_K: W_Q @ W_K.T, "lora": lambda U, V: U @ V}


@pytest.mark.parametrize("model", MODELS)
@settings(deadline=None, max_examples=15)
@given(seed=st.integers(0, 10_000))
def test_gl_symmetry_leaves_data_loss_and_product_unchanged(model: str, seed: int) -> None:
    p: FactorizedLoss = MODELS[model](Regularizer())
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(p.dim)
    G = rng.standard_normal((2, 2)) + 2 * np.eye(2)
    moved = p.act(theta, G)
    assert p.data_loss(moved) == pytest.approx(p.data_loss(theta), rel=1e-10)
    np.testing.assert_allclose(PRODUCTS[model](*p.unpack(moved)), PRODUCTS[model](*p.unpack(theta)),
                               rtol=1e-9, atol=1e-12)
