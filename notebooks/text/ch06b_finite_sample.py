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

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]

# %% [markdown]
# # Chapter 6b: Why the finite sample slows Algorithm 1 down
#
# Chapters 5 and 6 found something neither paper states: on the finite-sample objective
# $\hat Q = \hat L + \hat R$ the last stretch of Algorithm 1 is slow, and slower with more data.
# Chapter 6 measured the Hessian of $\hat Q$ at its minimizer: 45 small eigenvalues that shrink
# with $n$, while Algorithm 1's step does not change. This chapter explains why. It is the
# book's own result, not a reproduction of the papers: every statement in it is **[derived]**
# (shown here), **[choice]** (a decision of this book) or measured by a cell below.
#
# The runs are two grids of tasks, loaded from precomputed runs (rerunning them in full takes 51 and
# 22 minutes on two cores:
# `python -m attnlib.experiments finite_sample_methods finite_sample_spectra --workers 2`).
# Their data are chapter 5's (the defaults of chapter 1: $d = 10$, $p = 20$,
# $\kappa(\Sigma) = 10$, $\sigma = 0.1$, leave-one-out mask, $\lambda = 1$) at
# $n = 125, 250, \dots, 4000$, two data seeds each: two seeds is what the time
# budget allows at $n = 4000$, where one gradient costs about 0.2 s on a shared core.

# %% [markdown]
# ## Overview
#
# - **What you will learn.** How a finite sample tilts the orbit of minimizers that is exactly
#   flat at $n = \infty$, and how the 45 small curvatures should therefore scale with $n$ and with
#   the noise, checked against measured spectra; how to compare optimizers on equal footing, by
#   counting gradient evaluations to a given gap; and when Algorithm 1 is "done" once the
#   statistical error is in view.
# - **The answer in one sentence.** The expected finite-sample loss is exactly flat along the
#   orbit of rotations and only its random fluctuation tilts it, by an amount that shrinks with
#   $n$, so Algorithm 1's slowest mode needs more iterations the more data there are; for
#   prediction, though, it is done within a few tens of iterations.
# - **What you need.** Chapters 3, 5 and 6; chapter 2's view of attention as a self-normalized
#   importance-sampling average; Hessian eigenvalues and eigenvalue interlacing.
# - **Optional on a first reading.** The section "The claim fixed before the runs".
# - **For a researcher.** With noisy targets the smallest orbit curvature falls like
#   $n^{-0.84 \pm 0.19}$, consistent with the derived exponent $-1.0$; with noise-free targets it
#   falls like $n^{-0.87 \pm 0.09}$ instead of the derived $-1.5$, so the law misses a term that
#   is there without noise.

# %% [markdown]
# :::{admonition} Learning objectives
# After this chapter you can explain why the orbit of minimizers is exactly flat at $n = \infty$ and tilted at finite $n$, predict how the tilt scales with $n$ and with the noise, and choose a method and a stopping point for Algorithm 1's objective with the statistical error in view.
#
# Estimated student time: about 2 hours (reading and running the chapter, and its 3 exercises at about 20 minutes each).
# :::

# %% mystnb={"code_prompt_show": "Reproduction check: show {type}"} tags=["hide-cell"]
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter
import sympy as sp

from attnlib import algorithm, analysis, attention, data, experiments, fitting, population
from attnlib.claims import ch06b as judge
from attnlib.experiments import finite_sample
from attnlib.plotting import OKABE_ITO, figure, legend_below, use_book_style
from attnlib.tables import result_table

use_book_style()
attention.limit_blas_threads(1)      # as the stored runs' Dask workers
# n = 125, seed 0, with smaller budgets, live; compared where the live runs recorded a value,
# L-BFGS only over its well-conditioned first records (its line searches amplify round-off),
# the minimizer's Hessian to 1e-7 absolute (other CPUs move the minimizer by round-off)
stored, replayed, check = experiments.replay(
    "finite_sample_methods", keys=finite_sample.REPLAYED_KEYS, rtol=1e-7,
    absolute={"orbit_hessian": 1e-7}, align=finite_sample.recorded_prefix)
