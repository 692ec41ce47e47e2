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
# # Checks for Chapter 5: Rerunning the experiment
#
# This page of the Reproduction report checks what {doc}`Chapter 5 <ch05_experiment>` measures against what the papers claim. Every verdict is computed by `attnlib.claims` from the numbers, with its threshold printed; the claims ledger collects them. The first cell reruns the code of Chapter 5 (its output is not shown), so the objects the chapter built are here.

# %% mystnb={"code_prompt_show": "The chapter's code, rerun: show {type}"} tags=["hide-input"]
from attnlib.report import rerun_chapter

cells = rerun_chapter("ch05_experiment", globals())
print(f"reran the {cells} code cells of Chapter 5")

# %% [markdown]
# ## The paper's experiment with many prompts
#
# Everything above uses the first reconstruction of the finite-data problem **[choice]**: one set
# of $n = 500$ samples is both the regression data and the attention context. The sources do not
# say which reading of $n$ the paper uses. This section reruns the experiment in the second
# reconstruction **[choice]** (chapter 6 measures its finite-context bias): $n = 500$ is the
# *context length*, and the loss is the leave-one-out loss averaged over $N = 8$ prompts of $n$
# tokens each, drawn from the same task (`attnlib.algorithm.prompts_loss`). The spectral start,
# the preconditioner, the regularizer and the step rule use the pooled moments of all
# $Nn = 4000$ samples; the five methods are unchanged (SGD's minibatches are 32 query rows, each
# attending over its own prompt). Besides the optimization gap and the infinite-context excess
# risk, the run records the **deployed** excess risk: the layer with a fresh context of $n = 500$
# tokens (Monte Carlo over 40 fresh prompts of 100 queries; `attnlib.prompts.deployed_risk`).
#
# ### Where the claims are testable: a map over $\lVert M\rVert$ and $\sigma$
#
# The summaries' "three orders of magnitude" compares the random start's loss with the spectral
# start's **[summary]**. Both depend on the scale of the task: the random start's loss grows with
# $\lVert X^\star\rVert^2$, the spectral start's is the noise floor $L^\star = p\sigma^2/2$ plus its
# own excess risk. The next cell evaluates claims (1) and (2) at the start over a grid of scales of
# $M$ (the book's $M$ times 0.25 to 2) and noise levels (live: no training is needed).

# %%
from attnlib.experiments import paper1_prompts

start_map = paper1_prompts.start_ratio_map(init_scales=INIT_SCALES)
map_l_star = start_map["L_star"][..., None]          # axes: scale of M, sigma, c
map_ratio = np.log10((start_map["random"] + map_l_star)
                     / (start_map["spectral"][..., None] + map_l_star))
map_cap = np.log10((start_map["random"] + map_l_star) / map_l_star)
map_close = start_map["spectral"] / start_map["L_star"]
print("log10 loss ratio random / spectral start, and in brackets its cap log10((random + L*)/L*)")
print("scale  sigma  (L(theta_0) - L*)/L*  " + "".join(f"   c = {c:<9.3g}" for c in INIT_SCALES))
for i, scale in enumerate(start_map["scales"]):
    for j, sigma in enumerate(start_map["noise_levels"]):
        print(f"{scale:5g}  {sigma:5g}  {map_close[i, j]:20.3g}  " + "".join(
            f"   {map_ratio[i, j, k]:5.2f} ({map_cap[i, j, k]:4.2f})" for k in range(len(INIT_SCALES))))
map_region = judge.observation1_region({
    f"(M x {scale:g}, sigma {sigma:g}, c {c:.3g})": (map_close[i, j], map_ratio[i, j, k])
    for i, scale in enumerate(start_map["scales"]) for j, sigma in enumerate(start_map["noise_levels"])
    for k, c in enumerate(INIT_SCALES)})
print(f"rule [choice]: (1) (L(theta_0) - L*)/L* <= {judge.LOSS_TOLERANCE:g}; (2) log10 ratio >= "
      f"{judge.ORDERS:g} (partly from {judge.ORDERS_PARTLY:g})")
print(f"cells where (1) and (2) both hold ({len(map_region['both'])} of {map_ratio.size}): "
      + (", ".join(map_region["both"]) or "none"))
print(f"cells where (1) holds and (2) partly ({len(map_region['partly'])}): "
      + (", ".join(map_region["partly"]) or "none"))

