"""Regularizers of Part II (chapters 8 to 11): weight decay, log-amplified, super-quadratic.

Every regularizer acts on one block of weights ``W`` (a matrix such as ``W_Q``) through its
squared Frobenius norm ``t = ||W||_F^2``:

    R(W) = lambda g(t),
    grad R(W) = 2 lambda g'(t) W,
    Laplacian R(W) = 2 lambda (D g'(t) + 2 t g''(t)),        D = number of entries of W,
    ||grad R(W)||^2 = 4 lambda^2 t g'(t)^2.

Profiles ``g`` (registry :data:`REGULARIZER_NAMES`):

* ``"none"``: g = 0 (the unregularized loss);
* ``"weight_decay"``: g(t) = t;
* ``"log"``: g(t) = t log(1 + t), the source's log-amplified form [summary];
* ``"power"``: g(t) = (1 + t)^(1 + eps/2) - 1 [choice], a smooth version of the source's
  super-quadratic form lambda ||W||_F^(2 + eps) [summary]. The source's form
  ``t^(1 + eps/2)`` is C^2 but not C^infinity at W = 0 when eps is not an even integer (its
  third derivatives grow like ||W||^(eps - 1)), and condition 1 of the Villani definition asks
  for a smooth function. The shifted form is C^infinity, vanishes at 0 and has the same growth
  ``t^(1 + eps/2)`` at infinity, so every large-norm statement (the crossover radius of
  chapter 8) is unchanged; near 0 it acts like weight decay of strength
  ``(1 + eps/2) lambda``.
* ``"power_source"``: g(t) = t^(1 + eps/2), the source's form exactly (for comparisons).

All formulas are vectorised: a leading ``batch_ndim`` axes of ``W`` index independent blocks
(for example many Langevin chains), the remaining axes are the block.

Input checks: ``t`` (any number of axes, or an mpmath number for arbitrary precision) must be
real, finite and ``>= 0`` and ``W`` real and finite; a value that overflows float64 (a huge
``t`` in a super-quadratic profile) raises ``ValueError`` naming ``t`` or ``W`` instead of
returning inf.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ._constants import documented
from ._validation import ANY_NDIM, as_matrix, check_int, check_positive

__all__ = ["REGULARIZER_NAMES", "Regularizer", "make_regularizer"]

#: Names accepted by :class:`Regularizer` (the registry of chapter 8).
REGULARIZER_NAMES = documented(("none", "weight_decay", "log", "power", "power_source"), """\
Names accepted by ``Regularizer`` (the registry of chapter 8).""")


def _profile(name: str, eps: float, t: Any, order: int, log1p: Callable[[Any], Any]) -> Any:
    """Return g (order 0), g' (order 1) or g'' (order 2) of profile ``name`` at ``t >= 0``.

    ``log1p`` is ``numpy.log1p`` for arrays or ``mpmath.log1p`` for arbitrary precision; the
    other operations are plain arithmetic so the same formula serves both.
    """
    p = 1.0 + eps / 2.0
    if name == "none":
        return 0.0 * t
    if name == "weight_decay":
        return (t, 1.0 + 0.0 * t, 0.0 * t)[order]
    if name == "log":
        if order == 0:
            return t * log1p(t)
        if order == 1:
            return log1p(t) + t / (1 + t)
        return 1 / (1 + t) + 1 / (1 + t) ** 2
    if name == "power":
        if order == 0:
            return (1 + t) ** p - 1
        if order == 1:
            return p * (1 + t) ** (p - 1)
        return p * (p - 1) * (1 + t) ** (p - 2)
    # power_source: g = t^p; t g'' = p (p - 1) t^(p - 1) is finite at t = 0 for p >= 1.
    if order == 0:
        return t ** p
    if order == 1:
        return p * t ** (p - 1)
    return p * (p - 1) * t ** (p - 2)


@dataclass(frozen=True)
class Regularizer:
    """``R(W) = lam * g(||W||_F^2)`` with profile ``name`` (see the module docstring).

    ``lam >= 0`` is the strength and ``eps > 0`` the exponent of the super-quadratic forms
    (ignored by the others). ``Regularizer("none")`` is the zero regularizer.
    """

    name: str = "none"
    lam: float = 0.0
    eps: float = 0.5

    def __post_init__(self) -> None:
        if self.name not in REGULARIZER_NAMES:
            raise ValueError(f"name must be one of {REGULARIZER_NAMES}, got {self.name!r}")
        object.__setattr__(self, "lam", check_positive("lam", self.lam, allow_zero=True))
        object.__setattr__(self, "eps", check_positive("eps", self.eps))

    @property
    def active(self) -> bool:
        """True unless the regularizer is identically zero (name "none" or lam = 0)."""
        return self.name != "none" and self.lam > 0

    # Profiles: scalar functions of t = ||W||_F^2 (numpy arrays or mpmath numbers).
    def g(self, t: Any) -> Any:
        """The profile g(t) (works on numpy arrays and on mpmath numbers)."""
        return self._of_t("g(t)", t, lambda t: _profile(self.name, self.eps, t, 0,
                                                       _log1p_for(t)))

    def dg(self, t: Any) -> Any:
        """The derivative g'(t)."""
        return self._of_t("g'(t)", t, lambda t: _profile(self.name, self.eps, t, 1,
                                                        _log1p_for(t)))

    def d2g(self, t: Any) -> Any:
        """The second derivative g''(t) (for "power_source" at t = 0 use :meth:`t_d2g`)."""
        return self._of_t("g''(t)", t, lambda t: _profile(self.name, self.eps, t, 2,
                                                         _log1p_for(t)))

    def t_d2g(self, t: Any) -> Any:
        """``t g''(t)``, finite at t = 0 for every profile (the Laplacian needs only this)."""
        if self.name == "power_source":
            p = 1.0 + self.eps / 2.0
            return self._of_t("t g''(t)", t, lambda t: p * (p - 1) * t ** (p - 1))
        return self._of_t("t g''(t)", t, lambda t: t * self.d2g(t))

    # Functions of t and the block size D.
    def value_t(self, t: Any) -> Any:
        """``R = lam g(t)``."""
        return self._of_t("lam g(t)", t, lambda t: self.lam * self.g(t))

    def grad_sq_t(self, t: Any) -> Any:
        """``||grad R||^2 = 4 lam^2 t g'(t)^2``."""
        return self._of_t("||grad R||^2", t, lambda t: 4 * self.lam ** 2 * t * self.dg(t) ** 2)

    def laplacian_t(self, t: Any, dim: int) -> Any:
        """``Laplacian R = 2 lam (D g'(t) + 2 t g''(t))`` for a block of ``dim`` entries."""
        dim = check_int("dim", dim, minimum=1)
        return self._of_t("Laplacian R", t, lambda t: 2 * self.lam * (dim * self.dg(t)
                                                                      + 2 * self.t_d2g(t)))

    @staticmethod
    def _of_t(what: str, t: Any, formula: Callable[[Any], Any]) -> Any:
        """``formula(t)`` after checking ``t`` (a squared norm: real, finite, >= 0, any number
        of axes, or an mpmath number); raises ``ValueError`` naming t when the result is not
        finite (float64 overflow)."""
        if _is_mpmath(t):
            import mpmath

            if not (mpmath.isfinite(t) and t >= 0):
                raise ValueError(f"t must be a finite number >= 0 (a squared norm), got {t}")
            return formula(t)
        t = as_matrix("t", t, ndim=ANY_NDIM)
        if np.any(t < 0):
            raise ValueError(f"t must be >= 0 (a squared norm), got {t.min():.3g}")
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            value = formula(t)
        if not np.all(np.isfinite(value)):
            worst = np.asarray(t)[~np.isfinite(np.broadcast_to(value, np.shape(t)))]
            raise ValueError(f"t = {worst.flat[0]:.3g} gives a non-finite {what} (float64 "
                             "overflow, or t = 0 in g'' of 'power_source': use t_d2g)")
        return value

    # Functions of the block W.
    def value(self, W: np.ndarray, *, batch_ndim: int = 0) -> np.ndarray:
        """``lam g(||W||_F^2)`` for each block; shape ``W.shape[:batch_ndim]``."""
        W, t, _ = self._block(W, batch_ndim)
        return self.value_t(t)

    def gradient(self, W: np.ndarray, *, batch_ndim: int = 0) -> np.ndarray:
        """``2 lam g'(t) W``, the same shape as ``W``."""
        W, t, _ = self._block(W, batch_ndim)
        scale = 2 * self.lam * self.dg(t)
        return np.reshape(scale, np.shape(scale) + (1,) * (W.ndim - np.ndim(t))) * W

    def laplacian(self, W: np.ndarray, *, batch_ndim: int = 0) -> np.ndarray:
        """``2 lam (D g'(t) + 2 t g''(t))`` for each block; shape ``W.shape[:batch_ndim]``."""
        W, t, dim = self._block(W, batch_ndim)
        return self.laplacian_t(t, dim)

    def _block(self, W: np.ndarray, batch_ndim: int) -> tuple[np.ndarray, np.ndarray, int]:
        batch_ndim = check_int("batch_ndim", batch_ndim, minimum=0)
        W = as_matrix("W", W, ndim=ANY_NDIM)
        if W.ndim <= batch_ndim:
            raise ValueError(f"W must have more than batch_ndim={batch_ndim} axes, "
                             f"got shape {W.shape}")
        axes = tuple(range(batch_ndim, W.ndim))
        with np.errstate(over="ignore"):
            t = np.sum(W * W, axis=axes)
        if not np.all(np.isfinite(t)):
            raise ValueError("W is too large: its squared norm overflows float64")
        return W, t, int(np.prod(W.shape[batch_ndim:]))


