"""Darcy-flow data: random two-valued coefficients and a flux-form sparse solver (Chapter 11).

The benchmark of Li et al. (Fourier Neural Operator, ICLR 2021) on the unit square
``Omega = (0, 1)^2``:

    -div( a(x) grad u(x) ) = f(x)  in Omega,     u = 0 on the boundary,     f = 1.

Coefficient. ``g ~ N(0, (-Laplacian + tau^2 I)^(-alpha))`` with zero Neumann boundary conditions,
sampled on an ``s x s`` grid through the discrete cosine transform: with i.i.d. standard normals
``xi[k1, k2]`` and ``0 <= k1, k2 < s``,

    coef[k1, k2] = tau^(alpha - 1) (pi^2 (k1^2 + k2^2) + tau^2)^(-alpha / 2),
    L = s coef xi,   L[0, 0] = 0,   g = IDCT-II_ortho(L)        (MATLAB ``idct2``),

then ``a = a_plus`` where ``g >= 0`` and ``a_minus`` elsewhere (recipe: alpha = 2, tau = 3,
a_plus = 12, a_minus = 3). Since the orthonormal DCT is an isometry, the pixel average of
``E[g^2]`` equals ``sum_{k != 0} coef[k]^2`` exactly (used by the tests).

Solver. The ``s x s`` grid holds the nodes ``x_i = i h``, ``h = 1/(s - 1)``; the coefficient is
read at the nodes, boundary nodes carry ``u = 0``, and at every interior node

::

    -(1/h^2) [ a_{i+1/2,j} (u_{i+1,j} - u_{i,j}) - a_{i-1/2,j} (u_{i,j} - u_{i-1,j})
             + a_{i,j+1/2} (u_{i,j+1} - u_{i,j}) - a_{i,j-1/2} (u_{i,j} - u_{i,j-1}) ] = f_{i,j},

with face coefficients the arithmetic means ``a_{i+1/2,j} = (a_{i,j} + a_{i+1,j}) / 2``. The
matrix (symmetric positive definite) is assembled in one vectorised COO call and factorised by
``scipy.sparse.linalg.splu``. The scheme is second order for smooth ``a`` and ``u``.
"""

from __future__ import annotations

import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.fft
import scipy.sparse
import scipy.sparse.linalg

from ._constants import documented
from ._files import atomic_write, not_an_archive, npz_path, restore_hint
from ._progress import progress as _progress
from ._validation import (MAX_SIZE, as_matrix, check_finite, check_generator, check_int,
                          check_memory, check_positive, finite_result)

__all__ = [
    "DarcyDataset",
    "grf_spectrum",
    "sample_grf",
    "threshold",
    "assemble_operator",
    "flux_residual",
    "solve",
    "poisson_series",
    "generate",
    "save",
    "load",
    "MAX_SERIES_TERMS",
]


@finite_result
def grf_spectrum(size: int, *, alpha: float = 2.0, tau: float = 3.0) -> np.ndarray:
    """Return ``coef[k1, k2] = tau^(alpha-1) (pi^2 (k1^2 + k2^2) + tau^2)^(-alpha/2)``.

    Shape ``(size, size)``, ``0 <= k1, k2 < size`` (it must fit in the memory available).
    """
    size = check_int("size", size, minimum=2)
    check_memory("size", size, 4 * 8 * size * size, f"the {size} x {size} spectrum")
    alpha = check_positive("alpha", alpha)
    tau = check_positive("tau", tau)
    k = np.arange(size, dtype=float)
    k1, k2 = np.meshgrid(k, k, indexing="ij")
    return tau ** (alpha - 1.0) * (np.pi**2 * (k1**2 + k2**2) + tau**2) ** (-alpha / 2.0)


