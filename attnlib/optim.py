"""Gradient transformations with optax's contract: one home for the optimizers of Part I's
methods (:mod:`attnlib.algorithm`, chapters 4-6) and Part III's ViT (:mod:`attnlib.vit`,
chapter 11).

A transformation is a pair of pure functions, as in optax (``optax/_src/base.py``):

    init(params) -> state
    update(updates, state, params=None) -> (new_updates, new_state)

``params`` and ``updates`` are tuples of arrays of matching shapes (``(A, B)`` in Part I, the
ViT's trainable matrices in Part III); ``update`` receives the current parameters as optax's
does, for the transformations that need them (:func:`add_decayed_weights`), and the others
ignore them. An optax transformation runs here through :func:`from_optax`. A state is an immutable NamedTuple that ``update``
never changes in place, so replaying an update from the same state gives the same result.
An optimizer is a :func:`chain` of transformations applied in order, e.g.
``chain(scale_by_adam(), scale(-lr))``; the parameters then move by ``params + updates``.
Each transformation checks that it was handed its own kind of state, so a state made by a
different chain raises instead of silently skipping a transformation, and that parameters,
updates and the arrays of its state (momentum, Adam's moments) are tuples of finite
float32/float64 arrays (``TypeError``, or :class:`NonFiniteError`
for NaN, inf or an overflowing step, naming the entry; float16 is refused: Adam's second moment
underflows there). :func:`attnlib.algorithm.train` reports a :class:`NonFiniteError` as a
divergence and lets every other exception, a user's transformation's own, propagate as it is.

Examples
--------
Algorithm 1's update is a chain (here without its preconditioner): scale the gradient by
``-eta``, then add it to the parameters.

>>> import numpy as np
>>> from attnlib import optim
>>> params = (np.ones((2, 2)), np.zeros(3))
>>> grads = (np.full((2, 2), 2.0), np.ones(3))
>>> sgd = optim.chain(optim.add_decayed_weights(0.5), optim.scale(-0.1))
>>> state = sgd.init(params)
>>> updates, state = sgd.update(grads, state, params)
>>> optim.apply_updates(params, updates)[0]       # 1 - 0.1 (2 + 0.5 * 1)
array([[0.75, 0.75],
       [0.75, 0.75]])
"""

from __future__ import annotations

from typing import Any, Callable, NamedTuple

import numpy as np

from ._validation import check_finite, check_in_range, check_positive

__all__ = ["Params", "Transform", "NonFiniteError", "EmptyState", "TraceState",
           "ScaleByAdamState", "check_betas", "chain", "scale", "trace", "scale_by_adam",
           "add_decayed_weights", "from_optax", "apply_updates"]

#: Parameters, gradients or updates as a tuple of arrays (``(A, B)`` in Part I).
Params = tuple[np.ndarray, ...]


class Transform(NamedTuple):
    """A gradient transformation: ``init(params) -> state``,
    ``update(updates, state, params=None) -> (new_updates, new_state)``, both pure."""

    init: Callable[[Params], Any]
    update: Callable[..., tuple[Params, Any]]


class NonFiniteError(ValueError):
    """Updates or parameters that are NaN or infinite, or a step that overflows: the library's
    own finiteness failure, which :func:`attnlib.algorithm.train` reports as a divergence."""


class EmptyState(NamedTuple):
    """The state of a stateless transformation (:func:`scale`)."""


class TraceState(NamedTuple):
    """:func:`trace`'s momentum ``m``, one array per parameter."""

    momentum: Params


class ScaleByAdamState(NamedTuple):
    """:func:`scale_by_adam`'s step count ``t`` and moments ``m`` (``mu``), ``v`` (``nu``)."""

    count: int
    mu: Params
    nu: Params


def _check_updates(updates: object, name: str = "updates") -> Params:
    """``updates`` as a tuple, after checking it is a non-empty tuple (or list) of finite
    float32 or float64 arrays. The arrays are returned as given (no copy, no conversion), so
    good input gives bit for bit the same result as without the check."""
    if not isinstance(updates, (tuple, list)) or not updates:
        raise TypeError(f"{name} must be a non-empty tuple of arrays, got "
                        f"{type(updates).__name__}")
    for i, array in enumerate(updates):
        dtype = getattr(array, "dtype", None)
        if dtype is None or dtype not in (np.float32, np.float64):
            raise TypeError(f"{name}[{i}] must be a float32 or float64 array, got "
                            f"{type(array).__name__} of dtype {dtype}")
        if not np.all(np.isfinite(array)):
            raise NonFiniteError(f"{name}[{i}] contains NaN or inf")
    return tuple(updates)