spectra, _, check_spectra = experiments.replay("finite_sample_spectra",
                                               absolute={"hessian": 1e-7, "orbit_": 1e-7},
                                               align=experiments.leading_block)
config = experiments.config(stored)
print(f"replayed n = {replayed['n_values'][0]}, seed 0 of both grids live.\n{check}\n{check_spectra}")
n_values, seeds, methods = stored["n_values"], stored["seeds"], config["methods"]
print(f"n = {', '.join(str(n) for n in n_values)}; seeds {seeds.tolist()}; methods {methods}")
same = (np.array_equal(stored["basin_value"], spectra["basin_value"][0])
        and np.allclose(stored["orbit_hessian"], spectra["orbit_sample"][0], rtol=1e-6, atol=1e-9))
print(f"the two grids reached the same minimizers at sigma = 0.1 (equal values and orbit "
      f"spectra): {same}")

# %% [markdown]
# ## The orbit is flat at infinite n and tilted at finite n
#
# Write the layer's output for query $j$ as its infinite-context limit plus an error,
# $h_j = m_j + e_j$ with $m_j = \Sigma B^\top x_j$ (chapter 2: the softmax weights
# $w_{ji} \propto e^{x_j^\top B x_i}$ tilt the Gaussian keys, and the tilted mean is
# $\Sigma B^\top x_j$). $e_j$ is the error of a self-normalized importance-sampling estimate
# over the $n - 1$ other samples. With $y_j = M x_j + \varepsilon_j$ and
# $r_j = A m_j - y_j = (A\Sigma B^\top - M) x_j - \varepsilon_j$, the data loss splits into three
# terms,
#
# $$
# \hat L = \underbrace{\frac1{2n}\sum_j \lVert A\Sigma B^\top x_j - y_j\rVert^2}_{L_1}
# + \underbrace{\frac1n \sum_j r_j^\top A e_j}_{C}
# + \underbrace{\frac1{2n}\sum_j \lVert A e_j\rVert^2}_{W}.
# $$ (eq-ch06b-split)
#
# 1. **$L_1$ leaves an orbit exactly flat.** $L_1$ depends on $(A, B)$ only through
#    $A\Sigma B^\top$, so it is constant along $(U, V) \mapsto (U G, V G^{-\top})$ for every
#    invertible $G$ (in the coordinates $U = A\Sigma^{1/2}$, $V = \Sigma^{1/2}B\Sigma^{1/2}$ of the
#    true $\Sigma$). The balancing regularizer $\hat R \ge 0$ vanishes on the balanced points of
#    that family, a manifold of dimension $d^2 - d(d+1)/2 = d(d-1)/2 = 45$: one orbit of
#    $(U, V) \mapsto (UO, VO)$, $O$ orthogonal. So $L_1 + \hat R$ has an exactly flat orbit of
#    minimizers, whatever $n$.
# 2. **On average, $C + W$ does not tilt it.** Rotating $(U, V) \mapsto (UO, VO)$ is
#    $A \mapsto AR$, $B \mapsto BR$ with $R = \Sigma^{1/2} O \Sigma^{-1/2}$. With the
#    leave-one-out mask, query $j$'s keys are the other samples, independent of $(x_j, y_j)$,
#    and $x_i \mapsto R x_i$ maps $\mathcal N(0, \Sigma)$ to itself; the logits
#    $x_j^\top B R x_i$ and the output $A R h_j$ of the rotated layer are those of the original
#    layer on the rotated keys. So $\mathbb E\,\hat L(AR, BR) = \mathbb E\,\hat L(A, B)$ exactly,
#    at every $n$: the expected finite-sample loss is as flat along the orbit as the population
#    loss. (With the query among its own keys, the self-logit $x_j^\top B R x_j$ breaks this.)
#    What tilts the orbit is the **fluctuation** of $C + W$ around its mean.
# 3. **The sizes of the fluctuations.** Each $e_j$ is an average of $n - 1$ centred terms
#    $\varphi_j(x_i)$, of order $n^{-1/2}$, with conditional covariance $\approx \Gamma(x_j)/n$
#    where, for $b = B^\top x_j$, $\Gamma = e^{b^\top\Sigma b}(\Sigma + \Sigma b b^\top \Sigma)$ (the variance
#    of the self-normalized estimate; the one-dimensional case is checked with sympy below).
#    The noise part of $C$, $-\frac1{n^2}\sum_j\sum_{i\ne j}\varepsilon_j^\top A\varphi_j(x_i)$,
#    has mean zero and variance $\frac{\sigma^2}{n^4}\sum_j\sum_{i\ne j}
#    \mathbb E\lVert A\varphi_j(x_i)\rVert^2 \approx \sigma^2 c/n^2$: a random function of the
#    orbit point of size $\sigma/n$. Everything else is smaller: near the minimizer
#    $A\Sigma B^\top - M = O(n^{-1/2})$, so the rest of $C$ fluctuates at $n^{-3/2}$, and so does
#    $W$ (terms of order $1/n$, averaged over $n$ queries).
#
# **The law.** Restricted to the orbit, $\hat Q$ is a constant plus a random function of size
# $\sigma K/n + O(n^{-3/2})$ with $K$ of order one; its minimum over the orbit has curvatures
# of the same size. So the 45 orbit curvatures at the minimizer should scale like
# $\sigma\, n^{-1}$ with noisy targets, and like $n^{-3/2}$ with noise-free ones, the smallest
# and the typical alike (the constant differs, the exponent does not). Algorithm 1's step
# $\eta$ does not depend on $n$, so its iterations to shrink the slowest mode by a fixed factor
# grow like $1/(\eta h_{\min}) \propto n$ once $\sigma > 0$. The law is a leading-order argument
# (the minimum of a random function over a compact orbit, with $K$ depending on the data), not a
# theorem; the cells below check its ingredients and then its predictions.

