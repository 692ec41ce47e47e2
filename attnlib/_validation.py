"""Input checks shared by every module: one home for the book's error messages.

Each check raises ``ValueError`` (or ``TypeError``) naming the argument and what was expected,
so that bad input never surfaces as a silent NaN or a traceback from deep inside numpy.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import threading
from typing import Any, Callable, Sequence, TypeVar

import numpy as np
from numpy.typing import DTypeLike

from ._constants import documented


#: ``ndim`` of :func:`as_matrix` meaning "any number of axes" (numpy allows at most 64).
ANY_NDIM = documented(tuple(range(65)), """\
``ndim`` of ``as_matrix`` meaning "any number of axes" (numpy allows at most 64).""")


def as_matrix(name: str, value: object, shape: Sequence[int | None] | None = None,
              ndim: int | tuple[int, ...] = 2, *, allow_empty: bool = False,
              dtype: DTypeLike = np.float64, finite: bool = True) -> np.ndarray:
    """Return ``value`` as a finite ``dtype`` (float64) array with ``ndim`` axes and the shape.

    ``ndim`` is a number of axes or a tuple of allowed numbers; ``shape`` entries that are
    ``None`` are free. Raises ``TypeError`` naming ``name`` when the
    entries are not real numbers (complex, strings, objects: nothing is silently cut to its real
    part or parsed from text), and ``ValueError`` when the number of axes or a fixed dimension
    differs, when the array is empty (unless ``allow_empty``) or an entry is NaN or infinite
    (unless ``finite=False``: histories use NaN for "no value here").
    """
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:        # ragged nested sequences
        raise TypeError(f"{name} must be a real numeric array, got {type(value).__name__} "
                        f"({exc})") from exc
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a real numeric array, got dtype {raw.dtype} "
                        f"({type(value).__name__})")
    array = raw.astype(dtype, copy=False)
    allowed = (ndim,) if isinstance(ndim, int) else ndim
    if array.ndim not in allowed:
        axes = (f"{allowed[0]} to {allowed[-1]}" if len(allowed) > 3 else
                " or ".join(map(str, allowed)))
        raise ValueError(f"{name} must have {axes} axes, got shape {array.shape}")
    if shape is not None:
        for axis, (got, want) in enumerate(zip(array.shape, shape)):
            if want is not None and got != want:
                expected = "(" + ", ".join("*" if w is None else str(w) for w in shape) + ")"
                raise ValueError(f"{name} must have shape {expected}, got {array.shape} "
                                 f"(axis {axis} is {got}, expected {want})")
    if array.size == 0 and not allow_empty:
        raise ValueError(f"{name} must not be empty, got shape {array.shape}")
    if finite and not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite entries")
    return array


def check_real(name: str, value: object) -> float:
    """``value`` as a float if it is a real number (not a string, None, complex or an array)."""
    if isinstance(value, (str, bytes, complex, np.complexfloating)) or value is None \
            or np.ndim(value) != 0:
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        return float(value)        # type: ignore[arg-type]
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}") from exc


def check_finite(name: str, value: float) -> float:
    """Return ``value`` as a float after checking it is a finite real number (any sign)."""
    number = check_real(name, value)
    if not np.isfinite(number):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return number


def check_positive(name: str, value: float, *, allow_zero: bool = False) -> float:
    """Return ``value`` as a float after checking it is finite and > 0 (or >= 0)."""
    number = check_real(name, value)
    if not np.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        bound = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"{name} must be a finite number {bound}, got {value!r}")
    return number


def check_positive_entries(name: str, array: np.ndarray, purpose: str = "") -> np.ndarray:
    """Return the checked array ``array`` after checking that every entry is > 0; ``purpose``
    (e.g. ``" for a log-log fit"``) ends the message's first clause."""
    if array.size and not np.all(array > 0):
        raise ValueError(f"{name} must be positive{purpose}, got a smallest entry "
                         f"{array.min()!r}")
    return array


def check_in_range(name: str, value: float, low: float, high: float, *,
                   closed: tuple[bool, bool] = (True, True)) -> float:
    """Return ``value`` as a float after checking ``low <(=) value <(=) high``."""
    number = check_finite(name, value)
    above = number >= low if closed[0] else number > low
    below = number <= high if closed[1] else number < high
    if not (above and below):
        interval = f"{'[' if closed[0] else '('}{low:g}, {high:g}{']' if closed[1] else ')'}"
        raise ValueError(f"{name} must lie in {interval}, got {value!r}")
    return number


def check_pair(name: str, value: object, what: str = "(A, B)") -> tuple[Any, Any]:
    """``value`` as a tuple of its two entries after checking it is a pair (a tuple, list or
    array of length 2); ``TypeError`` or ``ValueError`` naming ``name`` and ``what`` (the
    entries expected, e.g. ``"(A, B)"`` or ``"(low, high)"``) otherwise."""
    if isinstance(value, (str, bytes, dict)) or not isinstance(value, (tuple, list, np.ndarray)):
        raise TypeError(f"{name} must be a pair {what}, got {type(value).__name__}")
    if len(value) != 2:
        raise ValueError(f"{name} must be a pair {what}, got {len(value)} entries")
    return value[0], value[1]


