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
# # Checks for Chapter 6: Scaling laws
#
# This page of the Reproduction report checks what {doc}`Chapter 6 <ch06_scaling>` measures against what the papers claim. Every verdict is computed by `attnbook.claims` from the numbers, with its threshold printed; the claims ledger collects them. The first cell calls the chapter's functions from `attnbook.chapters.ch06` on the chapter's stored runs (loaded by name), so the objects the chapter built are here.

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

from attnlib import fitting, geometry, population
from attnbook import experiments
from attnbook.chapters import ch06
from attnbook.claims import ch06 as judge
from attnbook.experiments import scaling
from attnbook.plotting import METHOD_COLOURS, OKABE_ITO, figure, use_book_style

use_book_style()
stored = experiments.load("scaling")                    # the chapter's stored run, by name
config = experiments.config(stored)
noise_levels, n_values = stored["noise_levels"], stored["n_values"]
d, p = config["d"], config["p"]
final, _, _, ols_fit = ch06.sample_size_risks(stored)   # (noise, n, seed)
fits = ch06.sample_size_fits(stored, np.random.default_rng(ch06.SEED_BOOT))
alg1_over_ols = ch06.alg1_over_ols(stored)[noise_levels[0]]     # sigma = 0.1, per n
closed_n, closed = stored["closed_n_values"], stored["closed_spectral_excess_risk"]
kx, ks, pre, measured, predicted = ch06.rate_runs(stored)
dimension = scaling.dimension_rates()                   # live, as in the chapter
curvature = experiments.load("paper1_curvature_vs_n")
n_curv = curvature["n_values"]
h_min, _ = ch06.slowest_curvatures(curvature["hessian"], ch06.orbit_dimension(d))
iterations_1e3 = ch06.iterations_to_shrink(curvature["step"], h_min, factor=1e3)

# %% [markdown]
# ## A second reconstruction: many prompts of context length n
#
# Everything above reads $n$ as the number of samples, and one sample set is both the regression
# data and the attention context (the first reconstruction, **[choice]**). With noise, that
# reading cannot beat $1/n$ (the OLS rate is minimax), so the summaries' $n^{-2}\log^6 n$ cannot be
# its error. The summaries call that term a *statistical bias*: the gap between the finite objective
# and its infinite-data limit **[summary]**. This section measures it in a second reconstruction
# **[choice]**: $n$ is the *context length*; $N$ prompts of $n$ tokens are drawn from one task
# $(\Sigma, M)$; query $j$ of prompt $k$ attends over the other tokens of prompt $k$ only, and the
# loss is averaged over all $Nn$ queries (`attnlib.algorithm.prompts_loss`,
# `attnlib.attention.prompts_loss_and_grad`). Its expectation over prompts is the finite-context
# population loss $L_n(A, B)$, which tends to chapter 2's $L(A, B)$ as $n \to \infty$.
#
# To isolate the bias: $\sigma = 0$, and the pooled sample of all $Nn$ tokens is moment-matched
# (`attnlib.prompts.sample_prompts(..., whiten=True)`: $\hat\Sigma = \Sigma$ and $\hat M = M$
# exactly) **[choice]**. Then the spectral start lies on $S$ itself, and what moves the minimizer of
# $\hat Q = \hat L + \hat R$ off $S$ is the finite context. For one replicate $s$ the excess risk of
# the certified minimizer is exactly $\tfrac12\lVert\Delta_s\rVert_F^2$ with
# $\Delta_s = U_sV_s^\top - X^\star$ (whitened coordinates). That adds the replicate's own
# fluctuation to the bias, so the bias is estimated by the U-statistic
# $\frac{1}{S(S-1)}\sum_{s\ne t}\tfrac12\langle\Delta_s, \Delta_t\rangle$, unbiased for
# $\tfrac12\lVert\mathbb E\Delta\rVert^2$, with jackknife error bars (`attnlib.prompts.bias_statistic`).
#
# The stored run `paper1_prompts_bias`: seed 0's task at the book's scale of $M$ and at $M/2$;
# $n$ from 10 to 5000; $N = \max(1, \lfloor 4000/n\rfloor)$ prompts per replicate; certified
# minimizers (`attnlib.reference`, gradient norm below $10^{-6}$ **[choice]**: far below what
# moves the excess risk at the precision of the error bars). **Budget [choice]**: the stored
# runs of this chapter and chapter 5 fit in about 35 CPU-minutes on a 2-core machine. The cost of one evaluation grows like $N n^2$, and a certified minimizer needs several
# hundred evaluations (more at large $n$, where the $O(d)$ orbit is only weakly broken). The
# grid that fits: four replicates up to $n = 40$, three from 80 to 640, four at $n = 1280$ and
# 2560 and three at $n = 5000$ (one prompt per replicate from $n = 2560$ on); the smaller scale has
# $n = 10, 40, 160$ only. The next cell prints the grid.

# %%
from attnlib import prompts, symbolic
from attnbook.experiments import paper1_prompts

# the first cell (scale 1, n = 10, replicate 0): its certified minimizer to the scale at which it
# is certified (gradient norm 1e-6); delta = U V^T - X* (entries near 0) to 1e-6 absolute
bias_run, replay_bias, check = experiments.replay(   # python -m attnbook.experiments paper1_prompts_bias
    "paper1_prompts_bias", align=experiments.leading_block, rtol=1e-6,
    absolute=paper1_prompts.DELTA_ROUND_OFF,
    keys=("excess_risk", "delta", "value", "deployed_minimizer", "deployed_start"))
print(f"replayed the first cell (scale 1, n = 10, replicate 0) live.\n{check}")
n_bias, bias_scales = bias_run["n_values"], bias_run["scales"]
xstar_of = {k: population.target(paper1_prompts.scaled_task(s).M,
                                 paper1_prompts.scaled_task(s).Sigma)
            for k, s in enumerate(bias_scales)}
gamma1 = {k: np.linalg.svd(x, compute_uv=False)[0] for k, x in xstar_of.items()}
print("scales of M: " + ", ".join(f"{s:g} (gamma_1 = {gamma1[k]:.3f})"
                                  for k, s in enumerate(bias_scales)))
done_cells = np.isfinite(bias_run["excess_risk"])
for k, s in enumerate(bias_scales):
    print(f"M x {s:g}: " + ", ".join(f"n={n}: N={int(c)} x {int(r)} replicates" for n, c, r in
                                    zip(n_bias, bias_run["prompts"], done_cells[k].sum(axis=1))
                                    if r > 0))

# %%
estimates, first_order = {}, {}
for k in range(bias_scales.size):
    curve = prompts.first_order_curve(xstar_of[k], n_bias - 1.0)    # m = n - 1 keys
    first_order.update({(k, j): value for j, value in enumerate(curve)})
print("scale  n     N   reps  excess per replicate (min..max)  bias (U-stat) +- se    n x bias  "
      "delta method  deployed: minimizer / S")