def _check_state(name: str, state: object, kind: type, updates: Params,
                 *fields: str) -> None:
    """Raise unless ``state`` is a ``kind`` whose array ``fields`` are checked like the updates
    (tuples of finite float32 or float64 arrays, ``TypeError`` or :class:`NonFiniteError`
    naming the entry) and match ``updates``' shapes (``ValueError``)."""
    if not isinstance(state, kind):
        raise TypeError(f"state must be a {kind.__name__}, made by this optimizer's init: "
                        f"{name} was handed a state of type {type(state).__name__}")
    for field in fields:
        arrays = getattr(state, field)
        if not isinstance(arrays, (tuple, list)):
            raise TypeError(f"{name}: state.{field} must be a tuple of arrays, one per "
                            f"parameter, got {type(arrays).__name__}")
        if len(arrays) != len(updates) or any(
                np.shape(a) != np.shape(u) for a, u in zip(arrays, updates)):
            raise ValueError(f"{name}: state.{field} has shapes "
                             f"{[np.shape(a) for a in arrays]} but the updates have "
                             f"{[np.shape(u) for u in updates]}")
        _check_updates(arrays, f"{name}: state.{field}")


def chain(*transforms: Transform) -> Transform:
    """Apply ``transforms`` in order, each to the output of the previous one; the state is the
    tuple of their states (a state of another length raises ``ValueError``).

    Parameters
    ----------
    *transforms : Transform
        E.g. ``precondition(Sigma_hat)`` then ``scale(-eta)`` (Algorithm 1).

    Returns
    -------
    Transform
        The composed transformation.

    Raises
    ------
    TypeError
        When an argument is not a :class:`Transform`.
    """
    for i, transform in enumerate(transforms):
        if not isinstance(transform, Transform):
            raise TypeError(f"transforms[{i}] must be an attnlib.optim.Transform, got "
                            f"{type(transform).__name__}")

    def init(params: Params) -> tuple:
        return tuple(t.init(params) for t in transforms)

    def update(updates: Params, state: tuple, params: Params | None = None
               ) -> tuple[Params, tuple]:
        if type(state) is not tuple or len(state) != len(transforms):
            length = len(state) if isinstance(state, tuple) else type(state).__name__
            raise ValueError(f"state must be the tuple made by this chain's init: chain of "
                             f"{len(transforms)} transformations was handed a state of {length} "
                             "entries")
        states = []
        for transform, sub_state in zip(transforms, state):
            updates, sub_state = transform.update(updates, sub_state, params)
            states.append(sub_state)
        return updates, tuple(states)

    return Transform(init, update)


def scale(factor: float) -> Transform:
    """Multiply every update by ``factor`` (``scale(-eta)`` turns a direction into a step).

    Parameters
    ----------
    factor : float
        A finite number.

    Returns
    -------
    Transform
        Stateless (:class:`EmptyState`).

    Raises
    ------
    ValueError
        When ``factor`` is not finite.
    """
    factor = check_finite("factor", factor)

    def update(updates: Params, state: EmptyState, params: Params | None = None
               ) -> tuple[Params, EmptyState]:
        updates = _check_updates(updates)
        _check_state("scale", state, EmptyState, updates)
        return tuple(factor * u for u in updates), state

    def init(params: Params) -> EmptyState:
        _check_updates(params, "params")
        return EmptyState()

    return Transform(init, update)