# %%
# the variance of a self-normalized importance-sampling estimate, d = 1: x ~ N(0, s^2),
# weights e^{b x}; tilted mean m = s^2 b
x_s, b_s = sp.symbols("x b", real=True)
s_s = sp.symbols("s", positive=True)
density = sp.exp(-x_s**2 / (2 * s_s**2)) / sp.sqrt(2 * sp.pi * s_s**2)
mean_weight = sp.integrate(sp.exp(b_s * x_s) * density, (x_s, -sp.oo, sp.oo))
spread = sp.integrate(sp.exp(2 * b_s * x_s) * (x_s - s_s**2 * b_s)**2 * density,
                      (x_s, -sp.oo, sp.oo)) / mean_weight**2
claimed = sp.exp(b_s**2 * s_s**2) * (s_s**2 + s_s**2 * b_s**2 * s_s**2)
print(f"E[w^2 (x - m)^2] / E[w]^2 = {sp.simplify(spread)}")
print(f"minus e^(b^2 s^2)(Sigma + Sigma b b Sigma) in d = 1: {sp.simplify(spread - claimed)}")

# %% [markdown]
# Step 2 is exact, so it can be checked by Monte Carlo: on many independent data sets, the
# loss at a point of the population orbit and at its rotation $(AR, BR)$ should agree **on
# average** with the leave-one-out mask, and not with the query among its keys. The cell uses
# tiny contexts ($n = 8$, where the self-term weighs most) and 20,000 data sets per mask, as 200
# stacks of 100 prompts.

# %%
mc_problem = data.default_problem(rng=np.random.default_rng(0), d=10, p=20, kappa=10.0,
                                  noise_std=0.1)
half, inv_half = population.spd_sqrt(mc_problem.Sigma)
a_pop, b_pop = algorithm.spectral_init(mc_problem.Sigma, mc_problem.M)   # a point of S
mc_rng = np.random.default_rng(1)
rotation, _ = np.linalg.qr(mc_rng.standard_normal((10, 10)))
r_mat = half @ rotation @ inv_half
print(f"population loss at the point and at its rotation: "
      f"{experiments.format_deviation(population.population_loss(a_pop, b_pop, mc_problem.Sigma, mc_problem.M), resolution=1e-24)}, "
      f"{experiments.format_deviation(population.population_loss(a_pop @ r_mat, b_pop @ r_mat, mc_problem.Sigma, mc_problem.M), resolution=1e-24)}")
