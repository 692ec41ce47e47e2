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
# # Checks for Chapter 9: LoRA, scale redundancy and its cure
#
# This page of the Reproduction report checks what {doc}`Chapter 9 <ch09_lora>` measures against what the papers claim. Every verdict is computed by `attnbook.claims` from the numbers, with its threshold printed; the claims ledger collects them. The first cell calls the chapter's functions from `attnbook.chapters.ch09` (and those it shares with Chapter 8, from `attnbook.chapters.ch08`), the ones the chapter itself calls, so the objects the chapter built (its problem, regularizers, balanced stationary point and crossover radii) are here.

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
import math

import numpy as np

from attnlib import villani
from attnlib.regularizers import Regularizer
from attnbook.chapters.ch08 import TEMPERATURES, orbit_crossover_radii, regularizers
from attnbook.chapters.ch09 import BOUND_SEED, balanced_stationary_point, lora_problem
from attnbook.claims import ch09
from attnbook.experiments import format_deviation, part2
from attnbook.plotting import SERIES

problem = lora_problem()
_, theta_star = balanced_stationary_point(problem)
regs, temperatures = regularizers(), TEMPERATURES
crossovers = orbit_crossover_radii(villani.orbit_constants(problem, theta_star), regs,
                                   temperatures)

# %% [markdown]
# ## Other data and sizes
#
# The summary says the results hold "for any data distribution and any network size" [summary]. As for
# attention in Chapter 8, one instance cannot show that; a grid of instances can look for a
# counterexample. **[choice]** Nine LoRA instances (`attnbook.experiments.part2.LORA_INSTANCE_GRID`):
# this chapter's ($n = 20$, $d = 3$, $m = 8$, $r = 2$, Gaussian inputs), six that each change one size
# ($n = 40$; $d = 4$; $d = 5$; $m = 16$; $r = 1$; $r = 3$), and two that change the law of the inputs to
# a heavy-tailed Student $t_3$ and to a uniform law (both of unit variance), with the same random seed. On
# each, with the log and power forms at $\lambda = 0.01$ and $s = 1$: the decisive crossover on the
# orbit through a stationary point of the data loss, and the radius beyond
# which the every-direction bound $B$ is positive, with that instance's constants $C$ and $C'$ and its
# larger block. The stationary point is found from the weight-decay warm start by a trust-region
# least-squares fit of the residuals followed by the BFGS polish; where that stalls, by the polish
# alone, then by the fit from the teacher (`part2.lora_stationary_point`): the least-squares step
# first, because its few Gauss-Newton-like steps reach the same point on every CPU tried, while
# hundreds of BFGS iterations can end at another stationary point when round-off differs.
# Three instances **interpolate**: a rank-$r$ update of an $m \times d$ matrix has
# $r(m + d - r)$ degrees of freedom, more than the $n = 20$ samples at $d = 5$ (22), $m = 16$ (34)
# and $r = 3$ (24). There the data are fit exactly, the global minima form a continuum rather than
# one $GL(r)$ orbit, and the crossover depends on which minimum the solver reaches; it is printed
# with one decimal and a "~". **Rule [choice]**, Chapter 8's: every crossover at most $10^{300}$ and every bound
# radius finite (at most $10^{10^5}$). An instance where no stationary point is found is not tested,
# and the verdict then cannot be more than "partly".

# %%
from attnbook.tables import result_table
from attnbook.verdicts import verdict_table
mild_forms = {"log": regs["log"], "power": regs["power"]}
lora_evidence, lora_grad_norms, lora_untested = part2.lora_grid_evidence(mild_forms, 1.0)
rows = []
for label, values in lora_evidence.items():
    # an interpolating instance's crossover depends on which global minimum was reached:
    # one decimal, with "~" (the tests do not compare it digit for digit)
    orbit_format = "~10^{:.1f}" if label.endswith("(interpolates)") else "10^{:.2f}"
    rows.append([label, format_deviation(lora_grad_norms[label], resolution=1e-7)] + [
        text for orbit, bound in values.values()
        for text in (orbit_format.format(orbit), f"10^{bound:.1f}")])