def trace(*, decay: float, nesterov: bool = False) -> Transform:
    """Heavy-ball momentum ``m <- g + decay m``; the update is ``m``, or ``g + decay m`` with
    Nesterov's look-ahead."""
    decay = check_in_range("decay", decay, 0.0, 1.0, closed=(True, False))

    def init(params: Params) -> TraceState:
        return TraceState(tuple(np.zeros_like(p) for p in _check_updates(params, "params")))

    def update(updates: Params, state: TraceState, params: Params | None = None
               ) -> tuple[Params, TraceState]:
        updates = _check_updates(updates)
        _check_state("trace", state, TraceState, updates, "momentum")
        momentum = tuple(g + decay * m for g, m in zip(updates, state.momentum))
        if nesterov:
            return tuple(g + decay * m for g, m in zip(updates, momentum)), TraceState(momentum)
        return momentum, TraceState(momentum)

    return Transform(init, update)


def check_betas(betas: object) -> tuple[float, float]:
    """Return Adam's ``(b1, b2)`` after checking it is a pair of numbers in ``[0, 1)``."""
    if isinstance(betas, (str, bytes)) or np.shape(betas) != (2,):
        raise ValueError(f"betas must be a pair (beta1, beta2) of numbers in [0, 1), "
                         f"got {betas!r}")
    return (check_in_range("betas[0]", betas[0], 0.0, 1.0, closed=(True, False)),
            check_in_range("betas[1]", betas[1], 0.0, 1.0, closed=(True, False)))


def scale_by_adam(*, betas: tuple[float, float] = (0.9, 0.999),
                  eps: float = 1e-8) -> Transform:
    """Adam's direction (Kingma and Ba, ICLR 2015), bias-corrected:
    ``m <- b1 m + (1 - b1) g``, ``v <- b2 v + (1 - b2) g^2``, ``t <- t + 1``, and the update is
    ``m_hat / (sqrt(v_hat) + eps)`` with ``m_hat = m / (1 - b1^t)``, ``v_hat = v / (1 - b2^t)``."""
    beta1, beta2 = check_betas(betas)
    eps = check_positive("eps", eps, allow_zero=True)

    def init(params: Params) -> ScaleByAdamState:
        zeros = tuple(np.zeros_like(p) for p in _check_updates(params, "params"))
        return ScaleByAdamState(0, zeros, zeros)

    def update(updates: Params, state: ScaleByAdamState, params: Params | None = None
               ) -> tuple[Params, ScaleByAdamState]:
        updates = _check_updates(updates)
        _check_state("scale_by_adam", state, ScaleByAdamState, updates, "mu", "nu")
        if isinstance(state.count, (bool, np.bool_)) or not isinstance(
                state.count, (int, np.integer)) or state.count < 0:
            raise TypeError(f"scale_by_adam: state.count must be the number of steps taken "
                            f"(an integer >= 0), got {state.count!r}")
        for i, v in enumerate(state.nu):
            if np.any(v < 0):
                raise ValueError(f"scale_by_adam: state.nu[{i}] has negative entries (down to "
                                 f"{v.min():.3g}); it is a second moment, >= 0")
        count = state.count + 1
        mu = tuple(beta1 * m + (1 - beta1) * g for g, m in zip(updates, state.mu))
        nu = tuple(beta2 * v + (1 - beta2) * g ** 2 for g, v in zip(updates, state.nu))
        directions = tuple((m / (1 - beta1 ** count)) / (np.sqrt(v / (1 - beta2 ** count)) + eps)
                           for m, v in zip(mu, nu))
        return directions, ScaleByAdamState(count, mu, nu)

    return Transform(init, update)


def add_decayed_weights(weight_decay: float) -> Transform:
    """Weight decay as a transformation, optax's ``add_decayed_weights``: the update becomes
    ``g + weight_decay * params``, so that a following ``scale(-eta)`` steps along the gradient
    of ``loss + (weight_decay / 2) ||params||^2``. It needs ``params`` (``ValueError`` without).

    Examples
    --------
    >>> import numpy as np
    >>> decay = add_decayed_weights(0.1)
    >>> params = (np.array([1.0, -2.0]),)
    >>> decay.update((np.zeros(2),), decay.init(params), params)[0]
    (array([ 0.1, -0.2]),)
    """
    weight_decay = check_positive("weight_decay", weight_decay, allow_zero=True)

    def init(params: Params) -> EmptyState:
        _check_updates(params, "params")
        return EmptyState()

    def update(updates: Params, state: EmptyState, params: Params | None = None
               ) -> tuple[Params, EmptyState]:
        updates = _check_updates(updates)
        _check_state("add_decayed_weights", state, EmptyState, updates)
        if params is None:
            raise ValueError("add_decayed_weights needs params: call update(updates, state, "
                             "params)")
        params = _check_updates(params, "params")
        if len(params) != len(updates) or any(np.shape(p) != np.shape(u)
                                              for p, u in zip(params, updates)):
            raise ValueError(f"params has shapes {[np.shape(p) for p in params]} but updates "
                             f"has {[np.shape(u) for u in updates]}")
        return tuple(u + weight_decay * p for u, p in zip(updates, params)), state

    return Transform(init, update)