print("mean of L_hat(AR, BR) - L_hat(A, B):")
for mask in ("loo", "all"):
    differences = []
    for _ in range(200):
        x_mc, y_mc = mc_problem.sample(8 * 100, rng=mc_rng)
        x_mc, y_mc = x_mc.reshape(100, 8, 10), y_mc.reshape(100, 8, 20)
        differences.append(
            attention.prompts_loss_and_grad(a_pop @ r_mat, b_pop @ r_mat, x_mc, y_mc, mask=mask)[0]
            - attention.prompts_loss_and_grad(a_pop, b_pop, x_mc, y_mc, mask=mask)[0])
    differences = np.asarray(differences)
    stderr = differences.std(ddof=1) / np.sqrt(differences.size)
    print(f"  mask {mask!r}: {differences.mean():+.2e} "
          f"+- {stderr:.1e} ({differences.mean() / stderr:+.1f} standard errors)")

# %% [markdown]
# With the leave-one-out mask the mean difference is within one standard error of zero; with the
# query among its keys it is ten standard errors away. Step 2 holds where the
# derivation says it does, and the check is sensitive enough to see it fail where it should.

# %% [markdown]
# ## The orbit curvature against n, measured
#
# Each task of the precomputed grid `finite_sample_spectra` finds the minimizer of $\hat Q$ reached from
# the spectral start (L-BFGS and a Newton polish to a gradient norm of $10^{-8}$,
# `attnlib.reference`) and measures, there, the full Hessian spectrum in $(U, V)$ coordinates
# (300 eigenvalues, as in chapter 6) and the Hessian restricted to two 45-dimensional orbit
# tangents (`attnlib.orbit`): the orbit of $\hat\Sigma$'s coordinates, flat for the closed form of
# chapter 3, and the orbit of the true $\Sigma$'s, along which the expected loss is flat (step 2).
# The law is about the 45 smallest eigenvalues of the full Hessian: they are the curvatures of
# the softest 45 directions, whatever their exact shape, and the ones that set Algorithm 1's
# rate; by eigenvalue interlacing, each restriction to a 45-dimensional subspace can only
# raise them. The noisy targets are chapter 5's ($\sigma = 0.1$); the noise-free ones use the same
# inputs with $Y = XM^\top$. The cell fits power laws in $n$ to the smallest eigenvalue and to
# the geometric mean of the 45 smallest (pooled over the two seeds, classical interval) and
# compares the exponents with the law's.

# %% mystnb={"code_prompt_show": "Reproduction check: show {type}"} tags=["hide-cell"]
hessian = spectra["hessian"]                      # (noise, n, seed, 300), ascending
noise_levels, n_spec = spectra["noise_levels"], spectra["n_values"]
n_slow = 45
smallest = hessian[..., 0]
geometric = np.exp(np.log(hessian[..., :n_slow]).mean(-1))
print(f"every Hessian eigenvalue positive (a strict local minimum): "
      f"{bool(np.all(hessian > 0))}; 46th eigenvalue between {hessian[..., n_slow].min():.3f} and "
      f"{hessian[..., n_slow].max():.3f}, largest up to {hessian[..., -1].max():.2f}")
for k, sigma in enumerate(noise_levels):
    print(f"sigma = {sigma:g}:  n    smallest (seeds)      geometric mean of 45    smallest restricted "
          f"to the orbit of Sigma_hat / of Sigma")
    for i, n in enumerate(n_spec):
        print(f"         {n:5d}  {' / '.join(f'{v:.2g}' for v in smallest[k, i]):20s}  "
              f"{' / '.join(f'{v:.2g}' for v in geometric[k, i]):22s}  "
              f"{' / '.join(f'{v:.2g}' for v in spectra['orbit_sample'][k, i, :, 0])}  |  "
              f"{' / '.join(f'{v:.2g}' for v in spectra['orbit_true'][k, i, :, 0])}")
