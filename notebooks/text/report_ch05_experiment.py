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
# This page of the Reproduction report checks what {doc}`Chapter 5 <ch05_experiment>` measures against what the papers claim. Every verdict is computed by `attnbook.claims` from the numbers, with its threshold printed; the claims ledger collects them. The first cell calls the chapter's functions from `attnbook.chapters.ch05` (the chapter calls the same functions), so the objects the chapter built are here.

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

from attnlib import algorithm, analysis, fitting
from attnbook import experiments, verdicts
from attnbook.chapters import ch05
from attnbook.chapters.ch05 import CONVERGED, INIT_SCALES, L_STAR, LABELS, METHODS, NOISE_AXIS
from attnbook.claims import ch05 as judge
from attnbook.experiments import ablations, optimum, part1
from attnbook.plotting import METHOD_COLOURS, NEUTRAL_GREY, OKABE_ITO, figure, use_book_style
from attnbook.tables import result_table

use_book_style()
runs = experiments.load("paper1_defaults")          # the chapter's stored run
SEEDS, iteration = ch05.seeds(runs), runs["iteration"]
best = ch05.lowest_minima(runs)                     # (objective, seed) -> Q_hat* of the gaps
e_spectral, e_random, ratios, loss_ratio, _ = ch05.start_comparison(runs)     # observation 1
start_grid = ablations.start_claims_grid(INIT_SCALES, NOISE_AXIS)   # live: starting losses only
sweep = experiments.load("paper1_condition_sweep")  # section "Conditioning"
first, thresholds = sweep["first_iteration"], sweep["thresholds"]
from attnbook.verdicts import verdict_table


# %% [markdown]
# ## The one-sample-set experiment in numbers
#
# The chapter reads each observation from one figure. This section prints the numbers behind
# them: the certified minima that the optimization gap is measured against, the per-seed tables of
# the three observations, the fitted rates of every method, and the remedies for the slow tail.

# %% [markdown]
# ### The best local minima found of the trained objective
#
# Algorithm 1 and "random + precond + reg" train $\hat Q = \hat L + \hat R$ ($\lambda = 1$); GD, SGD
# and Adam train $\hat L$ alone ($\lambda = 0$). For each objective, `attnlib.reference` computes a
# reference minimizer with `scipy.optimize` {cite}`nocedal2006`: L-BFGS with the exact gradient,
# then a trust-region Newton-CG polish whose Hessian-vector products are central finite differences
# of the exact gradient, then the full Hessian spectrum in the factorization coordinates
# $(U, V)$ of $\hat\Sigma$. A minimum counts as found when its gradient norm is below $10^{-8}$ and its
# Hessian is positive definite (a strict local minimum), and it is the best when no lower value is
# found from the other starts tried. The objective is nonconvex, so this establishes a local
# minimum and the best value found, not global optimality. The starts for $\hat Q$: the spectral point (the minimizer found
# from there is the one Algorithm 1 heads to, its *basin* minimizer), six other points of $\hat S$
# at random rotations (three with $\det O = -1$), and the final iterates of the two $\lambda = 1$
# methods; for $\hat L$: the final iterates of GD and Adam.

# %%
import textwrap

R = (part1.SETTINGS.p * part1.SETTINGS.d + part1.SETTINGS.d ** 2)           # number of parameters
print(f"Hessian of Q_hat at the basin minimizer, (U, V) coordinates ({R} eigenvalues);\n"
      f"d(d-1)/2 = {part1.SETTINGS.d * (part1.SETTINGS.d - 1) // 2}")
hessian_rows = []
for i, s in enumerate(SEEDS):
    h = runs["basin_hessian"][i]
    hessian_rows.append([s, f"{float(runs['basin_value'][i]):.6f}", f"{h[0]:.2g}", f"{h[-1]:.3g}",
                         f"{h[-1] / h[0]:.3g}", int(np.sum(h < 0.05))])
display(result_table(["seed", "Q_hat*", "smallest eig.", "largest", "condition number",
                      "eig. below 0.05"], hessian_rows))
starts = part1.reference_start_labels()
for tag, label in (("Q", "Q_hat = L_hat + R_hat"), ("L", "L_hat alone")):
    print(f"{label}: minima from {len(starts[tag])} starts:")
    # wrap the list between start labels only (no-break spaces inside each label)
    listed = ", ".join(start.replace(" ", "\xa0") for start in starts[tag])
    print(textwrap.fill(listed, 78, initial_indent="  ", subsequent_indent="  ").replace("\xa0", " "))
    for i, s in enumerate(SEEDS):
        values = runs[f"ref_{tag}_value"][i]
        excess = runs[f"ref_{tag}_excess_risk"][i]
        print(f"  seed {s}: values {values.min():.6f} .. {values.max():.6f}, best from "
              f"'{starts[tag][int(np.argmin(values))]}'\n    largest gradient norm "
              f"{runs[f'ref_{tag}_grad_norm'][i].max():.1e}; smallest Hessian eigenvalue "
              f"{runs[f'ref_{tag}_min_eigenvalue'][i].min():.1e}\n    excess risk of the minima "
              f"{excess.min():.3g} .. {excess.max():.3g}")
lowest = part1.lowest_known_minima()      # one table for chapters 5, 6 and 12
print("lowest known minimum of Q_hat per seed (best local minimum found):")
for s in SEEDS:
    print(f"  seed {s}: {lowest[s]['value']:.6f}, excess risk {lowest[s]['excess_risk']:.3g}\n"
          f"    {lowest[s]['source']}")
for i, s in enumerate(SEEDS):
    basin = float(runs["basin_value"][i])
    print(f"seed {s}: basin minimizer - lowest known Q_hat minimum = {basin - best['Q', s]:.2e}\n"
          f"  ({(basin - best['Q', s]) / (runs['objective'][i, 0, 0] - best['Q', s]):.1%} of "
          f"Algorithm 1's initial gap); OLS fit excess risk "
          f"{float(runs['ols_fit_excess_risk'][i]):.3g}")

