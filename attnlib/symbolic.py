"""Symbolic derivations of chapter 2: the infinite-data limit of the attention layer.

Every function here *derives* an object with sympy and returns it together with the closed
form it is claimed to equal, as an :class:`Identity`; ``Identity.holds()`` decides the claim
exactly (``expand(lhs - rhs) == 0`` after clearing denominators), so a wrong formula fails the
tests and the chapter. The chain of derivations (chapter 2, [derived]):

1. The standard normal moment generating function ``E exp(t z) = exp(t^2 / 2)``, by
   integrating the density once in one dimension (:func:`standard_normal_mgf`).
2. With ``Sigma = L L^T`` (L lower triangular, symbolic) and ``x = L z``, the Gaussian MGF
   ``E exp(u.x) = prod_i E exp((L^T u)_i z_i) = exp(u^T Sigma u / 2)`` (:func:`mgf_identity`).
3. Exponential tilting by the MGF-derivative route: ``E[x exp(u.x)] = grad_u E exp(u.x)``, so
   ``E[x exp(u.x)] / E[exp(u.x)] = grad_u log E exp(u.x) = Sigma u``
   (:func:`tilting_identity` for explicit d, :func:`tilting_identity_general_d` for symbolic d).
4. With ``u = B^T x_j`` the attention output tends to ``h(x) = Sigma B^T x`` and the population
   loss is ``1/2 tr(F Sigma F^T) + p sigma^2 / 2`` with ``F = A Sigma B^T - M``, i.e.
   ``1/2 ||(A Sigma B^T - M) Sigma^{1/2}||_F^2 + p sigma^2 / 2``
   (:func:`population_loss_identity`, an exact Gaussian expectation of a polynomial).
5. The change of variables ``U = A R``, ``V = R B R``, ``X* = M R`` with ``R = Sigma^{1/2}``
   (written ``Sigma = R R`` with R symmetric symbolic) gives ``1/2 ||U V^T - X*||_F^2``
   (:func:`factorization_identities`), invariant under ``(U, V) -> (U G, V G^{-T})``
   (:func:`symmetry_identities`).
6. The chain rule ``grad_A = grad_U R``, ``grad_B = R grad_V R``: the preconditioned step
   ``A - eta grad_A Sigma^{-1}``, ``B - eta Sigma^{-1} grad_B Sigma^{-1}`` is *exactly* gradient
   descent on (U, V), and the plain step is not (:func:`gradient_identities`).

What is checked exactly, and where: steps 2 and 3 for explicit d (the book uses d = 2, 3, 10);
step 3 for a symbolic d only from the exponent ``u^T Sigma u / 2`` on (the MGF for symbolic d
rests on the independence argument of step 2, not on a sympy computation); step 4 for explicit
(p, d), with h derived from the MGF in that dimension (the book uses (3, 2) and (4, 3)).

Input: no function here parses a string. Every expression, matrix and symbol argument must
already be a sympy object (``sympify`` of a string evaluates Python code), and a string or any
other object is refused with a ``TypeError`` naming the argument. Sizes are bounded so that a
huge size fails at once instead of hanging: dimensions of the derivations at most
:data:`MAX_DIMENSION`, symbol matrices at most :data:`MAX_SYMBOLS_PER_AXIS` per axis, moment
orders at most :data:`MAX_MOMENT_ORDER`.

Numeric bridge: :func:`evaluate` substitutes numbers into a derived expression (to compare it
with :mod:`attnlib.population`), :func:`tilting_monte_carlo` estimates the MGF and the tilted
mean by Monte Carlo (with standard errors) in any dimension, without using the derivation, and
:func:`finite_context_errors` measures by Monte Carlo how fast the finite-n attention output
and empirical loss approach their limits.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from math import prod
from typing import Sequence

import numpy as np
import sympy as sp

from . import attention
from ._constants import documented
from ._validation import (as_matrix, check_finite, check_generator, check_int, check_memory,
                          check_positive, check_spd, finite_result)
from .data import RegressionProblem
from .population import population_loss

__all__ = [
    "Identity",
    "matrix_symbols",
    "symmetric_symbols",
    "lower_triangular_symbols",
    "standard_normal_mgf",
    "gaussian_moment",
    "gaussian_mgf",
    "mgf_identity",
    "tilting_ratio",
    "tilting_identity",
    "tilting_identity_general_d",
    "gaussian_expectation",
    "attention_limit",
    "population_loss_identity",
    "factorization_identities",
    "symmetry_identities",
    "regularizer_identities",
    "gradient_identities",
    "evaluate",
    "TiltingMonteCarlo",
    "tilting_monte_carlo",
    "finite_context_errors",
    "ratio_estimator_moments",
    "MAX_DIMENSION",
    "MAX_SYMBOLS_PER_AXIS",
    "MAX_MOMENT_ORDER",
    "MAX_MONTE_CARLO_SAMPLES",
    "MAX_REPETITIONS",
]

_T = sp.Symbol("t", real=True)

#: Largest p or d of a derivation (the book uses d <= 10; the cost grows steeply with d).
MAX_DIMENSION = documented(12, """\
Largest p or d of a derivation (the book uses d <= 10; the cost grows steeply with d).""")
#: Largest number of rows or columns of a matrix of symbols.
MAX_SYMBOLS_PER_AXIS = documented(100, """\
Largest number of rows or columns of a matrix of symbols.""")
#: Largest k of :func:`gaussian_moment` (k = 60 already takes half a minute).
MAX_MOMENT_ORDER = documented(40, """\
Largest k of ``gaussian_moment`` (k = 60 already takes half a minute).""")
#: Largest number of Monte Carlo samples (``n_samples`` of :func:`tilting_monte_carlo`,
#: ``n_queries`` of :func:`finite_context_errors`): the book draws at most 2 x 10^5, and 10^8
#: already takes minutes.
MAX_MONTE_CARLO_SAMPLES = documented(10 ** 8, """\
Largest number of Monte Carlo samples (``n_samples`` of ``tilting_monte_carlo``,
``n_queries`` of ``finite_context_errors``): the book draws at most 2 x 10^5, and 10^8
already takes minutes.""")
#: Largest number of repetitions (``reps``) of :func:`finite_context_errors` (each a fresh
#: sample and a Python-level loop step; the book uses 6).
MAX_REPETITIONS = documented(10 ** 5, """\
Largest number of repetitions (``reps``) of ``finite_context_errors`` (each a fresh
sample and a Python-level loop step; the book uses 6).""")


def _dimension(name: str, value: int) -> int:
    """``value`` as a dimension of a derivation: an integer in ``[1, MAX_DIMENSION]``."""
    return check_int(name, value, minimum=1, maximum=MAX_DIMENSION)


def _sympy_object(name: str, value: object) -> sp.Basic | sp.MatrixBase:
    """``value`` if it is a sympy expression or matrix; strings and other objects are refused
    (never parsed: ``sympify`` of a string evaluates Python code)."""
    if not isinstance(value, (sp.Basic, sp.MatrixBase)):
        raise TypeError(f"{name} must be a sympy expression or matrix (strings are never "
                        f"parsed), got {type(value).__name__}")
    return value


def _sympy_matrix(name: str, value: object, rows: int | None, cols: int | None) -> sp.MatrixBase:
    """``value`` if it is an explicit sympy matrix of the given shape (None: any size)."""
    if not isinstance(value, sp.MatrixBase):
        raise TypeError(f"{name} must be an explicit sympy Matrix (e.g. from matrix_symbols; "
                        f"strings are never parsed), got {type(value).__name__}")
    for axis, (got, want) in enumerate(zip(value.shape, (rows, cols))):
        if want is not None and got != want:
            raise ValueError(f"{name} must have shape ({rows or '*'}, {cols or '*'}), got "
                             f"{value.shape} (axis {axis} is {got}, expected {want})")
    if value.shape[0] == 0 or value.shape[1] == 0:
        raise ValueError(f"{name} must not be empty, got shape {value.shape}")
    return value


def _symbol_name(name: object) -> str:
    """``name`` if it is a plain identifier (the stem of generated symbol names)."""
    if not isinstance(name, str) or not name.isidentifier():
        raise TypeError(f"name must be a plain identifier string such as 'a', got {name!r}")
    return name


def _is_zero(expr: sp.Expr) -> bool:
    """Exact zero test of a polynomial or rational function of its symbols.

    The expression is converted into sympy's sparse polynomial ring over QQ in its free
    symbols (an exact, fast ``expand``), or into the field of rational functions when it has
    symbolic denominators; expressions outside both (exponentials, square roots) fall back to
    ``expand(expr) == 0``.
    """
    expr = sp.sympify(expr, strict=True)
    symbols = sorted(expr.free_symbols, key=str)
    if not symbols:
        return sp.simplify(expr) == 0
    try:
        ring, *_ = sp.ring(symbols, sp.QQ)
        return ring(expr) == 0
    except (sp.polys.polyerrors.CoercionFailed, sp.polys.polyerrors.GeneratorsError,
            ValueError, TypeError):
        pass
    try:
        field, *_ = sp.field(symbols, sp.QQ)
        return field(expr) == 0
    except (sp.polys.polyerrors.CoercionFailed, sp.polys.polyerrors.GeneratorsError,
            ValueError, TypeError):
        return sp.expand(expr) == 0


def _gradient(expr: sp.Expr, variables: sp.Matrix) -> sp.Matrix:
    """Entrywise derivative ``d expr / d variables[i, j]`` of a polynomial, in sympy's sparse
    polynomial ring (exact, and much faster than ``sp.diff`` on an unexpanded tree)."""
    symbols = sorted(sp.sympify(expr, strict=True).free_symbols | set(variables.free_symbols),
                     key=str)
    ring, *generators = sp.ring(symbols, sp.QQ)
    lookup = dict(zip(symbols, generators))
    poly = ring(expr)
    return sp.Matrix(variables.shape[0], variables.shape[1],
                     lambda i, j: poly.diff(lookup[variables[i, j]]).as_expr())


@dataclass(frozen=True)
class Identity:
    """A claimed exact identity ``lhs == rhs`` between sympy scalars or matrices.

    ``lhs`` is the derived object, ``rhs`` the stated closed form. Matrix expressions of
    symbolic size (``MatrixSymbol`` algebra) are compared after ``doit()``/``simplify``.
    """

    name: str
    lhs: object
    rhs: object

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, got {type(self.name).__name__}")
        _sympy_object("lhs", self.lhs)
        _sympy_object("rhs", self.rhs)

    def difference(self) -> object:
        """``lhs - rhs`` (entrywise for matrices)."""
        return self.lhs - self.rhs

    def holds(self) -> bool:
        """True iff ``lhs - rhs`` is exactly zero (every entry, for explicit matrices)."""
        diff = self.difference()
        if isinstance(diff, sp.MatrixExpr) and not isinstance(diff, sp.MatrixBase):
            simplified = sp.simplify(diff.doit())
            return bool(simplified == sp.ZeroMatrix(*diff.shape) or simplified == 0
                        or getattr(simplified, "is_ZeroMatrix", False))
        if isinstance(diff, sp.MatrixBase):
            return all(_is_zero(entry) for entry in diff)
        return _is_zero(diff)

    def assert_holds(self) -> "Identity":
        """Raise ``AssertionError`` naming the identity if it does not hold; return self."""
        if not self.holds():
            raise AssertionError(f"identity '{self.name}' does not hold")
        return self


# ----------------------------------------------------------------------------- symbols
def matrix_symbols(name: str, rows: int, cols: int) -> sp.Matrix:
    """A ``rows x cols`` matrix of independent real symbols ``name_ij`` (1-based)."""
    name = _symbol_name(name)
    rows = check_int("rows", rows, minimum=1, maximum=MAX_SYMBOLS_PER_AXIS)
    cols = check_int("cols", cols, minimum=1, maximum=MAX_SYMBOLS_PER_AXIS)
    return sp.Matrix(rows, cols, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True))


def symmetric_symbols(name: str, d: int) -> sp.Matrix:
    """A ``d x d`` symmetric matrix of real symbols ``name_ij`` with ``i <= j``."""
    name = _symbol_name(name)
    d = check_int("d", d, minimum=1, maximum=MAX_SYMBOLS_PER_AXIS)
    return sp.Matrix(d, d, lambda i, j: sp.Symbol(f"{name}_{min(i, j) + 1}{max(i, j) + 1}",
                                                  real=True))


def lower_triangular_symbols(name: str, d: int) -> sp.Matrix:
    """A ``d x d`` lower-triangular matrix of real symbols with positive diagonal.

    Every symmetric positive definite Sigma is ``L L^T`` for exactly one such L (Cholesky),
    so identities proved for symbolic ``L L^T`` hold for every positive definite Sigma.
    """
    name = _symbol_name(name)
    d = check_int("d", d, minimum=1, maximum=MAX_SYMBOLS_PER_AXIS)
    return sp.Matrix(d, d, lambda i, j: sp.Symbol(f"{name}_{i + 1}{j + 1}", real=True,
                                                  positive=(i == j)) if i >= j else 0)


# -------------------------------------------------------------------- Gaussian MGF route
def standard_normal_mgf() -> Identity:
    """Derive ``E exp(t z) = integral exp(t z) exp(-z^2/2) / sqrt(2 pi) dz`` for z ~ N(0, 1).

    The one integral of the chapter (one-dimensional); the result is compared with
    ``exp(t^2 / 2)`` after ``simplify`` (sympy returns erfc terms that cancel).
    """
    z = sp.Symbol("z", real=True)
    integral = sp.integrate(sp.exp(_T * z - z ** 2 / 2) / sp.sqrt(2 * sp.pi), (z, -sp.oo, sp.oo))
    return Identity("standard normal MGF", sp.simplify(integral), sp.exp(_T ** 2 / 2))


@lru_cache(maxsize=1)
def _scalar_mgf() -> sp.Expr:
    """The derived (simplified) standard normal MGF as an expression in ``t``."""
    return standard_normal_mgf().lhs


def gaussian_moment(k: int) -> sp.Integer:
    """``E z^k`` for z ~ N(0, 1) as the k-th derivative of the derived MGF at t = 0.

    Examples
    --------
    The moments ``(k - 1)!!`` for even k and 0 for odd k, as exact sympy integers:

    >>> from attnlib.symbolic import gaussian_moment
    >>> [gaussian_moment(k) for k in range(9)]
    [1, 0, 1, 0, 3, 0, 15, 0, 105]
    """
    k = check_int("k", k, minimum=0, maximum=MAX_MOMENT_ORDER)
    return sp.Integer(sp.diff(_scalar_mgf(), _T, k).subs(_T, 0))


def gaussian_mgf(L: sp.Matrix, u: sp.Matrix) -> sp.Expr:
    """``E exp(u.x)`` for ``x = L z``, z ~ N(0, I): ``prod_i mgf((L^T u)_i)`` (independence).

    ``L`` is a d x d sympy matrix, ``u`` a d x 1 sympy matrix (strings are refused).
    """
    d = _sympy_matrix("L", L, None, None).shape[0]
    L = _sympy_matrix("L", L, d, d)
    u = _sympy_matrix("u", u, d, 1)
    w = L.T * u
    mgf = _scalar_mgf()
    return sp.Mul(*[mgf.subs(_T, w[i]) for i in range(w.shape[0])])


def mgf_identity(d: int) -> Identity:
    """Derived ``E exp(u.x)`` against ``exp(u^T Sigma u / 2)``, Sigma = L L^T symbolic, size d.

    Both sides are exponentials, so the identity is checked on their logarithms (exponents).
    """
    d = _dimension("d", d)
    L = lower_triangular_symbols("l", d)
    u = matrix_symbols("u", d, 1)
    exponent = sp.expand_log(sp.log(gaussian_mgf(L, u)), force=True)
    return Identity(f"Gaussian MGF exponent (d={d})", exponent,
                    ((u.T * L * L.T * u)[0, 0] / 2))


def tilting_ratio(L: sp.Matrix, u: sp.Matrix) -> sp.Matrix:
    """``E[x exp(u.x)] / E[exp(u.x)]`` for ``x = L z``, by differentiating the MGF in u.

    ``E[x_i exp(u.x)] = d/du_i E[exp(u.x)]`` (differentiation under the expectation, valid
    because the MGF is finite everywhere), so the ratio is ``grad_u log MGF(u)``. ``L`` is
    d x d and ``u`` d x 1, both sympy matrices.
    """
    mgf = gaussian_mgf(L, u)
    return sp.Matrix([sp.expand(sp.powsimp(sp.diff(mgf, u[i]) / mgf)) for i in range(u.shape[0])])


def tilting_identity(d: int) -> Identity:
    """The exponential-tilting identity ``E[x e^{u.x}] / E[e^{u.x}] = Sigma u`` in dimension d.

    Examples
    --------
    >>> from attnlib.symbolic import tilting_identity
    >>> identity = tilting_identity(2)
    >>> identity.name, identity.holds()
    ('exponential tilting (d=2)', True)
    >>> identity.rhs.shape                  # Sigma u with Sigma = L L^T, L lower triangular
    (2, 1)
    """
    d = _dimension("d", d)
    L = lower_triangular_symbols("l", d)
    u = matrix_symbols("u", d, 1)
    return Identity(f"exponential tilting (d={d})", tilting_ratio(L, u), L * L.T * u)


def tilting_identity_general_d() -> Identity:
    """The tilting identity for a symbolic dimension d (``MatrixSymbol`` algebra).

    With ``MGF(u) = exp(f(u))``, ``f(u) = u^T L L^T u / 2`` (item 2 of the module docstring),
    the chain rule gives ``grad MGF / MGF = grad f``; sympy differentiates f in the d-vector u.
    """
    d = sp.Symbol("d", integer=True, positive=True)
    u = sp.MatrixSymbol("u", d, 1)
    L = sp.MatrixSymbol("L", d, d)
    exponent = (u.T * L * L.T * u) / 2
    return Identity("exponential tilting (general d)", exponent.diff(u), L * L.T * u)


# ------------------------------------------------------- finite context: the delta method
def ratio_estimator_moments(d: int = 2) -> list[Identity]:
    """The 1/m terms of the finite-context attention average, by the delta method [derived].

    For m i.i.d. keys ``w_i ~ N(0, I_d)`` and a tilt u, ``hbar = S1 / S0`` with
    ``S0 = mean e^{u.w_i}``, ``S1 = mean e^{u.w_i} w_i``. The delta method (second-order Taylor
    expansion of the ratio around the means ``mu0 = E S0``, ``mu1 = E S1``) gives

    ::

        m (E hbar - mu1/mu0) = -c01 / mu0^2 + mu1 c00 / mu0^3 + O(1/m),
        m Cov hbar = E[e^{2u.w} (w - r)(w - r)^T] / mu0^2 + O(1/m),    r = mu1 / mu0,

    with ``c00 = Var e^{u.w}`` and ``c01 = Cov(e^{u.w} w, e^{u.w})`` per key. Every Gaussian
    moment here is a derivative of the MGF ``E e^{t.w}`` at t = u or t = 2u (the derived
    :func:`gaussian_mgf`). The identities check, in dimension d with symbolic u:
    ``r = u``; bias ``-u e^{|u|^2}``; covariance ``e^{|u|^2} (I + u u^T)``; and, in one
    dimension, the query average ``E[e^{k z^2} z^2] = (1 - 2k)^{-3/2}`` (0 < k < 1/2: the last
    branch of sympy's piecewise result) that turns
    the Gaussian query weight into ``det(I - 2 V V^T)^{-1/2}`` and ``C = (I - 2 V V^T)^{-1}``
    (:func:`attnlib.prompts.context_correction`).
    """
    d = _dimension("d", d)
    u = matrix_symbols("u", d, 1)
    t = matrix_symbols("t", d, 1)
    mgf = gaussian_mgf(sp.eye(d), t)
    at = {1: list(zip(t, u)), 2: list(zip(t, 2 * u))}

    def moment(order: int, *index: int) -> sp.Expr:       # E[e^{order u.w} w_index...]
        expr = mgf
        for i in index:
            expr = sp.diff(expr, t[i])
        return sp.powsimp(expr.subs(at[order]))

    mu0 = moment(1)
    mu1 = sp.Matrix([moment(1, i) for i in range(d)])
    c00 = moment(2) - mu0 ** 2
    c01 = sp.Matrix([moment(2, i) for i in range(d)]) - mu1 * mu0
    ratio = (mu1 / mu0).applyfunc(lambda e: sp.simplify(sp.powsimp(e)))
    bias = (-c01 / mu0 ** 2 + mu1 * c00 / mu0 ** 3).applyfunc(lambda e: sp.simplify(e))
    second = sp.Matrix(d, d, lambda i, j: moment(2, i, j))
    first = sp.Matrix([moment(2, i) for i in range(d)])
    cov = ((second - first * u.T - u * first.T + moment(2) * u * u.T) / mu0 ** 2).applyfunc(
        lambda e: sp.simplify(e))
    norm2 = (u.T * u)[0, 0]
    k = sp.Symbol("k", positive=True)
    z = sp.Symbol("z", real=True)
    weight = sp.integrate(sp.exp(k * z ** 2 - z ** 2 / 2) * z ** 2 / sp.sqrt(2 * sp.pi),
                          (z, -sp.oo, sp.oo), conds="none")
    half = sp.Rational(1, 2)
    return [
        Identity(f"ratio of means: mu1 / mu0 = u (d={d})", ratio, u),
        Identity(f"delta-method bias: m (E hbar - u) = -u e^(|u|^2) (d={d})",
                 bias.applyfunc(lambda e: sp.simplify(e * sp.exp(-norm2))), -u),
        Identity(f"delta-method covariance: m Cov hbar = e^(|u|^2) (I + u u^T) (d={d})",
                 cov.applyfunc(lambda e: sp.simplify(e * sp.exp(-norm2))), sp.eye(d) + u * u.T),
        Identity("Gaussian query weight: E[e^(k z^2) z^2] (1 - 2k)^(3/2) = 1 for 0 < k < 1/2",
                 sp.simplify(weight.args[-1][0]
                             * (1 - 2 * k) ** (3 * half)), sp.Integer(1)),
    ]


# ---------------------------------------------------------------- expectations, the loss
def gaussian_expectation(expr: sp.Expr, variables: Sequence[sp.Symbol]) -> sp.Expr:
    """Exact ``E[expr]`` for a polynomial in independent N(0, 1) ``variables``.

    Each monomial ``prod_i v_i^{k_i}`` is replaced by ``prod_i E z^{k_i}`` (moments from
    :func:`gaussian_moment`); other symbols are treated as constants. ``expr`` must be a sympy
    expression and ``variables`` a non-empty sequence of sympy Symbols (strings are refused).
    """
    expr = _sympy_object("expr", expr)
    if isinstance(variables, (str, bytes)) or not isinstance(variables, Sequence) \
            or len(variables) == 0:
        raise TypeError(f"variables must be a non-empty sequence of sympy Symbols, got "
                        f"{variables!r:.80}")
    for index, variable in enumerate(variables):
        if not isinstance(variable, sp.Symbol):
            raise TypeError(f"variables[{index}] must be a sympy Symbol (strings are never "
                            f"parsed), got {type(variable).__name__}")
    variables = list(variables)
    others = sorted(expr.free_symbols - set(variables), key=str)
    ring, *_ = sp.ring(variables + others, sp.QQ)
    poly = ring(expr)
    k = len(variables)
    degree = max((max(monomial[:k]) for monomial in poly.monoms()), default=0)
    moments = [int(gaussian_moment(j)) for j in range(degree + 1)]
    expectation = ring.zero
    for monomial, coeff in poly.terms():
        weight = prod(moments[j] for j in monomial[:k])
        if weight:
            expectation += ring({(0,) * k + monomial[k:]: coeff * weight})
    return expectation.as_expr()


def attention_limit(L: sp.Matrix, B: sp.Matrix, x: sp.Matrix) -> sp.Matrix:
    """Infinite-context attention output ``h(x)`` from the tilting ratio with ``u = B^T x``.

    ``sum_i softmax_i(x^T B x_i) x_i -> E[x' e^{(B^T x).x'}] / E[e^{(B^T x).x'}]`` (law of
    large numbers in numerator and denominator), which :func:`tilting_ratio` evaluates.
    ``L`` and ``B`` are d x d sympy matrices, ``x`` a d x 1 sympy matrix.
    """
    L = _sympy_matrix("L", L, None, None)
    d = L.shape[0]
    B = _sympy_matrix("B", B, d, d)
    x = _sympy_matrix("x", x, d, 1)
    u = matrix_symbols("w", d, 1)
    ratio = tilting_ratio(L, u)
    return ratio.subs({u[i]: (B.T * x)[i] for i in range(d)}, simultaneous=True)


def population_loss_identity(p: int, d: int) -> Identity:
    """Derived ``E 1/2 ||M x + sigma e - A h(x)||^2`` against the closed form.

    x = L z and e ~ N(0, I_p) (so eps = sigma e), h(x) from :func:`attention_limit`; the
    expectation is exact (:func:`gaussian_expectation`). The closed form is
    ``1/2 tr(F Sigma F^T) + p sigma^2 / 2``, ``F = A Sigma B^T - M``, which equals
    ``1/2 ||F Sigma^{1/2}||_F^2 + p sigma^2/2`` since ``Sigma^{1/2} Sigma^{1/2} = Sigma``.
    """
    p, d = _dimension("p", p), _dimension("d", d)
    A, B, M = matrix_symbols("a", p, d), matrix_symbols("b", d, d), matrix_symbols("m", p, d)
    L = lower_triangular_symbols("l", d)
    sigma = sp.Symbol("sigma", positive=True)
    z, e = matrix_symbols("z", d, 1), matrix_symbols("e", p, 1)
    x = L * z
    residual = M * x + sigma * e - A * attention_limit(L, B, x)
    derived = gaussian_expectation((residual.T * residual)[0, 0] / 2, list(z) + list(e))
    Sigma = L * L.T
    F = A * Sigma * B.T - M
    return Identity(f"population loss (p={p}, d={d})", derived,
                    (F * Sigma * F.T).trace() / 2 + p * sigma ** 2 / 2)


# ------------------------------------------------------- factorization and its symmetry
def _square_root_setup(p: int, d: int) -> dict[str, sp.Matrix]:
    """Symbols for the factorization: A, B, M and a symmetric R with ``Sigma = R R``."""
    p, d = _dimension("p", p), _dimension("d", d)
    A, B, M = matrix_symbols("a", p, d), matrix_symbols("b", d, d), matrix_symbols("m", p, d)
    R = symmetric_symbols("r", d)
    return {"A": A, "B": B, "M": M, "R": R, "Sigma": R * R,
            "U": A * R, "V": R * B * R, "Xstar": M * R}


def factorization_identities(p: int, d: int) -> list[Identity]:
    """``U V^T - X* = (A Sigma B^T - M) Sigma^{1/2}`` and the two loss forms agree.

    ``R`` stands for ``Sigma^{1/2}``: a symmetric symbolic matrix with ``Sigma = R R``.
    """
    s = _square_root_setup(p, d)
    F = s["A"] * s["Sigma"] * s["B"].T - s["M"]
    E = s["U"] * s["V"].T - s["Xstar"]
    return [Identity("U V^T - X* = F Sigma^{1/2}", E, F * s["R"]),
            Identity("1/2||U V^T - X*||^2 = 1/2 tr(F Sigma F^T)",
                     (E * E.T).trace() / 2, (F * s["Sigma"] * F.T).trace() / 2)]


def symmetry_identities(p: int, d: int) -> list[Identity]:
    """The GL(d) symmetry in both coordinate systems, free of symbolic inverses.

    With ``G^{-1} = adj(G) / det(G)`` (adjugate), the identities are stated multiplied by
    the determinants so that both sides are polynomials:

    * ``(U G)(V G^{-T})^T = U V^T`` for every invertible G, i.e.
      ``(U G)(V adj(G)^T)^T = det(G) U V^T``;
    * ``(A K) Sigma (B Sigma K^{-T} Sigma^{-1})^T = A Sigma B^T`` for every invertible K
      and symmetric positive definite Sigma (general symmetric symbols), i.e.
      ``(A K) Sigma (B Sigma adj(K)^T adj(Sigma))^T = det(K) det(Sigma) A Sigma B^T``.
    """
    p, d = _dimension("p", p), _dimension("d", d)
    U, V = matrix_symbols("u", p, d), matrix_symbols("v", d, d)
    A, B = matrix_symbols("a", p, d), matrix_symbols("b", d, d)
    G, K = matrix_symbols("g", d, d), matrix_symbols("k", d, d)
    Sigma = symmetric_symbols("s", d)
    B_new = B * Sigma * K.adjugate().T * Sigma.adjugate()
    return [Identity("U V^T invariant under (U G, V G^-T)  [times det G]",
                     (U * G) * (V * G.adjugate().T).T, G.det() * U * V.T),
            Identity("A Sigma B^T invariant under (A K, B Sigma K^-T Sigma^-1)  "
                     "[times det K det Sigma]",
                     (A * K) * Sigma * B_new.T, K.det() * Sigma.det() * A * Sigma * B.T)]


def _cayley_rotation(t: sp.Symbol, *, reflect: bool) -> sp.Matrix:
    """A rational parametrization of SO(2) (``reflect=False``) or of O(2) minus SO(2)."""
    c, s = (1 - t ** 2) / (1 + t ** 2), 2 * t / (1 + t ** 2)
    if reflect:
        return sp.Matrix([[c, s], [s, -c]])
    return sp.Matrix([[c, -s], [s, c]])


def _balancing(U: sp.Matrix, V: sp.Matrix, lam: sp.Symbol) -> sp.Expr:
    """``lambda/8 ||U^T U - V^T V||_F^2``."""
    W = U.T * U - V.T * V
    return lam / 8 * (W * W.T).trace()


def regularizer_identities(p: int) -> list[Identity]:
    """The balancing regularizer ``R = lambda/8 ||U^T U - V^T V||_F^2`` (d = 2).

    * In (A, B) coordinates it needs no square root: ``U^T U - V^T V = R D R`` with
      ``D = A^T A - B^T Sigma B`` (``R = Sigma^{1/2}``), so the regularizer is
      ``lambda/8 tr((Sigma D)^2)``;
    * it is invariant under ``(U O, V O)`` for O in both components of O(2) (rotations and
      reflections, rationally parametrized), with U (p x 2), V (2 x 2) symbolic;
    * it is *not* invariant under the GL(2) element ``G = diag(c, 1)``: the returned identity
      for that case is expected to fail (``holds() is False``), which is the point.
    """
    s = _square_root_setup(p, 2)
    lam, t, c = sp.symbols("lambda t c", positive=True)
    Sigma = s["Sigma"]
    D = s["A"].T * s["A"] - s["B"].T * Sigma * s["B"]
    identities = [
        Identity("U^T U - V^T V = Sigma^{1/2} D Sigma^{1/2}",
                 s["U"].T * s["U"] - s["V"].T * s["V"], s["R"] * D * s["R"]),
        Identity("regularizer in (A, B): lambda/8 tr((Sigma D)^2)",
                 _balancing(s["U"], s["V"], lam), lam / 8 * ((Sigma * D) ** 2).trace()),
    ]
    U, V = matrix_symbols("u", p, 2), matrix_symbols("v", 2, 2)
    for reflect in (False, True):
        O = _cayley_rotation(t, reflect=reflect)
        label = "reflection" if reflect else "rotation"
        identities.append(Identity(f"regularizer invariant under a {label}",
                                   _balancing(U * O, V * O, lam), _balancing(U, V, lam)))
    G = sp.diag(c, 1)
    identities.append(Identity("regularizer invariant under G = diag(c, 1) [fails]",
                               _balancing(U * G, V * G.inv().T, lam), _balancing(U, V, lam)))
    return identities


def gradient_identities(p: int, d: int) -> list[Identity]:
    """Gradients of ``Q = L + R`` (population loss plus balancing regularizer), derived.

    Every gradient below is obtained by differentiating entrywise (``L`` without its
    constant):

    * in (U, V) (general symbols, X general): ``grad_U q = E V + lambda/2 U W`` and
      ``grad_V q = E^T U - lambda/2 V W`` with ``E = U V^T - X``, ``W = U^T U - V^T V``;
    * in (A, B): ``grad_A Q = F Sigma B Sigma + lambda/2 A Sigma D Sigma`` and
      ``grad_B Q = Sigma F^T A Sigma - lambda/2 Sigma B Sigma D Sigma``
      (``F = A Sigma B^T - M``, ``D = A^T A - B^T Sigma B``);
    * chain rule ``grad_A Q = grad_U q R`` and ``grad_B Q = R grad_V q R`` at
      ``U = A R``, ``V = R B R``, ``X = M R`` (``R = Sigma^{1/2}``);
    * hence one preconditioned step is one gradient step in (U, V):
      ``(A - eta grad_A Q Sigma^{-1}) R = U - eta grad_U q`` and
      ``R (B - eta Sigma^{-1} grad_B Q Sigma^{-1}) R = V - eta grad_V q``, checked multiplied
      by ``det Sigma`` (resp. ``det Sigma^2``) with ``Sigma^{-1} = adj(Sigma) / det Sigma`` so
      that both sides are polynomials;
    * the plain step is not: ``(A - eta grad_A Q) R = U - eta grad_U q`` is returned as an
      identity that fails unless Sigma = I (``holds() is False``).
    """
    p, d = _dimension("p", p), _dimension("d", d)
    s = _square_root_setup(p, d)
    A, B, M, R, Sigma = s["A"], s["B"], s["M"], s["R"], s["Sigma"]
    lam, eta = sp.symbols("lambda eta", positive=True)
    # (U, V) coordinates with independent symbols
    Us, Vs, Xs = matrix_symbols("u", p, d), matrix_symbols("v", d, d), matrix_symbols("x", p, d)
    Es, Ws = Us * Vs.T - Xs, Us.T * Us - Vs.T * Vs
    q = (Es * Es.T).trace() / 2 + _balancing(Us, Vs, lam)
    grad_U, grad_V = _gradient(q, Us), _gradient(q, Vs)
    at_AB = {**{Us[i, j]: s["U"][i, j] for i in range(p) for j in range(d)},
             **{Vs[i, j]: s["V"][i, j] for i in range(d) for j in range(d)},
             **{Xs[i, j]: s["Xstar"][i, j] for i in range(p) for j in range(d)}}
    grad_U_AB = grad_U.xreplace(at_AB)
    grad_V_AB = grad_V.xreplace(at_AB)
    # (A, B) coordinates
    F = A * Sigma * B.T - M
    D = A.T * A - B.T * Sigma * B
    Q = (F * Sigma * F.T).trace() / 2 + lam / 8 * ((Sigma * D) ** 2).trace()
    grad_A, grad_B = _gradient(Q, A), _gradient(Q, B)
    adj, det = Sigma.adjugate(), Sigma.det()  # Sigma^{-1} = adj / det
    return [
        Identity("grad_U q closed form", grad_U, Es * Vs + lam / 2 * Us * Ws),
        Identity("grad_V q closed form", grad_V, Es.T * Us - lam / 2 * Vs * Ws),
        Identity("grad_A Q closed form", grad_A,
                 F * Sigma * B * Sigma + lam / 2 * A * Sigma * D * Sigma),
        Identity("grad_B Q closed form", grad_B,
                 Sigma * F.T * A * Sigma - lam / 2 * Sigma * B * Sigma * D * Sigma),
        Identity("grad_A Q = grad_U q Sigma^{1/2}", grad_A, grad_U_AB * R),
        Identity("grad_B Q = Sigma^{1/2} grad_V q Sigma^{1/2}", grad_B, R * grad_V_AB * R),
        Identity("preconditioned A step = U step  [times det Sigma]",
                 (det * A - eta * grad_A * adj) * R, det * (s["U"] - eta * grad_U_AB)),
        Identity("preconditioned B step = V step  [times det Sigma^2]",
                 R * (det ** 2 * B - eta * adj * grad_B * adj) * R,
                 det ** 2 * (s["V"] - eta * grad_V_AB)),
        Identity("plain A step = U step [fails unless Sigma = I]",
                 (A - eta * grad_A) * R, s["U"] - eta * grad_U_AB),
    ]


# ---------------------------------------------------------------------- numeric bridge
def evaluate(expr: object, values: Sequence[tuple[object, object]]) -> np.ndarray | float:
    """Evaluate a sympy scalar or matrix at numbers: ``values`` is a sequence of pairs
    (symbol, float) or (symbolic matrix from :func:`matrix_symbols` etc., numpy array of the
    same shape); entries of a symbolic matrix that are not symbols (zeros) are skipped.

    ``expr`` must already be a sympy object: strings are refused (``sympify`` of a string
    evaluates Python code), so nothing a caller passes is ever executed. Returns a float for a
    scalar and a float64 array for a matrix; raises ``ValueError`` when symbols are left
    unsubstituted or the value is not real.
    """
    if not isinstance(expr, (sp.Basic, sp.MatrixBase)):
        raise TypeError(f"expr must be a sympy expression or matrix (strings are not parsed), "
                        f"got {type(expr).__name__}")
    substitutions: dict[sp.Symbol, float] = {}
    for index, pair in enumerate(values):
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise TypeError(f"values[{index}] must be a pair (symbol, number), got {pair!r}")
        key, value = pair
        if isinstance(key, sp.MatrixBase):
            array = as_matrix(f"values[{index}][1]", value, shape=key.shape)
            for i in range(key.shape[0]):
                for j in range(key.shape[1]):
                    if isinstance(key[i, j], sp.Symbol):
                        substitutions[key[i, j]] = float(array[i, j])
        elif isinstance(key, sp.Symbol):
            substitutions[key] = check_finite(f"values[{index}][1]", value)
        else:
            raise TypeError(f"values[{index}][0] must be a sympy Symbol or symbolic matrix, "
                            f"got {type(key).__name__}")
    result = expr.xreplace(substitutions).evalf()
    try:
        if isinstance(result, sp.MatrixBase):
            return np.array(result, dtype=float)
        return float(result)
    except TypeError as exc:
        raise ValueError(f"expr must evaluate to real numbers with these values (free "
                         f"symbols left: {sorted(map(str, result.free_symbols))})") from exc


@dataclass(frozen=True)
class TiltingMonteCarlo:
    """Monte Carlo estimates of ``E exp(u.x)`` and ``E[x exp(u.x)] / E[exp(u.x)]``, x ~ N(0, Sigma).

    Result of :func:`tilting_monte_carlo`; ``*_se`` are standard errors (one per entry).
    """

    u: np.ndarray
    n_samples: int
    mgf: float
    mgf_se: float
    tilted_mean: np.ndarray
    tilted_mean_se: np.ndarray

    @finite_result
    def z_scores(self, *, mgf: float, tilted_mean: np.ndarray) -> np.ndarray:
        """``(estimate - claim) / standard error``: the MGF first, then the d mean entries."""
        claim = as_matrix("tilted_mean", tilted_mean, shape=(self.u.size,), ndim=1)
        mgf = check_positive("mgf", mgf)
        return np.concatenate([[(self.mgf - mgf) / self.mgf_se],
                               (self.tilted_mean - claim) / self.tilted_mean_se])


@finite_result
def tilting_monte_carlo(Sigma: np.ndarray, u: np.ndarray, *, n_samples: int,
                        rng: np.random.Generator, block_size: int = 100_000
                        ) -> TiltingMonteCarlo:
    """Estimate the Gaussian MGF and the exponentially tilted mean by plain Monte Carlo.

    With ``x_k = C z_k`` (``Sigma = C C^T`` Cholesky, z_k ~ N(0, I), k = 1..N) and weights
    ``w_k = exp(u.x_k)``:

    * ``mgf = mean_k w_k``, standard error ``std_k(w_k) / sqrt(N)``;
    * ``tilted_mean = sum_k w_k x_k / sum_k w_k`` (self-normalized), standard error from the
      delta method, ``sqrt(sum_k w_k^2 (x_k - tilted_mean)^2) / sum_k w_k`` per entry.

    Nothing of the symbolic derivation is used, so comparing with ``exp(u^T Sigma u / 2)`` and
    ``Sigma u`` is an independent check in any dimension. The relative variance of the weights
    is ``exp(u^T Sigma u) - 1`` (chapter 2, exercise 2): keep ``u^T Sigma u`` of order one.

    ``n_samples`` is at most :data:`MAX_MONTE_CARLO_SAMPLES`; the samples are drawn
    ``block_size`` at a time, and a block must fit in the memory available.

    Examples
    --------
    Both estimates agree with the closed forms within three standard errors:

    >>> import numpy as np
    >>> from attnlib.symbolic import tilting_monte_carlo
    >>> Sigma, u = np.array([[1.0, 0.5], [0.5, 2.0]]), np.array([0.3, -0.2])
    >>> mc = tilting_monte_carlo(Sigma, u, n_samples=200_000, rng=np.random.default_rng(0))
    >>> bool(abs(mc.mgf - np.exp(u @ Sigma @ u / 2)) < 3 * mc.mgf_se)
    True
    >>> bool(np.all(np.abs(mc.tilted_mean - Sigma @ u) < 3 * mc.tilted_mean_se))
    True
    """
    sigma = check_spd("Sigma", Sigma)
    d = sigma.shape[0]
    vector = as_matrix("u", u, shape=(d,), ndim=1)
    n_samples = check_int("n_samples", n_samples, minimum=2, maximum=MAX_MONTE_CARLO_SAMPLES)
    block_size = check_int("block_size", block_size, minimum=1)
    check_memory("block_size", block_size, 4 * 8 * min(block_size, n_samples) * (d + 1),
                 "one block of samples")
    rng = check_generator("rng", rng)
    chol = np.linalg.cholesky(sigma)
    sum_w = sum_w2 = 0.0
    sum_wx, sum_w2x, sum_w2x2 = np.zeros(d), np.zeros(d), np.zeros(d)
    for start in range(0, n_samples, block_size):
        x = rng.standard_normal((min(block_size, n_samples - start), d)) @ chol.T
        w = np.exp(x @ vector)
        sum_w += w.sum()
        sum_w2 += w @ w
        sum_wx += w @ x
        sum_w2x += (w * w) @ x
        sum_w2x2 += (w * w) @ (x * x)
    mean_w = sum_w / n_samples
    var_w = (sum_w2 - n_samples * mean_w ** 2) / (n_samples - 1)
    ratio = sum_wx / sum_w
    spread = np.maximum(sum_w2x2 - 2 * ratio * sum_w2x + ratio ** 2 * sum_w2, 0.0)
    return TiltingMonteCarlo(u=vector, n_samples=n_samples, mgf=float(mean_w),
                             mgf_se=float(np.sqrt(var_w / n_samples)), tilted_mean=ratio,
                             tilted_mean_se=np.sqrt(spread) / sum_w)


def finite_context_errors(problem: RegressionProblem, A: np.ndarray, B: np.ndarray,
                          ns: Sequence[int], *, reps: int, n_queries: int,
                          rng: np.random.Generator,
                          loss_max_n: int | None = None) -> dict[str, np.ndarray]:
    """Monte Carlo distance of the finite-n layer to its infinite-data limit at fixed (A, B).

    For each n in ``ns`` and each of ``reps`` repetitions, draw a sample (X, Y) of size n from
    ``problem`` and ``n_queries`` fresh query points x_q ~ N(0, Sigma) (in that order), then

    * ``output_error = sqrt(mean_q ||h_n(x_q) - Sigma B^T x_q||^2)``, with
      ``h_n(x) = sum_i softmax_i(x^T B x_i) x_i`` over the n samples (``predict_new`` with
      A = I) and its limit ``Sigma B^T x`` (exponential tilting);
    * ``loss_error = |L_hat_n(A, B) - L(A, B)|``: the leave-one-out empirical loss on the
      sample against the population loss (only for n <= ``loss_max_n``, NaN above; the
      empirical loss costs O(n^2)).

    Returns ``n`` (k,), ``output_error`` and ``loss_error`` (k, reps), and ``population_loss``.
    ``reps`` is at most :data:`MAX_REPETITIONS` and ``n_queries`` at most
    :data:`MAX_MONTE_CARLO_SAMPLES` (the queries of one repetition must fit in memory).
    """
    rng = check_generator("rng", rng)
    reps = check_int("reps", reps, minimum=1, maximum=MAX_REPETITIONS)
    n_queries = check_int("n_queries", n_queries, minimum=1, maximum=MAX_MONTE_CARLO_SAMPLES)
    check_memory("n_queries", n_queries, 4 * 8 * n_queries * problem.d, "the query points")
    sizes = np.array([check_int("ns entry", n, minimum=2) for n in ns])
    d = problem.d
    a = as_matrix("A", A, shape=(problem.p, d))
    b = as_matrix("B", B, shape=(d, d))
    target = population_loss(a, b, problem.Sigma, problem.M, noise_std=problem.noise_std)
    chol = np.linalg.cholesky(problem.Sigma)
    output_error = np.empty((sizes.size, reps))
    loss_error = np.full((sizes.size, reps), np.nan)
    for i, n in enumerate(sizes):
        for r in range(reps):
            x, y = problem.sample(int(n), rng=rng)
            queries = rng.standard_normal((n_queries, d)) @ chol.T
            h = attention.predict_new(np.eye(d), b, x, queries)
            output_error[i, r] = np.sqrt(np.mean(np.sum((h - queries @ b @ problem.Sigma) ** 2,
                                                        axis=1)))
            if loss_max_n is None or n <= loss_max_n:
                loss_error[i, r] = abs(attention.loss(a, b, x, y) - target)
    return {"n": sizes, "output_error": output_error, "loss_error": loss_error,
            "population_loss": np.array(target)}