def check_int(name: str, value: int, *, minimum: int, maximum: int | None = None) -> int:
    """Return ``value`` as an int after checking ``minimum <= value (<= maximum)``.

    ``maximum`` bounds sizes and counts whose cost grows with them (symbolic dimensions,
    worker processes, iterations): a huge value fails at once instead of hanging.
    """
    if isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, (int, np.integer)):
        number = int(value)
    else:
        real = check_real(name, value)
        if not np.isfinite(real) or int(real) != real:
            raise ValueError(f"{name} must be an integer, got {value!r}")
        number = int(real)
    if number < minimum:
        raise ValueError(f"{name} must be at least {minimum}, got {value}")
    if maximum is not None and number > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {value}")
    return number


#: Largest size or count (samples, dimensions, steps, grid points, draws) that an attnlib
#: argument accepts where no smaller bound is documented: orders of magnitude beyond every use
#: in the book, while 10^9 float64 entries (8 GB) already exceed most machines. Products of
#: sizes are checked against the memory available (:func:`check_memory`).
MAX_SIZE = documented(10 ** 8, """\
Largest size or count (samples, dimensions, steps, grid points, draws) that an attnlib
argument accepts where no smaller bound is documented: orders of magnitude beyond every use
in the book, while 10^9 float64 entries (8 GB) already exceed most machines. Products of
sizes are checked against the memory available (``check_memory``).""")


def available_memory() -> int:
    """Bytes of memory this process can still allocate: ``MemAvailable`` of /proc/meminfo
    (Linux), else the physical memory, else (unknown platform) 2^63; never more than what an
    address-space limit (``ulimit -v``) leaves beyond the process's current size."""
    available = None
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if available is None:
        try:
            available = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            available = 2 ** 63
    return min(available, _address_space_left())


def _address_space_left() -> int:
    """Bytes of address space left under ``ulimit -v`` (RLIMIT_AS), or 2^63 without a limit."""
    try:
        import resource
        limit = resource.getrlimit(resource.RLIMIT_AS)[0]
        if limit == resource.RLIM_INFINITY:
            return 2 ** 63
        with open("/proc/self/status") as status:
            size = next(int(line.split()[1]) * 1024 for line in status
                        if line.startswith("VmSize:"))
        return max(limit - size, 0)
    except (ImportError, OSError, ValueError, StopIteration):
        return 2 ** 63


def check_memory(name: str, value: object, n_bytes: float, what: str) -> None:
    """Raise ``ValueError`` naming ``name`` (= ``value``) when ``n_bytes`` (an estimate of what
    the call will allocate for ``what``) exceeds :func:`available_memory`, before allocating."""
    available = available_memory()
    if n_bytes > available:
        raise ValueError(f"{name} = {value} needs about {n_bytes / 2 ** 30:.3g} GiB for {what}, "
                         f"more than the {available / 2 ** 30:.3g} GiB of memory available; "
                         f"use a smaller {name}")


def check_spd(name: str, matrix: object, *, rtol: float = 1e-10) -> np.ndarray:
    """Return ``matrix`` as a float64 symmetric positive definite array.

    Raises ``ValueError`` when it is not square, not symmetric (relative tolerance ``rtol``)
    or not positive definite (Cholesky fails or the smallest eigenvalue is not positive
    relative to the largest).
    """
    array = as_matrix(name, matrix)
    if array.shape[0] != array.shape[1]:
        raise ValueError(f"{name} must be square, got shape {array.shape}")
    scale = max(np.abs(array).max(), np.finfo(float).tiny)
    if np.abs(array - array.T).max() > rtol * scale:
        raise ValueError(f"{name} must be symmetric")
    eigenvalues = np.linalg.eigvalsh(array)
    if eigenvalues[0] <= rtol * max(eigenvalues[-1], 0.0) or eigenvalues[0] <= 0:
        raise ValueError(f"{name} must be positive definite (smallest eigenvalue "
                         f"{eigenvalues[0]:.3g}, largest {eigenvalues[-1]:.3g}); "
                         "it is singular or nearly so")
    return 0.5 * (array + array.T)