# %% [markdown]
# Every minimum found is a strict local minimum (gradient norms at most $7.4\times10^{-9}$,
# positive smallest Hessian eigenvalues). At the minimizer reached from the spectral start the
# Hessian has exactly 45 eigenvalues below 0.05, as many as there are rotations along $\hat S$
# ($d(d-1)/2$), and a condition number of about $10^3$ (912 to 1680): the finite sample tilts the
# orbit, but only weakly. It also breaks it into **several local minima**: from nine starts the
# values of $\hat Q$ spread by about $4\times10^{-4}$ to $9\times10^{-4}$. None of them is known to be
# global (the objective is nonconvex), so the book measures against the **lowest known minimum**
# per seed, shared by chapters 5, 6 and 12. For seed 0 that is chapter
# 12's 0.097780 (reached by an annealed Langevin chain), below this chapter's multi-start best
# 0.098010; for seeds 1 and 2 it is this chapter's. The minimum reached from the spectral start
# lies 2.2% to 6.9% of Algorithm 1's initial gap above it. The excess population risks of these
# minima differ too (0.00923 to 0.0143 for seed 0, not ordered by $\hat Q$): they are
# statistically equivalent fits of the same data, and which one a method reaches is this book's
# question, not the paper's, whose Theorem 2 is a statement about the population
# risk. The unregularized loss $\hat L$ is far worse
# conditioned (smallest eigenvalues $10^{-6}$ to $10^{-5}$), and its minima have larger excess risks
# (0.010 to 0.052): without $\hat R$ nothing holds the factors balanced. Below, each method's gap
# is measured to the lowest known minimum of its objective; the distances are to the spectral
# start's basin minimizer, the one Algorithm 1 heads to.

# %% [markdown]
# ### Observation 1 in numbers
#
# Per seed, the population loss and the excess risk $L - L^\star$ of the spectral and the random
# start (random-init SGD's first iterate), and the verdicts at the book's random start.

# %%
print("seed  loss spectral  loss random  loss ratio  excess spectral  excess random  excess ratio")
for i, s in enumerate(SEEDS):
    print(f"{s:4d}  {e_spectral[i] + L_STAR:13.3g}  {e_random[i] + L_STAR:11.3g}  {ratios[i][0]:10.3g}"
          f"  {e_spectral[i]:15.3g}  {e_random[i]:14.3g}  {ratios[i][1]:12.3g}")
claims = {"start": judge.start_loss([e / L_STAR for e in runs["excess_risk"][:, 0, 0]],
                                   SEEDS),
          "orders": judge.three_orders(np.log10(loss_ratio))}
display(verdict_table([("", claims["start"]), ("", claims["orders"])]))

# %% [markdown]
# The spectral start is within 10% of $L^\star$ for all three seeds (its excess risk is 3.9% to
# 6.7% of $L^\star$), as observation 1 states. The initial loss ratio
# is 2.87 (median; $10^{0.46}$) and the excess-risk ratio 37.2 ($10^{1.57}$): neither is three
# orders of magnitude at the book's random start, entries $\mathcal N(0, 0.3^2/d)$.
# The sources do not give the paper's initialization scale, and the loss ratio depends on it
# strongly: the random start's excess risk grows like $c^4$ in the scale $c$ (both factors scale
# by $c$), so the answer is a *region* of $c$, not a number. The next cell prints the chapter's scan of $c$ and the noise
# level (live: only the starting losses are needed).

# %%
print("log10 median loss ratio random / spectral start; rows c, columns sigma = "
      + " / ".join(f"{s:g}" for s in NOISE_AXIS))
for c, row in zip(INIT_SCALES, start_grid["log10_ratio"]):
    print(f"  c = {c:4.2f}:  " + " / ".join(f"{v:.2f}" for v in row))
print("spectral start (L(theta_0) - L*)/L* (independent of c), seeds 0-2: " + "; ".join(
    f"sigma = {s:g}: " + " / ".join(f"{v:.3g}" for v in start_grid["start"][j])
    for j, s in enumerate(NOISE_AXIS)))
claims["orders_scale"] = judge.three_orders_by_scale(INIT_SCALES, start_grid["log10_ratio"][:, -1])
display(verdict_table([("", claims["orders_scale"])]))
start_region = judge.observation1_region({
    f"({c:.3g}, {s:g})": (start_grid["start"][j], start_grid["log10_ratio"][i, j])
    for i, c in enumerate(INIT_SCALES) for j, s in enumerate(NOISE_AXIS)})
print("(c, sigma) where (1) and (2) are both reproduced: "
      + (", ".join(start_region["both"]) or "none"))

# %% [markdown]
# At $\sigma = 0.1$ the log10 loss ratio grows from 0.46 at $c = 0.3$ to 1.06, 2.12, 2.90 and
# 3.70 at $c = 1, 2, \sqrt{d}, 5$ (medians over seeds).
# So "about three orders of magnitude" holds (a log10 ratio of at least 2.5) for random starts with entries
# of unit variance ($c = \sqrt d$, $10^{2.9}$) or larger, and the spectral start stays within 10%
# of $L^\star$ there; it fails at the book's small random start. At $\sigma = 0.03$ and $0.01$ the
# ratio grows but the first claim fails (the spectral start's own excess risk is no longer small
# against $L^\star = p\sigma^2/2$). Both parts of observation 1 hold together for $c \ge \sqrt d$ at $\sigma = 0.1$.
# The verdict at $c = 0.3$ alone is therefore decided by the book's choice of $c$: the claims
# section lists it as a **[choice]** row, after the summaries' claim judged over $c$.

# %% [markdown]
# ### Observations 2 and 3 in numbers
#
# "Converged" needs a definition. Observation 2 says Algorithm 1 "converges to the optimal loss"
# within 2000 iterations. The summary's reading, as for observation 1, is about the population
# loss, with this rule **[choice]**, written down before the runs over the random start's scale
# below were made: a run has *converged to the optimal loss within 2000 iterations* when
# $(L(\theta_k) - L^\star)/L^\star \le 0.1$ at every recorded iteration $k$ from 1000 to 2000 (every
# 10th is recorded), that is, it came within 10% of $L^\star$ by half the run and stayed there
# (`attnbook.claims.ch05.held_loss`); "SGD has not converged" is its negation. An earlier rule read
# iteration 2000 alone; its verdicts are printed beside the new ones, with the iteration from which
# each run stays within 10% and its best iterate, so a reader can apply another window. The book's stricter reading is
# the optimization gap: a run has converged when $\hat Q(\theta_k) - \hat Q^\star$ is below $10^{-3}$ of
# its initial value (each method against the lowest known local minimum of its own objective,
# per seed). The table gives
# the gap at 2000 relative to the start, the first recorded iteration at which it is below
# $10^{-3}$ of the start, the distance of the $\lambda = 1$ methods' iterates to Algorithm 1's basin
# minimizer (in $(U, V)$ coordinates; nothing is quotiented out, since the finite-data objective
# has no symmetry left: its Hessian there is positive definite), and the excess risk.

