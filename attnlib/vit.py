"""A Vision-Transformer-like regressor with exactly one softmax attention layer (Chapter 11).

A field on an ``s x s`` grid is cut into ``N = (s/p)^2`` patches of ``p x p`` pixels; the
patch matrix ``P`` (``N x p^2``) of one sample goes through

    X = P E + 1 b_E^T + Pos                              (patch + positional embedding, N x D)
    S = X W_Q (X W_K)^T / sqrt(d_k),   A = RowSoftmax(S)   (one attention layer, one head)
    H = X + A X W_V                                      (residual)
    Y = tanh(H W_1 + 1 b_1^T) W_2 + 1 b_2^T              (per-token decoder, N x p^2)

(with ``hidden = 0`` the decoder is linear: ``Y = H W_O + 1 b_O^T``), and ``Y`` is folded back
into an ``s x s`` field. The loss of a batch of ``B`` samples with targets ``T`` is the mean
squared error per pixel, halved:

    L = 1 / (2 B s^2) sum_b || Y_b - T_b ||_F^2.

The loss depends on ``W_Q, W_K`` only through ``W_Q W_K^T``, so it is invariant under
``(W_Q G, W_K G^{-T})`` for every invertible ``G``: the scale redundancy of Chapter 8.

:func:`loss_and_gradients` gives the exact backward pass (checked against finite differences
in the tests); :func:`train` runs Adam, SGD, or SGD with injected Gaussian noise (the
Euler-Maruyama step ``theta <- theta - lr grad + noise_std xi``, temperature
``noise_std^2 / lr`` in the convention ``dtheta = -grad dt + sqrt(s) dB``), on all parameters or
on a subset (Phase 2 trains only ``W_Q, W_K``), with an optional regularizer ``R(W_Q) + R(W_K)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from ._constants import documented
from ._progress import progress as _progress
from ._validation import (MAX_SIZE, DivergenceError, as_matrix, check_finite, check_generator,
                          check_int, check_memory, check_not_diverged, check_positive,
                          finite_result)
from .attention import row_softmax
from .optim import NonFiniteError, apply_updates, chain, check_betas, scale, scale_by_adam
from .regularizers import Regularizer

__all__ = [
    "ViTConfig",
    "Standardizer",
    "patchify",
    "unpatchify",
    "init_params",
    "forward",
    "loss_and_gradients",
    "predict_fields",
    "field_metrics",
    "train",
]

Params = dict[str, np.ndarray]
#: The parameters of the attention logits (query and key maps), the ones a ``regularizer`` of
#: :func:`train` acts on.
QK = documented(("W_Q", "W_K"), """\
The parameters of the attention logits (query and key maps), the ones a ``regularizer`` of
``train`` acts on.""")


@dataclass(frozen=True)
class ViTConfig:
    """Sizes: grid ``size`` (divisible by ``patch``), token ``width`` D, ``key_dim`` d_k,
    decoder ``hidden`` width (0 for a linear decoder). Each is at most ``MAX_SIZE`` = 10^8
    (``attnlib._validation``), and the parameters and one field's attention weights
    (``N^2`` for ``N`` tokens) must fit in the memory available."""

    size: int
    patch: int
    width: int
    key_dim: int
    hidden: int = 0

    def __post_init__(self) -> None:
        for name, minimum in (("size", 1), ("patch", 1), ("width", 1), ("key_dim", 1),
                              ("hidden", 0)):
            check_int(name, getattr(self, name), minimum=minimum, maximum=MAX_SIZE)
        if self.size % self.patch:
            raise ValueError(f"size must be divisible by patch, got size = {self.size} and "
                             f"patch = {self.patch}")
        tokens, pp, d = self.tokens, self.patch ** 2, self.width
        hidden = max(self.hidden, pp)
        for name, n_floats in (
                ("size", tokens * (tokens + d)),
                ("width", d * (pp + tokens + 2 * self.key_dim + d + hidden + 2)),
                ("key_dim", self.key_dim * (2 * d + 2 * tokens)),
                ("hidden", self.hidden * (d + pp + 1))):
            check_memory(name, getattr(self, name), 4 * 8 * n_floats,
                         "the parameters and one field's attention weights")

    @property
    def tokens(self) -> int:
        """Number of tokens ``N = (size / patch)^2``."""
        return (self.size // self.patch) ** 2


@dataclass(frozen=True)
class Standardizer:
    """Affine map ``z = (x - mean) / std`` with scalar statistics of a training set."""

    mean: float
    std: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "mean", check_finite("mean", self.mean))
        object.__setattr__(self, "std", check_positive("std", self.std))

    @classmethod
    @finite_result
    def fit(cls, data: np.ndarray) -> "Standardizer":
        """Scalar mean and standard deviation of ``data`` (all entries)."""
        data = as_matrix("data", data, ndim=tuple(range(1, 33)))
        std = float(data.std())
        if not std > 0:
            raise ValueError("data must not be constant (its standard deviation is 0)")
        return cls(float(data.mean()), std)

    def encode(self, x: np.ndarray) -> np.ndarray:
        """Return ``(x - mean) / std`` (``x`` of any number of axes)."""
        return (as_matrix("x", x, ndim=tuple(range(1, 65))) - self.mean) / self.std

    def decode(self, z: np.ndarray) -> np.ndarray:
        """Return ``mean + std z`` (``z`` of any number of axes)."""
        return self.mean + self.std * as_matrix("z", z, ndim=tuple(range(1, 65)))


def patchify(fields: np.ndarray, patch: int) -> np.ndarray:
    """Cut ``(B, s, s)`` fields into ``(B, N, patch^2)`` patches, tokens in row-major order.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib.vit import patchify, unpatchify
    >>> fields = np.arange(32.0).reshape(2, 4, 4)
    >>> patches = patchify(fields, 2)
    >>> patches.shape, patches[0, 0].tolist()          # the top-left 2 x 2 patch
    ((2, 4, 4), [0.0, 1.0, 4.0, 5.0])
    >>> bool(np.array_equal(unpatchify(patches, 2), fields))
    True
    """
    patch = check_int("patch", patch, minimum=1)
    fields = as_matrix("fields", fields, ndim=3)
    if fields.shape[1] != fields.shape[2] or fields.shape[1] % patch:
        raise ValueError(f"fields must have shape (B, s, s) with s divisible by patch "
                         f"(patch = {patch}), got {fields.shape}")
    b, s, _ = fields.shape
    q = s // patch
    return (fields.reshape(b, q, patch, q, patch).transpose(0, 1, 3, 2, 4)
            .reshape(b, q * q, patch * patch))


def unpatchify(patches: np.ndarray, patch: int) -> np.ndarray:
    """Inverse of :func:`patchify`: ``(B, N, patch^2)`` to ``(B, s, s)``."""
    patch = check_int("patch", patch, minimum=1)
    patches = as_matrix("patches", patches, ndim=3)
    b, n, pp = patches.shape
    q = int(round(np.sqrt(n)))
    if q * q != n or pp != patch * patch:
        raise ValueError(f"patches must have shape (B, q^2, patch^2) (patch = {patch}), got "
                         f"{patches.shape}")
    return (patches.reshape(b, q, q, patch, patch).transpose(0, 1, 3, 2, 4)
            .reshape(b, q * patch, q * patch))


def init_params(config: ViTConfig, *, rng: np.random.Generator) -> Params:
    """Gaussian initialisation with variance 1/fan_in for every matrix, zero biases.

    The positional embedding is ``N(0, 1)`` entrywise, like the standardised patch embedding.
    """
    rng = check_generator("rng", rng)
    pp, d, dk, m = config.patch**2, config.width, config.key_dim, config.hidden
    params: Params = {
        "E": rng.standard_normal((pp, d)) / np.sqrt(pp),
        "b_E": np.zeros(d),
        "pos": rng.standard_normal((config.tokens, d)),
        "W_Q": rng.standard_normal((d, dk)) / np.sqrt(d),
        "W_K": rng.standard_normal((d, dk)) / np.sqrt(d),
        "W_V": rng.standard_normal((d, d)) / np.sqrt(d),
    }
    if m:
        params.update(W_1=rng.standard_normal((d, m)) / np.sqrt(d), b_1=np.zeros(m),
                      W_2=rng.standard_normal((m, pp)) / np.sqrt(m), b_2=np.zeros(pp))
    else:
        params.update(W_O=rng.standard_normal((d, pp)) / np.sqrt(d), b_O=np.zeros(pp))
    return params


def _check_patches(name: str, value: object, params: Mapping[str, np.ndarray]) -> np.ndarray:
    """``value`` as finite ``(B, N, p^2)`` patches matching ``params`` (float32 is kept)."""
    kind = getattr(value, "dtype", None)
    dtype = kind if kind in (np.dtype(np.float32), np.dtype(np.float64)) else np.float64
    return as_matrix(name, value, shape=(None,) + params["pos"].shape[:1] + params["E"].shape[:1],
                     ndim=3, dtype=dtype)


def forward(params: Mapping[str, np.ndarray], patches: np.ndarray) -> tuple[np.ndarray, dict]:
    """Return the output patches ``Y`` (``B x N x p^2``) and the cache used by the backward pass."""
    return _forward(params, _check_patches("patches", patches, params), "patches")


def _forward(params: Mapping[str, np.ndarray], patches: np.ndarray,
             source: str) -> tuple[np.ndarray, dict]:
    """:func:`forward` on checked patches; ``source`` names the argument they came from.

    Patches near the top of float64 make the logits ``q k^T / sqrt(d_k)`` overflow. Whether
    they become ``+-inf`` or NaN depends on the order the CPU's BLAS kernel sums them in, so
    any non-finite logit is reported as a ``ValueError`` naming ``source``.
    """
    x = patches @ params["E"] + params["b_E"] + params["pos"]
    dk = params["W_Q"].shape[1]
    q = x @ params["W_Q"]
    k = x @ params["W_K"]
    with np.errstate(over="ignore", invalid="ignore"):
        logits = q @ k.transpose(0, 2, 1) * float(dk) ** -0.5
    if not np.isfinite(logits).all():
        raise ValueError(
            f"{source} is out of range: its attention logits q k^T / sqrt(d_k) overflow "
            f"float64 (largest |entry| of {source}: {np.abs(patches).max():.3g}, of W_Q: "
            f"{np.abs(params['W_Q']).max():.3g}, of W_K: {np.abs(params['W_K']).max():.3g}); "
            f"rescale the inputs, or lower the learning rate if training diverged")
    attn = row_softmax(logits)
    v = x @ params["W_V"]
    h = x + attn @ v
    cache = {"patches": patches, "x": x, "q": q, "k": k, "attn": attn, "v": v, "h": h}
    if "W_1" in params:
        g = np.tanh(h @ params["W_1"] + params["b_1"])
        cache["g"] = g
        return g @ params["W_2"] + params["b_2"], cache
    return h @ params["W_O"] + params["b_O"], cache


def _flat(array: np.ndarray) -> np.ndarray:
    return array.reshape(-1, array.shape[-1])


@finite_result
def loss_and_gradients(params: Mapping[str, np.ndarray], patches: np.ndarray,
                       targets: np.ndarray) -> tuple[float, Params]:
    """Loss ``L = 1/(2 B s^2) sum ||Y - T||_F^2`` and its exact gradient for every parameter.

    ``patches`` and ``targets`` have shape ``(B, N, p^2)`` (see :func:`patchify`). Backward pass:
    ``dS = A * (dA - rowsum(dA * A))`` for the softmax, ``dQ = dS K / sqrt(d_k)``,
    ``dK = dS^T Q / sqrt(d_k)``, and the residual adds ``dH`` to ``dX``.

    Examples
    --------
    The gradient is exact (a central difference along ``W_Q`` matches it), and the loss sees
    ``W_Q, W_K`` only through ``W_Q W_K^T``, so ``(W_Q G, W_K G^{-T})`` leaves it unchanged:

    >>> import numpy as np
    >>> from attnlib import vit
    >>> rng = np.random.default_rng(0)
    >>> params = vit.init_params(vit.ViTConfig(size=8, patch=2, width=8, key_dim=4), rng=rng)
    >>> patches = vit.patchify(rng.standard_normal((4, 8, 8)), 2)
    >>> targets = vit.patchify(rng.standard_normal((4, 8, 8)), 2)
    >>> loss, grads = vit.loss_and_gradients(params, patches, targets)
    >>> sorted(grads) == sorted(params)
    True
    >>> dQ, h = rng.standard_normal(params["W_Q"].shape), 1e-6
    >>> def moved(t):
    ...     return vit.loss_and_gradients(dict(params, W_Q=params["W_Q"] + t * dQ),
    ...                                   patches, targets)[0]
    >>> bool(np.isclose((moved(h) - moved(-h)) / (2 * h), np.sum(grads["W_Q"] * dQ)))
    True
    >>> G = np.triu(rng.standard_normal((4, 4))) + 2 * np.eye(4)
    >>> rotated = dict(params, W_Q=params["W_Q"] @ G, W_K=params["W_K"] @ np.linalg.inv(G).T)
    >>> bool(np.isclose(vit.loss_and_gradients(rotated, patches, targets)[0], loss))
    True
    """
    out, c = forward(params, patches)
    targets = _check_patches("targets", targets, params)
    if targets.shape != out.shape:
        raise ValueError(f"targets must have the shape of patches {out.shape}, got "
                         f"{targets.shape}")
    diff = out - targets
    count = diff.size
    loss = 0.5 * float(np.sum(diff**2)) / count
    d_out = diff * (1.0 / count)
    grads: Params = {}
    if "W_1" in params:
        g = c["g"]
        grads["W_2"] = _flat(g).T @ _flat(d_out)
        grads["b_2"] = d_out.sum(axis=(0, 1))
        d_z = (d_out @ params["W_2"].T) * (1.0 - g**2)
        grads["W_1"] = _flat(c["h"]).T @ _flat(d_z)
        grads["b_1"] = d_z.sum(axis=(0, 1))
        d_h = d_z @ params["W_1"].T
    else:
        grads["W_O"] = _flat(c["h"]).T @ _flat(d_out)
        grads["b_O"] = d_out.sum(axis=(0, 1))
        d_h = d_out @ params["W_O"].T
    x, attn = c["x"], c["attn"]
    d_attn = d_h @ c["v"].transpose(0, 2, 1)
    d_v = attn.transpose(0, 2, 1) @ d_h
    grads["W_V"] = _flat(x).T @ _flat(d_v)
    scale = float(params["W_Q"].shape[1]) ** -0.5
    d_scores = attn * (d_attn - np.sum(d_attn * attn, axis=-1, keepdims=True)) * scale
    d_q = d_scores @ c["k"]
    d_k = d_scores.transpose(0, 2, 1) @ c["q"]
    grads["W_Q"] = _flat(x).T @ _flat(d_q)
    grads["W_K"] = _flat(x).T @ _flat(d_k)
    d_x = d_h + d_v @ params["W_V"].T + d_q @ params["W_Q"].T + d_k @ params["W_K"].T
    grads["E"] = _flat(c["patches"]).T @ _flat(d_x)
    grads["b_E"] = d_x.sum(axis=(0, 1))
    grads["pos"] = d_x.sum(axis=0)
    return loss, grads


def predict_fields(params: Mapping[str, np.ndarray], fields: np.ndarray, *, patch: int,
                   batch_size: int = 256) -> np.ndarray:
    """Apply the regressor to ``(B, s, s)`` input fields and return ``(B, s, s)`` outputs."""
    batch_size = check_int("batch_size", batch_size, minimum=1)
    patches = _check_patches("fields", patchify(fields, patch), params)
    outputs = [_forward(params, patches[i:i + batch_size], "fields")[0]
               for i in range(0, patches.shape[0], batch_size)]
    return unpatchify(np.concatenate(outputs), patch)


@finite_result
def field_metrics(predicted: np.ndarray, true: np.ndarray) -> dict[str, float]:
    """Root-mean-square error over all pixels and the mean relative L2 error per sample.

    ``rmse = sqrt(mean (u_pred - u)^2)``, ``rel_l2 = mean_b ||u_pred_b - u_b||_2 / ||u_b||_2``
    (the relative error the Darcy benchmark reports).
    """
    predicted = as_matrix("predicted", predicted, ndim=tuple(range(2, 33)))
    true = as_matrix("true", true, ndim=tuple(range(2, 33)))
    if predicted.shape != true.shape:
        raise ValueError(f"predicted has shape {predicted.shape}, true has {true.shape}")
    axes = tuple(range(1, true.ndim))
    if np.any(np.sum(true**2, axis=axes) == 0):
        raise ValueError("true has a sample that is identically 0: its relative error is "
                         "undefined")
    rel = np.sqrt(np.sum((predicted - true) ** 2, axis=axes) / np.sum(true**2, axis=axes))
    return {"rmse": float(np.sqrt(np.mean((predicted - true) ** 2))), "rel_l2": float(rel.mean())}


def _dataset_loss(params: Mapping[str, np.ndarray], patches: np.ndarray, targets: np.ndarray,
                  batch_size: int = 256) -> float:
    total = 0.0
    for i in range(0, patches.shape[0], batch_size):
        out, _ = forward(params, patches[i:i + batch_size])
        total += 0.5 * float(np.sum((out - targets[i:i + batch_size]) ** 2))
    return total / targets.size


@finite_result
def train(params: Mapping[str, np.ndarray], patches: np.ndarray, targets: np.ndarray, *,
          epochs: int, batch_size: int, lr: float, rng: np.random.Generator,
          optimizer: str = "adam", trainable: tuple[str, ...] | None = None,
          regularizer: Regularizer | None = None, noise_std: float = 0.0,
          betas: tuple[float, float] = (0.9, 0.999), adam_eps: float = 1e-8,
          test: tuple[np.ndarray, np.ndarray] | None = None,
          callback: Callable[[Params], Mapping[str, float]] | None = None,
          dtype: type = np.float64, progress: bool = False) -> tuple[Params, dict[str, np.ndarray]]:
    """Minibatch training of ``L + R(W_Q) + R(W_K)``; returns the final parameters and a history.

    Each epoch visits the training set in a fresh random order (``rng.permutation``) in batches
    of ``batch_size`` (the last one may be smaller). Per step, with ``g`` the gradient of the
    batch loss plus the regularizer:

    * ``"sgd"``: ``theta <- theta - lr g + noise_std xi``, ``xi ~ N(0, I)`` drawn from ``rng``
      (``noise_std = 0``: plain SGD; ``> 0``: the Euler-Maruyama step of Langevin dynamics);
    * ``"adam"``: Kingma and Ba's update with bias correction (``betas``, ``adam_eps``).

    ``trainable`` names the parameters that move (default: all); ``regularizer`` (a
    :class:`attnlib.regularizers.Regularizer`, ``R(W) = lambda g(||W||_F^2)``) is added for
    ``W_Q`` and ``W_K`` and requires both to be trainable. The history has one row per epoch,
    row 0 before training: ``epoch``, ``train_loss`` and ``test_loss`` (the data term ``L``
    over the whole set), ``reg`` (``R(W_Q) + R(W_K)``), ``norm_WQ``, ``norm_WK`` (Frobenius),
    and every key the optional ``callback(params)`` returns. ``dtype`` is the working precision
    of the parameters, data and optimiser state (float32 is about three times faster on a CPU;
    float64 by default).

    Settings are checked before training (``lr > 0``, ``0 <= betas < 1``, ``adam_eps >= 0``,
    a float ``dtype``, ``epochs`` at most ``MAX_SIZE`` = 10^8 of ``attnlib._validation``).
    Divergence is checked after every step with the book's one rule
    (:func:`attnlib._validation.check_not_diverged`): a NaN or infinite batch loss, gradient or
    parameter, or attention logits that overflow (a ``ValueError`` of the softmax after the
    first step), raises :class:`attnlib._validation.DivergenceError` naming the epoch and step,
    with the history of the completed epochs attached (``error.history``), so a diverged run
    never returns a history of NaNs.

    Examples
    --------
    Twenty epochs of Adam on sixteen random 8 x 8 fields, learning to shift each field by one
    row (tokens are 2 x 2 patches, so ``N = 16``):

    >>> import numpy as np
    >>> from attnlib import vit
    >>> rng = np.random.default_rng(0)
    >>> config = vit.ViTConfig(size=8, patch=2, width=8, key_dim=4)
    >>> fields = rng.standard_normal((16, 8, 8))
    >>> patches = vit.patchify(fields, 2)
    >>> targets = vit.patchify(np.roll(fields, 1, axis=1), 2)
    >>> patches.shape, config.tokens
    ((16, 16, 4), 16)
    >>> params, history = vit.train(vit.init_params(config, rng=rng), patches, targets,
    ...                             epochs=20, batch_size=8, lr=1e-2, rng=rng)
    >>> history["epoch"].shape                      # row 0 is before training
    (21,)
    >>> bool(history["train_loss"][-1] < history["train_loss"][0] / 2)
    True
    >>> vit.predict_fields(params, fields[:2], patch=2).shape
    (2, 8, 8)
    """
    epochs = check_int("epochs", epochs, minimum=0, maximum=MAX_SIZE)
    check_memory("epochs", epochs, 16 * 40 * (epochs + 1), "the history")
    batch_size = check_int("batch_size", batch_size, minimum=1)
    lr = check_positive("lr", lr)
    noise_std = check_positive("noise_std", noise_std, allow_zero=True)
    rng = check_generator("rng", rng)
    betas = check_betas(betas)
    adam_eps = check_positive("adam_eps", adam_eps, allow_zero=True)
    if optimizer not in ("adam", "sgd"):
        raise ValueError(f"optimizer must be 'adam' or 'sgd', got {optimizer!r}")
    if np.dtype(dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise ValueError(f"dtype must be float32 or float64, got {np.dtype(dtype)}")
    if noise_std and optimizer != "sgd":
        raise ValueError("noise_std > 0 is the Langevin step and needs optimizer='sgd'")
    patches = as_matrix("patches", patches, ndim=3).astype(dtype)
    width = next((np.shape(params[key])[-1] for key in ("b_2", "b_O") if key in params), None)
    targets = as_matrix("targets", targets, shape=patches.shape[:2] + (width,),
                        ndim=3).astype(dtype)
    if test is not None:
        if not isinstance(test, (tuple, list)) or len(test) != 2:
            raise TypeError("test must be a pair (patches, targets)")
        test = (as_matrix("test[0]", test[0], ndim=3).astype(dtype),
                as_matrix("test[1]", test[1], shape=np.shape(test[0])[:2] + (None,),
                          ndim=3).astype(dtype))
    names = tuple(params) if trainable is None else tuple(trainable)
    unknown = [name for name in names if name not in params]
    if unknown:
        raise ValueError(f"trainable has unknown parameters {unknown}; known: {sorted(params)}")
    if regularizer is not None and not regularizer.active:
        regularizer = None
    if regularizer is not None and not set(QK) <= set(names):
        raise ValueError("trainable must hold both W_Q and W_K when regularizer is set (it "
                         "acts on W_Q, W_K)")
    params = {key: np.array(value, dtype=dtype) for key, value in params.items()}
    descent = scale(-lr)
    transform = (chain(scale_by_adam(betas=betas, eps=adam_eps), descent)
                 if optimizer == "adam" else descent)
    state = transform.init(tuple(params[name] for name in names))
    history: dict[str, list[float]] = {}

    def record(epoch: int) -> None:
        row = {"epoch": float(epoch), "train_loss": _dataset_loss(params, patches, targets),
               "reg": (sum(float(regularizer.value(params[w])) for w in QK)
                      if regularizer is not None else 0.0),
               "norm_WQ": float(np.linalg.norm(params["W_Q"])),
               "norm_WK": float(np.linalg.norm(params["W_K"]))}
        if test is not None:
            row["test_loss"] = _dataset_loss(params, *test)
        if callback is not None:
            row.update({key: float(value) for key, value in callback(params).items()})
        for key, value in row.items():
            history.setdefault(key, []).append(value)

    def so_far() -> dict[str, np.ndarray]:
        return {key: np.asarray(value) for key, value in history.items()}

    record(0)
    step = 0
    n = patches.shape[0]
    for epoch in _progress(range(1, epochs + 1), total=epochs, desc="epochs", enabled=progress):
        order = rng.permutation(n)
        for start in range(0, n, batch_size):
            batch = order[start:start + batch_size]
            try:
                loss, grads = loss_and_gradients(params, patches[batch], targets[batch])
            except ValueError as exc:
                if step == 0 or "logits" not in str(exc):
                    raise
                raise DivergenceError(f"vit.train, epoch {epoch}, step {step + 1}: the run "
                                      f"diverged ({exc}); reduce the learning rate",
                                      history=so_far()) from exc
            if regularizer is not None:
                for w in QK:
                    grads[w] = grads[w] + regularizer.gradient(params[w]).astype(dtype)
            step += 1
            check_not_diverged(f"vit.train, epoch {epoch}, step {step}", loss,
                               *(grads[name] for name in names), history=so_far())
            current = tuple(params[name] for name in names)
            updates, state = transform.update(tuple(grads[name] for name in names), state,
                                              current)
            try:
                moved = apply_updates(current, updates)
            except NonFiniteError as exc:   # the step overflows float32/float64
                raise DivergenceError(f"vit.train, epoch {epoch}, step {step}: the run diverged "
                                      f"({exc}); reduce the learning rate",
                                      history=so_far()) from exc
            for name, value in zip(names, moved):
                params[name] = value
                if noise_std:
                    params[name] += noise_std * rng.standard_normal(value.shape, dtype=dtype)
            check_not_diverged(f"vit.train, epoch {epoch}, step {step} (after the update)",
                               *(params[name] for name in names), history=so_far())
        try:
            record(epoch)
        except ValueError as exc:
            if "logits" not in str(exc):
                raise
            raise DivergenceError(f"vit.train, epoch {epoch}: the run diverged ({exc}); reduce "
                                  "the learning rate", history=so_far()) from exc
    return params, so_far()
