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
# # Checks for Chapter 11: Darcy flow with a one-attention-layer ViT
#
# This page of the Reproduction report checks what {doc}`Chapter 11 <ch11_darcy>` measures against what the papers claim. Every verdict is computed by `attnbook.claims` from the numbers, with its threshold printed; the claims ledger collects them. The first cell calls the chapter's functions from `attnbook.chapters.ch11` on the stored runs, so the objects the chapter built are here.

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
from attnbook.chapters.ch11 import phase2_runs, phase2_summaries, strong_lambda
from attnbook.claims import ch11

stored2 = phase2_runs()              # the chapter's four stored Phase-2 runs, by label
summaries = phase2_summaries(stored2)
strong_lam = strong_lambda(stored2)

# %% [markdown]
# ## The four findings, one by one
#
# Each verdict below is computed by `attnbook.claims.ch11` from the numbers above, with the
# rule and threshold printed beside it **[choice of rules]**: "nearly the same" test error means
# that both the test RMSE and the relative $L^2$ error are within 2% (relative) of the unregularized ones; a norm "grows" when its end value exceeds the start
# by at least 5% beyond two standard errors over seeds, and "without bound" is read as still rising
# at the end (log-slope over the last 20 epochs at least 3 standard errors above 0); the regularizers
# "contain" the norms when their growth is at most half the unregularized growth (only testable
# where the unregularized norm grows); the unregularized gap "grows" when it rises by 5% beyond two
# standard errors and its slope over the second half is 3 standard errors above 0; a regularized
# gap "stays stable" when its second-half slope is not; it is "lower" when it is at least 5% below
# the unregularized gap beyond two standard errors, which only counts together with a test loss that
# is not higher (within 2 standard errors), since a worse fit can also lower the gap. The fourth finding is one statement joined by "and": it holds for an optimiser only when all four of its conditions hold (for both forms), and it is judged per optimiser, never by pooling conditions met under different optimisers. The findings are
# judged on the three optimisers at $\lambda = 10^{-5}$; the strong-$\lambda$ noisy run is reported
# beside them.

# %%
from attnbook.verdicts import verdict_table
low_runs = {label: summaries[label] for label in ("adam", "sgd", "noisy")}
print("final test RMSE (physical units, mean over seeds +- SE): " + "; ".join(
    f"{run} " + ", ".join(f"{regime} {m['rmse']:.4g} +- {m['rmse_sem']:.1g}" for regime, m in summary.items())
    for run, summary in low_runs.items()))
v1, parts1 = ch11.same_error(low_runs)
v2, parts2 = ch11.norms_grow(low_runs)
growing = {run: ch11.grows(parts2, run) for run in low_runs}
v3, parts3 = ch11.norms_contained(low_runs, growing)
v4, per_run4, conditions4 = ch11.gap_grows_without_lower_with(low_runs)
display(verdict_table([("", v1, parts1), ("", v2, parts2), ("", v3, parts3),
                       ("", v4, per_run4 + conditions4)]))
strong = {"noisy, strong": summaries["noisy, strong"]}
print(f"\nbeside them, noisy SGD at lambda = {strong_lam:g}:")
_, per_run_strong, conditions_strong = ch11.gap_grows_without_lower_with(strong)
for part in (ch11.same_error(strong)[1] + ch11.norms_contained(strong, {"noisy, strong": growing["noisy"]})[1]
             + per_run_strong + conditions_strong):
    print("    " + str(part))

# %% [markdown]
# **Finding 1, the same test error in the low-regularization regime: reproduced, at
# $\lambda \le 10^{-5}$.** At $\lambda = 10^{-5}$ every regularized error is within 2% of the unregularized
# one, in relative $L^2$ error (Adam 1.06% and 0.59% for log and power, SGD 0.02%, noisy SGD 0.82% and
# 0.56%) and in the test RMSE the summary also names (Adam 1.03% and 0.57%, SGD at most 0.01%, noisy SGD
# 0.82% and 0.56%; final RMSEs between 0.0004 and 0.0009 in the units of $u$). The sweep puts
# the edge of the regime below $10^{-4}$: there the log form is already 14.57% worse and the power
# form 9.77% (Adam, 40 epochs), and at $10^{-2}$ the errors are more than three times larger. The
# flat orbits explain why a small regularizer costs nothing: it can move the weights along
# $(W_Q G, W_K G^{-\top})$ without changing the function.
#
# **Finding 2, unbounded growth of the unregularized norms: partly reproduced, only with injected
# noise.** With noisy SGD, $\lVert W_Q\rVert_F$ and $\lVert W_K\rVert_F$ grow by at least 0.326 and 0.377 of their start
# values beyond two standard errors and are still rising at the end (log-slopes 8.87 and 6.98 standard errors above
# 0), towards the pure-diffusion estimate of 8.23: the chain diffuses along the flat orbits, the
# non-normalizable Gibbs measure of Chapter 8 seen in a run. With Adam $\lVert W_Q\rVert_F$ shrinks (5.56 to
# 5.14) and with plain SGD neither norm moves (5.56 to 5.56), as the conservation law of Exercise 3
# predicts. Whether the source's growth appears is a property of the optimiser.
#
# **Finding 3, the regularizers contain the norms: not reproduced in the low-regularization
# regime.** The only run whose unregularized norms grow is noisy SGD, and there the regularized
# norms grow the same way (growth ratios 0.953 and 0.968 against the threshold 0.5; end norms 7.47
# and 7.50 against 7.56). The Gibbs measure exists, but its most likely norm (24.9 and 26.7) lies far
# beyond what 80 epochs reach. Under Adam and SGD there is no growth to contain. The noisy chains are
# contained at $\lambda = 10^{-3}$ (their norms shrink, to 3.85 and 4.41), but at that strength the test
# errors differ from the unregularized one by 7.37% and 12% (smaller, not equal), so it is outside
# the regime of Finding 1.
#
# **Finding 4, the unregularized gap grows while the regularized gaps stay stable and lower: not
# reproduced.** The finding is one statement of four conditions joined by "and", and no optimiser
# meets all four (conditions met: Adam 2, SGD 3, noisy SGD 2, of 4). The unregularized gap grows in
# the sense of the rule only under plain SGD (by 12% beyond two standard errors, slope 4.26 standard
# errors above 0), and there the regularized gaps are not meaningfully lower (1.07% and 0.71% below
# it, against the 5% threshold). Under Adam the unregularized gap does not keep rising (second-half
# slope $-1.35$ standard errors), and the regularized gaps are lower by 8.63% and 5.52% (beyond two
# standard errors) but at higher test losses (5.15 and 2.89 standard errors above the unregularized
# one): the lower gap comes with a worse fit, not better generalization. Under noise the
# unregularized gap does not grow and the gaps are equal within their errors. At
# $\lambda = 10^{-3}$ under noise the regularized gaps are lower at a lower test loss, outside the
# low-regularization regime.
#
# **Taken together.** At book scale (a $32\times32$ grid, 500 training samples, width 32, 80 Phase-2 epochs,
# three seeds, all **[choice]**) the accuracy statement holds for $\lambda \le 10^{-5}$; the norm growth
# is seen only with injected noise; containment and a lower gap at an equal or better fit are seen
# only at a strength that is no longer low. No single setting here shows all four findings at once.
# The source's scale, optimiser and run length are not known to this book; the larger registered
# configuration below is one place to look further.