for k, scale in enumerate(bias_scales):
    for j, n in enumerate(n_bias):
        deltas = bias_run["delta"][k, j]
        done = np.isfinite(deltas[:, 0, 0])
        if done.sum() == 1:
            print(f"{scale:5g} {n:5d} {int(bias_run['prompts'][j]):4d}    1   "
                  f"{float(bias_run['excess_risk'][k, j][done][0]):.2e} (one replicate: no U-statistic)"
                  f"{'':17s}{first_order[k, j]:.3e}")
        if done.sum() < 2:
            continue
        est = estimates[k, j] = prompts.bias_statistic(deltas[done])
        excess = bias_run["excess_risk"][k, j][done]
        se = "  (2 reps)" if np.isnan(est.stderr) else f" +- {est.stderr:.1e}"
        print(f"{scale:5g} {n:5d} {int(bias_run['prompts'][j]):4d} {int(done.sum()):4d}   "
              f"{excess.min():.2e}..{excess.max():.2e}          {est.bias:.3e}{se:10s}  "
              f"{n * est.bias:7.3f}   {first_order[k, j]:.3e}    "
              f"{np.nanmean(bias_run['deployed_minimizer'][k, j]):.2e} / "
              f"{np.nanmean(bias_run['deployed_start'][k, j]):.2e}")

# %% [markdown]
# At the book's scale the bias falls from $6.77\times10^{-2}$ at $n = 10$ to $3.74\times10^{-4}$ at
# $n = 640$ and $5.69\times10^{-5}$ at $n = 5000$. $n$ times the bias stays near 0.68 to 0.70 up to
# $n = 40$, falls to 0.239 at $n = 640$, and then stays between 0.239 and 0.284 up to $n = 5000$:
# between $n \approx 80$ and 640 the bias decays faster than $1/n$, beyond 640 about like $1/n$.
# Where the prompts get few ($N = 6$ at $n = 640$, a single prompt from $n = 2560$ on) the
# replicates' excess risks lie above the U-statistic, by up to a factor of three at $n = 5000$
# ($1.03$ to $1.67\times10^{-4}$ against $5.69\times10^{-5}$): each replicate's own fluctuation adds
# to its excess, which the U-statistic removes. At $M/2$ the bias is smaller ($6.63\times10^{-4}$ at
# $n = 160$). The deployed excess risk (a fresh context of $n$ tokens) is far larger than this
# infinite-context bias, $1.29\times10^{-2}$ at $n = 640$, and lower at the minimizer than on $S$
# ($1.35\times10^{-2}$) up to $n = 640$: the minimizer of the finite-context loss gives up some
# infinite-context risk to lower the risk a user deploys. The delta method's first-order
# prediction is far above the measured bias at the book's scale ($3.86\times10^{-3}$ against
# $3.74\times10^{-4}$ at $n = 640$) and within a factor of two at $M/2$.

# %%
n_fine = np.geomspace(10, 1e5, 30)
bias_curves, slopes, exponent_fits = {}, {}, {}
for k, scale in enumerate(bias_scales):
    keys = [j for j in range(n_bias.size) if (k, j) in estimates]
    n_k = n_bias[keys].astype(float)
    bias_k = np.array([estimates[k, j].bias for j in keys])
    se_k = np.array([estimates[k, j].stderr for j in keys])
    bias_curves[k] = dict(n=n_k, bias=bias_k, stderr=se_k,
                          first_order=prompts.first_order_curve(xstar_of[k], n_fine - 1),
                          c2=prompts.asymptotic_bias_coefficient(xstar_of[k]))
    positive = bias_k > 0                              # log-log slopes need positive estimates
    mid, slope, err = prompts.local_slopes(n_k[positive], bias_k[positive],
                                               np.nan_to_num(se_k[positive], nan=0.0))
    unknown = np.isnan(se_k[positive])
    slopes[k] = (mid, slope, np.where(unknown[1:] | unknown[:-1], np.nan, err))
    with_error = np.isfinite(se_k) & (n_k >= 160)
    if with_error.sum() >= 3:
        exponent_fits[k] = (n_k[with_error], fitting.fit_power_law_weighted(
            n_k[with_error], bias_k[with_error], se_k[with_error]))
for k, scale in enumerate(bias_scales):
    mid, slope, err = slopes[k]
    print(f"M x {scale:g}: local slopes " + ", ".join(
        f"n~{m:.0f}: {s:+.2f}" + ("" if np.isnan(e) else f" +- {1.96 * e:.2f}")
        for m, s, e in zip(mid, slope, err)))
    print(f"          n^-2 log^6 n at the same midpoints: "
          + ", ".join(f"{-2 + 6 / np.log(m):+.2f}" for m in mid))
    if k in exponent_fits:
        n_used, fit = exponent_fits[k]
        print(f"          weighted fit bias ~ C n^b over n = {n_used[0]:.0f}..{n_used[-1]:.0f} "
              f"({fit.n_points} points with jackknife errors): b = {fit.exponent:+.2f}, 95% "
              f"interval [{fit.ci[0]:+.2f}, {fit.ci[1]:+.2f}]; n^-2 log^6 n's slope over that "
              f"range: {-2 + 6 / np.log(np.sqrt(n_used[0] * n_used[-1])):+.2f}")
for j, n in enumerate(n_bias):
    done = np.isfinite(bias_run["excess_risk"][0, j])
    if done.sum() == 1:
        print(f"n = {n} (one replicate): excess risk {bias_run['excess_risk'][0, j][done][0]:.3g}, an "
              "upper estimate of the bias (it includes the replicate's own fluctuation)")

# %% mystnb={"figure": {"caption": "Finite-context bias against the context length $n$ at two scales of $M$ (top: U-statistic with jackknife errors, single replicates as dots, the delta method's first-order prediction and its asymptote) and its local log-log slopes with 95% intervals against $n^{-1}$, $n^{-2}\\log^6 n$ and $n^{-2}$ (bottom).", "name": "fig-ch06-prompts-bias"}, "image": {"alt": "Top: bias points against context length on log-log axes for two scales of M with error bars, single replicates as faint dots, the first-order delta-method curves and their n^-2 asymptotes. Bottom: local log-log slopes with 95% intervals against reference lines n^-1, n^-2 log^6 n and n^-2."}} tags=["hide-input"]
fig, axes = figure(2, 1, height=8.0)
colours = {0: OKABE_ITO["blue"], 1: OKABE_ITO["vermillion"]}
for k, scale in enumerate(bias_scales):
    curve = bias_curves[k]
    label = f"$M \\times {scale:g}$ ($\\gamma_1$ = {gamma1[k]:.2f})"
    axes[0].errorbar(curve["n"], curve["bias"], yerr=np.nan_to_num(curve["stderr"]), fmt="o",
                     color=colours[k], ms=4, capsize=2, label=f"{label}: bias (U-statistic)")
    for j in range(n_bias.size):                       # every replicate
        done = np.isfinite(bias_run["excess_risk"][k, j])
        axes[0].plot(np.full(done.sum(), n_bias[j]), bias_run["excess_risk"][k, j][done], ".",
                     color=colours[k], alpha=0.35, ms=3)
    axes[0].plot(n_fine, curve["first_order"], "-", color=colours[k], lw=1,
                 label="delta method (first order)")
    axes[0].plot(n_fine, curve["c2"] / (n_fine - 1) ** 2, ":", color=colours[k], lw=1,
                 label=f"its asymptote {curve['c2']:.3g}$/(n-1)^2$")
    mid, slope, err = slopes[k]
    axes[1].errorbar(mid, slope, yerr=1.96 * np.nan_to_num(err), fmt="o",
                     color=colours[k], ms=4, capsize=2, label=label)
    axes[1].plot(np.sqrt(n_fine[:-1] * n_fine[1:]),
                 np.diff(np.log(curve["first_order"])) / np.diff(np.log(n_fine)),
                 "-", color=colours[k], lw=1)
