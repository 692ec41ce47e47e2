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
# # Chapter 12: Both papers on one problem
#
# :::{admonition} Overview
# Part I {cite}`goel2026` says that *structure* (a spectral start, a preconditioner and a balancing
# regularizer) makes gradient descent on the attention regression converge fast. Part II
# {cite}`frangi2026` says that a *mild regularizer* makes noisy gradient descent, Langevin
# dynamics, converge in law without any structure. This chapter runs both on Part I's problem:
# Algorithm 1, plain gradient descent and four Langevin variants, on the same data and seeds: what
# each ingredient buys, at what cost, and which method to use when.
#
# **The answer.** The preconditioner makes gradient descent and Langevin fast and free of the
# condition number (if the whole potential is well conditioned where it whitens); noise helps only
# annealed, and then the objective, not the risk; the sampling floor, not the optimizer, sets the
# risk.
#
# **You need** Chapters 4, 5, 7 and 10. **Time:** about 2.5 hours, with the three exercises.
# Optional on a first reading: the sections on the orbit and on the cost.
# :::
#
# :::{dropdown} What the papers claim
# - **[summary]** Part I: Algorithm 1 (spectral start, preconditioner, balancing regularizer)
#   converges geometrically on the attention regression.
# - **[summary]** Part II: a mild regularizer makes the loss a Villani function; its Gibbs measure
#   then satisfies a Poincaré inequality, and Langevin dynamics comes within $\epsilon$ of the
#   minimum in time $O(\log(1/\epsilon))$ (Theorem 3.3).
# - Neither paper runs both views on one task.
# :::
#
# :::{dropdown} This book's choices
# - **[choice]** The data, the objective $\hat Q$, the mild term $R_m$, the temperature unit $s_0$,
#   the steps and the starts ("The problem, the potential and the three stored runs").
# - **[choice]** The two targets, (a) on the excess risk and (b) on the optimization gap ("Side by
#   side on the same data").
# - **[choice]** The condition-number sweep at $n = 100$ and the floors run ("Does the
#   preconditioner remove the condition number for Langevin?", "The floors").
# :::

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import matplotlib.pyplot as plt
import numpy as np

from attnlib import langevin, population, potentials
from attnbook import experiments
from attnbook.chapters.ch12 import (D_IN, DIM, P, SIGMA, WELL_MOMENTS, base_temperature,
                                    certified_minima, chain_means, floor_offsets, floor_table,
                                    iterations_to_target_gap, iterations_to_targets, kappa_ends,
                                    kappa_table, kappa_target_gap, laplace_fill, slide_table,
                                    targets_table)
from attnbook.claims import ch12
from attnbook.experiments import bridge_runs
from attnbook.plotting import OKABE_ITO, figure, legend_below, plot_series, use_book_style
from attnbook.tables import result_table

use_book_style()
rng = np.random.default_rng(12)          # the live check of the preconditioned sampler below
side = experiments.load("bridge_side_by_side")      # python -m attnbook.experiments bridge_side_by_side
sweep = experiments.load("bridge_kappa")            # python -m attnbook.experiments bridge_kappa
floors = experiments.load("bridge_floors")          # python -m attnbook.experiments bridge_floors
config = experiments.config(side)
N = config["n"]
METHODS = list(config["methods"])
floor_ols = population.ols_excess_risk(N, D_IN, P, SIGMA)
s0 = base_temperature(N)
print(f"D = p d + d^2 = {DIM} parameters")
print(f"OLS excess risk p sigma^2 d / (2 (n - d - 1)) = "
      f"{floor_ols:.3g} at n = {N}")
print(f"s_0 = 4 floor / D = {s0:.3g}: s_0 D / 4 = {s0 * DIM / 4:.3g}")
print(f"annealed to {s0 * config['anneal']['factor']:.3g} in {config['anneal']['stages']} stages")
print(f"mild regularizer: log form, lambda_m = {config['mild']['lam']:g}")

# %% [markdown]
# ## The problem, the potential and the three stored runs
#
# {numref}`fig-ch12-bridge` is the chapter on one page. Both routes start from one problem:
# Part I's regression, its objective $\hat Q$ and its $D = 300$ weights. On the left, Algorithm 1 goes
# from a spectral start by preconditioned gradient steps to a minimum $\hat Q^\star$. On the right,
# Part II's Langevin dynamics goes from a random start, on $\hat Q$ plus a mild regularizer $R_m$, to
# the Gibbs measure $\mu_s$, whose mean sits about $sD/4$ above the minimum. The dashed arrows meet at
# the bridge, preconditioned Langevin: Algorithm 1's metric with Part II's noise. The eight methods
# below are the two routes and six mixes of their pieces.

# %% mystnb={"figure": {"caption": "Schematic: the shared problem (top) and the two routes to it: Part I's Algorithm 1 (left) reaches a minimum of the objective, Part II's Langevin dynamics (right) samples a Gibbs measure near the minima; preconditioned Langevin (bottom) joins them.", "name": "fig-ch12-bridge"}, "image": {"alt": "Flow diagram: a box with the problem sizes feeds two columns; left, spectral start, preconditioned gradient step, minimum; right, random start, Langevin step on the regularized loss, Gibbs measure; dashed arrows from both steps meet in a bridge box with the preconditioned Langevin step."}} tags=["hide-input"]
# the two routes on the one problem of this chapter (sizes from the stored run's settings)
fig, ax = figure(1, 1, width="small", height=5.8)
ax.set(xlim=(0, 10), ylim=(0, 12.4))
ax.axis("off")
ROUTES = {"Part I: Algorithm 1": (2.4, OKABE_ITO["blue"], [
              "spectral start", r"$\theta \leftarrow \theta - h\,\mathcal{P}\nabla\hat Q$",
              "a minimum $\\hat Q^\\star$"]),
          "Part II: Langevin": (7.6, OKABE_ITO["orange"], [
              "random start",
              "$\\theta \\leftarrow \\theta - h\\nabla f + \\sqrt{sh}\\,\\xi$\n$f = \\hat Q + R_m$",
              "Gibbs $\\mu_s \\propto e^{-2f/s}$\nmean $\\approx \\hat Q^\\star + sD/4$"])}


