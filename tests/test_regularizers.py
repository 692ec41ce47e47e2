"""Tests of attnlib.regularizers: closed forms against sympy, batching, input checks."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import sympy as sp

from attnlib.regularizers import REGULARIZER_NAMES, Regularizer, make_regularizer

EPS = 0.5


def sympy_profile(name: str, t: sp.Symbol) -> sp.Expr:
    """The profiles written independently in sympy."""
    p = 1 + sp.Rational(1, 2) * sp.Rational(EPS).limit_denominator()
    return {
        "none": sp.Integer(0),
        "weight_decay": t,
        "log": t * sp.log(1 + t),
        "power": (1 + t) ** p - 1,
        "power_source": t ** p,
    }[name]


@pytest.mark.parametrize("name", REGULARIZER_NAMES)
def test_profile_derivatives_match_sympy(name: str) -> None:
    t = sp.Symbol("t", positive=True)
    g = sympy_profile(name, t)
    reg = Regularizer(name, lam=0.3, eps=EPS)
    ts = np.array([0.01, 0.7, 3.0, 250.0])
    for order, fn in ((0, reg.g), (1, reg.dg), (2, reg.d2g)):
        expr = sp.lambdify(t, sp.diff(g, t, order), "numpy")
        expected = np.broadcast_to(np.asarray(expr(ts), dtype=float), ts.shape)
        np.testing.assert_allclose(fn(ts), expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", REGULARIZER_NAMES)
def test_block_value_gradient_laplacian_match_sympy(name: str) -> None:
    w = sp.symbols("w0:4", real=True)
    lam = 0.7
    t = sum(wi ** 2 for wi in w)
    tsym = sp.Symbol("t", positive=True)
    R = lam * sympy_profile(name, tsym).subs(tsym, t)
    point = {wi: v for wi, v in zip(w, [0.3, -1.2, 0.8, 2.0])}
    W = np.array([[0.3, -1.2], [0.8, 2.0]])
    reg = Regularizer(name, lam=lam, eps=EPS)
    assert reg.value(W) == pytest.approx(float(R.subs(point)), rel=1e-12, abs=1e-15)
    grad = np.array([float(sp.diff(R, wi).subs(point)) for wi in w]).reshape(2, 2)
    np.testing.assert_allclose(reg.gradient(W), grad, rtol=1e-12, atol=1e-15)
    lap = float(sum(sp.diff(R, wi, 2) for wi in w).subs(point))
    assert reg.laplacian(W) == pytest.approx(lap, rel=1e-12, abs=1e-15)
    assert reg.grad_sq_t(float(np.sum(W ** 2))) == pytest.approx(float(np.sum(grad ** 2)),
                                                                 rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("name", ["log", "power", "power_source", "weight_decay"])
def test_mpmath_and_numpy_agree(name: str) -> None:
    reg = Regularizer(name, lam=0.2, eps=EPS)
    for t in (0.5, 40.0):
        with mpmath.workdps(30):
            assert float(reg.laplacian_t(mpmath.mpf(t), 6)) == pytest.approx(
                float(reg.laplacian_t(np.float64(t), 6)), rel=1e-13)
            assert float(reg.grad_sq_t(mpmath.mpf(t))) == pytest.approx(
                float(reg.grad_sq_t(np.float64(t))), rel=1e-13)


def test_batched_blocks_equal_one_at_a_time() -> None:
    rng = np.random.default_rng(0)
    W = rng.standard_normal((5, 3, 2))
    reg = make_regularizer("log", 0.1)
    value = reg.value(W, batch_ndim=1)
    grad = reg.gradient(W, batch_ndim=1)
    lap = reg.laplacian(W, batch_ndim=1)
    assert value.shape == (5,) and grad.shape == W.shape and lap.shape == (5,)
    for c in range(5):
        assert value[c] == pytest.approx(reg.value(W[c]), rel=1e-14)
        np.testing.assert_allclose(grad[c], reg.gradient(W[c]), rtol=1e-14)
        assert lap[c] == pytest.approx(reg.laplacian(W[c]), rel=1e-14)


def test_source_power_laplacian_is_finite_at_origin() -> None:
    reg = Regularizer("power_source", lam=1.0, eps=EPS)
    assert reg.laplacian(np.zeros((2, 2))) == 0.0
    assert Regularizer("power", lam=1.0, eps=EPS).laplacian(np.zeros((2, 2))) == pytest.approx(
        2 * (4 * 1.25 + 0.0))


def test_inactive_regularizers() -> None:
    assert not Regularizer().active
    assert not Regularizer("log", lam=0.0).active
    assert Regularizer("log", lam=1e-3).active


@pytest.mark.parametrize("kwargs, match", [
    ({"name": "l2"}, "name must be one of"),
    ({"name": "log", "lam": -1.0}, "lam must be"),
    ({"name": "power", "lam": 1.0, "eps": 0.0}, "eps must be"),
])
def test_bad_parameters(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Regularizer(**kwargs)


def test_bad_blocks() -> None:
    reg = Regularizer("log", lam=1.0)
    with pytest.raises(ValueError, match="NaN"):
        reg.value(np.array([[np.nan]]))
    with pytest.raises(ValueError, match="batch_ndim"):
        reg.value(np.ones(3), batch_ndim=1)
