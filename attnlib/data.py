"""Data of Part I (chapter 1): Gaussian covariances and the linear-regression sampler.

Paper 1's synthetic task (Goel, Soltanolkotabi, Bartlett 2026) is linear regression with a
Gaussian design:

    x ~ N(0, Sigma) in R^d,     y = M x + eps in R^p,     eps ~ N(0, noise_std^2 I_p).

The book's defaults ([choice], see chapter 1) are d = 10, p = 20, noise_std = 0.1,
``Sigma = Q diag(geomspace(1, 1/kappa, d)) Q^T`` with Q a Haar-random rotation and
kappa = 10, and M with i.i.d. N(0, 1/(p d)) entries. The irreducible loss of any predictor is
``L* = p noise_std^2 / 2`` (half the expected squared norm of eps).

Every random draw goes through an explicit ``numpy.random.Generator``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._constants import documented
from ._validation import (MAX_SIZE, as_matrix, check_generator, check_int, check_memory,
                          check_positive, check_spd, finite_result)

__all__ = [
    "random_rotation",
    "covariance",
    "sample_regression",
    "RegressionProblem",
    "default_problem",
]


#: Largest condition number of :func:`covariance` (beyond it Sigma is singular in float64).
MAX_CONDITION = documented(1e12, """\
Largest condition number of ``covariance`` (beyond it Sigma is singular in float64).""")


def random_rotation(d: int, *, rng: np.random.Generator) -> np.ndarray:
    """Draw a ``(d, d)`` orthogonal matrix from the Haar measure on O(d).

    QR of a matrix G with i.i.d. N(0, 1) entries, ``G = Q R``, with the columns of Q
    multiplied by ``sign(diag R)`` so that the factorization is unique; the result is then
    Haar distributed (Mezzadri 2007).
    """
    d = check_int("d", d, minimum=1)
    check_memory("d", d, 4 * 8 * d * d, "the d x d matrices")
    rng = check_generator("rng", rng)
    gaussian = rng.standard_normal((d, d))
    q, r = np.linalg.qr(gaussian)
    signs = np.sign(np.diag(r))
    signs[signs == 0] = 1.0
    return q * signs


def covariance(d: int, *, kappa: float = 10.0, spectrum: np.ndarray | None = None,
               rng: np.random.Generator | None = None, rotate: bool = True) -> np.ndarray:
    """Return ``Sigma = Q diag(lambda) Q^T`` with a geometric or given spectrum.

    ``lambda = geomspace(1, 1/kappa, d)`` (largest eigenvalue 1, condition number ``kappa``)
    unless ``spectrum`` (d positive numbers) is given. ``Q`` is a Haar-random rotation drawn
    from ``rng`` when ``rotate`` is true (``rng`` is then required); otherwise ``Q = I`` and
    Sigma is diagonal. The result is exactly symmetric.

    Examples
    --------
    The eigenvalues are ``geomspace(1, 1/kappa, d)``, whatever the rotation:

    >>> import numpy as np
    >>> from attnlib.data import covariance
    >>> Sigma = covariance(4, kappa=100.0, rng=np.random.default_rng(0))
    >>> Sigma.shape, bool(np.array_equal(Sigma, Sigma.T))
    ((4, 4), True)
    >>> [round(float(v), 3) for v in np.linalg.eigvalsh(Sigma)]
    [0.01, 0.046, 0.215, 1.0]
    >>> covariance(3, kappa=4.0, rotate=False).diagonal().tolist()
    [1.0, 0.5, 0.25]
    """
    d = check_int("d", d, minimum=1)
    check_memory("d", d, 4 * 8 * d * d, "the d x d matrices")
    if spectrum is None:
        kappa = check_positive("kappa", kappa)
        if not 1 <= kappa <= MAX_CONDITION:
            raise ValueError(f"kappa must lie in [1, {MAX_CONDITION:g}] (a condition number; "
                             f"above, Sigma is singular in float64), got {kappa!r}")
        eigenvalues = np.geomspace(1.0, 1.0 / kappa, d)
    else:
        eigenvalues = as_matrix("spectrum", spectrum, shape=(d,), ndim=1)
        if np.any(eigenvalues <= 0):
            raise ValueError("spectrum must contain only positive eigenvalues, "
                             f"got minimum {eigenvalues.min():.3g}")
    if not rotate:
        return np.diag(eigenvalues)
    if rng is None:
        raise TypeError("covariance(..., rotate=True) needs rng, a numpy.random.Generator")
    rotation = random_rotation(d, rng=rng)
    sigma = (rotation * eigenvalues) @ rotation.T
    return 0.5 * (sigma + sigma.T)


def sample_regression(n: int, Sigma: np.ndarray, M: np.ndarray, noise_std: float, *,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Draw n i.i.d. pairs: rows of ``X`` (n, d) are ``x ~ N(0, Sigma)``; ``Y = X M^T + E``.

    ``x = L z`` with ``L`` the Cholesky factor of Sigma and ``z ~ N(0, I_d)``; the rows of
    ``E`` (n, p) are ``N(0, noise_std^2 I_p)``. Draw order: all of Z, then all of E. ``n`` is
    at most ``MAX_SIZE`` = 10^8 (``attnlib._validation``), and X and Y must fit in memory.

    Examples
    --------
    The sample covariance of the rows of X tends to Sigma (entrywise error about
    ``sqrt(2 / n)``), and without noise ``Y = X M^T`` exactly:

    >>> import numpy as np
    >>> from attnlib.data import covariance, sample_regression
    >>> rng = np.random.default_rng(0)
    >>> Sigma = covariance(3, kappa=10.0, rng=rng)
    >>> M = rng.standard_normal((2, 3))
    >>> X, Y = sample_regression(20_000, Sigma, M, 0.1, rng=rng)
    >>> X.shape, Y.shape
    ((20000, 3), (20000, 2))
    >>> bool(np.allclose(X.T @ X / len(X), Sigma, atol=0.05))
    True
    >>> X, Y = sample_regression(5, Sigma, M, 0.0, rng=rng)
    >>> bool(np.allclose(Y, X @ M.T))
    True
    """
    n = check_int("n", n, minimum=1, maximum=MAX_SIZE)
    sigma = check_spd("Sigma", Sigma)
    d = sigma.shape[0]
    m = as_matrix("M", M, shape=(None, d))
    check_memory("n", n, 3 * 8 * n * (d + m.shape[0]), "the samples X and Y")
    noise_std = check_positive("noise_std", noise_std, allow_zero=True)
    rng = check_generator("rng", rng)
    chol = np.linalg.cholesky(sigma)
    x = rng.standard_normal((n, d)) @ chol.T
    y = x @ m.T + noise_std * rng.standard_normal((n, m.shape[0]))
    return x, y