rows += [[label, f"not tested: {reason}", "", "", "", ""] for label, reason in lora_untested.items()]
display(result_table(["instance", "||grad L(theta*)||", "log: orbit crossover", "log: bound > 0 beyond",
                      "power: orbit crossover", "power: bound > 0 beyond"], rows))
lora_any, lora_any_parts = ch09.lora_any_data_and_size(lora_evidence, lora_untested)
verdict_table([("[summary]", lora_any, lora_any_parts)])

# %% [markdown]
# A stationary point was found on all nine instances, and on each both pieces of evidence hold:
# the log form's decisive crossovers lie between $10^{4.91}$ ($d = 4$) and $10^{14.99}$ (Student
# $t_3$ inputs), the power form's between about $10^{1.9}$ ($d = 5$, an interpolating instance) and
# $10^{3.08}$, and the every-direction bound turns positive at a finite radius on every instance
# ($10^{322.9}$ to $10^{561.1}$ for the log form, near $10^{6.5}$ for the power form). On the three
# interpolating instances the printed crossover belongs to the minimum the solver reached; on other
# CPUs the $d = 5$ one lands between $10^{5.6}$ and $10^{5.8}$ (log form), far inside the rule, so the
# verdict does not turn on it. As in Chapter 8, nine instances are examples, not "any" data and size.

# %% [markdown]
# ## The argument in every direction, checked
#
# As for attention (the report page for Chapter 8), the cell below checks the inequalities of the
# argument in every direction for LoRA at 40 random parameter points, eight at each of five scales
# (0.03 to 30), with the two blocks unbalanced by a random factor between $e^{-2}$ and $e^2$: the
# gradient and Laplacian bounds of the chapter (ratios at most 1), and $\mathcal V_s - B \ge 0$ for
# weight decay, the log and the power form at $\lambda = 0.01$ and at strong strengths (200 for
# weight decay, 50 for the mild forms), at $s \in \{0.1, 1, 10\}$.

# %%
C_grad, C_lap = problem.derivative_constants()
rng_bound = np.random.default_rng(BOUND_SEED)
points = []
for scale in (0.03, 0.3, 1.0, 3.0, 30.0):
    for _ in range(8):
        theta_b = scale * rng_bound.standard_normal(problem.dim)
        theta_b[: problem.block_dims[0]] *= np.exp(rng_bound.uniform(-2, 2))   # unbalanced blocks
        points.append(theta_b)
strong = {"weight_decay": Regularizer("weight_decay", 200.0), "log": Regularizer("log", 50.0),
          "power": Regularizer("power", 50.0, eps=0.5)}
pairs = [(name, regs[name]) for name in ("weight_decay", "log", "power")] + list(strong.items())
check = villani.every_direction_check(problem, np.array(points), pairs, [0.1, 1.0, 10.0],
                                 grad_constant=C_grad, laplacian_constant=C_lap)

# %%
print(f"constants of this problem: C = {C_grad:.1f}, C' = {C_lap:.0f}")
print("over 40 random points:")
print(f"  max ||grad_U L|| / (C ||V||) (and U <-> V) = {check.grad_ratio:.3f}")
print(f"  max |Delta_U L| / (C' ||V||^2) (and U <-> V) = {check.laplacian_ratio:.2e}")
print("min of V_s - B(t) over points, s in {0.1, 1, 10}, lambda in {0.01, strong}:")
print("  " + ", ".join(f"{SERIES[name]['label']} {value:.3g}"
                       for name, value in check.worst_margin.items()) + "  (>= 0 required)")
print(f"B > 0 at {check.positive} of the checks")

# %% [markdown]
# Every inequality holds at every random point: the ratios are at most 0.109 (gradient) and
# $1.24\times10^{-2}$ (Laplacian), so the LoRA constants are loose by one to two orders of magnitude,
# and $\mathcal V_s - B$ is at least 1.63 over all points, temperatures and strengths, with $B > 0$ at 283 of
# the checks. As for attention, the bound proves the condition in every direction for the log and
# power forms, with constants too crude to say where it starts to hold.

