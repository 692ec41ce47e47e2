"""attnlib.optim: optax's contract (pure updates, immutable states, chains that refuse a
state that is not theirs) and the textbook update rules."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import algorithm, optim


@pytest.fixture
def params():
    rng = np.random.default_rng(0)
    return rng.standard_normal((3, 4)), rng.standard_normal((4, 4))


@pytest.fixture
def grads():
    rng = np.random.default_rng(1)
    return rng.standard_normal((3, 4)), rng.standard_normal((4, 4))


OPTIMIZERS = {
    "sgd": lambda: optim.scale(-0.1),
    "momentum": lambda: optim.chain(optim.trace(decay=0.9), optim.scale(-0.1)),
    "nesterov": lambda: optim.chain(optim.trace(decay=0.9, nesterov=True), optim.scale(-0.1)),
    "adam": lambda: optim.chain(optim.scale_by_adam(), optim.scale(-0.1)),
}


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_replaying_an_update_from_the_same_state_gives_the_same_result(name, params, grads):
    optimizer = OPTIMIZERS[name]()
    state = optimizer.init(params)
    state = optimizer.update(grads, state)[1]            # a state with non-zero moments
    snapshot = [np.copy(a) for a in _arrays(state)]
    first, after_first = optimizer.update(grads, state)
    second, after_second = optimizer.update(grads, state)
    for a, b in zip(first + _arrays(after_first), second + _arrays(after_second)):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(snapshot, _arrays(state)):           # the state was not changed in place
        np.testing.assert_array_equal(a, b)


def _arrays(state) -> tuple[np.ndarray, ...]:
    """Every array inside a (nested) state."""
    if isinstance(state, np.ndarray):
        return (state,)
    if isinstance(state, tuple):
        return tuple(a for item in state for a in _arrays(item))
    return ()


def test_a_chain_refuses_a_state_of_another_length(params, grads):
    momentum_then_step = optim.chain(optim.trace(decay=0.9), optim.scale(-0.1))
    with pytest.raises(ValueError, match="chain of 2 transformations was handed a state of 1"):
        momentum_then_step.update(grads, optim.chain(optim.trace(decay=0.9)).init(params))


def test_a_transform_refuses_another_transforms_state(params, grads):
    adam_then_step = optim.chain(optim.scale_by_adam(), optim.scale(-0.1))
    momentum_state = optim.chain(optim.trace(decay=0.9), optim.scale(-0.1)).init(params)
    with pytest.raises(TypeError, match="scale_by_adam was handed a state of type TraceState"):
        adam_then_step.update(grads, momentum_state)
    with pytest.raises(ValueError, match=r"trace: state.momentum has shapes"):
        optim.trace(decay=0.5).update(grads, optim.trace(decay=0.5).init(grads[:1]))


def test_chain_applies_transforms_in_order_and_momentum_accumulates(params):
    zeros = tuple(np.zeros((2, 2)) for _ in range(2))
    grads = (np.ones((2, 2)), 2 * np.ones((2, 2)))
    sigma = np.diag([4.0, 1.0])
    optimizer = optim.chain(algorithm.precondition(sigma), optim.scale(-0.5))
    (ua, ub), _ = optimizer.update(grads, optimizer.init(zeros))
    np.testing.assert_allclose(ua, -0.5 * grads[0] @ np.diag([0.25, 1.0]))
    np.testing.assert_allclose(ub, -0.5 * np.diag([0.25, 1.0]) @ grads[1] @ np.diag([0.25, 1.0]))
    heavy = optim.trace(decay=0.5)
    state = heavy.init(zeros)
    _, state = heavy.update(grads, state)
    (second, _), state = heavy.update(grads, state)
    np.testing.assert_allclose(second, 1.5 * grads[0])            # g + 0.5 g
    nesterov = optim.trace(decay=0.5, nesterov=True)
    (look_ahead, _), _ = nesterov.update(grads, nesterov.init(zeros))
    np.testing.assert_allclose(look_ahead, 1.5 * grads[0])        # g + 0.5 (g + 0.5 * 0)


def test_scale_by_adam_matches_the_textbook_update():
    rng = np.random.default_rng(0)
    grads = rng.standard_normal((3, 4))
    adam = optim.chain(optim.scale_by_adam(betas=(0.9, 0.99), eps=1e-8), optim.scale(-0.1))
    state = adam.init((np.zeros(4),))
    m_ref, v_ref = np.zeros(4), np.zeros(4)
    for t, g in enumerate(grads, start=1):
        (step,), state = adam.update((g,), state)
        m_ref = 0.9 * m_ref + 0.1 * g
        v_ref = 0.99 * v_ref + 0.01 * g ** 2
        expected = -0.1 * (m_ref / (1 - 0.9 ** t)) / (np.sqrt(v_ref / (1 - 0.99 ** t)) + 1e-8)
        np.testing.assert_allclose(step, expected, rtol=1e-14)
    assert state[0].count == 3
    np.testing.assert_allclose(state[0].mu[0], m_ref, rtol=1e-14)
    # The first step of Adam has magnitude lr in every coordinate (m_hat / sqrt(v_hat) = sign g).
    first_step = optim.chain(optim.scale_by_adam(betas=(0.9, 0.99), eps=0.0), optim.scale(-0.1))
    (first,), _ = first_step.update((grads[0],), first_step.init((np.zeros(4),)))
    np.testing.assert_allclose(first, -0.1 * np.sign(grads[0]), rtol=1e-12)


def test_a_new_update_rule_needs_no_change_to_method():
    """UpdateRule is a protocol: any object with eta() and transform() is accepted."""

    class HalfStep:
        def eta(self, default_step):
            return 0.5 * default_step(0.5)

        def transform(self, eta):
            return optim.scale(-eta)

    method = algorithm.Method(update=HalfStep())
    assert isinstance(method.update, algorithm.UpdateRule)
    with pytest.raises(TypeError, match="update must be an UpdateRule"):
        algorithm.Method(update="gd")


def test_apply_updates_names_a_length_mismatch(params):
    with pytest.raises(ValueError, match=r"params has shapes \[.*\] but updates has"):
        optim.apply_updates(params, params[:1])


@pytest.mark.parametrize("bad, error, message", [
    (np.array([[np.nan, 0.0]]), ValueError, r"updates\[0\] contains NaN or inf"),
    (np.array([[-np.inf, 0.0]]), ValueError, r"updates\[0\] contains NaN or inf"),
    (np.array([[1j, 0.0]]), TypeError, r"updates\[0\] must be a float32 or float64 array"),
    (np.array([[1.0, 0.0]], dtype=np.float16), TypeError, r"updates\[0\] must be a float32"),
    (np.array([[1.0, 0.0]], dtype=object), TypeError, r"updates\[0\] must be a float32"),
])
def test_transforms_refuse_non_finite_and_non_float_updates(bad, error, message):
    params = (np.zeros((1, 2)),)
    for transform in (optim.scale(-0.1), optim.trace(decay=0.9), optim.scale_by_adam()):
        state = transform.init(params)
        with pytest.raises(error, match=message):
            transform.update((bad,), state)
        with pytest.raises(error, match=message.replace("updates", "params")):
            transform.init((bad,))


def test_apply_updates_refuses_a_step_that_overflows():
    with pytest.raises(ValueError, match=r"params \+ updates overflows"):
        optim.apply_updates((np.full((2, 2), 1e308),), (np.full((2, 2), 1e308),))


def test_checked_transforms_change_nothing_on_good_input():
    rng = np.random.default_rng(0)
    params = (rng.standard_normal((3, 4)), rng.standard_normal((4, 2)).astype(np.float32))
    grads = tuple(rng.standard_normal(p.shape).astype(p.dtype) for p in params)
    adam = optim.chain(optim.scale_by_adam(), optim.scale(-1e-3))
    updates, _ = adam.update(grads, adam.init(params))
    beta1, beta2, eps = 0.9, 0.999, 1e-8                 # Adam's first step, by hand
    for g, u in zip(grads, updates):
        m, v = (1 - beta1) * g, (1 - beta2) * g ** 2
        expected = -1e-3 * ((m / (1 - beta1)) / (np.sqrt(v / (1 - beta2)) + eps))
        np.testing.assert_array_equal(u, expected)


def _adam_state(mu: object = None, nu: object = None, count: object = 0) -> optim.ScaleByAdamState:
    zeros = (np.zeros(3),)
    return optim.ScaleByAdamState(count, zeros if mu is None else mu, zeros if nu is None else nu)


@pytest.mark.parametrize("state, error, message", [
    (_adam_state(mu=(np.full(3, np.nan),)), optim.NonFiniteError, r"state\.mu\[0\] contains NaN"),
    (_adam_state(nu=(np.full(3, -np.inf),)), optim.NonFiniteError, r"state\.nu\[0\] contains"),
    (_adam_state(mu=(np.ones(3, complex),)), TypeError, r"state\.mu\[0\] must be a float32 or "
                                                        r"float64 array, got ndarray of dtype "
                                                        r"complex128"),
    (_adam_state(mu=(np.array([{}, 1, 2], dtype=object),)), TypeError,
     r"state\.mu\[0\] must be a float32 or float64 array"),
    (_adam_state(nu=(-np.ones(3),)), ValueError, r"state\.nu\[0\] has negative entries"),
    (_adam_state(count=1.5), TypeError, r"state\.count must be the number of steps"),
    (_adam_state(mu=None, count=-1), TypeError, r"state\.count must be"),
    (optim.ScaleByAdamState(0, None, None), TypeError, r"state\.mu must be a tuple of arrays"),
], ids=["nan", "neg-inf", "complex", "object", "negative-second-moment", "float-count",
        "negative-count", "none"])
def test_the_optimizer_state_is_checked_like_the_updates(state, error, message):
    adam = optim.scale_by_adam()
    with pytest.raises(error, match=message):
        adam.update((np.ones(3),), state)
    momentum = optim.trace(decay=0.9)
    with pytest.raises(optim.NonFiniteError, match=r"trace: state\.momentum\[0\] contains NaN"):
        momentum.update((np.ones(3),), optim.TraceState((np.full(3, np.nan),)))
