"""Chapter 12 (Both papers on one problem): sizes, reference minimum and times to target.

The chapter (``notebooks/ch12_bridge.ipynb``) computes with these functions, from the stored runs
``bridge_side_by_side`` and ``bridge_kappa`` (configured in
:mod:`attnbook.experiments.bridge_runs`), the lowest certified minimum of the objective, the
chain-mean curves of the eight methods and their iterations to the two targets, and the
iterations to the target gap across the condition-number sweep; its Reproduction report page
(``notebooks/report_ch12_bridge.ipynb``) calls the same functions on the same runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple

import numpy as np

from attnbook import experiments
from attnbook.experiments import bridge_runs
from attnlib import langevin

__all__ = ["P", "D_IN", "SIGMA", "DIM", "RISK_TARGET", "GAP_TARGET", "base_temperature",
           "CertifiedMinima", "certified_minima", "ChainMeans", "chain_means",
           "iterations_to_targets", "kappa_target_gap", "iterations_to_target_gap",
           "THEOREM_33_METHODS", "EPS_FRACTION", "Theorem33Inputs", "theorem_33_inputs"]

#: [choice] Part I's problem of the chapter, Chapter 5's default, with ``p = 20`` outputs, ``d = 10``
#: input dimensions, label noise ``sigma = 0.1``; the sample size ``n`` is each run's setting.
P, D_IN, SIGMA = 20, 10, 0.1
#: The number of trained weights of ``theta = (A, B)``, ``D = p d + d^2``.
DIM = P * D_IN + D_IN ** 2
#: [choice] Target (a), a chain-mean excess risk ``R <= RISK_TARGET * R*``.
RISK_TARGET = 1.1
#: [choice] Target (b), a chain-mean gap ``Q_hat - Q* <= GAP_TARGET * (initial gap)``.
GAP_TARGET = 1e-3

#: [choice] The methods on which Theorem 3.3 is tested on Part I's problem: the annealed chains
#: from the random start (no structure but the preconditioner's metric) and plain Langevin at the
#: fixed temperature s_0 (no structure at all).
THEOREM_33_METHODS = ("annealed (random)", "langevin")
#: [choice] Theorem 3.3's eps on Part I's problem: this fraction of a method's initial gap.
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