def check_generator(name: str, rng: object) -> np.random.Generator:
    """Check that ``rng`` is a ``numpy.random.Generator`` (no global seeding in attnlib)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator "
                        f"(e.g. numpy.random.default_rng(0)), got {type(rng).__name__}")
    return rng


class DivergenceError(FloatingPointError):
    """A training loop or a sampler left the finite numbers (NaN or infinite loss, gradient or
    parameters, or logits that overflow). The book's one divergence rule: raised by
    :func:`attnlib.algorithm.train`, :func:`attnlib.vit.train` and the Langevin samplers with
    the step at which it happened, so a diverged run never returns a silent NaN.

    ``history`` holds what was recorded before the divergence (a dict of arrays, for a chapter
    that wants to plot the run up to that point; None where nothing was recorded) and
    ``result`` the partial result where the routine has one (a ``TrainResult`` for
    :func:`attnlib.algorithm.train`). Both survive pickling (Dask workers)."""

    def __init__(self, message: str, *, history: dict | None = None,
                 result: object | None = None) -> None:
        super().__init__(message)
        self.history = history
        self.result = result


def check_not_diverged(where: str, *values: object, history: dict | None = None) -> None:
    """The book's one divergence rule: raise :class:`DivergenceError` naming ``where`` (the loop
    and step), with ``history`` attached, when any of ``values`` (losses, gradients,
    parameters) is NaN or infinite."""
    for value in values:
        if not np.all(np.isfinite(value)):
            raise DivergenceError(f"{where}: the run diverged (a loss, gradient or parameter is "
                                  "NaN or infinite); reduce the step size or learning rate",
                                  history=history)


_F = TypeVar("_F", bound=Callable[..., Any])


def _non_finite(result: object) -> bool:
    """True when a float entry of ``result`` (arrays, numbers, tuples, dicts, dataclasses of
    them) is NaN or infinite."""
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return any(_non_finite(getattr(result, f.name)) for f in dataclasses.fields(result))
    if isinstance(result, dict):
        return any(_non_finite(value) for value in result.values())
    if isinstance(result, (tuple, list)):
        return any(_non_finite(value) for value in result)
    if isinstance(result, (float, np.floating, np.ndarray)):
        array = np.asarray(result)
        return array.dtype.kind in "fc" and not bool(np.isfinite(array).all())
    return False


def _extremes(arguments: dict[str, object], *, fallback: bool = True) -> list[str]:
    """``"NAME has entries up to X"`` for each numeric argument beyond 1e100 in magnitude or
    nonzero below 1e-100 (the likely cause of an overflow); if there is none, for every numeric
    one (``fallback``) or none."""
    found, numeric = [], []
    for name, value in arguments.items():
        if isinstance(value, (bool, str)) or not isinstance(value, (int, float, np.number,
                                                                    np.ndarray)):
            continue
        magnitude = np.abs(np.asarray(value, dtype=float)).ravel()
        if magnitude.size == 0:
            continue
        numeric.append(name)
        nonzero = magnitude[magnitude > 0]
        if magnitude.max() > 1e100:
            found.append(f"{name} has entries up to {magnitude.max():.3g}")
        elif nonzero.size and nonzero.min() < 1e-100:
            found.append(f"{name} has entries as small as {nonzero.min():.3g}")
    if found or not fallback:
        return found
    return [f"{name} has a value that is too large or too small" for name in numeric]


#: Failures that an extreme argument (beyond 1e100, or nonzero below 1e-100) can cause deep
#: inside a computation: overflow, a singular or non-converging factorization, a NaN caught by
#: an inner check, a solver that cannot reach a tolerance below round-off.
_OVERFLOW_FAILURES = (ArithmeticError, ValueError, np.linalg.LinAlgError, RuntimeError)


def finite_result(fn: _F) -> _F:
    """Decorator: float64 overflow of finite, valid-looking inputs raises ``ValueError`` naming
    the extreme arguments, instead of passing silently or failing deep inside. Two cases: ``fn``
    returns an infinite or NaN float; or ``fn`` fails (``ArithmeticError``, ``ValueError``,
    ``LinAlgError``, ``RuntimeError``) while an argument is extreme (beyond 1e100 in magnitude
    or nonzero below 1e-100). A failure with no extreme argument propagates unchanged. numpy's
    overflow, invalid and divide warnings are silenced inside ``fn`` (the check replaces them)."""
    signature = inspect.signature(fn)

    def arguments(args: tuple, kwargs: dict) -> dict[str, object]:
        return dict(signature.bind(*args, **kwargs).arguments)

    @functools.wraps(fn)
    def checked(*args: object, **kwargs: object) -> object:
        if _CHECKING.depth:                  # an outer checked call names its own arguments
            return fn(*args, **kwargs)
        _CHECKING.depth += 1
        try:
            # overflow is reported below by name, so numpy's RuntimeWarnings would only repeat
            # it (without the name) before the error; good input gives the same numbers
            with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
                result = fn(*args, **kwargs)
        except _OVERFLOW_FAILURES as exc:
            causes = _extremes(arguments(args, kwargs), fallback=isinstance(exc, OverflowError))
            if not causes:
                raise
            raise ValueError(f"{'; '.join(causes)}: {fn.__name__} failed on it "
                             f"({type(exc).__name__}: {exc}); rescale the input") from exc
        finally:
            _CHECKING.depth -= 1
        if _non_finite(result):
            raise ValueError(f"{'; '.join(_extremes(arguments(args, kwargs)))}: the result of "
                             f"{fn.__name__} is not finite (float64 overflow); rescale the input")
        return result

    return checked  # type: ignore[return-value]


class _Depth(threading.local):
    depth = 0


_CHECKING = _Depth()
