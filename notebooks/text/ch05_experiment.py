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
# # Chapter 5: Rerunning the experiment
#
# :::{admonition} Overview
# Goel, Soltanolkotabi and Bartlett {cite}`goel2026` prove that Algorithm 1 (chapter 4) converges
# geometrically, and report an experiment in which it converges within 2000 iterations. This
# chapter reruns that experiment with baselines and three seeds, measures convergence as an
# optimization gap rather than as a loss near the noise level, and explains why a rate proved for
# the population objective can be slow at finite $n$.
#
# **The answer.** On the infinite-data objectives the gap falls geometrically, at the predicted
# rate. On the finite-sample objective the experiment trains, a third to a half of the gap is
# left after 2000 iterations: the finite sample pins the $O(d)$ orbit of minimizers only weakly.
#
# **You need** chapters 3 and 4 and least squares; the section "Explorer" is optional. **Time:**
# about 2.5 hours, with the 3 exercises.
# :::
#
# :::{dropdown} What the papers claim
# **[summary]** One experiment: synthetic linear regression with $p = 20$, $d = 10$, $n = 500$,
# Algorithm 1 against SGD from a random initialization, and three observations:
#
# 1. spectral initialization starts close to the optimal population loss, while random-init SGD
#    starts about three orders of magnitude higher;
# 2. Algorithm 1 converges within 2000 iterations;
# 3. SGD has not converged after 2000 iterations; and from a random initialization, adding the
#    preconditioner and the regularizer still converges fast.
# :::
#
# :::{dropdown} This book's choices
# - **[choice]** What the summaries leave open takes the book's defaults: $\Sigma$ with condition
#   number 10, $M$ with i.i.d. $\mathcal N(0, 1/(pd))$ entries, $\sigma = 0.1$, the leave-one-out
#   mask (chapter 1), chapter 4's step rule, random starts $\mathcal N(0, 0.3^2/d)$; three seeds.
# - **[choice]** The stricter reading of "converged": the gap {eq}`eq-ch05-gap` below $10^{-3}$
#   of its start (Observations 2 and 3).
# - **[choice]** Rates are fitted where the relative gap is between $10^{-10}$ and $10^{-3}$, or
#   from iteration 1000 when it never gets there ("Where the headline holds").
# - **[choice]** "Three orders of magnitude" means a loss ratio above $10^{2.5}$ (Observation 1).
# - **[choice]** The full run takes minutes, so the chapter loads it
#   (`python -m attnbook.experiments paper1_defaults`); a folded cell reruns its first 20
#   iterations.
# :::

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

from attnlib import analysis, fitting
from attnbook import experiments
from attnbook.chapters import ch05      # this chapter's computations; its report calls them too
from attnbook.chapters.ch05 import (CONVERGED, INIT_SCALES, L_STAR, LABELS, METHODS,
                                    NOISE_AXIS)
from attnbook.claims import ch05 as judge
from attnbook.experiments import ablations, part1
from attnbook.plotting import (
    METHOD_COLOURS, NEUTRAL_GREY, OKABE_ITO, figure, plot_series, tilted_orbit_schematic,
    use_book_style)
from attnbook.slider import frame_slider
from attnbook.tables import result_table

use_book_style()
# rtol 1e-7: the distances to the basin minimizer move by up to 3e-9 relative on other CPUs
runs, replay, check = experiments.replay(      # python -m attnbook.experiments paper1_defaults
    "paper1_defaults", keys=part1.prefix_keys, absolute=part1.ROUND_OFF, rtol=1e-7,
    align=experiments.leading_block)                  # seed 0's first iterations
config = experiments.describe("paper1_defaults")
SEEDS = ch05.seeds(runs)          # problem/data from default_rng(s), s = 0, 1, 2
iteration = runs["iteration"]
print(f"stored run: seeds {SEEDS}, {iteration[-1]} iterations")
print(f"methods: {', '.join(METHODS)}")
print(f"L* = {L_STAR:.3g}; expected OLS excess risk p sigma^2 d / (2 (n - d - 1)) = "
      f"{float(runs['ols_formula']):.3g}")

# %% mystnb={"code_prompt_show": "Reproduction check: show {type}"} tags=["hide-cell"]
print(f"replayed iterations 0..{replay['iteration'][-1]} of seed 0 for all five methods.\n{check}")
print(f"seed 0: Q_hat* (spectral basin) = {float(replay['basin_value'][0]):.6f}, recomputed "
      f"live with gradient norm {experiments.format_deviation(float(replay['basin_grad_norm'][0]), resolution=1e-8)}")

