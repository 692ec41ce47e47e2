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
# # Checks for Chapter 6b: Why the finite sample slows Algorithm 1 down
#
# This page of the Reproduction report checks what {doc}`Chapter 6b <ch06b_finite_sample>` measures against what the papers claim. Every verdict is computed by `attnbook.claims` from the numbers, with its threshold printed; the claims ledger collects them. The first cell calls the chapter's functions from `attnbook.chapters.ch06b` on the chapter's stored runs (loaded by name), so the objects the chapter built are here.

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt
from matplotlib.ticker import NullFormatter

from attnlib import fitting
from attnbook import experiments
from attnbook.chapters import ch06, ch06b
from attnbook.claims import ch06b as judge
from attnbook.plotting import OKABE_ITO, figure, legend_below, use_book_style
from attnbook.tables import result_table

use_book_style()
stored = experiments.load("finite_sample_methods")     # the chapter's stored runs, by name
spectra = experiments.load("finite_sample_spectra")
config = experiments.config(stored)
n_values, seeds, methods = stored["n_values"], stored["seeds"], config["methods"]
values = stored["values"]                                # (n, seed, method, record)
lowest = ch06b.lowest_known_minimum(stored)
counts = ch06b.evaluation_counts(stored, lowest)
alg1_risk = stored["alg1_excess_risk"]                   # (n, seed, iteration)
basin_risk, ols_risk = stored["basin_excess_risk"], stored["ols_excess_risk"]
ends = stored["final_excess_risk"]
stops = ch06b.early_stops(alg1_risk, basin_risk)
smallest, _ = ch06.slowest_curvatures(spectra["hessian"], ch06b.N_SLOW)   # (noise, n, seed)

# %% [markdown]
# ## The five methods, run by run
#
# {doc}`Chapter 6b <ch06b_finite_sample>` draws the relative gap of the five methods on two data sets; the table below gives every run: the gradient evaluations each method needed to reach a relative gap of $10^{-3}$, $10^{-6}$ and $10^{-9}$ above the lowest known minimum, and its wall-clock time.
#
# The orbit method's settings were chosen on one case (chapter 5's data, $n = 500$, seed 0)
# before this grid was run; there, an orbit step of unbounded length (0.1 instead of 0.01)
# jumped to another, lower minimum, and without the warm-up the restricted Hessian at the
# spectral start is indefinite (eigenvalues $-0.017$ to $0.048$) and the method diverged.

# %%
print("gradient evaluations to a relative gap of 1e-3 / 1e-6 / 1e-9\n"
      "(- = not within the budget), and wall-clock seconds per seed")