# %%
cap = int(iteration[-1])
print("method                  gap 2000/0 (seeds 0, 1, 2)   first k, gap < 1e-3 gap_0   "
      "dist to basin min 0 -> 2000   excess at 2000")
ratio = {}
for method in METHODS:
    g = ch05.gap(runs, best, method)
    ratio[method] = g[:, -1] / g[:, 0]
    first_k = [str(int(iteration[int(k)])) if np.isfinite(k) else f">{cap}"
             for k in analysis.iterations_to_threshold(g / g[:, :1], CONVERGED)]
    dist = ch05.stacked(runs, "dist_ref", method)
    dist_text = (f"{np.median(dist[:, 0]):.3g} -> {np.median(dist[:, -1]):.3g}"
                 if part1.reference_tag(algorithm.METHODS[method]) == "Q" else "(other objective)")
    print(f"{LABELS[method]:23s} {' / '.join(f'{r:.2g}' for r in ratio[method]):28s} "
          f"{', '.join(first_k):27s} {dist_text:29s} "
          f"{np.median(ch05.stacked(runs, 'excess_risk', method)[:, -1]):.3g}")
relative_loss = {m: ch05.stacked(runs, "excess_risk", m)[:, -1] / L_STAR for m in METHODS}
alg1_excess = ch05.stacked(runs, "excess_risk", "algorithm1")
print(f"Algorithm 1, population loss / L* (median over seeds): {1 + np.median(alg1_excess[:, 0]) / L_STAR:.3f}"
      f" at the start, {1 + np.median(alg1_excess[:, -1]) / L_STAR:.3f} at 2000; excess risk at 2000 / "
      f"OLS formula {np.median(alg1_excess[:, -1]) / float(runs['ols_formula']):.2g}")
LOSS_CLAIMS = {"algorithm1": "p1-algorithm1-2000", "sgd": "p1-sgd-2000",
               "random+precond+reg": "p1-random-start-fast"}
print("(L - L*)/L*, seeds 0 / 1 / 2 (c = 0.3, step fixed at the start):")
for m in LOSS_CLAIMS:
    curves = ch05.stacked(runs, "excess_risk", m) / L_STAR
    cols = {"at 2000": curves[:, -1], "best": curves.min(axis=1),
            "max, k = 1000..2000": [judge.held_loss(c, iteration) for c in curves]}
    print(f"  {LABELS[m]}")
    for name, values in cols.items():
        print(f"    {name:21s} " + " / ".join(f"{v:.3g}" for v in values))
    print(f"    {'within 10% from k =':21s} " + " / ".join(
        "never" if np.isinf(k) else f"{k:.0f}" for k in (judge.stays_from(c, iteration)
                                                          for c in curves)))
held_default = [judge.held_loss(c, iteration) for c in alg1_excess / L_STAR]
earlier = {m: judge.earlier_loss_rule(cid, relative_loss[m], SEEDS) for m, cid in LOSS_CLAIMS.items()}
claims.update(
    alg1_loss=judge.algorithm1_loss(held_default, SEEDS),
    alg1=judge.converged_gap("p1-algorithm1-2000-gap", ratio["algorithm1"], SEEDS),
    sgd=judge.converged_gap("p1-sgd-2000-gap", ratio["sgd"], SEEDS),
    random=judge.converged_gap("p1-random-start-fast-gap", ratio["random+precond+reg"], SEEDS))
display(verdict_table([("", verdict) for verdict in (claims["alg1_loss"], *earlier.values(), claims["alg1"], claims["sgd"],
                claims["random"])]))

# %% [markdown]
# The two readings disagree. In the summary's wording, Algorithm 1 "converges to the optimal
# loss": its population loss is $1.055\,L^\star$ at the start and $1.063\,L^\star$ at 2000
# (medians), and no seed leaves the 10% band after iteration 1000 (7.0% at most); but it was
# inside from iteration 0, so this reading shows that Algorithm 1 stays near the optimal loss, not
# that it converges (the gap reading below tests that), and the excess risk at 2000 is 3.1 times
# the OLS formula's. At the book's random start SGD ends 6.3% to 8.1% above $L^\star$, which the
# earlier rule (iteration 2000 alone) read as converged, contrary to the summary; by the rule above
# seed 0 has not converged (10.5% above $L^\star$ after iteration 1000, inside only from $k = 1130$),
# seeds 1 and 2 have (inside from $k = 600$ and 880). The preconditioned random start stays inside
# from $k = 88$ and 84 for seeds 1 and 2; seed 0 comes within 10% (best 8.4% above $L^\star$) and
# drifts out again, ending 11.7% above $L^\star$: checking the last iterate alone would hide that.
# The next subsection repeats both runs over the random start's scale and with a second step rule.
#
# In the stricter reading none of the five methods brings its gap below $10^{-3}$ of the start
# within 2000 iterations. Algorithm 1 keeps 36% to 51% of its initial gap, although its excess
# risk is flat from the first iterations on. SGD keeps 2.6% to 2.7% of its gap: it has not
# converged, but neither has any other method. The preconditioned random start keeps 0.8% to
# 1.1%: it closes its gap faster than Algorithm 1 in relative terms, but not to $10^{-3}$. The
# distances tell the same story: Algorithm 1's iterates are still 1.77 away (median, in $(U, V)$ units) from the
# minimizer of their basin after 2000 iterations. The chapter's first section shows why.