@finite_result
def sample_grf(size: int, count: int, *, rng: np.random.Generator, alpha: float = 2.0,
               tau: float = 3.0) -> np.ndarray:
    """Draw ``count`` Gaussian fields ``g = IDCT-II_ortho(size * coef * xi)`` with ``L[0,0] = 0``.

    Returns an array of shape ``(count, size, size)`` (it must fit in the memory available;
    ``count`` is at most ``MAX_SIZE`` = 10^8 of ``attnlib._validation``).
    """
    size = check_int("size", size, minimum=2)
    count = check_int("count", count, minimum=1, maximum=MAX_SIZE)
    check_memory("size", size, 3 * 8 * size * size, f"one field of {size}^2")
    check_memory("count", count, 3 * 8 * count * size * size, f"{count} fields of {size}^2")
    rng = check_generator("rng", rng)
    coef = grf_spectrum(size, alpha=alpha, tau=tau)
    xi = rng.standard_normal((count, size, size))
    spectrum = size * coef * xi
    spectrum[:, 0, 0] = 0.0
    return scipy.fft.idctn(spectrum, type=2, norm="ortho", axes=(1, 2))


def threshold(g: np.ndarray, *, a_plus: float = 12.0, a_minus: float = 3.0) -> np.ndarray:
    """Return ``a = a_plus`` where ``g >= 0`` and ``a_minus`` where ``g < 0`` (any shape)."""
    a_plus = check_positive("a_plus", a_plus)
    a_minus = check_positive("a_minus", a_minus)
    g = as_matrix("g", g, ndim=tuple(range(1, 33)))
    return np.where(g >= 0.0, a_plus, a_minus)


def _check_field(name: str, field: object, size: int | None = None) -> np.ndarray:
    array = as_matrix(name, field, shape=(size, size))
    if array.shape[0] != array.shape[1] or array.shape[0] < 3:
        raise ValueError(f"{name} must be a square grid of at least 3 x 3 nodes, got {array.shape}")
    return array


def assemble_operator(a: np.ndarray) -> scipy.sparse.csc_matrix:
    """Assemble the flux-form five-point matrix on the interior nodes of the grid of ``a``.

    ``a`` is ``s x s`` (nodal values, strictly positive). The unknowns are the ``(s-2)^2``
    interior nodes in row-major order; the returned matrix ``A`` satisfies
    ``(A u)_{i,j} = -(1/h^2) [flux differences]`` as in the module docstring, with ``u = 0`` on
    the boundary already eliminated. ``A`` is symmetric positive definite.
    """
    a = _check_field("a", a)
    if np.any(a <= 0):
        raise ValueError("a must be strictly positive at every node")
    s = a.shape[0]
    m = s - 2
    h2 = (1.0 / (s - 1)) ** 2
    east = 0.5 * (a[1:-1, 1:-1] + a[2:, 1:-1])     # face (i+1/2, j)
    west = 0.5 * (a[1:-1, 1:-1] + a[:-2, 1:-1])    # face (i-1/2, j)
    north = 0.5 * (a[1:-1, 1:-1] + a[1:-1, 2:])    # face (i, j+1/2)
    south = 0.5 * (a[1:-1, 1:-1] + a[1:-1, :-2])   # face (i, j-1/2)
    index = np.arange(m * m).reshape(m, m)
    rows = [index.ravel()]
    cols = [index.ravel()]
    vals = [((east + west + north + south) / h2).ravel()]
    # couplings between interior neighbours: (i, j) -- (i+1, j) and (i, j) -- (i, j+1), both ways
    for first, second, face in ((index[:-1, :], index[1:, :], east[:-1, :]),
                                (index[:, :-1], index[:, 1:], north[:, :-1])):
        rows += [first.ravel(), second.ravel()]
        cols += [second.ravel(), first.ravel()]
        vals += [(-face / h2).ravel()] * 2
    return scipy.sparse.coo_matrix(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
        shape=(m * m, m * m)).tocsc()