@dataclass(frozen=True, eq=False)
class RegressionProblem:
    """A regression task ``x ~ N(0, Sigma)``, ``y = M x + eps``, ``eps ~ N(0, noise_std^2 I)``.

    ``L_star = p noise_std^2 / 2`` is the population loss of the best possible predictor
    ``y_hat = M x`` under the book's loss ``1/2 E||y - y_hat||^2``.
    """

    Sigma: np.ndarray
    M: np.ndarray
    noise_std: float

    def __post_init__(self) -> None:
        sigma = check_spd("Sigma", self.Sigma)
        m = as_matrix("M", self.M, shape=(None, sigma.shape[0]))
        object.__setattr__(self, "Sigma", sigma)
        object.__setattr__(self, "M", m)
        object.__setattr__(self, "noise_std",
                           check_positive("noise_std", self.noise_std, allow_zero=True))

    @property
    def d(self) -> int:
        """Input dimension."""
        return int(self.Sigma.shape[0])

    @property
    def p(self) -> int:
        """Output dimension."""
        return int(self.M.shape[0])

    @property
    def L_star(self) -> float:
        """Irreducible loss ``p noise_std^2 / 2``."""
        return self.p * self.noise_std ** 2 / 2.0

    def sample(self, n: int, *, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Draw ``(X, Y)`` with n rows each; see :func:`sample_regression`.

        Examples
        --------
        The residual ``Y - X M^T`` is the label noise, of standard deviation ``noise_std``:

        >>> import numpy as np
        >>> from attnlib.data import default_problem
        >>> rng = np.random.default_rng(0)
        >>> problem = default_problem(rng=rng, d=3, p=4, noise_std=0.5)
        >>> X, Y = problem.sample(10_000, rng=rng)
        >>> X.shape, Y.shape
        ((10000, 3), (10000, 4))
        >>> round(float(np.std(Y - X @ problem.M.T)), 2)
        0.5
        """
        return sample_regression(n, self.Sigma, self.M, self.noise_std, rng=rng)


@finite_result
def default_problem(*, rng: np.random.Generator, d: int = 10, p: int = 20,
                    kappa: float = 10.0, noise_std: float = 0.1) -> RegressionProblem:
    """The book's default task [choice]: Sigma from :func:`covariance` (random rotation,
    geometric spectrum with condition number ``kappa``), then M with i.i.d. N(0, 1/(p d))
    entries, drawn in that order from ``rng``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The source of Sigma's rotation and of M.
    d, p : int
        Input and output dimensions (1 to ``MAX_SIZE`` = 10^8 of ``attnlib._validation``;
        Sigma and M must fit in the memory available).
    kappa : float
        Condition number of Sigma (at least 1).
    noise_std : float
        Label noise standard deviation (>= 0).

    Returns
    -------
    RegressionProblem
        ``y = M x + noise``, ``x ~ N(0, Sigma)``; its ``sample(n, rng=...)`` draws data.

    Raises
    ------
    ValueError
        For non-positive dimensions, ``kappa`` out of range or negative ``noise_std``.

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib.data import default_problem
    >>> rng = np.random.default_rng(0)
    >>> problem = default_problem(rng=rng)          # d = 10, p = 20, kappa = 10
    >>> problem.d, problem.p, round(problem.L_star, 4)      # L* = p noise_std^2 / 2
    (10, 20, 0.1)
    >>> round(float(np.linalg.cond(problem.Sigma)), 6)
    10.0
    >>> X, Y = problem.sample(100, rng=rng)
    >>> X.shape, Y.shape
    ((100, 10), (100, 20))
    """
    d = check_int("d", d, minimum=1, maximum=MAX_SIZE)
    p = check_int("p", p, minimum=1, maximum=MAX_SIZE)
    check_memory("d", d, 4 * 8 * d * d, "the d x d matrices")
    check_memory("p", p, 3 * 8 * p * d, "M (p x d)")
    rng = check_generator("rng", rng)
    sigma = covariance(d, kappa=kappa, rng=rng)
    m = rng.standard_normal((p, d)) / np.sqrt(p * d)
    return RegressionProblem(Sigma=sigma, M=m, noise_std=noise_std)