# %% mystnb={"figure": {"caption": "Claims (1) and (2) at the start over the scale of $M$, the noise level $\\sigma$ and the random start's scale $c$: the spectral start's excess risk relative to $L^\\star$ (top left) and the $\\log_{10}$ loss ratio of the random to the spectral start for each $c$ (white contours at 1.5 and 2.5). Claim (1) holds to the right of the dashed line in every panel.", "name": "fig-ch05-prompts-map"}, "image": {"alt": "Six heat maps over scale of M (rows) and noise level (columns): the spectral start's relative excess risk, then the loss ratio for five random-start scales c; the ratio grows with c and with the scale of M and falls with the noise."}} tags=["hide-input"]
noise_ticks, scale_ticks = np.arange(len(start_map["noise_levels"])), np.arange(len(start_map["scales"]))
fig, axes = figure(2, 3, sharex=True, sharey=True, layout="constrained", height=5.6)
panels = [(np.log10(map_close), r"(1): $\log_{10}\,(L(\theta_0) - L^\star)/L^\star$", (), {})]
panels += [(map_ratio[..., k], f"(2): $c = {c:.3g}$", (1.5, 2.5),
            dict(vmin=map_ratio.min(), vmax=map_ratio.max())) for k, c in enumerate(INIT_SCALES)]
for ax, (values, title, levels, limits) in zip(axes.flat, panels):
    mesh = ax.pcolormesh(noise_ticks, scale_ticks, values, shading="nearest", cmap="viridis", **limits)
    if levels:
        ax.contour(noise_ticks, scale_ticks, values, levels=levels, colors="w", linewidths=1.2)
    ax.contour(noise_ticks, scale_ticks, np.log10(map_close), levels=(-1.0,), colors=OKABE_ITO["vermillion"],
               linewidths=1.2, linestyles="--")   # claim (1)'s threshold: it holds to the right
    ax.set(xticks=noise_ticks, xticklabels=[f"{s:g}" for s in start_map["noise_levels"]],
           yticks=scale_ticks, yticklabels=[f"{s:g}" for s in start_map["scales"]], title=title)
    ax.grid(False)
    if title.startswith("(1)"):
        fig.colorbar(mesh, ax=ax)
fig.colorbar(mesh, ax=axes[:, 1:], label=r"$\log_{10}$ loss ratio, random / spectral start")
fig.supxlabel(r"noise level $\sigma$")
fig.supylabel(r"scale of $M$")
plt.show()

# %% [markdown]
# At the book's random start ($c = 0.3$, first column of ratios) the ratio reaches three orders of
# magnitude nowhere on this grid: the largest log10 ratio is 2.45 ($M \times 2$, $\sigma = 0.01$). The
# bracketed cap says why: the ratio can never exceed $(L(\theta_{\rm random}) - L^\star + L^\star)/L^\star$,
# and at the book's task and $c = 0.3$ that cap is $10^{0.52}$ at $\sigma = 0.1$ and $10^{1.43}$ at
# $\sigma = 0.03$: the noise floor, not the method, limits the ratio, and the spectral start is already
# at the cap there (log10 ratio 0.52 and 1.40). Lowering $\sigma$ raises the cap, but then the spectral
# start's own excess risk (pooled moments of $Nn = 4000$ samples) is no longer small against $L^\star$:
# claim (1) fails exactly where claim (2) becomes reachable ($(L(\theta_0) - L^\star)/L^\star = 0.562$ at
# $\sigma = 0.01$ for the book's $M$, 2.23 for $M \times 2$). So at $c = 0.3$ claims (1) and (2) cannot both
# hold anywhere on this map; a larger $\lVert M\rVert$ helps (2) and hurts (1).
#
# The random start's scale $c$ is the map's third axis, and it changes that conclusion. The random
# start's excess risk grows like $c^4$, which lifts the cap, while claim (1) does not depend on $c$.
# By the printed rule (`attnlib.claims.ch05.observation1_region`), both parts hold in 25 of the 80
# cells: for the book's $M$ from $c = 2$ at $\sigma = 0.03$, from $c = \sqrt d$ (entries of unit variance)
# at $\sigma = 0.1$, and at $c = 5$ at $\sigma = 0.3$; at $c = 1$ only in one cell ($M \times 0.25$,
# $\sigma = 0.01$). In {numref}`fig-ch05-prompts-map` they are the cells to the right of the dashed line and to the left of the 2.5
# contour (where two white lines are drawn, the left one).
# Observation 1 is therefore a statement about a region of (scale of the task, noise level,
# initialization scale); the sources give neither the paper's noise level nor its initialization
# scale, so the book cannot say where in that region the paper's experiment sits.
#
# Defaults of the rerun **[choice]**: the book's $M$ at $\sigma = 0.1$, for a direct comparison with
# the one-set reconstruction above, and at $\sigma = 0.03$, the smallest noise level of the grid at
# which claim (1) still holds for the book's $M$ (0.0662) while the cap on claim (2) is more than an
# order of magnitude higher than at $\sigma = 0.1$. Claims (3) and (4) need full training runs: the
# five methods run at these two points (seed 0), and the subsection "Claims (1) to (4) over the whole
# map" below runs Algorithm 1 and SGD over a sub-grid of the map, so that no verdict rests on one chosen point.