def flux_residual(a: np.ndarray, u: np.ndarray, f: np.ndarray | float = 1.0) -> np.ndarray:
    """Return ``-div_h(a grad_h u) - f`` at the interior nodes, computed stencil by stencil.

    Independent of :func:`assemble_operator` (no matrix): the flux-form differences of the
    module docstring are evaluated with array slices on the full ``s x s`` node grid ``u``
    (whose boundary values are used as given). Shape ``(s-2, s-2)``.
    """
    a = _check_field("a", a)
    s = a.shape[0]
    u = _check_field("u", u, s)
    f_interior = check_finite("f", f) if np.ndim(f) == 0 else _check_field("f", f, s)[1:-1, 1:-1]
    h2 = (1.0 / (s - 1)) ** 2
    ax = 0.5 * (a[1:, :] + a[:-1, :])   # faces between rows i and i+1
    ay = 0.5 * (a[:, 1:] + a[:, :-1])   # faces between columns j and j+1
    flux_x = ax * (u[1:, :] - u[:-1, :])
    flux_y = ay * (u[:, 1:] - u[:, :-1])
    div = (flux_x[1:, 1:-1] - flux_x[:-1, 1:-1]) + (flux_y[1:-1, 1:] - flux_y[1:-1, :-1])
    return -div / h2 - f_interior


@finite_result
def solve(a: np.ndarray, f: np.ndarray | float = 1.0) -> np.ndarray:
    """Solve ``-div(a grad u) = f``, ``u = 0`` on the boundary; return ``u`` on all ``s x s`` nodes.

    ``f`` is a scalar or an ``s x s`` array of nodal values (only interior values are used).
    Sparse LU (``splu``) of the flux-form matrix of :func:`assemble_operator`.

    Examples
    --------
    For ``a = 1`` the solution is known in closed form (:func:`poisson_series`); the scheme
    is second order, so halving h divides the error by about 4:

    >>> import numpy as np
    >>> from attnlib import darcy
    >>> def error(s):
    ...     x = np.linspace(0.0, 1.0, s)
    ...     u = darcy.solve(np.ones((s, s)))
    ...     return float(np.abs(u - darcy.poisson_series(x[:, None], x[None, :])).max())
    >>> u = darcy.solve(np.ones((33, 33)))
    >>> u.shape, round(float(u.max()), 3), bool(np.all(u[0] == 0.0))
    ((33, 33), 0.074, True)
    >>> error(33) < 1e-4, round(error(33) / error(65))
    (True, 4)
    """
    a = _check_field("a", a)
    s = a.shape[0]
    if np.ndim(f) == 0:
        rhs = np.full((s - 2) ** 2, check_finite("f", f))
    else:
        rhs = _check_field("f", f, s)[1:-1, 1:-1].ravel()
    interior = scipy.sparse.linalg.splu(assemble_operator(a)).solve(rhs)
    u = np.zeros((s, s))
    u[1:-1, 1:-1] = interior.reshape(s - 2, s - 2)
    return u


def subsampled_solve_error(a_fine: np.ndarray, factor: int) -> float:
    """Relative L2 error of a coarse solve against a fine reference, on the coarse nodes.

    The coarse grid keeps every ``factor``-th node of the fine one (the benchmark's
    subsampling, e.g. 421 -> 85 nodes with ``factor = 5``): with ``u_f = solve(a_fine)`` and
    ``u_c = solve(a_fine[::factor, ::factor])`` it returns
    ``||u_c - u_f[::factor, ::factor]||_2 / ||u_f[::factor, ::factor]||_2``. The error holds both
    the discretisation error of the coarse solve and the coefficient detail it does not see;
    for a discontinuous coefficient it is not second order.
    """
    a_fine = _check_field("a_fine", a_fine)
    factor = check_int("factor", factor, minimum=1)
    if (a_fine.shape[0] - 1) % factor or (a_fine.shape[0] - 1) // factor < 2:
        raise ValueError(f"factor = {factor} must divide the fine grid's {a_fine.shape[0] - 1} "
                         "intervals and leave a coarse grid of at least 3 x 3 nodes")
    reference = solve(a_fine)[::factor, ::factor]
    coarse = solve(a_fine[::factor, ::factor])
    return float(np.linalg.norm(coarse - reference) / np.linalg.norm(reference))


#: Largest ``terms`` of :func:`poisson_series` (the book uses at most 801; the tail is already
#: ``O(1e-10)`` at 10^5).
MAX_SERIES_TERMS = documented(10 ** 5, """\
Largest ``terms`` of ``poisson_series`` (the book uses at most 801; the tail is already
``O(1e-10)`` at 10^5).""")


