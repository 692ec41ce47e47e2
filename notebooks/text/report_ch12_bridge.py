# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Checks for Chapter 12: Both papers on one problem
#
# This page of the Reproduction report checks what {doc}`Chapter 12 <ch12_bridge>` measures against what the papers claim. Every verdict is computed by `attnbook.claims` from the numbers, with its threshold printed; the claims ledger collects them. The first cell calls the chapter's functions from `attnbook.chapters.ch12` on the stored runs, so the objects the chapter built are here.

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
import numpy as np

from attnbook import experiments
from attnbook.chapters.ch12 import (certified_minima, chain_means, iterations_to_target_gap,
                                    iterations_to_targets, theorem_33_inputs)
from attnbook.claims import ch12
from attnbook.tables import result_table

side = experiments.load("bridge_side_by_side")      # the chapter's stored runs
sweep = experiments.load("bridge_kappa")
config = experiments.config(side)
METHODS = list(config["methods"])
minima = certified_minima(side)
q_star = minima.q_star
chains, mean_gap, mean_risk = chain_means(side, q_star)
reach_a, reach_b = iterations_to_targets(side["iteration"], mean_gap, mean_risk, minima.r_star)
cap = int(side["iteration"][-1])
kappas = sweep["kappas"]
kappa_methods = list(experiments.config(sweep)["methods"])
k_cap = int(sweep["iteration"][-1])
times = iterations_to_target_gap(sweep)

# %% [markdown]
# ## The sources' claims on this problem
#
# Two claims of the sources, tested here on the other paper's problem.
#
# * Paper 1 says the preconditioner speeds up gradient descent **[summary]**; whether it does the
#   same for Langevin is this book's question, not a claim of either paper **[choice]** (so it is
#   not in the claims ledger). Tested across the condition-number sweep. Rule: at each $\kappa$, the speed-up is the plain chains'
#   time to target divided by the preconditioned chains' (a run that does not reach the target
#   counts as the run length, which makes a plain run's speed-up a lower bound; a diverged
#   preconditioned run counts as never reaching it, speed-up 0); reproduced if the speed-up is
#   at least 2 at every $\kappa$, partly if at least 1.
# * **[summary]** Paper 2, Theorem 3.3: with a mild regularizer the SDE comes within $\epsilon$ of the
#   global minimum in expectation. **[choice]** Tested with the annealed chains from the random
#   start (no structure but the preconditioner's metric) and, separately, the plain Langevin
#   chains (no structure at all): the final chain-mean gap must be at most
#   $\epsilon = 10^{-3}$ of the initial gap (partly: at most $10\epsilon$) within 4000 iterations. Beside each
#   part the Gibbs offset $sD/4$ at the chain's final temperature is printed in units of $\epsilon$: a chain
#   whose offset exceeds $\epsilon$ cannot come within $\epsilon$ in expectation at that temperature, however
#   long it runs: the part cannot succeed by construction, so it is **not testable at this
#   temperature** (the reason Chapter 10 gives for calling the theorem as stated not testable at a
#   fixed temperature), and the combined verdict rests on the other part and names the skipped one.

# %%
from attnbook.verdicts import verdict_table
plain, pre = kappa_methods.index("langevin"), kappa_methods.index("precond langevin")
t_plain = np.where(np.isfinite(times[:, plain]), times[:, plain], k_cap)
t_pre = np.where(np.isfinite(times[:, pre]), times[:, pre], np.inf)
speedup = np.maximum(t_plain, 1) / np.maximum(t_pre, 1)
display(verdict_table([("[choice]", ch12.preconditioner_speedup(speedup, kappas))]))
inputs = theorem_33_inputs(side, mean_gap)     # per method: eps, final gap, final s, offset
for name in inputs.eps:
    print(f"  {name}: initial gap {inputs.initial_gap[name]:.3g}, eps = {inputs.eps[name]:.2e}, "
          f"final gap {inputs.final_gap[name]:.2e}; final temperature "
          f"{inputs.final_temperature[name]:.2e}, Gibbs offset s D / 4 = "
          f"{inputs.offset_over_eps[name] * inputs.eps[name]:.2e} = "
          f"{inputs.offset_over_eps[name]:.3g} eps")
theorem, theorem_parts = ch12.theorem_33_on_part1(inputs.gap_over_eps, inputs.offset_over_eps)
verdict_table([("[summary]", theorem, theorem_parts)])