# %%
prompt_exp, replay_prompts, check = experiments.replay(   # python -m attnlib.experiments paper1_prompts_experiment
    "paper1_prompts_experiment", keys=("objective", "loss", "excess_risk"),
    align=experiments.leading_block)                        # the first cell: first noise level, seed 0
print(f"replayed iterations 0..{replay_prompts['iteration'][-1]} of the sigma = "
      f"{prompt_exp['noise_levels'][0]:g} cell live (five methods).\n{check}")
pr_iter, pr_deploy = prompt_exp["iteration"], prompt_exp["deploy_iteration"]
pr_noise = prompt_exp["noise_levels"]
prompt_gaps = {}      # (noise index, method) -> gap curve (a lower bound for the lam = 0 methods)
for i, sigma in enumerate(pr_noise):
    get = lambda key: prompt_exp[key][i, 0]                  # seed 0, the stored run's only seed
    basin, best_loss = float(get("basin_value")), float(get("best_loss"))
    print(f"sigma = {sigma:g}: Q_hat* (spectral basin) = {basin:.6f} (gradient norm "
          f"{float(get('basin_grad_norm')):.1e}), its excess risk {float(get('basin_excess')):.3g}; "
          f"L* = {float(get('L_star')):.3g}")
    for j, method in enumerate(METHODS):
        lam_one = algorithm.METHODS[method].lam == 1.0
        gap_pr = (get("objective")[:, j] - basin) if lam_one else (get("loss")[:, j] - best_loss)
        prompt_gaps[i, method] = gap_pr
        print(f"  {LABELS[method]:23s} gap{'' if lam_one else ' (lower bound)'} at 0 / 2000: "
              f"{gap_pr[0]:.2e} / {gap_pr[-1]:.2e}; excess risk 0 / 2000: "
              f"{get('excess_risk')[0, j]:.3g} / {get('excess_risk')[-1, j]:.3g}; deployed "
              f"0 / 2000: {get('deployed')[0, j]:.3g} / {get('deployed')[-1, j]:.3g}")

# %% mystnb={"figure": {"caption": "The five methods with N = 8 prompts of n = 500 tokens at two noise levels: optimization gap (top; dashed: certified lower bound) and infinite-context excess risk with the deployed excess risk as dots (bottom).", "name": "fig-ch05-prompts-curves"}, "image": {"alt": "Log-log curves per method: Algorithm 1's gap stays within a factor of two of its start over 2000 iterations; the deployed risk sits about ten times above the excess risk."}} tags=["hide-input"]
fig, axes = figure(2, len(pr_noise), sharex=True, height=6.4)
for i, sigma in enumerate(pr_noise):
    for j, method in enumerate(METHODS):
        lam_one = algorithm.METHODS[method].lam == 1.0
        axes[0, i].plot(pr_iter + 1, np.maximum(prompt_gaps[i, method], 1e-12),
                        color=METHOD_COLOURS[method], label=LABELS[method],
                        ls="-" if lam_one else "--")
        axes[1, i].plot(pr_iter + 1, prompt_exp["excess_risk"][i, 0, :, j],
                        color=METHOD_COLOURS[method])
        axes[1, i].plot(pr_deploy + 1, prompt_exp["deployed"][i, 0, :, j], "o", ms=3,
                        color=METHOD_COLOURS[method])
    axes[0, i].set(title=f"prompts: $N = 8$, $n = 500$, $\\sigma = {sigma:g}$",
                   ylabel="optimization gap (dashed: lower bound)")
    axes[1, i].set(xlabel="iteration $k$ + 1",
                   ylabel="excess risk (line), deployed (dots)")
    for ax in axes[:, i]:
        ax.set(xscale="log", yscale="log")
axes[0, 0].legend(loc="lower left")
plt.show()