law_fits = {}
for k, sigma in enumerate(noise_levels):
    predicted = -1.0 if sigma > 0 else -1.5
    for quantity, values in (("smallest", smallest[k]), ("geometric mean", geometric[k])):
        fit = fitting.fit_power_law(n_spec, values)
        law_fits[f"sigma = {sigma:g}, {quantity}"] = (fit.exponent, fit.stderr, predicted)
        print(f"sigma = {sigma:g}, {quantity:15s} ~ n^({fit.exponent:+.2f} +- {fit.stderr:.2f}), "
              f"95% interval [{fit.ci[0]:+.2f}, {fit.ci[1]:+.2f}]; derived {predicted:+.1f}")
print(f"[derived]   {judge.curvature_law(law_fits)}")

# %% mystnb={"figure": {"caption": "The 45 smallest Hessian eigenvalues of $\\hat Q$ at its minimizer against $n$, with noisy targets (filled) and noise-free ones (open); solid lines: the smallest (median over seeds); dotted: the derived slopes $n^{-1}$ and $n^{-3/2}$ through the first point.", "name": "fig-ch06b-orbit"}, "image": {"alt": "Log-log plot against n of two clouds of small markers for the 45 smallest Hessian eigenvalues, with solid lines through the smallest values and dotted reference slopes."}} tags=["hide-input"]
fig, ax = figure(width=6.4, height=4.2)
for k, (colour, fill, label) in enumerate(((OKABE_ITO["blue"], True, "noisy targets ($\\sigma = 0.1$)"),
                                          (OKABE_ITO["vermillion"], False, "noise-free targets"))):
    for i, n in enumerate(n_spec):
        ax.plot(np.full(hessian[k, i, :, :n_slow].size, n * (1.03 if fill else 0.97)),
                hessian[k, i, :, :n_slow].ravel(), "o", ms=2.5, color=colour,
                mfc=colour if fill else "none", alpha=0.4)
    median = np.median(smallest[k], axis=1)
    ax.plot(n_spec, median, "-", color=colour, label=f"{label}: smallest")
    slope = -1.0 if fill else -1.5
    ax.plot(n_spec, median[0] * (n_spec / n_spec[0]) ** slope, ":", color=colour,
            label=f"derived $n^{{{slope:g}}}$")
ax.set(xscale="log", yscale="log", xlabel="sample size $n$",
       ylabel="Hessian eigenvalue of $\\hat Q$ at its minimizer")
ax.set_xticks(n_spec, [str(n) for n in n_spec])
ax.xaxis.set_minor_formatter(NullFormatter())
legend_below(fig, ncol=2)
plt.show()

# %% [markdown]
# {numref}`fig-ch06b-orbit` and the fits above compare the law with the measurements. Every
# spectrum is positive (strict local minima), with 45 eigenvalues below the 46th. With noisy
# targets the smallest eigenvalue falls like $n^{-0.84 \pm 0.19}$, consistent with the derived
# $-1$; the geometric mean of the 45 falls like $n^{-0.77 \pm 0.02}$ (the value chapter 6
# measured up to $n = 2000$), which the law does not predict. With noise-free targets the law
# predicts a steeper fall, $n^{-3/2}$; the measurements give $n^{-0.87 \pm 0.09}$ (smallest) and
# $n^{-0.84 \pm 0.03}$ (geometric mean). Without noise the curvatures are smaller, about half at
# every $n$, but they fall at the same rate. So the derivation gets the direction of the noise
# effect right and the order of the smallest noisy curvature, but it misses a term of order about
# $n^{-0.8}$ that is there without noise: the law as stated is not the whole story. Where the missing term could come from (a hypothesis, not
# tested here): step 3 treats each importance-sampling error as an average of $n$ independent
# terms with variance $\Gamma(x_j)/n$, but the weights $e^{x_j^\top B x_i}$ are log-normal with a
# variance that grows with $\lVert B^\top x_j\rVert$, so at these sizes the effective number of
# samples can grow more slowly than $n$ and the fluctuations decay more slowly than the asymptotic
# rates used. The restricted curvatures (the last two columns) are larger than the full
# Hessian's smallest, as interlacing requires; those along the orbit of $\hat\Sigma$'s
# coordinates are the smaller of the two, so that orbit is the better description of the soft
# directions at the minimizer, and both fall with $n$ like the full spectrum.

