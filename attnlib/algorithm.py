"""Algorithm 1 of paper 1 and its baselines (chapters 4-6), built from named pieces.

Every Part I method trains the attention layer (A, B) on an objective

    Q_hat(A, B) = data loss(A, B) + R_hat(A, B)

with one of three data losses (:class:`DataLoss`): the layer's empirical loss L_hat on one
sample set (:func:`empirical_loss`, :func:`attnlib.attention.loss_and_grad`), the layer's loss
averaged over N prompts of context length n (:func:`prompts_loss`, the second reconstruction,
:mod:`attnlib.prompts`), or the infinite-data limit with the empirical moments plugged in,
``1/2 ||(A S B^T - M_hat) S^{1/2}||_F^2`` with ``S = Sigma_hat`` (:func:`closed_form_loss`, fast; chapters 4 and 6). ``R_hat`` is the balancing
regularizer ``lambda/8 ||U^T U - V^T V||_F^2`` built from ``Sigma_hat`` (:mod:`attnlib.population`).

A method (:class:`Method`) is a composition of Algorithm 1's ingredients [seed + choice]:

1. initialization: ``"spectral"`` [seed; the split is a choice] from
   ``M_hat Sigma_hat^{1/2} = Phi Gamma Psi^T``: ``A_0 = Phi Gamma^{1/2} Sigma_hat^{-1/2}``,
   ``B_0 = Sigma_hat^{-1/2} Psi Gamma^{1/2} Sigma_hat^{-1/2}`` (:func:`spectral_init`), so
   ``A_0 Sigma_hat B_0^T = M_hat`` and (A_0, B_0) lies on S_hat; or ``"random"``
   (:func:`random_init`, i.i.d. ``N(0, 0.3^2 / d)`` entries [choice]);
2. regularizer weight ``lam`` (1 in Algorithm 1 [choice: Procrustes-flow balancing term]; 0 off);
3. preconditioner [seed for B; the A side is this book's completion]:
   ``(G_A, G_B) -> (G_A Sigma_hat^{-1}, Sigma_hat^{-1} G_B Sigma_hat^{-1})`` (:func:`precondition`),
   which makes the step exactly gradient descent on ``(U, V) = (A S^{1/2}, S^{1/2} B S^{1/2})``;
4. update rule (:class:`UpdateRule`: :class:`GD`, :class:`Momentum`, :class:`Adam`), composed
   from the gradient transformations of :mod:`attnlib.optim` (``scale``, ``trace``,
   ``scale_by_adam``, ``chain``; Algorithm 1 is ``chain(precondition(Sigma_hat), scale(-eta))``);
5. gradient estimate: full batch, or a minibatch of ``batch_size`` query rows each attending to
   all n keys (SGD; minus itself under the leave-one-out mask);
6. optional renormalization ``(A, B) -> (c A, B / c)`` after each step so that
   ``||Sigma_hat^{1/2} B Sigma_hat^{1/2}||_F <= tau`` [choice standing in for the later version's
   step] (:func:`renormalize`).

:data:`METHODS` lists the five methods of chapter 5; each baseline swaps or drops pieces of
Algorithm 1, so the ablation table reads off that dictionary.

Step-size rule [derived, chapter 4]. With ``N = ||U_0||_F^2 + ||V_0||_F^2`` at the start
(Sigma_hat coordinates), ``s_max = sigma_max(M_hat Sigma_hat^{1/2})`` and ``c = step_scale``,

    eta = c / ((1 + lambda) max(s_max, N))                        (preconditioned)
    eta = c / ((1 + lambda) max(s_max, N) max(||S||, ||S||^2))     (not preconditioned)

Why: the Hessian of the closed-form objective in (U, V) satisfies
``||H(U, V)|| <= s_max + 1.5 (1 + lambda) N <= 2.5 (1 + lambda) max(s_max, N)``, so at the
start ``eta ||H|| <= 2.5 c``, below 2 for c < 0.8; on S, ``||H|| = 2 max(1, lambda) s_max``
and ``eta ||H|| <= 2 c``. Without the preconditioner the (A, B) Hessian is ``J^T H J`` with
``||J||^2 = max(||S||, ||S||^2)``, hence the extra factor. For the empirical attention
objective the bound is that of its infinite-data limit, a proxy (:func:`default_step`).

History (:func:`train`; one entry per iteration k = 0..iterations, or per iteration listed in
``record_at``, recorded before step k+1; ``iteration`` lists them):
``objective`` (Q_hat, also for SGD), ``loss`` (the data loss), ``grad_norm`` (Frobenius norm of
Q_hat's (A, B) gradient), ``dist_P_hat`` (dist_P to S_hat), ``time`` (seconds since the start);
with ``reference`` (a :class:`attnlib.reference.ReferenceOptimum` of the same objective)
``gap = Q_hat - Q_hat*`` and ``dist_ref``, the Frobenius distance in (U, V) coordinates of
Sigma_hat to the reference minimizer (no symmetry quotiented out: the finite-data objective
has none left, its Hessian at the minimizer is positive definite); with ``problem`` (the
truth) ``excess_risk`` (``L(A, B) - L*`` with the true Sigma, M) and ``dist_P`` (to S). With
``test = (X_test, Y_test)`` the deployed predictor (the n training samples as context,
:func:`attnlib.attention.predict_new`) is evaluated every ``test_every`` iterations and at the
last one (iterations in ``test_iteration``): ``test_loss = 1/(2m) sum ||y - y_hat||^2`` and,
with ``problem``, ``test_risk = 1/(2m) sum ||M x - y_hat||^2`` (noise-free targets).
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import Callable, Literal, NamedTuple, Protocol, runtime_checkable

import numpy as np

from . import attention
from ._progress import progress as progress_bar
from ._validation import (MAX_SIZE, DivergenceError, as_matrix, check_generator, check_in_range,
                          check_int, check_memory, check_positive, check_spd, finite_result)
from .data import RegressionProblem
from .geometry import MinimizerManifold, _manifold, minimizer_manifold
from .optim import (EmptyState, NonFiniteError, Transform, _check_state, apply_updates,
                    chain, check_betas, scale, scale_by_adam, trace)
from .population import (_balancing_and_grad, _fit_and_weighted_error, empirical_moments,
                         population_loss_and_grad, regularizer_and_grad, spd_sqrt)
from .reference import (BelowReferenceError, ObjectiveIdentity, ReferenceOptimum,
                        reference_minimizer)
from ._constants import documented
from .runs import SavedRun

__all__ = [
    "Pair", "precondition",
    "GD", "Momentum", "Adam", "Custom", "UpdateRule", "Preconditioner", "Method", "METHODS",
    "DataLoss", "empirical_loss", "prompts_loss", "closed_form_loss", "empirical_objective_and_grad",
    "random_init", "spectral_init", "renormalize", "default_step",
    "TrainResult", "train", "reference_optimum", "GAP_ROUNDOFF",
]

#: A pair of arrays shaped like the parameters (A, B), i.e. parameters, gradients or updates.
Pair = tuple[np.ndarray, np.ndarray]


def _float64_only(**arrays: object) -> None:
    """Refuse floating-point input other than float64: Part I's training runs in float64 end
    to end (the objective, R_hat, the preconditioner, the reference optimum), and converting
    float32 data silently would hide that. The float32 attention kernel is
    ``attention.loss_and_grad(..., dtype=np.float32)``."""
    for name, array in arrays.items():
        dtype = getattr(array, "dtype", None)
        if dtype is not None and np.issubdtype(dtype, np.floating) and dtype != np.float64:
            raise ValueError(f"{name} is {dtype}: attnlib.algorithm trains in float64 only "
                             f"(pass {name}.astype(np.float64)); the float32 attention kernel is "
                             "attnlib.attention.loss_and_grad(..., dtype=np.float32)")


def _moments(Sigma_hat: object, M_hat: object) -> MinimizerManifold:
    """S_hat for the moments, with errors naming ``Sigma_hat`` and ``M_hat``."""
    _float64_only(Sigma_hat=Sigma_hat, M_hat=M_hat)
    sigma = check_spd("Sigma_hat", Sigma_hat)
    return _manifold(sigma, as_matrix("M_hat", M_hat, shape=(None, sigma.shape[0])),
                     name="M_hat")


def _fitted_moments(x: np.ndarray, y: np.ndarray) -> MinimizerManifold:
    """S_hat for the empirical moments of the samples ``x`` (n, d), ``y`` (n, p), with errors
    naming ``X`` (singular Sigma_hat) and ``Y`` (p < d, rank-deficient fit M_hat)."""
    d, p = x.shape[1], y.shape[1]
    if p < d:
        raise ValueError(f"Y has p = {p} outputs < d = {d} inputs: its least-squares fit M_hat "
                         f"has p = {p} rows < d = {d}, and the manifold S of chapter 3 "
                         "(full-rank balanced factors) does not apply; this book needs p >= d")
    return _manifold(*empirical_moments(x, y), name="Y (through M_hat, its least-squares fit)")


def precondition(Sigma_hat: np.ndarray) -> Transform:
    """Algorithm 1's preconditioner, an :mod:`attnlib.optim` transformation:
    ``(G_A, G_B) -> (G_A S^{-1}, S^{-1} G_B S^{-1})``, S = Sigma_hat."""
    _, inv_half = spd_sqrt(check_spd("Sigma_hat", Sigma_hat))
    inverse = inv_half @ inv_half

    def update(grads: Pair, state: EmptyState, params: Pair | None = None
               ) -> tuple[Pair, EmptyState]:
        _check_state("precondition", state, EmptyState, grads)
        return (grads[0] @ inverse, inverse @ grads[1] @ inverse), state

    return Transform(lambda params: EmptyState(), update)


# ----------------------------------------------------------------------------------------
# Update rules: the last piece of a method, turned into a Transform once the step is known.
# ----------------------------------------------------------------------------------------

@runtime_checkable
class UpdateRule(Protocol):
    """The last piece of a method: how a (preconditioned) gradient becomes a step.

    ``eta(default_step)`` is the step size, given the step-size rule as a function of the
    scale ``c`` (module docstring); ``transform(eta)`` is the :mod:`attnlib.optim`
    transformation that turns the gradient into the update. :class:`GD`, :class:`Momentum`
    and :class:`Adam` implement it; so can a new rule, without touching :class:`Method`."""

    def eta(self, default_step: Callable[[float], float]) -> float: ...

    def transform(self, eta: float) -> Transform: ...


def _check_step(step_scale: float, step: float | None) -> None:
    check_positive("step_scale", step_scale)
    if step is not None:
        check_positive("step", step)


@dataclass(frozen=True)
class GD:
    """Gradient step ``-eta g``; ``eta`` from the step-size rule with ``c = step_scale`` unless
    ``step`` is given."""

    step_scale: float = 0.5
    step: float | None = None

    def __post_init__(self) -> None:
        _check_step(self.step_scale, self.step)

    def eta(self, default_step: Callable[[float], float]) -> float:
        return self.step if self.step is not None else default_step(self.step_scale)

    def transform(self, eta: float) -> Transform:
        return scale(-check_positive("eta", eta))


@dataclass(frozen=True)
class Momentum:
    """Heavy-ball (or Nesterov) momentum ``-eta m``, ``m <- g + decay m`` [choice: a remedy for
    the slow directions, chapter 5]; step as for :class:`GD`."""

    decay: float = 0.9
    nesterov: bool = True
    step_scale: float = 0.5
    step: float | None = None

    def __post_init__(self) -> None:
        check_in_range("decay", self.decay, 0.0, 1.0, closed=(True, False))
        _check_step(self.step_scale, self.step)

    def eta(self, default_step: Callable[[float], float]) -> float:
        return self.step if self.step is not None else default_step(self.step_scale)

    def transform(self, eta: float) -> Transform:
        return chain(trace(decay=self.decay, nesterov=self.nesterov),
                     scale(-check_positive("eta", eta)))


@dataclass(frozen=True)
class Adam:
    """Adam with learning rate ``lr`` (its step), ``betas`` and ``eps``."""

    lr: float = 1e-2
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8

    def __post_init__(self) -> None:
        check_positive("lr", self.lr)
        check_betas(self.betas)
        check_positive("eps", self.eps, allow_zero=True)

    def eta(self, default_step: Callable[[float], float]) -> float:
        return self.lr

    def transform(self, eta: float) -> Transform:
        return chain(scale_by_adam(betas=self.betas, eps=self.eps),
                     scale(-check_positive("eta", eta)))


@dataclass(frozen=True)
class Custom:
    """Any gradient transformation as the update rule: ``make(eta)`` returns the
    :class:`attnlib.optim.Transform` for the step ``eta`` (the rule's ``step``, else the
    step-size rule at ``step_scale``), e.g. ``lambda eta: optim.chain(
    optim.add_decayed_weights(1e-3), optim.scale(-eta))`` or, with optax,
    ``lambda eta: optim.from_optax(optax.sgd(eta, momentum=0.9))``. The transformation
    receives the preconditioned gradient and the parameters, and returns the step added to them.
    """

    make: Callable[[float], Transform]
    step_scale: float = 0.5
    step: float | None = None

    def __post_init__(self) -> None:
        if not callable(self.make):
            raise TypeError(f"make must be a function eta -> attnlib.optim.Transform, got "
                            f"{type(self.make).__name__}")
        _check_step(self.step_scale, self.step)

    def eta(self, default_step: Callable[[float], float]) -> float:
        return self.step if self.step is not None else default_step(self.step_scale)

    def transform(self, eta: float) -> Transform:
        transform = self.make(check_positive("eta", eta))
        if not isinstance(transform, Transform):
            raise TypeError(f"Custom.make(eta) must return an attnlib.optim.Transform (wrap an "
                            f"optax transformation with attnlib.optim.from_optax), got "
                            f"{type(transform).__name__}")
        return transform


#: A preconditioner a method can use instead of Algorithm 1's, ``Sigma_hat -> Transform``.
Preconditioner = Callable[[np.ndarray], Transform]


#: The form of Part I's balancing regularizer R_hat (Part II's regularizers are the class
#: :class:`attnlib.regularizers.Regularizer`).
BalancingForm = Literal["balancing", "normalized"]


def _check_regularizer(regularizer: object) -> str:
    if regularizer not in ("balancing", "normalized"):
        raise ValueError(f"regularizer must be 'balancing' or 'normalized', got {regularizer!r}")
    return str(regularizer)


@dataclass(frozen=True)
class Method:
    """A training method as a composition of Algorithm 1's ingredients (module docstring).

    ``init`` ("spectral" or "random", the latter with entries ``N(0, init_scale^2 / d)``),
    ``lam`` (regularizer weight, 0 = off), ``precondition`` (True: Algorithm 1's
    :func:`precondition`; False: none; or a function ``Sigma_hat -> Transform``, a
    :data:`Preconditioner` of the user's, with which the step-size rule is the one without
    preconditioner unless the update rule sets ``step``), ``update`` (:class:`GD`,
    :class:`Momentum`, :class:`Adam`, :class:`Custom`), ``batch_size`` (None = full batch; otherwise SGD over
    query rows), ``tau`` (renormalization bound, None = off; must be at least the balanced
    scale ``sqrt(trace Gamma_hat)``), ``regularizer`` (``"balancing"``, R_hat, or its
    scale-invariant ``"normalized"`` form R_hat / (||U||_F^2 + ||V||_F^2) [choice]).
    """

    init: Literal["spectral", "random"] = "spectral"
    lam: float = 1.0
    precondition: bool | Preconditioner = True
    update: UpdateRule = field(default_factory=GD)
    batch_size: int | None = None
    tau: float | None = None
    init_scale: float = 0.3
    regularizer: BalancingForm = "balancing"

    def __post_init__(self) -> None:
        if self.init not in ("spectral", "random"):
            raise ValueError(f"init must be 'spectral' or 'random', got {self.init!r}")
        _check_regularizer(self.regularizer)
        check_positive("lam", self.lam, allow_zero=True)
        if not (isinstance(self.precondition, bool) or callable(self.precondition)):
            raise TypeError(f"precondition must be True, False or a function Sigma_hat -> "
                            f"attnlib.optim.Transform, got {self.precondition!r}")
        if not isinstance(self.update, UpdateRule):
            raise TypeError(f"update must be an UpdateRule (GD(), Momentum(), Adam(), "
                            f"Custom(make) or an "
                            f"object with eta(default_step) and transform(eta)), got "
                            f"{self.update!r}")
        if self.batch_size is not None:
            check_int("batch_size", self.batch_size, minimum=1)
        if self.tau is not None:
            check_positive("tau", self.tau)
        check_positive("init_scale", self.init_scale)

    def describe(self) -> dict[str, object]:
        """The method's pieces as plain values (for stored runs' JSON config)."""
        def plain(value: object) -> object:
            return getattr(value, "__qualname__", repr(value)) if callable(value) else value

        update = {"rule": type(self.update).__name__,
                  **{key: plain(value) for key, value in self.update.__dict__.items()}}
        return dict(init=self.init, lam=self.lam, precondition=plain(self.precondition),
                    update=update,
                    batch_size=self.batch_size, tau=self.tau, init_scale=self.init_scale,
                    regularizer=self.regularizer)


#: The five methods of chapter 5 by name, Algorithm 1, Algorithm 1 from a random start, and
#: plain gradient descent, SGD and Adam (the last three from a random start, unregularized and
#: unpreconditioned).
METHODS: dict[str, Method] = documented({
    "algorithm1": Method(init="spectral", lam=1.0, precondition=True, update=GD()),
    "random+precond+reg": Method(init="random", lam=1.0, precondition=True, update=GD()),
    "gd": Method(init="random", lam=0.0, precondition=False, update=GD()),
    "sgd": Method(init="random", lam=0.0, precondition=False, update=GD(), batch_size=32),
    "adam": Method(init="random", lam=0.0, precondition=False, update=Adam(lr=1e-2)),
}, """The five methods of chapter 5, by name: Algorithm 1, Algorithm 1 from a random start,
plain gradient descent, SGD and Adam (the last three from a random start, unregularized and
unpreconditioned).""")


# ----------------------------------------------------------------------------------------
# Data losses and the objective.
# ----------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class DataLoss:
    """The data term of Q_hat and the moments (Sigma_hat, M_hat) that the method uses.

    ``kind`` is "empirical" (the attention layer's loss on ``X``, ``Y`` with ``mask``),
    "prompts" (the loss averaged over N prompts ``X`` (N, n, d), ``Y`` (N, n, p), each its own
    context; :func:`attnlib.attention.prompts_loss_and_grad`) or "closed_form"
    (``1/2 ||(A S B^T - M_hat) S^{1/2}||_F^2``). Calling it with ``(A, B)`` (and for the layer's
    losses optionally ``rows``, a minibatch of query rows) returns ``(loss, dloss/dA, dloss/dB)``.
    ``manifold`` is S_hat for (Sigma_hat, M_hat) (pooled over the prompts for "prompts").
    """

    kind: Literal["empirical", "closed_form", "prompts"]
    manifold: MinimizerManifold
    X: np.ndarray | None = None
    Y: np.ndarray | None = None
    mask: attention.Mask = "loo"

    def __post_init__(self) -> None:
        if self.kind not in ("empirical", "closed_form", "prompts"):
            raise ValueError(f"kind must be 'empirical', 'prompts' or 'closed_form', got "
                             f"{self.kind!r}")
        if self.mask not in ("loo", "all"):
            raise ValueError(f"mask must be 'loo' (leave-one-out) or 'all', got {self.mask!r}")
        if self.kind != "closed_form" and (self.X is None or self.Y is None):
            raise ValueError(f"kind={self.kind!r} needs the samples X and Y")

    @property
    def Sigma_hat(self) -> np.ndarray:
        return self.manifold.Sigma

    @property
    def M_hat(self) -> np.ndarray:
        return self.manifold.M

    @property
    def n_queries(self) -> int:
        """Number of query rows a minibatch draws from (n, or N n for prompts; 0 for the
        closed form)."""
        if self.X is None:
            return 0
        return int(self.X.shape[0]) if self.kind == "empirical" else int(np.prod(self.X.shape[:2]))

    def __call__(self, A: np.ndarray, B: np.ndarray,
                 rows: np.ndarray | None = None) -> tuple[float, np.ndarray, np.ndarray]:
        if self.kind == "empirical":
            return attention.loss_and_grad(A, B, self.X, self.Y, mask=self.mask, rows=rows)
        if self.kind == "prompts":
            return attention.prompts_loss_and_grad(A, B, self.X, self.Y, mask=self.mask,
                                                   rows=rows)
        if rows is not None:
            raise ValueError("rows must be None for the closed-form loss (minibatches sample "
                             "query rows of the empirical loss)")
        return population_loss_and_grad(A, B, self.Sigma_hat, self.M_hat)

    @cached_property
    def _digest(self) -> str:
        """SHA-256 of the arrays this loss is built from (X, Y; Sigma_hat, M_hat for the closed
        form; the moments always, since they may be given separately)."""
        digest = hashlib.sha256(self.kind.encode())
        arrays = [self.Sigma_hat, self.M_hat] + ([] if self.X is None else [self.X, self.Y])
        for array in arrays:
            contiguous = np.ascontiguousarray(array, dtype=np.float64)
            digest.update(repr(contiguous.shape).encode())
            digest.update(contiguous.tobytes())
        return digest.hexdigest()

    def identity(self, lam: float, *, regularizer: BalancingForm = "balancing"
                 ) -> ObjectiveIdentity:
        """Which objective ``Q_hat = loss + R_hat`` with ``lam`` and ``regularizer`` this is,
        as a reference optimum records it (:class:`attnlib.reference.ObjectiveIdentity`)."""
        return ObjectiveIdentity(kind=self.kind, mask=self.mask,
                                 lam=float(check_positive("lam", lam, allow_zero=True)),
                                 regularizer=_check_regularizer(regularizer), data=self._digest)

    def objective(self, lam: float, *, regularizer: BalancingForm = "balancing"
                  ) -> Callable[..., tuple[float, float, np.ndarray, np.ndarray]]:
        """``(A, B[, rows]) -> (Q_hat, loss, dQ/dA, dQ/dB)`` with ``Q_hat = loss + R_hat``
        (``regularizer``: the balancing R_hat or its ``"normalized"`` form,
        :func:`attnlib.population.factor_regularizer_and_grad`)."""
        lam = check_positive("lam", lam, allow_zero=True)
        normalized = _check_regularizer(regularizer) == "normalized"
        half = self.manifold.half      # Sigma_hat^{1/2}, computed once (spd_sqrt(Sigma_hat))

        def value_and_grad(A: np.ndarray, B: np.ndarray, rows: np.ndarray | None = None
                           ) -> tuple[float, float, np.ndarray, np.ndarray]:
            loss, grad_a, grad_b = self(A, B, rows)
            if lam == 0:
                return loss, loss, grad_a, grad_b
            # population.regularizer_and_grad with the cached square root: R_hat in
            # (U, V) = (A S^{1/2}, S^{1/2} B S^{1/2}), its gradient mapped back to (A, B).
            reg, reg_u, reg_v = _balancing_and_grad(*self.manifold._factor(A, B), lam,
                                                    normalized)
            return loss + reg, loss, grad_a + reg_u @ half, grad_b + half @ reg_v @ half

        return value_and_grad

    def reference_objective(self, lam: float, *, regularizer: BalancingForm = "balancing"
                            ) -> Callable[[np.ndarray, np.ndarray],
                                          tuple[float, np.ndarray, np.ndarray]]:
        """``(A, B) -> (Q_hat, dQ/dA, dQ/dB)``, the form :mod:`attnlib.reference` minimizes;
        its attribute ``identity`` (:meth:`identity`) tells the reference which objective it
        certifies."""
        full = self.objective(lam, regularizer=regularizer)

        def value_and_grad(A: np.ndarray, B: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            value, _, grad_a, grad_b = full(A, B)
            return value, grad_a, grad_b

        value_and_grad.identity = self.identity(lam, regularizer=regularizer)  # type: ignore[attr-defined]
        return value_and_grad


@finite_result
def empirical_loss(X: np.ndarray, Y: np.ndarray, *, mask: attention.Mask = "loo",
                   moments: tuple[np.ndarray, np.ndarray] | None = None) -> DataLoss:
    """The layer's empirical loss L_hat on ``X`` (n, d), ``Y`` (n, p) with ``mask``.

    Parameters
    ----------
    X, Y : ndarray
        The n samples, shapes (n, d) and (n, p); each row is a query attending to all n rows.
    mask : str
        ``"loo"`` leaves the query out of its own context; ``"all"`` keeps it.
    moments : tuple of ndarray, optional
        ``(Sigma_hat, M_hat)`` overriding the empirical moments (used by R_hat, the
        preconditioner, the spectral start and the step rule).

    Returns
    -------
    DataLoss
        The data term of Q_hat, for :func:`train`.

    Raises
    ------
    ValueError
        For n < d, singular Sigma_hat, p < d or shapes that disagree with ``moments``.
    """
    if mask not in ("loo", "all"):
        raise ValueError(f"mask must be 'loo' (leave-one-out) or 'all', got {mask!r}")
    _float64_only(X=X, Y=Y)
    x = as_matrix("X", X)
    y = as_matrix("Y", Y, shape=(x.shape[0], None))
    manifold = (_fitted_moments(x, y) if moments is None
                else _moments(*moments))                     # checks SPD, p >= d, rank
    p, d = manifold.M.shape
    if x.shape[1] != d or y.shape[1] != p:
        raise ValueError(f"X, Y have shapes {x.shape}, {y.shape}; moments imply d = {d}, p = {p}")
    return DataLoss("empirical", manifold, x, y, mask)


@finite_result
def prompts_loss(X: np.ndarray, Y: np.ndarray, *, mask: attention.Mask = "loo",
                 moments: tuple[np.ndarray, np.ndarray] | None = None) -> DataLoss:
    """The layer's loss averaged over N prompts of context length n (the second reconstruction).

    ``X`` (N, n, d), ``Y`` (N, n, p); query j of prompt k attends over prompt k only (minus
    itself for ``mask="loo"``). ``(Sigma_hat, M_hat)`` are the pooled moments of all N n
    samples (:func:`attnlib.population.empirical_moments`) unless ``moments`` is given; they set
    R_hat, the preconditioner, the spectral start and the step rule, as for
    :func:`empirical_loss`. Raises ``ValueError`` for bad shapes, N n < d or p < d.
    """
    if mask not in ("loo", "all"):
        raise ValueError(f"mask must be 'loo' (leave-one-out) or 'all', got {mask!r}")
    _float64_only(X=X, Y=Y)
    x = as_matrix("X", X, ndim=3)
    y = as_matrix("Y", Y, shape=(x.shape[0], x.shape[1], None), ndim=3)
    if x.shape[1] < 2:
        raise ValueError(f"X must hold prompts of at least 2 tokens, shape (N, n, d), got {x.shape}")
    d, p = x.shape[2], y.shape[2]
    manifold = (_fitted_moments(x.reshape(-1, d), y.reshape(-1, p)) if moments is None
                else _moments(*moments))
    if manifold.M.shape != (p, d):
        raise ValueError(f"X, Y have shapes {x.shape}, {y.shape}; moments imply (p, d) = "
                         f"{manifold.M.shape}")
    return DataLoss("prompts", manifold, x, y, mask)


def closed_form_loss(Sigma_hat: np.ndarray, M_hat: np.ndarray) -> DataLoss:
    """The infinite-data loss with ``(Sigma_hat, M_hat)`` plugged in (chapters 4 and 6):
    ``1/2 ||(A S B^T - M_hat) S^{1/2}||_F^2`` with ``S = Sigma_hat``.

    Parameters
    ----------
    Sigma_hat : ndarray
        Symmetric positive definite (d, d).
    M_hat : ndarray
        (p, d) with p >= d and full column rank of ``M_hat Sigma_hat^{1/2}``.

    Returns
    -------
    DataLoss
        The data term of Q_hat, for :func:`train`.

    Raises
    ------
    ValueError
        When ``Sigma_hat`` is not SPD or ``M_hat`` has the wrong shape or rank.
    """
    return DataLoss("closed_form", _moments(Sigma_hat, M_hat))


@finite_result
def empirical_objective_and_grad(A: np.ndarray, B: np.ndarray, X: np.ndarray, Y: np.ndarray,
                                 Sigma_hat: np.ndarray, *, lam: float = 1.0,
                                 mask: attention.Mask = "loo", rows: np.ndarray | None = None
                                 ) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Return ``(L_hat + R_hat, L_hat, gradient in A, gradient in B)`` (one evaluation,
    without building a :class:`DataLoss`; R_hat uses ``Sigma_hat``)."""
    loss, grad_a, grad_b = attention.loss_and_grad(A, B, X, Y, mask=mask, rows=rows)
    if check_positive("lam", lam, allow_zero=True) == 0:
        return loss, loss, grad_a, grad_b
    reg, reg_a, reg_b = regularizer_and_grad(A, B, check_spd("Sigma_hat", Sigma_hat), lam=lam)
    return loss + reg, loss, grad_a + reg_a, grad_b + reg_b


# ----------------------------------------------------------------------------------------
# Initializations, renormalization, step rule.
# ----------------------------------------------------------------------------------------

def random_init(d: int, p: int, *, rng: np.random.Generator,
                scale: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``A`` (p x d) then ``B`` (d x d) with i.i.d. ``N(0, scale^2 / d)`` entries.

    Parameters
    ----------
    d, p : int
        Input and output dimensions (1 to ``MAX_SIZE`` = 10^8 of ``attnlib._validation``;
        ``A`` and ``B`` must fit in the memory available).
    rng : numpy.random.Generator
        The source of the draws (A first, then B).
    scale : float
        Entry standard deviation times ``sqrt(d)`` (positive).

    Returns
    -------
    tuple of ndarray
        ``(A, B)``.

    Raises
    ------
    ValueError
        For a non-positive ``d``, ``p`` or ``scale``.
    """
    d = check_int("d", d, minimum=1, maximum=MAX_SIZE)
    p = check_int("p", p, minimum=1, maximum=MAX_SIZE)
    check_memory("d", d, 2 * 8 * d * d, "B (d x d)")
    check_memory("p", p, 2 * 8 * p * d, "A (p x d)")
    rng = check_generator("rng", rng)
    scale = check_positive("scale", scale)
    std = scale / np.sqrt(d)
    return std * rng.standard_normal((p, d)), std * rng.standard_normal((d, d))


def spectral_init(Sigma_hat: np.ndarray, M_hat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spectral initialization: the det = +1 point ``O = I`` of S_hat.

    ``M_hat Sigma_hat^{1/2} = Phi Gamma Psi^T`` (thin SVD), ``A_0 = Phi Gamma^{1/2} Sigma_hat^{-1/2}``,
    ``B_0 = Sigma_hat^{-1/2} Psi Gamma^{1/2} Sigma_hat^{-1/2}``; then ``A_0 Sigma_hat B_0^T = M_hat``.

    Parameters
    ----------
    Sigma_hat : ndarray
        Symmetric positive definite (d, d).
    M_hat : ndarray
        (p, d), p >= d, with ``M_hat Sigma_hat^{1/2}`` of full column rank.

    Returns
    -------
    tuple of ndarray
        ``(A_0, B_0)``, shapes (p, d) and (d, d).

    Raises
    ------
    ValueError
        When ``Sigma_hat`` is not SPD or ``M_hat`` has the wrong shape or rank.
    """
    return _moments(Sigma_hat, M_hat).point()


@finite_result
def renormalize(A: np.ndarray, B: np.ndarray, Sigma_hat: np.ndarray,
                tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(c A, B / c)`` with ``c = max(1, ||Sigma_hat^{1/2} B Sigma_hat^{1/2}||_F / tau)``.

    ``A Sigma_hat B^T`` (hence the infinite-data predictor) is unchanged and afterwards
    ``||Sigma_hat^{1/2} B Sigma_hat^{1/2}||_F <= tau``, which bounds the softmax logits.
    (:func:`train` additionally requires tau >= the balanced scale ``sqrt(trace Gamma_hat)``.)

    Parameters
    ----------
    A, B : ndarray
        The parameters, shapes (p, d) and (d, d).
    Sigma_hat : ndarray
        Symmetric positive definite (d, d).
    tau : float
        The bound (positive).

    Returns
    -------
    tuple of ndarray
        ``(c A, B / c)``.

    Raises
    ------
    ValueError
        For bad shapes, a non-SPD ``Sigma_hat`` or a non-positive ``tau``.
    """
    tau = check_positive("tau", tau)
    half, _ = spd_sqrt(check_spd("Sigma_hat", Sigma_hat))
    d = half.shape[0]
    return _renormalize(as_matrix("A", A, shape=(None, d)), as_matrix("B", B, shape=(d, d)),
                        half, tau)


def _renormalize(a: np.ndarray, b: np.ndarray, half: np.ndarray,
                 tau: float) -> tuple[np.ndarray, np.ndarray]:
    """:func:`renormalize` with ``half = Sigma_hat^{1/2}`` given (checked arguments)."""
    factor = max(1.0, float(np.linalg.norm(half @ b @ half)) / tau)
    return factor * a, b / factor


def default_step(A0: np.ndarray, B0: np.ndarray, Sigma_hat: np.ndarray, M_hat: np.ndarray, *,
                 lam: float, precondition: bool, step_scale: float = 0.5) -> float:
    """The step-size rule of the module docstring (a curvature bound covering the start and S):
    ``eta = c / ((1 + lam) max(s_max, ||U_0||_F^2 + ||V_0||_F^2))``, divided further by
    ``max(||S||, ||S||^2)`` without the preconditioner.

    Parameters
    ----------
    A0, B0 : ndarray
        The starting point, shapes (p, d) and (d, d).
    Sigma_hat, M_hat : ndarray
        The moments (Sigma_hat SPD (d, d), M_hat (p, d)).
    lam : float
        Regularizer weight (>= 0).
    precondition : bool
        Whether the step is preconditioned.
    step_scale : float
        The constant ``c`` (positive; below 0.8 keeps ``eta ||H|| < 2`` at the start).

    Returns
    -------
    float
        The step ``eta``.

    Raises
    ------
    ValueError
        For bad shapes, non-SPD ``Sigma_hat``, negative ``lam`` or non-positive ``step_scale``.
    """
    step_scale = check_positive("step_scale", step_scale)
    lam = check_positive("lam", lam, allow_zero=True)
    manifold = _moments(Sigma_hat, M_hat)
    p, d = manifold.M.shape
    u0, v0 = manifold.factor(as_matrix("A0", A0, shape=(p, d)), as_matrix("B0", B0, shape=(d, d)))
    size = float(np.sum(u0 ** 2) + np.sum(v0 ** 2))
    curvature = (1.0 + lam) * max(float(manifold.singular_values[0]), size)
    if not precondition:
        top = float(np.linalg.eigvalsh(manifold.Sigma)[-1])
        curvature *= max(top, top ** 2)
    return step_scale / curvature


# ----------------------------------------------------------------------------------------
# Training.
# ----------------------------------------------------------------------------------------

@dataclass(repr=False)
class TrainResult(SavedRun):
    """Output of :func:`train`: final parameters, per-iteration history, the step used.

    ``history`` maps names to arrays (module docstring); ``stopped`` is true when the callback
    asked to stop. ``config`` records the method and the options. A run that diverges raises
    :class:`attnlib._validation.DivergenceError` (the book's one rule) whose ``result`` is this
    object with the history so far and ``diverged = True``; a returned result always has
    ``diverged = False`` (the field is kept for code that reads it). ``save(path)`` writes it
    to one file and ``TrainResult.load(path)`` reads it back (:mod:`attnlib.runs`);
    ``to_dict()`` gives its fields.
    """

    A: np.ndarray
    B: np.ndarray
    history: dict[str, np.ndarray]
    step: float
    config: dict[str, object] = field(default_factory=dict)
    diverged: bool = False
    stopped: bool = False


def _start(method: Method, data: DataLoss, init: Pair | None,
           rng: np.random.Generator | None) -> Pair:
    """The starting point ``(A_0, B_0)``: ``init`` if given, else ``method.init``'s."""
    p, d = data.M_hat.shape
    if init is not None:
        _float64_only(**{"init[0] (A0)": init[0], "init[1] (B0)": init[1]})
        return (as_matrix("init[0] (A0)", init[0], shape=(p, d)).copy(),
                as_matrix("init[1] (B0)", init[1], shape=(d, d)).copy())
    if method.init == "spectral":
        return data.manifold.point()
    if method.init == "random":
        if rng is None:
            raise ValueError("init='random' needs rng, a numpy.random.Generator")
        return random_init(d, p, rng=rng, scale=method.init_scale)
    raise ValueError(f"method.init must be 'spectral' or 'random', got {method.init!r}")


def _step_size(method: Method, data: DataLoss, a: np.ndarray, b: np.ndarray) -> float:
    """The step: the update rule's, from the step-size rule (the preconditioned one only for
    Algorithm 1's preconditioner)."""
    return method.update.eta(lambda step_scale: default_step(
        a, b, data.Sigma_hat, data.M_hat, lam=method.lam,
        precondition=method.precondition is True, step_scale=step_scale))


def _optimizer(method: Method, data: DataLoss, step: float) -> Transform:
    """The method's gradient transformation: ``chain(preconditioner, rule)``, with the
    preconditioner :func:`precondition` (``method.precondition`` True), none (False) or the
    user's (``method.precondition(Sigma_hat)``), and ``rule`` the update rule at step ``step``
    (for Algorithm 1 ``scale(-eta)``)."""
    if method.precondition is True:
        pieces = [precondition(data.Sigma_hat)]
    elif method.precondition is False:
        pieces = []
    else:
        preconditioner = method.precondition(data.Sigma_hat)
        if not isinstance(preconditioner, Transform):
            raise TypeError(f"method.precondition(Sigma_hat) must return an "
                            f"attnlib.optim.Transform, got {type(preconditioner).__name__}")
        pieces = [preconditioner]
    return chain(*pieces, method.update.transform(step))


def _check_batch_size(method: Method, data: DataLoss,
                      rng: np.random.Generator | None) -> int | None:
    """``method.batch_size`` checked against the data (None: full-batch gradients)."""
    if method.batch_size is None:
        return None
    if data.kind == "closed_form":
        raise ValueError("method.batch_size must be None for the closed-form loss: minibatches "
                         "sample query rows of the empirical loss (or prompts)")
    if rng is None:
        raise ValueError("rng must be a numpy.random.Generator when method.batch_size is set "
                         "(minibatches are drawn with it)")
    batch_size = check_int("method.batch_size", method.batch_size, minimum=1)
    if batch_size > data.n_queries:
        raise ValueError(f"method.batch_size must be at most the number of query rows "
                         f"{data.n_queries}, got {batch_size}")
    return batch_size


def _check_tau(method: Method, data: DataLoss) -> float | None:
    """``method.tau`` checked against the balanced scale (None: no renormalization)."""
    if method.tau is None:
        return None
    tau = check_positive("method.tau", method.tau)
    if tau < data.manifold.balanced_scale * (1 - 1e-12):
        raise ValueError(f"method.tau = {tau:.4g} is below the balanced scale sqrt(trace "
                         f"Gamma_hat) = {data.manifold.balanced_scale:.4g}: renormalizing to it "
                         "would unbalance the parameters and move S_hat; use tau >= that value")
    return tau


#: Bytes per iteration of a history while it is recorded (at most 12 keys, each a Python
#: float in a list and then a float64): what ``iterations`` is checked against up front.
_HISTORY_BYTES = 12 * 40


def _check_record_at(record_at: object, iterations: int) -> frozenset[int] | None:
    """The iterations at which :func:`train` records its history (None: every one)."""
    if record_at is None:
        return None
    points = np.asarray(record_at)
    if points.ndim != 1 or points.size == 0 or points.dtype.kind not in "iu":
        raise ValueError(f"record_at must be a non-empty 1-D array of iteration numbers, got "
                         f"{record_at!r}")
    if np.any(np.diff(points) <= 0) or points[0] < 0 or points[-1] > iterations:
        raise ValueError(f"record_at must increase strictly within [0, iterations = "
                         f"{iterations}], got range [{points.min()}, {points.max()}]")
    return frozenset(int(k) for k in points)


# ----------------------------------------------------------------------------------------
# The recorders: what train measures along the way (not part of Algorithm 1).
# ----------------------------------------------------------------------------------------

class _Iterate(NamedTuple):
    """What a recorder sees at iteration k: the parameters, Q_hat, the data loss and Q_hat's
    full-batch (A, B) gradient."""

    A: np.ndarray
    B: np.ndarray
    value: float
    loss: float
    grad: Pair


class _Recorder(NamedTuple):
    """A named group of history entries: ``measure(iterate)`` returns one float per name."""

    names: tuple[str, ...]
    measure: Callable[[_Iterate], tuple[float, ...]]


def _objective_recorder() -> _Recorder:
    """``objective`` (Q_hat), ``loss`` (the data loss) and ``grad_norm``
    (``sqrt(||dQ/dA||_F^2 + ||dQ/dB||_F^2)``)."""
    def measure(it: _Iterate) -> tuple[float, ...]:
        grad_a, grad_b = it.grad
        return it.value, it.loss, float(np.sqrt(np.sum(grad_a ** 2) + np.sum(grad_b ** 2)))

    return _Recorder(("objective", "loss", "grad_norm"), measure)


def _distance_recorder(name: str, manifold: MinimizerManifold) -> _Recorder:
    """``name``: dist_P from (A, B) to ``manifold`` (S_hat for ``dist_P_hat``, S for ``dist_P``;
    the loop's parameters are not checked again)."""
    return _Recorder((name,), lambda it: (
        manifold._factor_distance(*manifold._factor(it.A, it.B)),))


#: How far below the reference's ``Q_hat*`` a run may go before ``train`` refuses the reference,
#: relative to ``max(1, |Q_hat*|)``. Round-off in the objective (about 1e-15 relative) and the
#: certificate's slack (``||g||^2 / (2 h_min)``, about 1e-13 at the default ``gtol``) lie far
#: below it, while a reference that is not the lowest minimum does not.
GAP_ROUNDOFF = documented(1e-9, """How far below the reference's ``Q_hat*`` a run may go
before ``train`` refuses the reference, relative to ``max(1, |Q_hat*|)``. Round-off in the
objective (about 1e-15 relative) and the certificate's slack (``||g||^2 / (2 h_min)``, about
1e-13 at the default ``gtol``) lie far below it, while a reference that is not the lowest
minimum does not.""")


def _reference_recorder(manifold: MinimizerManifold, reference: ReferenceOptimum) -> _Recorder:
    """``gap = Q_hat - Q_hat*`` and ``dist_ref``, the Frobenius distance in the (U, V)
    coordinates of ``manifold.Sigma`` to the reference minimizer. A gap below
    ``-GAP_ROUNDOFF max(1, |Q_hat*|)`` raises :class:`attnlib.reference.BelowReferenceError`."""
    u_ref, v_ref = manifold.factor(reference.A, reference.B)
    floor = -GAP_ROUNDOFF * max(1.0, abs(reference.value))

    def measure(it: _Iterate) -> tuple[float, ...]:
        gap = it.value - reference.value
        if gap < floor:
            raise BelowReferenceError(
                f"the run reached Q_hat = {it.value:.12g}, {-gap:.3g} below the reference's "
                f"Q_hat* = {reference.value:.12g}: the reference is not the lowest minimum "
                "known of this objective and the gaps measured against it would be wrong; "
                "recompute it from this run's end point (algorithm.reference_optimum(data, "
                "method, start=(result.A, result.B)))")
        u, v = manifold._factor(it.A, it.B)
        return gap, float(np.sqrt(np.sum((u - u_ref) ** 2) + np.sum((v - v_ref) ** 2)))

    return _Recorder(("gap", "dist_ref"), measure)


def _excess_risk_recorder(problem: RegressionProblem) -> _Recorder:
    """``excess_risk``: ``L(A, B) - L* = 1/2 ||(A Sigma B^T - M) Sigma^{1/2}||_F^2``, the
    noise-free infinite-data loss with the true Sigma, M (checked when the problem was made,
    not again at every step)."""
    return _Recorder(("excess_risk",), lambda it: (
        _fit_and_weighted_error(it.A, it.B, problem.Sigma, problem.M)[0],))


def _clock_recorder() -> _Recorder:
    """``time``: seconds since the recorder was made."""
    start = time.perf_counter()
    return _Recorder(("time",), lambda it: (time.perf_counter() - start,))


def _test_recorder(data: DataLoss, test: tuple[np.ndarray, np.ndarray],
                   problem: RegressionProblem | None) -> _Recorder:
    """``test_loss = 1/(2m) sum ||y - y_hat||^2`` of the deployed predictor (the n training
    samples as context, :func:`attnlib.attention.predict_new`) on ``test = (X_test, Y_test)``
    and, with ``problem``, ``test_risk = 1/(2m) sum ||M x - y_hat||^2``."""
    if data.kind != "empirical":
        raise ValueError("test needs the empirical loss (its samples X are the deployed "
                         "context); for prompts see attnlib.prompts.deployed_risk")
    p, d = data.M_hat.shape
    x_test = as_matrix("test[0] (X_test)", test[0], shape=(None, d))
    y_test = as_matrix("test[1] (Y_test)", test[1], shape=(x_test.shape[0], p))

    def measure(it: _Iterate) -> tuple[float, ...]:
        prediction = attention.predict_new(it.A, it.B, data.X, x_test)
        loss = 0.5 * float(np.mean(np.sum((y_test - prediction) ** 2, axis=1)))
        if problem is None:
            return (loss,)
        return loss, 0.5 * float(np.mean(np.sum((x_test @ problem.M.T - prediction) ** 2,
                                                axis=1)))

    return _Recorder(("test_loss",) + (("test_risk",) if problem is not None else ()), measure)


class _History:
    """The history of :func:`train` (module docstring): the ``recorders`` at the iterations in
    ``recorded`` (None: every one), listed in ``iteration``, and the ``test`` recorder every
    ``test_every`` iterations and at the last one, listed in ``test_iteration``."""

    def __init__(self, recorders: list[_Recorder], recorded: frozenset[int] | None,
                 test: _Recorder | None, test_every: int, iterations: int) -> None:
        self.recorders = recorders
        self.recorded = recorded
        self.test = test
        self.test_every = test_every
        self.iterations = iterations
        self.records: dict[str, list[float]] = {name: [] for recorder in recorders
                                                for name in recorder.names}
        self.recorded_iterations: list[int] = []
        self.test_records: dict[str, list[float]] = {
            name: [] for name in ("test_iteration",) + (test.names if test is not None else ())}

    def measure(self, k: int, iterate: _Iterate) -> None:
        """Record iteration ``k`` if it is one of the recorded (and tested) iterations."""
        if self.recorded is None or k in self.recorded:
            self.recorded_iterations.append(k)
            for recorder in self.recorders:
                for name, value in zip(recorder.names, recorder.measure(iterate)):
                    self.records[name].append(value)
        if self.test is not None and (k % self.test_every == 0 or k == self.iterations):
            self.test_records["test_iteration"].append(k)
            for name, value in zip(self.test.names, self.test.measure(iterate)):
                self.test_records[name].append(value)

    def arrays(self) -> dict[str, np.ndarray]:
        """The history as arrays (``iteration`` and ``test_iteration`` integer), each group cut
        to the iterations every one of its recorders reached (a Ctrl-C can stop a
        measurement half way)."""
        count = min(map(len, [self.recorded_iterations, *self.records.values()]))
        history = {key: np.asarray(values[:count], dtype=float)
                   for key, values in self.records.items()}
        history["iteration"] = np.asarray(self.recorded_iterations[:count], dtype=int)
        if self.test is not None:
            tested = min(map(len, self.test_records.values()))
            history.update({key: np.asarray(values[:tested], dtype=float)
                            for key, values in self.test_records.items()})
            history["test_iteration"] = history["test_iteration"].astype(int)
        return history


def _check_reference(reference: object, data: DataLoss, method: Method,
                     objective: Callable[..., tuple[float, float, np.ndarray, np.ndarray]]
                     ) -> ReferenceOptimum | None:
    """``reference`` after checking that it certifies the objective being trained: its
    identity (when it has one) equals this data's and method's, and the objective at its point
    has its value (the check for references of hand-written objectives)."""
    if reference is None:
        return None
    if not isinstance(reference, ReferenceOptimum):
        raise TypeError(f"reference must be an attnlib.reference.ReferenceOptimum, got "
                        f"{type(reference).__name__}")
    trained = data.identity(method.lam, regularizer=method.regularizer)
    if reference.objective is not None and reference.objective != trained:
        raise ValueError(f"reference certifies {reference.objective.describe()}, but train "
                         f"trains {trained.describe()}: its gap would be measured against "
                         "another objective's optimum; use algorithm.reference_optimum(data, "
                         "method)")
    p, d = data.M_hat.shape
    value = objective(as_matrix("reference.A", reference.A, shape=(p, d)),
                      as_matrix("reference.B", reference.B, shape=(d, d)))[0]
    if abs(value - reference.value) > GAP_ROUNDOFF * max(1.0, abs(reference.value)):
        raise ValueError(f"reference.value = {reference.value:.12g}, but the objective being "
                         f"trained ({trained.describe()}) is {value:.12g} at the reference's "
                         "point: the reference certifies another objective; use "
                         "algorithm.reference_optimum(data, method)")
    return reference


def reference_optimum(data: DataLoss, method: Method = METHODS["algorithm1"], *,
                      start: Pair | None = None, gtol: float = 1e-8,
                      hessian: bool = True) -> ReferenceOptimum:
    """The certified reference optimum of the objective ``method`` trains on ``data``:
    :func:`attnlib.reference.reference_minimizer` on ``data.reference_objective(method.lam,
    regularizer=method.regularizer)`` from ``start`` (default the spectral point of S_hat,
    Algorithm 1's start), in the (U, V) coordinates of ``Sigma_hat``.

    It is a local minimum certified by its gradient norm and Hessian spectrum, the lowest one
    known only among the starts tried: try others (for example a run's end point) and keep the
    lowest; :func:`train` refuses it if a run goes below it.

    Parameters
    ----------
    data : DataLoss
        The data term.
    method : Method
        Gives ``lam`` and the regularizer's form.
    start : tuple of ndarray, optional
        ``(A0, B0)``; default ``data.manifold.point()``.
    gtol : float
        Required gradient norm in (U, V) coordinates.
    hessian : bool
        Also compute the Hessian spectrum.

    Returns
    -------
    ReferenceOptimum
        Carrying the objective's identity, so that :func:`train` can check it.

    Examples
    --------
    Plain gradient descent (no regularizer, lam = 0) against its own optimum:

    >>> import numpy as np
    >>> from attnlib import algorithm, data
    >>> rng = np.random.default_rng(0)
    >>> X, Y = data.default_problem(rng=rng, d=3, p=4).sample(100, rng=rng)
    >>> loss = algorithm.empirical_loss(X, Y)
    >>> gd = algorithm.Method(lam=0.0, precondition=False)
    >>> optimum = algorithm.reference_optimum(loss, gd)
    >>> run = algorithm.train(loss, gd, iterations=200, reference=optimum)
    >>> bool(run.history["gap"][-1] < run.history["gap"][0])
    True
    """
    if not isinstance(data, DataLoss):
        raise TypeError(f"data must be an attnlib.algorithm.DataLoss, got {type(data).__name__}")
    if not isinstance(method, Method):
        raise TypeError(f"method must be an attnlib.algorithm.Method, got {type(method).__name__}")
    return reference_minimizer(data.reference_objective(method.lam,
                                                        regularizer=method.regularizer),
                               data.manifold.point() if start is None else start,
                               data.Sigma_hat, gtol=gtol, hessian=hessian)


def _recorders(data: DataLoss, problem: RegressionProblem | None,
               reference: ReferenceOptimum | None) -> list[_Recorder]:
    """The history's recorders for these options, in the order of its keys."""
    recorders = [_objective_recorder(), _distance_recorder("dist_P_hat", data.manifold),
                 _clock_recorder()]
    if reference is not None:
        recorders.append(_reference_recorder(data.manifold, reference))
    if problem is not None:
        recorders += [_excess_risk_recorder(problem),
                      _distance_recorder("dist_P", minimizer_manifold(problem.Sigma, problem.M))]
    return recorders


def train(data: DataLoss, method: Method = METHODS["algorithm1"], *, iterations: int = 2000,
          init: Pair | None = None, problem: RegressionProblem | None = None,
          reference: ReferenceOptimum | None = None,
          test: tuple[np.ndarray, np.ndarray] | None = None, test_every: int = 10,
          rng: np.random.Generator | None = None,
          callback: Callable[[int, np.ndarray, np.ndarray], bool | None] | None = None,
          progress: bool = False, record_at: np.ndarray | None = None) -> TrainResult:
    """Train the attention layer on ``data`` with ``method`` (default: Algorithm 1).

    The loop is Algorithm 1 (chapter 4) with the method's pieces (module docstring): from
    ``(A_0, B_0)`` (renormalized if ``method.tau``), for k = 0, 1, ...: the gradient of
    ``Q_hat = data loss + R_hat`` (full batch, or on a minibatch of query rows), the update
    ``chain(precondition(Sigma_hat), scale(-eta))`` (or the method's preconditioner and update
    rule), the step ``(A, B) + update``, and the optional renormalization. The history is
    recorded alongside by separate recorders.

    Parameters
    ----------
    data : DataLoss
        The data term and moments: :func:`empirical_loss`, :func:`prompts_loss` or
        :func:`closed_form_loss`.
    method : Method
        The composition of initialization, regularizer, preconditioner, update rule, batch
        size and renormalization (default ``METHODS["algorithm1"]``).
    iterations : int
        Number of updates (at most ``MAX_SIZE`` = 10^8 of ``attnlib._validation``, and the
        history must fit in memory); the history has ``iterations + 1`` entries unless the
        callback stopped the run or ``record_at`` thins it.
    init : tuple of ndarray, optional
        An explicit ``(A0, B0)`` overriding ``method.init``.
    problem : RegressionProblem, optional
        The true task, for ``excess_risk``, ``dist_P`` and ``test_risk``.
    reference : ReferenceOptimum, optional
        A certified optimum of the same objective (:func:`reference_optimum`), for ``gap``
        and ``dist_ref``. A reference certified for another objective (another ``lam``,
        regularizer, mask or data) is refused, and so is one the run goes below by more than
        :data:`GAP_ROUNDOFF`.
    test : tuple of ndarray, optional
        Held-out ``(X_test, Y_test)`` for the deployed test loss (needs the empirical loss).
    test_every : int
        Test every this many iterations (and at the last one).
    rng : numpy.random.Generator, optional
        For the random initialization and SGD minibatches.
    callback : callable, optional
        ``callback(k, A, B)`` after iteration k; returning True stops the run.
    progress : bool
        Show a progress bar.
    record_at : ndarray of int, optional
        The iterations (increasing, from 0 to ``iterations``) at which the history is
        recorded; default every one. The other iterations compute only the objective and its
        gradient; ``history["iteration"]`` lists the recorded ones.

    Returns
    -------
    TrainResult
        The final ``(A, B)``, the history (module docstring), the step and the configuration.

    Raises
    ------
    ValueError
        For a non-positive step, an invalid tau or batch size, inconsistent options, float32
        (or other non-float64) data or start: training runs in float64 only; and a reference
        certified for another objective.
    attnlib.reference.BelowReferenceError
        When the run goes below the reference's ``Q_hat*`` (the run so far as ``error.result``).
    attnlib._validation.DivergenceError
        When training diverges (the parameters, the attention logits or the objective stop
        being finite, or the objective exceeds 1e8 times its initial value), with the history
        so far attached (``error.history``, and ``error.result`` a :class:`TrainResult`).
        Only these failures of the library's own checks count as divergence: an exception
        raised by a user's update rule or preconditioner propagates as it is.
    KeyboardInterrupt
        On Ctrl-C, re-raised with the run so far attached like a divergence's:
        ``interrupt.history`` and ``interrupt.result`` (a :class:`TrainResult` with
        ``stopped = True``, whose ``A, B`` are the last parameters reached).

    Examples
    --------
    Algorithm 1 on a small task, its gap to the certified optimum of its own objective:

    >>> import numpy as np
    >>> from attnlib import algorithm, data
    >>> rng = np.random.default_rng(0)
    >>> problem = data.default_problem(rng=rng, d=3, p=4)
    >>> X, Y = problem.sample(100, rng=rng)
    >>> loss = algorithm.empirical_loss(X, Y)
    >>> optimum = algorithm.reference_optimum(loss)
    >>> result = algorithm.train(loss, iterations=300, reference=optimum, problem=problem)
    >>> sorted(result.history)[:5]
    ['dist_P', 'dist_P_hat', 'dist_ref', 'excess_risk', 'gap']
    >>> gap = result.history["gap"]
    >>> print(f"gap {gap[0]:.1e} at the start, {gap[-1]:.1e} after 300 iterations")
    gap 4.3e-03 at the start, 1.5e-04 after 300 iterations
    """
    if not isinstance(data, DataLoss):
        raise TypeError("data must be an attnlib.algorithm.DataLoss (empirical_loss(X, Y), "
                        "prompts_loss(X, Y) or closed_form_loss(Sigma_hat, M_hat)), got "
                        f"{type(data).__name__}")
    if not isinstance(method, Method):
        raise TypeError(f"method must be an attnlib.algorithm.Method, got {type(method).__name__}")
    iterations = check_int("iterations", iterations, minimum=0, maximum=MAX_SIZE)
    check_memory("iterations", iterations, _HISTORY_BYTES * (iterations + 1), "the history")
    test_every = check_int("test_every", test_every, minimum=1)
    if rng is not None:
        check_generator("rng", rng)
    recorded = _check_record_at(record_at, iterations)
    batch_size = _check_batch_size(method, data, rng)
    tau = _check_tau(method, data)
    objective = data.objective(method.lam, regularizer=method.regularizer)  # Q_hat, dQ

    reference = _check_reference(reference, data, method, objective)
    a, b = _start(method, data, init, rng)
    if tau is not None:
        a, b = renormalize(a, b, data.Sigma_hat, tau)
    step = _step_size(method, data, a, b)
    optimizer = _optimizer(method, data, step)
    state = optimizer.init((a, b))

    tester = None if test is None else _test_recorder(data, test, problem)
    history = _History(_recorders(data, problem, reference), recorded, tester, test_every,
                       iterations)
    config = dict(method=method.describe(), step=step, iterations=iterations, data=data.kind,
                  mask=data.mask, init="given" if init is not None else method.init,
                  test_every=test_every)

    def diverged(k: int, what: str) -> DivergenceError:
        so_far = history.arrays()
        return DivergenceError(
            f"algorithm.train, iteration {k}: the run diverged ({what}); reduce the step "
            f"(method.update.step_scale) or use the preconditioner", history=so_far,
            result=TrainResult(A=a, B=b, history=so_far, step=step, config=config,
                               diverged=True))

    initial = None
    stopped = False
    try:
        for k in progress_bar(range(iterations + 1), total=iterations + 1,
                              desc="train", enabled=progress):
            # Q_hat(A_k, B_k) and its full-batch gradient (data loss + regularizer R_hat).
            try:
                value, loss, grad_a, grad_b = objective(a, b)
            except ValueError as exc:
                if k == 0:
                    raise
                raise diverged(k, "the attention logits overflowed float64") from exc
            initial = value if initial is None else initial
            if not np.isfinite(value) or value > 1e8 * max(1.0, initial):
                raise diverged(k, f"objective {value:.3g}, initially {initial:.3g}")
            try:
                history.measure(k, _Iterate(a, b, value, loss, (grad_a, grad_b)))
            except BelowReferenceError as error:
                so_far = history.arrays()
                raise BelowReferenceError(f"algorithm.train, iteration {k}: {error}", result=
                                          TrainResult(A=a, B=b, history=so_far, step=step,
                                                      config=config)) from None
            if callback is not None and callback(k, a, b):
                stopped = True
                break
            if k == iterations:
                break
            if batch_size is not None:          # SGD: the gradient on a minibatch of query rows
                rows = rng.choice(data.n_queries, size=batch_size, replace=False)
                _, _, grad_a, grad_b = objective(a, b, rows)
            # Precondition and step: (A, B) <- (A, B) - eta P(grad) for Algorithm 1.
            try:                                # a non-finite gradient, or a step that overflows
                updates, state = optimizer.update((grad_a, grad_b), state, (a, b))
                a, b = apply_updates((a, b), updates)
            except NonFiniteError as exc:
                raise diverged(k + 1, str(exc)) from exc
            if tau is not None:                 # renormalization (A, B) -> (c A, B / c)
                a, b = _renormalize(a, b, data.manifold.half, tau)
            if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
                raise diverged(k + 1, "the parameters are not finite after the update")
    except KeyboardInterrupt as interrupt:   # Ctrl-C: the run so far, as for a divergence
        so_far = history.arrays()
        interrupt.history = so_far                                     # type: ignore[attr-defined]
        interrupt.result = TrainResult(A=a, B=b, history=so_far,       # type: ignore[attr-defined]
                                       step=step, config=config, stopped=True)
        raise
    return TrainResult(A=a, B=b, history=history.arrays(), step=step, config=config,
                       stopped=stopped)