# %% [markdown]
# ## Where the headline holds: population, closed form, finite sample
#
# Chapter 4 showed that the preconditioned step is plain gradient descent in the coordinates
# $\theta = (U, V)$. Near a minimizer $\theta^\star$ of an objective with Hessian $H$, one step maps
# the offset to $\theta_{k+1} - \theta^\star \approx (I - \eta H)(\theta_k - \theta^\star)$, so along
# each eigenvector of $H$, with eigenvalue $h$ and starting component $c_h$,
#
# $$
# \hat Q(\theta_k) - \hat Q^\star \approx \frac12\sum_{h} h\,c_h^2\,(1 - \eta h)^{2k} .
# $$ (eq-ch05-linearized)
#
# Directions with $h = 0$ do not enter the gap; once the fast terms have died out, the smallest
# *nonzero* eigenvalue sets the rate.
#
# On the population objective the minima form the manifold $S$. Along its orbit $(UO, VO)$, $O$ a
# rotation, the Hessian is zero: $d(d-1)/2 = 45$ flat directions that cost nothing. Moving $U$ out
# of the column space of $X^\star = M\Sigma^{1/2} = \Phi\Gamma\Psi^\top$ does cost: for
# $\Delta U = \phi_\perp e_d^\top$, with $\phi_\perp$ a unit vector orthogonal to the columns of $\Phi$
# (one exists since $p > d$), the residual $UV^\top - X^\star$ changes by
# $\sqrt{s_d}\,\phi_\perp\psi_d^\top$ and the regularizer not at all to second order
# ($U^{\star\top}\Delta U = 0$), so the curvature is $s_d$, the smallest singular value of $X^\star$;
# it is the smallest nonzero eigenvalue (chapter 4 measured the spectrum). With the step $\eta$ of
# chapter 4, {eq}`eq-ch05-linearized` at $h = s_d$ gives the rate of Theorem 2's optimization
# term, as this book derives it:
#
# $$
# \mu = (1 - \eta\, s_d)^2 .
# $$ (eq-ch05-rate)
#
# At finite $n$ the experiment trains $\hat Q = \hat L + \lambda\hat R$, the layer's empirical loss.
# The sample breaks the orbit's symmetry, but only weakly: the 45 rotation directions get small
# positive eigenvalues, and the smallest of them, $\hat h_{\min}$, replaces $s_d$:
#
# $$
# \hat\mu = (1 - \eta\,\hat h_{\min})^2 \approx 1 - 2\eta\,\hat h_{\min},
# \qquad \hat h_{\min} \ll s_d .
# $$ (eq-ch05-finite-rate)

# %% mystnb={"code_prompt_show": "Drawing code: show {type}", "figure": {"caption": "Schematic: why the finite sample is slow. Top, the loss near the orbit of minimizers, steep across it and soft along it, with one minimizer (star). Bottom, the loss along the orbit: exactly flat for the population objective, so the gap never has to close it, and weakly tilted at finite $n$, whose shallow minimum sets the slow rate.", "name": "fig-ch05-orbit-schematic"}, "image": {"alt": "Top: shaded contour map of a ring-shaped valley, the ring dashed, a star at its lowest point, arrows marking steep across and soft along. Bottom: a flat grey line and a wavy blue curve with a star at its minimum."}} tags=["hide-input"]
tilted_orbit_schematic([(0.0, NEUTRAL_GREY, "population: exactly flat"),
                        (1.0, OKABE_ITO["blue"], "finite $n$: weakly tilted")],
                       height=5.2, legend_loc="lower left")
plt.show()

# %% [markdown]
# {numref}`fig-ch05-orbit-schematic` draws the difference (chapter 6b derives the tilt). The
# infinite-data curves below are fast because their orbit is exactly flat and stays out of the
# gap, so the rate is set by the curvature $s_d$ across it; at finite $n$ the weak tilt adds a
# direction of curvature $\hat h_{\min} \ll s_d$ that the gap must close, and that direction sets
# the rate.
#
# The next cell runs Algorithm 1 from the *same* spectral start (seed 0) on the population
# objective (true $\Sigma$, $M$), takes the finite-sample run from the stored experiment (against the
# minimizer of its basin) and reads the Hessian there; it also runs the closed form with
# $(\hat\Sigma, \hat M)$ plugged in, from the random start.

# %%
headline = ablations.headline_comparison(0)   # live: infinite data, seed 0
# relative gaps, steps and curvatures (s_d; finite: h_min) of the 3 runs
relative, its, steps, curvature = ch05.headline_curves(headline, runs)
h = runs["basin_hessian"][0]     # Hessian of Q_hat at its minimizer
print(ch05.slow_directions(h))

# %% mystnb={"figure": {"caption": "Algorithm 1's optimization gap relative to its start against iterations (seed 0) on the population objective and the closed form, where it is geometric at the predicted rate, and on the finite-sample objective the experiment trains, where half of the gap is left at 2000 iterations.", "name": "fig-ch05-headline-holds"}, "image": {"alt": "Three curves on a log axis: the population curve falls straight to about 4e-8 at k = 2000, the closed-form curve falls faster to round-off by about k = 800, the finite-sample curve stays near 0.5."}} tags=["hide-input"]
HEADLINE_LEGEND = {"population": r"population ($\Sigma$, $M$), spectral start",
                   "closed_form": r"closed form ($\hat\Sigma$, $\hat M$), random start",
                   "finite": r"finite $\hat Q$ ($n = 500$), spectral start"}
