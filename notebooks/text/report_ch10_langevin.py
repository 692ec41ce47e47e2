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
# # Checks for Chapter 10: Langevin training of attention and LoRA
#
# This page of the Reproduction report checks what {doc}`Chapter 10 <ch10_langevin>` measures against what the papers claim. Every verdict is computed by `attnbook.claims` from the numbers, with its threshold printed; the claims ledger collects them. The first cell calls the chapter's functions from `attnbook.chapters.ch10` on the stored runs, so the objects the chapter built are here.

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
import numpy as np

from attnlib import langevin
from attnbook import experiments
from attnbook.chapters.ch10 import MODELS, shared_temperatures, temperature_runs
from attnbook.claims import ch10
from attnbook.experiments import part2

stored = temperature_runs()          # the chapter's runs langevin_temperatures_<model>, by name
temperatures = shared_temperatures(stored)

# %% [markdown]
# ## Theorem 3.3 as stated: three readings
#
# **[summary]** The SDE "converges within $\epsilon$ of the global minimum in expected time
# $O(\log(1/\epsilon))$". At a fixed temperature $s$ the expected loss cannot go below the Gibbs mean
# $F_s$, an offset $F_s - f^* \approx sD_{\mathrm{eff}}/4$ above the minimum (first section), so at fixed
# $s$ the statement can only hold for $\epsilon$ above that offset, with a constant that depends on $s$
# and that the summary does not give. This section reads the theorem three ways:
#
# 1. **as stated [summary]**: an $O(\log(1/\epsilon))$ bound with unstated, $s$-dependent constants. No
#    finite range of $\epsilon$ can confirm or refute such a bound, so it is **not testable as
#    stated**;
# 2. **its measurable consequence at fixed $s$ [summary reading]**: the Poincare inequality behind
#    the theorem makes the law of the chain converge exponentially to the Gibbs measure, so the
#    chain-mean loss should approach $F_s$ exponentially, and not like a power of $t$. Each
#    temperature run of both models (128 chains, time 100, 1001 records) is fitted by one and by two
#    exponential rates and, as the alternative, by a power-law approach $F + c(1 + t/t_0)^{-a}$ with
#    $a \le 10$ [choice] (the family's limit $a, t_0 \to \infty$ is the one-rate exponential, so a
#    larger power is an exponential in disguise), by weighted least squares with the chains'
#    standard errors (`attnbook.claims.ch10.exponential_approach`, several starts per fit). The
#    common start of the chains is deterministic: its standard error is 0 (attention) or float64
#    round-off (LoRA). A standard error at most $10^{-12}$ of the loss marks such a record, and it is
#    left out of every fit; weighted by its round-off error, it pinned the LoRA fits of the first
#    version of this page to the start. **Rule [choice]**, two measurements per curve:
#    * *the old rule*: the better exponential fit has $\chi^2$ per record at most 3 (a correct
#      model has mean 1; records of the same chains are correlated, so its spread is wide). It was
#      set after a first look at the fits, and it shows consistency only: it accepts the power-law
#      curves that two rates mimic within the errors as readily as exponential ones (calibration
#      below);
#    * *a power law excluded*: the power law's excess $\chi^2$ over the better exponential fit,
#      counted in independent records, $(\chi^2_{\mathrm{pow}} - \chi^2_{\mathrm{exp}})/\tau$, is at
#      least 9 (three standard errors for one parameter). Here $\tau$ is the number of records that
#      carry the information of one independent record: the variance of the tail average over the
#      variance of one record, both measured from the 128 independent chains. At most $-9$ excludes
#      the exponential; in between the curve is consistent with both.
#
#    Reproduced when every curve passes both; partly when the exponential fits every curve but
#    a power law is excluded at only some. This rule was written after a review had reported
#    where the runs exclude a power law. Its limit 9 and its $\tau$ were fixed by a calibration on
#    simulated curves, not by the runs' separations: exponential and power-law curves of each run's
#    own fitted shapes, with its standard errors and noise correlated along the record (an AR(1)
#    series with the run's $\tau$), in `tests/test_claims_ch10.py`, where the rule must accept at
#    least 95% of the exponential curves and call at most 5% of the power-law curves exponential.
#    The cell below repeats that calibration, prints both rules' outcomes and varies the limits;
# 3. **annealed [choice reading]**: the temperature is lowered with $\epsilon$, $s_\epsilon = 2\epsilon/D$
#    for $\epsilon \in \{0.4, 0.2, 0.1, 0.05\}$ (so the Gibbs excess $sD_{\mathrm{eff}}/4 \le \epsilon/2$), 64 chains from
#    the far start of the temperature runs, time 100; $f^*$ is the lowest of eight BFGS runs. This
#    reading asks for one constant across temperatures, which the summary does not state.
#
# **The first rule**, printed beside them: each set of times to reach $f^* + \epsilon$ (the chain-mean
# loss, eight $\epsilon$ from half the starting excess down to twice the offset; and the expected
# hitting time of single chains from the stored run `langevin_anneal_lora`) is fitted by
# $t = a + b\,h_p(\epsilon)$ with $h_p(\epsilon) = (\epsilon^{-p} - 1)/p$, which is $a + b\log(1/\epsilon)$ at $p = 0$
# and a power law for $p > 0$; the least-squares exponent $\hat p$ on $[0, 2]$ must be at most 0.25.
# It judges the shape of $t_\epsilon$ over at most one decade of $\epsilon$, and it rejects what the theorem
# predicts: on a loss that approaches its offset **exactly** exponentially, evaluated on the same
# $\epsilon$ grids, it gives the $\hat p$ printed as "null" below. It is kept as a measurement of the
# shape, not as the verdict on the theorem.

