"""Algorithm 1 of paper 1 and its baselines (chapters 4-6): one training routine, many options.

:func:`train` runs first-order training of the attention layer (A, B) on

    objective = L_hat(A, B) + R_hat(A, B)                         (objective="empirical")
    objective = 1/2 ||(A S B^T - M_hat) S^{1/2}||_F^2 + R_hat(A, B)  (objective="closed_form")

where L_hat is the layer's empirical loss (:func:`attnlib.attention.loss_and_grad`), R_hat the
balancing regularizer with ``S = Sigma_hat`` (:mod:`attnlib.population`) and the closed form is
the population loss with the empirical moments plugged in (fast; chapters 4 and 6).

Its defaults are Algorithm 1 as this book reconstructs it [seed + choice]:

1. spectral initialization from ``M_hat Sigma_hat^{1/2} = Phi Gamma Psi^T`` [seed; split is a choice]:
   ``A_0 = Phi Gamma^{1/2} Sigma_hat^{-1/2}``, ``B_0 = Sigma_hat^{-1/2} Psi Gamma^{1/2} Sigma_hat^{-1/2}``,
   so ``A_0 Sigma_hat B_0^T = M_hat`` and (A_0, B_0) lies on S_hat;
2. preconditioned gradient steps [seed for B; the A side is this book's completion]
   ``A <- A - eta G_A Sigma_hat^{-1}``, ``B <- B - eta Sigma_hat^{-1} G_B Sigma_hat^{-1}``,
   which are exactly gradient steps on ``(U, V) = (A S^{1/2}, S^{1/2} B S^{1/2})``;
3. the regularizer R_hat with weight lambda = 1 [choice: Procrustes-flow balancing term];
4. optional renormalization ``(A, B) -> (c A, B / c)`` after each step, with c chosen so that
   ``||Sigma_hat^{1/2} B Sigma_hat^{1/2}||_F <= tau`` [choice standing in for the later
   version's step]; off by default (tau=None).

Step-size rule [derived, chapter 4]. With ``N = ||U_0||_F^2 + ||V_0||_F^2`` at the start
(Sigma_hat coordinates), ``s_max = sigma_max(M_hat Sigma_hat^{1/2})`` and ``c = step_scale``,

    eta = c / ((1 + lambda) max(s_max, N))                        (precondition=True)
    eta = c / ((1 + lambda) max(s_max, N) max(||S||, ||S||^2))     (precondition=False)

Why: the Hessian of the closed-form objective in (U, V) satisfies
``||H(U, V)|| <= s_max + 1.5 (1 + lambda) N <= 2.5 (1 + lambda) max(s_max, N)`` (bound each
second-order term by Cauchy-Schwarz; chapter 4 writes it out), so at the starting point
``eta ||H|| <= 2.5 c``, below 2 for c < 0.8; on S, ``||H|| = 2 max(1, lambda) s_max``
(:func:`attnlib.geometry.minimum_hessian_eigenvalues`) and ``eta ||H|| <= 2 c``. Without the
preconditioner the (A, B) Hessian is ``J^T H J`` with ``||J||^2 = max(||S||, ||S||^2)``,
hence the extra factor. For the empirical attention objective the bound is that of its
infinite-data limit, a proxy. ``step`` overrides the rule; ``step_scale`` changes c.

Baselines (:data:`METHODS`): the same routine with other options: plain gradient descent
(random init, no preconditioner, no regularizer), minibatch SGD (each step uses the gradient
of the loss of ``batch_size`` query rows drawn without replacement, each attending over all n
keys -- minus itself under the leave-one-out mask), Adam (Kingma & Ba 2015, bias-corrected).
Random initialization draws A then B with i.i.d. ``N(0, init_scale^2 / d)`` entries
(init_scale = 0.3 [choice]).

History (one entry per iteration k = 0..iterations, recorded before step k+1): ``objective``
(the full objective, also for SGD), ``loss`` (L_hat or the closed-form loss without R_hat),
``grad_norm`` (Frobenius norm of the full objective's (A, B) gradient), ``dist_P_hat``
(dist_P to S_hat), ``time`` (seconds since the start), and when ``problem`` (the truth) is
given ``excess_risk`` (``L(A, B) - L*`` with the true Sigma, M) and ``dist_P`` (to S). With
``test = (X_test, Y_test)`` the deployed predictor (the n training samples as context,
:func:`attnlib.attention.predict_new`) is evaluated every ``test_every`` iterations and at the
last one (iterations in ``test_iteration``): ``test_loss = 1/(2m) sum ||y - y_hat||^2`` and, when
``problem`` is given, ``test_risk = 1/(2m) sum ||M x - y_hat||^2`` (noise-free targets: an
unbiased estimate of the deployed excess risk with less variance than ``test_loss - L*``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Literal

import numpy as np

from . import attention
from ._progress import progress as progress_bar
from ._validation import as_matrix, check_generator, check_int, check_positive
from .data import RegressionProblem
from .geometry import minimizer_manifold
from .optim import adam_increment
from .population import (empirical_moments, population_loss_and_grad, regularizer_and_grad,
                         spd_sqrt)

__all__ = [
    "METHODS",
    "TrainResult",
    "random_init",
    "spectral_init",
    "renormalize",
    "default_step",
    "empirical_objective_and_grad",
    "train",
]

Optimizer = Literal["gd", "sgd", "adam"]
Init = Literal["spectral", "random"]

#: Option presets of the methods compared in Part I (keys match ``plotting.METHOD_COLOURS``).
METHODS: dict[str, dict[str, object]] = {
    "algorithm1": dict(optimizer="gd", init="spectral", precondition=True, lam=1.0),
    "random+precond+reg": dict(optimizer="gd", init="random", precondition=True, lam=1.0),
    "gd": dict(optimizer="gd", init="random", precondition=False, lam=0.0),
    "sgd": dict(optimizer="sgd", init="random", precondition=False, lam=0.0),
    "adam": dict(optimizer="adam", init="random", precondition=False, lam=0.0),
}


@dataclass
class TrainResult:
    """Output of :func:`train`: final parameters, per-iteration history, the step used.

    ``history`` maps names to arrays (see the module docstring); ``diverged`` is true when
    training stopped because the parameters, the attention logits or the objective stopped
    being finite (or the objective exceeded 1e8 times its initial value); ``stopped`` when
    the callback asked to stop. ``config`` records every option.
    """

    A: np.ndarray
    B: np.ndarray
    history: dict[str, np.ndarray]
    step: float
    config: dict[str, object] = field(default_factory=dict)
    diverged: bool = False
    stopped: bool = False


def random_init(d: int, p: int, *, rng: np.random.Generator,
                scale: float = 0.3) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``A`` (p x d) then ``B`` (d x d) with i.i.d. ``N(0, scale^2 / d)`` entries."""
    d = check_int("d", d, minimum=1)
    p = check_int("p", p, minimum=1)
    rng = check_generator("rng", rng)
    scale = check_positive("scale", scale)
    std = scale / np.sqrt(d)
    return std * rng.standard_normal((p, d)), std * rng.standard_normal((d, d))


