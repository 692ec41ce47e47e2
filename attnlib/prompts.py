"""The second reconstruction of Part I: many prompts of context length n (chapters 5 and 6).

In the first reconstruction one set of n samples is both the regression data and the
attention context. Here **[choice]** n is the *context length*: N prompts of n tokens each are
drawn from one task (Sigma, M, sigma); query j of prompt k attends over the other tokens of
prompt k (leave-one-out), and the training loss is the average over all N n queries
(:func:`attnlib.algorithm.prompts_loss`, :func:`attnlib.attention.prompts_loss_and_grad`).
Its expectation over prompts is the *finite-context* population loss ``L_n(A, B)``; as
``n -> infinity`` it tends to the infinite-context loss ``L(A, B)`` of chapter 2. The
difference between the minimizer of ``E L_hat + R`` and the manifold S is a pure
finite-context bias, what the seeds call the statistical bias of Theorem 2.

This module holds what the setting needs beyond the layer:

* :func:`sample_prompts`: N prompts from a task, optionally with *pooled whitening* (the
  pooled moments made exact, so that ``Sigma_hat = Sigma`` and, at sigma = 0, ``M_hat = M``);
* :func:`deployed_risk`: the excess risk of the deployed predictor with a fresh context of n
  tokens (Monte Carlo over fresh prompts, with its standard error);
* :func:`context_correction`: the leading ``1/m`` term of the finite-context loss with m
  context tokens, derived by the delta method **[derived]** (below);
* :func:`first_order_minimizer`: the minimizer of ``L + R + G/m`` (the delta-method prediction
  of the finite-context minimizer) and :func:`bias_statistic` (an unbiased estimate of the bias
  from independent replicates).

The delta method. In whitened coordinates (``x = Sigma^{1/2} w``, ``w ~ N(0, I_d)``,
``U = A Sigma^{1/2}``, ``V = Sigma^{1/2} B Sigma^{1/2}``, ``X* = M Sigma^{1/2}``) the query w
sees the tilt ``u = V^T w`` and the context average ``hbar = sum_i e^{u.w_i} w_i /
sum_i e^{u.w_i}`` over m i.i.d. keys; the prediction is ``U hbar``, the target ``X* w``. The
ratio of two sample means has, to order 1/m (:func:`attnlib.symbolic.ratio_estimator_moments`)::

    E hbar = u (1 - e^{|u|^2} / m),        Cov hbar = e^{|u|^2} (I + u u^T) / m .

Averaging ``1/2 ||X* w - U hbar||^2`` over keys and then over the Gaussian query (the weight
``e^{w^T V V^T w}`` turns N(0, I) into N(0, C), ``C = (I - 2 V V^T)^{-1}``, times
``det(I - 2 V V^T)^{-1/2}``) gives

::

    L_m(U, V) = 1/2 ||U V^T - X*||_F^2 + G(U, V) / m + o(1/m),
    G(U, V) = det(I - 2K)^{-1/2} [ tr(C X*^T P) - 1/2 tr(C P^T P) + 1/2 ||U||_F^2 ],

``K = V V^T``, ``P = U V^T``. G is finite only when ``||V||_2^2 < 1/2``; on S that is
``gamma_1 < 1/2``, gamma_1 the largest singular value of X*. Its next term involves
``E e^{2|u|^2}``, finite only when ``gamma_1 < 1/4``: between 1/4 and 1/2 the correction to the
leading term decays like a power of n between ``n^{-1}`` and ``n^0`` relative to it, so local
slopes approach their limit slowly. G is invariant under ``(U, V) -> (U O, V O)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from . import attention
from ._validation import (MAX_SIZE, as_matrix, check_generator, check_int, check_memory,
                          check_positive, check_positive_entries, finite_result)
from .data import RegressionProblem
from .geometry import factor_hessian
from .population import factor_loss_and_grad, factor_regularizer_and_grad, spd_sqrt

__all__ = ["sample_prompts", "deployed_risk", "context_correction", "first_order_minimizer",
           "FirstOrderMinimizer", "first_order_curve",
           "asymptotic_bias_coefficient",
           "bias_statistic", "BiasEstimate", "local_slopes"]


def sample_prompts(problem: RegressionProblem, prompts: int, n: int, *, rng: np.random.Generator,
                   whiten: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``prompts`` prompts of ``n`` tokens: ``X`` (N, n, d), ``Y`` (N, n, p).

    The N n pairs are ``problem.sample(N n, rng=rng)`` (all inputs, then all noise), cut into
    prompts in order. With ``whiten=True`` the pooled sample is moment-matched: inputs become
    ``x Sigma_hat^{-1/2} Sigma^{1/2}`` (symmetric square roots, Sigma_hat the pooled second
    moment) and targets ``M x + e_perp``, with the pooled noise matrix projected orthogonally to
    the pooled inputs; then the pooled moments are exactly ``Sigma_hat = Sigma`` and
    ``M_hat = M`` (at sigma = 0 the targets are exactly ``M x``), so the spectral start lies on
    the true S and only the finite context remains [choice]. ``prompts`` and ``n`` are at most
    ``MAX_SIZE`` = 10^8 (``attnlib._validation``) and the N n pairs must fit in memory.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib.data import default_problem
    >>> from attnlib.prompts import sample_prompts
    >>> rng = np.random.default_rng(0)
    >>> problem = default_problem(rng=rng, d=3, p=4)
    >>> X, Y = sample_prompts(problem, 5, 8, rng=rng, whiten=True)
    >>> X.shape, Y.shape
    ((5, 8, 3), (5, 8, 4))

    Whitened, the pooled moments are exactly the population ones:

    >>> x, y = X.reshape(-1, 3), Y.reshape(-1, 4)
    >>> bool(np.allclose(x.T @ x / 40, problem.Sigma))
    True
    >>> bool(np.allclose(np.linalg.lstsq(x, y, rcond=None)[0].T, problem.M))
    True
    """
    prompts = check_int("prompts", prompts, minimum=1, maximum=MAX_SIZE)
    n = check_int("n", n, minimum=2, maximum=MAX_SIZE)
    rng = check_generator("rng", rng)
    d, p = problem.d, problem.p
    for name, value in (("n", n), ("prompts", prompts)):
        check_memory(name, value, 3 * 8 * prompts * n * (d + p), "the N n samples X and Y")
    x, y = problem.sample(prompts * n, rng=rng)
    if whiten:
        if prompts * n <= d:
            raise ValueError(f"whitening needs more than d = {d} pooled samples, got N n = "
                             f"{prompts * n}")
        _, inv_half_hat = spd_sqrt(x.T @ x / x.shape[0])
        half, _ = spd_sqrt(problem.Sigma)
        noise = y - x @ problem.M.T
        x = x @ (inv_half_hat @ half)
        noise -= x @ np.linalg.lstsq(x, noise, rcond=None)[0]
        y = x @ problem.M.T + noise
    return x.reshape(prompts, n, d), y.reshape(prompts, n, p)