# %%
from attnbook.verdicts import verdict_table
anneal, replay, check = experiments.replay("langevin_anneal_lora", rtol=1e-9, atol=1e-12,
                                       align=experiments.leading_block)
acfg = experiments.config(anneal)
f_star_lora = float(anneal["f_star"])
print(f"{check}\nf* = {f_star_lora:.4f}")
print("1. fixed s, mean loss: eps from half the start excess down to 2 (F_s - f*)")
fixed_mean = {}
for model in MODELS:
    h = stored[f"langevin_temperatures_{model}"]
    for j, s in enumerate(temperatures):
        offset = h["tail_mean"][j] - float(h["f_star"])
        eps, t_eps = part2.reach_times(h["times"], h["loss_mean"][:, j] - float(h["f_star"]), offset)
        fixed_mean[f"{model} s = {s:g}"] = ch10.growth_exponent(eps, t_eps) if eps.size else np.nan
        start = h["loss_mean"][0, j] - float(h["f_star"])     # null: offset + (start - offset) e^-t
        null = ch10.growth_exponent(eps, np.log((start - offset) / (eps - offset))) if eps.size else np.nan
        print(f"  {model:9s} s = {s:4.2f}: offset {offset:.4f}; " + (
            f"eps {eps[0]:.3f} to {eps[-1]:.3f}, t_eps {t_eps[0]:.1f} to {t_eps[-1]:.1f},\n"
            f"    p_hat = {fixed_mean[f'{model} s = {s:g}']:.2f} (null, exactly exponential: "
            f"{null:.2f})" if eps.size else "start not above 2 x offset"))
