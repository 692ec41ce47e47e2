"""The orbit of minimizers at finite n: its tangent, its curvature, and methods compared on it.

On the closed form with ``(Sigma_hat, M_hat)`` plugged in, the objective is invariant under
``(U, V) -> (U O, V O)`` for every orthogonal O (chapter 3), so at a minimizer the
``d (d - 1) / 2`` directions ``(U K, V K)``, K skew-symmetric, are exactly flat. The finite
sample tilts them (chapter 6b derives by how much). Everything here works in the flat (U, V)
coordinates ``z = [vec U, vec V]`` of :func:`factor_problem`, where
Algorithm 1's preconditioned step is plain gradient descent:

* :func:`factor_problem` -- an objective as a function of ``z``, counting its evaluations;
* :func:`orbit_tangent` -- an orthonormal basis of ``{(U K, V K) : K^T = -K}`` (or of the
  orbit of another covariance's coordinates);
* :func:`restricted_hessian` -- ``T^T H T`` for a basis T, by central differences of the
  gradient (two evaluations per column);
* :func:`lbfgs`, :func:`newton_polish`, :func:`orbit_nesterov` -- methods that record the
  objective at every iterate against the gradient evaluations spent so far
  (:class:`Trace`), and stop once the value is at or below ``target``;
* :func:`orbit_tilt` -- the slope of the finite-sample loss along the population orbit at a
  point of S, over independent data sets, with the keys shared by all queries (the model) or
  drawn afresh for every query (the contrast that isolates the shared-key term).

:func:`orbit_nesterov` is this book's orbit-aware method [choice]: across the orbit, Nesterov
momentum (:func:`attnlib.optim.trace`) with the curvature step ``eta = 1 / h_max``; along it,
a Newton step ``Q diag(1 / |lambda_i|) Q^T g`` (saddle-free, with a floor on ``|lambda_i|`` and a
bound on its length), where ``Q Lambda Q^T`` is the eigendecomposition of the Hessian restricted
to the orbit tangent, re-measured every ``refresh`` iterations after a warm-up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from . import attention
from ._constants import documented
from ._validation import (as_matrix, check_generator, check_in_range, check_int, check_positive,
                          check_real, check_spd, finite_result)
from .optim import trace
from .population import spd_sqrt
from .reference import ObjectiveFn, _FactorProblem as FactorProblem

__all__ = ["Trace", "factor_problem", "orbit_tangent", "restricted_hessian", "lbfgs", "newton_polish",
           "orbit_nesterov", "OrbitTilt", "orbit_tilt", "MAX_EVALUATIONS", "MAX_LBFGS_MEMORY"]


@dataclass(frozen=True, eq=False)
class Trace:
    """A method's path: ``values[k]`` is the objective at its k-th iterate, reached after
    ``evaluations[k]`` gradient evaluations (including any spent before it started, such as a
    warm-up or a curvature estimate); ``z`` is the last iterate and ``reached`` whether the
    value came to ``target``."""

    values: np.ndarray
    evaluations: np.ndarray
    z: np.ndarray
    reached: bool


def factor_problem(objective: ObjectiveFn, point: tuple[np.ndarray, np.ndarray],
                   Sigma: np.ndarray) -> tuple[FactorProblem, np.ndarray]:
    """``(problem, z)``: ``objective`` (``(A, B) -> (value, dQ/dA, dQ/dB)``) as a function of the
    flat (U, V) coordinates of ``Sigma`` (SPD, d x d), ``U = A Sigma^{1/2}``,
    ``V = Sigma^{1/2} B Sigma^{1/2}``, counting its gradient evaluations
    (``problem.evaluations``; ``problem.value_and_grad(z)``, ``problem.split(z) -> (A, B)``),
    and the flat vector ``z`` of ``point = (A, B)``."""
    return FactorProblem.at(objective, point, Sigma, "point")


def orbit_tangent(problem: FactorProblem, z: np.ndarray,
                  Sigma: np.ndarray | None = None) -> np.ndarray:
    """Orthonormal columns, in ``problem``'s flat coordinates, spanning the tangent at ``z`` of
    the orbit ``(A, B) -> (A W, B W)``, ``W = Sigma^{1/2} O Sigma^{-1/2}``, O orthogonal.

    With ``Sigma`` the problem's own covariance (the default) this is
    ``{(U K, V K) : K^T = -K}`` in its (U, V) coordinates, the orbit along which the closed
    form with that covariance is flat. With another ``Sigma`` (the true covariance, when the
    problem's is a sample estimate) it is the orbit of that covariance's coordinates, along
    which the expected finite-sample loss is flat (chapter 6b). ``d (d - 1) / 2`` columns;
    raises when the point is rank deficient.

    Examples
    --------
    At a point of S the population objective is flat along the orbit: its Hessian restricted
    to the ``d (d - 1) / 2`` tangent directions vanishes (up to the finite differences):

    >>> import numpy as np
    >>> from attnlib import orbit
    >>> from attnlib.data import default_problem
    >>> from attnlib.geometry import minimizer_manifold
    >>> from attnlib.population import objective_and_grad
    >>> problem = default_problem(rng=np.random.default_rng(0), d=3, p=5)
    >>> def objective(A, B):
    ...     return objective_and_grad(A, B, problem.Sigma, problem.M)
    >>> S = minimizer_manifold(problem.Sigma, problem.M)
    >>> flat, z = orbit.factor_problem(objective, S.point(), problem.Sigma)
    >>> tangent = orbit.orbit_tangent(flat, z)
    >>> tangent.shape                               # (p d + d^2, d (d - 1) / 2)
    (24, 3)
    >>> bool(np.abs(orbit.restricted_hessian(flat, z, tangent)).max() < 1e-6)
    True

    From a nearby start, L-BFGS reaches the minimum value 0 of Q:

    >>> start = z + 0.01 * np.random.default_rng(1).standard_normal(z.size)
    >>> orbit.lbfgs(flat, start, target=1e-12, max_evaluations=500).reached
    True
    """
    a, b = problem.split(as_matrix("z", z, shape=(problem.p * problem.d + problem.d ** 2,),
                                   ndim=1))
    half, inv_half = ((problem.half, problem.inv_half) if Sigma is None
                      else spd_sqrt(as_matrix("Sigma", Sigma, shape=(problem.d, problem.d))))
    rows, cols = np.triu_indices(problem.d, k=1)
    columns = []
    for i, j in zip(rows, cols):
        skew = np.zeros((problem.d, problem.d))
        skew[i, j], skew[j, i] = 1.0, -1.0
        twist = half @ skew @ inv_half
        columns.append(problem.flat(a @ twist, b @ twist))
    basis, singular, _ = np.linalg.svd(np.column_stack(columns), full_matrices=False)
    if singular[-1] <= 1e-10 * singular[0]:
        raise ValueError(f"z must be a point of rank d: the orbit tangent there is degenerate "
                         f"(singular values {singular[0]:.3g} ... {singular[-1]:.3g})")
    return basis


def restricted_hessian(problem: FactorProblem, z: np.ndarray, directions: np.ndarray, *,
                       fd_step: float = 1e-5) -> np.ndarray:
    """``T^T H(z) T`` (symmetrized) for the orthonormal columns T of ``directions``: the Hessian
    of ``problem`` restricted to their span, from central differences of the gradient with
    step ``fd_step`` (at most 1, in (U, V) units; two gradient evaluations per column)."""
    point = as_matrix("z", z, shape=(problem.p * problem.d + problem.d ** 2,), ndim=1)
    basis = as_matrix("directions", directions, shape=(point.size, None))
    if not np.allclose(basis.T @ basis, np.eye(basis.shape[1]), atol=1e-8):
        raise ValueError("directions must have orthonormal columns (as orbit_tangent returns)")
    fd_step = _check_fd_step(fd_step)
    try:
        images = np.column_stack([problem.hessp(point, column, fd_step) for column in basis.T])
    except ValueError as error:
        raise ValueError(f"z has no finite gradient nearby ({error})") from error
    matrix = basis.T @ images
    return 0.5 * (matrix + matrix.T)


class _Recorder:
    """Values at the iterates and the evaluations spent, with a stop at ``target``."""

    def __init__(self, problem: FactorProblem, target: float, spent: int) -> None:
        self.problem, self.target, self.spent = problem, float(target), spent
        self.values: list[float] = []
        self.evaluations: list[int] = []

    def record(self, value: float) -> bool:
        """Record an iterate's value; True once it is at or below the target."""
        self.values.append(float(value))
        self.evaluations.append(self.spent + self.problem.evaluations)
        return value <= self.target

    def result(self, z: np.ndarray) -> Trace:
        return Trace(np.asarray(self.values), np.asarray(self.evaluations), np.array(z),
                     bool(self.values) and self.values[-1] <= self.target)


#: Largest gradient-evaluation budget (``max_evaluations``) of :func:`lbfgs`,
#: :func:`newton_polish` and :func:`orbit_nesterov`: hours of work at the book's sizes (its
#: runs spend at most a few thousand), so a mistyped budget fails at once instead of hanging.
MAX_EVALUATIONS = documented(10 ** 7, """\
Largest gradient-evaluation budget (``max_evaluations``) of ``lbfgs``,
``newton_polish`` and ``orbit_nesterov``: hours of work at the book's sizes (its
runs spend at most a few thousand), so a mistyped budget fails at once instead of hanging.""")
#: Largest L-BFGS ``memory`` (correction pairs kept). Scipy stores ``2 memory`` vectors, and
#: beyond a few hundred pairs L-BFGS gains nothing.
MAX_LBFGS_MEMORY = documented(1000, """\
Largest L-BFGS ``memory`` (correction pairs kept). Scipy stores ``2 memory`` vectors, and
beyond a few hundred pairs L-BFGS gains nothing.""")


def _check_run(problem: FactorProblem, z0: object, target: object, max_evaluations: object,
               spent: object) -> tuple[np.ndarray, float, int, int]:
    """The checked start (a finite flat vector of ``problem``'s size), target (a real number,
    not NaN; -inf never stops), budget (1 to :data:`MAX_EVALUATIONS`) and evaluations spent
    before (>= 0, only an offset of the recorded counts)."""
    z = as_matrix("z0", z0, shape=(problem.p * problem.d + problem.d ** 2,), ndim=1)
    level = check_real("target", target)
    if np.isnan(level):
        raise ValueError("target must be a real number (a value of the objective), got NaN")
    return (z, level, check_int("max_evaluations", max_evaluations, minimum=1,
                                maximum=MAX_EVALUATIONS),
            check_int("spent", spent, minimum=0))


def _check_fd_step(fd_step: object) -> float:
    """A finite-difference step in (0, 1] (in (U, V) units)."""
    return check_in_range("fd_step", fd_step, 0.0, 1.0, closed=(False, True))


def _first_evaluation(problem: FactorProblem, z0: np.ndarray) -> tuple[float, np.ndarray]:
    """The value and gradient at the start, with an error naming ``z0`` if they overflow."""
    try:
        return problem.value_and_grad(z0)
    except ValueError as error:
        raise ValueError(f"z0 has no finite objective value ({error})") from error


def lbfgs(problem: FactorProblem, z0: np.ndarray, *, target: float, max_evaluations: int,
          memory: int = 30, spent: int = 0) -> Trace:
    """L-BFGS (``scipy.optimize.minimize``, method L-BFGS-B without bounds, ``memory``
    correction pairs) from ``z0``, with the exact gradient, until the value is at or below
    ``target`` or ``max_evaluations`` gradient evaluations are spent (at most
    :data:`MAX_EVALUATIONS`; ``memory`` at most :data:`MAX_LBFGS_MEMORY`)."""
    z0, target, max_evaluations, spent = _check_run(problem, z0, target, max_evaluations, spent)
    memory = check_int("memory", memory, minimum=1, maximum=MAX_LBFGS_MEMORY)
    recorder = _Recorder(problem, target, spent)
    recorder.record(_first_evaluation(problem, z0)[0])

    def callback(intermediate_result: optimize.OptimizeResult) -> None:
        if recorder.record(intermediate_result.fun):
            raise StopIteration

    result = optimize.minimize(problem.value_and_grad, z0, jac=True, method="L-BFGS-B",
                               callback=callback,
                               options=dict(maxcor=memory, maxfun=max_evaluations, ftol=0.0,
                                            gtol=0.0, maxiter=10 ** 9))
    return recorder.result(result.x)


def newton_polish(problem: FactorProblem, z0: np.ndarray, *, target: float,
                  max_evaluations: int, fd_step: float = 1e-5, spent: int = 0) -> Trace:
    """The trust-region Newton-CG polish of :func:`attnlib.reference.reference_minimizer`
    (``trust-ncg``, Hessian-vector products by central differences: two evaluations each)
    from ``z0``, until the value is at or below ``target`` or about ``max_evaluations``
    gradient evaluations are spent (checked after each Newton iteration; at most
    :data:`MAX_EVALUATIONS`)."""
    z0, target, max_evaluations, spent = _check_run(problem, z0, target, max_evaluations, spent)
    fd_step = _check_fd_step(fd_step)
    recorder = _Recorder(problem, target, spent)
    recorder.record(_first_evaluation(problem, z0)[0])
    last: dict[bytes, tuple[float, np.ndarray]] = {}

    def value_and_grad(w: np.ndarray) -> tuple[float, np.ndarray]:
        """One evaluation per point, though trust-ncg asks for the value and the gradient
        separately."""
        key = w.tobytes()
        if key not in last:
            last.clear()
            last[key] = problem.value_and_grad(w)
        return last[key]

    def callback(intermediate_result: optimize.OptimizeResult) -> None:
        if recorder.record(intermediate_result.fun) or problem.evaluations >= max_evaluations:
            raise StopIteration

    try:
        result = optimize.minimize(lambda w: value_and_grad(w)[0], z0,
                                   jac=lambda w: value_and_grad(w)[1],
                                   method="trust-ncg", callback=callback,
                                   hessp=lambda w, v: problem.hessp(w, v, fd_step),
                                   options=dict(maxiter=10 ** 6, gtol=0.0))
    except ValueError as exc:      # an iterate left the finite numbers
        raise ValueError(f"z0 is a start from which the Newton iterates are not finite "
                         f"({exc}); start closer to a minimizer") from exc
    return recorder.result(result.x)


def orbit_nesterov(problem: FactorProblem, z0: np.ndarray, *, step: float, target: float,
                   max_evaluations: int, decay: float = 0.9, warmup: int = 200,
                   refresh: int = 100, floor: float = 1e-3, radius: float = 0.1,
                   fd_step: float = 1e-5, spent: int = 0) -> Trace:
    """The orbit-aware method of the module docstring from ``z0``.

    For ``warmup`` iterations it is Nesterov momentum with the curvature step on the whole
    gradient (far from a minimizer the orbit curvature is indefinite: -0.017 to 0.048 at the
    spectral start of chapter 5's data). Then, every ``refresh`` iterations, the Hessian
    restricted to :func:`orbit_tangent` at the current iterate is measured
    (:func:`restricted_hessian`) and diagonalized, ``Q Lambda Q^T``, and each iteration splits
    the gradient: the part across the orbit, ``g - Q Q^T g``, takes the Nesterov update of
    :func:`attnlib.optim.trace` with step ``step`` (``m <- step g_perp + decay m``, move
    ``step g_perp + decay m``); the part along it takes the Newton step
    ``Q diag(1 / max(|lambda_i|, floor / step)) Q^T g``, shortened to length ``radius`` if
    longer. ``floor`` bounds the orbit step at ``1 / floor`` times the curvature step. Stops
    when the value is at or below ``target`` or ``max_evaluations`` gradient evaluations are
    spent (at most :data:`MAX_EVALUATIONS`; ``warmup`` and ``refresh`` count iterations, so
    the budget bounds them too).
    """
    z0, target, max_evaluations, spent = _check_run(problem, z0, target, max_evaluations, spent)
    step = check_positive("step", step)
    fd_step = _check_fd_step(fd_step)
    warmup = check_int("warmup", warmup, minimum=0)
    refresh = check_int("refresh", refresh, minimum=1)
    radius = check_positive("radius", radius)
    floor = check_in_range("floor", floor, 0.0, 1.0, closed=(False, True))
    momentum = trace(decay=decay, nesterov=True)
    state = momentum.init((np.asarray(z0, dtype=float),))
    z = np.array(z0, dtype=float)
    recorder = _Recorder(problem, target, spent)
    iteration = 0
    while True:
        if iteration == 0:
            value, gradient = _first_evaluation(problem, z)
        else:
            try:
                value, gradient = problem.value_and_grad(z)
            except ValueError as error:
                raise ValueError(f"step must be smaller: the iterates overflowed at iteration "
                                 f"{iteration} ({error})") from error
        if recorder.record(value) or problem.evaluations >= max_evaluations:
            break
        if iteration >= warmup and (iteration - warmup) % refresh == 0:
            try:
                tangent = orbit_tangent(problem, z)
            except ValueError as error:
                raise ValueError(f"z0 must lead to iterates of rank d, but the iterate at "
                                 f"iteration {iteration} is rank deficient ({error})") from error
            curvature, rotation = np.linalg.eigh(restricted_hessian(problem, z, tangent,
                                                                    fd_step=fd_step))
            basis = tangent @ rotation
            orbit_scale = 1.0 / np.maximum(np.abs(curvature), floor / step)
        newton = np.zeros_like(z)
        if iteration >= warmup:
            along = basis.T @ gradient
            gradient = gradient - basis @ along
            newton = basis @ (orbit_scale * along)
            newton *= min(1.0, radius / max(float(np.linalg.norm(newton)), 1e-300))
        (update,), state = momentum.update((step * gradient,), state)
        z = z - update - newton
        iteration += 1
    return recorder.result(z)


@dataclass(frozen=True, eq=False)
class OrbitTilt:
    """Slopes of ``L_hat`` along the population orbit, one per data set (:func:`orbit_tilt`).

    ``noise_free``: the slope with ``Y = X M^T``; ``noise``: the slope with noisy targets minus
    the noise-free slope on the same inputs (the slope is linear in ``Y``, so this is the part
    the label noise adds)."""

    n: int
    keys: str
    noise_free: np.ndarray
    noise: np.ndarray


@finite_result
def orbit_tilt(A: np.ndarray, B: np.ndarray, Sigma: np.ndarray, M: np.ndarray, n: int, *,
               draws: int, noise_std: float, rng: np.random.Generator,
               keys: str = "shared") -> OrbitTilt:
    """Slope of the leave-one-out loss ``L_hat`` along the population orbit at ``(A, B)``.

    The orbit (chapter 6b, step 2) is ``(A R_t, B R_t)`` with
    ``R_t = Sigma^{1/2} exp(t K) Sigma^{-1/2}``, K a random skew-symmetric matrix of unit
    Frobenius norm drawn once from ``rng``; the slope is::

        dL_hat/dt at t = 0 = <grad_A L_hat, A D> + <grad_B L_hat, B D>,
        D = Sigma^(1/2) K Sigma^(-1/2),

    computed exactly from :func:`attnlib.attention.prompts_loss_and_grad` on ``draws``
    independent data sets of ``n`` samples ``x ~ N(0, Sigma)``, ``y = M x + noise_std z``. With
    ``keys="shared"`` every query attends over the same ``n - 1`` other samples (the model);
    with ``keys="independent"`` each of the ``n`` queries attends over its own ``n - 1`` fresh
    samples (same cost, ``n`` prompts of which only the first query counts). Its expectation is
    zero at a point of S (chapter 6b, step 2); its spread is the tilt.
    """
    a, b = as_matrix("A", A), as_matrix("B", B)
    sigma = check_spd("Sigma", Sigma)
    d = sigma.shape[0]
    a, b = as_matrix("A", a, shape=(None, d)), as_matrix("B", b, shape=(d, d))
    m = as_matrix("M", M, shape=(a.shape[0], d))
    n = check_int("n", n, minimum=2, maximum=20_000)
    draws = check_int("draws", draws, minimum=2, maximum=100_000)
    noise_std = check_positive("noise_std", noise_std, allow_zero=True)
    rng = check_generator("rng", rng)
    if keys not in ("shared", "independent"):
        raise ValueError(f"keys must be 'shared' or 'independent', got {keys!r}")
    half, inv_half = spd_sqrt(sigma)
    skew = rng.standard_normal((d, d))
    skew = (skew - skew.T) / np.linalg.norm(skew - skew.T)
    da, db = a @ half @ skew @ inv_half, b @ half @ skew @ inv_half
    chol = np.linalg.cholesky(sigma)
    prompts, rows = (1, None) if keys == "shared" else (n, np.arange(n) * n)

    def slope(x: np.ndarray, y: np.ndarray) -> float:
        _, grad_a, grad_b = attention.prompts_loss_and_grad(a, b, x, y, rows=rows)
        return float(np.sum(grad_a * da) + np.sum(grad_b * db))

    noise_free, noise = np.empty(draws), np.empty(draws)
    for k in range(draws):
        x = rng.standard_normal((prompts, n, d)) @ chol.T
        clean = x @ m.T
        noise_free[k] = slope(x, clean)
        noise[k] = slope(x, clean + noise_std * rng.standard_normal(clean.shape)) - noise_free[k]
    return OrbitTilt(n=n, keys=keys, noise_free=noise_free, noise=noise)