@finite_result
def deployed_risk(A: np.ndarray, B: np.ndarray, problem: RegressionProblem, n: int, *,
                  rng: np.random.Generator, prompts: int = 20, queries: int = 100
                  ) -> tuple[float, float]:
    """Excess risk of the deployed predictor with a fresh context of n tokens, and its
    standard error.

    For each of ``prompts`` fresh contexts ``x_1..x_n ~ N(0, Sigma)`` and ``queries`` fresh
    queries x, the prediction is ``A sum_i softmax_i(x^T B x_i) x_i``
    (:func:`attnlib.attention.predict_new`); the returned mean is
    ``1/2 ||M x - y_hat||^2`` averaged over all of them (noise-free targets: the risk minus
    ``L* = p sigma^2 / 2``), the standard error that of the per-prompt means. ``n``,
    ``prompts`` and ``queries`` are at most ``MAX_SIZE`` = 10^8 (``attnlib._validation``),
    and one prompt's context and queries must fit in memory.
    """
    n = check_int("n", n, minimum=1, maximum=MAX_SIZE)
    prompts = check_int("prompts", prompts, minimum=2, maximum=MAX_SIZE)
    queries = check_int("queries", queries, minimum=1, maximum=MAX_SIZE)
    rng = check_generator("rng", rng)
    width = problem.d + problem.p
    check_memory("n", n, 3 * 8 * n * width, "the context samples")
    check_memory("queries", queries, 3 * 8 * queries * width, "the query samples")
    means = np.empty(prompts)
    for k in range(prompts):
        context, _ = problem.sample(n, rng=rng)
        x, _ = problem.sample(queries, rng=rng)
        residual = x @ problem.M.T - attention.predict_new(A, B, context, x)
        means[k] = 0.5 * float(np.mean(np.sum(residual ** 2, axis=1)))
    return float(means.mean()), float(means.std(ddof=1) / np.sqrt(prompts))