axes[1].axhline(-1, color="0.4", lw=1, ls="--", label="$n^{-1}$")
axes[1].plot(n_fine, -2 + 6 / np.log(n_fine), color="k", lw=1, label="$n^{-2}\\log^6 n$ [summary]")
axes[1].axhline(-2, color="0.4", lw=1, ls=":", label="$n^{-2}$")
axes[0].set(xscale="log", yscale="log", xlabel="context length $n$",
            ylabel=r"bias $L(\hat\theta^\star_n) - L^\star$ ($\sigma = 0$)")
axes[1].set(xscale="log", xlabel="context length $n$ (geometric midpoint)",
            ylabel="local log-log slope (95% interval)", ylim=(-3, 0))
axes[0].plot([], [], ".", color="0.5", label="one replicate's excess risk")
axes[0].legend()
axes[1].legend(loc="lower left")
plt.show()

# %%
tokens_run, replay_tokens, check = experiments.replay(   # python -m attnbook.experiments paper1_prompts_bias_tokens
    "paper1_prompts_bias_tokens", align=experiments.cell(0, 0), rtol=1e-6,
    absolute=paper1_prompts.DELTA_ROUND_OFF,
    keys=("excess_risk", "delta"))                           # n = 40, replicate 0
print(f"replayed the first cell (n = 40, replicate 0) live.\n{check}")
print("  n   tokens per replicate: bias (U-statistic) +- se   with 4x the tokens   change (in se)")
token_shift = {}
for i, n in enumerate(tokens_run["n_values"]):
    j = list(n_bias).index(n)
    base, more = estimates[0, j], prompts.bias_statistic(tokens_run["delta"][i])
    token_shift[int(n)] = (more.bias - base.bias) / np.hypot(base.stderr, more.stderr)
    print(f"{n:5d}   {int(bias_run['prompts'][j]) * n:5d}: {base.bias:.3e} +- {base.stderr:.1e}   "
          f"{int(tokens_run['prompts'][i]) * n:5d}: {more.bias:.3e} +- {more.stderr:.1e}   "
          f"{more.bias / base.bias - 1:+.0%} ({token_shift[int(n)]:+.1f})")

# %% [markdown]
# {numref}`fig-ch06-prompts-bias` shows the result. At the book's scale the local slope first steepens: $-0.95$ near $n = 14$, $-1.03$, $-1.15$, then
# $-1.36 \pm 0.17$, $-1.50 \pm 0.21$ and $-1.50 \pm 0.31$ near $n = 453$ (95% intervals), steeper
# than $-1$ and than the local slope of $n^{-2}\log^6 n$ at the same $n$ ($-0.73$ to $-1.02$). Beyond
# $n = 640$ it comes back: $-0.93 \pm 0.51$, $-0.89 \pm 0.50$ and $-0.93 \pm 0.83$ near $n = 3578$, and a
# weighted fit over $n = 160$ to 5000 gives $-1.23$ $[-1.30, -1.15]$, dominated by the precise
# points at small $n$. At $M/2$ the slopes are $-1.10$ and $-1.44 \pm 0.08$.
#
# Is the return to $-1$ the finite context, or the finite sample? Every replicate above has about
# 4000 tokens (a single prompt from $n = 2560$ on), and the variance section below finds
# that the sample size moves the minimizer by about 10% at $n = 40$. The stored run
# `paper1_prompts_bias_tokens` repeats three context lengths with four times the tokens
# (the cell above): the estimate moves by $+13\%$ at $n = 40$ (11 standard errors), $+19\%$ at $n = 640$
# and $-32\%$ at $n = 1280$, so at fixed tokens the U-statistic measures the finite-context bias
# only to within tens of percent, and with more tokens the bias falls faster between 640 and 1280.

# %% [markdown]
# ### The leading term, derived by the delta method
#
# Why the bias decays so slowly at the book's scale, and what its exponent is, follows from a
# second-order expansion **[derived]** (`attnlib.prompts`, module docstring). In whitened
# coordinates a query $w$ tilts the context by $u = V^\top w$, and the attention output is a ratio of
# two sample means over the $m$ keys. The delta method gives, to order $1/m$,
# $\mathbb E\,\bar h = u\,(1 - e^{\lVert u\rVert^2}/m)$ (a shrinkage toward 0) and
# $\operatorname{Cov}\bar h = e^{\lVert u\rVert^2}(I + uu^\top)/m$; the cell checks these moments
# with sympy (`attnlib.symbolic.ratio_estimator_moments`). Averaged over the Gaussian query, the
# weight $e^{w^\top VV^\top w}$ turns $\mathcal N(0, I)$ into $\mathcal N(0, C)$,
# $C = (I - 2VV^\top)^{-1}$, times $\det(I - 2VV^\top)^{-1/2}$:
#
# $$
# L_m(U, V) = \tfrac12\lVert UV^\top - X^\star\rVert_F^2 + \frac{G(U, V)}{m} + o(1/m),
# $$ (eq-ch06-5)
#
# $$
# \begin{aligned}
# G = \det(I - 2K)^{-1/2}\Big[&\operatorname{tr}(C X^{\star\top} P) - \tfrac12\operatorname{tr}(C P^\top P)\\
# &+ \tfrac12\lVert U\rVert_F^2\Big],
# \end{aligned}
# $$ (eq-ch06-6)
#
# $K = VV^\top$, $P = UV^\top$ (`attnlib.prompts.context_correction`). Consequences:
#
# * $G$ is finite only if $\lVert V\rVert_2^2 < 1/2$; on $S$, $\lVert V\rVert_2^2 = \gamma_1$, the
#   largest singular value of $X^\star$. The next term of the expansion involves
#   $\mathbb E\, e^{2\lVert u\rVert^2}$, finite only for $\gamma_1 < 1/4$.
# * If $G$ is finite, the minimizer of $L + R + G/m$ moves off $S$ by $O(1/m)$, so the excess risk
#   is $c_2/m^2$ for large $m$: **the asymptotic exponent is $-2$** (no logarithms at this order),
#   with $c_2$ from linear response (`attnlib.prompts.asymptotic_bias_coefficient`).
# * How large $m$ must be depends on the tail weight $\det(I - 2K)^{-1/2}$: the first-order
#   prediction (the minimizer of $L + R + G/m$, `attnlib.prompts.first_order_minimizer`) reaches
#   its asymptote only once its displacement is small.