def box(x, y, text, colour):
    ax.text(x, y, text, ha="center", va="center", fontsize=10, linespacing=1.5,
            bbox=dict(boxstyle="round,pad=0.4", fc="white", ec=colour, lw=1.5))


def arrow(start, end, colour, **kwargs):
    ax.annotate("", xy=end, xytext=start,
                arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.4, **kwargs))


box(5, 11.4, f"one problem: $p = {P}$, $d = {D_IN}$, $n = {N}$\n"
    f"$\\hat Q = \\hat L + \\hat R$ on $\\theta = (A, B)$, $D = {DIM}$", "k")
for title, (x, colour, steps) in ROUTES.items():
    arrow((x, 10.5), (x, 9.6), "k")
    ax.text(x, 9.15, title, ha="center", fontsize=10, fontweight="bold", color=colour)
    for y, step in zip((8.2, 6.3, 4.2), steps):
        box(x, y, step, colour)
    arrow((x, 7.75), (x, 6.95 if x > 5 else 6.75), colour)
    arrow((x, 5.65 if x > 5 else 5.85), (x, 4.95 if x > 5 else 4.65), colour)
for x in (3.4, 6.6):
    arrow((x, 5.8), (5, 2.9), OKABE_ITO["bluish green"], ls="--")
box(5, 1.9, "the bridge: preconditioned Langevin\n"
    r"$\theta \leftarrow \theta - h\,\mathcal{P}\nabla f + \sqrt{sh}\,\mathcal{P}^{1/2}\xi$"
    "\nsame $\\mu_s$; $s$ fixed or annealed", OKABE_ITO["bluish green"])
ax.text(5, 0.3, "eight methods: same data, seeds and $\\hat Q^\\star$", ha="center", fontsize=9)
plt.show()

# %% [markdown]
# Everything below is this book's choice; neither source specifies it.
#
# * Data: seed 0's default problem of Chapter 5 ($p = 20$, $d = 10$, $n = 500$, $\kappa(\Sigma) = 10$,
#   $\sigma = 0.1$, leave-one-out mask): one sample set is both the regression data and the
#   attention context (as in Chapter 5).
# * Objective: $\hat Q = \hat L + \hat R$, Algorithm 1's objective with the balancing regularizer at
#   $\lambda = 1$. The deterministic methods train $\hat Q$ exactly. The Langevin chains sample
#   $\mu_s \propto e^{-2f/s}$ (Part II's convention, Chapter 7) for
#   $f = \hat Q + R_m(A) + R_m(B)$, where $R_m(W) = \lambda_m\|W\|_F^2\log(1+\|W\|_F^2)$ is Part II's
#   log-amplified regularizer on the trained weights, at $\lambda_m = 10^{-6}$. The
#   balancing term alone removes the scale symmetry of $\hat L$; the mild term makes the
#   Gibbs measure normalizable: $\hat Q \ge 0$, so
#   $e^{-2f/s} \le e^{-2R_m(A)/s}e^{-2R_m(B)/s}$, which is integrable because $R_m$ grows faster than
#   quadratically (as in Chapter 8), and at this strength it moves the minimizer
#   of $\hat Q$ by the tiny amount shown below.
# * Temperature unit: $s_0 = 4\,\varepsilon_{\mathrm{OLS}}/D$, where $\varepsilon_{\mathrm{OLS}} =
#   p\sigma^2 d/(2(n-d-1))$ is the exact expected excess risk of least squares (the minimax rate,
#   Chapter 6) and $D = pd + d^2 = 300$. At $s_0$ the Laplace offset $s_0 D/4$ of the Gibbs mean
#   (Chapter 10, Exercise 1) equals this statistical floor: noise and sampling error are the same
#   size. The annealed chains lower $s$ geometrically to $s_0/100$ in eight equal stages.
# * Steps: Chapter 4's rule (a curvature bound at the start, $c = 0.5$) for each method's start and
#   preconditioning; a Langevin chain uses the step of its noise-free twin, so noise is the only
#   difference. Random starts are the draw that Chapter 5 uses for seed 0; four chains per Langevin
#   method.
# * The gap is measured against the lowest local minimum of $\hat Q$ found: from Chapter 5's
#   starts (the spectral point and six points of $\hat S$ at random rotations) and from the final
#   iterate of every trajectory of this chapter.
#
# The runs are precomputed (configurations in `attnbook/experiments/bridge_runs.py`); the
# next cell loads them and reruns the first iterations of a few trajectories live to confirm that they match.

# %% mystnb={"code_prompt_show": "Reproduction check: show {type}"} tags=["hide-cell"]
ATOL = {"objective": 1e-12, "excess_risk": 1e-8}   # excess risks are differences of nearly equal
                                                  # risks: other CPUs move them by up to 2e-10
for name in ("bridge_side_by_side", "bridge_kappa", "bridge_floors"):
    _, replay, check = experiments.replay(name, align=bridge_runs.replayed_trajectories, rtol=1e-9,
                                          absolute=ATOL)
    count = int(np.isfinite(replay["objective"][..., 0]).sum())
    print(f"{count} trajectories replayed for {replay['iteration'][-1]} iterations.\n{check}")