fig, ax = figure(width=6.4, height=4.0)
for (name, rel), style in zip(relative.items(), ("-", "--", ":")):
    ax.plot(its[name], rel, style, color=METHOD_COLOURS["algorithm1"] if name != "closed_form"
            else METHOD_COLOURS["random+precond+reg"], label=HEADLINE_LEGEND[name])
ax.axhline(CONVERGED, color="0.5", lw=0.8, ls="-.", label="$10^{-3}$ of the start")
ax.set(yscale="log", ylim=(1e-12, 2), xlabel="iteration $k$",
       ylabel="optimization gap / gap at $k = 0$")
ax.legend(loc="lower left")
plt.show()

# %% tags=["hide-input"]
headline_columns = {}
for name, rel in relative.items():
    firsts = [analysis.format_iterations(its[name][int(k)] if np.isfinite(k) else np.inf,
                                         int(its[name][-1]))
              for k in (analysis.iterations_to_threshold(rel, t) for t in (1e-3, 1e-6))]
    # [choice] fit window: relative gap between 1e-10 and 1e-3 (past the transient, above
    # round-off); the finite objective never gets there, so its window is k >= 1000
    fit = (fitting.fit_geometric_rate(its[name], rel, band=(1e-10, 1e-3)) if rel.min() < 1e-6
           else fitting.fit_geometric_rate(its[name], rel, start=1000))
    headline_columns[name] = [f"{steps[name]:.4f}", f"{curvature[name]:.3g}", *firsts,
                              f"{rel[-1]:.3g}", f"{fit.rate:.6f}",
                              f"{(1 - steps[name] * curvature[name]) ** 2:.6f}"]
measures = ("eta", "h (s_d; finite: h_min)", "first k below 1e-3", "first k below 1e-6",
            "gap(2000)/gap(0)", "fitted rate", "predicted (1 - eta h)^2")
result_table(["measure", "population", "closed form", "finite Q_hat"],
             [[m, *(column[r] for column in headline_columns.values())]
              for r, m in enumerate(measures)])

# %% [markdown]
# {numref}`fig-ch05-headline-holds` answers the question. On the population objective the
# spectral start loses a factor $10^3$ of its gap by iteration 391 and $10^6$ by 1453, at a fitted
# rate of 0.993791 per iteration against the predicted $(1 - \eta s_d)^2 = 0.993974$ of
# {eq}`eq-ch05-rate`. The closed form falls faster (fitted 0.971013, predicted 0.971963) only
# because its small random start lets chapter 4's step rule take a step about four times larger
# (0.2778 against 0.0652). On the finite-sample $\hat Q$, 47% of the gap is left at iteration
# 2000. There the Hessian has exactly 45 eigenvalues below 0.05, one per rotation direction, and
# the smallest, $\hat h_{\min} = 0.00081$, is far below $s_d$; {eq}`eq-ch05-finite-rate` predicts
# 0.999892 per iteration for the slowest mode, and the fitted 0.999729 is a little faster because
# faster modes have not died out yet. This one cause, the weakly pinned $O(d)$ orbit, explains
# every slow curve below; momentum with a curvature-matched step, or a Newton polish, closes the
# gap in a few hundred iterations ({doc}`report page <report_ch05_experiment>`).

# %% [markdown]
# ## Optimization gap and excess risk against iterations
#
# The summaries give the experiment's sizes but not its covariance, target map, noise level,
# initialization scale, step sizes or batch size; the rerun takes the book's defaults (the box
# "This book's choices" above). Five methods (`algorithm.METHODS`): **Algorithm 1**; **random +
# precond + reg**, the same from a random start; **GD**, plain gradient descent from that start;
# **SGD**, the same with minibatches of 32 query rows; **Adam** {cite}`kingma2015`.
#
# "Converged" needs a yardstick. The summaries' wording is about the population loss, and the
# book reads it so: within 10% of $L^\star$. The book adds a stricter reading, the optimization
# gap of the objective being trained,
#
# $$
# \operatorname{gap}_k = \hat Q(\theta_k) - \hat Q^\star ,
# $$ (eq-ch05-gap)
#
# with $\hat Q^\star$ the lowest local minimum found of that objective ($\hat L + \hat R$ for the
# $\lambda = 1$ methods, $\hat L$ alone for GD, SGD and Adam); a run has converged when its gap is
# below $10^{-3}$ of its start. The objective is nonconvex, so $\hat Q^\star$ is the best minimum
# known (certified by its gradient and Hessian), not a proven global optimum.

# %%
# (objective, seed) -> the lowest known minimum Q_hat*, the gap's zero
best = ch05.lowest_minima(runs)

# %% [markdown]
# ### Observation 1: the initial gap
#
# Observation 1 says that the spectral start begins close to the optimal population loss, and
# random-init SGD about three orders of magnitude higher. At the defaults the loss near the optimum
# is mostly noise, $L^\star = p\sigma^2/2 = 0.1$, which caps any ratio of *losses*; a ratio of excess
# risks is not capped. The next cells print both, then scan the random start's scale $c$ (entries
# $\mathcal N(0, c^2/d)$) and the noise level $\sigma$.

# %%
starts = ch05.start_comparison(runs)    # random against spectral start
print(ch05.describe_starts(starts))
zero_noise = [ablations.start_excess_risks(s, noise_std=0.0)
              for s in SEEDS]