# %%
for identity in symbolic.ratio_estimator_moments():
    print(f"{identity.name}: {'holds' if identity.holds() else 'FAILS'}")
print("finite-context loss on S, n (L_n - L) (Monte Carlo, fresh context of n tokens) "
      "against the delta-method coefficient G:")
for k, scale in enumerate(bias_scales):
    u_star, v_star = geometry.minimizer_manifold(np.eye(d), xstar_of[k]).U_star, \
        geometry.minimizer_manifold(np.eye(d), xstar_of[k]).V_star
    g_value = prompts.context_correction(u_star, v_star, xstar_of[k])[0]
    row = []
    for j, n in enumerate(n_bias):
        values = bias_run["deployed_start"][k, j]
        if np.isfinite(values).any():
            errors = bias_run["deployed_start_se"][k, j]
            done = np.isfinite(values)
            row.append(f"n={n}: {n * values[done].mean():.2f} +- "
                       f"{n * np.sqrt(np.sum(errors[done] ** 2)) / done.sum():.2f}")
    print(f"  M x {scale:g}: G = {g_value:.3g}; " + "; ".join(row))
    m_big = np.array([1e3, 1e4, 1e5, 1e6])
    ratios = prompts.first_order_curve(xstar_of[k], m_big) * m_big ** 2
    print(f"      first-order minimizer, m^2 x excess at m = 1e3 / 1e4 / 1e5 / 1e6: "
          + " / ".join(f"{r:.4g}" for r in ratios)
          + f"; linear response c2 = {prompts.asymptotic_bias_coefficient(xstar_of[k]):.4g}")

# %% [markdown]
# The moments hold exactly. The expansion itself converges slowly at the book's scale:
# $n(L_n - L)$ on $S$ creeps from 2.54 at $n = 10$ to $8.64 \pm 0.30$ at $n = 640$ and
# $11.76 \pm 0.62$ at $n = 5000$, against $G = 20.2$. The reason is the heavy tail of
# $e^{\lVert u\rVert^2}$: with $\gamma_1 = 0.358 > 1/4$ the next term of the expansion is infinite,
# so the correction to $G/m$ decays only like a small power of $m$. At $M/2$
# ($\gamma_1 = 0.179 < 1/4$) it reaches 1.35 at $n = 160$ against $G = 1.54$. The first-order minimizer
# reaches its asymptote $c_2/m^2$ only for $m$ of order $10^5$ at the book's scale
# ($m^2\times$excess 2325 at $m = 10^3$, 9024 at $10^4$, against $c_2 = 1.392\times10^4$), but by
# $m \approx 10^4$ at $M/2$ (58.25 against 59.06).
#
# **The answer to "is the exponent $-2$ or $-1$?"** Derived heuristically **[derived, heuristic:
# a first-order expansion without a bound on its remainder]**: $-2$ (a $1/m$ displacement of the
# minimizer, hence $c_2/n^2$, with no logarithm at leading order) whenever $\gamma_1 < 1/2$, which
# holds at both scales here. Measured: the local slope is $-1$ at small $n$ ($n \lesssim 40$) and steepens to $-1.5$ by
# $n \approx 450$; with about 4000 tokens per replicate it returns to about $-0.9$ between
# $n = 640$ and 5000 (fitted: $-0.91$, 95% interval $[-1.08, -0.74]$), but with four times the
# tokens the slope from 640 to 1280 is $-1.73 \pm 0.27$ instead of $-0.93 \pm 0.51$. At the
# largest $n$ the measurement mixes the finite-context bias with an effect of the sample size
# that is as large, so it does not determine the asymptotic exponent: the value $-2$ rests on the
# derivation, the measurement shows the exponent is steeper than $-1$ from about $n = 100$ to 640,
# and separating the two effects beyond $n = 1000$ needs token budgets that grow with $n$ (not
# run within this book's budget).
# At larger $\lVert M\rVert$ ($\gamma_1 \ge 1/2$) $G$ is infinite and this derivation
# says nothing.

# %%
from attnbook.verdicts import verdict_table
k0, half_scale = 0, 1
large = [j for j in range(n_bias.size) if (k0, j) in estimates and n_bias[j] >= 640
         and np.isfinite(estimates[k0, j].stderr)]
n_large = n_bias[large].astype(float)
large_fit = fitting.fit_power_law_weighted(
    n_large, np.array([estimates[k0, j].bias for j in large]),
    np.array([estimates[k0, j].stderr for j in large]))
bound_slope = -2 + 6 / np.log(np.sqrt(n_large[0] * n_large[-1]))
span = f"n = {n_large[0]:.0f}..{n_large[-1]:.0f}"
print(f"M x 1, weighted fit over {span} ({large_fit.n_points} points with jackknife errors): "
      f"exponent {large_fit.exponent:+.2f}, 95% interval [{large_fit.ci[0]:+.2f}, "
      f"{large_fit.ci[1]:+.2f}]; the bound n^-2 log^6 n has slope {bound_slope:+.2f} there")
more_tokens = {int(n): prompts.bias_statistic(tokens_run["delta"][i])
               for i, n in enumerate(tokens_run["n_values"])}
slope_pairs = {}
for tag, pair in (("book's tokens", (estimates[k0, list(n_bias).index(640)],
                                     estimates[k0, list(n_bias).index(1280)])),
                  ("4x the tokens", (more_tokens[640], more_tokens[1280]))):
    _, slope_t, err_t = prompts.local_slopes(np.array([640.0, 1280.0]),
                                                 np.array([e.bias for e in pair]),
                                                 np.array([e.stderr for e in pair]))
    slope_pairs[tag] = (float(slope_t[0]), float(err_t[0]))
    print(f"local slope 640 -> 1280 with {tag}: {slope_t[0]:+.2f} +- {1.96 * err_t[0]:.2f}")
bound_verdict, one_over_n = judge.prompts_bias(large_fit.ci, large_fit.exponent, bound_slope,
                                              span, *slope_pairs.values())
delta_labels = [j for j in range(n_bias.size) if (half_scale, j) in estimates and n_bias[j] >= 40]
bias_rows = [
    ("[summary]", bound_verdict),
    ("[abstract]", one_over_n),
    ("[derived]", judge.delta_method(
        [abs(np.log(estimates[half_scale, j].bias / first_order[half_scale, j])) for j in delta_labels],
        [f"n={n_bias[j]}" for j in delta_labels])),
]
verdict_table(bias_rows)