@finite_result
def poisson_series(x: np.ndarray, y: np.ndarray, *, a: float = 1.0, terms: int = 199) -> np.ndarray:
    """Closed form of ``-a Laplacian u = 1`` on the unit square with ``u = 0`` on the boundary.

    ``u(x, y) = (16 / (a pi^4)) sum_{m, n odd} sin(m pi x) sin(n pi y) / (m n (m^2 + n^2))``,
    summed over odd ``m, n <= terms`` (the tail is ``O(1/terms^2)``; ``terms`` at most
    :data:`MAX_SERIES_TERMS`, and the ``(terms / 2)^2`` weights must fit in memory).
    """
    a = check_positive("a", a)
    terms = check_int("terms", terms, minimum=1, maximum=MAX_SERIES_TERMS)
    x = as_matrix("x", x, ndim=tuple(range(0, 33)))
    y = as_matrix("y", y, ndim=tuple(range(0, 33)))
    half = (terms + 1) // 2
    check_memory("terms", terms, 8 * (2 * half * half + 4 * half * max(x.size, y.size)),
                 "the series")
    try:
        np.broadcast_shapes(x.shape, y.shape)
    except ValueError as exc:
        raise ValueError(f"x and y must have broadcastable shapes, got {x.shape} and "
                         f"{y.shape}") from exc
    odd = np.arange(1, terms + 1, 2, dtype=float)
    sx = np.sin(np.pi * np.multiply.outer(x, odd))          # (..., K)
    sy = np.sin(np.pi * np.multiply.outer(y, odd))
    weights = 1.0 / (odd[:, None] * odd[None, :] * (odd[:, None] ** 2 + odd[None, :] ** 2))
    return 16.0 / (a * np.pi**4) * np.einsum("...m,mn,...n->...", sx, weights, sy)


@dataclass(frozen=True)
class DarcyDataset:
    """Coefficient fields ``a`` and solutions ``u``, both ``(count, s, s)`` on the node grid."""

    a: np.ndarray
    u: np.ndarray
    alpha: float
    tau: float
    a_plus: float
    a_minus: float
    seed: int

    @property
    def size(self) -> int:
        """Grid size ``s`` (nodes per side, boundary included)."""
        return int(self.a.shape[1])

    def __len__(self) -> int:
        return int(self.a.shape[0])


@finite_result
def generate(count: int, size: int, *, seed: int, alpha: float = 2.0, tau: float = 3.0,
             a_plus: float = 12.0, a_minus: float = 3.0, progress: bool = False) -> DarcyDataset:
    """Generate ``count`` Darcy pairs ``(a, u)`` on a ``size x size`` node grid with ``f = 1``.

    The fields come from one ``sample_grf`` call with ``numpy.random.default_rng(seed)``; the
    normals are drawn sample after sample, so the first ``k`` samples do not depend on ``count``
    (at most ``MAX_SIZE`` = 10^8 of ``attnlib._validation``; the fields must fit in memory).

    Examples
    --------
    A two-valued coefficient and its solution, which satisfies the discrete equation
    ``-div_h(a grad_h u) = 1`` at every interior node (:func:`flux_residual`):

    >>> import numpy as np
    >>> from attnlib import darcy
    >>> dataset = darcy.generate(2, 17, seed=0)
    >>> len(dataset), dataset.a.shape, dataset.u.shape
    (2, (2, 17, 17), (2, 17, 17))
    >>> np.unique(dataset.a).tolist()
    [3.0, 12.0]
    >>> bool(np.abs(darcy.flux_residual(dataset.a[0], dataset.u[0])).max() < 1e-9)
    True
    """
    count = check_int("count", count, minimum=1, maximum=MAX_SIZE)
    size = check_int("size", size, minimum=3)
    check_memory("size", size, 5 * 8 * size * size, f"one pair of {size}^2 fields")
    check_memory("count", count, 5 * 8 * count * size * size, f"{count} pairs of {size}^2 fields")
    seed = check_int("seed", seed, minimum=0)
    rng = np.random.default_rng(seed)
    g = sample_grf(size, count, rng=rng, alpha=alpha, tau=tau)
    a = threshold(g, a_plus=a_plus, a_minus=a_minus)
    u = np.empty_like(a)
    for i in _progress(range(count), total=count, desc="Darcy solves", enabled=progress):
        u[i] = solve(a[i])
    return DarcyDataset(a=a, u=u, alpha=float(alpha), tau=float(tau), a_plus=float(a_plus),
                        a_minus=float(a_minus), seed=seed)