print(ch05.describe_zero_noise(zero_noise))

# %%
# live: the starting losses over the scale c (sqrt(d): unit variance)
# and the noise level sigma
start_grid = ablations.start_claims_grid(INIT_SCALES, NOISE_AXIS)
print(ch05.describe_start_grid(start_grid))

# %% mystnb={"figure": {"caption": "Observation 1 against the random start's scale $c$: the $\\log_{10}$ ratio of the random start's population loss to the spectral start's (median over three seeds) at three noise levels; dashed where the spectral start is not within 10% of $L^\\star$.", "name": "fig-ch05-start-ratio"}, "image": {"alt": "Three rising curves of the log10 loss ratio against the random start's scale on a log axis, one per noise level, a dotted threshold line at 2.5 and a vertical line at the book's start c = 0.3."}} tags=["hide-input"]
fig, ax = figure(width="medium", height=3.6)
for j, (sigma, colour) in enumerate(zip(NOISE_AXIS, (OKABE_ITO["vermillion"], OKABE_ITO["orange"],
                                                     OKABE_ITO["blue"]))):
    holds = start_grid["start"][j].max() <= judge.LOSS_TOLERANCE          # claim (1) at this sigma
    ax.plot(INIT_SCALES, start_grid["log10_ratio"][:, j], "-o" if holds else "--o", color=colour,
            label=f"$\\sigma = {sigma:g}$" + ("" if holds else " (spectral start not close)"))
ax.axhline(judge.ORDERS, color=NEUTRAL_GREY, ls=":", label="threshold (book's choice)")
ax.axvline(INIT_SCALES[0], color=NEUTRAL_GREY, lw=0.8)
ax.text(INIT_SCALES[0] * 1.08, 5.2, "book's\nstart", fontsize=10, va="top")
ax.set(xscale="log", xlabel="scale $c$ of the random start", ylim=(0, 5.5),
       ylabel="$\\log_{10}$ loss ratio, random / spectral")
ax.set_xticks(INIT_SCALES, ["0.3", "1", "2", "$\\sqrt{d}$", "5"], minor=False)
ax.minorticks_off()
ax.legend(loc="lower right", fontsize=9)
plt.show()

# %% [markdown]
# At the book's start ({numref}`fig-ch05-start-ratio`, vertical line) the spectral start is
# within 10% of $L^\star$ for every seed, as observation 1 states, but the loss ratio is only
# $10^{0.46}$ (median 2.87; the excess-risk ratio is 37.2). The ratio grows steeply with $c$
# (the random start's excess risk grows like $c^4$); at $\sigma = 0.1$ it passes the
# book's threshold of $10^{2.5}$ from $c = \sqrt d$ (entries of unit variance, $10^{2.90}$) on. At
# the lower noise levels it rises sooner, but there the spectral start is no longer close to
# $L^\star$ (dashed). So both halves of observation 1 hold together only in a region of
# $(c, \sigma)$; the sources do not say where the paper's experiment sits.

# %% [markdown]
# ### Observation 2: Algorithm 1 at 2000 iterations
#
# Observation 2 says that Algorithm 1 converges within 2000 iterations. {numref}`fig-ch05-headline`
# shows both yardsticks for every method: the gap {eq}`eq-ch05-gap` (top) and the excess
# population risk $L(\theta_k) - L^\star$, the quantity of Theorem 2 (bottom); lines are medians
# over the seeds, bands the range.

# %%
alg1_gap = ch05.gap(runs, best, "algorithm1")    # Q_hat(theta_k) - Q_hat*
alg1_excess = ch05.stacked(runs, "excess_risk", "algorithm1")     # L - L*
print(ch05.describe_algorithm1(alg1_gap, alg1_excess))
ols_fit = np.median(runs["ols_fit_excess_risk"])
print(f"OLS fit excess risk (median over seeds): {ols_fit:.3g}")

# %% mystnb={"figure": {"caption": "The rerun experiment ($p = 20$, $d = 10$, $n = 500$): each method's optimization gap to the lowest known local minimum of its own objective (top) and the excess population risk (bottom) against iterations; lines are medians over three seeds, bands the range, the dashed line the least-squares fit's excess risk.", "name": "fig-ch05-headline"}, "image": {"alt": "Two log-log panels against iteration sharing the horizontal axis, one styled and marked line per method (Algorithm 1, random + precond + reg, GD, SGD, Adam) with shaded seed ranges; the bottom panel has a dashed OLS line."}} tags=["hide-input"]
fig, axes = figure(2, 1, sharex=True, width=6.4, height=7.0)
for k, method in enumerate(METHODS):
    for ax, curves in zip(axes, (ch05.gap(runs, best, method),
                                 ch05.stacked(runs, "excess_risk", method))):
        summary = analysis.seed_summary(curves, lower=0.0, upper=1.0)
        plot_series(ax, iteration + 1, summary.median, method, label=LABELS[method], ms=4)
        ax.fill_between(iteration + 1, summary.lower, summary.upper, color=METHOD_COLOURS[method],
                        alpha=0.15, lw=0)