# %% [markdown]
# Both source rates are "not testable" at the largest $n$, for the reason the cell prints: the
# slope from 640 to 1280 changes by 2.7 standard errors when the tokens per replicate are
# quadrupled, so the fitted exponent over $n = 640$ to 5000 ($-0.91$) describes the book's token
# budget, not the context length alone. Over the range the measurement does resolve ($n = 100$ to
# 640, about 4000 tokens) the bias falls faster than both the summaries' bound ($n^{-2}\log^6 n$, local
# slopes $-0.73$ to $-1.02$ there) and the later abstract's $1/n$. The delta method's first-order
# prediction is right in its trend at $M/2$ but off by a factor of 1.7 to 1.9 in value, "partly"; at
# the book's scale it is off several-fold (not tested as a verdict: there the expansion is known not
# to converge, $\gamma_1 > 1/4$).

# %% [markdown]
# ### Bias, variance and optimization: the decomposition
#
# Theorem 2 adds a statistical term and an optimization term **[summary]**. In the prompts reading the
# statistical term splits in two: the finite-context **bias** (above: it depends on $n$, not on the
# number of prompts) and, with noise, the **variance** of the fit, which falls with the total
# number of tokens $Nn$. The stored run `paper1_prompts_variance` fixes $n = 40$ and $\sigma = 0.1$
# and varies $N$ (three replicates, no whitening). If the two terms simply added, the excess risk
# of the certified minimizer would be the bias at $n = 40$ plus a variance term that falls like
# $1/(Nn)$, of the size of the OLS variance $p\sigma^2 d/(2(Nn - d - 1))$. The optimization term is chapter 5's
# prompts run: Algorithm 1's optimization gap against the iteration $m$ ($n = 500$, $N = 8$).

# %%
variance_run, replay_variance, check = experiments.replay(
    "paper1_prompts_variance", align=experiments.leading_block, rtol=1e-6,
    absolute=paper1_prompts.DELTA_ROUND_OFF, keys=("excess_risk", "delta"))
print(f"replayed N = {int(replay_variance['prompts'][0])}, replicate 0 live.\n{check}")
n_var = paper1_prompts.VARIANCE_SETTINGS.n
bias_40 = estimates[0, list(n_bias).index(n_var)]
counts = variance_run["prompts"]
excess_var = variance_run["excess_risk"]                     # (N values, replicates)
extra = excess_var.mean(axis=1) - bias_40.bias
for c, e, x in zip(counts, excess_var, extra):
    print(f"N = {c:4d} ({c * n_var:6d} tokens): excess risk {e.mean():.3e} (replicates "
          f"{e.min():.2e}..{e.max():.2e}); minus the bias at n = {n_var}: {x:.2e}; "
          f"OLS variance on N n tokens p s^2 d/(2(Nn-d-1)) = "
          f"{population.ols_excess_risk(int(c * n_var), d, p, paper1_prompts.VARIANCE_SETTINGS.noise_std):.2e}")