# %% [markdown]
# {numref}`fig-ch05-prompts-curves` shows the one-set picture again. Algorithm 1 starts next to its certified basin
# minimizer (gap $6.55\times10^{-3}$ at $\sigma = 0.1$) and ends 2000 iterations later at
# $3.59\times10^{-3}$: about half the gap is left, as with one sample set. With $N = 8$ prompts the
# orbit of $S$ is still only weakly pinned by the $Nn = 4000$ sampled tokens, so the slow
# directions of chapter 6 remain. The random-start methods fall from a gap of about 0.23 to
# $1.3$ to $3.6\times10^{-3}$ (for GD, SGD and Adam a certified lower bound: the gap to the lowest
# $\hat L$ seen; Adam's own final value is that lowest value, so its bound is 0).
#
# What the prompts reading adds is the deployed risk. The infinite-context excess risk of every
# method ends between $1.15\times10^{-3}$ and $2.45\times10^{-3}$, but the deployed excess risk with a
# fresh context of $n = 500$ tokens is about ten times larger, 0.0119 to 0.0147: at this context length
# the finite-context error, not the fit, dominates what a user gets. Training *lowers* the deployed
# risk from the spectral start (0.0173 to 0.0146 for Algorithm 1 at $\sigma = 0.1$) while it *raises*
# the infinite-context excess risk (0.00087 to 0.00195): the trained objective is the finite-context
# loss, and its minimizer trades the one for the other (chapter 6 measures that shift as the
# finite-context bias). The methods without the regularizer end with the lowest deployed risk
# (0.0119 to 0.0136).

# %%
prompt_claims = {i: judge.map_claims(paper1_prompts.claim_values(prompt_exp, i, 0),
                                     int(pr_iter[-1]))
                 for i in range(len(pr_noise))}
columns = [("one sample set, sigma = 0.1, seeds 0-2", claims)] + [
    (f"prompts N = 8, sigma = {sigma:g}, seed 0", prompt_claims[i])
    for i, sigma in enumerate(pr_noise)]
for key, label in (("start", "(1)"), ("orders", "(2)"), ("alg1", "(3)"), ("sgd", "(4)")):
    print(f"{label} {columns[1][1][key].claim}")
    for name, table in columns:
        print(f"      {name:40s} {table[key].status:18s} ({table[key].reason})")

# %% [markdown]
# What changes between the two reconstructions, and why:
#
# * **(1)** holds in both. The prompts run pools $Nn = 4000$ samples for the spectral start instead
#   of 500, so its excess risk is smaller relative to $L^\star$ (0.0087 against 0.039 to 0.0666).
# * **(2)** fails in both, for the same reason: at the book's task the noise floor caps the loss
#   ratio (the map above); the prompts run at $\sigma = 0.03$ gets to a log10 ratio of 1.4, still
#   short of "partly" (1.5).
# * **(3)** fails in both: Algorithm 1 closes about half of its gap in 2000 iterations (0.548 and
#   0.499 left with prompts; 0.357 to 0.507 with one set). Averaging over 8 prompts does not remove
#   the weakly broken orbit directions; only the expected loss over infinitely many prompts is exactly
#   invariant along the orbit.
# * **(4)** holds in both: SGD is far from converged (in the prompts run certified by a lower bound
#   of the gap ratio, 0.0108 and 0.0102, without computing a minimum of $\hat L$).
#
# So the second reconstruction does not rescue the summaries' convergence claim; what it does make
# visible is the finite-context bias (chapter 6) and the gap between the infinite-context and the
# deployed risk.

# %% [markdown]
# ### Claims (1) to (4) over the whole map
#
# The two points above are not the only ones where the claims can be tested. The stored run
# `paper1_prompts_claims_map` trains Algorithm 1 and SGD for 2000 iterations at every cell of a
# $3 \times 3$ sub-grid of the map (scales 0.5, 1 and 2 of $M$; $\sigma$ = 0.01, 0.03 and 0.1;
# seed 0) and certifies each cell's basin minimizer, so that all four claims get a verdict at
# every cell, computed by the same function as the table above
# (`attnlib.claims.ch05.map_claims`). To fit the budget the cells use $N = 4$ prompts
# of $n = 500$ tokens instead of 8 **[choice]**; the next cell prints the quantity and the status of
# every claim at every cell.

# %%
claims_map, replay_map, check = experiments.replay(   # python -m attnlib.experiments paper1_prompts_claims_map
    "paper1_prompts_claims_map", keys=("objective", "loss", "excess_risk"),
    align=experiments.leading_block)                        # the first cell: first scale and noise level