# %% [markdown]
# ## Preconditioned Langevin samples the same Gibbs measure
#
# Algorithm 1 multiplies the gradient by a constant linear map, $(G_A, G_B)\mapsto(G_A\hat\Sigma^{-1},
# \hat\Sigma^{-1}G_B\hat\Sigma^{-1})$ (Chapter 4): in the flat coordinates $\theta = (\operatorname{vec}A,
# \operatorname{vec}B)$ it is the symmetric positive definite matrix
# $\mathcal P = \operatorname{diag}(I_p\otimes\hat\Sigma^{-1}, \hat\Sigma^{-1}\otimes\hat\Sigma^{-1})$
# (`bridge.preconditioner_matrix` builds it by applying Algorithm 1's transform to unit vectors).
# Preconditioned Langevin is
#
# $$
# \theta_{k+1} = \theta_k - h\,\mathcal P\nabla f(\theta_k) + \sqrt{sh}\,\mathcal P^{1/2}\xi_k,\qquad
# \xi_k\sim\mathcal N(0, I),
# $$ (eq-ch12-1)
#
# the Euler-Maruyama scheme of $d\theta = -\mathcal P\nabla f\,dt + \sqrt s\,\mathcal P^{1/2}dB_t$
# (`langevin.euler_maruyama(..., preconditioner=P)`). For every constant SPD
# $\mathcal P$ the stationary law of the SDE is the same $\mu_s\propto e^{-2f/s}$ (Exercise 1): the
# preconditioner changes the speed, not the target. It is plain Langevin in the coordinates
# $(U, V) = (A\hat\Sigma^{1/2}, \hat\Sigma^{1/2}B\hat\Sigma^{1/2})$, exactly as Algorithm 1's step is
# plain gradient descent there. Like the plain scheme, the discretisation has an $O(h)$ bias in its
# stationary law.
#
# A check that can fail: on the curved 2-D double well of Chapter 7 at $s = 0.7$, 1000 chains
# started from the Gibbs law and run with a non-diagonal $\mathcal P$; five moments over the second
# half are compared with quadrature, in units of their standard errors (`langevin.gibbs_z_scores`:
# the spread of the 1000 independent chains' own means, which needs no estimate of the
# autocorrelation time). The same check is run with the noise scaled
# as for a 25% higher temperature, and with a step five times larger.

# %%
well = lambda theta: potentials.double_well_2d(theta, tilt=0.2)
axes = [np.linspace(-2.6, 2.6, 261), np.linspace(-2.5, 4.5, 351)]
P_WELL, S_WELL = np.array([[1.0, 0.5], [0.5, 0.6]]), 0.7
start = langevin.gibbs_sample(well, axes, S_WELL, size=1000, rng=rng)
cases = {  # temperature of the noise, preconditioner, step, steps
    "P, right noise, h = 0.01": (S_WELL, P_WELL, 0.01, 4000),
    "no P (plain), h = 0.01": (S_WELL, None, 0.01, 4000),
    "P, noise of 1.25 s, h = 0.01": (1.25 * S_WELL, P_WELL, 0.01, 4000),
    "P, right noise, h = 0.05": (S_WELL, P_WELL, 0.05, 800)}

