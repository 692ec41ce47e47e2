"""Population theory of Part I (chapters 2-4): the closed-form loss, its factorization, OLS.

Infinite-data limit [derived, chapter 2]. For x ~ N(0, Sigma), exponential tilting gives
``E[x' exp(u.x')] / E[exp(u.x')] = Sigma u``, so the attention output of a query x tends to
``Sigma B^T x`` and the layer's population loss is

::

    L(A, B) = 1/2 || (A Sigma B^T - M) Sigma^{1/2} ||_F^2 + L*,        L* = p sigma^2 / 2,

with gradient (E = A Sigma B^T - M)

    dL/dA = E Sigma B Sigma,            dL/dB = Sigma E^T A Sigma.

Factorization coordinates [derived]: ``U = A Sigma^{1/2}`` (p x d),
``V = Sigma^{1/2} B Sigma^{1/2}`` (d x d), ``X* = M Sigma^{1/2}``; then
``L = 1/2 ||U V^T - X*||_F^2 + L*``, with ``dL/dU = (U V^T - X*) V``,
``dL/dV = (U V^T - X*)^T U``.  Chain rule back to (A, B): ``dL/dA = (dL/dU) Sigma^{1/2}``,
``dL/dB = Sigma^{1/2} (dL/dV) Sigma^{1/2}``.

Regularizer [choice: the balancing term of Procrustes flow, Tu et al. 2016]:

    R(A, B) = lambda/8 || U^T U - V^T V ||_F^2,
    dR/dU = lambda/2 U (U^T U - V^T V),       dR/dV = -lambda/2 V (U^T U - V^T V).

Its empirical version ``R_hat`` is R with ``Sigma_hat`` in place of Sigma; likewise the
"closed-form" empirical objective plugs ``Sigma_hat`` and ``M_hat`` into L.  ``Q = L + R``.

OLS reference [derived]: for a Gaussian design the least-squares fit
``M_hat = Y^T X (X^T X)^{-1}`` has expected excess risk
``E[1/2 ||(M_hat - M) Sigma^{1/2}||_F^2] = p sigma^2 d / (2 (n - d - 1))`` (mean of an
inverse Wishart matrix), defined for n > d + 1.
"""

from __future__ import annotations

import numpy as np

from ._validation import as_matrix, check_int, check_positive, check_spd, finite_result

__all__ = [
    "spd_sqrt",
    "to_factor",
    "from_factor",
    "target",
    "factor_loss_and_grad",
    "factor_regularizer_and_grad",
    "population_loss",
    "effective_map",
    "population_loss_and_grad",
    "regularizer",
    "regularizer_and_grad",
    "objective_and_grad",
    "empirical_moments",
    "linear_excess_risk",
    "ols_excess_risk",
]


