"""Chapter 9 (LoRA, scale redundancy and its cure): the problem and its balanced stationary point.

The chapter's loss is ``f(U, V) = (1/2n) sum_i (a^T tanh((W_pre + U V) x_i) - y_i)^2 + R(U) +
R(V)``; its data loss depends on ``(U, V)`` only through ``U V``. Chapter 9 repeats Chapter 8's
computations on this model with the functions of :mod:`attnbook.chapters.ch08` (regularizers,
partition function, closed form on the orbit, crossover radii); what is LoRA's own is here: the
problem, and the stationary point, found from a weight-decay warm start and reported at the
balanced point of its ``GL(r)`` orbit; the flat set ``V = 0``; and the sampling of the ``GL(2)``
orbit on which the chapter compares LoRA's crossover with attention's (the norm ``N`` of the
larger block at the decisive crossover, eq-ch09-block-norm).
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from attnlib import lora, villani
from attnlib.regularizers import Regularizer
from attnbook.tables import result_table

__all__ = ["PROBLEM_SEED", "BOUND_SEED", "WARM_DECAY", "lora_problem", "weight_decay_minimizer",
           "balanced_stationary_point", "SYMMETRY_SEED", "FLAT_SEED", "GROUP_SEED",
           "ORBIT_ANGLES", "ORBIT_DELTAS", "ORBIT_MAX_DELTA", "ORBIT_BOUNDS",
           "random_group_elements", "symmetry_changes", "flat_ray", "flat_constants",
           "flat_table", "balance_deviation", "log10_block_norm", "group_element", "orbit_grid",
           "screen_orbit", "orbit_ranges", "reduction_gap", "comparison_text"]

#: The seed of the synthetic problem.
PROBLEM_SEED = 0
#: The seed of the random parameters for the inequalities of the argument (report page).
BOUND_SEED = 5
#: The tiny weight decay of the warm start.
WARM_DECAY = 1e-3


def lora_problem() -> lora.LoRAProblem:
    """The chapter's synthetic problem (section "The model and its scale redundancy"):
    ``n = 20`` Gaussian samples in ``d = 3``, width ``m = 8``, rank ``r = 2``, so
    ``D = r (m + d) = 22`` parameters, with targets from a teacher rank-2 update plus noise of
    standard deviation 0.1 (seed :data:`PROBLEM_SEED`; the report's grid of instances,
    ``attnbook.experiments.part2.LORA_INSTANCE_GRID``, starts from the same one)."""
    return lora.make_problem(rng=np.random.default_rng(PROBLEM_SEED), n=20, d=3, width=8,
                             rank=2, noise_std=0.1)


def weight_decay_minimizer(problem: lora.LoRAProblem, lam: float) -> np.ndarray:
    """A minimizer of ``L + lam (||U||_F^2 + ||V||_F^2)`` by BFGS from the teacher
    (``gtol = 1e-9``). At a stationary point it is exactly balanced, ``U^T U = V V^T``
    (eq-ch09-balance: ``U^T grad_U f - (grad_V f) V^T = 2 lam (U^T U - V V^T)``)."""
    minimizer, _ = villani.minimize_data_loss(
        problem.with_regularizer(Regularizer("weight_decay", lam)), problem.theta_teacher,
        gtol=1e-9)
    return minimizer


def balanced_stationary_point(problem: lora.LoRAProblem) -> tuple[np.ndarray, np.ndarray]:
    """The chapter's stationary point of the data loss (section "The orbit through a
    stationary point"): BFGS from the weight-decay warm start
    (:func:`weight_decay_minimizer` with ``lam = WARM_DECAY``) without the decay, then the
    balanced point ``(P S^(1/2), S^(1/2) Q^T)`` of the SVD ``U V = P S Q^T`` of the polished
    point, which the product alone fixes (``U*^T U* = V* V*^T``). Returns
    ``(warm start, theta*)``."""
    warm = weight_decay_minimizer(problem, WARM_DECAY)
    polished, _ = villani.minimize_data_loss(problem, warm)
    return warm, problem.svd_factorization(polished, 0.5)


# ---------------------------------------------------------------------------------------------
# The chapter's computations, so that its open cells show the idea and not the bookkeeping.
# ---------------------------------------------------------------------------------------------

#: The seed of the random group elements of the symmetry check.
SYMMETRY_SEED = 1
#: The seed of the direction ``U_0`` in the flat set ``V = 0``.
FLAT_SEED = 4
#: The seed of the random group elements for the check of the orbit sampling.
GROUP_SEED = 6
#: [choice] The grid that samples the ``GL(2)`` orbit, ``G = R(phi) diag(e^(delta/2),
#: e^(-delta/2))``: 90 angles in ``[0, pi)`` and steps of 0.25 in ``delta`` up to ``2 B = 12``.
ORBIT_ANGLES, ORBIT_DELTAS, ORBIT_MAX_DELTA = 90, 49, 12.0
#: The bounds ``B`` on ``|a_1|, |a_2|`` of the sampled orbit.
ORBIT_BOUNDS = (0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0)

def random_group_elements(seed: int = SYMMETRY_SEED, count: int = 4) -> list[np.ndarray]:
    """``count`` random ``2 x 2`` matrices ``3 xi``, ``xi`` standard normal (``default_rng(seed)``),
    elements of ``GL(2)`` with probability one."""
    rng = np.random.default_rng(seed)
    return [3 * rng.standard_normal((2, 2)) for _ in range(count)]


def symmetry_changes(problem: lora.LoRAProblem, lam: float = 0.01,
                     seed: int = SYMMETRY_SEED) -> list[tuple[float, float, float]]:
    """For each of :func:`random_group_elements` ``G``: ``(cond(G), relative change of the data
    loss L, absolute change of L + weight decay lam)`` from the teacher ``theta`` to
    ``(U G, G^-1 V)`` (section "The model and its scale redundancy")."""
    theta = problem.theta_teacher
    decay = problem.with_regularizer(Regularizer("weight_decay", lam))
    rows = []
    for G in random_group_elements(seed):
        moved = problem.act(theta, G)
        change = abs(problem.data_loss(moved) - problem.data_loss(theta))
        rows.append((float(np.linalg.cond(G)), change / problem.data_loss(theta),
                     abs(decay.loss(moved) - decay.loss(theta))))
    return rows


def flat_ray(problem: lora.LoRAProblem, seed: int = FLAT_SEED) -> np.ndarray:
    """The point ``(U_0, 0)`` of the flat set ``V = 0``, ``U_0`` a random direction of unit
    Frobenius norm (``default_rng(seed)``); the ray ``rho (U_0, 0)`` of section "The flat set"."""
    U0 = np.random.default_rng(seed).standard_normal((problem.a.size, problem.rank))
    U0 /= np.linalg.norm(U0)
    return problem.pack(U0, np.zeros((problem.rank, problem.x.shape[1])))


def flat_constants(problem: lora.LoRAProblem, base: np.ndarray) -> tuple[float, float]:
    """``(c1, c2)`` of eq-ch09-flat at ``base = (U_0, 0)``: ``c1 = ||grad L||^2`` and ``c2`` the
    ``V``-block Laplacian of the data loss."""
    g0 = problem.gradient(base)
    return float(g0 @ g0), float(problem.data_laplacian_blocks(base)[1])


def flat_table(problem: lora.LoRAProblem, base: np.ndarray,
               rhos: Sequence[float] = (1.0, 10.0, 1e3, 1e5)):
    """The loss, ``||grad L||^2 / rho^2`` and the two block Laplacians (``V``-block over
    ``rho^2``) along ``rho * base``, one row per ``rho``: constant columns (eq-ch09-flat)."""
    rows = []
    for rho in rhos:
        x = rho * base
        g = problem.gradient(x)
        lap_u, lap_v = problem.data_laplacian_blocks(x)
        rows.append([f"{rho:.0e}", f"{problem.data_loss(x):.6f}", f"{g @ g / rho**2:.6g}",
                     f"{lap_u:.2e}", f"{lap_v / rho**2:.6g}"])
    return result_table(["rho", "L", "||grad L||^2 / rho^2", "Delta_U L",
                         "Delta_V L / rho^2"], rows)


def balance_deviation(problem: lora.LoRAProblem, lam: float) -> tuple[float, float, float]:
    """At :func:`weight_decay_minimizer` ``(problem, lam)``: ``max |U^T U - V V^T|``, its bound
    from the residual gradient, ``(||U|| ||grad_U f|| + ||V|| ||grad_V f||) / (2 lam)``
    (eq-ch09-balance), and ``max |U^T U|`` for scale."""
    decayed = problem.with_regularizer(Regularizer("weight_decay", lam))
    minimizer = weight_decay_minimizer(problem, lam)
    U, V = problem.unpack(minimizer)
    grad_U, grad_V = problem.unpack(decayed.gradient(minimizer))
    bound = (np.linalg.norm(U) * np.linalg.norm(grad_U)
             + np.linalg.norm(V) * np.linalg.norm(grad_V)) / (2 * lam)
    return float(np.abs(U.T @ U - V @ V.T).max()), float(bound), float(np.abs(U.T @ U).max())


def log10_block_norm(problem: villani.FactorizedLoss, theta: np.ndarray, reg: Regularizer,
                     s: float = 1.0, *, exact: bool = True) -> float:
    """``log10 N`` of eq-ch09-block-norm on the ``rho``-curve through ``theta``: the Frobenius
    norm of the larger block at the decisive crossover. ``exact``: the exact roots from the
    balanced point of the curve (``q = k``); else Chapter 8's leading order at each end."""
    c = villani.orbit_constants(problem, theta)
    if not exact:
        return max(villani.asymptotic_crossover_log_radius(end, reg, s) + 0.5 * math.log(end.q)
                   for end in (c, c.swapped())) / math.log(10)
    c = villani.orbit_constants(problem, problem.act(theta, (c.k / c.q) ** 0.25 * np.eye(2)))
    both = villani.orbit_crossovers(c, reg, s)
    return (both.decisive + 0.5 * math.log(c.q)) / math.log(10)