# %%
rows = []
for label, (s_run, matrix, h, steps) in cases.items():
    run = langevin.euler_maruyama(
        well, start, step=h, temperature=s_run, n_steps=steps, rng=rng,
        record_every=20, record_states=True, preconditioner=matrix)
    late = run.states[run.states.shape[0] // 2:]           # second half
    z = langevin.gibbs_z_scores(late, WELL_MOMENTS, well, axes, S_WELL)
    rows.append([label, *z.values(), max(abs(v) for v in z.values())])
result_table(["case", *WELL_MOMENTS, "max |z|"], rows,
             number_format="+.1f")

# %% [markdown]
# With the right noise every moment lies within 1.1 standard errors of quadrature, with the
# preconditioner and without it. Noise scaled as for $1.25\,s$ moves the moments by up to 6.9
# standard errors, and a five times larger step makes the scheme's $O(h)$ bias visible (up to
# 7.0). So the check can fail, and the preconditioned sampler passes it.

# %% [markdown]
# ## Side by side on the same data
#
# Eight methods on the same sample set (the run `bridge_side_by_side`), 4000 iterations each:
#
# | method | start | preconditioner | noise |
# | --- | --- | --- | --- |
# | Algorithm 1 | spectral | yes | none |
# | random + precond + reg | random | yes | none |
# | GD ($\lambda = 1$) | random | no | none |
# | Langevin | random | no | $s_0$ |
# | precond Langevin | random | yes | $s_0$ |
# | precond Langevin (spectral) | spectral | yes | $s_0$ |
# | annealed (spectral) | spectral | yes | $s_0 \to s_0/100$ |
# | annealed (random) | random | yes | $s_0 \to s_0/100$ |
#
# All train $\hat Q$ with $\lambda = 1$; "GD ($\lambda = 1$)" is plain gradient descent on the same
# objective (Chapter 5's GD baseline trains $\hat L$ alone). First the local minima that set the
# gap.

# %% mystnb={"code_prompt_show": "Reproduction check: show {type}"} tags=["hide-cell"]
names = config["reference_starts"]
print("certified minima of Q_hat from the reference starts (gradient norm <= 1e-8):")
for i, name in enumerate(names):
    print(f"  from {name:18s}: Q_hat* = {side['ref_value'][i]:.6f}, excess risk "
          f"{side['ref_excess_risk'][i]:.4f}, Hessian eigenvalues {side['ref_min_eigenvalue'][i]:.1e}"
          f" .. {side['ref_max_eigenvalue'][i]:.3f}")
minima = certified_minima(side)          # the reference starts first, then the polished ends
polished = minima.values[len(names):]
best = minima.lowest
q_star, r_star = minima.q_star, minima.r_star
print(f"polishing the {polished.size} final iterates of the next section adds {polished.size} more "
      f"minima, Q_hat from {polished.min():.6f} to {polished.max():.6f}; smallest Hessian "
      f"eigenvalue over all {minima.values.size}: {minima.min_eigenvalues.min():.1e}")
print(f"lowest certified minimum: Q_hat* = {q_star:.6f}, reached from the {minima.origins[best]}, "
      f"excess risk R* = {r_star:.4f}, smallest Hessian eigenvalue {minima.min_eigenvalues[best]:.1e}")
print(f"the spectral basin lies {side['ref_value'][0] - q_star:.2e} above it; the mild term "
      f"moves the basin minimizer's Q_hat by {float(side['mild_shift']):.1e}")

# %% [markdown]
# The seven reference starts give seven local minima with $\hat Q^\star$ from 0.098010 to
# 0.098438 and excess risks from 0.0092 to 0.0143: one sample set breaks the $O(d)$ orbit into
# several minima whose population risks differ (Chapter 5). Polishing the final iterates of
# the next section finds lower ones; the lowest, $\hat Q^\star = 0.097780$ (a strict local minimum,
# reached from an annealed chain), is the reference of every gap below, with
# $\mathcal R^\star = 0.0123$. A lower $\hat Q$ is not a lower excess risk: several minima with
# higher values have lower risks. The mild term moves $\hat Q$ by $3.0\times10^{-7}$, far below
# every gap reported here.
#
# The comparison uses two targets: (a) an excess risk within 10% of the reference minimum's, and
# (b) an optimization gap at most $10^{-3}$ of the method's initial gap,
#
# $$
# \text{(a)}\ \ \mathcal R(\theta_k) \le 1.1\,\mathcal R^\star,
# \qquad
# \text{(b)}\ \ \hat Q(\theta_k) - \hat Q^\star \le 10^{-3}\,\big(\hat Q(\theta_0) - \hat Q^\star\big),
# $$ (eq-ch12-targets)
#
# computed on the chain mean for the Langevin methods (four chains) and on the single trajectory
# otherwise, and counted only when the curve *stays* below the target to the end of the run
# (`langevin.hitting_times`).

# %%
iteration = side["iteration"]
means = chain_means(side, q_star)      # per method, means over its chains
chains, mean_gap, mean_risk = means
reach_a, reach_b = iterations_to_targets(iteration, mean_gap, mean_risk,
                                         r_star)
cap = int(iteration[-1])

# %%
print(f"targets: (a) excess risk <= 1.1 R* = {1.1 * r_star:.4f}; "
      "(b) gap at most 1e-3 x initial gap")
print("iterations to (a) and (b); gap and excess risk R at the start and "
      "the end")
targets_table(METHODS, means, reach_a, reach_b, cap)

# %% mystnb={"figure": {"caption": "Optimization gap to the best certified minimum (left) and excess risk (right) against the iteration, for the eight methods on the same data; Langevin curves are means over four chains.", "name": "fig-ch12-side-by-side"}, "image": {"alt": "Two log-scale panels against iteration: eight curves each, deterministic methods falling smoothly, Langevin methods levelling off at a noise floor, annealed ones stepping down."}} tags=["hide-input"]
# colour, line style and a marker of its own for each method (readable without colour vision)
STYLE = {"algorithm1": dict(color=OKABE_ITO["blue"], ls="-", marker="o"),
         "random+precond+reg": dict(color=OKABE_ITO["sky blue"], ls="--", marker="s"),
         "gd (lambda = 1)": dict(color=OKABE_ITO["vermillion"], ls="-.", marker="^"),
         "langevin": dict(color=OKABE_ITO["orange"], ls=(0, (5, 1, 1, 1, 1, 1)), marker="v"),
         "precond langevin": dict(color=OKABE_ITO["bluish green"], ls="--", marker="D"),
         "precond langevin (spectral)": dict(color=OKABE_ITO["bluish green"], ls="-", marker="P"),
         "annealed (spectral)": dict(color=OKABE_ITO["reddish purple"], ls=(0, (1, 1)), marker="X"),
         "annealed (random)": dict(color=OKABE_ITO["reddish purple"], ls=":", marker="*")}
MARKS = dict(markevery=0.12, markersize=5)


def legend_label(name: str) -> str:
    """A method's run name for the legend, with its maths typeset (mathtext)."""
    return name.replace("lambda = 1", r"$\lambda = 1$")


fig, axes_ = figure(1, 2)
for k, name in enumerate(METHODS):
    axes_[0].plot(iteration, np.maximum(mean_gap[k], 1e-9), label=legend_label(name), **STYLE[name], **MARKS)
    axes_[1].plot(iteration, mean_risk[k], **STYLE[name], **MARKS)
axes_[1].axhline(r_star, color="k", lw=0.8, ls=":")
axes_[1].axhline(floor_ols, color="k", lw=0.8, ls="--")
for ax, label in zip(axes_, (r"gap $\hat Q - \hat Q^\star$", r"excess risk $\mathcal{R}$")):
    ax.set_yscale("log")
    ax.set_xlabel("iteration $k$")
    ax.set_ylabel(label)
axes_[1].set_title(r"dotted: $\mathcal{R}^\star$; dashed: OLS", fontsize=9)
legend_below(fig, ncol=3)
plt.show()

# %% [markdown]
# {numref}`fig-ch12-side-by-side` shows the curves. Target (a) costs nothing from the spectral point: the three methods that start there meet it at
# iteration 0 (the spectral start's excess risk is already below $\mathcal R^\star$). From the random
# start the preconditioned methods reach it in 80 (gradient descent), 100 (Langevin) and 90
# (annealed) iterations, plain gradient descent in 1630 and plain Langevin in 1770.
#
# Target (b) is reached by no method within 4000 iterations; the final gaps run from
# $1.20\times10^{-3}$ (random + precond + reg) to $8.37\times10^{-3}$ (plain Langevin). Two different
# floors stop them. The deterministic methods crawl along the nearly flat orbit directions
# (Hessian eigenvalues near $10^{-3}$ against 0.85 at the top). Fixed-temperature
# Langevin cannot go below its Gibbs offset $s_0D/4 = 0.00204$: preconditioned Langevin ends at
# $3.90\times10^{-3}$ from the random start and $4.84\times10^{-3}$ from the spectral one. Annealing
# lowers that floor: the annealed chains from the random start end at $1.48\times10^{-3}$, the
# second-lowest gap of all, and from the spectral start at $3.26\times10^{-3}$, next to Algorithm 1's
# $3.07\times10^{-3}$. The final excess risks (0.0069 to 0.0124) are all several times the OLS value
# 0.00204: at $n = 500$ the layer's own sampling floor, not the optimizer, sets the risk.
#
# ### Cost: gradient evaluations and wall time
#
# Every method pays one gradient per iteration and chain, so a target's machine-independent cost
# is iterations times chains (the slide's unit); the
# {doc}`report page <report_ch12_bridge>` lists wall times.

# %% [markdown]
# ## Where each method ends on the orbit
#
# With one sample set the minima of $\hat Q$ are not one orbit but several local minima along the
# broken $O(d)$ orbit (Chapter 5). {doc}`The report page <report_ch12_bridge>` locates every final
# iterate on it. In short: annealing moved the iterate into lower basins than Algorithm 1's, and none
# of this orders the risk; after 4000 iterations, where an iterate sits is set by its start and its
# noise.

# %% [markdown]
# ## Does the preconditioner remove the condition number for Langevin?
#
# The sources' Algorithm 1 multiplies the gradient of $B$ by $\hat\Sigma^{-1}$. With the
# $A$ side completed (Chapter 4) the step is exactly gradient descent on $(U, V)$, whose conditioning
# does not depend on $\kappa(\Sigma)$ when $X^\star = M\Sigma^{1/2}$ is held fixed (Chapter 5 measured
# this). Preconditioned Langevin is plain Langevin in
# the same coordinates, so the same should hold for the chains, *if the potential is itself
# $\kappa$-free in $(U, V)$*. The mild term $R_m(B) = \lambda_m g(\lVert B\rVert_F^2)$ on the raw weights is
# not: in $(U, V)$ its curvature in $V$ is at least (Exercise 3)
#
# $$
# \big\lVert \nabla_V^2 R_m \big\rVert \;\ge\; \frac{2\lambda_m\, g'(\lVert B\rVert_F^2)}{\lambda_{\min}(\hat\Sigma)^2},
# $$ (eq-ch12-stiffness)
#
# which grows like $\lambda_m\,\kappa(\hat\Sigma)^2$ when the top eigenvalue of $\hat\Sigma$ stays
# near 1.
#
# The run `bridge_kappa` uses a smaller sample, $n = 100$, to keep the chapter fast:
# seed 0's problem with $X^\star$ fixed and $\Sigma$'s eigenvalues $\operatorname{geomspace}(1, 1/\kappa, d)$
# for $\kappa\in\{1, 10, 100, 1000\}$ (Chapter 5's sweep), all methods from the same random start,
# 3000 iterations, Langevin at $s_0(n = 100)$ with four chains; a fifth method puts the mild term
# on $(U, V)$ instead of $(A, B)$. The time to target is the first iteration after which the
# (chain-mean) gap to the local minimum reached from the spectral start stays below
# $2 s_0 D/4$, twice the Laplace offset.

# %%
kappas, kappa_config = sweep["kappas"], experiments.config(sweep)
kappa_methods = list(kappa_config["methods"])
n_kappa, k_cap = kappa_config["n"], int(sweep["iteration"][-1])
s_small, target = base_temperature(n_kappa), kappa_target_gap(n_kappa)
times = iterations_to_target_gap(sweep)   # NaN: not reached, inf: diverged
print(f"n = {n_kappa}: s_0 = {s_small:.3g}, "
      f"target gap 2 s_0 D / 4 = {target:.3g}")

# %%
print("iterations to the target gap, methods against kappa:")
kappa_table(sweep, times)

# %% mystnb={"figure": {"caption": "Iterations until the gap stays below twice the Laplace offset, against the condition number of $\\Sigma$ ($n = 100$, $X^\\star$ fixed); crosses above the line: not reached within the run or diverged.", "name": "fig-ch12-kappa"}, "image": {"alt": "Log-log plot of iterations to target against kappa from 1 to 1000 for five methods; preconditioned curves flat, plain curves rising or missing, one preconditioned Langevin marked diverged at kappa 1000."}} tags=["hide-input"]
fig, ax = figure(1, 1, width="medium")
KSTYLE = {"gd (lambda = 1)": STYLE["gd (lambda = 1)"], "random+precond+reg": STYLE["random+precond+reg"],
          "langevin": STYLE["langevin"], "precond langevin": STYLE["precond langevin"],
          "precond langevin (mild on U, V)": dict(color=OKABE_ITO["black"], ls=":", marker="o")}
for j, name in enumerate(kappa_methods):
    shown = np.where(np.isfinite(times[:, j]), times[:, j], np.nan)
    ax.plot(kappas, shown, label=legend_label(name), **KSTYLE[name])
    missed = ~np.isfinite(times[:, j])
    ax.plot(kappas[missed], np.full(missed.sum(), 1.3 * k_cap), marker="x", ls="none",
            color=KSTYLE[name]["color"])
ax.axhline(k_cap, color="k", lw=0.8)
ax.set_xscale("log")
ax.set_yscale("log")
ax.set_xlabel(r"condition number $\kappa(\Sigma)$")
ax.set_ylabel("iterations to the target gap")
ax.set_title(f"x above the line: not reached in {k_cap} iterations or diverged", fontsize=9)
legend_below(fig, ncol=2)
plt.show()

# %% [markdown]
# {numref}`fig-ch12-kappa` and the table above: gradient descent without the preconditioner needs 570 and 880 iterations at $\kappa = 1$ and 10
# and misses the target within 3000 at $\kappa = 100$ and 1000; with it, 170, 70, 50 and 40.
# Langevin inherits both behaviours. Plain Langevin needs 1310 iterations at $\kappa = 1$ and misses
# the target from $\kappa = 10$ on. Preconditioned Langevin needs 320, 130 and 130 at
# $\kappa = 1, 10, 100$ and diverges at $\kappa = 1000$ (all four chains) when the mild term sits on
# the raw weights: the stiffness of Exercise 3. With the mild term on $(U, V)$ it needs 400, 140,
# 140 and 90 iterations: no growth with $\kappa$. So the preconditioner removes the
# $\kappa$-dependence for Langevin as it does for gradient descent, provided the whole potential,
# regularizer included, is $\kappa$-free in the coordinates the preconditioner whitens. The
# preconditioned chains take two to three times as long as their noise-free twin because their
# chain mean must come within $2s_0D/4$ of the minimum while their own floor is $s_0D/4$.

# %% [markdown]
# ## The floors: Gibbs offset against the statistical floor
#
# At fixed temperature Langevin does not converge to the minimum but to the Gibbs mean, about
# $\hat Q^\star + sD_{\mathrm{eff}}/4$ (Chapter 10). How does that offset compare with what the finite
# sample costs? We use the run `bridge_floors`: for $n\in\{125, 250, 500\}$
# (seed 0) and $s\in\{10^{-6}, 10^{-5}, 10^{-4}\}$, four preconditioned Langevin chains
# started at the minimizer reached from the spectral start, Algorithm 1's step,
# 3000 iterations; averages over the second half.
#
# Two yardsticks. In the quadratic (Laplace) model with Hessian eigenvalues
# $\lambda_i$ in $(U, V)$ (the coordinates where the preconditioned chain is plain Langevin), a
# chain started at the minimizer has, after $k$ Euler steps of size $h$, the mean offset
#
# $$
# \mathbb E f(\theta_k) - f^\star = \frac s4\sum_i \frac{1 - (1 - h\lambda_i)^{2k}}{1 - h\lambda_i/2},
# $$ (eq-ch12-2)
#
# which tends to $\frac s4\sum_i (1 - h\lambda_i/2)^{-1}\approx sD/4$ (Exercise 2). The slow orbit
# directions ($\lambda_i$ near $10^{-3}$) take $1/(2h\lambda_i)$, several thousand iterations, to fill.
# The statistical floor is the excess risk of that minimizer, $\mathcal R^\star(n)$, with the
# OLS value $\varepsilon_{\mathrm{OLS}}(n)$ beside it. Noise "stops mattering" here when the Gibbs
# offset of the *excess risk* is below 10% of the floor.

# %%
n_values, temps = floors["n_values"], floors["temperatures"]
offset, risk_offset = floor_offsets(floors)   # over the second half
predicted = np.array([[s / 4 * laplace_fill(floors, i) for s in temps]
                      for i in range(len(n_values))])      # eq-ch12-2

# %%
floor_table(floors, offset, risk_offset, predicted)

# %%
slope = risk_offset[:, -1, 0] / temps[-1]   # per unit s, at the largest s
s_quiet = 0.1 * floors["basin_excess_risk"] / slope
for i, n in enumerate(n_values):
    print(f"n = {n}: excess-risk offset / s = {slope[i]:.0f} "
          f"(at s = {temps[-1]:.0e})")
    print(f"  offset = 10% of R*(n) at s = {s_quiet[i]:.1e} "
          f"(linear in s); s_0(n) = {base_temperature(int(n)):.1e}")

# %% mystnb={"figure": {"caption": "Left: Gibbs-mean offset of the objective against the temperature for three sample sizes (dots: measured, dotted: quadratic model at the same iterations, black: sD/4). Right: offset of the excess risk, with 10% of the statistical floor dashed.", "name": "fig-ch12-floors"}, "image": {"alt": "Two log-log panels against temperature: left, measured objective offsets close to the dotted model lines and below the sD/4 line; right, excess-risk offsets rising with s and crossing the dashed 10%-of-floor lines."}} tags=["hide-input"]
fig, axes_ = figure(1, 2)
for i, n in enumerate(n_values):
    color = (OKABE_ITO["blue"], OKABE_ITO["bluish green"], OKABE_ITO["vermillion"])[i]
    axes_[0].errorbar(temps, offset[i, :, 0], yerr=offset[i, :, 1], marker="o", color=color,
                      label=f"$n = {n}$")
    axes_[0].plot(temps, predicted[i], ls=":", color=color)
    axes_[1].errorbar(temps, np.abs(risk_offset[i, :, 0]), yerr=risk_offset[i, :, 1], marker="o",
                      color=color)
    axes_[1].axhline(0.1 * floors["basin_excess_risk"][i], color=color, ls="--", lw=0.8)
axes_[0].plot(temps, temps * DIM / 4, color="k", lw=0.8, label="$sD/4$")
axes_[0].set_ylabel(r"$F_s - \hat Q^\star$")
axes_[1].set_ylabel(r"$|$excess-risk offset$|$")
axes_[1].set_title(r"dashed: $0.1\,\mathcal{R}^\star(n)$", fontsize=9)
for ax in axes_:
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("temperature $s$")
legend_below(fig, ncol=4)
plt.show()

# %% [markdown]
# The Gibbs offset of the objective is the Laplace value ({numref}`fig-ch12-floors`): $D_{\mathrm{eff}} = 4(F_s - \hat Q^\star)/s$ lies
# between 291.5 and 306.9, against the quadratic model's 294.4 to 300.6 at the same iterations, for
# all three $n$ and over two decades of $s$. Unlike Chapter 10's LoRA model, every
# direction counts: at these temperatures the mild term is negligible and $\hat Q$ confines every
# direction quadratically.
#
# The excess risk moves much less: its offset is $4.27\times10^{-3}$ to $5.50\times10^{-3}$ at
# $s = 10^{-4}$, about $4.5\times10^{-4}$ at $s = 10^{-5}$ for $n = 250$ and 500 (not resolved at
# $n = 125$), and not resolved at $s = 10^{-6}$. Extrapolated linearly in $s$, the offset equals 10%
# of the statistical floor $\mathcal R^\star(n)$ at $s = 9.9\times10^{-5}$, $3.2\times10^{-5}$ and
# $2.4\times10^{-5}$ for $n = 125, 250, 500$: **below these temperatures the noise stops
# mattering**, and this critical temperature falls with $n$ as the floor does. The chapter's base temperature
# $s_0(n)$ ($1.2\times10^{-4}$, $5.6\times10^{-5}$, $2.7\times10^{-5}$) sits right at this critical temperature for
# $n = 500$ and above it for smaller $n$. The floor itself is not the OLS value:
# $\mathcal R^\star(n) = 0.0486, 0.0178, 0.0102$ against 0.0088, 0.0042, 0.0020, four to six times
# higher. One caveat: after 3000 iterations the slowest orbit directions are not yet filled
# ($1/(2h\lambda_{\min})$ is about 9000 iterations at $n = 500$), and they are the directions that move
# the risk; the risk offsets are lower bounds of the stationary ones.

# %% [markdown]
# ## Which method when: the slide
#
# The figure and the table a lecturer can put on one slide. Every number is computed above; the
# recommendations below the table are this book's reading of them.

# %% mystnb={"figure": {"caption": "The slide: gradient evaluations (iterations times chains) to reach an excess risk within 10% of the certified optimum's (left) and final excess risk after 4000 iterations (right), per method, n = 500, seed 0.", "name": "fig-ch12-slide"}, "image": {"alt": "Two horizontal bar charts with one bar per method: left the cost to reach the excess-risk target on a symmetric log axis, right the final excess risk with reference lines for the optimum and OLS."}} tags=["hide-input"]
fig, axes_ = figure(1, 2, sharey=True)   # one method per row in both panels
xs = np.arange(len(METHODS))
costs = np.where(np.isfinite(reach_a), reach_a * chains, np.nan)
axes_[0].barh(xs, np.where(np.isfinite(costs), costs, 0), color=[STYLE[m]["color"] for m in METHODS])
for k in range(len(METHODS)):
    if not costs[k] > 0:
        note = "at the start" if costs[k] == 0 else "not reached"
        axes_[0].text(1, k, note, va="center")
axes_[0].set_yticks(xs, [m.replace("precond ", "pc ") for m in METHODS])
axes_[0].invert_yaxis()
axes_[0].set_xlabel("gradient evaluations to (a)")
axes_[0].set_xscale("symlog", linthresh=10)
axes_[1].barh(xs, mean_risk[:, -1], color=[STYLE[m]["color"] for m in METHODS])
axes_[1].axvline(r_star, color="k", ls=":", lw=0.8)
axes_[1].axvline(floor_ols, color="k", ls="--", lw=0.8)
axes_[1].set_xlabel("final excess risk")
axes_[1].locator_params(axis="x", nbins=4)
axes_[1].set_title(r"dotted: $\mathcal{R}^\star$; dashed: OLS", fontsize=9)
plt.show()

# %%
at_ends = kappa_ends(sweep, times)     # at kappa = 1 and kappa = 1000
print("(a): gradient evaluations to (a); (b): iterations to (b); "
      "basin Q - Q*: median;")
print("kappa 1 / 1000: iterations to the target at kappa = 1 / 1000 "
      "(n = 100)")
slide_table(side, q_star, means, reach_a, reach_b, at_ends)

# %% [markdown]
# **Which method when** ({numref}`fig-ch12-slide` and the table above; derived from the numbers of this chapter, for this problem):
#
# * **Spectral start available (you know $\hat\Sigma$, $\hat M$): Algorithm 1.** It meets the risk
#   target at iteration 0 and stays there; what is left of its gap sits in the flat orbit directions,
#   which barely move the risk.
# * **Random start: precondition.** 80 to 100 iterations to the risk target with or without noise,
#   against 1630 for plain gradient descent and 7080 gradient evaluations (1770 iterations, four
#   chains) for plain Langevin; only the preconditioned methods are $\kappa$-free, and for Langevin
#   only if the regularizer is written in $(U, V)$.
# * **Noise: anneal it, and only to explore the orbit.** Annealed chains reached lower minima of
#   $\hat Q$ than Algorithm 1 (and the lowest one found), but a lower $\hat Q$ did not mean a lower
#   risk. At a fixed temperature keep $s$ below the critical temperature of the floors section
#   ($2.4\times10^{-5}$ at $n = 500$), or the noise costs risk.
# * **Plain Langevin, no structure (Part II's setting)** gets there, but is the most expensive option
#   and the only one besides plain gradient descent that slows down with $\kappa$.
# * **Target (b), an optimum to $10^{-3}$ of the initial gap,** was reached by nothing within 4000
#   iterations: polish with a Newton method (Chapter 5).

# %% [markdown]
# ## The papers' claims
#
# {doc}`The Reproduction report's page for Chapter 12 <report_ch12_bridge>` judges each claim below from this chapter's numbers, and the [claims ledger](../book/ledger.md) collects them.
#
# ::::{dropdown} The claims and their verdicts
# - {bdg-warning}`partly reproduced` **[summary]** Theorem 3.3 on Part I's problem: Langevin with a mild regularizer comes within eps of the minimum
# ::::

# %% [markdown]
# ## Summary
#
# * A constant preconditioner changes the speed of Langevin dynamics, not its target, provided the
#   noise is scaled by its square root; preconditioned Langevin is plain Langevin in the whitened
#   coordinates, just as Algorithm 1's step is plain gradient descent there.
# * The preconditioner removes the dependence on the condition number for Langevin as it does for
#   gradient descent, but only if the whole potential, regularizer included, is well conditioned in
#   the whitened coordinates.
# * At a fixed temperature Langevin stops at a Gibbs offset of about $sD/4$; the temperature is
#   harmless once that offset, measured on the risk, is small against the statistical floor of the
#   finite sample.
# * Noise moves the iterate along the nearly flat orbit of minima; annealed, it finds lower values of
#   the objective, but a lower objective is not a lower risk.
# * On this problem, structure (a spectral start and a preconditioner) buys far more than noise;
#   Part II's unstructured Langevin gets there too, at the highest cost.
#

# %% [markdown]
# ## Exercises
#
# 1. Show that for a constant symmetric positive definite $\mathcal P$ the density
#    $\rho\propto e^{-2f/s}$ is stationary for $d\theta = -\mathcal P\nabla f\,dt + \sqrt s\,\mathcal P^{1/2}dB_t$,
#    and that with the noise $\sqrt s\,dB_t$ instead of $\sqrt s\,\mathcal P^{1/2}dB_t$ the stationary
#    law is another one unless $\mathcal P = I$.
#
# ```{admonition} Solution
# :class: dropdown
# The Fokker-Planck equation of $d\theta = b\,dt + \Gamma\,dB$ is
# $\partial_t\rho = -\nabla\cdot(b\rho) + \tfrac12\nabla\cdot(\Gamma\Gamma^\top\nabla\rho)$ for constant
# $\Gamma$. With $b = -\mathcal P\nabla f$ and $\Gamma\Gamma^\top = s\mathcal P$:
# $\partial_t\rho = \nabla\cdot\big(\mathcal P(\rho\nabla f + \tfrac s2\nabla\rho)\big)$. For
# $\rho\propto e^{-2f/s}$, $\tfrac s2\nabla\rho = -\rho\nabla f$, so the flux vanishes and
# $\partial_t\rho = 0$. With $\Gamma\Gamma^\top = sI$ the flux is
# $\mathcal P\rho\nabla f + \tfrac s2\nabla\rho$; for the Gaussian case $f = \tfrac12\theta^\top H\theta$
# the stationary covariance $C$ solves the Lyapunov equation $\mathcal P H C + C H\mathcal P = sI$.
# Inserting $C = \tfrac s2 H^{-1}$ gives $s\mathcal P = sI$, so $\mu_s$ is stationary only for
# $\mathcal P = I$; for $\mathcal P = cI$ the chain samples the temperature $s/c$. The live check of
# this chapter shows the same kind of failure for a noise scaled as for the wrong temperature.
# ```
#
# 2. For $f = f^\star + \tfrac12\sum_i\lambda_i z_i^2$ and the Euler chain
#    $z_{k+1} = (1 - h\lambda_i)z_k + \sqrt{sh}\,\xi_k$ started at $z_0 = 0$, derive $\mathbb E f(z_k) - f^\star$ (the quadratic model of
#    the floors section) and its limit.
#
# ```{admonition} Solution
# :class: dropdown
# Each coordinate is an AR(1) chain with variance
# $v_k = sh\sum_{j<k}(1-h\lambda_i)^{2j} = sh\,\frac{1 - (1-h\lambda_i)^{2k}}{1-(1-h\lambda_i)^2}
# = \frac{s}{2\lambda_i}\cdot\frac{1-(1-h\lambda_i)^{2k}}{1 - h\lambda_i/2}$. So
# $\mathbb E\,\tfrac12\lambda_i z_i^2 = \frac s4\,\frac{1-(1-h\lambda_i)^{2k}}{1-h\lambda_i/2}$; summing
# over $i$ gives the formula, whose limit $\frac s4\sum_i(1-h\lambda_i/2)^{-1}$ exceeds the continuous
# value $sD/4$ by the Euler bias, small when $h\lambda_i\ll 1$. A direction with small $\lambda_i$
# fills after about $1/(2h\lambda_i)$ steps: the flat orbit directions fill last.
# ```
#
# 3. The mild term $R_m(B) = \lambda_m g(\|B\|_F^2)$ acts on the raw weights. Show that in the
#    coordinates $V = \hat\Sigma^{1/2}B\hat\Sigma^{1/2}$ its Hessian has norm at least
#    $2\lambda_m g'(t)/\lambda_{\min}(\hat\Sigma)^2$, and explain why preconditioned Langevin at
#    Algorithm 1's step can diverge at $\kappa = 1000$ while the deterministic Algorithm 1 (which
#    trains $\hat Q$ without $R_m$) does not.
#
# ```{admonition} Solution
# :class: dropdown
# $B = \hat\Sigma^{-1/2}V\hat\Sigma^{-1/2}$, so $\|B\|_F^2 = \operatorname{vec}(V)^\top(\hat\Sigma^{-1}\otimes\hat\Sigma^{-1})\operatorname{vec}(V)$
# and the Hessian of $R_m$ in $V$ is $2\lambda_m g'(t)\,\hat\Sigma^{-1}\otimes\hat\Sigma^{-1}$ plus a
# positive rank-one term: its norm is at least $2\lambda_m g'(t)/\lambda_{\min}(\hat\Sigma)^2$. At
# $\kappa = 1000$ that is of order $2\lambda_m g'(t)\cdot 10^6 = 2g'(t)$ for $\lambda_m = 10^{-6}$, with
# $g'(t) = \log(1+t) + t/(1+t)$ growing with $t$: of the order of the stability limit $2/h$ of
# the chain's step (Chapter 4's rule at the random start, a few tenths), and beyond it once
# $t = \|B\|_F^2$ grows, which it does as the noise moves $B$ along directions the data barely
# constrain (in raw coordinates the noise $\mathcal P^{1/2}\xi$ is amplified by $1/\lambda_{\min}(\hat\Sigma)$).
# The Euler step is then unstable. Putting the mild term on $(U, V)$ instead makes $f$ as $\kappa$-free
# as $\hat Q$ in those coordinates, which is what the fifth method of the sweep does.
# ```