def _check_barrier(name: str, v: np.ndarray) -> None:
    """Raise ``ValueError`` naming ``name`` unless ``||v||_2^2 < 1/2`` (G is infinite beyond).

    ``v`` is the V of a point, or (``name`` = ``"Xstar"``) of the balanced point of S, where
    ``||V||_2^2 = gamma_1``, the largest singular value of X*."""
    squared = np.linalg.norm(v, 2) ** 2
    if squared >= 0.5:
        bound = ("gamma_1 < 1/2 (its largest singular value, ||V||_2^2 at the balanced point "
                 "of S)" if name == "Xstar" else "||V||_2^2 < 1/2")
        raise ValueError(f"{name} must have {bound}; G is infinite beyond, got {squared:.4g}")


def _factors(U: object, V: object, Xstar: object) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    xstar = as_matrix("Xstar", Xstar)
    p, d = xstar.shape
    return (as_matrix("U", U, shape=(p, d)), as_matrix("V", V, shape=(d, d)), xstar)


@finite_result
def context_correction(U: np.ndarray, V: np.ndarray, Xstar: np.ndarray
                       ) -> tuple[float, np.ndarray, np.ndarray]:
    """The delta-method coefficient G(U, V) of the module docstring and its gradient.

    Returns ``(G, dG/dU, dG/dV)`` in whitened coordinates; the finite-context loss with m
    keys is ``1/2 ||U V^T - X*||^2 + G / m + o(1/m)``. With ``P = U V^T``, ``K = V V^T``,
    ``C = (I - 2K)^{-1}``, ``D = det(I - 2K)^{-1/2}``, ``Phi = tr(C X*^T P) - 1/2 tr(C P^T P)
    + 1/2 ||U||^2``, ``Z = X*^T P - 1/2 P^T P``: ``dG/dU = D ((X* - P) C V + U)`` and
    ``dG/dV = D (C (X* - P)^T U + 2 C (Z + Z^T) C V + 2 Phi C V)``. Raises ``ValueError``
    when ``||V||_2^2 >= 1/2`` (G is infinite there).
    """
    u, v, xstar = _factors(U, V, Xstar)
    _check_barrier("V", v)
    d = v.shape[0]
    k = v @ v.T
    eigenvalues = np.linalg.eigvalsh(k)
    c = np.linalg.inv(np.eye(d) - 2.0 * k)
    c = 0.5 * (c + c.T)
    det_factor = float(np.prod(1.0 - 2.0 * eigenvalues) ** -0.5)
    prod = u @ v.T
    z = xstar.T @ prod - 0.5 * prod.T @ prod
    phi = float(np.sum(c * z.T)) + 0.5 * float(np.sum(u ** 2))
    residual_c = (xstar - prod) @ c
    grad_u = det_factor * (residual_c @ v + u)
    grad_v = det_factor * (residual_c.T @ u + 2.0 * c @ (z + z.T) @ c @ v + 2.0 * phi * c @ v)
    return det_factor * phi, grad_u, grad_v


@dataclass(frozen=True)
class FirstOrderMinimizer:
    """Result of :func:`first_order_minimizer` (whitened coordinates): ``U``, ``V``, the
    excess risk ``1/2 ||U V^T - X*||_F^2``, the value of ``G`` there and the gradient norm."""

    U: np.ndarray
    V: np.ndarray
    excess_risk: float
    correction: float
    grad_norm: float