axes[1].axhline(ols_fit, color=METHOD_COLOURS["ols"], lw=0.8, ls="--", label="OLS fit")
axes[0].set(ylabel="optimization gap $\\hat Q(\\theta_k) - \\hat Q^\\star$")
axes[1].set(ylabel="excess risk $L(\\theta_k) - L^\\star$", xlabel="iteration $k$ + 1")
for ax in axes:
    ax.set(xscale="log", yscale="log")
axes[0].legend(loc="lower left", ncol=2)
axes[1].legend(handles=[axes[1].lines[-1]], loc="upper right")
plt.show()

# %% [markdown]
# In the summary's reading observation 2 holds, but trivially: Algorithm 1's population loss is
# $1.055\,L^\star$ at the start and $1.063\,L^\star$ at 2000, flat from the first iteration (bottom
# panel). In the strict reading it fails: the gap (top panel) falls from $9.1\times10^{-3}$ to
# $4.2\times10^{-3}$, less than a factor 3 in 2000 steps, and every seed keeps 36% to 51% of it.
# The panels disagree for the reason of the first section: what is left to close lies along the
# weakly tilted orbit, which the population loss barely distinguishes. No method approaches the
# least-squares fit's excess risk (0.00192, dashed).

# %% [markdown]
# ### Observation 3: SGD, and a random start with preconditioner and regularizer
#
# Observation 3 says that SGD has not converged after 2000 iterations, while from a random start
# the preconditioner and the regularizer still converge fast. {numref}`fig-ch05-two-readings`
# puts every method at iteration 2000 against both yardsticks, one dot per seed.

# %%
# each method at k = 2000: (L - L*)/L* and gap(2000)/gap(0), per seed
relative_loss, gap_ratio = ch05.end_readings(runs, best)
ch05.end_readings_table(relative_loss, gap_ratio)

# %% mystnb={"figure": {"caption": "Every method at iteration 2000 under the two readings of converged: the population loss above L* relative to L* (left, the summaries' reading, threshold 10%) and the optimization gap relative to its start (right, the book's stricter reading, threshold 1e-3); one dot per seed.", "name": "fig-ch05-two-readings"}, "image": {"alt": "Two dot plots over the five methods: on the left most dots lie below the 10 percent line, one of random + precond + reg and two of Adam above it; on the right every method's dots lie above the 1e-3 line, Algorithm 1's highest."}} tags=["hide-input"]
fig, axes = figure(1, 2, height=3.2)
for x, method in enumerate(METHODS):
    for ax, values in zip(axes, (relative_loss[method], gap_ratio[method])):
        ax.plot(np.full(len(values), x), values, "o", ms=6, color=METHOD_COLOURS[method])
axes[0].axhline(0.1, color=NEUTRAL_GREY, ls=":")
axes[1].axhline(CONVERGED, color=NEUTRAL_GREY, ls=":")
axes[0].set(ylabel="$(L(\\theta_{2000}) - L^\\star)/L^\\star$", title="summary's reading (10%)")
axes[1].set(yscale="log", ylabel="gap(2000) / gap(0)", title="strict reading ($10^{-3}$)",
            ylim=(3e-4, 1.5))
for ax in axes:
    ax.set_xticks(range(len(METHODS)), [LABELS[m].replace(" + ", "+\n") for m in METHODS],
                  rotation=60, fontsize=9)
plt.show()

# %% [markdown]
# At iteration 2000 (left) SGD is 6.28% to 8.09% above $L^\star$, inside the 10% band, which reads
# as converged, contrary to the summary; the preconditioned random start is inside for seeds 1
# and 2 and just outside for seed 0 (0.117). One iterate at one start decides neither claim: the
# {doc}`report page <report_ch05_experiment>` asks for the band over the second half of the run,
# over the random start's scales $c$ and two step rules, and finds that each claim holds in a
# region, but neither at the book's start with its fixed step. In the strict reading (right) SGD
# keeps 2.6% to 2.7% of its gap, so it has not converged, but neither has any other method: the
# preconditioned random start keeps 0.85% to 1.1%, still an order of magnitude short of
# $10^{-3}$; like Algorithm 1, it is left drifting along the weakly pinned orbit.

# %% [markdown]
# ## Conditioning: what the preconditioner buys
#
# At the defaults $\Sigma$ has condition number 10 and plain gradient descent is not far behind.
# Chapter 4 explained why the preconditioner matters more as $\Sigma$ becomes ill-conditioned. The
# next run keeps each seed's $X^\star = M\Sigma^{1/2}$ fixed (seeds 0 and 1) and sets the eigenvalues
# of $\Sigma$ to $\operatorname{geomspace}(1, 1/\kappa, d)$ for $\kappa = 1, 10, 100, 1000$, with
# $M = X^\star\Sigma^{-1/2}$, so only the conditioning of the inputs changes. Every method runs on
# the empirical loss from the same random start for at most 2000 iterations, and the run records
# the first iteration at which the excess risk reaches $2\times10^{-2}$ and $10^{-2}$ (about 3 and
# 1.5 times the level Algorithm 1 settles at), stopping there.

