"""Rate fits for chapter 6 (scaling laws): power laws in n and geometric rates in iterations.

Power law [choice: least squares in log-log coordinates]. Given sample sizes ``x_k`` and one
or several measurements ``y_ks`` per size (one per seed s), :func:`fit_power_law` fits

    log y_ks = log C + b log x_k + e_ks

by ordinary least squares over all points, and reports the exponent b with its classical
standard error ``se(b) = sqrt(s^2 / sum_ks (log x_k - mean log x)^2)``, where
``s^2 = RSS / (N - 2)`` and N is the number of points. The confidence interval is either
``b +- t_{N-2, (1+level)/2} se(b)`` or, when a generator and ``n_boot > 0`` are given, the
percentile interval of a bootstrap that resamples the seeds (columns) with replacement and
refits (this keeps each seed's whole curve together, so correlation across n within a seed
is respected).

Weighted power law [choice, chapter 6]. When each size has one estimate ``y_k`` with a known
standard error ``s_k`` (an unbiased estimate that may come out zero or negative where it is
small against its error, like the finite-context bias), :func:`fit_power_law_weighted` fits
``y = C x^b`` to the values themselves by weighted nonlinear least squares,
``min sum_k ((y_k - C x_k^b) / s_k)^2``, and takes the exponent's standard error from the
inverse Gauss-Newton matrix with the errors taken as known (``scipy.optimize.curve_fit`` with
``absolute_sigma=True``); the interval is ``b +- z se(b)``.

Geometric rate. If a positive sequence behaves like ``e_m ~ C mu^m``, then
``log e_m = log C + m log mu``; :func:`fit_geometric_rate` fits this line by least squares
over a window of iterations (an explicit range, and/or the entries whose value lies in a band
``low <= e_m <= high``, e.g. above the floating-point floor and below the transient), and
returns ``mu = exp(slope)`` with the delta-method standard error ``mu se(slope)``.
Whatever limit the sequence tends to must be subtracted by the caller (pass ``e_m = f_m - f_inf``
or a quantity that tends to zero, such as a gradient norm).

Predicted local rate [derived, chapter 6]. Near the manifold S of minima, gradient descent
with step eta is linear: the deviation from S evolves as ``delta <- (I - eta H) delta`` with H
the Hessian of ``Q = L + R`` at S in the coordinates the step acts on. Preconditioned GD on
(A, B) is plain GD on ``(U, V) = (A Sigma^{1/2}, Sigma^{1/2} B Sigma^{1/2})``, so H is the
(U, V) Hessian of :func:`attnlib.geometry.factor_hessian`, which depends on X* only; plain GD
on (A, B) sees ``J^T H J`` with J the linear map ``(dA, dB) -> (dA Sigma^{1/2},
Sigma^{1/2} dB Sigma^{1/2})``, which depends on Sigma as well. In both cases the d(d-1)/2
directions tangent to S have eigenvalue 0 and do not contract (GD settles on some point of S);
:func:`local_gd_rate` drops exactly those and returns ``mu = max |1 - eta h|`` over the rest.
Distances to S shrink like ``mu^m`` and the excess risk (quadratic in the distance) like
``mu^{2m}``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ._validation import (as_matrix, check_generator, check_int, check_pair, check_positive,
                          check_positive_entries, check_real, finite_result)
from .geometry import factor_hessian, minimizer_manifold

__all__ = ["PowerLawFit", "fit_power_law", "fit_power_law_weighted", "GeometricFit", "fit_geometric_rate",
           "local_gd_rate", "spectrum_gap_rate"]


@dataclass(frozen=True)
class PowerLawFit:
    """Result of :func:`fit_power_law`: ``y ~ prefactor * x**exponent``.

    ``stderr`` is the classical least-squares standard error of the exponent; ``ci`` the
    interval at confidence ``level`` (t-interval, or seed bootstrap when requested, see
    ``bootstrap``); ``n_points`` the number of (x, y) pairs used.
    """

    exponent: float
    prefactor: float
    stderr: float
    ci: tuple[float, float]
    level: float
    n_points: int
    bootstrap: bool


def _line_fit(logx: np.ndarray, logy: np.ndarray) -> tuple[float, float, float]:
    """Least-squares line ``logy = a + b logx``; returns ``(b, a, se(b))``."""
    centred = logx - logx.mean()
    sxx = float(np.sum(centred ** 2))
    slope = float(np.sum(centred * (logy - logy.mean())) / sxx)
    intercept = float(logy.mean() - slope * logx.mean())
    residual = logy - intercept - slope * logx
    dof = logx.size - 2
    stderr = float(np.sqrt(np.sum(residual ** 2) / dof / sxx)) if dof > 0 else float("nan")
    return slope, intercept, stderr


def _check_level(level: float) -> float:
    """A confidence level in (0, 1)."""
    level = check_positive("level", level)
    if level >= 1:
        raise ValueError(f"level must lie in (0, 1), got {level}")
    return level


def fit_power_law(x: np.ndarray, y: np.ndarray, *, rng: np.random.Generator | None = None,
                  n_boot: int = 0, level: float = 0.95) -> PowerLawFit:
    """Fit ``y ~ C x^b`` by least squares of ``log y`` on ``log x`` (module docstring).

    Parameters
    ----------
    x : ndarray
        (k,) positive values, at least 2 distinct.
    y : ndarray
        (k,) or (k, seeds) positive values, column s holding seed s.
    rng : numpy.random.Generator, optional
        With ``n_boot > 0``: the interval is a percentile bootstrap over seeds (needs at
        least 2 seeds); otherwise a t-interval.
    n_boot : int
        Number of bootstrap resamples (0: none).
    level : float
        Confidence level of the interval for ``b``.

    Returns
    -------
    PowerLawFit
        The exponent ``b``, the constant ``C`` and the interval.

    Raises
    ------
    ValueError
        For non-positive values, mismatched shapes or too few points.

    Examples
    --------
    Four seeds of ``y = 3 / n`` with 5% multiplicative noise: the fitted exponent is close
    to -1 and its interval covers it.

    >>> import numpy as np
    >>> from attnlib.fitting import fit_power_law
    >>> rng = np.random.default_rng(0)
    >>> n = np.array([100, 200, 400, 800, 1600])
    >>> y = 3.0 / n[:, None] * np.exp(0.05 * rng.standard_normal((5, 4)))
    >>> fit = fit_power_law(n, y)
    >>> round(fit.exponent, 2), round(fit.prefactor, 1), fit.n_points
    (-1.01, 3.2, 20)
    >>> bool(fit.ci[0] < -1.0 < fit.ci[1])
    True
    >>> boot = fit_power_law(n, y, rng=np.random.default_rng(1), n_boot=200)
    >>> boot.bootstrap, bool(boot.ci[0] < fit.exponent < boot.ci[1])
    (True, True)
    """
    xs = as_matrix("x", x, ndim=1)
    ys = as_matrix("y", y, ndim=(1, 2))
    ys = as_matrix("y", ys[:, None] if ys.ndim == 1 else ys, shape=(xs.size, None))
    check_positive_entries("x", xs, " for a log-log fit")
    check_positive_entries("y", ys, " for a log-log fit")
    if np.unique(xs).size < 2:
        raise ValueError(f"x needs at least 2 distinct values, got {np.unique(xs).size}")
    level = _check_level(level)
    n_boot = check_int("n_boot", n_boot, minimum=0)
    seeds = ys.shape[1]
    logx = np.repeat(np.log(xs), seeds)
    logy = np.log(ys).ravel()
    if logx.size < 3:
        raise ValueError(f"y must hold at least 3 points (x values times seeds) for a "
                         f"standard error, got {logx.size}")
    slope, intercept, stderr = _line_fit(logx, logy)
    use_boot = rng is not None and n_boot > 0
    if use_boot:
        rng = check_generator("rng", rng)
        if seeds < 2:
            raise ValueError(f"y needs at least 2 seeds (columns) for the seed bootstrap "
                             f"(n_boot > 0), got {seeds}")
        slopes = np.empty(n_boot)
        for b in range(n_boot):
            cols = rng.integers(0, seeds, size=seeds)
            slopes[b] = _line_fit(logx, np.log(ys[:, cols]).ravel())[0]
        tail = (1.0 - level) / 2.0
        ci = (float(np.quantile(slopes, tail)), float(np.quantile(slopes, 1.0 - tail)))
    else:
        half = float(stats.t.ppf((1.0 + level) / 2.0, logx.size - 2)) * stderr
        ci = (slope - half, slope + half)
    return PowerLawFit(exponent=slope, prefactor=float(np.exp(intercept)), stderr=stderr,
                       ci=ci, level=level, n_points=int(logx.size), bootstrap=use_boot)


@finite_result
def fit_power_law_weighted(x: np.ndarray, y: np.ndarray, stderr: np.ndarray, *,
                           level: float = 0.95) -> PowerLawFit:
    """Fit ``y ~ C x^b`` to estimates ``y`` with standard errors ``stderr`` (module docstring).

    ``x`` (k,) positive, at least 3 distinct values; ``y`` (k,) real (zero or negative
    estimates are allowed); ``stderr`` (k,) positive. The start is the unweighted log-log fit
    of the positive points. Raises ``ValueError`` for bad shapes or values.
    """
    from scipy import optimize

    xs = as_matrix("x", x, ndim=1)
    ys = as_matrix("y", y, shape=(xs.size,), ndim=1)
    errors = as_matrix("stderr", stderr, shape=(xs.size,), ndim=1)
    check_positive_entries("x", xs, " for a log-log fit")
    check_positive_entries("stderr", errors)
    if np.unique(xs).size < 3:
        raise ValueError(f"x needs at least 3 distinct values, got {np.unique(xs).size}")
    level = _check_level(level)
    positive = ys > 0
    if positive.sum() < 2:
        raise ValueError(f"y needs at least 2 positive estimates to start the fit (the "
                         f"unweighted log-log fit), got {int(positive.sum())}")
    scale = float(np.exp(np.mean(np.log(xs))))           # fit C (x/scale)^b: well conditioned
    slope, intercept, _ = _line_fit(np.log(xs[positive] / scale), np.log(ys[positive]))

    def model(t: np.ndarray, log_c: float, b: float) -> np.ndarray:
        return np.exp(log_c) * (t / scale) ** b

    with warnings.catch_warnings():
        # a covariance that cannot be estimated is infinite: the check of finite_result names
        # the extreme argument, so scipy's warning would only repeat it without the name
        warnings.simplefilter("ignore", optimize.OptimizeWarning)
        params, cov = optimize.curve_fit(model, xs, ys, p0=(intercept, slope), sigma=errors,
                                         absolute_sigma=True, maxfev=10000)
    exponent, se = float(params[1]), float(np.sqrt(cov[1, 1]))
    half = float(stats.norm.ppf((1.0 + level) / 2.0)) * se
    return PowerLawFit(exponent=exponent, prefactor=float(np.exp(params[0]) * scale ** -exponent),
                       stderr=se, ci=(exponent - half, exponent + half), level=level,
                       n_points=int(xs.size), bootstrap=False)


@dataclass(frozen=True)
class GeometricFit:
    """Result of :func:`fit_geometric_rate`: ``e_m ~ exp(intercept) * rate**m``.

    ``stderr`` is the standard error of ``rate`` (delta method from the slope of log e);
    ``start``, ``stop`` the first and last iteration used; ``n_points`` how many.
    """

    rate: float
    stderr: float
    intercept: float
    start: int
    stop: int
    n_points: int


@finite_result
def fit_geometric_rate(iterations: np.ndarray, values: np.ndarray, *,
                       band: tuple[float, float] | None = None, start: int | None = None,
                       stop: int | None = None) -> GeometricFit:
    """Fit ``values_m ~ C mu^m`` by least squares of ``log values`` on m over a window.

    Parameters
    ----------
    iterations : ndarray
        The iteration numbers m of ``values``.
    values : ndarray
        The curve (e.g. a gap or a distance), same shape.
    band : tuple of float, optional
        ``(low, high)``: keep only ``low <= values <= high``.
    start, stop : int, optional
        Keep only ``start <= iterations <= stop`` (either bound optional).

    Returns
    -------
    GeometricFit
        The rate ``mu``, the constant and the window used.

    Raises
    ------
    ValueError
        When a value in the window is not positive and finite or fewer than 3 points remain.

    Examples
    --------
    A gap ``0.8^m`` that stalls at round-off (``1e-16``): the band keeps the geometric part.

    >>> import numpy as np
    >>> from attnlib.fitting import fit_geometric_rate
    >>> m = np.arange(300)
    >>> gap = np.maximum(0.8 ** m, 1e-16)
    >>> fit = fit_geometric_rate(m, gap, band=(1e-12, 1e-2))
    >>> round(fit.rate, 6), fit.start, fit.stop
    (0.8, 21, 123)
    """
    its = as_matrix("iterations", iterations, ndim=1)
    vals = as_matrix("values", values, ndim=1)
    if vals.shape != its.shape:
        raise ValueError(f"values must have the shape of iterations {its.shape}, got {vals.shape}")
    keep = np.ones(its.size, dtype=bool)
    if start is not None:
        keep &= its >= start
    if stop is not None:
        keep &= its <= stop
    if band is not None:
        low, high = (check_real(f"band[{i}]", v)
                     for i, v in enumerate(check_pair("band", band, "(low, high)")))
        if not 0 < low < high:
            raise ValueError(f"band must satisfy 0 < low < high, got {band!r}")
        keep &= (vals >= low) & (vals <= high)
    window_values = vals[keep]
    if window_values.size < 3:
        raise ValueError(f"values has {window_values.size} points inside the window (band, "
                         "start, stop); need at least 3 (widen band or start/stop)")
    if not np.all(np.isfinite(window_values)) or np.any(window_values <= 0):
        raise ValueError("values must be positive and finite inside the window (subtract the "
                         "limit and choose a band above zero)")
    window_its = its[keep]
    slope, intercept, stderr = _line_fit(window_its, np.log(window_values))
    rate = float(np.exp(slope))
    return GeometricFit(rate=rate, stderr=rate * stderr, intercept=intercept,
                        start=int(window_its[0]), stop=int(window_its[-1]),
                        n_points=int(window_values.size))


def local_gd_rate(step: float, Sigma: np.ndarray, M: np.ndarray, *, lam: float = 1.0,
                  precondition: bool = True) -> float:
    """Contraction factor ``mu = max |1 - step h|`` of GD near S (module docstring).

    h runs over the eigenvalues of the Hessian of ``Q = L + R`` at the point O = I of S for
    (Sigma, M), in (U, V) coordinates (``precondition=True``, Algorithm 1's step) or in (A, B)
    coordinates (``precondition=False``), without the d(d-1)/2 zero eigenvalues of the
    directions tangent to S. Needs lam > 0 (otherwise the minima form a larger set).
    """
    step = check_positive("step", step)
    lam = check_positive("lam", lam)
    manifold = minimizer_manifold(Sigma, M)
    p, d = manifold.Xstar.shape
    hessian = factor_hessian(manifold.U_star, manifold.V_star, manifold.Xstar, lam=lam)
    if not precondition:
        jacobian = np.zeros_like(hessian)
        jacobian[: p * d, : p * d] = np.kron(np.eye(p), manifold.half)
        jacobian[p * d:, p * d:] = np.kron(manifold.half, manifold.half)
        hessian = jacobian.T @ hessian @ jacobian
    eigenvalues = np.linalg.eigvalsh(0.5 * (hessian + hessian.T))
    tangent = d * (d - 1) // 2
    nonzero = eigenvalues[np.argsort(np.abs(eigenvalues))[tangent:]]
    return float(np.max(np.abs(1.0 - step * nonzero)))


@finite_result
def spectrum_gap_rate(step: float, eigenvalues: np.ndarray) -> float:
    """Slowest per-iteration contraction of the optimization gap of gradient descent with
    ``step`` near a minimizer whose Hessian has ``eigenvalues`` (all > 0):
    ``mu = max_h (1 - step h)^2`` -- the offset contracts by ``|1 - step h|`` in each
    eigendirection and the gap is quadratic in the offset. Used with the Hessian spectrum of a
    certified optimum (:mod:`attnlib.reference`) in (U, V) coordinates, where Algorithm 1's
    preconditioned step is plain gradient descent.
    """
    step = check_positive("step", step)
    values = as_matrix("eigenvalues", eigenvalues, ndim=1)
    if values.size == 0 or np.any(values <= 0):
        raise ValueError("eigenvalues must be a non-empty array of positive numbers (the "
                         "Hessian at a strict local minimum)")
    return float(np.max((1.0 - step * values) ** 2))