def _is_mpmath(t: Any) -> bool:
    return type(t).__module__.startswith("mpmath")


def _log1p_for(t: Any) -> Callable[[Any], Any]:
    """``mpmath.log1p`` for mpmath numbers, ``numpy.log1p`` otherwise."""
    if _is_mpmath(t):
        import mpmath

        return mpmath.log1p
    return np.log1p


def make_regularizer(name: str, lam: float = 0.0, *, eps: float = 0.5) -> Regularizer:
    """Build a :class:`Regularizer` from its registry name (see :data:`REGULARIZER_NAMES`).

    Examples
    --------
    ``R(W) = lam g(||W||_F^2)``; its gradient ``2 lam g'(t) W`` agrees with a central
    difference, and its Laplacian with ``2 lam (D g'(t) + 2 t g''(t))``:

    >>> import numpy as np
    >>> from attnlib.regularizers import make_regularizer
    >>> reg = make_regularizer("log", lam=0.1)
    >>> W = np.random.default_rng(0).standard_normal((3, 4))
    >>> t = float(np.sum(W ** 2))
    >>> bool(np.isclose(reg.value(W), 0.1 * t * np.log1p(t)))
    True
    >>> dW = np.random.default_rng(1).standard_normal(W.shape)
    >>> h = 1e-6
    >>> central = (reg.value(W + h * dW) - reg.value(W - h * dW)) / (2 * h)
    >>> bool(np.isclose(central, np.sum(reg.gradient(W) * dW), rtol=1e-6))
    True
    >>> D = W.size
    >>> bool(np.isclose(reg.laplacian(W), 2 * 0.1 * (D * reg.dg(t) + 2 * t * reg.d2g(t))))
    True

    Leading axes can index independent blocks (many chains at once):

    >>> reg.value(np.stack([W, 2 * W, 0 * W]), batch_ndim=1).shape
    (3,)
    >>> make_regularizer("power", lam=1.0).active, make_regularizer("none").active
    (True, False)
    """
    return Regularizer(name=name, lam=lam, eps=eps)