def group_element(phi: float, delta: float) -> np.ndarray:
    """``G = R(phi) diag(e^(delta/2), e^(-delta/2))``, ``R(phi)`` the rotation by ``phi``."""
    rotation = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
    return rotation * np.exp([delta / 2, -delta / 2])


def orbit_grid() -> np.ndarray:
    """The ``(phi, delta)`` pairs of the orbit sample (:data:`ORBIT_ANGLES` angles in
    ``[0, pi)`` times :data:`ORBIT_DELTAS` values of ``delta`` in ``[0, ORBIT_MAX_DELTA]``)."""
    return np.array([(phi, delta)
                     for phi in np.linspace(0.0, math.pi, ORBIT_ANGLES, endpoint=False)
                     for delta in np.linspace(0.0, ORBIT_MAX_DELTA, ORBIT_DELTAS)])


def screen_orbit(problem: villani.FactorizedLoss, theta: np.ndarray, reg: Regularizer,
                 grid: np.ndarray) -> np.ndarray:
    """The leading-order ``log10 N`` at every start ``theta G`` of ``grid`` (the screen)."""
    return np.array([log10_block_norm(problem, problem.act(theta, group_element(*g)), reg,
                                      exact=False) for g in grid])


def orbit_ranges(problem: villani.FactorizedLoss, theta: np.ndarray, reg: Regularizer,
                 grid: np.ndarray, screen: np.ndarray,
                 bounds: Sequence[float] = ORBIT_BOUNDS
                 ) -> tuple[dict[float, list[float]], float]:
    """For each bound ``B``: ``[min, max]`` of the exact ``log10 N`` at the grid points with
    ``delta <= 2 B`` where the ``screen`` is extreme; and the largest gap, in decades, between
    the exact value and the screen at those points."""
    ranges, gaps = {}, []
    for B in bounds:
        inside = np.flatnonzero(grid[:, 1] <= 2 * B + 1e-9)
        ends = inside[[np.argmin(screen[inside]), np.argmax(screen[inside])]]
        ranges[B] = [log10_block_norm(problem, problem.act(theta, group_element(*grid[i])), reg)
                     for i in ends]
        gaps += [abs(exact - screen[i]) for exact, i in zip(ranges[B], ends)]
    return ranges, max(gaps)