print("2. fixed s, expected hitting time E[tau_eps] (64 chains each)")
hitting, offsets_anneal = {}, {}
for k, (eps_run, s_run) in enumerate(zip(acfg["epsilons"], acfg["temperatures"])):
    loss = anneal["loss_mean"][k]
    offsets_anneal[s_run] = loss[loss.size // 2:].mean() - f_star_lora
    eps, mean_tau = part2.expected_hitting_times(anneal["first_passage"][k],
                                                 acfg["passage_epsilons"], offsets_anneal[s_run])
    hitting[f"lora s = {s_run:.4f}"] = ch10.growth_exponent(eps, mean_tau)
    print(f"  s = {s_run:.4f}: offset {offsets_anneal[s_run]:.4f}; E[tau_eps] at eps = "
          + ", ".join(f"{e:.3f}: {t:.2f}" for e, t in zip(eps, mean_tau))
          + f"; p_hat = {hitting[f'lora s = {s_run:.4f}']:.2f}")
first_rule, readings_33 = ch10.fixed_temperature(fixed_mean, hitting)
verdict_table([("first rule", first_rule, readings_33),
               ("[summary]", ch10.log_time_as_stated())])

# %%
from attnbook.verdicts import verdict_table
from attnbook.chapters.ch10 import relaxation_fits
READING = {2: "power law excluded", 1: "consistent with both", 0: "exponential excluded"}
print("2. fixed s: the chain-mean loss against one rate, two rates and a power law (a <= "
      f"{ch10.POWER_MAX:g})")
print("                      chi^2 per record:              |   tau   (chi^2_pow - chi^2_exp) / tau")
print("                      one rate  two rates  power law | records  separation  power a  reading")
relaxation = relaxation_fits(stored)         # label -> (fit, times, standard errors)
approach_fits = {label: fit for label, (fit, _, _) in relaxation.items()}
for label, fit in approach_fits.items():
    print(f"   {label:18s} {fit.one_rate:8.2f} {fit.two_rates:10.2f} {fit.power_law:10.2f} |"
          f" {fit.correlation:7.0f} {fit.separation:11.1f} {fit.power_parameters[3]:8.2f}  "
          f"{READING[ch10.curve_level(fit)]}")
left_out = sorted({fit.deterministic for fit in approach_fits.values()})
print(f"deterministic records left out per curve: {left_out} (the common start of the chains: its "
      f"standard error is 0 or round-off, at most {ch10.SE_ROUNDOFF:g} of the loss)")
print("the rule varied:")
print("  separation limit (tau doubled or halved moves it by a factor 2): " + "; ".join(
    f"{limit:g}: power law excluded at "
    f"{sum(fit.separation >= limit for fit in approach_fits.values())} of {len(approach_fits)}, "
    f"{ch10.exponential_verdict(approach_fits, separation=limit).status}"
    for limit in (4.0, 9.0, 16.0)))
for power_max in (3.0, np.inf):
    other = {label: fit for label, (fit, _, _) in relaxation_fits(stored, power_max=power_max).items()}
    print(f"  power a <= {power_max:g}: separations " + ", ".join(
        f"{fit.separation:.1f}" for fit in other.values())
          + f"; {ch10.exponential_verdict(other).status}")
print("  old rule alone, chi^2 per record at most " + "; ".join(
    f"{limit:g}: {ch10.old_rule_verdict(approach_fits, chi2_max=limit).status}"
    for limit in (1.5, 2.0, 3.0)))
SEEDS = range(10)                           # the calibration of tests/test_claims_ch10.py
nulls = {"exponential": [], "power law": []}
print(f"calibration: {len(SEEDS)} simulated curves of each kind per run, of its fitted shapes, "
      "standard errors and tau")
print("  median separation of the simulated curves; the run's own; power law excluded among the "
      "exponential curves")
for label, (fit, times, sem) in relaxation.items():
    found = ch10.calibrate(fit, times, sem, SEEDS)
    for kind, fits in found.items():
        nulls[kind] += fits
    median = {kind: np.median([f.separation for f in fits]) for kind, fits in found.items()}
    excluded = np.mean([ch10.curve_level(f) == 2 for f in found["exponential"]])
    print(f"   {label:18s} exponential {median['exponential']:5.1f}, power law "
          f"{median['power law']:5.1f}; run {fit.separation:5.1f}; {excluded:4.0%}")
for kind, fits in nulls.items():
    levels = np.array([ch10.curve_level(f) for f in fits])
    old = np.mean([f.exponential <= ch10.CHI2_MAX for f in fits])
    print(f"  all {len(fits)} {kind} curves: power law excluded {np.mean(levels == 2):.0%}, "
          f"consistent with both {np.mean(levels == 1):.0%}, exponential excluded "
          f"{np.mean(levels == 0):.0%}; the old rule accepts {old:.0%}")
approach = ch10.exponential_verdict(approach_fits)
verdict_table([("[summary]", approach, approach.parts)])

# %%
from attnbook.verdicts import verdict_table
print("3. annealed, s = 2 eps / D")
t_reach, tau_own = [], []
for k, (eps, s_eps) in enumerate(zip(acfg["epsilons"], acfg["temperatures"])):
    excess = anneal["loss_mean"][k] - f_star_lora
    t_reach.append(langevin.hitting_times(anneal["times"], np.maximum(excess, 0.0), [eps])[0])
    passages = anneal["first_passage"][k][np.isclose(acfg["passage_epsilons"], eps)][0]
    tau_own.append(passages.mean() if np.isfinite(passages).all() else np.nan)
    print(f"  eps = {eps:5.3f}: s = {s_eps:.4f}, final excess {excess[-1]:.4f} "
          f"+- {anneal['loss_sem'][k, -1]:.4f}, t_eps = {t_reach[-1]:.1f}, "
          f"E[tau_eps] = {tau_own[-1]:.2f}")
per_halving = np.diff(t_reach) / np.log(2)
print("time per unit of log(1/eps) between successive eps (the constant b), against the lower s: "
      + ", ".join(f"s = {s:.4f}: {b:.1f}" for s, b in zip(acfg["temperatures"][1:], per_halving)))
print(f"first rule, last / first increment of t_eps = {per_halving[-1] / per_halving[0]:.2f} (it asked <= 2)")
annealed = ch10.annealed(ch10.growth_exponent(acfg["epsilons"], t_reach),
                         ch10.growth_exponent(acfg["epsilons"], tau_own))
verdict_table([("[choice]", annealed)])

# %% [markdown]
# **As stated**, Theorem 3.3 is a bound this book cannot test: its constants depend on $s$ and are
# not given. **Its measurable consequence is partly reproduced.** At every temperature of both models the
# chain-mean loss is fitted within its standard errors by two exponential rates ($\chi^2$ per record
# between 0.66 and 1.34), while one rate fails at the lower temperatures (the fast descent into
# the data valley and the slow orbit directions are two time scales). By the old rule alone the
# approach is exponential at all six, at every limit printed. The calibration shows why that is not
# enough: the old rule accepts all of the power-law curves of the runs' own shapes too. The
# separation excludes a power-law approach at attention $s = 0.02$ (18.4) and LoRA $s = 0.02$ and
# $0.05$ (20.9 and 14.6). At attention $s = 0.05$ and $0.2$ and LoRA $s = 0.2$ (2.6, $-0.2$, 3.7) the
# curves are consistent with both: there the approach is over early, or the noise is large, and even
# exactly exponential curves of those shapes exclude a power law in at most 20% of the simulations.
# No run excludes the exponential. The outcome turns on neither choice printed: the limits 4, 9 and
# 16 (or $\tau$ halved or doubled) exclude a power law at 3, 3 and 2 of the six, and the bound on the
# power barely moves the separations. At attention $s = 0.02$ and LoRA $s = 0.02$ the runs' own
# separations (18.4, 20.9) lie between the medians of the simulated power-law and exponential
# curves of their shapes (29.9 and 39.3 for the exponential ones): closer to the exponential
# curves, but not exactly two rates either.
#
# **The first rule** gives $\hat p = 0.72$ and $1.35$ (attention, $s = 0.02$ and $0.05$) and $1.57$
# (LoRA, $s = 0.02$) for the chain-mean loss, and $1.37$ and $0.93$ for the expected hitting time;
# but an exactly exponential approach on the same grids already gives the "null" values printed
# beside them, above its own 0.25 limit at two of the three temperatures. Two things bend these
# curves upward, and both are part of the theorem's setting rather than a failure of the
# dynamics: the far start gives a fast descent first, and as $\epsilon$ approaches the Gibbs offset the time
# grows like $\log(1/(\epsilon - (F_s - f^*)))$, faster than $\log(1/\epsilon)$. A shape test over one decade of
# $\epsilon$ cannot test an $O(\cdot)$ bound.
#
# **Annealed [choice]**: with $s_\epsilon = 2\epsilon/D$ every target is reached within the run, the final
# excess over $f^*$ about half of $\epsilon$ (0.143, 0.086, 0.047, 0.024), but the time per unit of
# $\log(1/\epsilon)$ grows as $s$ falls (3.5, 8.4, 11.7 at $s = 0.0364, 0.0182, 0.0091$), and the fitted
# exponents are $\hat p = 0.74$ (mean loss) and $0.76$ (expected hitting time): not logarithmic by the
# rule. The looser rule gives the same outcome (last to first increment 3.38 against 2). The
# reason the constant hides is visible above: at lower temperature the slow orbit directions relax
# more slowly (the autocorrelation times grow as $s$ falls), so the rate is not one number across
# the $\epsilon$ range. This reading asks more than the theorem (one constant for all $s$); it is
# reported as the book's row.

# %% [markdown]
# ## Theorem 3.3 of the source
#
# **[summary]** *Theorem 3.3.* Combining Theorems 3.1 and 3.2 (the regularized attention and LoRA
# losses satisfy the Villani condition), the SDE for the weights converges to within
# $\epsilon$ of the global minimum of the training loss, in expectation, in time
# $O(\log(1/\epsilon))$. The summary attributes the rate to Shi, Su and Jordan {cite}`shi2023`
# (key SSJ23 in the summary).
#
# What this chapter shows, for the book's small problems ($D = 12$ and $D = 11$):
#
# * with the log-amplified regularizer, the expected loss of 128 independent Langevin chains
#   settles, at each of three temperatures, at a long-time level $F_s$ with a standard error
#   between $5\times10^{-4}$ and $8\times10^{-3}$;
# * the approach to $F_s$ is fast at first and slow at the end, with the time to reach
#   $\epsilon$ growing roughly linearly in $\log(1/\epsilon)$ over the last stretch measured;
# * read as the summary states it, the $O(\log(1/\epsilon))$ bound has unstated, $s$-dependent
#   constants and is not testable; its measurable consequence, an exponential approach of the
#   chain-mean loss to $F_s$ at each fixed $s$, fits both models at all three temperatures (two
#   rates, $\chi^2$ per record at most 1.34), but a power-law approach is excluded at only three of
#   the six runs (attention $s = 0.02$, LoRA $s = 0.02$ and $0.05$); at the others the curves are
#   consistent with both;
# * with the temperature lowered as $s = 2\epsilon/D$ ([choice] reading), every $\epsilon$ from 0.4 to 0.05
#   is reached, but the time per unit of $\log(1/\epsilon)$ grows as $s$ falls (3.5, 8.4, 11.7);
# * the slow orbit directions decorrelate in 31 to 47 time units with weight decay (runs only 7 to 8
#   of those times long) and 11 to 25 with the mild regularizers (LoRA, $\lambda = 0.01$): the constants
#   differ, in favour of the mild forms;
# * without a regularizer the parameters drift along the symmetry orbit with no sign of a
#   limit, while all three regularizers keep them bounded.
#
# What it cannot show, and where the measurements differ from a literal reading of the
# theorem:
#
# * **Fixed $s$ gives the Gibbs mean, not the global minimum.** $F_s - f^*$ is close to
#   $sD/4$ (attention) or $sD_{\mathrm{eff}}/4$ with $D_{\mathrm{eff}}$ between 8.35 and 8.96 over the LoRA
#   runs at $s = 0.05$ and $0.2$, so
#   "within $\epsilon$ of the global minimum" needs $s$ of order $4\epsilon/D$, and at lower
#   $s$ the spectral gap can shrink (exponentially in $1/s$ across barriers, Chapter 7). The
#   theorem's $O(\log(1/\epsilon))$ hides that constant; the first measurement of $t_\epsilon$ is
#   relative to $F_s$, the annealed one relative to $f^*$.
# * **$f^*$ is the lowest of eight BFGS runs**, not a certified global minimum.
# * **No constants from the source.** The full text is not available to the project, so the rate
#   the theorem guarantees cannot be compared with the measured autocorrelation times.
# * **The scheme, not the SDE.** The runs use Euler-Maruyama at $h = 0.02$; on the LoRA model MALA
#   finds no bias of its Gibbs means at that step within the standard errors printed above.
# * **Small models, finite time.** One data set per model, $D\le 12$, time 100 (400 for the
#   norms): the unregularized drift could, in principle, stop later; it cannot, since the
#   unregularized Gibbs measure is not normalisable (Chapter 8), but the runs show only its
#   start.
