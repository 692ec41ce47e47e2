"""Chapter 5's observations 2 and 3 over the random start's scale, and the literal preconditioner.

``paper1_init_scale`` (chapter 5, Reproduction report). Observation 1 of chapter 5 varies the
random start's scale c (entries ``N(0, c^2/d)``); this run varies it for the two random-start
methods of observation 3 as well: **SGD** (:data:`attnlib.algorithm.METHODS` ``"sgd"``: no
preconditioner, no regularizer, minibatches of 32 query rows) and **random + precond + reg**
(Algorithm 1's preconditioner and regularizer from the random start), each with two step rules
[choice]:

* ``fixed``: the step rule of chapter 4 evaluated once, at the start (what ``algorithm.train``
  and every other run of the book do): ``eta = c_step / ((1 + lam) max(s_max, N_0))``, with
  ``N_0 = ||U_0||_F^2 + ||V_0||_F^2`` (and the extra factor without the preconditioner,
  :func:`attnlib.algorithm.default_step`). A larger random start has a larger ``N_0``, hence a
  smaller step for the whole run;
* ``reevaluated``: the same rule re-evaluated at every iteration at the current iterate,
  ``eta_k = c_step / ((1 + lam) max(s_max, N_k))`` (:class:`ReevaluatedStep`), so the step grows
  as the iterate shrinks towards the balanced scale.

Data, starts and minibatches as in ``paper1_defaults`` (seed s: problem, training and test set
from ``default_rng(s)``; the random start, then SGD's minibatches, from ``default_rng(100 + s)``,
scaled by c): the cell ``c = 0.3``, ``fixed`` is the stored ``paper1_defaults`` run of the same
method. Algorithm 1 starts at the spectral point and does not depend on c.

Keys (S seeds, C scales: the grid axes first, listed in ``seeds`` (S,) and ``init_scales``
(C,); G recorded iterations ``iteration`` (G,), every one up to 100 then every 10th; then the
methods in the order of ``SETTINGS.methods`` and the step rules in the order of
``SETTINGS.step_rules``): ``excess_risk`` and ``objective`` (S, C, G, 2, 2), the population
excess risk ``L - L*`` and the trained objective (L_hat for SGD, Q_hat = L_hat + R_hat for random
+ precond + reg, full batch); ``step`` (S, C, 2, 2) the step at the start and ``step_end`` the
rule's step at the last iterate. ``full=False`` runs seed 0 at the first scale for
``PREFIX_ITERATIONS`` iterations.

:func:`literal_preconditioner` (live, chapter 5's report) runs chapter 4's preconditioner test
with the summaries' literal preconditioner: B's gradient multiplied by Sigma_hat^-1, A's
gradient unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import partial
from typing import Callable, Mapping, NamedTuple

import numpy as np

from attnbook.seeds import stream
from attnlib import algorithm, population
from attnlib.optim import EmptyState, Params, Transform, apply_updates, chain, scale
from . import TaskGrid, register_grid
from ._tasks import stack_tasks
from .ablations import defaults_data
from .part1 import SETTINGS as DEFAULTS
from .part1 import derive, method_options, recorded_iterations

__all__ = ["SETTINGS", "InitScaleSettings", "ReevaluatedStep", "init_scale_task",
           "literal_preconditioner"]

#: iterations of the replayed prefix (``full=False``: seed 0, first scale)
PREFIX_ITERATIONS = 20


@dataclass(frozen=True)
class InitScaleSettings:
    """Every setting of ``paper1_init_scale`` (module docstring), each a [choice] of this book;
    the stored ``config`` is ``dataclasses.asdict`` of it. ``method_options`` is derived (the
    pieces of the methods named in ``methods``, at the book's scale 0.3; the run replaces
    ``init_scale`` by each entry of ``init_scales``)."""

    d: int = DEFAULTS.d
    p: int = DEFAULTS.p
    n: int = DEFAULTS.n
    kappa: float = DEFAULTS.kappa
    noise_std: float = DEFAULTS.noise_std
    seeds: tuple[int, ...] = DEFAULTS.seeds
    init_scales: tuple[float, ...] = (0.3, 1.0, 2.0, float(np.sqrt(DEFAULTS.d)), 5.0)
    iterations: int = DEFAULTS.iterations
    methods: tuple[str, ...] = ("sgd", "random+precond+reg")
    step_rules: tuple[str, ...] = ("fixed", "reevaluated")
    step_scale: float = DEFAULTS.step_scale
    grid: str = DEFAULTS.grid
    seeding: str = DEFAULTS.seeding
    method_options: dict[str, dict[str, object]] = field(init=False)

    def __post_init__(self) -> None:
        derive(self, method_options=method_options(self.methods))


#: the settings of the stored run ``paper1_init_scale``
SETTINGS = InitScaleSettings()


class _Tracked(NamedTuple):
    """:class:`ReevaluatedStep`'s state: the current parameters (the sum of the start and
    every update so far, computed exactly as ``algorithm.train`` moves them)."""

    params: Params


@dataclass(frozen=True, eq=False)
class ReevaluatedStep:
    """Gradient descent whose step follows chapter 4's rule at the *current* iterate:
    ``eta_k = c / ((1 + lam) max(s_max, ||U_k||_F^2 + ||V_k||_F^2))`` (times the extra factor
    without the preconditioner; :func:`attnlib.algorithm.default_step` at ``(A_k, B_k)``), an
    :class:`attnlib.algorithm.UpdateRule` [choice]. ``lam`` and ``precondition`` must be those
    of the method it is used in, ``Sigma_hat`` and ``M_hat`` the data's moments. The state
    tracks the parameters (start plus updates), so it must not be combined with
    renormalization (``tau``), which moves them outside the optimizer."""

    Sigma_hat: np.ndarray
    M_hat: np.ndarray
    lam: float
    precondition: bool
    step_scale: float = 0.5

    def step_at(self, params: Params) -> float:
        """The rule's step at ``params = (A, B)``."""
        return algorithm.default_step(params[0], params[1], self.Sigma_hat, self.M_hat,
                                      lam=self.lam, precondition=self.precondition,
                                      step_scale=self.step_scale)

    def eta(self, default_step: Callable[[float], float]) -> float:
        return default_step(self.step_scale)          # the step at the start (recorded)

    def transform(self, eta: float) -> Transform:
        def init(params: Params) -> _Tracked:
            return _Tracked(tuple(np.asarray(p, dtype=float) for p in params))

        def update(updates: Params, state: _Tracked, params: Params | None = None
                   ) -> tuple[Params, _Tracked]:
            if not isinstance(state, _Tracked):
                raise TypeError("ReevaluatedStep was handed a state it did not make: pass the "
                                "state made by this optimizer's init")
            step = self.step_at(state.params)
            moved = tuple(-step * u for u in updates)
            return moved, _Tracked(apply_updates(state.params, moved))

        return Transform(init, update)