# %% [markdown]
# ## Five methods on equal footing
#
# Every method starts at Algorithm 1's spectral start on the same $\hat Q$ and is charged for
# every gradient evaluation it makes, including what it spends before it starts (a power
# iteration for the largest curvature $h_{\max}$: 202 evaluations); the budget is 2000 evaluations
# (1000 iterations for Algorithm 1):
#
# | method | what it is |
# | --- | --- |
# | Algorithm 1 | chapter 4's preconditioned gradient descent with its step rule |
# | Nesterov | chapter 5's remedy: the curvature step $1/h_{\max}$ with Nesterov momentum 0.9 |
# | Newton polish | 200 Algorithm 1 iterations, then trust-region Newton-CG with Hessian-vector products by central differences (two evaluations each) |
# | L-BFGS | 30 correction pairs, exact gradients, scipy's line search |
# | orbit Nesterov | this book's orbit-aware method: Nesterov with the curvature step across the orbit and a Newton step along it, the Hessian restricted to the orbit tangent re-measured every 100 iterations (90 evaluations each) after 300 warm-up iterations, the orbit step at most 0.01 long |
#
# The orbit method's settings were chosen on one case (chapter 5's data, $n = 500$, seed 0)
# before this grid was run; there, an orbit step of unbounded length (0.1 instead of 0.01)
# jumped to another, lower minimum, and without the warm-up the restricted Hessian at the
# spectral start is indefinite (eigenvalues $-0.017$ to $0.048$) and the method diverged. The
# gap of every run is measured against the **lowest known minimum** of that data set: the lowest
# value reached by the reference route or any method. A method "reaches" a relative gap $t$ at
# the first evaluation count where its value is within $t$ of the initial gap above that minimum.

# %%
values, spent = stored["values"], stored["evaluations"]
lowest = np.minimum(stored["basin_value"], np.nanmin(values, axis=(-2, -1)))
LEVELS = (1e-3, 1e-6, 1e-9)


def evaluations_to(level, reference):
    """Evaluations (n, seed, method) to a gap of ``level`` times the initial gap above
    ``reference`` (n, seed); inf where it is not reached within the budget."""
    initial_gap = stored["initial_value"] - reference
    first = analysis.iterations_to_threshold(
        (values - reference[..., None, None]) / initial_gap[..., None, None], level)
    index = np.where(np.isfinite(first), first, 0).astype(int)[..., None]
    return np.where(np.isfinite(first), np.take_along_axis(spent, index, axis=-1)[..., 0], np.inf)


counts = {level: evaluations_to(level, lowest) for level in LEVELS}
below_basin = lowest < stored["basin_value"] - 1e-12 * np.abs(stored["basin_value"])
print(f"data sets where a method found a minimum below the reference route's: "
      f"{int(below_basin.sum())} of {below_basin.size}")
print("gradient evaluations to a relative gap of 1e-3 / 1e-6 / 1e-9\n"
      "(- = not within the budget), and wall-clock seconds per seed")
evaluation_rows = []
for j, method in enumerate(methods):
    for i, n in enumerate(n_values):
        cells = [" / ".join("-" if np.isinf(counts[t][i, s, j]) else
                            f"{int(counts[t][i, s, j])}" for t in LEVELS)
                 for s in range(seeds.size)]
        evaluation_rows.append([method if i == 0 else "", int(n), *cells,
                                " | ".join(f"{v:.1f}" for v in stored["seconds"][i, :, j])])
display(result_table(["method", "n", *(f"seed {s}" for s in seeds), "seconds"], evaluation_rows))

# %% [markdown]
# Where did each method end? A method that stops above the lowest known minimum and far from
# the reference minimizer converged to another stationary point (or ran out of budget on the
# way); the distance is Euclidean in $(U, V)$.

# %%
final_gap = (np.nanmin(values, axis=-1) - lowest[..., None]) / (
    stored["initial_value"] - lowest)[..., None]
print("smallest relative gap reached, and distance to the reference route's\n"
      "minimizer at the end, per seed")
end_rows = [[method if i == 0 else "", int(n)]
            + [text for s in range(seeds.size) for text in
               (f"{final_gap[i, s, j]:.0e}", f"{stored['final_distance'][i, s, j]:.2g}")]
            for j, method in enumerate(methods) for i, n in enumerate(n_values)]