# %% [markdown]
# ### Observations 2 and 3 over the random start's scale
#
# Observation 1 is judged over the random start's scale $c$ (entries $\mathcal N(0, c^2/d)$),
# because whether it holds depends on $c$; the two random-start claims of observation 3 depend on
# it too, and on a second choice the sources do not make: the step size. The book's rule
# (chapter 4) divides $c_{\rm step} = 0.5$ by a curvature bound $(1 + \lambda)\max(s_{\max},
# \lVert U\rVert_F^2 + \lVert V\rVert_F^2)$ (times $\max(\lVert\hat\Sigma\rVert,
# \lVert\hat\Sigma\rVert^2)$ without the preconditioner). Evaluated once, at the start, as in every
# other run of the book, a larger random start gets a smaller step for the whole run. The stored
# run `paper1_init_scale` (`attnbook.experiments.paper1_init_scale`) trains SGD and
# random + precond + reg from the five scales of observation 1 with two step rules **[choice]**:
#
# * **fixed**: the rule evaluated at the start (the cell $c = 0.3$, fixed, is the run above);
# * **re-evaluated**: the same rule evaluated at every iteration at the current iterate, so the
#   step grows as the parameters shrink towards the balanced scale
#   (`paper1_init_scale.ReevaluatedStep`).
#
# Algorithm 1 starts at the spectral point: neither $c$ nor the start's step changes it. Each claim is
# judged by the rule above at each (scale, step rule) cell, and holds at a cell when it holds for
# all three seeds: "converges fast" when the largest value
# over the seeds of $\max_{1000 \le k \le 2000} (L(\theta_k) - L^\star)/L^\star$ is at most 0.1,
# "SGD has not converged" when the smallest is above 0.1. The summaries' random start is "far from
# the manifold", its loss "three orders of magnitude higher": the **[summary]** rows judge both
# claims at that start, the cells whose $c$ is where observation 1 holds at the run's $\sigma = 0.1$
# (computed by `observation1_region`, `attnbook.claims.ch05.observation1_scales`), with both step
# rules (`source_start`); over every cell, the book's $c = 0.3$ included, they are **[choice]** rows
# (`scale_region`). The stricter gap reading stays at the
# book's point ($c = 0.3$, step fixed at the start): its threshold is relative to the starting gap,
# which grows like $c^4$, so the same $10^{-3}$ would ask less of a larger start; the gap ratios
# over $c$ are printed for reference.

# %%
# default rtol 1e-8: 20 iterations of four runs, within 3e-7 of it on other CPUs
scale_run, replay_scale, check = experiments.replay(   # python -m attnbook.experiments paper1_init_scale
    "paper1_init_scale", keys=("excess_risk", "objective", "step"),
    align=experiments.leading_block)                  # seed 0 at c = 0.3
print(f"replayed iterations 0..{replay_scale['iteration'][-1]} of seed 0 at c = 0.3 live.\n{check}")
SCALES, its_scale = tuple(float(c) for c in scale_run["init_scales"]), scale_run["iteration"]
RULES, SCALE_METHODS = (tuple(experiments.config(scale_run)[key]) for key in ("step_rules", "methods"))
rel_scale = scale_run["excess_risk"] / L_STAR          # seeds, c, iterations, method, step rule
held_scale = {m: np.array([[[judge.held_loss(rel_scale[s, i, :, k, j], its_scale)
                             for s in range(len(SEEDS))] for j in range(len(RULES))]
                           for i in range(len(SCALES))]) for k, m in enumerate(SCALE_METHODS)}
same = [np.abs(rel_scale[:, 0, :, k, 0] * L_STAR - ch05.stacked(runs, "excess_risk", m)).max()
        for k, m in enumerate(SCALE_METHODS)]
print(f"c = 0.3, fixed step vs paper1_defaults: excess risk differs by "
      f"{experiments.format_deviation(max(same))}")
rows = []
for k, m in enumerate(SCALE_METHODS):
    for j, rule in enumerate(RULES):
        for i, c in enumerate(SCALES):
            curves = rel_scale[:, i, :, k, j]
            stays = [judge.stays_from(cv, its_scale) for cv in curves]
            rows.append([LABELS[m], rule, f"{c:.3g}",
                         " / ".join(f"{scale_run['step'][s, i, k, j]:.2g}" for s in range(len(SEEDS))),
                         " / ".join(f"{v:.3g}" for v in curves[:, -1]),
                         " / ".join(f"{v:.3g}" for v in curves.min(axis=1)),
                         " / ".join(f"{v:.3g}" for v in held_scale[m][i, j]),
                         " / ".join("never" if np.isinf(v) else f"{v:.0f}" for v in stays)])
display(result_table(["method", "step rule", "c", "step at k = 0", "(L - L*)/L* at 2000",
                      "best", "max over k = 1000..2000", "within 10% from k ="], rows))

# %%
NOISE = NOISE_AXIS.index(experiments.config(scale_run)["noise_std"])   # the run's sigma
SOURCE_SCALES = judge.observation1_scales(INIT_SCALES, start_grid["start"][NOISE],
                                          start_grid["log10_ratio"][:, NOISE])
print(f"the sources' start, where observation 1 holds at sigma = {NOISE_AXIS[NOISE]:g}: "
      + (", ".join(f"c = {c:.3g}" for c in SOURCE_SCALES) or "at no c"))
for key, m, cid in (("sgd", "sgd", "p1-sgd-2000"),
                    ("random", "random+precond+reg", "p1-random-start-fast")):
    claims[key + "_loss"] = judge.source_start(cid, held_scale[m], SCALES, RULES, SOURCE_SCALES)
    claims[key + "_all"] = judge.scale_region(cid + "-all-scales", held_scale[m], SCALES, RULES)
display(verdict_table([("", claims[k]) for k in ("sgd_loss", "sgd_all", "random_loss",
                                                 "random_all")]))
for m, cid, says in (("sgd", "p1-sgd-2000", "SGD has not converged"),
                     ("random+precond+reg", "p1-random-start-fast", "random + precond + reg converges")):
    where = judge.region(cid, held_scale[m], SCALES, RULES)
    print(f"{says} (every seed):")
    for rule, scales_held in where.items():
        print(f"  {rule} step: " + (", ".join(f"c = {c:.3g}" for c in scales_held) or "at no c"))
