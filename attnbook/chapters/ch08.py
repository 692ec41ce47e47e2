"""Chapter 8 (attention in W_Q, W_K and the Villani condition): the problem, its orbit, the radii.

The chapter's loss is ``f = L + R(W_Q) + R(W_K)`` with ``L`` the attention data loss, which
depends on ``(W_Q, W_K)`` only through ``W_Q W_K^T``, and ``R(W) = lambda g(||W||_F^2)`` one of
four regularizer profiles. Along the scale orbit ``(rho W_Q*, W_K*/rho)`` through a stationary
point the Villani quantity ``V_s = ||grad f||^2 / s - Laplacian f`` has a closed form, and the
two mild regularizers make it positive beyond a crossover radius at each end. Chapter 9 runs
the same computations on the LoRA model, so the functions that do not depend on the model
(:func:`regularizers`, :func:`log_partition_curves`, :func:`laplacian_law_fit`,
:func:`closed_form_gaps`, :func:`orbit_crossover_radii`, :func:`crossover_table`,
:func:`log10_holley_stroock_bound`) take the problem or its orbit constants as an argument
and serve both chapters.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from attnlib import qk_attention, villani
from attnlib.regularizers import Regularizer
from attnbook.tables import ResultTable, result_table

__all__ = ["PROBLEM_SEED", "PARTITION_SEED", "BOUND_SEED", "LAM", "TEMPERATURES", "MILD_FORMS",
           "attention_problem", "regularizers", "log_partition_curves",
           "attention_stationary_point", "laplacian_law_fit", "closed_form_gaps",
           "orbit_crossover_radii", "crossover_table", "log10_holley_stroock_bound"]

#: The seed of the synthetic problem.
PROBLEM_SEED = 8
#: The seed of the directions of the radial partition-function estimate.
PARTITION_SEED = 3
#: The seed of the random parameters for the inequalities of the argument (report page).
BOUND_SEED = 5
#: Strength lambda of the regularizers on the orbit.
LAM = 0.01
#: Temperatures s at which the crossover radii are computed.
TEMPERATURES = (0.01, 1.0, 100.0)
#: The source's two mild regularizers (the log-amplified and the super-quadratic form).
MILD_FORMS = ("log", "power")


def attention_problem() -> qk_attention.AttentionProblem:
    """The chapter's synthetic problem (section "The model and its symmetry"): ``n = 6`` inputs
    of ``N = 5`` Gaussian tokens in dimension ``d = 3``, ``d_k = 2``, so ``D = 2 d d_k = 12``
    trained parameters, with targets from a random teacher attention layer plus noise of
    standard deviation 0.5 (seed :data:`PROBLEM_SEED`; the report's grid of instances,
    ``attnbook.experiments.part2.INSTANCE_GRID``, starts from the same one)."""
    return qk_attention.make_problem(rng=np.random.default_rng(PROBLEM_SEED), n=6, N=5, d=3,
                                     d_k=2, noise_std=0.5)


def regularizers(lam: float = LAM) -> dict[str, Regularizer]:
    """The four regularizer profiles ``R(W) = lambda g(||W||_F^2)`` at strength ``lam``:
    ``"none"``, weight decay ``g(t) = t``, the log-amplified ``g(t) = t log(1 + t)`` and the
    super-quadratic ``g(t) = (1 + t)^(1 + eps/2) - 1`` with ``eps = 0.5``."""
    return {"none": Regularizer(), "weight_decay": Regularizer("weight_decay", lam),
            "log": Regularizer("log", lam), "power": Regularizer("power", lam, eps=0.5)}


def log_partition_curves(problem: villani.FactorizedLoss, s: float, radii: np.ndarray, *,
                         lam: float = 0.1, n_directions: int = 200,
                         seed: int = PARTITION_SEED) -> dict[str, np.ndarray]:
    """``log Z_R``, ``Z_R = integral over ||theta|| <= R of exp(-2 f(theta) / s)``, at each of
    ``radii``, for each of :func:`regularizers` ``(lam)`` (section "Numerics: the partition
    function over growing balls"): the polar estimate of
    :func:`attnlib.villani.radial_log_partition` with ``n_directions`` random directions, the
    same ones (``default_rng(seed)``) for every regularizer. Without a regularizer it keeps
    growing like ``D log R``; with any of the three it levels off."""
    return {name: villani.radial_log_partition(problem.with_regularizer(reg), s, radii,
                                               n_directions=n_directions,
                                               rng=np.random.default_rng(seed))
            for name, reg in regularizers(lam).items()}


def attention_stationary_point(problem: qk_attention.AttentionProblem
                               ) -> tuple[np.ndarray, float]:
    """A stationary point ``theta* = (W_Q*, W_K*)`` of the unregularized data loss, by BFGS
    from the teacher (section "The Villani quantity on the orbit through a stationary point"),
    and ``||grad L(theta*)||``."""
    return villani.minimize_data_loss(problem, problem.theta_teacher)


def laplacian_law_fit(problem: villani.FactorizedLoss, theta_star: np.ndarray,
                      rho: np.ndarray) -> tuple[float, float, float]:
    """Least-squares fit of the law ``Laplacian L(rho W_1*, W_2*/rho) = a rho^2 + b / rho^2``
    (eq-ch08-3) to the exact data Laplacians at the orbit points ``rho`` through the
    stationary point ``theta_star``. Returns ``(a, b, largest relative residual)``."""
    laps = np.array([sum(problem.data_laplacian_blocks(x))
                     for x in villani.orbit_points(problem, theta_star, np.log(rho))])
    design = np.column_stack([rho**2, rho**-2])
    (a_fit, b_fit), *_ = np.linalg.lstsq(design, laps, rcond=None)
    residual = np.max(np.abs(design @ [a_fit, b_fit] - laps) / np.abs(laps))
    return float(a_fit), float(b_fit), float(residual)


def closed_form_gaps(problem: villani.FactorizedLoss, theta_star: np.ndarray,
                     consts: villani.OrbitConstants, regs: Mapping[str, Regularizer],
                     log_rho: np.ndarray, s: float = 1.0) -> dict[str, tuple[np.ndarray, float]]:
    """The closed form (eq-ch08-4) of ``V_s`` on the orbit against direct evaluation, per
    regularizer: ``V_s`` from the exact gradient and Laplacian of the regularized loss at the
    orbit points ``log rho``, and the largest relative gap between it and
    ``rho^2 * villani.orbit_villani_over_rho2``. Returns ``name -> (direct values, gap)``."""
    points = villani.orbit_points(problem, theta_star, log_rho)
    gaps = {}
    for name, reg in regs.items():
        closed = villani.orbit_villani_over_rho2(consts, reg, s, log_rho) * np.exp(2 * log_rho)
        direct = np.array([villani.villani_quantity(problem.with_regularizer(reg), x, s).value
                           for x in points])
        gaps[name] = (direct, float(np.max(np.abs(closed - direct) / np.abs(direct))))
    return gaps


def orbit_crossover_radii(consts: villani.OrbitConstants, regs: Mapping[str, Regularizer],
                          temperatures: Sequence[float] = TEMPERATURES,
                          forms: Sequence[str] = MILD_FORMS
                          ) -> dict[tuple[str, float], villani.OrbitCrossovers]:
    """The exact crossovers of ``V_s`` on the orbit with constants ``consts``, for each mild
    form and temperature (section "The crossover radius, derived with sympy"):
    ``log rho*`` as ``rho -> oo`` and ``log(1/rho_*)`` as ``rho -> 0``
    (:func:`attnlib.villani.orbit_crossovers`); ``V_s > 0`` outside both, so the larger
    (``.decisive``) decides. Keyed by ``(form, s)``."""
    return {(name, s): villani.orbit_crossovers(consts, regs[name], s)
            for name in forms for s in temperatures}


def crossover_table(consts: villani.OrbitConstants, regs: Mapping[str, Regularizer],
                    crossovers: Mapping[tuple[str, float], villani.OrbitCrossovers]
                    ) -> ResultTable:
    """The table of :func:`orbit_crossover_radii`: per form and temperature, ``log10 rho*``
    and ``log10(1/rho_*)`` beside their leading orders
    (:func:`attnlib.villani.asymptotic_crossover_log_radius`; for the log form
    ``log rho* ~ sqrt(s a / q) / (4 lambda) - (log q)/2 - 1/2``), and the decisive end."""
    rows = []
    for (name, s), both in crossovers.items():
        up = villani.asymptotic_crossover_log_radius(consts, regs[name], s)
        down = villani.asymptotic_crossover_log_radius(consts.swapped(), regs[name], s)
        rows.append([name, f"{s:g}", both.up / math.log(10), up / math.log(10),
                     both.down / math.log(10), down / math.log(10), both.decisive_end])
    return result_table(["form", "s", "rho -> oo", "leading", "rho -> 0", "leading",
                         "decisive end"], rows, number_format=".2f")


def log10_holley_stroock_bound(sup_loss: float, s: float, lam: float) -> float:
    """``log10`` of the Holley-Stroock bound ``C_P <= exp(2 osc L / s) s / (4 lambda)`` for
    weight decay at strength ``lam`` (section "Villani is sufficient, not necessary"), with
    ``sup_loss >= sup L >= osc L`` in place of the oscillation of the bounded data loss."""
    return (2 * sup_loss / s + math.log(s / (4 * lam))) / math.log(10)