prompt_exp = experiments.load("paper1_prompts_experiment")
gap_m = prompt_exp["objective"][0, 0, :, 0] - float(prompt_exp["basin_value"][0, 0])   # sigma = 0.1, seed 0
its_m = prompt_exp["iteration"]
fit_m = fitting.fit_geometric_rate(its_m, gap_m, start=int(its_m[-1]) // 2)
print(f"Algorithm 1 (n = 500, N = 8, sigma = 0.1): gap {gap_m[0]:.2e} -> {gap_m[-1]:.2e} over "
      f"{its_m[-1]} iterations; rate of the second half mu = {fit_m.rate:.5f}")

# %% mystnb={"figure": {"caption": "Bias, variance and optimization in the prompts reconstruction: bias against $n$ at $\\sigma = 0$, excess risk against the number of prompts $N$ at $n = 40$ and $\\sigma = 0.1$, and Algorithm 1's optimization gap against the iteration $m$.", "name": "fig-ch06-prompts-decomposition"}, "image": {"alt": "Three log-log panels: a falling bias curve; an excess risk that rises slightly with N around the bias line; a slowly falling optimization gap."}} tags=["hide-input"]
fig, axes = figure(3, 1, height=9.0)
k_bias = [j for j in range(n_bias.size) if (0, j) in estimates]
axes[0].errorbar(n_bias[k_bias], [estimates[0, j].bias for j in k_bias],
                 yerr=[np.nan_to_num(estimates[0, j].stderr) for j in k_bias], fmt="o-",
                 color=OKABE_ITO["blue"], ms=4, capsize=2)
axes[0].set(xscale="log", yscale="log", xlabel="context length $n$",
            ylabel="excess risk", title="bias: $n$ ($\\sigma = 0$, whitened)")
axes[1].plot(counts, excess_var, ".", color=OKABE_ITO["bluish green"], alpha=0.5)
axes[1].plot(counts, excess_var.mean(axis=1), "o-", color=OKABE_ITO["bluish green"], ms=4, label="minimizer")
axes[1].axhline(bias_40.bias, color=OKABE_ITO["blue"], ls="--", lw=1, label=f"bias at $n = {n_var}$")
ols_var = np.array([population.ols_excess_risk(int(c * n_var), d, p, paper1_prompts.VARIANCE_SETTINGS.noise_std)
                    for c in counts])
axes[1].plot(counts, bias_40.bias + ols_var, "k:", lw=1, label="bias + OLS variance on $Nn$ tokens")
axes[1].set(xscale="log", yscale="log", xlabel="number of prompts $N$",
            title=f"variance: $N$ ($n = {n_var}$, $\\sigma = {paper1_prompts.VARIANCE_SETTINGS.noise_std:g}$)")
axes[1].legend()
axes[1].xaxis.set_minor_formatter(plt.NullFormatter())
axes[2].plot(its_m + 1, gap_m, color=METHOD_COLOURS["algorithm1"])
axes[2].set(xscale="log", yscale="log", xlabel="iteration $m$ + 1",
            title="optimization: $m$ ($n = 500$, $N = 8$)",
            ylabel=r"gap $\hat Q(\theta_m) - \hat Q^\star$")
plt.show()

# %% [markdown]
# {numref}`fig-ch06-prompts-decomposition` shows the result. The variance panel does not show a variance term. At $n = 40$, $\sigma = 0.1$ the excess risk of the
# minimizer is $1.546\times10^{-2}$, $1.645\times10^{-2}$ and $1.892\times10^{-2}$ for $N = 25$, 100 and
# 400 prompts: it *rises* towards and past the $\sigma = 0$ bias at $n = 40$ ($1.711\times10^{-2}$,
# measured with 4000 tokens per replicate), and its changes ($-1.65\times10^{-3}$ to
# $+1.81\times10^{-3}$) are larger than the OLS variance on the same number of tokens
# ($1.01\times10^{-3}$ down to $6.25\times10^{-5}$). So at this context length the statistical error is
# the finite-context bias, and the sample size changes the bias itself by about 10%: fewer tokens
# give a minimizer closer to $S$. The bias estimates above were all made with about 4000 tokens per
# replicate, so they carry the same kind of sample-size effect; if it varies with $n$, it tilts the
# slopes (not measured: that would need several token budgets per $n$). The optimization panel is
# chapter 5's prompts run: Algorithm 1's gap falls from $6.55\times10^{-3}$ to $3.59\times10^{-3}$ in
# 2000 iterations, a second-half rate of $\mu = 0.99984$: the $\mu^m$ term of Theorem 2 is slow
# here for the reason of the slow-directions section above.

# %% [markdown]
# ### Renormalization and a scale-invariant regularizer at finite context
#
# The later version of paper 1 adds a renormalization step **[abstract]**; the book's stand-in
# rescales $(A, B) \to (cA, B/c)$ after a step so that
# $\lVert\hat\Sigma^{1/2}B\hat\Sigma^{1/2}\rVert_F = \lVert V\rVert_F \le \tau$, with $\tau$ the
# balanced scale $\sqrt{\operatorname{tr}\hat\Gamma}$, the value of $\lVert V\rVert_F$ on $\hat S$
# **[choice]** (`attnlib.algorithm.renormalize`). In the infinite-context limit that rescaling
# changes nothing the loss sees. With a finite context it does: $V$ sets the softmax logits
# $x^\top B x'$, and a context of $n$ tokens penalizes large logits (the delta method above: the
# correction $G/m$ grows like $e^{\lVert u\rVert^2}$). So two questions for the prompts setting:
# does bounding $\lVert B\rVert$ change where training goes, and does the form of the balancing
# regularizer matter? The form tested besides $R = \tfrac{\lambda}{8}\lVert U^\top U - V^\top V\rVert_F^2$
# is the scale-invariant $R_N = R / (\lVert U\rVert_F^2 + \lVert V\rVert_F^2)$ **[choice]**
# (`attnlib.population.factor_regularizer_and_grad(..., normalized=True)`): $R$ grows like the
# fourth power of the parameters' scale, $R_N$ like the square, as the data term does, and both
# vanish exactly on the balanced set, so the infinite-context minimizers are the same.
#
# Two stored runs. `paper1_prompts_regularizer_forms`: the certified minimizer of the
# prompt-averaged loss with $R$, with $R_N$ and with no regularizer, on the same whitened prompts
# at $\sigma = 0$ ($M \times 1$ and $M \times 2$, $n$ = 40 and 160, two replicates): its
# infinite-context excess risk, its deployed risk, the scale of its logits $\lVert V\rVert_F/\tau$
# and its imbalance $\lVert U^\top U - V^\top V\rVert_F/\lVert X^\star\rVert_F$.
# `paper1_prompts_renormalization`: chapter 5's prompts data ($N = 8$, $n = 500$, $\sigma = 0.1$)
# at $M \times 1$ and $M \times 2$, trained for 2000 iterations from the spectral start by
# Algorithm 1, by Algorithm 1 with renormalization and by Algorithm 1 with $R_N$.

# %%
form_keys = ["excess_risk", "delta", "logit_scale", "imbalance", "deployed_minimizer"]
forms, replay_forms, check = experiments.replay(   # python -m attnbook.experiments paper1_prompts_regularizer_forms
    "paper1_prompts_regularizer_forms", align=experiments.cell(0, 0, 0, 0), keys=form_keys, rtol=1e-6,
    absolute=paper1_prompts.DELTA_ROUND_OFF)
print(f"replayed the first cell live.\n{check}")
print("scale    n  regularizer  excess risk (2 reps)   deployed risk   ||V||_F/tau   imbalance")
for k, scale in enumerate(paper1_prompts.FORMS_SETTINGS.scales):
    for i, n in enumerate(paper1_prompts.FORMS_SETTINGS.n_values):
        for v, variant in enumerate(paper1_prompts.FORMS_SETTINGS.variants):
            cell = {key: forms[key][k, i, v] for key in form_keys}
            print(f"{scale:5g} {n:4d}  {variant:11s}  {cell['excess_risk'][0]:.3e} "
                  f"{cell['excess_risk'][1]:.3e}   {cell['deployed_minimizer'].mean():.4f}"
                  f"          {cell['logit_scale'].mean():.3f}        {cell['imbalance'].mean():.3f}")
form_change = {(k, i): np.abs(forms["excess_risk"][k, i, 1] / forms["excess_risk"][k, i, 0] - 1)
               for k in range(len(paper1_prompts.FORMS_SETTINGS.scales))
               for i in range(len(paper1_prompts.FORMS_SETTINGS.n_values))}
print("largest relative change of the excess risk, R_N against R (same prompts): "
      f"{max(v.max() for v in form_change.values()):.1%}")
print(f"logit scale ||V||_F / tau at the minimizers, all cells: "
      f"{np.nanmin(forms['logit_scale']):.3f} to {np.nanmax(forms['logit_scale']):.3f}")

# %% [markdown]
# Bounding $\lVert B\rVert$ from above does nothing at these minimizers: every one of them has
# $\lVert V\rVert_F/\tau$ between 0.502 and 0.931, *below* the balanced scale. A finite context
# pulls the logits down, not up (the delta method's $e^{\lVert u\rVert^2}/m$ penalty), so a bound
# $\lVert V\rVert_F \le \tau$ at or above the balanced scale is never active at a minimizer. The
# regularizer is what holds the logits up: without it the minimizer moves far off the balanced set
# (imbalance 1.317 at $n = 160$ for the book's $M$, 3.218 for $M \times 2$), shrinks $V$ (to $0.70\tau$
# and $0.50\tau$) and enlarges $U$ to keep $UV^\top$, and it has the *lower* infinite-context excess
# risk and the lower deployed risk in every cell at $n = 160$ (at $M \times 2$: $1.04\times10^{-2}$
# against $1.90\times10^{-2}$ with $R$, deployed 0.1216 against 0.1639). The scale-invariant form
# $R_N$ sits in between: it pins the balance less at larger scale (imbalance 0.383 against 0.072 at
# $M \times 2$, $n = 160$), and changes the excess risk by at most 15.4% against $R$ on the same
# prompts. At $n = 40$ the three agree within the spread of the two replicates. So at finite
# context the balancing regularizer costs accuracy, more at larger $\lVert M\rVert$, and neither a bound on
# $\lVert B\rVert$ nor its normalized form removes that cost **[choice: both forms are this book's]**.

# %%
renorm, replay_renorm, check = experiments.replay(   # python -m attnbook.experiments paper1_prompts_renormalization
    "paper1_prompts_renormalization", align=experiments.cell(0, 0), keys=("excess_risk", "logit_scale"),
    rtol=1e-9)
print(f"replayed iterations 0..{replay_renorm['iteration'][-1]} of the first cell live.\n{check}")
renorm_iter = renorm["iteration"]
print("scale  method         gap(0)     gap(2000)  ratio   max ||V||_F/tau  at optimum  "
      "excess risk: 2000 / optimum   deployed at 2000")
for k, scale in enumerate(paper1_prompts.RENORM_SETTINGS.scales):
    for v, variant in enumerate(paper1_prompts.RENORM_SETTINGS.variants):
        gap_v = renorm["gap"][k, v]
        print(f"{scale:5g}  {variant:13s} {gap_v[0]:.3e}  {gap_v[-1]:.3e}  {gap_v[-1] / gap_v[0]:.3f}"
              f"   {renorm['logit_scale'][k, v].max():.4f}           "
              f"{float(renorm['optimum_logit_scale'][k, v]):.3f}       "
              f"{renorm['excess_risk'][k, v][-1]:.3e} / {float(renorm['optimum_excess'][k, v]):.3e}"
              f"       {float(renorm['deployed'][k, v]):.4f} +- {float(renorm['deployed_se'][k, v]):.4f}")
same = np.abs(renorm["gap"][:, 1] - renorm["gap"][:, 0]).max()
print(f"largest difference of the gap curves, renormalized against Algorithm 1: {same:.1e}")

# %% mystnb={"figure": {"caption": "Chapter 5's prompts data ($N = 8$, $n = 500$, $\\sigma = 0.1$) at two scales of $M$: the optimization gap of Algorithm 1, of Algorithm 1 with renormalization to $\\lVert V\\rVert_F \\le \\tau$ and of Algorithm 1 with the normalized regularizer, each against the certified minimizer of its objective (top), and the scale of the logits $\\lVert V\\rVert_F/\\tau$ along the way (bottom).", "name": "fig-ch06-renormalization"}, "image": {"alt": "Two log-x panels against iteration: top, optimization gap on a log scale for three methods at two scales of M; bottom, the ratio of the norm of V to the bound tau, starting at 1 and falling for every run."}} tags=["hide-input"]
fig, axes = figure(2, 1, sharex=True, layout="constrained", height=6.4)
variant_style = {"algorithm1": (OKABE_ITO["blue"], "-"), "renormalized": (OKABE_ITO["orange"], "--"),
                 "normalized": (OKABE_ITO["bluish green"], ":")}
for k, scale in enumerate(paper1_prompts.RENORM_SETTINGS.scales):
    for v, variant in enumerate(paper1_prompts.RENORM_SETTINGS.variants):
        colour, style = variant_style[variant]
        label = f"{variant}, M x {scale:g}"
        kwargs = dict(color=colour, ls=style, lw=1.5 if k == 0 else 2.5,
                      alpha=1.0 if k == 0 else 0.6, label=label,
                      marker="o" if k == 0 else "s", markevery=0.2, ms=4)
        axes[0].plot(renorm_iter + 1, renorm["gap"][k, v], **kwargs)
        axes[1].plot(renorm_iter + 1, renorm["logit_scale"][k, v], **kwargs)
axes[0].set(xscale="log", yscale="log", ylabel="optimization gap")
axes[1].set(xscale="log", xlabel="iteration $k$ + 1", ylabel="$\\|V\\|_F / \\tau$")
axes[1].axhline(1.0, color="0.4", lw=0.8)
axes[0].legend(ncol=2)
plt.show()

# %% [markdown]
# {numref}`fig-ch06-renormalization` shows the result. Renormalization never acts in training either. The spectral start lies on $\hat S$, where
# $\lVert V\rVert_F = \tau$ exactly, and from there every run's logit scale only falls (the largest
# $\lVert V\rVert_F/\tau$ along each run is 1.0000, at iteration 0), so the bound is never reached:
# Algorithm 1 with and without renormalization produce the same iterates (largest difference of
# their gap curves 0.0) and the same deployed risk (0.0151 and 0.0906 at the two scales, each
# $\pm$ its Monte Carlo error; the fresh contexts are the same for every variant). The normalized
# regularizer changes the objective, and with it the target: at $M \times 2$ its certified minimizer
# has excess risk $9.72\times10^{-3}$ against $1.218\times10^{-2}$ with $R$, its logits are smaller
# ($0.882\tau$ against $0.954\tau$) and after 2000 iterations its deployed risk is 0.0803 against
# 0.0906 (at the book's $M$: $1.538\times10^{-3}$ against $1.688\times10^{-3}$, deployed 0.0147 against
# 0.0151, within two standard errors). It does not converge faster in kind: its gap ratio after 2000
# iterations is 0.528 and 0.326 against 0.548 and 0.372, the slow orbit directions of the
# slow-directions section being untouched by the form of the regularizer.
#
# What this says about the later version's renormalization step **[abstract]**: in this
# reconstruction, started from the spectral initialization, a cap on $\lVert B\rVert$ at the balanced
# scale is inert, because a finite context wants smaller logits than the balanced point has. A cap
# *below* the balanced scale would move $\hat S$ itself (`attnlib.algorithm.train` refuses one); it is not
# tested here. The step the later version actually uses, and its bound, are not in the sources.

# %% [markdown]
# ## Sources and measurements side by side
#
# Every verdict below is decided by `attnbook.claims.ch06` from the numbers printed here and in the
# chapter, with the threshold in its reason (thresholds are this book's **[choice]**): "decreases
# as $1/n$" is a fitted exponent within 0.1 of $-1$ (partly within 0.35); "matches the minimax
# rate" is Algorithm 1's exponent within 0.1 of the OLS fit's over $n \ge 200$, with the constant
# (Algorithm 1 over the OLS formula) reported beside it, not judged; "measured $\mu$ = predicted" is
# agreement to $10^{-3}$, also for the embedding dimension $d = 5, 10, 20$ at fixed
# $\kappa(X^\star)$. Two rows need a measurement of their own, made by the next two cells.
#
# **The rate against $d$: where to fit it.** The chapter fits each run where its excess risk lies
# between $10^{-18}$ and $10^{-6}$, a window that opens only a few decades below the start. The
# claim is about the asymptotic rate, the slowest mode's, and the modes next to it die out slowly:
# near $S$ each Hessian mode $h$ contributes $c_h(1 - \eta h)^{2m}$ to the excess risk, so the
# nearest mode ($h = s_{d-1}$) against the slowest ($h = s_d$) shrinks like
#
# $$
# \frac{c_{s_{d-1}}}{c_{s_d}}\left(\frac{1 - \eta s_{d-1}}{1 - \eta s_d}\right)^{2m},
# \qquad \frac{s_{d-1}}{s_d} = \kappa(X^\star)^{1/(d-1)} ,
# $$ (eq-ch06-nearest-mode)
#
# and the ratio in brackets approaches 1 as $d$ grows. So the window
# must come late, and at the same place for every $d$. The rule **[choice]**, fixed before its
# results were computed: fit where the excess risk lies between $10^{-16}$ and $10^{-10}$ of its
# value at the start, ten decades of decay before the window and six inside it, all above the runs'
# stop at $10^{-20}$ (`attnbook.claims.ch06.window_rate`). The first cell prints both fits, and the
# verdict table both outcomes.
#
# **Theorem 2 at finite $n$: two readings.** The summaries state the optimization term as $\mu^m$
# with $\mu < 1$ **[summary]**, with no number of iterations. That reading is measured at $n = 500$
# on chapter 5's stored runs (three seeds): the rate fitted to Algorithm 1's optimization gap over
# iterations 1000 to 2000, and the local rate $(1 - \eta h_{\min})^2$ at the minimizer of its
# basin, below 1 because the Hessian there is positive definite ($h_{\min} > 0$). The book's
# stricter reading **[choice]** asks for speed: a factor $10^3$ of the slowest mode within the
# experiment's 2000 iterations. That row shares its cause with three rows of chapter 5: the weakly
# pinned $O(d)$ orbit of the finite-sample objective (chapter 5, "Where the headline holds").
# Chapter 5 reruns the paper's experiment at $n = 500$; this chapter's stored runs cover the scaling
# in $n$ and $m$ around it. The finite-context bias of the second reconstruction (many prompts) has
# its own verdicts in the previous section.

# %%
# the rate against d: the chapter's runs (live), fitted in both windows
window_mu = np.array([judge.window_rate(curve) for curve in dimension["excess_risk"]])
earlier = judge.dimension_free_rate(dimension["d"], dimension["mu_measured"],
                                    dimension["mu_predicted"], earlier_window=True)
print(" d  excess risk  |mu - predicted|, earlier   |mu - predicted|,  nearest mode:")
print("    at start     window (1e-18..1e-6)         rule's window      iterations per e")
for d_run, curve, mu_old, mu_new, mu_p in zip(dimension["d"], dimension["excess_risk"],
                                              dimension["mu_measured"], window_mu,
                                              dimension["mu_predicted"]):
    s_run = np.geomspace(1.0, 1.0 / config["kappa_x_fixed"], d_run)
    eta_run = (1 - np.sqrt(mu_p)) / s_run[-1]              # mu predicted = (1 - eta s_d)^2
    lag = -1 / np.log(((1 - eta_run * s_run[-2]) / (1 - eta_run * s_run[-1])) ** 2)
    print(f"{d_run:2d}  {curve[0]:.2e}     {abs(mu_old - mu_p):.1e}"
          f"                      {abs(mu_new - mu_p):.1e}            {lag:.0f}")

# %%
from attnlib import algorithm

defaults = experiments.load("paper1_defaults")       # chapter 5's runs: n = 500, three seeds
alg1 = list(algorithm.METHODS).index("algorithm1")
gap_500 = defaults["objective"][..., alg1] - defaults["basin_value"][:, None]   # to the basin
fitted_500, local_500 = {}, {}
print("n = 500  h_min     mu fitted to the gap  (1 - eta h_min)^2  excess risk at")
print("                   (k = 1000..2000)                         k = 0 / 2000")
for i, s in enumerate(int(s) for s in defaults["seeds"]):
    fitted_500[s] = fitting.fit_geometric_rate(defaults["iteration"], gap_500[i], start=1000).rate
    local_500[s] = fitting.spectrum_gap_rate(float(defaults["step"][i, alg1]),
                                             defaults["basin_hessian"][i])
    excess = defaults["excess_risk"][i, :, alg1]
    print(f"seed {s}   {defaults['basin_hessian'][i, 0]:.2e}  {fitted_500[s]:.6f}"
          f"              {local_500[s]:.6f}           {excess[0]:.2e} / {excess[-1]:.2e}")

# %%
from attnbook.verdicts import verdict_table
late = closed_n >= ch06.LATE_N
slope_late = {sigma: fitting.fit_power_law(closed_n[late], closed[i][late]).exponent
              for i, sigma in enumerate(noise_levels)}
bound_slope = -2 + 6 / np.log(closed_n[-1])
rate_n = n_values >= 200             # the range where the constant is read off, too
rate_fits = {name: fitting.fit_power_law(n_values[rate_n], values[0][rate_n]).exponent
             for name, values in (("alg1", final), ("ols", ols_fit))}
rows = [
    ("[summary]", judge.statistical_term(slope_late[0.0], bound_slope, int(closed_n[-1]))),
    ("[abstract]", judge.error_one_over_n(slope_late, {s: fits[s, "alg1"].exponent
                                                        for s in noise_levels})),
    ("[abstract]", judge.minimax_rate(rate_fits["alg1"], rate_fits["ols"],
                                      float(np.median(alg1_over_ols[rate_n])))),
    ("[summary]", judge.geometric_rate(np.abs(measured[pre] - predicted[pre]),
                                    [f"kX={a:g}, kS={b:g}" for a, b in zip(kx[pre], ks[pre])])),
    ("[summary]", judge.geometric_finite_n(fitted_500, local_500)),
    ("[choice]", judge.geometric_finite_n_fast(iterations_1e3[list(n_curv).index(500)],
                                               range(iterations_1e3.shape[1]))),
    ("[summary]", judge.dimension_free_rate(dimension["d"], window_mu, dimension["mu_predicted"]),
     [earlier]),
    ("[derived]", judge.kappa_free_rate(np.ptp(measured[pre & (kx == config["kappa_x_fixed"])]))),
]
verdict_table(rows)

# %% [markdown]
# Read against the rule: in the late window the measured rate agrees with the $d$-free prediction
# at every $d$, to $6.1\times10^{-9}$, $5.6\times10^{-5}$ and $8.0\times10^{-4}$ for $d = 5, 10, 20$;
# in the earlier window $d = 20$ missed by $1.7\times10^{-3}$. The deviation still grows with $d$,
# as the nearest mode predicts: relative to the slowest it loses a factor $e$ every 22 iterations
# at $d = 5$ and every 134 at $d = 20$, so at $d = 20$ even the late window holds some of it. The
# asymptotic rate does not depend on $d$; how long the run takes to show it does.
#
# At $n = 500$ the summaries' reading holds on every seed: the gap falls geometrically, at a fitted
# 0.99971 to 0.99974 per iteration, and the Hessian at each basin minimizer is positive definite
# ($h_{\min} = 5.0\times10^{-4}$ to $8.1\times10^{-4}$), so the local rate is below 1. That rate is
# slow, and the stricter reading fails: the slowest mode needs $6.4\times10^4$ to $9.5\times10^4$
# iterations for a factor $10^3$. Theorem 2's own quantity, the excess risk, sits at its statistical
# level from the spectral start on: over the 2000 iterations it moves from $6.66\times10^{-3}$ to
# $6.71\times10^{-3}$ (seed 0), and upward by 20% and 15% on the other two seeds.