def from_optax(transformation: Any) -> Transform:
    """Run an optax gradient transformation (or anything with optax's contract:
    ``init(params)`` and ``update(updates, state, params)``) as an attnlib :class:`Transform`.

    The parameters and gradients are handed to ``transformation`` as they are (a tuple of numpy
    arrays, which optax accepts as a pytree) and its updates come back as numpy arrays of the
    parameters' dtype (optax returns JAX arrays), so ``train`` and :func:`apply_updates` see
    numpy only. The state is optax's own, passed through untouched. For example
    ``Method(update=Custom(lambda eta: from_optax(optax.sgd(eta, momentum=0.9))))`` trains with
    optax's SGD at the step of the book's step-size rule.

    Parameters
    ----------
    transformation : object
        Has ``init`` and ``update`` (an ``optax.GradientTransformation``).

    Returns
    -------
    Transform
        The same transformation, numpy in and numpy out.

    Raises
    ------
    TypeError
        When ``transformation`` lacks ``init`` or ``update``, or its updates are not a
        sequence of one array per parameter.

    Examples
    --------
    A stand-in with optax's contract (``optax.sgd(0.1)`` behaves the same):

    >>> import numpy as np
    >>> class Sgd:                         # optax.GradientTransformation's two functions
    ...     def init(self, params):
    ...         return ()
    ...     def update(self, updates, state, params=None):
    ...         return [-0.1 * g for g in updates], state
    >>> sgd = from_optax(Sgd())
    >>> params = (np.ones(2),)
    >>> updates, _ = sgd.update((np.ones(2),), sgd.init(params), params)
    >>> apply_updates(params, updates)
    (array([0.9, 0.9]),)
    """
    if not (callable(getattr(transformation, "init", None))
            and callable(getattr(transformation, "update", None))):
        raise TypeError(f"transformation must have init(params) and update(updates, state, "
                        f"params), as an optax.GradientTransformation, got "
                        f"{type(transformation).__name__}")

    def init(params: Params) -> Any:
        return transformation.init(_check_updates(params, "params"))

    def update(updates: Params, state: Any, params: Params | None = None
               ) -> tuple[Params, Any]:
        updates = _check_updates(updates)
        new_updates, new_state = transformation.update(updates, state, params)
        if isinstance(new_updates, (str, bytes)) or len(new_updates) != len(updates):
            raise TypeError(f"the optax transformation returned {type(new_updates).__name__} "
                            f"for {len(updates)} parameters: expected one update per parameter")
        return tuple(np.asarray(new, dtype=old.dtype) for new, old
                     in zip(new_updates, updates)), new_state

    return Transform(init, update)


def apply_updates(params: Params, updates: Params) -> Params:
    """``params + updates``, entry by entry (new arrays; the inputs are not changed). Both
    must be tuples of finite float32/float64 arrays of matching shapes; a sum that overflows
    raises ``ValueError`` instead of returning inf."""
    params, updates = _check_updates(params, "params"), _check_updates(updates)
    if len(params) != len(updates) or any(np.shape(p) != np.shape(u)
                                          for p, u in zip(params, updates)):
        raise ValueError(f"params has shapes {[np.shape(p) for p in params]} but updates has "
                         f"{[np.shape(u) for u in updates]}")
    with np.errstate(over="ignore"):
        moved = tuple(p + u for p, u in zip(params, updates))
    if not all(np.all(np.isfinite(m)) for m in moved):
        raise NonFiniteError("updates: params + updates overflows (inf): the step is too large")
    return moved