display(result_table(["method", "n"] + [text for s in seeds for text in (f"seed {s} gap", "distance")],
                     end_rows))

# %% [markdown]
# ## The papers' claims
#
# This chapter's results are the book's own: the law of the orbit's curvature against $n$ **[derived]** and the comparison of the five methods, judged by a rule fixed before the runs **[choice]**. {doc}`The Reproduction report's page for Chapter 6b <report_ch06b_finite_sample>` judges both from the numbers, with their thresholds.

# %% [markdown]
# ## What it means statistically: when is Algorithm 1 done?
#
# The optimization gap is about $\hat Q$; a reader fits the layer for its **excess risk**
# $L(\theta) - L^\star$ on new data. The cell compares, at every $n$, the excess risk of the
# reference minimizer, of the lowest known minimum's method, of Algorithm 1 after 1000
# iterations, and of Algorithm 1 **stopped early** at the first iteration where its excess risk
# comes within 10% of the reference minimizer's (a rule this book fixes), with the least-squares fit on the
# same data (the OLS floor of chapter 6).

# %%
alg1_risk = stored["alg1_excess_risk"]
basin_risk, ols_risk = stored["basin_excess_risk"], stored["ols_excess_risk"]
ends = stored["final_excess_risk"]
print("excess risks per data set (two seeds per n): reference minimizer, best method's\n"
      "end point and its method, Alg. 1 at 1000 iterations, Alg. 1 stopped early\n"
      "(iteration; never = not within 10% in 1000 iterations), OLS fit")
stops, risk_rows = [], []
for i, n in enumerate(n_values):
    for s in range(seeds.size):
        best = int(np.nanargmin(final_gap[i, s]))
        within = np.abs(alg1_risk[i, s] - basin_risk[i, s]) <= 0.1 * basin_risk[i, s]
        stop = int(np.argmax(within)) if within.any() else None
        stops.append(stop)
        early = f"{alg1_risk[i, s, stop]:.3g} ({stop})" if stop is not None else "never"
        risk_rows.append([int(n), basin_risk[i, s], ends[i, s, best], methods[best],
                          alg1_risk[i, s, -1], early, ols_risk[i, s]])
display(result_table(["n", "reference", "best end", "by", "Alg. 1 end", "early stop", "OLS"],
                     risk_rows))
print(f"reference minimizer's excess risk / OLS: {np.min(basin_risk / ols_risk):.1f} to "
      f"{np.max(basin_risk / ols_risk):.1f}")
print(f"early stop at iteration 0 (the spectral start is already within 10%):\n"
      f"  {sum(stop == 0 for stop in stops)} of {len(stops)} runs; later: "
      f"{sorted(stop for stop in stops if stop)}; never within 1000 iterations: "
      f"{sum(stop is None for stop in stops)}")
print(f"Algorithm 1's lowest excess risk along its 1000 iterations came at\n"
      f"  iteration {int(np.max(np.nanargmin(alg1_risk, axis=-1)))} at the latest")
print(f"excess risks of the five end points on one data set, largest / smallest:\n  "
      f"{np.min(np.max(ends, -1) / np.min(ends, -1)):.2f} to "
      f"{np.max(np.max(ends, -1) / np.min(ends, -1)):.2f}")

# %% [markdown]
# The answer to "when is Algorithm 1 done?" is: much earlier than its optimization gap says.
#
# * Along Algorithm 1's 1000 iterations the excess risk is lowest by iteration 19 at the latest,
#   in every run; afterwards it drifts by up to a few tens of percent (at $n = 125$, seed 0, from
#   0.0448 at the start to 0.0585 at iteration 1000).
# * The early-stopping rule stops at the spectral start in 3 runs and after 11 to 60 iterations in
#   5. In the other 4 runs Algorithm 1's excess risk never comes within 10% of the minimizer's;
#   in 3 of them it stays *below* it. At $n = 500$, seed 0, Algorithm 1 after 1000 iterations, far
#   from the minimum, has excess risk 0.00702 against the minimizer's 0.0102.
# * On one data set, the five methods' end points have excess risks within a factor 1.05 to
#   1.47 of each other: a lower $\hat Q$ is not a lower excess risk.
# * Every minimizer sits well above the OLS floor: the reference minimizer's excess risk is 1.9
#   to 5.4 times that of the least-squares fit on the same data. That difference is statistical,
#   the price of fitting through an attention layer whose context is the $n$ samples, and no
#   optimizer removes it.
#
# For prediction, then, Algorithm 1 is done within a few tens of iterations of its spectral
# start. Running it, or a faster method, to the minimizer of $\hat Q$ buys nothing measurable in
# excess risk at these $n$, and can cost some. Converging matters when the minimizer itself is the
# object of study, as in chapters 3 to 6, and then L-BFGS is the method to use.