evaluation_rows = []
for j, method in enumerate(methods):
    for i, n in enumerate(n_values):
        per_seed = [" / ".join("-" if np.isinf(counts[t][i, s, j]) else
                            f"{int(counts[t][i, s, j])}" for t in ch06b.LEVELS)
                 for s in range(seeds.size)]
        evaluation_rows.append([method if i == 0 else "", int(n), *per_seed,
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
# ## Excess risks, data set by data set
#
# The chapter's section on when Algorithm 1 is done reads a figure and a few numbers. The table gives every data set: the excess risk of the reference minimizer, of the end point of the method with the smallest relative gap (and which method), of Algorithm 1 after 1000 iterations and stopped early by the chapter's rule (the first iteration within 10% of the minimizer's excess risk), and of the least-squares fit on the same data.

# %%
print("excess risks per data set (two seeds per n): reference minimizer, best method's\n"
      "end point and its method, Alg. 1 at 1000 iterations, Alg. 1 stopped early\n"
      "(iteration; never = not within 10% in 1000 iterations), OLS fit")
risk_rows = []
for i, n in enumerate(n_values):
    for s in range(seeds.size):
        best = int(np.nanargmin(final_gap[i, s]))
        stop = stops[i * seeds.size + s]
        early = f"{alg1_risk[i, s, stop]:.3g} ({stop})" if stop is not None else "never"
        risk_rows.append([int(n), basin_risk[i, s], ends[i, s, best], methods[best],
                          alg1_risk[i, s, -1], early, ols_risk[i, s]])
display(result_table(["n", "reference", "best end", "by", "Alg. 1 end", "early stop", "OLS"],
                     risk_rows))

# %% [markdown]
# ## The claim fixed before the runs
#
# The claim and its reading were written into `attnbook.claims.ch06b` and committed before the
# grid was run **[choice]**: for each method, fit $\log(\text{evaluations to } 10^{-6}) \sim b \log n$
# over all (n, seed) and take the upper end of the 95% interval of $b$; a method qualifies only
# if it reached the gap, measured against the lowest known minimum, in every run (elsewhere its
# count is not a number: a budget is not a measurement); the claim holds if a qualifying
# method's upper end is at most 0.25. A method can converge to the minimum of its own basin while
# another method finds a lower one; so, **after seeing the results**, the chapter also judges
# the claim against the minimum of the spectral start's basin (the reference route's minimizer)
# **[choice]**, and prints both outcomes. Algorithm 1 cannot reach $10^{-6}$ within its budget at
# any $n$ here; its count is **predicted** from the smallest Hessian eigenvalue of the same data
# set (the spectra grid), $\ln 10^6 / (-\ln (1 - \eta h_{\min})^2)$ **[derived]**: the iterations
# its slowest mode needs, printed beside the fits and not judged.

# %%
from attnbook.verdicts import verdict_table
def growth(six):
    """Per method: the upper end of the fitted exponent's 95% interval (inf unless the gap was
    reached in every run) and where it was reached; prints the fits."""
    upper_ends, reached = {}, {}
    for j, method in enumerate(methods):
        done = np.isfinite(six[..., j])
        reached[method] = list(done.ravel())
        upper_ends[method] = np.inf
        if done.all():
            fit = fitting.fit_power_law(n_values, six[..., j])
            upper_ends[method] = float(fit.ci[1])
            print(f"  {method:15s} evaluations to 1e-6 ~ n^({fit.exponent:+.2f} +- "
                  f"{fit.stderr:.2f}), 95% interval [{fit.ci[0]:+.2f}, {fit.ci[1]:+.2f}]")
        else:
            missed = sorted(set(int(n) for n in n_values[np.nonzero(~done)[0]]))
            print(f"  {method:15s} missed the gap in {int((~done).sum())} of {done.size} runs "
                  f"(n = {missed})")
    return upper_ends, reached


print("against the lowest known minimum (the rule fixed before the runs):")
primary = judge.n_free_method(*growth(counts[1e-6]))
print("against the minimum of the spectral start's basin (the reference route's) [choice]:")
six_basin = ch06b.evaluations_to(stored, 1e-6, stored["basin_value"])
secondary = judge.n_free_method(*growth(six_basin))
predicted_alg1 = ch06.iterations_to_shrink(stored["step"], smallest[0], factor=1e6)
fit = fitting.fit_power_law(n_values, predicted_alg1)
print(f"Algorithm 1, predicted from h_min: {' / '.join(f'{v:.2g}' for v in predicted_alg1.mean(1))} "
      f"iterations; ~ n^({fit.exponent:+.2f} +- {fit.stderr:.2f}) [derived, not judged]")
verdict_table([("[choice]", primary), ("[choice]", secondary)])

# %% mystnb={"figure": {"caption": "Gradient evaluations to a gap of $10^{-6}$ of the initial gap above the spectral start's basin minimum, against $n$, for the runs that reached it (one marker per seed), and Algorithm 1's iterations predicted from the smallest Hessian eigenvalue (dashed); the dotted line has slope 0.25.", "name": "fig-ch06b-methods"}, "image": {"alt": "Log-log plot of evaluation counts against n: one marker series per method, a dashed rising line for Algorithm 1's prediction and a dotted reference line of slope one quarter."}} tags=["hide-input"]
METHOD_STYLE = {"algorithm1": ("black", "o"), "nesterov": (OKABE_ITO["orange"], "s"),
                "newton_polish": (OKABE_ITO["bluish green"], "^"),
                "lbfgs": (OKABE_ITO["blue"], "D"), "orbit_nesterov": (OKABE_ITO["vermillion"], "v")}
fig, ax = figure(width=6.4, height=4.2)
for j, method in enumerate(methods):
    colour, marker = METHOD_STYLE[method]
    done = np.isfinite(six_basin[..., j])
    if done.any():
        ax.plot(np.repeat(n_values, seeds.size)[done.ravel()], six_basin[..., j][done], marker,
                color=colour, ms=5, label=method)
ax.plot(n_values, predicted_alg1.mean(1), "--", color="black",
        label="Algorithm 1, predicted from $h_{\\min}$")
ax.plot(n_values, 100 * (n_values / n_values[0]) ** 0.25, ":", color="grey", label="slope 0.25")
ax.set(xscale="log", yscale="log", xlabel="sample size $n$",
       ylabel="gradient evaluations to a gap of $10^{-6}$")
ax.set_xticks(n_values, [str(n) for n in n_values])
ax.xaxis.set_minor_formatter(NullFormatter())
legend_below(fig, ncol=3)
plt.show()

# %% [markdown]
# {numref}`fig-ch06b-methods` and the tables separate the methods:
#
# * **Algorithm 1** does not come within $10^{-3}$ of its initial gap in 1000 iterations at any
#   $n$ (the smallest relative gap it reaches is 0.3 to 0.8). Its slowest mode would need
#   $6.6\times10^4$ to $1.9\times10^6$ iterations for a factor $10^6$ (the prediction from
#   $h_{\min}$, growing like $n^{0.83 \pm 0.19}$).
# * **Nesterov** with the curvature step and the **Newton polish** after 200 Algorithm 1
#   iterations rarely end at the reference minimum: Nesterov reached $10^{-6}$ in one run of
#   twelve ($n = 500$, seed 0, chapter 5's case), the polish in none. Both mostly end far from it,
#   0.67 to 2.3 away with relative gaps of $6\times10^{-3}$ to $9\times10^{-2}$: in other basins,
#   or still on the way when the budget ran out (the runs do not tell which). Chapter 5's polish
#   started after 2000 Algorithm 1 iterations, inside the basin; after 200 it is not.
# * **L-BFGS** reached $10^{-9}$ of the gap above the spectral start's basin minimum in every run,
#   in 249 to 1471 evaluations, ending within $5\times10^{-4}$ of the reference minimizer. At
#   $n = 4000$ that took 198 to 294 s of wall-clock, against 216 to 228 s for Algorithm 1's 1000
#   iterations, which closed less than a third of the gap.
# * The **orbit-aware method** reached $10^{-6}$ in 5 runs of 12. In one ($n = 2000$, seed 0) it
#   found a minimum below the reference route's, 2.2 away; in the others it ended elsewhere, 1.0
#   to 2.2 away. Its Newton steps along the orbit do what they are built for near a
#   minimizer, but its curvature step across the orbit, like chapter 5's, often leaves the basin
#   during the warm-up.
#
# The claim fixed before the runs does not hold in either reading: against the lowest known
# minimum no method reached $10^{-6}$ in every run (L-BFGS missed only at $n = 2000$, seed 0,
# where the orbit method's lower minimum sets the gap), and against the spectral start's basin
# minimum the upper end of L-BFGS's exponent interval is 0.53, above 0.25. What the runs do
# show is that L-BFGS's count grows much more slowly than Algorithm 1's ($n^{0.30 \pm 0.10}$
# measured, against $n^{0.83}$ predicted for Algorithm 1's slowest mode), and that it is the one
# method here that reliably converges to the spectral start's basin minimum.