@finite_result
def spd_sqrt(Sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(Sigma^{1/2}, Sigma^{-1/2})``, the symmetric square root and its inverse.

    Computed from the eigendecomposition ``Sigma = W diag(s) W^T``; Sigma must be symmetric
    positive definite (``check_spd``), so a singular covariance raises ``ValueError``.
    """
    sigma = check_spd("Sigma", Sigma)
    eigenvalues, vectors = np.linalg.eigh(sigma)
    half = (vectors * np.sqrt(eigenvalues)) @ vectors.T
    inv_half = (vectors / np.sqrt(eigenvalues)) @ vectors.T
    return 0.5 * (half + half.T), 0.5 * (inv_half + inv_half.T)


def _layer(A: object, B: object, d: int, names: tuple[str, str] = ("A", "B")
           ) -> tuple[np.ndarray, np.ndarray]:
    a = as_matrix(names[0], A, shape=(None, d))
    b = as_matrix(names[1], B, shape=(d, d))
    return a, b


@finite_result
def to_factor(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Map ``(A, B)`` to ``(U, V) = (A Sigma^{1/2}, Sigma^{1/2} B Sigma^{1/2})``."""
    half, _ = spd_sqrt(Sigma)
    a, b = _layer(A, B, half.shape[0])
    return a @ half, half @ b @ half


@finite_result
def from_factor(U: np.ndarray, V: np.ndarray, Sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of :func:`to_factor`: ``(A, B) = (U Sigma^{-1/2}, Sigma^{-1/2} V Sigma^{-1/2})``."""
    _, inv_half = spd_sqrt(Sigma)
    u, v = _layer(U, V, inv_half.shape[0], ("U", "V"))
    return u @ inv_half, inv_half @ v @ inv_half


@finite_result
def target(M: np.ndarray, Sigma: np.ndarray) -> np.ndarray:
    """Return the factorization target ``X* = M Sigma^{1/2}`` (p x d)."""
    half, _ = spd_sqrt(Sigma)
    return as_matrix("M", M, shape=(None, half.shape[0])) @ half


@finite_result
def factor_loss_and_grad(U: np.ndarray, V: np.ndarray,
                         Xstar: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """Return ``(1/2 ||U V^T - X*||_F^2, (U V^T - X*) V, (U V^T - X*)^T U)``.

    This is ``L - L*`` in factorization coordinates and its gradient in (U, V).
    """
    xstar = as_matrix("Xstar", Xstar)
    u = as_matrix("U", U, shape=xstar.shape)
    v = as_matrix("V", V, shape=(xstar.shape[1], xstar.shape[1]))
    residual = u @ v.T - xstar
    return 0.5 * float(np.sum(residual ** 2)), residual @ v, residual.T @ u


@finite_result
def factor_regularizer_and_grad(U: np.ndarray, V: np.ndarray, *, lam: float = 1.0,
                                normalized: bool = False) -> tuple[float, np.ndarray, np.ndarray]:
    """Return ``(lambda/8 ||U^T U - V^T V||_F^2, lambda/2 U D, -lambda/2 V D)``,
    ``D = U^T U - V^T V`` (the balancing regularizer and its gradient in (U, V)).

    ``normalized=True`` gives the scale-invariant form [choice, chapter 6]
    ``R_N = R / T`` with ``T = ||U||_F^2 + ||V||_F^2``: by the quotient rule
    ``dR_N/dU = (dR/dU) / T - 2 R U / T^2`` and ``dR_N/dV = (dR/dV) / T - 2 R V / T^2``.
    R grows like the fourth power of the parameters' scale and R_N like the square, as the
    data term does; both vanish exactly on the balanced set ``U^T U = V^T V``.
    """
    lam = check_positive("lam", lam, allow_zero=True)
    u = as_matrix("U", U)
    v = as_matrix("V", V, shape=(u.shape[1], u.shape[1]))
    return _balancing_and_grad(u, v, lam, normalized)


def _balancing_and_grad(u: np.ndarray, v: np.ndarray, lam: float,
                        normalized: bool) -> tuple[float, np.ndarray, np.ndarray]:
    """:func:`factor_regularizer_and_grad` of checked arguments (for loops that check them
    once, such as :func:`attnlib.algorithm.train`'s objective)."""
    gap = u.T @ u - v.T @ v
    value, grad_u, grad_v = (lam / 8.0 * float(np.sum(gap ** 2)), lam / 2.0 * u @ gap,
                             -lam / 2.0 * v @ gap)
    if not normalized:
        return value, grad_u, grad_v
    total = float(np.sum(u ** 2) + np.sum(v ** 2))
    if total == 0.0:
        raise ValueError("U, V must not both be 0: the normalized regularizer needs "
                         "||U||_F^2 + ||V||_F^2 > 0 (it divides by it)")
    return (value / total, grad_u / total - 2.0 * value * u / total ** 2,
            grad_v / total - 2.0 * value * v / total ** 2)


@finite_result
def population_loss(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray, M: np.ndarray, *,
                    noise_std: float = 0.0) -> float:
    """Return ``L(A, B) = 1/2 ||(A Sigma B^T - M) Sigma^{1/2}||_F^2 + p noise_std^2 / 2``.

    Parameters
    ----------
    A, B : ndarray
        The parameters, shapes (p, d) and (d, d).
    Sigma : ndarray
        Symmetric positive definite (d, d) covariance of x.
    M : ndarray
        (p, d) true map.
    noise_std : float
        Standard deviation of the label noise (>= 0).

    Returns
    -------
    float
        The population (infinite-data) loss.

    Raises
    ------
    ValueError
        For bad shapes, non-SPD ``Sigma`` or negative ``noise_std``.
    """
    return population_loss_and_grad(A, B, Sigma, M, noise_std=noise_std)[0]


@finite_result
def effective_map(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray) -> np.ndarray:
    """The effective linear map ``A Sigma B^T`` (p x d) of the layer in the infinite-data limit.

    The attention output tends to ``A Sigma B^T x``, and the population loss
    ``L(A, B) = 1/2 ||(A Sigma B^T - M) Sigma^{1/2}||_F^2 + L*`` depends on ``(A, B)`` only
    through it. It is therefore invariant under the group of invertible d x d matrices K
    acting by

    ::

        (A, B) -> (A K, B Sigma K^{-T} Sigma^{-1}):   (A K) Sigma (B Sigma K^{-T} Sigma^{-1})^T
                                                      = A Sigma B^T,

    (``(U, V) -> (U G, V G^{-T})`` in the factorization coordinates, ``K = Sigma^{1/2} G
    Sigma^{-1/2}``; the balancing regularizer keeps only orthogonal G). Sampled chains
    (Langevin dynamics) drift along these non-compact orbits, so the raw entries of A and B
    cannot mix: monitor this map (and the loss) with :func:`attnlib.langevin.split_rhat` and
    :func:`attnlib.langevin.effective_sample_size` instead.

    Parameters
    ----------
    A, B : ndarray
        Shapes ``(..., p, d)`` and ``(..., d, d)`` with the same leading (batch, e.g. chain)
        axes, if any.
    Sigma : ndarray
        Symmetric positive definite ``(d, d)`` covariance of x.

    Returns
    -------
    ndarray
        ``A Sigma B^T``, shape ``(..., p, d)``.

    Raises
    ------
    ValueError
        For bad shapes, leading axes that differ, non-finite entries or a non-SPD ``Sigma``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib import population
    >>> rng = np.random.default_rng(0)
    >>> A, B = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    >>> Sigma = np.diag([1.0, 2.0, 0.5])
    >>> K = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, 0.0], [0.5, 0.0, 2.0]])
    >>> moved_A, moved_B = A @ K, B @ Sigma @ np.linalg.inv(K).T @ np.linalg.inv(Sigma)
    >>> maps = population.effective_map(np.stack([A, moved_A]), np.stack([B, moved_B]), Sigma)
    >>> maps.shape, bool(np.allclose(maps[0], maps[1]))
    ((2, 2, 3), True)
    """
    sigma = check_spd("Sigma", Sigma)
    d = sigma.shape[0]
    batch_axes = tuple(range(2, 33))
    a = as_matrix("A", A, shape=(None,) * (np.ndim(A) - 1) + (d,), ndim=batch_axes)
    b = as_matrix("B", B, shape=(None,) * (np.ndim(B) - 2) + (d, d), ndim=batch_axes)
    if a.shape[:-2] != b.shape[:-2]:
        raise ValueError(f"A has leading axes {a.shape[:-2]} and B has {b.shape[:-2]}: the "
                         "leading (batch) axes of A and B must be equal")
    return a @ sigma @ np.swapaxes(b, -1, -2)


@finite_result
def population_loss_and_grad(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray, M: np.ndarray, *,
                             noise_std: float = 0.0) -> tuple[float, np.ndarray, np.ndarray]:
    """Return ``(L, dL/dA, dL/dB)`` with ``dL/dA = E Sigma B Sigma``,
    ``dL/dB = Sigma E^T A Sigma`` and ``E = A Sigma B^T - M``."""
    sigma = check_spd("Sigma", Sigma)
    d = sigma.shape[0]
    a, b = _layer(A, B, d)
    m = as_matrix("M", M, shape=(a.shape[0], d))
    noise_std = check_positive("noise_std", noise_std, allow_zero=True)
    value, weighted = _fit_and_weighted_error(a, b, sigma, m)
    value += a.shape[0] * noise_std ** 2 / 2.0
    return value, weighted @ b @ sigma, weighted.T @ a @ sigma


def _fit_and_weighted_error(a: np.ndarray, b: np.ndarray, sigma: np.ndarray,
                            m: np.ndarray) -> tuple[float, np.ndarray]:
    """``(1/2 ||E Sigma^{1/2}||_F^2, E Sigma)`` with ``E = A Sigma B^T - M``, on checked arrays:
    the noise-free population loss (what :func:`population_loss_and_grad` builds on; also
    recorded along :func:`attnlib.algorithm.train` without re-checking Sigma every step)."""
    error = a @ sigma @ b.T - m
    weighted = error @ sigma                                   # E Sigma
    return 0.5 * float(np.sum(weighted * error)), weighted


@finite_result
def regularizer(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray, *, lam: float = 1.0,
                normalized: bool = False) -> float:
    """Return ``R(A, B) = lambda/8 ||U^T U - V^T V||_F^2`` with (U, V) = :func:`to_factor`
    (divided by ``||U||_F^2 + ||V||_F^2`` with ``normalized=True``)."""
    return regularizer_and_grad(A, B, Sigma, lam=lam, normalized=normalized)[0]


@finite_result
def regularizer_and_grad(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray, *,
                         lam: float = 1.0, normalized: bool = False
                         ) -> tuple[float, np.ndarray, np.ndarray]:
    """Return ``(R, dR/dA, dR/dB)``; pass ``Sigma_hat`` for the empirical ``R_hat``
    (``normalized``: :func:`factor_regularizer_and_grad`).

    ``dR/dA = (dR/dU) Sigma^{1/2}``, ``dR/dB = Sigma^{1/2} (dR/dV) Sigma^{1/2}``.
    """
    half, _ = spd_sqrt(Sigma)
    a, b = _layer(A, B, half.shape[0])
    value, grad_u, grad_v = factor_regularizer_and_grad(a @ half, half @ b @ half, lam=lam,
                                                        normalized=normalized)
    return value, grad_u @ half, half @ grad_v @ half


@finite_result
def objective_and_grad(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray, M: np.ndarray, *,
                       lam: float = 1.0,
                       noise_std: float = 0.0) -> tuple[float, np.ndarray, np.ndarray]:
    """Return ``(Q, dQ/dA, dQ/dB)`` for the regularized population objective ``Q = L + R``.

    With ``Sigma_hat, M_hat`` in place of ``Sigma, M`` this is the closed-form empirical
    objective that Algorithm 1 runs on in ``objective="closed_form"`` mode.
    """
    loss, grad_a, grad_b = population_loss_and_grad(A, B, Sigma, M, noise_std=noise_std)
    reg, reg_a, reg_b = regularizer_and_grad(A, B, Sigma, lam=lam)
    return loss + reg, grad_a + reg_a, grad_b + reg_b


@finite_result
def empirical_moments(X: np.ndarray, Y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(Sigma_hat, M_hat) = (X^T X / n, Y^T X (X^T X)^{-1})``.

    Parameters
    ----------
    X, Y : ndarray
        The n samples, shapes (n, d) and (n, p).

    Returns
    -------
    tuple of ndarray
        ``(Sigma_hat, M_hat)``; ``M_hat`` is the least-squares (OLS) fit.

    Raises
    ------
    ValueError
        When n < d (OLS is not defined) or when ``Sigma_hat`` is singular.
    """
    x = as_matrix("X", X)
    n, d = x.shape
    y = as_matrix("Y", Y, shape=(n, None))
    if n < d:
        raise ValueError(f"X has n = {n} rows but d = {d} columns: the empirical covariance "
                         "is singular and OLS is undefined; need n >= d")
    try:
        sigma_hat = check_spd("Sigma_hat", x.T @ x / n)
    except ValueError as exc:
        raise ValueError("X must have linearly independent columns: the empirical covariance "
                         f"Sigma_hat = X^T X / n is singular ({exc})") from exc
    m_hat = np.linalg.solve(sigma_hat, (y.T @ x / n).T).T
    return sigma_hat, m_hat


@finite_result
def linear_excess_risk(M_fit: np.ndarray, Sigma: np.ndarray, M: np.ndarray) -> float:
    """Return the excess risk ``1/2 ||(M_fit - M) Sigma^{1/2}||_F^2`` of ``y_hat = M_fit x``."""
    sigma = check_spd("Sigma", Sigma)
    m = as_matrix("M", M, shape=(None, sigma.shape[0]))
    diff = as_matrix("M_fit", M_fit, shape=m.shape) - m
    return 0.5 * float(np.sum((diff @ sigma) * diff))


@finite_result
def ols_excess_risk(n: int, d: int, p: int, noise_std: float) -> float:
    """Return the exact expected OLS excess risk ``p sigma^2 d / (2 (n - d - 1))``.

    Gaussian design: ``E[(X^T X)^{-1}] = Sigma^{-1} / (n - d - 1)`` (inverse Wishart), so
    ``E 1/2 ||(M_hat - M) Sigma^{1/2}||^2 = sigma^2/2 * p * tr(Sigma E[(X^T X)^{-1}])``.

    Parameters
    ----------
    n, d, p : int
        Sample size and dimensions.
    noise_std : float
        ``sigma``, the label noise standard deviation (>= 0).

    Returns
    -------
    float
        The expected excess risk of the OLS fit.

    Raises
    ------
    ValueError
        Unless n > d + 1 (the mean is infinite otherwise), or for a negative ``noise_std``.
    """
    d = check_int("d", d, minimum=1)
    p = check_int("p", p, minimum=1)
    n = check_int("n", n, minimum=1)
    noise_std = check_positive("noise_std", noise_std, allow_zero=True)
    if n <= d + 1:
        raise ValueError(f"the OLS risk formula needs n > d + 1, got n = {n} and d = {d}")
    return p * noise_std ** 2 * d / (2.0 * (n - d - 1))