# %% [markdown]
# ## Summary
#
# * Along the orbit of rotations the expected leave-one-out loss is exactly flat at every $n$;
#   what tilts the orbit is the random fluctuation of the finite-sample loss, whose size shrinks
#   with $n$.
# * So the orbit curvatures shrink with $n$ while Algorithm 1's step does not, and its slowest
#   mode needs more iterations the more data there are.
# * Counting gradient evaluations puts methods on equal footing: a quasi-Newton method (L-BFGS)
#   reaches the basin minimum reliably, while large curvature steps often leave the basin.
# * A lower value of the finite-sample objective is not a lower excess risk: for prediction,
#   Algorithm 1 is done within a few tens of iterations, and the remaining distance to least
#   squares is statistical, a price no optimizer removes.

# %% [markdown]
# ## Exercises
#
# 1. Show that the orbit $(U, V) \mapsto (UO, VO)$ in the coordinates of the true $\Sigma$ is
#    $A \mapsto A R$, $B \mapsto B R$ with $R = \Sigma^{1/2}O\Sigma^{-1/2}$, and that $R$ maps
#    $\mathcal N(0, \Sigma)$ to itself.
#
# ```{admonition} Solution
# :class: dropdown
# $U = A\Sigma^{1/2} \mapsto UO$ gives $A \mapsto UO\Sigma^{-1/2} = A\Sigma^{1/2}O\Sigma^{-1/2}$;
# $V = \Sigma^{1/2}B\Sigma^{1/2} \mapsto VO$ gives
# $B \mapsto \Sigma^{-1/2}VO\Sigma^{-1/2} = B\Sigma^{1/2}O\Sigma^{-1/2}$. If $x \sim \mathcal N(0, \Sigma)$
# then $Rx$ is Gaussian with covariance
# $R\Sigma R^\top = \Sigma^{1/2}O\Sigma^{-1/2}\Sigma\Sigma^{-1/2}O^\top\Sigma^{1/2} = \Sigma$.
# ```
#
# 2. Why does the argument of step 2 fail when the query is among its own keys, and which order
#    in $n$ should the resulting tilt have?
#
# ```{admonition} Solution
# :class: dropdown
# With the query among its keys, the key set of row $j$ contains $x_j$ itself, which is not
# independent of the query and the target. The substitution $x_i \mapsto R x_i$ would have to
# rotate $x_j$ as a key (in the self-logit $x_j^\top B R x_j$ and in the output) but not as the
# query, so it is no longer a symmetry of the data's distribution. The self-term carries a
# weight of about one in $n$, so the expected loss changes along the orbit at order $1/n$: a
# deterministic tilt, of the same order as the noise term's fluctuation at $\sigma = 0.1$. The
# Monte Carlo cell measures it at $n = 8$.
# ```
#
# 3. With $\sigma = 0$ the law predicts $n^{-3/2}$. At which $n$ would the noise term
#    $\sigma/n$ overtake an $n^{-3/2}$ term with the same constant, for $\sigma = 0.1$?
#
# ```{admonition} Solution
# :class: dropdown
# $\sigma/n = n^{-3/2}$ at $n = \sigma^{-2} = 100$. Above it the noise term dominates, so the
# measured range $n = 125 \dots 4000$ sits in the $1/n$ regime only if the two constants are
# comparable; a larger constant of the $n^{-3/2}$ term moves the crossover up and makes the fitted
# exponent steeper than $-1$ at the small-$n$ end.
# ```