def _method(name: str, scale_c: float, rule: str, loss: algorithm.DataLoss,
            step_scale: float) -> algorithm.Method:
    base = replace(algorithm.METHODS[name], init_scale=scale_c)
    if rule == "fixed":
        return base
    if rule == "reevaluated":
        return replace(base, update=ReevaluatedStep(loss.Sigma_hat, loss.M_hat, lam=base.lam,
                                                    precondition=base.precondition,
                                                    step_scale=step_scale))
    raise ValueError(f"step rule must be 'fixed' or 'reevaluated', got {rule!r}")


def init_scale_task(seed: int, scale_c: float, *, settings: InitScaleSettings = SETTINGS
                    ) -> dict[str, np.ndarray]:
    """One (seed, c) cell of ``paper1_init_scale`` (module docstring): its keys without the
    grid axes."""
    problem, (x, y), _ = defaults_data(seed, n=settings.n)
    loss = algorithm.empirical_loss(x, y)
    grid = recorded_iterations(settings.iterations)
    shape = (grid.size, len(settings.methods), len(settings.step_rules))
    out = {key: np.zeros(shape) for key in ("excess_risk", "objective")}
    steps = np.zeros(shape[1:])
    steps_end = np.zeros(shape[1:])
    for i, name in enumerate(settings.methods):
        for j, rule in enumerate(settings.step_rules):
            method = _method(name, scale_c, rule, loss, settings.step_scale)
            result = algorithm.train(loss, method, iterations=settings.iterations,
                                     problem=problem, rng=stream("start", seed),
                                     record_at=grid)
            for key in out:
                out[key][:, i, j] = result.history[key]
            steps[i, j] = result.step
            steps_end[i, j] = algorithm.default_step(
                result.A, result.B, loss.Sigma_hat, loss.M_hat, lam=method.lam,
                precondition=method.precondition, step_scale=settings.step_scale)
    return {**out, "step": steps, "step_end": steps_end}


def _history(settings: InitScaleSettings, results: list[Mapping[str, np.ndarray]]
             ) -> dict[str, np.ndarray]:
    return {"iteration": recorded_iterations(settings.iterations),
            "seeds": np.asarray(settings.seeds), "init_scales": np.asarray(settings.init_scales),
            **stack_tasks(results, (len(settings.seeds), len(settings.init_scales)))}