# %% mystnb={"code_prompt_show": "Reproduction check: show {type}"} tags=["hide-cell"]
sweep, replay_sweep, check = experiments.replay(
    "paper1_condition_sweep",
    keys=lambda prefix: [k for k in part1.prefix_keys(prefix) if not k.startswith("first_iteration")],
    align=experiments.leading_block)
print(f"replayed iterations 0..{replay_sweep['iteration'][-1]} of seed 0 for every kappa and method.\n{check}")
i10 = list(sweep["kappas"]).index(10.0)
same = np.abs(sweep["excess_risk"][0, :101, i10, :] - runs["excess_risk"][0, :101, :])
finite = np.isfinite(same)
print(f"kappa = 10 in the sweep is the default problem: largest difference from paper1_defaults "
      f"over the first 100 iterations: {experiments.format_deviation(same[finite].max())}")

# %%
kappas, thresholds = sweep["kappas"], sweep["thresholds"]
cap = int(sweep["iteration"][-1])
first = sweep["first_iteration"]        # seeds, kappa, method, threshold
for heading, table in ch05.sweep_tables(sweep):
    print(heading)
    display(table)

# %% mystnb={"figure": {"caption": "Iterations to reach excess risk $10^{-2}$ (slower of the seeds) against the condition number $\\kappa(\\Sigma)$, for each baseline; points above the dotted line never reached it within the cap.", "name": "fig-ch05-conditioning"}, "image": {"alt": "Log-log plot of iterations to excess risk 0.01 against kappa, one marked line per baseline method, with a dotted cap line near the top."}} tags=["hide-input"]
fig, ax = figure(width=6.4, height=4.0)
t = list(thresholds).index(1e-2)
for j, method in enumerate(METHODS):
    if method == "algorithm1":
        continue
    worst = first[:, :, j, t].max(axis=0)        # the slower of the seeds
    shown = np.where(np.isinf(worst), 1.25 * cap, worst)
    plot_series(ax, kappas, shown + 1, method, label=LABELS[method], markevery=1)
ax.axhline(cap + 1, color="grey", lw=0.8, ls=":")
ax.text(kappas[0], 1.3 * cap, "not reached (cap 2000)", fontsize=9, va="bottom")
ax.set(xscale="log", yscale="log", xlabel="condition number $\\kappa(\\Sigma)$ ($X^\\star$ fixed)",
       ylabel="iterations + 1 to excess risk $\\leq 10^{-2}$ (slower seed)")
ax.legend()
plt.show()


# %% [markdown]
# The preconditioned method's iteration counts do not grow with $\kappa$
# ({numref}`fig-ch05-conditioning`): to reach $10^{-2}$ it needs 318 and 279 iterations at
# $\kappa = 1$ and 72 at $\kappa = 1000$ (faster at large $\kappa$: the same random start in
# $(A, B)$ maps to a smaller $(U, V)$ when $\hat\Sigma$ has small eigenvalues, which changes the
# starting error and the rule's step). Plain GD needs 382 and 341 at $\kappa = 1$, 877 and 574 at
# $\kappa = 10$, and does not reach $10^{-2}$ within 2000 iterations at $\kappa = 100$ and $1000$;
# SGD matches GD. Adam's per-coordinate scaling partly compensates (49 iterations at $\kappa = 1$,
# 1189 and 387 at $\kappa = 100$) but does not reach $10^{-2}$ at $\kappa = 1000$. Algorithm 1
# starts below both levels at every $\kappa$.

# %% [markdown]
# ## Explorer
#
# `ablations.explorer_run` reruns a short experiment on the seed-0 problem with condition number
# $\kappa$ ($X^\star$ fixed) and $n$ samples: 150 iterations from one random start, with and
# without the preconditioner, the step-size rule scaled by $c$ (`step_scale`), the regularizer on
# or off; the dashed line is the least-squares fit. Move the controls in a live kernel; the page
# opens at $\kappa = 1$, and the next cell shows $\kappa = 100$.

# %% tags=["hide-input"]
def show_explorer(log10_kappa: float = 2.0, n: int = 200, step_scale: float = 0.5,
                  regularize: bool = True) -> None:
    # Rerun ablations.explorer_run and plot the two excess-risk curves.
    out = ablations.explorer_run(kappa=10.0 ** log10_kappa, n=n, step_scale=step_scale,
                                 regularize=regularize)
    fig, ax = figure(width=6.4, height=3.8)
    for name, colour in (("preconditioned", METHOD_COLOURS["random+precond+reg"]),
                         ("plain", METHOD_COLOURS["gd"])):
        curve = out[name]
        ax.plot(np.arange(curve.size) + 1, curve, color=colour,
                label=f"{name} (step {float(out['step_' + name]):.3g})")
    ax.axhline(float(out["ols"]), color=METHOD_COLOURS["ols"], ls="--", lw=0.8, label="OLS fit")
    ax.set(xscale="log", yscale="log", xlabel="iteration + 1", ylabel="excess risk $L - L^\\star$",
           title=f"$\\kappa = 10^{{{log10_kappa:g}}}$, $n = {n}$, $c = {step_scale:g}$, "
                 f"regularizer {'on' if regularize else 'off'}")
    ax.legend()
    plt.show()
    print(f"excess risk after 150 iterations:\n  preconditioned {out['preconditioned'][-1]:.3g}, "
          f"plain {out['plain'][-1]:.3g}, OLS fit {float(out['ols']):.3g}")