def reduction_gap(models: Mapping[str, tuple], reg: Regularizer, seed: int = GROUP_SEED,
                  count: int = 5) -> float:
    """The largest change of ``log10 N`` over ``count`` random ``G = R(phi1) diag(e^a1, e^a2)
    R(phi2)`` against ``R(phi1) diag(e^(d/2), e^(-d/2))``, ``d = a1 - a2``, on every model
    ``(problem, theta)`` of ``models``: the check that one angle and one log-ratio suffice."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(count):
        phi1, phi2 = rng.uniform(0.0, math.pi, 2)
        a1, a2 = rng.uniform(-3.0, 3.0, 2)
        full = group_element(phi1, 0.0) @ np.diag(np.exp([a1, a2])) @ group_element(phi2, 0.0)
        for p, th in models.values():
            worst = max(worst, abs(log10_block_norm(p, p.act(th, full), reg)
                                   - log10_block_norm(p, p.act(th, group_element(phi1, a1 - a2)),
                                                      reg)))
    return worst


def comparison_text(at_point: Mapping[str, float],
                    over_orbit: Mapping[str, Sequence[float]]) -> str:
    """The comparison of ``log10 N`` between ``"attention"`` and ``"LoRA"``: at the chapters'
    points (``at_point``) and over the sampled orbits (``over_orbit``: ``[min, max]`` each)."""
    (att_low, att_high), (lora_low, lora_high) = over_orbit["attention"], over_orbit["LoRA"]
    lines = [f"log10 N at the chapters' points: attention {at_point['attention']:.2f}, "
             f"LoRA {at_point['LoRA']:.2f}",
             f"  LoRA closer in by {at_point['attention'] - at_point['LoRA']:.2f} decades",
             f"over the orbits: attention {att_low:.2f} to {att_high:.2f}, "
             f"LoRA {lora_low:.2f} to {lora_high:.2f}",
             f"  LoRA lower by {att_low - lora_low:.2f} (smallest) and "
             f"{att_high - lora_high:.2f} (largest);",
             f"  overlap {att_low:.2f} to {lora_high:.2f}" if lora_high >= att_low
             else "  no overlap: LoRA's whole range lies below attention's"]
    return "\n".join(lines)