def spectral_init(Sigma_hat: np.ndarray, M_hat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Spectral initialization: the det = +1 point ``O = I`` of S_hat.

    ``M_hat Sigma_hat^{1/2} = Phi Gamma Psi^T`` (thin SVD), ``A_0 = Phi Gamma^{1/2} Sigma_hat^{-1/2}``,
    ``B_0 = Sigma_hat^{-1/2} Psi Gamma^{1/2} Sigma_hat^{-1/2}``; then ``A_0 Sigma_hat B_0^T = M_hat``.
    """
    return minimizer_manifold(Sigma_hat, M_hat).point()


def renormalize(A: np.ndarray, B: np.ndarray, Sigma_hat: np.ndarray,
                tau: float) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(c A, B / c)`` with ``c = max(1, ||Sigma_hat^{1/2} B Sigma_hat^{1/2}||_F / tau)``.

    ``A Sigma_hat B^T`` (hence the infinite-data predictor) is unchanged and afterwards
    ``||Sigma_hat^{1/2} B Sigma_hat^{1/2}||_F <= tau``, which bounds the softmax logits.
    (:func:`train` additionally requires tau >= the balanced scale ``sqrt(trace Gamma_hat)``.)
    """
    tau = check_positive("tau", tau)
    half, _ = spd_sqrt(Sigma_hat)
    d = half.shape[0]
    a = as_matrix("A", A, shape=(None, d))
    b = as_matrix("B", B, shape=(d, d))
    scale = max(1.0, float(np.linalg.norm(half @ b @ half)) / tau)
    return scale * a, b / scale


def default_step(A0: np.ndarray, B0: np.ndarray, Sigma_hat: np.ndarray, M_hat: np.ndarray, *,
                 lam: float, precondition: bool, step_scale: float = 0.5) -> float:
    """The step-size rule of the module docstring (a curvature bound covering the start and S)."""
    step_scale = check_positive("step_scale", step_scale)
    lam = check_positive("lam", lam, allow_zero=True)
    manifold = minimizer_manifold(Sigma_hat, M_hat)
    u0, v0 = manifold.factor(A0, B0)
    size = float(np.sum(u0 ** 2) + np.sum(v0 ** 2))
    curvature = (1.0 + lam) * max(float(manifold.singular_values[0]), size)
    if not precondition:
        top = float(np.linalg.eigvalsh(manifold.Sigma)[-1])
        curvature *= max(top, top ** 2)
    return step_scale / curvature


def empirical_objective_and_grad(A: np.ndarray, B: np.ndarray, X: np.ndarray, Y: np.ndarray,
                                 Sigma_hat: np.ndarray, *, lam: float = 1.0,
                                 mask: attention.Mask = "loo", rows: np.ndarray | None = None
                                 ) -> tuple[float, float, np.ndarray, np.ndarray]:
    """Return ``(L_hat + R_hat, L_hat, gradient in A, gradient in B)``.

    ``L_hat`` is the attention layer's empirical loss (:func:`attnlib.attention.loss_and_grad`;
    ``rows`` restricts it to a minibatch of query rows attending to all keys) and
    ``R_hat = lambda/8 ||U^T U - V^T V||_F^2`` with ``(U, V)`` built from ``Sigma_hat``.
    """
    loss, grad_a, grad_b = attention.loss_and_grad(A, B, X, Y, mask=mask, rows=rows)
    if check_positive("lam", lam, allow_zero=True) == 0:
        return loss, loss, grad_a, grad_b
    reg, reg_a, reg_b = regularizer_and_grad(A, B, Sigma_hat, lam=lam)
    return loss + reg, loss, grad_a + reg_a, grad_b + reg_b


def train(X: np.ndarray | None = None, Y: np.ndarray | None = None, *,
          optimizer: Optimizer = "gd", init: Init | tuple[np.ndarray, np.ndarray] = "spectral",
          precondition: bool = True, lam: float = 1.0, tau: float | None = None,
          step: float | None = None, step_scale: float = 0.5, iterations: int = 2000,
          init_scale: float = 0.3, batch_size: int = 32,
          adam_betas: tuple[float, float] = (0.9, 0.999), adam_eps: float = 1e-8,
          objective: Literal["empirical", "closed_form"] = "empirical",
          moments: tuple[np.ndarray, np.ndarray] | None = None, mask: attention.Mask = "loo",
          problem: RegressionProblem | None = None,
          test: tuple[np.ndarray, np.ndarray] | None = None, test_every: int = 10,
          rng: np.random.Generator | None = None,
          callback: Callable[[int, np.ndarray, np.ndarray], bool | None] | None = None,
          progress: bool = False) -> TrainResult:
    """Train the attention layer; the defaults are Algorithm 1 (see the module docstring).

    Data: ``X`` (n, d) and ``Y`` (n, p) training samples. ``moments = (Sigma_hat, M_hat)``
    overrides the empirical moments (e.g. the true (Sigma, M) to run on the population
    objective itself); with ``objective="closed_form"`` X and Y are then optional.

    Options (keyword only):
      optimizer: "gd" (full-batch), "sgd" (minibatch of ``batch_size`` query rows attending to
        all keys; empirical objective only) or "adam" (``step`` is its learning rate, default
        1e-2; ``adam_betas``, ``adam_eps``).
      init: "spectral", "random" (``N(0, init_scale^2 / d)`` entries, needs ``rng``) or an
        explicit ``(A0, B0)``.
      precondition: multiply the gradients by ``Sigma_hat^{-1}`` as in step 2.
      lam: regularizer weight lambda >= 0 (0 turns R_hat off).
      tau: renormalization bound (None = off); must be >= ``sqrt(trace Gamma_hat)``.
      step, step_scale: step size; None uses the rule with c = step_scale (GD, SGD).
      iterations: number of updates; the history has ``iterations + 1`` entries unless
        training diverged or the callback returned True.
      mask: "loo" (leave-one-out, default) or "all", passed to the attention loss.
      problem: the true task, for ``excess_risk`` and ``dist_P``.
      test, test_every: held-out ``(X_test, Y_test)`` for the deployed test risk.
      rng: generator for the random init and the SGD minibatches.
      callback: ``callback(k, A, B)`` after recording iteration k; returning True stops.
      progress: show a progress bar.

    Raises ``ValueError`` for a non-positive step, an invalid tau, n < d or singular
    Sigma_hat, p < d, and inconsistent options.
    """
    iterations = check_int("iterations", iterations, minimum=0)
    test_every = check_int("test_every", test_every, minimum=1)
    lam = check_positive("lam", lam, allow_zero=True)
    if optimizer not in ("gd", "sgd", "adam"):
        raise ValueError(f"optimizer must be 'gd', 'sgd' or 'adam', got {optimizer!r}")
    if objective not in ("empirical", "closed_form"):
        raise ValueError(f"objective must be 'empirical' or 'closed_form', got {objective!r}")
    if mask not in ("loo", "all"):
        raise ValueError(f"mask must be 'loo' (leave-one-out) or 'all', got {mask!r}")

    x = y = None
    if X is not None or Y is not None:
        if X is None or Y is None:
            raise ValueError("give both X and Y (or neither, with objective='closed_form' "
                             "and moments)")
        x = as_matrix("X", X)
        y = as_matrix("Y", Y, shape=(x.shape[0], None))
    if objective == "empirical" and x is None:
        raise ValueError("objective='empirical' needs the training data X and Y")
    if optimizer == "sgd" and objective != "empirical":
        raise ValueError("optimizer='sgd' samples query rows: it needs objective='empirical'")
    if moments is None:
        if x is None:
            raise ValueError("give X and Y or moments=(Sigma_hat, M_hat)")
        sigma_hat, m_hat = empirical_moments(x, y)
    else:
        sigma_hat, m_hat = moments
    manifold_hat = minimizer_manifold(sigma_hat, m_hat)      # checks SPD, p >= d, rank
    sigma_hat, m_hat = manifold_hat.Sigma, manifold_hat.M
    p, d = m_hat.shape
    if x is not None and (x.shape[1] != d or y.shape[1] != p):
        raise ValueError(f"X, Y have shapes {x.shape}, {y.shape}; moments imply d = {d}, p = {p}")
    sigma_inv = manifold_hat.inv_half @ manifold_hat.inv_half

    if isinstance(init, str):
        if init == "spectral":
            a, b = manifold_hat.point()
        elif init == "random":
            if rng is None:
                raise ValueError("init='random' needs rng, a numpy.random.Generator")
            a, b = random_init(d, p, rng=rng, scale=init_scale)
        else:
            raise ValueError(f"init must be 'spectral', 'random' or a pair (A0, B0), got {init!r}")
    else:
        a = as_matrix("init[0] (A0)", init[0], shape=(p, d)).copy()
        b = as_matrix("init[1] (B0)", init[1], shape=(d, d)).copy()
    if optimizer == "sgd":
        if rng is None:
            raise ValueError("optimizer='sgd' needs rng, a numpy.random.Generator")
        batch_size = check_int("batch_size", batch_size, minimum=1)
        if batch_size > x.shape[0]:
            raise ValueError(f"batch_size must be at most n = {x.shape[0]}, got {batch_size}")
    if rng is not None:
        check_generator("rng", rng)
    if tau is not None:
        tau = check_positive("tau", tau)
        if tau < manifold_hat.balanced_scale * (1 - 1e-12):
            raise ValueError(f"tau = {tau:.4g} is below the balanced scale sqrt(trace Gamma_hat) = "
                             f"{manifold_hat.balanced_scale:.4g}: renormalizing to it would "
                             "unbalance the parameters and move S_hat; use tau >= that value")
        a, b = renormalize(a, b, sigma_hat, tau)
    if step is None:
        step = 1e-2 if optimizer == "adam" else default_step(
            a, b, sigma_hat, m_hat, lam=lam, precondition=precondition, step_scale=step_scale)
    step = check_positive("step", step)
    beta1, beta2 = (float(v) for v in adam_betas)
    if not (0 <= beta1 < 1 and 0 <= beta2 < 1):
        raise ValueError(f"adam_betas must lie in [0, 1), got {adam_betas!r}")
    adam_eps = check_positive("adam_eps", adam_eps)

    truth = None if problem is None else minimizer_manifold(problem.Sigma, problem.M)
    if test is not None:
        if x is None:
            raise ValueError("test needs the training samples X as the deployed context")
        x_test = as_matrix("test[0] (X_test)", test[0], shape=(None, d))
        y_test = as_matrix("test[1] (Y_test)", test[1], shape=(x_test.shape[0], p))

    def evaluate(a_: np.ndarray, b_: np.ndarray, rows: np.ndarray | None = None
                 ) -> tuple[float, float, np.ndarray, np.ndarray]:
        if objective == "empirical":
            return empirical_objective_and_grad(a_, b_, x, y, sigma_hat, lam=lam, mask=mask,
                                                rows=rows)
        loss, grad_a, grad_b = population_loss_and_grad(a_, b_, sigma_hat, m_hat)
        if lam > 0:
            reg, reg_a, reg_b = regularizer_and_grad(a_, b_, sigma_hat, lam=lam)
            return loss + reg, loss, grad_a + reg_a, grad_b + reg_b
        return loss, loss, grad_a, grad_b

    records: dict[str, list[float]] = {key: [] for key in
                                       ("objective", "loss", "grad_norm", "dist_P_hat", "time")}
    if truth is not None:
        records.update(excess_risk=[], dist_P=[])
    test_records: dict[str, list[float]] = {"test_iteration": [], "test_loss": []}
    if problem is not None:
        test_records["test_risk"] = []
    moment1 = (np.zeros_like(a), np.zeros_like(b))
    moment2 = (np.zeros_like(a), np.zeros_like(b))
    start = time.perf_counter()
    initial = None
    diverged = stopped = False
    n_rows = None if x is None else x.shape[0]

    for k in progress_bar(range(iterations + 1), total=iterations + 1,
                          desc=f"train ({optimizer})", enabled=progress):
        try:
            value, loss, grad_a, grad_b = evaluate(a, b)
        except ValueError:
            if k == 0:
                raise
            diverged = True          # the attention logits overflowed float64
            break
        initial = value if initial is None else initial
        if not np.isfinite(value) or value > 1e8 * max(1.0, initial):
            diverged = True
            break
        records["objective"].append(value)
        records["loss"].append(loss)
        records["grad_norm"].append(float(np.sqrt(np.sum(grad_a ** 2) + np.sum(grad_b ** 2))))
        records["dist_P_hat"].append(manifold_hat.distance(a, b))
        if truth is not None:
            excess, _, _ = population_loss_and_grad(a, b, problem.Sigma, problem.M)
            records["excess_risk"].append(excess)
            records["dist_P"].append(truth.distance(a, b))
        if test is not None and (k % test_every == 0 or k == iterations):
            prediction = attention.predict_new(a, b, x, x_test)
            test_records["test_iteration"].append(k)
            test_records["test_loss"].append(0.5 * float(np.mean(
                np.sum((y_test - prediction) ** 2, axis=1))))
            if problem is not None:
                test_records["test_risk"].append(0.5 * float(np.mean(
                    np.sum((x_test @ problem.M.T - prediction) ** 2, axis=1))))
        records["time"].append(time.perf_counter() - start)
        if callback is not None and callback(k, a, b):
            stopped = True
            break
        if k == iterations:
            break
        if optimizer == "sgd":
            rows = rng.choice(n_rows, size=batch_size, replace=False)
            _, _, grad_a, grad_b = evaluate(a, b, rows)
        if precondition:
            grad_a, grad_b = grad_a @ sigma_inv, sigma_inv @ grad_b @ sigma_inv
        if optimizer == "adam":
            a = a - adam_increment(grad_a, moment1[0], moment2[0], lr=step, t=k + 1,
                                   betas=(beta1, beta2), eps=adam_eps)
            b = b - adam_increment(grad_b, moment1[1], moment2[1], lr=step, t=k + 1,
                                   betas=(beta1, beta2), eps=adam_eps)
        else:
            a = a - step * grad_a
            b = b - step * grad_b
        if tau is not None:
            a, b = renormalize(a, b, sigma_hat, tau)
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
            diverged = True
            break

    history = {key: np.asarray(values, dtype=float) for key, values in records.items()}
    history["iteration"] = np.arange(history["objective"].size)
    if test is not None:
        history.update({key: np.asarray(values, dtype=float)
                        for key, values in test_records.items()})
        history["test_iteration"] = history["test_iteration"].astype(int)
    config = dict(optimizer=optimizer, init=init if isinstance(init, str) else "given",
                  precondition=precondition, lam=lam, tau=tau, step=step, iterations=iterations,
                  init_scale=init_scale, batch_size=batch_size, adam_betas=list(adam_betas),
                  adam_eps=adam_eps, objective=objective, mask=mask, test_every=test_every)
    return TrainResult(A=a, B=b, history=history, step=step, config=config, diverged=diverged,
                       stopped=stopped)