# %% [markdown]
# ## Theorem 3.2 and this chapter's evidence
#
# **Theorem 3.2** [summary]: the regularized losses of a depth-2 neural network under the LoRA
# parametrization (the source's Definitions 2.6 and 2.7) satisfy the Villani condition, with the
# log-amplified or super-quadratic regularizer, a "specific type" of mild regularization (the wording "any mild
# regularization" attributed to the abstract could not be checked against the full text),
# and with no assumption on the data or the width. The summary presents this as the
# explanation of why LoRA trains despite its flat, scale-redundant landscape: mild regularization
# breaks the redundancy and makes the loss confining [summary].
#
# What this chapter shows, for one synthetic instance of the book's model [choice]:
#
# * the $GL(r)$ symmetry holds to rounding error, and the unregularized partition function grows
#   without bound while every regularizer makes it converge;
# * on the flat set $V = 0$ the data loss is constant, but its gradient is not zero: the Villani
#   quantity there scales like $\rho^2$ with a sign set by $s$ against $c_1/c_2$;
# * on the orbit through a stationary point, the closed form of Chapter 8 holds (checked against
#   direct evaluation). Weight decay fails above $s = 4\lambda^2\min(q/a, k/b)$, and the mild regularizers
#   pass only beyond a crossover at each end of the orbit, growing like $e^{\sqrt{s a/q}/(4\lambda)}$ as
#   $\rho \to \infty$ and $e^{\sqrt{s b/k}/(4\lambda)}$ as $\rho \to 0$ (log form), or like $(s a)^{1/(2\varepsilon)}$ and
#   $(s b)^{1/(2\varepsilon)}$ (power form). The larger one decides; here it is the $\rho \to 0$ end
#   ($10^{13.42}$ for the log form at $s = 1$, $\lambda = 0.01$, on the orbit through the balanced $\theta^\star$). That
#   radius depends on where the orbit is entered; the norm of the larger block at the crossover does not
#   along one $\rho$-curve, and over the whole $GL(2)$ orbit it runs from $10^{10.97}$ to $10^{17.95}$
#   ($10^{13.86}$ at $\theta^\star$), against $10^{16.31}$ to $10^{24.20}$ for attention: lower at the
#   chapters' points and at both ends of the ranges, but the ranges overlap;
# * a weight-decay minimizer is exactly balanced, $U^\top U = VV^\top$, to the accuracy of the
#   optimizer (printed deviations below $2\times10^{-7}$).
#
# Limits: one orbit through one stationary point of one small problem is not a proof of a
# statement about all directions (the argument of Chapter 8 carries over, as the chapter sketches, and its inequalities hold at
# the 40 random points checked above; the grid of data laws and sizes above covers nine instances, not every one); the model is the book's
# reading of the source's definitions; the source states its results for depth-2 networks only
# [summary];
# and, as in Chapter 8, the crossover radii show that the Villani condition is decided at
# distances no training run visits, while the Poincare inequality itself already holds with weight
# decay by the bounded-perturbation argument.

# %% [markdown]
# The verdict on Theorem 3.2 covers what this chapter measures: on the orbit through the stationary
# point of this instance, the Villani quantity with the log and power forms ($\lambda = 0.01$) must turn
# positive within the evaluated range ($\log_{10}$ of the decisive crossover at most 300, this book's
# **[choice]**, as in Chapter 8). As in Chapter 8, the second part asks the inequalities of the argument in every direction to hold
# at every random point ($\mathcal V_s - B \ge 0$, log and power forms).
#

# %%
from attnbook.verdicts import verdict_table
mild = [(name, s) for name in ("log", "power") for s in temperatures]
theorem_32, parts_32 = ch09.theorem_32(
    {f"{name} s = {s:g}": crossovers[(name, s)].decisive / math.log(10) for name, s in mild},
    {name: check.worst_margin[name] for name in ("log", "power")})
verdict_table([("[summary]", theorem_32, parts_32)])