print(f"replayed iterations 0..{replay_map['iteration'][-1]} of the first cell live.\n{check}")
map_scales, map_noise = claims_map["scales"], claims_map["noise_levels"]
CLAIM_KEYS = ("start", "orders", "alg1", "sgd")
map_values = {key: np.zeros((map_scales.size, map_noise.size)) for key in CLAIM_KEYS}
map_status = {key: np.empty((map_scales.size, map_noise.size), dtype=object) for key in CLAIM_KEYS}
for i in range(map_scales.size):
    for j in range(map_noise.size):
        cell = paper1_prompts.claims_map_cell(claims_map, i, j)
        values = paper1_prompts.claim_values(cell, 0, 0)
        cell_claims = judge.map_claims(values, int(cell["iteration"][-1]))
        for key in CLAIM_KEYS:
            map_values[key][i, j], map_status[key][i, j] = values[key], cell_claims[key].status
print("thresholds [choice]: (1) (L(theta_0) - L*)/L* <= 0.1; (2) log10 loss ratio >= 2.5 "
      f"(partly from 1.5); (3) Algorithm 1's gap ratio <= {CONVERGED:g}; (4) lower bound of "
      f"SGD's gap ratio > {CONVERGED:g}")
print("scale  sigma   (1) start ratio        (2) log10 ratio        (3) Alg. 1 gap ratio   "
      "(4) SGD gap ratio (lower bound)")
for i, scale in enumerate(map_scales):
    for j, sigma in enumerate(map_noise):
        print(f"{scale:5g}  {sigma:5g}   " + "   ".join(
            f"{map_values[key][i, j]:8.3g} {map_status[key][i, j].replace(' reproduced', '').replace(' here', ''):12s}"
            for key in CLAIM_KEYS))
for key, name in zip(CLAIM_KEYS, ("(1)", "(2)", "(3)", "(4)")):
    counts = {status: int(np.sum(map_status[key] == status)) for status in
              verdicts.STATUSES}
    print(f"claim {name} over the {map_status[key].size} cells: " + ", ".join(
        f"{status} in {count}" for status, count in counts.items()))
stored_region = judge.observation1_region({
    f"(M x {scale:g}, sigma {sigma:g})": (map_values["start"][i, j], map_values["orders"][i, j])
    for i, scale in enumerate(map_scales) for j, sigma in enumerate(map_noise)})
print("cells where (1) holds and (2) is at least partly reproduced (random start c = 0.3): "
      f"{len(stored_region['both']) + len(stored_region['partly'])}")

# %% mystnb={"figure": {"caption": "Verdicts on the summaries' claims (1) to (4) at each cell of the map over the scale of $M$ and the noise level $\\sigma$ (prompts: $N = 4$, $n = 500$, seed 0, 2000 iterations); the colour is the status computed from the number printed in the cell (grey: the certified lower bound cannot decide claim (4)), with the thresholds printed above.", "name": "fig-ch05-claims-map"}, "image": {"alt": "Four small heat maps in a two by two grid, one per claim, each three scales of M by three noise levels; every cell coloured by verdict (reproduced, partly, not reproduced) and labelled with its measured number."}} tags=["hide-input"]
from matplotlib.colors import to_rgb
from matplotlib.patches import Patch

status_colour = {verdicts.REPRODUCED: OKABE_ITO["bluish green"], verdicts.PARTLY: OKABE_ITO["orange"],
                 verdicts.NOT_REPRODUCED: OKABE_ITO["vermillion"], verdicts.NOT_TESTABLE: NEUTRAL_GREY}
fig, axes = figure(2, 2, layout="constrained", height=5.6)
titles = ("(1) spectral start near $L^\\star$", "(2) three orders of magnitude",
          "(3) Algorithm 1 converged", "(4) SGD not converged")
for ax, key, title in zip(axes.flat, CLAIM_KEYS, titles):
    rgb = np.array([[to_rgb(status_colour[s]) for s in row]
                    for row in map_status[key]])
    ax.imshow(rgb, origin="lower", aspect="auto")
    for i in range(map_scales.size):
        for j in range(map_noise.size):
            ax.text(j, i, f"{map_values[key][i, j]:.2g}", ha="center", va="center",
                    color="white")
    ax.set(xticks=range(map_noise.size), xticklabels=[f"{s:g}" for s in map_noise],
           yticks=range(map_scales.size), yticklabels=[f"{s:g}" for s in map_scales],
           xlabel="noise level $\\sigma$", ylabel="scale of $M$", title=title)
    ax.grid(False)