@finite_result
def first_order_minimizer(Xstar: np.ndarray, m: float, *, lam: float = 1.0,
                          start: tuple[np.ndarray, np.ndarray] | None = None,
                          gtol: float = 1e-10) -> FirstOrderMinimizer:
    """Minimize ``1/2 ||U V^T - X*||^2 + lam/8 ||U^T U - V^T V||^2 + G(U, V) / m`` (L-BFGS).

    This is the delta-method prediction of the minimizer of the prompt-averaged loss with m
    context tokens per query (m = n - 1 under the leave-one-out mask). Without ``start`` it
    starts at the balanced point ``(Phi Gamma^{1/2}, Psi Gamma^{1/2})`` of S and follows the
    minimizer from ``m = 10^6`` down to m in factors of about 2 (from S directly, L-BFGS can
    step past the barrier ``||V||_2^2 = 1/2`` and stall); with ``start`` (e.g. the minimizer at a
    nearby m, :func:`first_order_curve`) it solves at m directly. Raises ``ValueError`` when
    the start has ``||V||_2^2 >= 1/2`` and ``RuntimeError`` when the gradient norm does not
    reach ``gtol``.
    """
    xstar = as_matrix("Xstar", Xstar)
    p, d = xstar.shape
    m = check_positive("m", m)
    gtol = check_positive("gtol", gtol)
    given = start
    if start is None:
        left, values, right_t = np.linalg.svd(xstar, full_matrices=False)
        start = (left * np.sqrt(values), right_t.T * np.sqrt(values))
    u0, v0, _ = _factors(start[0], start[1], xstar)
    _check_barrier("Xstar" if given is None else "start", v0)

    def value_and_grad(z: np.ndarray, contexts: float) -> tuple[float, np.ndarray]:
        u, v = z[: p * d].reshape(p, d), z[p * d:].reshape(d, d)
        if np.linalg.eigvalsh(v @ v.T)[-1] >= 0.5:
            return np.inf, np.zeros_like(z)
        loss, gu, gv = factor_loss_and_grad(u, v, xstar)
        reg, ru, rv = factor_regularizer_and_grad(u, v, lam=lam)
        corr, cu, cv = context_correction(u, v, xstar)
        return (loss + reg + corr / contexts,
                np.concatenate([(gu + ru + cu / contexts).ravel(),
                                (gv + rv + cv / contexts).ravel()]))

    z = np.concatenate([u0.ravel(), v0.ravel()])
    steps = 1 + int(np.ceil(np.log2(1e6 / m))) if m < 1e6 and given is None else 1
    for contexts in np.geomspace(max(float(m), 1e6) if given is None else m, float(m), steps):
        z = optimize.minimize(value_and_grad, z, args=(contexts,), jac=True, method="L-BFGS-B",
                              options=dict(maxiter=20000, maxcor=30, ftol=0.0, gtol=gtol,
                                           maxfun=10 ** 6)).x        # continuation in m
    grad_norm = float(np.linalg.norm(value_and_grad(z, float(m))[1]))
    if not grad_norm <= 10 * gtol * np.sqrt(z.size):
        raise RuntimeError(f"first_order_minimizer stopped at gradient norm {grad_norm:.3g} "
                           f"(m = {m})")
    u, v = z[: p * d].reshape(p, d), z[p * d:].reshape(d, d)
    excess = 0.5 * float(np.sum((u @ v.T - xstar) ** 2))
    return FirstOrderMinimizer(u, v, excess, context_correction(u, v, xstar)[0], grad_norm)


@finite_result
def first_order_curve(Xstar: np.ndarray, m_values: np.ndarray, *, lam: float = 1.0
                      ) -> np.ndarray:
    """Excess risks of :func:`first_order_minimizer` at each m in ``m_values``, computed in
    decreasing m, each solve started at the previous minimizer (one continuation sweep)."""
    values = as_matrix("m_values", m_values, ndim=1)
    check_positive_entries("m_values", values)
    out = np.empty(values.size)
    start = None
    for i in np.argsort(-values):
        result = first_order_minimizer(Xstar, float(values[i]), lam=lam, start=start)
        out[i], start = result.excess_risk, (result.U, result.V)
    return out


@finite_result
def asymptotic_bias_coefficient(Xstar: np.ndarray, *, lam: float = 1.0) -> float:
    """``c2 = lim m^2 (excess risk of the minimizer of L + R + G/m)`` by linear response.

    At the balanced point ``(U*, V*)`` of S the minimizer moves by ``-H^+ grad G / m + o(1/m)``
    (H the Hessian of L + R in (U, V), :func:`attnlib.geometry.factor_hessian`, pseudo-inverse
    on the complement of the O(d) orbit, which grad G does not see), and the excess risk
    ``1/2 ||dU V*^T + U* dV^T||^2`` of that displacement is ``c2 / m^2``. Needs gamma_1 < 1/2.
    """
    xstar = as_matrix("Xstar", Xstar)
    p, d = xstar.shape
    left, values, right_t = np.linalg.svd(xstar, full_matrices=False)
    u, v = left * np.sqrt(values), right_t.T * np.sqrt(values)
    _check_barrier("Xstar", v)
    _, grad_u, grad_v = context_correction(u, v, xstar)
    hessian = factor_hessian(u, v, xstar, lam=lam)
    step = -np.linalg.lstsq(hessian, np.concatenate([grad_u.ravel(), grad_v.ravel()]),
                            rcond=1e-10)[0]
    du, dv = step[: p * d].reshape(p, d), step[p * d:].reshape(d, d)
    return 0.5 * float(np.sum((du @ v.T + u @ dv.T) ** 2))