print("gap(2000)/gap(0), largest over seeds, at c = " + "/".join(f"{c:.3g}" for c in SCALES))
for k, m in enumerate(SCALE_METHODS):
    tag = part1.reference_tag(algorithm.METHODS[m])
    floor = np.array([best[tag, s] for s in SEEDS])[:, None, None]
    gaps = scale_run["objective"][..., k, :] - floor[..., None]      # seeds, c, iterations, rule
    worst = (gaps[:, :, -1] / gaps[:, :, 0]).max(axis=0)              # c, rule
    for j, rule in enumerate(RULES):
        print(f"  {LABELS[m] + ', ' + rule:35s} " + "/".join(f"{v:.2g}" for v in worst[:, j]))

# %% mystnb={"code_prompt_show": "Plotting code: show {type}", "figure": {"caption": "Observation 3 against the random start's scale c: the largest population loss above L*, relative to L*, over iterations 1000 to 2000, for SGD and for random + precond + reg, with the step fixed at the start (solid) or re-evaluated at every iteration (dashed); dots are medians over three seeds, bars the range, the dotted line the 10% band.", "name": "fig-ch05-init-scale"}, "image": {"alt": "Log-log plot against the random start's scale: the SGD curves rise steeply with c above the 10 percent line; the fixed-step random + precond + reg curve rises from near the line at small c, the re-evaluated one stays flat near or below it."}} tags=["hide-input"]
fig, ax = figure(width=6.4, height=4.2)
for k, m in enumerate(SCALE_METHODS):
    for j, (rule, style) in enumerate(zip(RULES, ("-", "--"))):
        values = held_scale[m][:, j, :]                       # c, seeds
        ax.errorbar(SCALES, np.median(values, axis=1),
                    yerr=[np.median(values, axis=1) - values.min(axis=1),
                          values.max(axis=1) - np.median(values, axis=1)],
                    fmt="o" + style, color=METHOD_COLOURS[m], capsize=3,
                    label=f"{LABELS[m]}, {'re-evaluated' if j else 'fixed'} step")
ax.axhline(judge.LOSS_TOLERANCE, color=NEUTRAL_GREY, ls=":", label="10% of $L^\\star$")
ax.set(xscale="log", yscale="log", xlabel="scale $c$ of the random start",
       ylabel="$\\max_{1000 \\leq k \\leq 2000}\\,(L(\\theta_k) - L^\\star)/L^\\star$")
ax.set_xticks(SCALES, ["0.3", "1", "2", "$\\sqrt{d}$", "5"], minor=False)
ax.minorticks_off()
ax.legend(fontsize=9, loc="upper left")
plt.show()

# %% [markdown]
# The table and {numref}`fig-ch05-init-scale` answer both claims, with the rule above.
#
# * **SGD has not converged after 2000 iterations.** With the step fixed at the start, SGD is outside
#   the 10% band somewhere between iterations 1000 and 2000 for every seed at every scale from
#   $c = 1$ on; at $c = \sqrt d$ its loss at 2000 is 9.23, 3.64 and 3.87 times $L^\star$, because the step set by the large start (0.0038 to 0.0051) is
#   too small. At the book's $c = 0.3$ only seed 0 is outside (10.5% at its worst after 1000);
#   seeds 1 and 2 stay within 10% from $k = 600$ and 880. With the step re-evaluated SGD has not
#   converged at any $c$, the book's included: the step grows, and with it the minibatch noise
#   (13% to 26% above $L^\star$ at its worst after iteration 1000, at $c = 0.3$). At the sources' start ($c = \sqrt d$ and 5) it holds in all 4
#   cells (the **[summary]** row); over every scale in 9 of the 10, everywhere but the book's own
#   point (the **[choice]** row).
# * **From a random start, preconditioner + regularizer still converge fast.** With the step fixed
#   at the start it holds at no $c$: at $c = 0.3$ seed 0 comes within 10% (best 8.4% above
#   $L^\star$) and drifts out again (11.7% at 2000), at $c = 1$ seed 0 enters only at $k = 1240$, and
#   from $c = 2$ on the step fixed by the large start (0.006 down to 0.001, against about 0.07 once
#   the iterate is balanced) leaves the run far above $L^\star$, 62% to 90% at $c = \sqrt d$. With the
#   step re-evaluated the run stays within 10% from $k$ = 190 to 990 at $c = 0.3$, $\sqrt d$ and 5,
#   for every seed ($L/L^\star$ at 2000 = 1.09, 1.05, 1.06 at $c = \sqrt d$); at $c = 1$ and 2 seed 0
#   sits just outside (10.6% and 10.2% at its worst after 1000). At the sources' start the claim holds in 2 of
#   the 4 cells, those with the step re-evaluated (**[summary]**); over every scale in 3 of the 10,
#   all with the step re-evaluated (**[choice]**).
#
# So at the scale where observation 1 holds ($c \ge \sqrt d$ at $\sigma = 0.1$), "SGD has not
# converged" holds under both step rules, and "the preconditioned random start converges fast"
# holds only if the step is re-evaluated along the way; at the book's $c = 0.3$ with the step fixed
# at the start, neither holds. The sources give neither the initialization scale nor the step rule.
# For the stricter gap reading, the ratios printed above fall below $10^{-3}$ from $c = 2$ on for the
# preconditioned random start, partly because its starting gap grows like $c^4$; that reading is
# judged at the book's point only.

# %% [markdown]
# ### The summaries' literal preconditioner
#
# The summaries say that Algorithm 1 multiplies the gradient of $B$ by $\hat\Sigma^{-1}$; Algorithm 1
# here preconditions both factors, $(G_A\hat\Sigma^{-1}, \hat\Sigma^{-1}G_B\hat\Sigma^{-1})$, this book's
# completion that makes the step gradient descent in $(U, V)$ (chapter 4), and chapter 4's verdict
# on "the preconditioner speeds up training" tests that two-sided form. The cell below runs chapter 4's
# test with the literal one as well: the closed-form objective of seed 0's problem at
# $\kappa(\Sigma) = 1000$ ($X^\star$ fixed), the same random start, the regularizer on, 100 iterations,
# and chapter 4's rule, excess risk at $k = 100$ at most half that of gradient descent without a
# preconditioner. "Multiplied by $\hat\Sigma^{-1}$" does not say on which side, so both
# $\hat\Sigma^{-1}G_B$ and $G_B\hat\Sigma^{-1}$ are run, $A$'s gradient unchanged; since $A$'s gradient is
# not preconditioned, both use the step of the rule without the preconditioner
# (`attnbook.experiments.paper1_init_scale.literal_preconditioner`; live, about a second).