fig.legend(handles=[Patch(color=c, label=s) for s, c in status_colour.items()],
           loc="outside lower center", ncol=3)
plt.show()

# %% [markdown]
# Across the map ({numref}`fig-ch05-claims-map`) the verdicts do not depend on a lucky point. Claim (3) fails in all nine cells:
# Algorithm 1 leaves between 0.304 and 0.568 of its initial gap after 2000 iterations, a little
# less at larger $\lVert M\rVert$ but nowhere near $10^{-3}$. Claim (1) holds in five cells and fails
# where the noise is small against the task (every cell at $\sigma = 0.01$, and $M \times 2$ at
# $\sigma = 0.03$). Claim (2) is never reproduced; it is "partly" reproduced in four cells, exactly
# cells where (1) fails, so no cell supports both at the book's random start $c = 0.3$, the start this
# stored map trains from (the live map above varies $c$: there both hold in 25 of 80 cells from
# $c = 2$ on). Claims (1) and (3) do not depend on $c$ (Algorithm 1 starts at the spectral point);
# claim (4) was run from $c = 0.3$ only. Claim (4) is reproduced in six cells; in the
# three cells of the book's $M$ the certified lower bound of SGD's gap ratio ($3.34\times10^{-5}$,
# 0 and $5.12\times10^{-4}$) is too weak to decide, because SGD is the only unregularized method run
# here and its own last loss is almost the lowest loss seen, so the verdict is "not testable" rather
# than a guess. The default points of the rerun above (the book's $M$, $\sigma = 0.1$ and $0.03$)
# give the same verdicts on (1) to (3) as their cells here.

# %% [markdown]
# ## The sources' claims and what this chapter measured
#
# Every verdict below is decided by `attnlib.claims.ch05` from the numbers printed above, with its
# threshold in the printed reason; this cell only collects them. Each observation appears first
# under the summary's own wording **[summary]**, then, where the book reads it more strictly, under that
# reading **[choice]**. The thresholds are this book's **[choice]**: "close" and "converges to the
# optimal loss" are a population loss within 10% of $L^\star$; "about three orders of magnitude" is
# a log10 ratio of at least 2.5 (1.5 earns "partly"), judged at the book's random start and, as a
# region, against its scale $c$; "converged" in the strict reading is an optimization gap below
# $10^{-3}$ of the initial one; "heads to the global optimum" is Theorem 2's population statement,
# Algorithm 1's excess risk at 2000 no larger than that of the certified minima of $\hat Q$ found,
# and in the strict reading the minimum of Algorithm 1's basin within $10^{-3}$ of the initial gap
# of the lowest known minimum; "a power-law rate" means the geometric fit's log residual over
# $k = 1000$ to $2000$ is more than twice the power law's (partly: larger); "removes the
# $\kappa(\Sigma)$ dependence" means at most twice the iterations at $\kappa = 1000$ as at
# $\kappa = 1$. Four rows that fail in the strict reading share one cause, shown in the section on
# where the headline holds. Claims (1) to (4) in the second reconstruction (many prompts) are in
# the previous section, beside the one-set verdicts.

# %%
from attnlib.verdicts import verdict_table
claims["global"], claims["global_basin"] = judge.global_optimum(
    [stacked("excess_risk", "algorithm1")[i, -1] / runs["ref_Q_excess_risk"][i].max()
     for i in range(len(SEEDS))],
    [(float(runs["basin_value"][i]) - best["Q", s])
     / (runs["objective"][i, 0, 0] - best["Q", s]) for i, s in enumerate(SEEDS)], SEEDS)
claims["kappa"] = judge.preconditioner_kappa(
    first[:, -1, METHODS.index("random+precond+reg"), list(thresholds).index(1e-2)].max()
    / first[:, 0, METHODS.index("random+precond+reg"), list(thresholds).index(1e-2)].max())
verdict_table([(label, claims[key]) for key, label in (
                   ("start", "[summary]"), ("orders", "[summary]"), ("orders_scale", "[summary]"),
                   ("alg1_loss", "[summary]"), ("alg1", "[choice]"), ("global", "[summary]"),
                   ("global_basin", "[choice]"), ("sgd_loss", "[summary]"), ("sgd", "[choice]"),
                   ("random_loss", "[summary]"), ("random", "[choice]"), ("gd_power", "[abstract]"),
                   ("kappa", "[derived]"))])
