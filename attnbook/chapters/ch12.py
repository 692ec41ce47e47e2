"""Chapter 12 (Both papers on one problem): sizes, reference minimum and times to target.

The chapter (``notebooks/ch12_bridge.ipynb``) computes with these functions, from the stored runs
``bridge_side_by_side`` and ``bridge_kappa`` (configured in
:mod:`attnbook.experiments.bridge_runs`), the lowest certified minimum of the objective, the
chain-mean curves of the eight methods and their iterations to the two targets, and the
iterations to the target gap across the condition-number sweep; its Reproduction report page
(``notebooks/report_ch12_bridge.ipynb``) calls the same functions on the same runs. The
chapter's tables (:func:`targets_table`, :func:`kappa_table`, :func:`floor_table`,
:func:`slide_table`) and the quadratic model of its floors section (:func:`laplace_fill`) are
here too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple, Sequence

import numpy as np

from attnbook import experiments
from attnbook.experiments import bridge_runs
from attnlib import langevin
from attnbook.tables import result_table

__all__ = ["P", "D_IN", "SIGMA", "DIM", "RISK_TARGET", "GAP_TARGET", "base_temperature",
           "CertifiedMinima", "certified_minima", "ChainMeans", "chain_means",
           "iterations_to_targets", "kappa_target_gap", "iterations_to_target_gap",
           "THEOREM_33_METHODS", "EPS_FRACTION", "Theorem33Inputs", "theorem_33_inputs",
           "WELL_MOMENTS", "targets_table", "kappa_table", "kappa_ends", "laplace_fill",
           "floor_offsets", "floor_table", "slide_table"]

#: [choice] Part I's problem of the chapter, Chapter 5's default, with ``p = 20`` outputs, ``d = 10``
#: input dimensions, label noise ``sigma = 0.1``; the sample size ``n`` is each run's setting.
P, D_IN, SIGMA = 20, 10, 0.1
#: The number of trained weights of ``theta = (A, B)``, ``D = p d + d^2``.
DIM = P * D_IN + D_IN ** 2
#: [choice] Target (a), a chain-mean excess risk ``R <= RISK_TARGET * R*``.
RISK_TARGET = 1.1
#: [choice] Target (b), a chain-mean gap ``Q_hat - Q* <= GAP_TARGET * (initial gap)``.
GAP_TARGET = 1e-3

#: [choice] The methods on which Theorem 3.3 is tested on Part I's problem, the annealed chains
#: from the random start (no structure but the preconditioner's metric) and plain Langevin at the
#: fixed temperature s_0 (no structure at all).
THEOREM_33_METHODS = ("annealed (random)", "langevin")
#: [choice] Theorem 3.3's eps on Part I's problem, as this fraction of a method's initial gap.
EPS_FRACTION = 1e-3

Run = Mapping[str, np.ndarray]


def base_temperature(n: int) -> float:
    """The chapter's temperature unit at sample size ``n``: ``s_0(n) = 4 eps_OLS(n) / D``, with
    ``eps_OLS(n) = p sigma^2 d / (2 (n - d - 1))`` the expected excess risk of least squares, so
    that the Laplace offset ``s_0 D / 4`` of the Gibbs mean equals it
    (:func:`attnbook.experiments.bridge_runs.base_temperature` at :data:`P`, :data:`D_IN`,
    :data:`SIGMA`)."""
    return bridge_runs.base_temperature(n, P, D_IN, SIGMA)


@dataclass(frozen=True)
class CertifiedMinima:
    """Local minima of ``Q_hat`` certified by the reference minimizer (gradient norm
    ``<= 1e-8``): first those from the reference starts, then those reached by polishing the
    final iterate of every trajectory of ``bridge_side_by_side``."""

    values: np.ndarray              # Q_hat at each minimum
    excess_risks: np.ndarray        # its population excess risk R
    min_eigenvalues: np.ndarray     # the smallest eigenvalue of its Hessian
    origins: tuple[str, ...]        # where it was reached from

    @property
    def lowest(self) -> int:
        """The index of the lowest minimum, the reference ``Q*`` of every gap."""
        return int(np.argmin(self.values))

    @property
    def q_star(self) -> float:
        """``Q* = min Q_hat`` over the certified minima."""
        return float(self.values[self.lowest])

    @property
    def r_star(self) -> float:
        """``R*``: the excess risk of the lowest minimum."""
        return float(self.excess_risks[self.lowest])


def certified_minima(side: Run) -> CertifiedMinima:
    """The certified minima of the stored run ``side`` (``bridge_side_by_side``), reference
    starts first, then the polished final iterates method by method and chain by chain
    (section "Side by side on the same data")."""
    settings = experiments.config(side)
    methods = list(settings["methods"])
    ends = np.isfinite(side["end_min_value"])                     # (methods, chains)
    return CertifiedMinima(
        values=np.concatenate([side["ref_value"], side["end_min_value"][ends]]),
        excess_risks=np.concatenate([side["ref_excess_risk"], side["end_min_excess_risk"][ends]]),
        min_eigenvalues=np.concatenate([side["ref_min_eigenvalue"],
                                        side["end_min_min_eigenvalue"][ends]]),
        origins=tuple(settings["reference_starts"])
        + tuple(f"final iterate of {methods[k]} (chain {c})" for k, c in zip(*np.nonzero(ends))))


class ChainMeans(NamedTuple):
    """Per method of ``bridge_side_by_side``: its number of chains and its chain-mean curves
    against the recorded iterations."""

    chains: np.ndarray              # (methods,): 1 for a deterministic method, 4 for Langevin
    mean_gap: np.ndarray            # (methods, records): mean over chains of Q_hat - Q*
    mean_risk: np.ndarray           # (methods, records): mean over chains of the excess risk


def chain_means(side: Run, q_star: float) -> ChainMeans:
    """The chain counts and chain-mean gap ``Q_hat(theta_k) - Q*`` and excess risk
    ``R(theta_k)`` of every method of ``side`` (``bridge_side_by_side``; a method's unused chain
    slots hold NaN)."""
    return ChainMeans(chains=np.sum(np.isfinite(side["objective"][:, :, 0]), axis=1),
                      mean_gap=np.nanmean(side["objective"] - q_star, axis=1),
                      mean_risk=np.nanmean(side["excess_risk"], axis=1))


def iterations_to_targets(iteration: np.ndarray, mean_gap: np.ndarray, mean_risk: np.ndarray,
                          r_star: float) -> tuple[np.ndarray, np.ndarray]:
    """Per method (the rows of :func:`chain_means`' ``mean_gap`` and ``mean_risk``), the first
    recorded iteration after which its chain-mean curve stays below target (a),
    ``R <= RISK_TARGET * R*``, and below target (b), ``Q_hat - Q* <= GAP_TARGET * (Q_hat(theta_0)
    - Q*)``, to the end of the run (:func:`attnlib.langevin.hitting_times`; NaN when not
    reached)."""
    reach_a = np.array([langevin.hitting_times(iteration, risk, [RISK_TARGET * r_star])[0]
                        for risk in mean_risk])
    reach_b = np.array([langevin.hitting_times(iteration, gap, [GAP_TARGET * gap[0]])[0]
                        for gap in mean_gap])
    return reach_a, reach_b


def kappa_target_gap(n: int) -> float:
    """The target gap of the condition-number sweep: twice the Laplace offset,
    ``2 s_0(n) D / 4``."""
    return 2 * base_temperature(n) * DIM / 4


def iterations_to_target_gap(sweep: Run) -> np.ndarray:
    """For the stored run ``sweep`` (``bridge_kappa``), per condition number and method, the
    first recorded iteration after which the chain-mean gap to the local minimum reached from
    the spectral start (clipped at 0) stays below :func:`kappa_target_gap` (section "Does the
    preconditioner remove the condition number for Langevin?"): an array (kappas, methods), NaN
    where the target is not reached within the run and ``inf`` where a chain diverged."""
    settings = experiments.config(sweep)
    target = kappa_target_gap(settings["n"])
    times = np.full((len(sweep["kappas"]), len(settings["methods"])), np.inf)
    for i, j in np.ndindex(times.shape):
        if np.nansum(sweep["diverged"][i, j]):
            continue
        curve = np.nanmean(sweep["objective"][i, j], axis=0) - sweep["basin_value"][i]
        times[i, j] = langevin.hitting_times(sweep["iteration"], np.maximum(curve, 0.0),
                                             [target])[0]
    return times


class Theorem33Inputs(NamedTuple):
    """Per method of :data:`THEOREM_33_METHODS`: what the verdict on Theorem 3.3 on Part I's
    problem (:func:`attnbook.claims.ch12.theorem_33_on_part1`) is computed from."""

    initial_gap: dict[str, float]       # chain-mean Q_hat - Q* at iteration 0
    eps: dict[str, float]               # EPS_FRACTION * initial gap
    final_gap: dict[str, float]         # chain-mean Q_hat - Q* at the last iteration
    final_temperature: dict[str, float]  # s at the last iteration
    gap_over_eps: dict[str, float]      # final gap / eps
    offset_over_eps: dict[str, float]   # Gibbs offset s D / 4 at the final s, over eps


def theorem_33_inputs(side: Run, mean_gap: np.ndarray,
                      methods: tuple[str, ...] = THEOREM_33_METHODS) -> Theorem33Inputs:
    """For each of ``methods`` of ``side`` (``bridge_side_by_side``) with chain-mean gaps
    ``mean_gap`` (:func:`chain_means`): ``eps`` (:data:`EPS_FRACTION` of its initial gap), its
    final gap, its final temperature (s_0 at a fixed temperature, ``anneal.factor * s_0`` at the
    end of the annealing schedule) and, over ``eps``, its final gap and the Gibbs offset
    ``s D / 4`` at that temperature (the report's section "The sources' claims on this
    problem")."""
    settings = experiments.config(side)
    names = list(settings["methods"])
    s0 = base_temperature(settings["n"])
    final_s = {"fixed": s0, "annealed": s0 * settings["anneal"]["factor"]}
    out: dict[str, dict[str, float]] = {field: {} for field in Theorem33Inputs._fields}
    for name in methods:
        k, noise = names.index(name), settings["methods"][name]["noise"]
        if noise not in final_s:
            raise ValueError(f"{name!r} runs without noise: Theorem 3.3 is about Langevin")
        eps = EPS_FRACTION * float(mean_gap[k, 0])
        values = {"initial_gap": float(mean_gap[k, 0]), "eps": eps,
                  "final_gap": float(mean_gap[k, -1]), "final_temperature": final_s[noise],
                  "gap_over_eps": float(mean_gap[k, -1]) / eps,
                  "offset_over_eps": final_s[noise] * DIM / 4 / eps}
        for field, value in values.items():
            out[field][name] = value
    return Theorem33Inputs(**out)


# ---------------------------------------------------------------------------------------------
# The chapter's tables and its quadratic model, so that its open cells show the idea.
# ---------------------------------------------------------------------------------------------

#: The five moments of the live check of preconditioned Langevin on the double well.
WELL_MOMENTS = {"x": lambda z: z[..., 0], "y": lambda z: z[..., 1],
                "x^2": lambda z: z[..., 0] ** 2, "xy": lambda z: z[..., 0] * z[..., 1],
                "y^2": lambda z: z[..., 1] ** 2}


def _when(value: float, cap: int, never: str | None = None) -> str:
    if np.isfinite(value):
        return f"{value:.0f}"
    return never if never is not None else f">{cap}"


def targets_table(methods: Sequence[str], means: ChainMeans, reach_a: np.ndarray,
                  reach_b: np.ndarray, cap: int):
    """Per method of the side-by-side run: its chains, the gap at the start, the iterations to
    targets (a) and (b) (``>cap`` when not reached) and the gap and excess risk at the end."""
    chains, mean_gap, mean_risk = means
    return result_table(["method", "chains", "gap start", "(a)", "(b)", "gap end", "R end"],
                        [[name, int(chains[k]), f"{mean_gap[k, 0]:.2e}", _when(reach_a[k], cap),
                          _when(reach_b[k], cap), f"{mean_gap[k, -1]:.2e}",
                          f"{mean_risk[k, -1]:.4f}"] for k, name in enumerate(methods)])


def _at_kappa(sweep: Run, times: np.ndarray, i: int, j: int, spaced: bool) -> str:
    diverged = np.nansum(sweep["diverged"][i, j])
    cap = int(sweep["iteration"][-1])
    if diverged:
        return f"diverged ({int(diverged)})" if spaced else "diverged"
    if np.isfinite(times[i, j]):
        return f"{times[i, j]:.0f}"
    return f"> {cap}" if spaced else f">{cap}"


def kappa_table(sweep: Run, times: np.ndarray):
    """Iterations to the target gap (:func:`iterations_to_target_gap` ``times``), methods
    against the condition numbers of the ``bridge_kappa`` run (``> cap`` not reached within the
    run, ``diverged (chains)`` when chains diverged)."""
    methods = list(experiments.config(sweep)["methods"])
    return result_table(["method"] + [f"kappa {kappa:.0f}" for kappa in sweep["kappas"]],
                        [[name, *(_at_kappa(sweep, times, i, j, True)
                                  for i in range(len(sweep["kappas"])))]
                         for j, name in enumerate(methods)])


def kappa_ends(sweep: Run, times: np.ndarray) -> dict[str, str]:
    """Per method of the ``bridge_kappa`` run: its iterations to the target at the smallest and
    the largest condition number, ``"first / last"``."""
    methods = list(experiments.config(sweep)["methods"])
    last = len(sweep["kappas"]) - 1
    return {name: f"{_at_kappa(sweep, times, 0, j, False)} / "
                  f"{_at_kappa(sweep, times, last, j, False)}" for j, name in enumerate(methods)}


def laplace_fill(floors: Run, i: int) -> float:
    """The quadratic model eq-ch12-2 of the ``bridge_floors`` run at sample size index ``i``,
    divided by ``s / 4``: ``sum_j (1 - (1 - h lambda_j)^(2k)) / (1 - h lambda_j / 2)`` over the
    Hessian eigenvalues ``lambda_j`` at the basin minimizer, averaged over the iterations ``k``
    of the second half of the run."""
    iteration = floors["iteration"]
    k = iteration[iteration >= iteration[-1] / 2][:, None]
    eig, h = floors["hessian"][i], float(floors["step"][i])
    return float(((1 - (1 - h * eig) ** (2 * k)) / (1 - h * eig / 2)).sum(axis=1).mean())


def floor_offsets(floors: Run) -> tuple[np.ndarray, np.ndarray]:
    """The Gibbs offsets of the ``bridge_floors`` run, per sample size and temperature, as
    ``(mean, standard error over chains)``: of the objective, ``F_s - Q*`` over the second half
    of each chain, and of the excess risk above the basin minimizer's."""
    iteration = floors["iteration"]
    half = iteration >= iteration[-1] / 2
    shape = (len(floors["n_values"]), len(floors["temperatures"]), 2)
    offset, risk_offset = np.empty(shape), np.empty(shape)
    for i, j in np.ndindex(shape[:2]):
        for out, key, base in ((offset, "objective", "basin_value"),
                               (risk_offset, "excess_risk", "basin_excess_risk")):
            per_chain = (floors[key][i, j][:, half] - floors[base][i]).mean(axis=1)
            out[i, j] = per_chain.mean(), per_chain.std(ddof=1) / np.sqrt(per_chain.size)
    return offset, risk_offset


def floor_table(floors: Run, offset: np.ndarray, risk_offset: np.ndarray,
                predicted: np.ndarray):
    """Per sample size and temperature: the objective's Gibbs offset, its ``D_eff = 4 offset /
    s`` against the quadratic model's (``predicted``, eq-ch12-2), the excess-risk offset, the
    basin minimizer's excess risk ``R*(n)`` and the least-squares value ``OLS(n)``."""
    from attnlib import population

    rows = []
    for i, n in enumerate(floors["n_values"]):
        ols = population.ols_excess_risk(int(n), D_IN, P, SIGMA)
        for j, s in enumerate(floors["temperatures"]):
            rows.append([int(n), f"{s:.0e}", f"{offset[i, j, 0]:.2e} +- {offset[i, j, 1]:.0e}",
                         4 * offset[i, j, 0] / s, 4 * predicted[i, j] / s,
                         f"{risk_offset[i, j, 0]:+.2e} +- {risk_offset[i, j, 1]:.0e}",
                         f"{floors['basin_excess_risk'][i]:.4f}", f"{ols:.4f}"])
    return result_table(["n", "s", "F_s - Q*", "D_eff", "model", "excess-risk offset", "R*(n)",
                         "OLS(n)"], rows, number_format=".1f")


def slide_table(side: Run, q_star: float, means: ChainMeans, reach_a: np.ndarray,
                reach_b: np.ndarray, at_ends: Mapping[str, str]):
    """The slide's table, per method of the side-by-side run: gradient evaluations to target
    (a), iterations to (b), the final excess risk, the median of the basin values above ``Q*``
    over its chains, and the iterations to the target at the ends of the condition-number sweep
    (``at_ends``, :func:`kappa_ends`; ``-`` for a method not in the sweep)."""
    chains, _, mean_risk = means
    rows = []
    for k, name in enumerate(experiments.config(side)["methods"]):
        basin = np.nanmedian(side["end_min_value"][k, :chains[k]] - q_star)
        rows.append([name, _when(reach_a[k] * chains[k], 0, "never"), _when(reach_b[k], 0, "never"),
                     f"{mean_risk[k, -1]:.4f}", f"{basin:.2e}", at_ends.get(name, "-")])
    return result_table(["method", "(a)", "(b)", "final R", "basin Q - Q*", "kappa 1 / 1000"],
                        rows)