@register_grid("paper1_init_scale", settings=SETTINGS)
def paper1_init_scale(full: bool = True) -> TaskGrid:
    """SGD and random + precond + reg over the random start's scale c, step fixed or re-evaluated."""
    run = SETTINGS if full else replace(SETTINGS, seeds=SETTINGS.seeds[:1],
                                        init_scales=SETTINGS.init_scales[:1],
                                        iterations=PREFIX_ITERATIONS)
    return TaskGrid([(seed, c) for seed in run.seeds for c in run.init_scales],
                    partial(init_scale_task, settings=run), partial(_history, run))


def _literal(Sigma_hat: np.ndarray, side: str) -> Transform:
    """B's gradient multiplied by ``Sigma_hat^-1`` on one side (``"left"``: ``S^-1 G_B``,
    ``"right"``: ``G_B S^-1``), A's gradient unchanged."""
    inverse = np.linalg.inv(Sigma_hat)

    def update(grads: Params, state: EmptyState, params: Params | None = None
               ) -> tuple[Params, EmptyState]:
        g_a, g_b = grads
        return (g_a, inverse @ g_b if side == "left" else g_b @ inverse), state

    return Transform(lambda params: EmptyState(), update)


@dataclass(frozen=True, eq=False)
class _LiteralStep:
    """Gradient descent after the literal preconditioner, at the step of the rule without
    the preconditioner (the method's ``precondition=False``: A's gradient is not
    preconditioned, so the rule's curvature bound for plain gradients applies)."""

    Sigma_hat: np.ndarray
    side: str
    step_scale: float = 0.5

    def eta(self, default_step: Callable[[float], float]) -> float:
        return default_step(self.step_scale)

    def transform(self, eta: float) -> Transform:
        return chain(_literal(self.Sigma_hat, self.side), scale(-eta))


def literal_preconditioner(*, seed: int = 0, kappa: float = 1000.0, iterations: int = 100,
                           init_seed: int = 100, step_multiple: float = 1.0
                           ) -> dict[str, np.ndarray]:
    """Chapter 4's preconditioner test with four preconditioners: on the closed-form objective
    of ``seed``'s problem at condition number ``kappa`` (X* fixed,
    :func:`attnbook.experiments.ablations.defaults_data`), from the random start of
    ``default_rng(init_seed)``, with the regularizer (lambda = 1), ``iterations`` steps of
    gradient descent with

    * ``two_sided``: Algorithm 1's (``G_A S^-1``, ``S^-1 G_B S^-1``), its step rule;
    * ``plain``: none, the rule's step without the preconditioner;
    * ``B_left`` / ``B_right``: the summaries' literal preconditioner, B's gradient times
      ``S^-1`` from the left / right, A's gradient unchanged, at the plain rule's step.

    ``step_multiple`` multiplies every run's step (the rule's constant ``c = 0.5`` becomes
    ``0.5 * step_multiple``), to test that a ratio is not an artefact of one step size; the
    default 1 is the rule's step. Returns ``excess_risk`` (4,) at the last iteration and
    ``step`` (4,), in the order of ``names``; ``ratio`` (4,) is the excess risk over the plain
    run's (at the same multiple).
    """
    problem, (x, y), _ = defaults_data(seed, kappa=kappa)
    sigma_hat, m_hat = population.empirical_moments(x, y)
    loss = algorithm.closed_form_loss(sigma_hat, m_hat)
    step_scale = 0.5 * step_multiple
    methods = {
        "two_sided": algorithm.Method(init="random", precondition=True, lam=1.0,
                                      update=algorithm.GD(step_scale=step_scale)),
        "plain": algorithm.Method(init="random", precondition=False, lam=1.0,
                                  update=algorithm.GD(step_scale=step_scale)),
        **{f"B_{side}": algorithm.Method(init="random", precondition=False, lam=1.0,
                                         update=_LiteralStep(sigma_hat, side, step_scale))
           for side in ("left", "right")},
    }
    risk, step = [], []
    for method in methods.values():
        result = algorithm.train(loss, method, iterations=iterations, problem=problem,
                                 rng=np.random.default_rng(init_seed))
        risk.append(result.history["excess_risk"][-1])
        step.append(result.step)
    risk_array = np.asarray(risk)
    return {"names": np.asarray(list(methods)), "excess_risk": risk_array,
            "step": np.asarray(step), "ratio": risk_array / risk_array[1]}