# %% mystnb={"figure": {"caption": "Interactive: excess risk of the preconditioned and the plain method for $\\kappa(\\Sigma) = 10^0, \\dots, 10^3$ ($n = 200$, $c = 0.5$, with the regularizer). The page opens at $\\kappa = 1$ (the next figure shows $\\kappa = 100$); the frames were computed when the notebook ran; in Jupyter with a kernel the slider reruns the methods.", "name": "fig-ch05-explorer-slider"}} tags=["nbval-ignore-output", "hide-input"]
frame_slider(show_explorer, controls={"log10_kappa": [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0]},
             labels={"log10_kappa": "log₁₀ κ"}, initial={"log10_kappa": 0.0},
             alt="Excess risk against iterations, preconditioned and plain, kappa = 10^{log10_kappa:g}")

# %% mystnb={"figure": {"caption": "The explorer at $\\kappa(\\Sigma) = 100$, $n = 200$, $c = 0.5$, with the regularizer: excess risk of the preconditioned and the plain method against iterations, and the least-squares fit.", "name": "fig-ch05-explorer"}, "image": {"alt": "Log-log plot of excess risk against iteration: the preconditioned curve falls below the plain one; a dashed horizontal line marks the OLS fit."}} tags=["hide-input"]
show_explorer(log10_kappa=2.0, n=200, step_scale=0.5, regularize=True)

# %% [markdown]
# In {numref}`fig-ch05-explorer` (the slider of {numref}`fig-ch05-explorer-slider` moved to
# $\kappa = 100$), at $\kappa = 100$ and $n = 200$, after 150 iterations the preconditioned run is at excess risk
# 0.0205 and plain gradient descent at 0.0737 (the least-squares fit on the same 200 samples:
# 0.00448).

# %% [markdown]
# ## The papers' claims
#
# The {doc}`Reproduction report <report_ch05_experiment>` judges each claim below from this chapter's measurements, with its threshold; the [claims ledger](../book/ledger.md) gathers the whole book's.
#
# ::::{dropdown} The claims and their verdicts
# - {bdg-success}`reproduced` **[summary]** spectral start close to the optimal population loss
# - {bdg-warning}`partly reproduced` **[summary]** random start about three orders of magnitude higher in loss (against the random start's scale c, entries N(0, c^2/d))
# - {bdg-danger}`not reproduced` **[choice]** random start about three orders of magnitude higher in loss (\[choice\] reading: at the book's random-start scale c = 0.3)
# - {bdg-success}`reproduced` **[summary]** experiment: Algorithm 1 converges in 2000 iterations
# - {bdg-danger}`not reproduced` **[choice]** experiment: Algorithm 1 converges in 2000 iterations, stricter reading
# - {bdg-success}`reproduced` **[summary]** Algorithm 1 heads to the global optimum (Theorem 2, population: excess risk at 2000 no larger than the largest excess risk of the certified local minima found of the trained objective)
# - {bdg-danger}`not reproduced` **[choice]** Algorithm 1 heads to the best local minimum found of the trained objective (\[choice\] reading: gradient \<= 1e-8, positive definite Hessian, lowest value of the multi-start search)
# - {bdg-success}`reproduced` **[summary]** experiment: SGD has not converged at 2000 iterations
# - {bdg-warning}`partly reproduced` **[choice]** experiment: SGD has not converged at 2000 iterations, at every random-start scale
# - {bdg-success}`reproduced` **[choice]** experiment: SGD has not converged at 2000 iterations, stricter reading
# - {bdg-warning}`partly reproduced` **[summary]** from a random start, preconditioner + regularizer still converge fast (summary's reading: population loss within 10% of L\* at every recorded k from 1000 to 2000; at the random start the summaries describe: the scales c where observation 1 holds, two step rules)
# - {bdg-warning}`partly reproduced` **[choice]** from a random start, preconditioner + regularizer still converge fast (population loss within 10% of L\* at every recorded k from 1000 to 2000; \[choice\] reading: over every scale c of the random start's axis, the book's c = 0.3 included, and two step rules)
# - {bdg-danger}`not reproduced` **[choice]** from a random start, preconditioner + regularizer still converge fast (\[choice\] reading: optimization gap below 1e-3 of its start, at c = 0.3 with the step fixed at the start)
# - {bdg-warning}`partly reproduced` **[abstract]** plain gradient descent from random initialization shows a slow power-law rate
# - {bdg-warning}`partly reproduced` **[summary]** the preconditioner as the summaries state it (B's gradient multiplied by Sigma\_hat^-1, A's gradient unchanged) speeds up training
# ::::

