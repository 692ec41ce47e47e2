"""Summaries of training histories for Part I's experiment chapters (chapters 4-6).

A training history (:class:`attnlib.algorithm.TrainResult`) is one curve per metric, indexed
by iteration k = 0, 1, ..., K. The chapters compare methods over several seeds, so they need:

* :func:`pad_histories`: stack curves of unequal length (a run that diverged stops early) into
  a (runs, K + 1) array, padding with NaN ("no value": the run no longer exists);
* :func:`seed_summary`: the median over runs and a spread band (the ``lower`` and ``upper``
  quantiles, default the quartiles) at every iteration, ignoring NaN;
* :func:`iterations_to_threshold`: the first iteration k with ``curve[k] <= threshold``, or
  ``inf`` when the curve never gets there ("not reached" within the cap);
  :func:`format_iterations` prints it;
* :func:`settling_iteration`: the first iteration after which a curve stays within a relative
  tolerance of its last value (a convergence criterion that needs no known limit);
* :func:`balance`: the imbalance ``||U^T U - V^T V||_F`` and the softmax scale ``||V||_F`` of
  a parameter pair, the two quantities the regularizer and the renormalization act on;

Geometric-rate and power-law fits live in :mod:`attnlib.fitting`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ._validation import (MAX_SIZE, as_matrix, check_in_range, check_int, check_memory,
                          check_positive, check_real, finite_result)
from .population import to_factor

__all__ = [
    "SeedSummary",
    "pad_histories",
    "seed_summary",
    "iterations_to_threshold",
    "format_iterations",
    "settling_iteration",
    "balance",
]


@dataclass(frozen=True)
class SeedSummary:
    """Pointwise summary of a (runs, iterations) array: ``median``, ``lower``, ``upper`` and
    ``count`` (how many runs have a finite value there), each of length ``iterations``."""

    median: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    count: np.ndarray


def _curve(name: str, curve: object) -> np.ndarray:
    return as_matrix(name, curve, ndim=1, finite=False)


def pad_histories(curves: Sequence[object], length: int | None = None) -> np.ndarray:
    """Stack 1-D histories into a ``(len(curves), length)`` array, padding with NaN.

    ``length`` defaults to the longest curve; a curve longer than ``length`` raises
    ``ValueError`` (truncating silently would hide iterations). NaN entries mean "this run has
    no value here" (it diverged or stopped); :func:`seed_summary` ignores them. ``length`` is
    at most ``MAX_SIZE`` = 10^8 (``attnlib._validation``) and the padded array must fit in
    the memory available.
    """
    arrays = [_curve(f"curves[{i}]", c) for i, c in enumerate(curves)]
    if not arrays:
        raise ValueError("curves must contain at least one history")
    longest = max(a.size for a in arrays)
    length = longest if length is None else check_int("length", length, minimum=1,
                                                       maximum=MAX_SIZE)
    check_memory("length", length, 8 * len(arrays) * length, "the padded histories")
    if longest > length:
        raise ValueError(f"length = {length} is shorter than the longest curve ({longest})")
    out = np.full((len(arrays), length), np.nan)
    for row, array in zip(out, arrays):
        row[: array.size] = array
    return out


def seed_summary(curves: object, *, lower: float = 0.25, upper: float = 0.75) -> SeedSummary:
    """Median and ``[lower, upper]`` quantile band over runs (axis 0), ignoring NaN and +-inf.

    ``curves`` is a ``(runs, iterations)`` array (see :func:`pad_histories`). Where no run has a
    finite value the summary is NaN and ``count`` is 0. The quantiles use numpy's default
    (linear) interpolation; with 5 runs the quartiles are the 2nd and 4th smallest values.
    """
    array = as_matrix("curves", curves, ndim=2, finite=False)
    lower = check_in_range("lower", lower, 0.0, 1.0)
    upper = check_in_range("upper", upper, 0.0, 1.0)
    if not lower <= upper:
        raise ValueError(f"need 0 <= lower <= upper <= 1, got lower={lower!r}, upper={upper!r}")
    finite = np.isfinite(array)
    count = finite.sum(axis=0)
    cleaned = np.where(finite, array, np.nan)
    median = np.full(array.shape[1], np.nan)
    low = np.full(array.shape[1], np.nan)
    high = np.full(array.shape[1], np.nan)
    columns = count > 0
    if np.any(columns):
        sub = cleaned[:, columns]
        median[columns] = np.nanmedian(sub, axis=0)
        low[columns] = np.nanquantile(sub, lower, axis=0)
        high[columns] = np.nanquantile(sub, upper, axis=0)
    return SeedSummary(median=median, lower=low, upper=high, count=count)


def iterations_to_threshold(curves: object, threshold: float) -> np.ndarray | float:
    """First iteration k with ``curve[k] <= threshold``; ``inf`` when it is never reached.

    Non-finite entries (NaN for a diverged run, +-inf) never count as reached. ``inf`` means
    "not reached within the run"; the cap is the run's length.

    Parameters
    ----------
    curves : array_like
        One history, or an array whose last axis is the iteration.
    threshold : float
        The level to reach.

    Returns
    -------
    float or ndarray
        A float for one history, else an array of the leading shape.

    Raises
    ------
    ValueError
        For an empty curve or a non-finite threshold.

    Examples
    --------
    A gap ``mu^k`` first reaches ``eps`` at ``k = ceil(log eps / log mu)``:

    >>> import numpy as np
    >>> from attnlib.analysis import format_iterations, iterations_to_threshold
    >>> k = np.arange(50)
    >>> fast, slow = 0.5 ** k, 0.9 ** k
    >>> iterations_to_threshold(fast, 1e-3), int(np.ceil(np.log(1e-3) / np.log(0.5)))
    (10.0, 10)
    >>> iterations_to_threshold(np.stack([fast, slow]), 1e-3)       # one per run
    array([10., inf])
    >>> diverged = np.where(k < 5, fast, np.nan)        # NaN after the run stopped
    >>> iterations_to_threshold(diverged, 1e-3)
    inf
    >>> format_iterations(iterations_to_threshold(slow, 1e-3), cap=49)
    'not reached (> 49)'
    """
    threshold = check_positive("threshold", threshold, allow_zero=True)
    array = as_matrix("curves", curves, ndim=tuple(range(1, 8)), finite=False)
    reached = np.isfinite(array) & (array <= threshold)
    first = np.where(reached.any(axis=-1), np.argmax(reached, axis=-1), np.inf)
    return float(first) if array.ndim == 1 else first.astype(np.float64)


def format_iterations(value: float, cap: int) -> str:
    """Format an :func:`iterations_to_threshold` result: ``"123"`` or ``"not reached (> cap)"``."""
    cap = check_int("cap", cap, minimum=0)
    value = check_real("value", value)
    if value == np.inf:
        return f"not reached (> {cap})"
    if not np.isfinite(value) or value < 0 or value != int(value):
        raise ValueError(f"value must be a non-negative integer or +inf, got {value!r}")
    return f"{int(value)}"


def settling_iteration(curve: object, *, rtol: float) -> int:
    """First iteration k such that ``|curve[j] - curve[-1]| <= rtol |curve[-1]|`` for all j >= k.

    A convergence criterion relative to the run's own last value: a curve that is still
    moving at the end settles late (close to its last index); the last index itself always
    qualifies, so the result is at most ``len(curve) - 1``. NaN entries raise ``ValueError``.
    """
    array = _curve("curve", curve)
    rtol = check_positive("rtol", rtol, allow_zero=True)
    if not np.all(np.isfinite(array)):
        raise ValueError("curve contains NaN or infinite entries (a diverged run has no "
                         "settling iteration)")
    outside = np.abs(array - array[-1]) > rtol * abs(array[-1])
    if not outside.any():
        return 0
    return int(np.flatnonzero(outside)[-1] + 1)


@finite_result
def balance(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray) -> tuple[float, float]:
    """Return ``(||U^T U - V^T V||_F, ||V||_F)`` with ``(U, V) = (A Sigma^{1/2},
    Sigma^{1/2} B Sigma^{1/2})``.

    The first is the imbalance that the regularizer ``R = lambda/8 ||U^T U - V^T V||_F^2``
    penalises (zero on S); the second is the softmax scale that renormalization bounds by tau
    (``sqrt(trace D)`` everywhere on S). Pass ``Sigma_hat`` for the empirical versions.
    """
    u, v = to_factor(A, B, Sigma)
    return float(np.linalg.norm(u.T @ u - v.T @ v)), float(np.linalg.norm(v))