# %%
from attnbook.experiments import paper1_init_scale

literal = paper1_init_scale.literal_preconditioner()    # live: closed form, 4 x 100 iterations
PRECONDITIONERS = {"two_sided": "two-sided (Algorithm 1 here)", "plain": "none (plain GD)",
                   "B_left": "literal, S^-1 G_B", "B_right": "literal, G_B S^-1"}
print("preconditioner                step   excess risk at k = 100   ratio to none")
for name, step, risk, ratio_none in zip(literal["names"], literal["step"],
                                        literal["excess_risk"], literal["ratio"]):
    print(f"{PRECONDITIONERS[str(name)]:28s} {step:6.3f}   {risk:22.3g}   {ratio_none:13.3g}")
READINGS = {"S^-1 G_B": 2, "G_B S^-1": 3}                # index in literal["names"]
literal_ratios = {name: literal["ratio"][k] for name, k in READINGS.items()}
claims["literal"] = judge.literal_preconditioner(literal_ratios)
# the same test with every run's step multiplied (live: 2 x 4 x 100 iterations)
steps = {m: paper1_init_scale.literal_preconditioner(step_multiple=m) for m in (2.0, 4.0)}
print("ratio to none at the same multiple of every run's step: S^-1 G_B / G_B S^-1 / two-sided")
for m, run in {1.0: literal, **steps}.items():
    print(f"  {m:g} x the step: " + " / ".join(f"{run['ratio'][k]:.3g}" for k in (2, 3, 0)))
display(verdict_table([("", judge.literal_preconditioner(
    {name: run["ratio"][k] for name, k in READINGS.items()}, step_multiple=m))
    for m, run in steps.items()]))

# %% [markdown]
# The literal preconditioner helps, but far less than the two-sided one: after 100 iterations the
# excess risk is 0.0698 with $\hat\Sigma^{-1}G_B$ and 0.0943 with $G_B\hat\Sigma^{-1}$, against 0.118
# without a preconditioner (ratios 0.593 and 0.801), and 0.00819 with the two-sided one (0.0696,
# the number chapter 4 judges). Both literal readings speed training up, neither by chapter 4's factor of two, also at twice and
# four times every run's step (ratios printed above). The reason
# is the factor it leaves alone: $A$'s gradient is not preconditioned, so the directions of the
# small eigenvalues of $\hat\Sigma$ stay slow in $A$ (chapter 4), and the step must stay at the size
# the plain rule allows. The verdict is printed in the next section.

# %% [markdown]
# ### Rates of the optimization gap
#
# Theorem 2's optimization term is $\mu^m$. Each method's geometric rate is fitted to its
# gap over iterations 1000 to 2000 (least squares of $\log$ gap on $k$, per seed;
# `attnlib.fitting.fit_geometric_rate`, with its standard error). For the preconditioned methods
# the rate near the minimizer can be predicted: Algorithm 1's step is gradient descent
# in $(U, V)$ (chapter 4), so near the minimizer the offset contracts by $|1 - \eta h|$ along each
# Hessian eigenvector and the gap by $\mu = \max_h (1 - \eta h)^2$, set by the smallest eigenvalue
# $h_{\min}$ (`fitting.spectrum_gap_rate`, with the Hessian spectrum above). Plain GD from a random
# start is, by the talk abstract, slow with a power-law rate: the cell also fits a
# power law $k^{-b}$ to its gap over the same window and compares the two fits' residuals.

# %%
print("method                  fitted rate of the gap over k = 1000..2000 (per seed)")
tail = iteration >= 1000
fitted = {}
for method in METHODS:
    g = ch05.gap(runs, best, method)
    fits = [fitting.fit_geometric_rate(iteration, g[i], start=1000) for i in range(len(SEEDS))]
    fitted[method] = fits
    print(f"{LABELS[method]:23s} " + ", ".join(f"{f.rate:.6f} +- {f.stderr:.0e}" for f in fits))
for i, s in enumerate(SEEDS):
    eta = float(runs["step"][i, 0])
    h = runs["basin_hessian"][i]
    mu = fitting.spectrum_gap_rate(eta, h)
    print(f"seed {s}: Algorithm 1 step eta = {eta:.4f}, h_min = {h[0]:.2g}: predicted gap rate "
          f"(1 - eta h_min)^2 = {mu:.6f}; iterations per factor 10 of the gap "
          f"{np.log(10) / -np.log(mu):.3g} (predicted) vs {np.log(10) / -np.log(fitted['algorithm1'][i].rate):.3g} (fitted)")
gd_gap = ch05.gap(runs, best, "gd")
power_better = []
for i, s in enumerate(SEEDS):
    power = fitting.fit_power_law(iteration[tail], gd_gap[i, tail])
    log_k, log_g = np.log(iteration[tail]), np.log(gd_gap[i, tail])
    residual_power = np.std(log_g - (np.log(power.prefactor) + power.exponent * log_k))
    geometric = fitted["gd"][i]
    residual_geometric = np.std(log_g - (geometric.intercept + iteration[tail] * np.log(geometric.rate)))
    print(f"GD, seed {s}: power law k^{power.exponent:+.2f} (log residual {residual_power:.3f}) vs "
          f"geometric {geometric.rate:.5f} (log residual {residual_geometric:.3f})")
    power_better.append(residual_geometric / residual_power)
claims["gd_power"], earlier_rule = judge.power_law(power_better, SEEDS)
display(verdict_table([("", claims["gd_power"]), ("", earlier_rule)]))

# %% [markdown]
# Between iterations 1000 and 2000 every method's gap shrinks by a factor of 0.99926 to 0.99976
# per iteration: about $10^4$ iterations per factor of 10 for Algorithm 1 (9690, 8390 and 9760
# fitted). The Hessian at the minimizer predicts a slowest-mode rate of 0.999892 to 0.999927 for
# Algorithm 1's step, i.e. $2$ to $3\times10^4$ iterations per factor 10 once only the slowest mode
# is left; the fitted window is still faster because faster modes have not died out. Either way
# the optimization term $\mu^m$ of Theorem 2 has $\mu$ within $3\times10^{-4}$ of 1 on the finite
# objective. For plain GD a power law fits the gap better than a geometric rate in all three seeds
# (log residuals 0.004 to 0.026 against 0.012 to 0.035, exponents $-0.54$ to $-0.88$), as the talk
# abstract says. Over a window of one decade in $k$ this is a description, not a
# proof of the functional form: in seeds 0 and 2 the geometric fit's residual is more than three
# times the power law's (3.47, 3.49), in seed 1 only 1.36 times.

