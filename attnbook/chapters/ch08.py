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
           "orbit_crossover_radii", "crossover_table", "log10_holley_stroock_bound",
           "sup_loss_bound", "log_ball_volume", "describe_log_partition", "orbit_villani_table",
           "describe_closed_form_gaps", "crossover_leading_orders", "smallest_logit_gap",
           "describe_ray", "describe_estimate_radii", "describe_weight_decay_estimate"]

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


# ---------------------------------------------------------------------------------------------
# What the chapter's cells print: the computations above, formatted (the cells show the idea).
# ---------------------------------------------------------------------------------------------

def _label(name: str) -> str:
    from attnbook.plotting import SERIES

    return SERIES[name]["label"]


def sup_loss_bound(problem: qk_attention.AttentionProblem) -> float:
    """A bound on ``sup L``: every output row is a convex combination of the rows of
    ``X_i W_V``, so each residual entry is at most the largest ``|X_i W_V|`` of its column plus
    ``|Y|`` (section "Numerics: the partition function over growing balls")."""
    z = problem.X @ problem.W_V
    return float(0.5 * np.sum((np.abs(z).max(axis=1)[:, None, :] + np.abs(problem.Y)) ** 2)
                 / problem.n)


def log_ball_volume(dim: int, radii: np.ndarray) -> np.ndarray:
    """``log vol(B_R)`` of the ball of radius ``R`` in ``dim`` dimensions, at each of
    ``radii``."""
    return 0.5 * dim * math.log(math.pi) - math.lgamma(0.5 * dim + 1) + dim * np.log(radii)


def describe_log_partition(log_z: Mapping[str, np.ndarray],
                           indices: Sequence[int] = (15, 30, 60)) -> str:
    """``log Z_R`` of :func:`log_partition_curves` at three radii (R = 3, 6, 12 on the
    chapter's grid), per regularizer."""
    return "\n".join(f"{_label(name):>12}: log Z_R at R = 3, 6, 12: "
                     + ", ".join(f"{values[i]:.2f}" for i in indices)
                     for name, values in log_z.items())


def orbit_villani_table(checked: Mapping[str, tuple[np.ndarray, float]]) -> ResultTable:
    """The directly evaluated ``V_1`` of :func:`closed_form_gaps` at rho = 0.1, 1, 10, 100."""
    return result_table(["", "rho = 0.1", "rho = 1", "rho = 10", "rho = 100"],
                        [[_label(name), *direct] for name, (direct, _) in checked.items()],
                        number_format=".4g")


def describe_closed_form_gaps(checked: Mapping[str, tuple[np.ndarray, float]]) -> str:
    """The largest relative gap between the direct ``V_1`` and the closed form, per
    regularizer (:func:`closed_form_gaps`)."""
    from attnbook.experiments import format_deviation

    return ("largest relative gap of V_1 to the closed form: "
            + ", ".join(f"{_label(name)} {format_deviation(gap, resolution=1e-9)}"
                        for name, (_, gap) in checked.items()))


def crossover_leading_orders(lam, s, a, q, eps, u) -> tuple:
    """Section "The crossover radius, derived with sympy": with the positive sympy symbols
    ``lam, s, a, q, eps`` and ``u = log rho``, the larger root in ``u`` of the leading-order
    equation ``4 lam^2 q g'(t_Q)^2 / s = a``, ``t_Q = q e^{2u}``, for the log form
    (``g'(t) ~ log t + 1``) and the power form (``g'(t) ~ (1 + eps/2) t^(eps/2)``), simplified,
    and the temperature above which weight decay (``g' = 1``) fails."""
    import sympy as sp

    log_eq = sp.Eq(4 * lam**2 * q * (sp.log(q) + 2 * u + 1)**2 / s, a)
    log_root = [r for r in sp.solve(log_eq, u) if r.has(sp.sqrt(a))]
    pp = 1 + eps / 2
    pow_eq = sp.Eq(4 * lam**2 * q * pp**2 * (q * sp.exp(2 * u))**eps / s, a)
    pow_root = sp.solve(pow_eq, u)
    wd_threshold = sp.solve(sp.Eq(4 * lam**2 * q / s, a), s)
    larger = max(log_root, key=lambda r: r.subs({lam: 0.01, s: 1, a: 1, q: 1}))
    return (sp.simplify(sp.expand_log(larger, force=True)),
            sp.simplify(sp.expand_log(pow_root[0], force=True)), wd_threshold[0])