@dataclass(frozen=True)
class BiasEstimate:
    """Result of :func:`bias_statistic`: ``bias`` (the U-statistic), its jackknife standard
    error ``stderr``, and ``mean_excess`` (the mean of ``1/2 ||Delta_s||^2``, which adds the
    replicates' own fluctuation to the bias)."""

    bias: float
    stderr: float
    mean_excess: float


def bias_statistic(deltas: np.ndarray) -> BiasEstimate:
    """Estimate ``1/2 ||E Delta||_F^2`` from S >= 2 independent replicates ``Delta_s``.

    ``deltas`` (S, ...): e.g. ``U_s V_s^T - X*`` of the minimizers of S independent prompt
    draws, whose excess risk is ``1/2 ||Delta_s||^2`` exactly (sigma = 0, whitened
    coordinates). ``1/2 ||Delta_s||^2`` is biased upward by the fluctuation of one replicate;
    the U-statistic ``1/(S(S-1)) sum_{s != t} 1/2 <Delta_s, Delta_t>`` is unbiased for the
    squared norm of the mean. Its standard error is the jackknife's (NaN for S = 2, where the
    leave-one-out statistic is undefined).
    """
    raw = np.asarray(deltas)
    if raw.dtype.kind not in "iuf":
        raise TypeError(f"deltas must hold real numbers, got dtype {raw.dtype}")
    flat = raw.astype(float)
    if not np.all(np.isfinite(flat)):
        raise ValueError("deltas must be finite")
    if flat.ndim < 2 or flat.shape[0] < 2:
        raise ValueError(f"deltas must have shape (S, ...) with S >= 2 replicates, got "
                         f"{flat.shape}")
    flat = flat.reshape(flat.shape[0], -1)
    s = flat.shape[0]

    def ustat(rows: np.ndarray) -> float:
        total = rows.sum(axis=0)
        count = rows.shape[0]
        return 0.5 * (float(total @ total) - float(np.sum(rows ** 2))) / (count * (count - 1))

    value = ustat(flat)
    mean_excess = 0.5 * float(np.mean(np.sum(flat ** 2, axis=1)))
    if not (np.isfinite(value) and np.isfinite(mean_excess)):
        raise ValueError(f"deltas has entries up to {np.abs(flat).max():.3g}: the statistic "
                         "overflows float64; rescale the input")
    if s == 2:
        return BiasEstimate(value, float("nan"), mean_excess)
    leave_out = np.array([ustat(np.delete(flat, i, axis=0)) for i in range(s)])
    stderr = float(np.sqrt((s - 1) / s * np.sum((leave_out - leave_out.mean()) ** 2)))
    return BiasEstimate(value, stderr, mean_excess)


@finite_result
def local_slopes(n: np.ndarray, values: np.ndarray, stderr: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log-log slopes between neighbouring points and their standard errors.

    For points ``(n_i, v_i)`` with standard errors ``s_i`` (independent), the slope between i
    and i+1 is ``(log v_{i+1} - log v_i) / (log n_{i+1} - log n_i)`` with standard error
    ``sqrt((s_i/v_i)^2 + (s_{i+1}/v_{i+1})^2) / (log n_{i+1} - log n_i)`` (delta method).
    Returns ``(midpoints, slopes, stderrs)``, the midpoints geometric.
    """
    x = as_matrix("n", n, ndim=1)
    v = as_matrix("values", values, shape=(x.size,), ndim=1)
    e = as_matrix("stderr", stderr, shape=(x.size,), ndim=1)
    check_positive_entries("n", x, " for log-log slopes")
    check_positive_entries("values", v, " for log-log slopes")
    step = np.diff(np.log(x))
    slopes = np.diff(np.log(v)) / step
    errors = np.sqrt((e[:-1] / v[:-1]) ** 2 + (e[1:] / v[1:]) ** 2) / step
    return np.sqrt(x[:-1] * x[1:]), slopes, errors