# %% [markdown]
# ### The slow directions, and what to do about them
#
# The Hessian at the minimizer explains the slow tail: about $d(d-1)/2 = 45$ eigenvalues are small.
# They belong to the directions along the orbit of $\hat S$ under rotations $O$, which the balancing
# regularizer leaves flat and the finite sample tilts only weakly (chapter 3; chapter 6 measures
# how their curvature scales with $n$). A reader who needs the optimum itself has options. A longer
# run (seed 0; 12,000 iterations) compares Algorithm 1 with three remedies, each chosen by
# this book, not taken from the paper:
#
# * **curvature step**: the same preconditioned gradient descent with $\eta = 1/h_{\max}$, where
#   $h_{\max}$ is the largest Hessian eigenvalue at the start, measured by power iteration with
#   finite-difference Hessian-vector products (`reference.largest_curvature`). The step rule of
#   chapter 4 divides by a curvature *bound* that is loose by more than an order of magnitude here;
# * **curvature step + Nesterov momentum** 0.9 (`algorithm.Momentum`);
# * **Newton polish**: 2000 iterations of Algorithm 1, then the trust-region Newton-CG polish of the
#   reference minimizer (counted in gradient evaluations, two per Hessian-vector product).
#
# Runs stop once the gap is below $10^{-10}$ of the initial gap.

# %%
# rtol 1e-7: the distances to the basin minimizer move by up to 2e-9 relative on other CPUs
slow, replay_slow, check = experiments.replay("paper1_slow_directions", keys=part1.prefix_keys, rtol=1e-7,
                                                  align=experiments.leading_block)
print(f"replayed iterations 0..{replay_slow['iteration'][-1]} of the three gradient methods live.\n{check}")
REMEDY_LABELS = {"algorithm1": "Algorithm 1 (rule step)", "curvature_step": "curvature step",
                 "curvature_nesterov": "curvature step + Nesterov"}
its_slow = slow["iteration"]
gaps = slow["gap"][0]                      # seed 0, the stored run's only seed
h = slow["basin_hessian"][0]
print(f"h_max at the start {float(slow['h_max'][0]):.3g}; at the minimizer {h[-1]:.3g}, "
      f"h_min {h[0]:.2g}")
print("method                     step     first k with gap/gap_0 below 1e-3 / 1e-6 / 1e-10"
      "     fitted rate (last 2000 recorded k)   predicted (1 - eta h_min)^2")
for j, name in enumerate(optimum.SLOW_SETTINGS.methods):
    relative = gaps[:, j] / gaps[0, j]
    firsts = [analysis.format_iterations(
        its_slow[int(k)] if np.isfinite(k) else np.inf, int(its_slow[-1]))
        for k in (analysis.iterations_to_threshold(relative, t) for t in (1e-3, 1e-6, 1e-10))]
    finite = np.isfinite(relative) & (relative > 1e-11)
    window = finite & (its_slow >= its_slow[finite][-1] - 2000)
    fit = fitting.fit_geometric_rate(its_slow[window], gaps[window, j])
    eta = float(slow["step"][0, j])
    predicted = (f"{fitting.spectrum_gap_rate(eta, h):.6f}" if name != "curvature_nesterov"
                 else "(momentum: not a GD rate)")
    print(f"{REMEDY_LABELS[name]:26s} {eta:.4f}   {' / '.join(firsts):45s} "
          f"{fit.rate:.6f} +- {fit.stderr:.0e}          {predicted}")
    last = its_slow[finite][-1]
    before = np.searchsorted(its_slow, last - 4000)
    if last == its_slow[-1]:       # ran to the cap: has the gap stopped moving?
            print(f"{'':26s} at k = {last}: gap {gaps[finite, j][-1]:.3g} (relative change over the "
              f"last 4000 iterations {abs(gaps[finite, j][-1] / gaps[before, j] - 1):.1e}), "
              f"distance to the basin minimizer {slow['dist_ref'][0, finite, j][-1]:.3g}")
print(f"Newton polish after {optimum.SLOW_SETTINGS.polish_after} Algorithm 1 iterations: gap "
      f"{float(slow['polish_start_gap'][0]):.2e} -> {float(slow['polish_gap'][0]):.1e} "
      f"in {int(slow['polish_evaluations'][0])} gradient evaluations")

# %% mystnb={"figure": {"caption": "Remedies for the slow directions (seed 0): the gap relative to its start against iterations for Algorithm 1's rule step, the curvature step and the curvature step with Nesterov momentum; the dash-dotted line marks convergence to $10^{-3}$ of the initial gap.", "name": "fig-ch05-remedies"}, "image": {"alt": "Relative optimization gap on a log axis against iteration for three gradient methods with solid, dashed and dotted lines, and a grey dash-dotted threshold line."}} tags=["hide-input"]
fig, ax = figure(width=6.4, height=4.0)
for j, (name, style) in enumerate(zip(optimum.SLOW_SETTINGS.methods, ("-", "--", ":"))):
    ax.plot(its_slow, gaps[:, j] / gaps[0, j], style, color=METHOD_COLOURS["algorithm1"] if j == 0
            else (OKABE_ITO["bluish green"] if j == 1 else OKABE_ITO["vermillion"]), label=REMEDY_LABELS[name])
ax.axhline(1e-3, color="grey", lw=0.8, ls="-.", label="converged ($10^{-3}$ of the initial gap)")
ax.set(yscale="log", xlabel="iteration $k$", ylabel="relative gap $(\\hat Q_k - \\hat Q^\\star)/(\\hat Q_0 - \\hat Q^\\star)$")
ax.legend()
plt.show()