def smallest_logit_gap(problem: qk_attention.AttentionProblem, direction: np.ndarray) -> float:
    """The smallest gap between the two largest logits of any attention row at the parameters
    ``direction`` (section "Generic rays decide nothing"): along the ray ``rho u`` the logits
    grow like ``rho^2``, and the softmax saturates once ``rho^2`` times this gap is large."""
    w_q, w_k = problem.unpack(direction)
    logits = (problem.X @ (w_q @ w_k.T) @ np.swapaxes(problem.X, 1, 2)
              / math.sqrt(problem.d_k))
    top2 = np.sort(logits, axis=-1)[..., -2:]
    return float(np.min(top2[..., 1] - top2[..., 0]))


def describe_ray(problem: qk_attention.AttentionProblem, direction: np.ndarray, min_gap: float,
                 regs: Mapping[str, Regularizer], rhos: Sequence[int]) -> str:
    """Along the ray ``rho u`` (``u = direction``), for each ``rho``: ``rho^2`` times the logit
    gap, ``||grad L||^2``, the Laplacian of ``L`` and ``V_1`` with weight decay and with the
    log form."""
    lines = ["  rho   gap*rho^2   ||grad L||^2     Laplacian L   V_1 (weight decay)  V_1 (log)"]
    for rho in rhos:
        x = rho * direction
        g = problem.gradient(x)
        v_wd, v_log = (villani.villani_quantity(problem.with_regularizer(regs[name]), x,
                                                1.0).value for name in ("weight_decay", "log"))
        lines.append(f"{rho:5d} {min_gap * rho**2:11.3g} {g @ g:14.3e} "
                     f"{problem.laplacian(x):15.3e} {v_wd:19.4g} {v_log:10.4g}")
    return "\n".join(lines)


def describe_estimate_radii(regs: Mapping[str, Regularizer], temperatures: Sequence[float],
                            grad_constant: float, laplacian_constant: float, block_dim: int,
                            crossovers: Mapping[tuple[str, float], villani.OrbitCrossovers],
                            lam: float) -> str:
    """Section "The argument in every direction": for each mild form and temperature, the
    ``log10 ||W||_F`` of the larger block beyond which the estimate ``B`` of eq-ch08-7 is
    positive (:func:`attnlib.villani.lower_bound_log_radius`), against the orbit's decisive
    ``log10 rho*``."""
    lines = [f"lambda = {lam}: log10 ||W||_F beyond which B > 0, and the orbit's log10 rho*"]
    for name in MILD_FORMS:
        for s in temperatures:
            log_t = villani.lower_bound_log_radius(regs[name], s, grad_constant=grad_constant,
                                                   laplacian_constant=laplacian_constant,
                                                   block_dim=block_dim)
            lines.append(f"{name:>6}, s = {s:>6g}: B > 0 beyond "
                         f"{log_t / (2 * math.log(10)):9.1f}, "
                         f"orbit {crossovers[name, s].decisive / math.log(10):7.2f}")
    return "\n".join(lines)


def describe_weight_decay_estimate(consts: villani.OrbitConstants, lam: float,
                                   lam_strong: float, grad_constant: float,
                                   laplacian_constant: float) -> str:
    """Weight decay under the estimate and on the orbit: at ``lam`` (2 lam < C, so the estimate
    never proves the condition) and at ``lam_strong`` (it proves it below
    ``(2 lam - C)^2 / (2 C')``, while the orbit fails above ``4 lam^2 min(q/a, k/b)``)."""
    both_ends = min(villani.weight_decay_threshold(consts, lam_strong),
                    villani.weight_decay_threshold(consts.swapped(), lam_strong))
    proved = (2 * lam_strong - grad_constant) ** 2 / (2 * laplacian_constant)
    return (f"weight decay, lambda = {lam}: 2 lambda = {2 * lam:g} < C = {grad_constant:.1f},\n"
            "  so the estimate never proves the condition;\n"
            f"  the orbit fails for s > {villani.weight_decay_threshold(consts, lam):.3g}\n"
            f"weight decay, lambda = {lam_strong:g}: the estimate proves it for s <\n"
            f"  (2 lambda - C)^2 / (2 C') = {proved:.3g};\n"
            f"  the orbit fails for s > 4 lambda^2 min(q/a, k/b) = {both_ends:.3g}")