# %% [markdown]
# Paper 1's preconditioner claim carries over to Langevin for $\kappa\le 100$ (speed-ups 4.09 and at
# least 23.1) and fails at $\kappa = 1000$, where the mild term on the raw weights makes the
# preconditioned chain unstable; with the mild term on $(U, V)$ it does not (the sweep's fifth
# method), so the verdict is "partly", for a reason that belongs to the combination of the two
# papers rather than to either. For Theorem 3.3 the verdict rests on the annealed chains alone. They come within $10\epsilon$ but
# not $\epsilon$ in 4000 iterations (final gap $1.48\times10^{-3}$, 5.67$\epsilon$, against
# $\epsilon = 2.61\times10^{-4}$), with a Gibbs offset at their final temperature of only
# $0.0785\,\epsilon$: for them the dynamics, not the temperature, is what falls short, and the part is
# partly reproduced. Plain Langevin is not testable at its temperature: at the fixed $s_0$ its
# Gibbs offset $s_0D/4$ is $7.85\,\epsilon$, so it could not come within $\epsilon$ in expectation however
# long it ran (it ends at $8.37\times10^{-3}$, 32.1$\epsilon$: a measurement of the chain at $s_0$, not a
# test of the theorem). That is decided by the choice of $s_0$ (this book's), not by the theorem; at
# a temperature below $4\epsilon/D$ the offset would be below $\epsilon$, and the chain slower still. So
# "partly reproduced" here means: the one chain family that can reach $\epsilon$ at its temperature
# came within $10\epsilon$ of it. The theorem promises a
# time $O(\log(1/\epsilon))$ with unknown constants, not a budget: "not within 4000 iterations" is a
# statement about cost on this problem (the slow orbit directions, as for gradient descent), not a
# refutation.

# %% [markdown]
# ## Where each method ends on the orbit
#
# With one sample set the minima of $\hat Q$ are not one orbit but several local minima along the
# broken $O(d)$ orbit (Chapter 5). For the final iterates of the chapter's side-by-side run, the
# iterate's own coordinates say where it is: the rotation $O$ of its projection on $\hat S$ relative
# to the spectral point ($\det O$ and $\|O - I\|_F$), and the local minimum reached from the final
# iterate by the reference minimizer (its value above $\hat Q^\star$ names the basin; its excess risk
# is what a short polish would deploy).

# %%
print("dist_P: distance to S_hat; basin reached: its Q - Q* and its excess risk R")
result_table(["method", "det O", "||O - I||_F", "dist_P", "basin Q - Q*", "basin R"],
             [[name if c == 0 else "", f"{side['end_det'][k, c]:+.0f}",
               f"{side['end_rotation'][k, c]:.3f}", f"{side['end_dist_P_hat'][k, c]:.3f}",
               f"{side['end_min_value'][k, c] - q_star:.2e}",
               f"{side['end_min_excess_risk'][k, c]:.4f}"]
              for k, name in enumerate(METHODS) for c in range(chains[k])])

# %% [markdown]
# The runs from the spectral point stay on the $\det O = +1$ component near it
# ($\|O - I\|_F$ from 1.737 to 2.176); the random starts land on both components, further out
# (4.384 to 4.814). Along the orbit the noise moves the iterate, and annealing moved it *down*:
# Algorithm 1's final iterate lies in a basin $7.38\times10^{-4}$ above $\hat Q^\star$, the four
# annealed chains from the same start in basins $3.16\times10^{-4}$ to $6.26\times10^{-4}$ above it, all
# lower; at fixed temperature the four chains from the spectral start end in basins
# $5.81\times10^{-4}$ to $9.27\times10^{-4}$ above it, on both sides of Algorithm 1's. Plain gradient
# descent from the random start happens to reach a lower basin ($1.98\times10^{-4}$) than any run from
# the spectral start. None of this decides the risk: the excess risks of the basins reached run from
# 0.0074 to 0.0132 with no order by value. Over 4000 iterations where an iterate sits on
# the orbit is set by its start and its noise, not by convergence; noise helps the objective when it
# is annealed and is neutral for the risk here.

# %% [markdown]
# ## Cost: gradient evaluations and wall time
#
# Every method pays one gradient of the layer per iteration and chain, so the machine-independent
# cost of a target is iterations times chains. The next cell shows the wall time of one iteration,
# measured when the runs were made; it varies from machine to machine and from run to run.

# %% tags=["nbval-ignore-output"]
seconds = np.nanmean(side["seconds"], axis=1) / cap        # per iteration and chain
cost_rows = []
for k, name in enumerate(METHODS):
    cost = [f"{v * chains[k]:.0f} evaluations, {v * chains[k] * seconds[k]:.1f} s"
            if np.isfinite(v) else "not reached" for v in (reach_a[k], reach_b[k])]
    cost_rows.append([name, 1e3 * seconds[k], cost[0], cost[1]])
print("ms per iteration and chain; cost to reach (a) and (b)")
result_table(["method", "ms", "(a)", "(b)"], cost_rows, number_format=".2f")
