"""Exact derivatives of Part II's two factorized losses (attention in W_Q, W_K and LoRA) against
central finite differences in float64, for every regularizer: gradient, second derivatives
along directions, and the Laplacian (trace of the Hessian)."""

from __future__ import annotations

import numpy as np
import pytest

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