# %% [markdown]
# ## Summary
#
# * "Converged" needs a yardstick: a population loss near the noise floor says little about
#   optimization, while the gap to the best local minimum of the trained objective says how much
#   is left to do.
# * The finite-sample objective has several nearby local minima, statistically equivalent fits of
#   the same data; a method's excess risk settles long before its optimization gap closes.
# * On the infinite-data objectives Algorithm 1 converges at the geometric rate set by the
#   smallest singular value of $X^\star$; at finite $n$ the weakly tilted $O(d)$ orbit adds tiny
#   Hessian eigenvalues that set a much slower rate.
# * A larger step alone can leave the basin; momentum or a second-order polish reaches the
#   minimizer quickly (measured on the report page).
# * With the preconditioner the iterations needed do not grow with the condition number of
#   $\Sigma$; plain gradient descent and SGD slow down as it grows.

# %% [markdown]
# ## Exercises
#
# 1. At the defaults the loss ratio between random and spectral starts is small while the
#    excess-risk ratio is large. Write the loss ratio in terms of the excess risks $e_r$, $e_s$ and
#    $L^\star$. Can a smaller noise level $\sigma$ make it reach 1000? Use the $\sigma = 0$ numbers
#    given under Observation 1.
#
# ```{admonition} Solution
# :class: dropdown
# The ratio is $(e_r + L^\star)/(e_s + L^\star)$ with $L^\star = p\sigma^2/2$; $e_r$, the error of
# a random map, does not depend on $\sigma$. If $e_s$ scaled like $\sigma^2$ (as the OLS error
# $p\sigma^2 d/(2(n-d-1))$ does), the ratio would grow without bound as $\sigma \to 0$. It does not:
# the spectral start's excess risk has a part that does not vanish with the noise (chapter 6,
# exercise 3: the layer computes $A\Sigma B^\top$ with the true $\Sigma$, while the start fits
# $A\hat\Sigma B^\top = \hat M$). At $\sigma = 0$, where $L^\star = 0$ and the loss ratio equals
# $e_r/e_s$, the cell under Observation 1 prints $e_s = 5.0\times10^{-3}$, $1.9\times10^{-3}$ and
# $3.5\times10^{-3}$ for seeds 0 to 2 and a ratio that tops out at 46.7 to 99.4, below 1000 for
# every seed. So in this reconstruction no noise level
# gives three orders of magnitude at $n = 500$; a larger target map or a larger random start would
# change $e_r$ (the section on observation 1 scans the random start's scale).
# ```
#
# 2. Use the explorer with $\kappa = 1000$. Which step-size scale $c$ makes plain gradient descent
#    diverge, and why does the preconditioned method tolerate a larger $c$? (Chapter 4 gives the
#    step-size rule.)
#
# ```{admonition} Solution
# :class: dropdown
# The rule $\eta = c/((1+\lambda)\max(\hat s_{\max}, \lVert U_0\rVert_F^2 + \lVert V_0\rVert_F^2))$
# bounds the curvature of the objective in $(U, V)$ at the start by
# $2.5(1+\lambda)\max(\hat s_{\max}, N_0) = 2.5c/\eta$ (chapter 4), so $\eta\lVert H\rVert \le 2.5c$ and
# gradient descent on $(U, V)$, which is what the preconditioned method is, is stable for $c$ up to
# about $0.8$ by that bound, and in practice well beyond, since the bound is loose (the section on
# slow directions on the Reproduction report page measures the true largest curvature: more than
# ten times smaller than the bound at the defaults). The preconditioned method tolerates a larger $c$ because its stability limit is
# set by the curvature in $(U, V)$, which does not depend on $\Sigma$; without the preconditioner the
# same step meets the Hessian $J^\top H J$ in $(A, B)$, whose largest eigenvalue grows with
# $\lVert\hat\Sigma\rVert^2$, and whose smallest ones shrink with the small eigenvalues of
# $\hat\Sigma$. The rule divides the unpreconditioned step by
# $\max(\lVert\hat\Sigma\rVert, \lVert\hat\Sigma\rVert^2)$ to cover the first effect, which is about 1
# here because the largest eigenvalue of $\Sigma$ is 1; the second effect is what makes plain
# gradient descent slow. Try increasing $c$ until one of the curves stops early (training stops when the
# objective overflows, `TrainResult.diverged`); the value depends on the seed and $n$.
# ```
#
# 3. The sweep stops each run at excess risk $10^{-2}$. Why would a target level below the excess risk
#    Algorithm 1 settles at (about $7\times10^{-3}$ at the defaults) make the table meaningless for
#    every method, and what sets that level?
#
# ```{admonition} Solution
# :class: dropdown
# The excess risk measures the distance of the trained layer from the *true* map; training only
# sees $n = 500$ noisy samples, so even the best minimizer found of the trained objective has an
# excess risk that is a statistical error: the local minima of $\hat Q$ found from different
# starts have the excess risks reported on the Reproduction report page, of the order of
# the OLS error $p\sigma^2 d/(2(n-d-1))$ plus the finite-$n$ softmax error of chapter 2. A threshold
# below that level is never reached by any method, so every entry would read "not reached" and the
# table would measure the data, not the optimizer. Chapter 6 measures how this floor falls with $n$.
# ```