# %% [markdown]
# The numbers and {numref}`fig-ch05-remedies` separate three remedies:
#
# * **Algorithm 1 as reconstructed** still has a gap of $1.27\times10^{-3}$ after 12,000 iterations, decaying at 0.999944 per iteration over the last 2000: slower than the local
#   prediction 0.999892, because its iterates are still 1.43 away from the minimizer along the
#   orbit, outside the region where the Hessian there describes the landscape.
# * **The curvature step** is much larger ($\eta = 1.167$ against 0.0667: the rule's bound is
#   that loose) and falls fast at first, but it **converges elsewhere**: its gap to the basin
#   minimum freezes at $1.13\times10^{-4}$ (relative change $6.7\times10^{-7}$ over the last 4000
#   iterations) at distance 1.23 from it, i.e. at another stationary point of $\hat Q$, higher than
#   the basin minimum. A larger step buys speed and loses the basin.
# * **The curvature step with Nesterov momentum** reaches $10^{-3}$ of the initial gap at
#   iteration 690 and $10^{-10}$ at 1470 (rate 0.985), in the basin of the spectral start.
# * **The Newton polish** started after 2000 Algorithm 1 iterations closes the remaining gap of
#   $3.9\times10^{-3}$ to rounding ($-1.1\times10^{-16}$) in 489 gradient evaluations.
#
# So "fast convergence to the optimum" is within reach on this objective, but not with plain
# preconditioned gradient descent at a step set by a curvature bound: a reader who needs the
# minimizer should add momentum or finish with a second-order polish, and check the gap against a
# minimum whose gradient and Hessian confirm it is a strict local minimum. None of these reaches the lowest known minimum;
# they reach the spectral start's basin minimum.

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
from attnbook.experiments import paper1_prompts

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
# By the printed rule (`attnbook.claims.ch05.observation1_region`), both parts hold in 25 of the 80
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
prompt_exp, replay_prompts, check = experiments.replay(   # python -m attnbook.experiments paper1_prompts_experiment
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
# (`attnbook.claims.ch05.map_claims`). To fit the budget the cells use $N = 4$ prompts
# of $n = 500$ tokens instead of 8 **[choice]**; the next cell prints the quantity and the status of
# every claim at every cell.

# %%
claims_map, replay_map, check = experiments.replay(   # python -m attnbook.experiments paper1_prompts_claims_map
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
# Every verdict below is decided by `attnbook.claims.ch05` from the numbers printed above, with its
# threshold in the printed reason; this cell only collects them. Each observation appears first
# under the summary's own wording **[summary]**, then, where the book reads it more strictly, under that
# reading **[choice]**. The thresholds are this book's **[choice]**: "close" and "converges to the
# optimal loss" are a population loss within 10% of $L^\star$, for convergence at every recorded
# iteration from 1000 to 2000; SGD's and the random start's convergence claims are judged at the
# summaries' random start, the scales $c$ where observation 1 holds, with both step rules, and over
# every $c$, the book's $c = 0.3$ included (a **[choice]** row); "about three orders of magnitude" is
# a log10 ratio of at least 2.5 (1.5 earns "partly"), judged against $c$ (the summaries' claim) and
# at the book's $c = 0.3$ (a **[choice]** row: the book's choice of $c$ decides it); "converged" in
# the strict reading is an optimization gap below $10^{-3}$ of the initial one, at $c = 0.3$;
# "heads to the global optimum" is Theorem 2's population statement,
# Algorithm 1's excess risk at 2000 no larger than the largest excess risk of the certified minima
# of $\hat Q$ found (the next cell also prints it against the basin minimizer, the lowest known
# minimum and the minimum with the smallest excess risk), and in the strict reading the minimum of Algorithm 1's basin within $10^{-3}$ of the initial gap
# of the lowest known minimum; "a power-law rate" means the geometric fit's log residual over
# $k = 1000$ to $2000$ is more than twice the power law's (partly: larger); "removes the
# $\kappa(\Sigma)$ dependence" means at most twice the iterations at $\kappa = 1000$ as at
# $\kappa = 1$; the literal preconditioner "speeds up training" by chapter 4's rule, a ratio of at most 0.5 for
# every reading (partly: every ratio below 1). Where a rule
# changed, the next cell prints the verdict under the earlier rule too. Four rows that fail in the strict reading share one cause, shown in the section on
# where the headline holds. Claims (1) to (4) in the second reconstruction (many prompts) are in
# the previous section, beside the one-set verdicts.

# %%
from attnbook.verdicts import verdict_table
alg1_final = ch05.stacked(runs, "excess_risk", "algorithm1")[:, -1]
minima = runs["ref_Q_excess_risk"]               # seeds, starts of the search (first: the basin)
claims["global"], claims["global_basin"] = judge.global_optimum(
    alg1_final / minima.max(axis=1),
    [(float(runs["basin_value"][i]) - best["Q", s])
     / (runs["objective"][i, 0, 0] - best["Q", s]) for i, s in enumerate(SEEDS)], SEEDS)
claims["kappa"] = judge.preconditioner_kappa(
    first[:, -1, METHODS.index("random+precond+reg"), list(thresholds).index(1e-2)].max()
    / first[:, 0, METHODS.index("random+precond+reg"), list(thresholds).index(1e-2)].max())
verdict_table([(label, claims[key]) for key, label in (
                   ("start", "[summary]"), ("orders_scale", "[summary]"), ("orders", "[choice]"),
                   ("alg1_loss", "[summary]"), ("alg1", "[choice]"), ("global", "[summary]"),
                   ("global_basin", "[choice]"), ("sgd_loss", "[summary]"), ("sgd_all", "[choice]"),
                   ("sgd", "[choice]"), ("random_loss", "[summary]"), ("random_all", "[choice]"),
                   ("random", "[choice]"), ("gd_power", "[abstract]"),
                   ("literal", "[summary]"), ("kappa", "[derived]"))])

# %%
lowest_excess = np.array([lowest[s]["excess_risk"] for s in SEEDS])
references = judge.global_optimum_references({
    "the basin minimizer": alg1_final / minima[:, 0],
    "the lowest known minimum of Q_hat": alg1_final / lowest_excess,
    "the minimum with the smallest excess risk":
        alg1_final / np.minimum(minima.min(axis=1), lowest_excess)}, SEEDS)
display(verdict_table([("", verdict) for verdict in (*earlier.values(),
                                                      judge.literal_earlier_rule(literal_ratios),
                                                      *references)]))