_DATASET_KEYS = ("a", "u", "alpha", "tau", "a_plus", "a_minus", "seed")


def save(dataset: DarcyDataset, path: str | Path) -> Path:
    """Save ``dataset`` to a compressed npz (fields as float32, parameters as scalars) at
    ``path`` (``.npz`` appended when missing), atomically: a temporary file in the same folder,
    fsynced, then renamed over the target, so a full disk or an interruption leaves an existing
    file intact. Returns the path written, the argument :func:`load` takes."""
    if not isinstance(dataset, DarcyDataset):
        raise TypeError(f"dataset must be an attnlib.darcy.DarcyDataset, got "
                        f"{type(dataset).__name__}")
    target = npz_path(path, writing=True)
    arrays = dict(a=dataset.a.astype(np.float32), u=dataset.u.astype(np.float32),
                  alpha=dataset.alpha, tau=dataset.tau, a_plus=dataset.a_plus,
                  a_minus=dataset.a_minus, seed=dataset.seed)
    return atomic_write(target, lambda stream: np.savez_compressed(stream, **arrays))


def load(path: str | Path) -> DarcyDataset:
    """Load a dataset written by :func:`save` (fields returned as float64; ``.npz`` appended
    to ``path`` when missing).

    Raises ``FileNotFoundError`` naming the file when it does not exist, and ``ValueError``
    naming the file when it is not an npz archive (saying what it is instead: a Git LFS
    pointer, an HTML page, zeros, a truncated archive), when it cannot be read, when a key is
    missing, or when the fields are not two ``(count, s, s)`` arrays of the same shape.
    """
    path = npz_path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no Darcy dataset at {str(path)!r}; write one with "
                                "attnlib.darcy.save")
    looks = not_an_archive(path)
    if looks is not None:
        raise ValueError(f"Darcy dataset {path} is not an npz archive: it is {looks}; "
                         f"{restore_hint(path)} if it is tracked, or regenerate it with "
                         "attnlib.darcy.generate and attnlib.darcy.save")
    try:
        with np.load(path, allow_pickle=False) as stored:
            missing = [key for key in _DATASET_KEYS if key not in stored.files]
            if missing:
                raise ValueError(f"Darcy dataset {path} has no key {missing[0]!r} (missing: "
                                 f"{missing}); write it with attnlib.darcy.save")
            fields = {key: stored[key] for key in _DATASET_KEYS}
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as exc:
        raise ValueError(f"Darcy dataset {path} is a damaged or truncated npz archive ({exc}); "
                         "regenerate it with attnlib.darcy.generate and attnlib.darcy.save"
                         ) from exc
    except ValueError as exc:
        if str(path) in str(exc):
            raise
        raise ValueError(f"Darcy dataset {path} cannot be read ({exc}); regenerate it with "
                         "attnlib.darcy.generate and attnlib.darcy.save") from exc
    a = as_matrix(f"{path}: key 'a'", fields["a"], ndim=3)
    u = as_matrix(f"{path}: key 'u'", fields["u"], shape=a.shape, ndim=3)
    scalars = {}
    for key in ("alpha", "tau", "a_plus", "a_minus", "seed"):
        value = fields[key]
        if value.shape != () or value.dtype.kind not in "iuf":
            raise ValueError(f"Darcy dataset {path}: key {key!r} must be one number, got an "
                             f"array of shape {value.shape} and dtype {value.dtype}")
        scalars[key] = value[()]
    return DarcyDataset(a=a, u=u, alpha=float(scalars["alpha"]), tau=float(scalars["tau"]),
                        a_plus=float(scalars["a_plus"]), a_minus=float(scalars["a_minus"]),
                        seed=int(scalars["seed"]))
