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
# # Chapter 9: LoRA, scale redundancy and its cure
#
# :::{admonition} Overview
# The second model of {cite}`frangi2026` is a depth-2 network fine-tuned through a low-rank
# update $UV$, as in LoRA {cite}`hu2022lora`. This chapter repeats Chapter 8's steps for it: the
# symmetry $(U, V) \to (UG, G^{-1}V)$, the missing Gibbs measure, and the Villani quantity on the
# orbit through a stationary point. It adds what attention lacks: the flat set $V = 0$, and weight
# decay's exactly balanced minimizers, $U^\top U = VV^\top$.
#
# **The answer.** LoRA behaves like attention: mild regularization makes its loss Villani only far
# out along the orbit, beyond a crossover radius no trained point reaches. On the flat set $V = 0$
# the data loss itself, not the regularizer, sets the sign of the Villani quantity.
#
# **You need** Chapters 7 and 8 and a $\tanh$ network. **Time:** about 2.5 hours, with the three
# exercises. Optional on a first reading: "Villani is sufficient, not necessary".
# :::
#
# :::{dropdown} What the papers claim
# - **[summary]** LoRA writes $W' = W_{\mathrm{pre}} + \alpha BA$; the invariance $A \to cA$,
#   $B \to B/c$ makes the landscape "flat".
# - **[summary]** Theorem 3.2: the LoRA loss with a mild regularizer on each factor is a Villani
#   function, for any data distribution and any network size.
# - The source's Definitions 2.6 and 2.7 of the model are not available to this book.
# :::
#
# :::{dropdown} This book's choices
# - **[choice]** The model $\hat y = a^\top\tanh((W_{\mathrm{pre}} + UV)x)$ with frozen $a$ and
#   $W_{\mathrm{pre}}$, on a synthetic problem with $D = 22$ parameters ("The model and its scale
#   redundancy").
# - **[choice]** The stationary point reported: the balanced point of the polished orbit ("The orbit
#   through a stationary point").
# - **[choice]** The models compared by the norm $N$ of the larger block at the decisive crossover,
#   over 90 angles and steps of 0.25 in $\delta$ up to $B = 6$ ("Comparing with attention").
# :::

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import numpy as np

from attnlib import villani
from attnlib.regularizers import Regularizer
from attnbook.chapters.ch08 import (LAM, TEMPERATURES, attention_problem,
                                    attention_stationary_point, closed_form_gaps, crossover_table,
                                    laplacian_law_fit, log10_holley_stroock_bound,
                                    log_partition_curves, orbit_crossover_radii, regularizers)
from attnbook.chapters.ch09 import (ORBIT_BOUNDS, balance_deviation, balanced_stationary_point,
                                    comparison_text, flat_constants, flat_ray, flat_table,
                                    log10_block_norm, lora_problem, orbit_grid, orbit_ranges,
                                    reduction_gap, screen_orbit, symmetry_changes)
from attnbook.experiments import format_deviation
from attnbook.plotting import (OKABE_ITO, SERIES, figure, legend_below, orbit_schematic, plot_series,
                              use_book_style)
from attnbook.tables import result_table

use_book_style()

# %% [markdown]
# ## The model and its scale redundancy
#
# LoRA adapts a pretrained weight matrix by a low-rank product, $W' = W_{\mathrm{pre}} + \alpha BA$,
# and rescaling $A \to cA$, $B \to B/c$ leaves the product unchanged, so the landscape is flat
# along whole curves. The book's model is
#
# $$
# \begin{aligned}
# \hat y(x) &= a^\top \tanh\big((W_{\mathrm{pre}} + UV)\,x\big),\\
# f(U, V) &= \frac{1}{2n}\sum_{i=1}^n (\hat y(x_i) - y_i)^2 + R(U) + R(V),
# \end{aligned}
# $$ (eq-ch09-model)
#
# with frozen $a \in \mathbb{R}^{m}$ and $W_{\mathrm{pre}} \in \mathbb{R}^{m\times d}$, and trained
# $U \in \mathbb{R}^{m\times r}$, $V \in \mathbb{R}^{r\times d}$. (The notation page calls these
# $U_{\mathrm{lo}}, V_{\mathrm{lo}}$ where they meet Part I; in this chapter they are just $U, V$.) The data
# loss in {eq}`eq-ch09-model` depends on $UV$ only, so $L(UG, G^{-1}V) = L(U, V)$ for every $G \in GL(r)$: the loss is constant on the orbits of
# the general linear group. We write $\rho$ for the scale of the orbit $(\rho U, V/\rho)$, because $r$ is the rank.
#
# We work with a small synthetic problem: $n = 20$ samples in $d = 3$, width $m = 8$, rank $r = 2$
# ($D = r(m + d) = 22$ parameters). The targets come from a teacher rank-2 update plus noise.

# %%
problem = lora_problem()       # n = 20 in d = 3, width m = 8, rank r = 2
print(f"D = r (m + d) = {problem.dim} parameters")
changes = symmetry_changes(problem, lam=0.01)      # 4 random G in GL(2)
for cond, _, decay_change in changes:
    print(f"cond(G) = {cond:5.2f}: L + weight decay moves by "
          f"{decay_change:.3g}")

# %% mystnb={"code_prompt_show": "Check: the data loss does not move: show {type}"} tags=["hide-cell"]
for cond, relative, _ in changes:
    print(f"cond(G) = {cond:5.2f}: relative change of L {format_deviation(relative)}")

# %% [markdown]
# ## The partition function diverges
#
# Because $\tanh$ is bounded, $\lvert\hat y\rvert \le \lVert a\rVert_1$ and the data loss is bounded by
# $\frac{1}{2n}\sum_i(\lVert a\rVert_1 + \lvert y_i\rvert)^2$. As in Chapter 8, $e^{-2L/s}$ is bounded below by a
# positive constant, so $\int e^{-2L/s} = \infty$ and the unregularized Gibbs measure does not exist. The radial estimate of $Z_R = \int_{\lVert\theta\rVert\le R} e^{-2f/s}$ (200 directions,
# $s = 1$, $\lambda = 0.1$ for the regularizers) shows it ({numref}`fig-ch09-partition`): without a
# regularizer $\log Z_R$ keeps growing, with any of the three it levels off.

# %%
s_partition, radii = 1.0, np.linspace(0.0, 12.0, 61)
log_z = log_partition_curves(problem, s_partition, radii)  # lambda = 0.1
sup_L = 0.5 * np.mean((np.abs(problem.a).sum() + np.abs(problem.y)) ** 2)
print(f"bound sup L <= {sup_L:.3f}")
result_table(["regularizer", "log Z_R at R = 3", "R = 6", "R = 12"],
             [[SERIES[name]["label"], *values[[15, 30, 60]]]
              for name, values in log_z.items()], number_format=".2f")

# %% mystnb={"figure": {"caption": "The log partition function $\\log Z_R$ over balls of growing radius $R$ at $s = 1$ (LoRA): without a regularizer it keeps growing, with any of the three regularizers it levels off.", "name": "fig-ch09-partition"}, "image": {"alt": "Log Z_R against the radius R for no regularizer, weight decay, log and power regularizers, each with its own colour, line style and marker."}} tags=["hide-input"]
fig, ax = figure()
for name, values in log_z.items():
    plot_series(ax, radii[1:], values[1:], name)
ax.set_xlabel(r"radius $R$ of the ball in $\theta = (U, V)$")
ax.set_ylabel(r"$\log Z_R$")
ax.set_title(f"LoRA: partition function over growing balls, $s = {s_partition:g}$")
ax.legend()
plt.show()

# %% [markdown]
# ## The flat set $V = 0$
#
# On $V = 0$ the network is the pretrained one, whatever $U$ is: the data loss is constant on
# the whole $mr$-dimensional subspace $\{V = 0\}$. There $\nabla_U L = 0$, but
# $\nabla_V L = U^\top \nabla_W L(W_{\mathrm{pre}})$ is not zero. Along $U = \rho U_0$, $V = 0$, the $V$-block of the
# Hessian sees $U$ twice and the $U$-block vanishes, so
#
# $$
# \begin{aligned}
# &\lVert\nabla L\rVert^2 = c_1\rho^2,\qquad \Delta L = c_2\rho^2,\\
# &\frac{\mathcal V_s}{\rho^2} = \frac{c_1}{s} - c_2 + (\text{regularizer terms}),
# \end{aligned}
# $$ (eq-ch09-flat)
#
# with $c_1 = \lVert U_0^\top\nabla_W L(W_{\mathrm{pre}})\rVert_F^2$ and $c_2$ the $V$-block Laplacian at $\rho = 1$. Unlike
# on the orbit through a stationary point, the data loss itself pushes here. For
# $s < c_1/c_2$ the unregularized quantity already tends to $+\infty$ along this ray, and for larger
# $s$ it tends to $-\infty$. Weight decay adds $4\lambda^2\lVert U_0\rVert^2/s$ to the limit, and the mild
# regularizers add a term that grows without bound.

# %%
base = flat_ray(problem)          # (U_0, 0) with ||U_0||_F = 1
c1, c2 = flat_constants(problem, base)
print(f"c1 = {c1:.4g}, c2 = {c2:.4g}, c1 / c2 = {c1 / c2:.4g}")

# %%
flat_table(problem, base, rhos=(1.0, 10.0, 1e3, 1e5))  # along rho (U_0, 0)

# %%
mild = [Regularizer(form, 0.01) for form in ("weight_decay", "log")]
flat_losses = [problem] + [problem.with_regularizer(r) for r in mild]
for s in (0.5 * c1 / c2, 2 * c1 / c2):
    values = [villani.villani_quantity(loss, 1e3 * base, s).value / 1e6
              for loss in flat_losses]
    print(f"s = {s:.4g}: V_s / rho^2 at rho = 1e3 "
          "(none, weight decay, log):")
    print("  " + ", ".join(f"{v:.4g}" for v in values))

# %% [markdown]
# Here $c_1/c_2 \approx 174.5$. The columns of the table are constant over five decades of $\rho$,
# as the scaling {eq}`eq-ch09-flat` says. At $\rho = 10^3$ the sign of $\mathcal V_s$ flips between $s = c_1/(2c_2)$ and
# $s = 2c_1/c_2$ for all three losses, because at $\lambda = 0.01$ the regularizer terms are still small
# there.

# %% [markdown]
# ## The orbit through a stationary point
#
# As in Chapter 8, the decisive orbit passes through a stationary point $(U^\star, V^\star)$ of the
# data loss. The redundancy makes this point hard for BFGS to find: for some random seeds the iterates
# drift along the orbit and BFGS stops on precision loss. So we first minimize with a tiny weight
# decay ($\lambda = 10^{-3}$), which gives a well-conditioned, balanced start, and then polish without
# it. The polish is not a small correction: it moves the product $UV$ (see the output below) and
# ends at an unbalanced point whose place along the flat orbit depends on round-off. Every point of the orbit is an equally good
# stationary point, so we take the one the product alone fixes: the balanced point
# $\theta^\star = (PS^{1/2}, S^{1/2}Q^\top)$ of the SVD $UV = PSQ^\top$, where
# $U^{\star\top} U^\star = V^\star V^{\star\top}$.
# On the orbit $(\rho U^\star, V^\star/\rho)$ the data Laplacian is $a\rho^2 + b/\rho^2$, now with
# $a = \Delta_V L$, $b = \Delta_U L$, $q = \lVert U^\star\rVert_F^2$, $k = \lVert V^\star\rVert_F^2$. The
# same closed form and the same crossover formulas apply.

# %%
warm, theta_star = balanced_stationary_point(problem)  # warm start, polish
consts = villani.orbit_constants(problem, theta_star)
print(f"L(theta*) = {problem.data_loss(theta_star):.3e}")
print(f"a = {consts.a:.4f}, b = {consts.b:.4f}, "
      f"q = {consts.q:.4f}, k = {consts.k:.4f}")

# %%
(U_w, V_w), (U_s, V_s) = problem.unpack(warm), problem.unpack(theta_star)
moved = np.linalg.norm(U_s @ V_s - U_w @ V_w)
print(f"the polish moves U V by {moved:.2f} (Frobenius)")
print(f"||U||_F^2, ||V||_F^2: warm start {np.sum(U_w**2):.2f}, "
      f"{np.sum(V_w**2):.2f}; theta* (balanced) {np.sum(U_s**2):.2f}, "
      f"{np.sum(V_s**2):.2f}")

# %% mystnb={"code_prompt_show": "Checks of the closed form: show {type}"} tags=["hide-cell"]
grad_norm = np.linalg.norm(problem.gradient(theta_star))
print(f"||grad L(theta*)|| {format_deviation(grad_norm, resolution=1e-7)}")
a_fit, b_fit, resid = laplacian_law_fit(problem, theta_star, np.logspace(-2, 2, 9))
print(f"fit over rho in [1e-2, 1e2]: a = {a_fit:.6f}, b = {b_fit:.6f}")
print(f"  max relative residual {format_deviation(resid)}")
gaps = [gap for _, gap in closed_form_gaps(problem, theta_star, consts, regularizers(LAM),
                                           np.log([0.1, 1.0, 10.0, 100.0])).values()]
print("closed form vs direct evaluation (s = 1, every regularizer):")
print(f"  at rho = 0.1, 1, 10, 100, max relative gap {format_deviation(max(gaps), resolution=1e-9)}")

# %% [markdown]
# The warm start is balanced, exactly. Write $G = \nabla_W L$ at $W = W_{\mathrm{pre}} + UV$.
# With weight decay the gradients are $\nabla_U f = GV^\top + 2\lambda U$ and
# $\nabla_V f = U^\top G + 2\lambda V$, so
#
# $$
# U^\top\nabla_U f - (\nabla_V f)\,V^\top = 2\lambda\,(U^\top U - VV^\top)
# $$ (eq-ch09-balance)
#
# at every point, and at a stationary point $U^\top U = VV^\top$ with no $O(\lambda)$ correction. At a
# numerical minimizer the left side bounds the deviation by
# $(\lVert U\rVert_F\lVert\nabla_U f\rVert_F + \lVert V\rVert_F\lVert\nabla_V f\rVert_F)/(2\lambda)$.

# %%
for lam_balance in (1e-3, 1e-1):
    deviation, bound, scale = balance_deviation(problem, lam_balance)
    print(f"weight decay lambda = {lam_balance:g}: "
          f"max |U^T U - V V^T| = {deviation:.1e}")
    print(f"  (bound from the residual gradient {bound:.1e}; "
          f"||U^T U||_max = {scale:.3f})")

# %% [markdown]
# ### The crossover radii at both ends
#
# As in Chapter 8 the orbit has two ends: as $\rho \to 0$ the blocks swap roles and the formulas
# hold with $(a, q)$ replaced by $(b, k)$ (`consts.swapped()`). The quantity is positive only
# outside both crossovers, so the larger decides (Chapter 8, Exercise 3). {numref}`fig-ch09-villani-orbit` shows
# $\mathcal V_s/\max(\rho^2, \rho^{-2})$, which has the sign of $\mathcal V_s$ and a finite scale at both ends.

# %%
lam, regs, temperatures = LAM, regularizers(LAM), TEMPERATURES
print(f"weight decay, lambda = {lam}: threshold 4 lambda^2 q / a = "
      f"{villani.weight_decay_threshold(consts, lam):.3g} (rho -> oo),")
low_end = villani.weight_decay_threshold(consts.swapped(), lam)
print(f"  4 lambda^2 k / b = {low_end:.3g} (rho -> 0)")

# %%
print("log10 rho* as rho -> oo and log10(1/rho*) as rho -> 0, "
      "with leading orders:")
crossovers = orbit_crossover_radii(consts, regs, temperatures)  # (form, s)
crossover_table(consts, regs, crossovers)

# %% mystnb={"figure": {"caption": "The Villani quantity $\\mathcal V_s/\\max(\\rho^2, \\rho^{-2})$ along the symmetry orbit against $\\log_{10}\\rho$ at $s = 0.01, 1, 100$ (LoRA), on a symmetric log scale; dotted verticals mark the crossovers of the log and power regularizers at both ends of the orbit.", "name": "fig-ch09-villani-orbit"}, "image": {"alt": "Three panels, one per temperature, of V_s over rho squared against log10 rho for the four regularizers; weight decay stays negative, log and power turn positive after dotted crossover lines."}} tags=["hide-input"]
fig, axes = figure(1, 3, height=2.9)
for ax, s in zip(axes, temperatures):
    right = max(2.0, 1.3 * max(crossovers["log", s].up, crossovers["power", s].up) / math.log(10))
    left = max(2.0, 1.3 * max(crossovers["log", s].down, crossovers["power", s].down) / math.log(10))
    log10_rho = np.linspace(-left, right, 400)
    for name, reg in regs.items():
        plot_series(ax, log10_rho, villani.orbit_villani_scaled(consts, reg, s, log10_rho * math.log(10)),
                    name)
    for name, colour in (("log", SERIES["log"]["color"]), ("power", SERIES["power"]["color"])):
        for end in (crossovers[name, s].up, -crossovers[name, s].down):
            ax.axvline(end / math.log(10), color=colour, ls=":", lw=1)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(-100, 1000)
    ax.set_xlabel(r"$\log_{10}\rho$")
    ax.set_title(f"$s = {s:g}$")
axes[0].set_ylabel(r"$\mathcal{V}_s / \max(\rho^2, \rho^{-2})$ on $(\rho U^\star, V^\star/\rho)$")
legend_below(fig, ncol=4)
plt.show()

# %% [markdown]
# At $s = 0.01$ both mild regularizers are already positive close to $\rho = 1$ on the $\rho \to \infty$
# side, and the leading-order formulas, which assume $\rho^\star \gg 1$, are off there. At $s = 1$ and
# $s = 100$ they agree with the exact roots to all the digits shown, at both ends.
#
# Here the $\rho \to 0$ end decides at every temperature: $b/k$ is about seven times $a/q$ (constants
# in the output above), and the log form's crossover grows like $\sqrt{s\,b/k}/(4\lambda)$ on that side. For the log
# form at $s = 1$ the LoRA crossover on the orbit through $\theta^\star$ is therefore $10^{13.42}$ (that is,
# $\rho_\star = 10^{-13.42}$), not the $10^{4.56}$ of the other end; at $s = 100$ it is $10^{140.13}$.
#
# {numref}`fig-ch09-orbit-schematic` is Chapter 8's schematic for this orbit, drawn from this
# chapter's numbers: the line through the balanced point $\theta^\star$ in the plane of $\lVert U\rVert_F$ and
# $\lVert V\rVert_F$, on which the data loss is constant. The dashed stretch, where $\mathcal V_s < 0$, now
# reaches much further towards large $\lVert V\rVert_F$ (the $\rho \to 0$ end, $\rho_\star = 10^{-13.42}$) than
# towards large $\lVert U\rVert_F$ ($\rho^\star = 10^{4.56}$): the far circle is the one that decides.

# %% mystnb={"code_prompt_show": "Drawing code: show {type}", "figure": {"caption": "Schematic, drawn to scale from this chapter's numbers: the LoRA orbit through the balanced stationary point in the plane of the block norms, on which the data loss is constant, with the log regularizer's crossovers beyond which its gradient dominates ($\\lambda = 0.01$, $s = 1$).", "name": "fig-ch09-orbit-schematic"}, "image": {"alt": "A straight line of slope minus one in the plane of log10 of the norms of U and V, dashed between two open circles at the crossover radii and solid beyond them, with arrows showing the direction of minus the regularizer's gradient."}} tags=["hide-input"]
orbit_schematic(consts, crossovers["log", 1.0], regs["log"], ("U", "V"),
                rf"LoRA, log form, $\lambda = {lam:g}$, $s = 1$")
plt.show()

# %% [markdown]
# ### Comparing with attention: what the orbit does not change
#
# The crossover $10^{13.42}$ is a value of $\rho$, counted from the point where the $\rho$-curve
# starts, and that start is a choice: every factorization $(U^\star G, G^{-1}V^\star)$ of the same
# product is an equally good stationary point. Starting at $(cU^\star, V^\star/c)$ instead of
# $\theta^\star$ divides $\rho^\star$ by $c$ and multiplies $\lVert U\rVert_F$ by $c$ ($q \to c^2q$,
# $a \to c^2a$), so the Frobenius norm of the larger block at the crossover stays the same. The book
# **[choice]** compares the two models by that norm at the decisive crossover,
#
# $$
# \begin{gathered}
# N = \max\Big(\rho^\star\sqrt{q},\ \frac{\sqrt{k}}{\rho_\star}\Big),\\
# \log\big(\rho^\star\sqrt{q}\big) \approx \frac{1}{4\lambda}\sqrt{\frac{s\,a}{q}} - \frac12
# \quad\text{(log form)},
# \end{gathered}
# $$ (eq-ch09-block-norm)
#
# where the second formula is Chapter 8's leading order for $\log\rho^\star$ plus $\tfrac12\log q$
# (the $\rho \to 0$ end has $b/k$ in place of $a/q$). $N$ is the same from every start on one
# $\rho$-curve, but not over the whole $GL(2)$ orbit, because a general $G$ changes the ratio $a/q$.
# At the start $(U^\star G, G^{-1}V^\star)$, moving $V$ along a unit direction $E$ moves the product
# by $U^\star GE$, so $a = \sum_E D^2L[U^\star GE, U^\star GE] = \operatorname{tr}(AP)$ and
# $q = \lVert U^\star G\rVert_F^2 = \operatorname{tr}(BP)$, with $P = GG^\top$, a fixed symmetric $A$
# and $B = U^{\star\top}U^\star$; likewise $b/k$ is a ratio of two linear functions of $P^{-1}$. Such a
# ratio lies between the smallest and the largest generalized eigenvalue of $(A, B)$ and approaches
# them only as $G$ becomes singular. So $N$ has a bounded range over the orbit, which should settle as
# $G$ is allowed to grow more unbalanced. Attention has the same structure, with $W_K$ in place of
# $V$ and $G^{-\top}$ in place of $G^{-1}$.

# %%
for c in (1e-3, 1.0, 1e3):     # log form, s = 1, starts (c U*, V*/c)
    start = problem.act(theta_star, c * np.eye(2))
    ends = villani.orbit_constants(problem, start)
    decisive = villani.orbit_crossovers(ends, regs["log"], 1.0).decisive
    print(f"c = {c:5g}: log10 decisive crossover "
          f"{decisive / math.log(10):5.2f}, log10 N = "
          f"{log10_block_norm(problem, start, regs['log']):.2f}")

# %% [markdown]
# From $c = 10^{-3}$ to $10^3$ the decisive crossover moves by six decades and $N$ does not move.
# To cover the orbit we sample $G = R(\varphi_1)\,\mathrm{diag}(e^{a_1}, e^{a_2})\,R(\varphi_2)$, with
# $R$ a rotation. Only $P = GG^\top = R(\varphi_1)\,\mathrm{diag}(e^{2a_1}, e^{2a_2})\,R(\varphi_1)^\top$
# enters $a/q$ and $b/k$, so $\varphi_2$ drops out, and the common factor $e^{(a_1 + a_2)/2}$ only moves
# the start along the $\rho$-curve. It is therefore enough to take
# $G = R(\varphi)\,\mathrm{diag}(e^{\delta/2}, e^{-\delta/2})$ with $0 \le \varphi < \pi$ and
# $0 \le \delta \le 2B$, where $B$ bounds $\lvert a_1\rvert$ and $\lvert a_2\rvert$ (the check below
# confirms the reduction on random $G$). This book samples 90 angles and steps of 0.25 in $\delta$, up
# to $B = 6$; the leading order {eq}`eq-ch09-block-norm` screens this grid, and the exact roots are
# computed at its extreme points. Chapter 8's problem and stationary point are rebuilt with the same
# calls as there.

# %%
attention = attention_problem()                       # Chapter 8's problem
attention_star, _ = attention_stationary_point(attention)
models = {"attention": (attention, attention_star),
          "LoRA": (problem, theta_star)}
grid = orbit_grid()                   # 90 angles phi x 49 values of delta
screen = {name: screen_orbit(p, th, regs["log"], grid)
          for name, (p, th) in models.items()}

# %% mystnb={"code_prompt_show": "Check: one angle and one log-ratio suffice: show {type}"} tags=["hide-cell"]
worst = reduction_gap(models, regs["log"])
print("G = R(phi1) diag(e^a1, e^a2) R(phi2) against R(phi1) diag(e^(d/2), e^(-d/2)),")
print(f"d = a1 - a2: largest change of log10 N over 5 random G, both models "
      f"{format_deviation(worst, resolution=1e-9)}")

# %%
bounds, ranges, gaps = ORBIT_BOUNDS, {}, []
for name, (p, th) in models.items():   # exact roots at the screen's ends
    found, gap = orbit_ranges(p, th, regs["log"], grid, screen[name])
    ranges.update({(name, B): found[B] for B in bounds})
    gaps.append(gap)
result_table(["B", "attention: min", "max", "LoRA: min", "max"],
             [[f"{B:g}", *ranges["attention", B], *ranges["LoRA", B]]
              for B in bounds], number_format=".2f")

# %% mystnb={"code_prompt_show": "Check: exact roots against the leading order: show {type}"} tags=["hide-cell"]
print("log10 N over the sampled orbit (log form, s = 1): exact roots at the grid's")
print(f"extreme points; largest gap to the leading order there "
      f"{format_deviation(max(gaps), resolution=1e-6)} decades")

# %%
at_point = {name: log10_block_norm(p, th, regs["log"])
            for name, (p, th) in models.items()}
print(comparison_text(at_point, {name: ranges[name, bounds[-1]]
                                 for name in models}))

# %% [markdown]
# {numref}`fig-ch09-orbit-ranges` draws the table: for each model, the band of $\log_{10} N$ over the
# sampled orbit against the bound $B$, and the value at the chapter's own point (dashed).

# %% mystnb={"code_prompt_show": "Drawing code: show {type}", "figure": {"caption": "The range of $\\log_{10} N$, the norm of the larger block at the decisive crossover (log form, $\\lambda = 0.01$, $s = 1$), over the sampled $GL(2)$ orbit of each stationary point against the bound $B$ on the log-scales of $G$, for attention and LoRA; dashed lines mark the chapters' own points.", "name": "fig-ch09-orbit-ranges"}, "image": {"alt": "Two shaded bands that widen with B and level off by B = 2, the LoRA band lower than the attention band but overlapping it, each with a dashed line inside it."}} tags=["hide-input"]
fig, ax = figure(width="medium", height=3.2)
for name, colour in (("attention", OKABE_ITO["blue"]), ("LoRA", OKABE_ITO["vermillion"])):
    low, high = np.array([ranges[name, B] for B in bounds]).T
    ax.fill_between(bounds, low, high, color=colour, alpha=0.35, lw=0,
                    label=f"{name}: over the orbit")
    ax.plot(bounds, low, color=colour, marker="o", lw=1)
    ax.plot(bounds, high, color=colour, marker="o", lw=1)
    ax.axhline(at_point[name], color=colour, ls="--", lw=1.5, label=f"{name}: chapter's point")
ax.set_xscale("log")
ax.minorticks_off()
ax.set_xticks(bounds, [f"{B:g}" for B in bounds])
ax.set_xlabel(r"bound $B$ on $|a_1|, |a_2|$ in $G$")
ax.set_ylabel(r"$\log_{10} N$")
legend_below(fig, ncol=2)
plt.show()

# %% [markdown]
# The bands widen with $B$ and stop changing by $B = 2$ (a condition number of $G$ of
# $e^4 \approx 55$): the extremes are reached as $G$ becomes singular, as the eigenvalue argument says,
# so the ranges at $B = 6$ are, to the resolution of the angle grid, those of the whole orbit. At the chapters'
# points the larger block at the crossover ($V$ at LoRA's $\rho \to 0$ end, $W_Q$ at attention's
# $\rho \to \infty$ end) is $10^{13.86}$ for LoRA against $10^{18.31}$ for attention: 4.45 decades
# closer in. Over the orbits, LoRA's $N$ runs from $10^{10.97}$ to $10^{17.95}$ and attention's from
# $10^{16.31}$ to $10^{24.20}$. Both ends of LoRA's range are lower, by 5.34 and 6.25 decades, but the
# two ranges overlap between $10^{16.31}$ and $10^{17.95}$: some factorization of LoRA's product
# crosses further out than some factorization of attention's. So LoRA is closer in at the chapters'
# points and at both ends of the ranges, not for every pair of representatives, and on either model
# the crossover is far from any trained point.

# %% [markdown]
# ## Villani is sufficient, not necessary
#
# The argument of Chapter 8 carries over. The LoRA data loss is bounded because $\tanh$ is,
# so with weight decay $\mu_s$ is a Gaussian tilted by the bounded factor $e^{-2L/s}$, and the
# Holley-Stroock lemma {cite}`holley1987` gives, with or without the Villani condition,
#
# $$
# C_P(\mu_s) \le e^{2\operatorname{osc}L/s}\,\frac{s}{4\lambda}\qquad\text{for every } s > 0 .
# $$ (eq-ch09-holley-stroock)
#
# With an unbounded activation (softplus, ReLU) the loss is no longer bounded and this shortcut
# fails. The Villani route does not need boundedness. With the bound on $\sup L \ge \operatorname{osc} L$
# printed above, at $\lambda = 0.01$:

# %%
for s in (100.0, 1.0, 0.1):
    log10_bound = log10_holley_stroock_bound(sup_L, s, lam)
    print(f"s = {s:>5g}, lambda = {lam}: C_P <= 10^{log10_bound:.3g}")

# %% [markdown]
# The argument in every direction of Chapter 8 carries over as well. With $G = \nabla_W L$
# bounded ($\tanh' \le 1$ and $\lvert\hat y\rvert \le \lVert a\rVert_1$), $\nabla_U L = GV^\top$ and
# $\nabla_V L = U^\top G$, and the second derivative of $\tanh$ is bounded too, so
#
# $$
# \begin{aligned}
# &\lVert\nabla_U L\rVert \le C\lVert V\rVert, && \lVert\nabla_V L\rVert \le C\lVert U\rVert,\\
# &\lvert\Delta_U L\rvert \le C'\lVert V\rVert^2, && \lvert\Delta_V L\rvert \le C'\lVert U\rVert^2 .
# \end{aligned}
# $$ (eq-ch09-bounds)
#
# The estimate on the larger block is then the same, with the larger block size $\max(mr, rd)$ in
# place of $D_Q$. The constants (`LoRAProblem.derivative_constants`) are
# $C = \frac1n\sum_i r_i\lVert a\rVert_2\lVert x_i\rVert$ and
# $C' = \max(m, d)\,\frac1n\sum_i\lVert x_i\rVert^2(\lVert a\rVert_2^2 + \kappa\lVert a\rVert_\infty r_i)$, with
# $r_i = \lVert a\rVert_1 + \lvert y_i\rvert$ bounding the residual and $\kappa = \max\lvert\tanh''\rvert = 4/(3\sqrt3)$.
# As for attention, the bound proves the condition in every direction for the log and power forms,
# with constants too crude to say where it starts to hold; {doc}`the report page <report_ch09_lora>`
# checks each of its inequalities at 40 random parameters.

# %% [markdown]
# ## The papers' claims
#
# {doc}`The Reproduction report's page for Chapter 9 <report_ch09_lora>` judges each claim below from this chapter's numbers, and the [claims ledger](../book/ledger.md) collects them.
#
# ::::{dropdown} The claims and their verdicts
# - {bdg-success}`reproduced` **[summary]** Theorem 3.2: regularized LoRA is Villani
# - {bdg-success}`reproduced` **[summary]** Theorem 3.2 for any data distribution and any network size
# ::::

# %% [markdown]
# ## Summary
#
# * The LoRA loss depends on $(U, V)$ only through the product $UV$, so it is constant along the
#   orbits $(UG, G^{-1}V)$; with a bounded activation it has no Gibbs measure without a regularizer,
#   exactly as attention does.
# * The flat set $V = 0$ is a second kind of flatness: the loss is constant there but its gradient
#   is not, so the data loss itself, through the ratio of a gradient to a curvature, decides the sign
#   of the Villani quantity along it.
# * Weight decay selects the balanced point $U^\top U = VV^\top$ of every orbit exactly, which makes a
#   slightly regularized minimizer a well-conditioned start for finding stationary points of the
#   unregularized loss.
# * Chapter 8's closed form and crossover formulas carry over to the orbit through a stationary
#   point; the larger of the two end crossovers decides. Its radius depends on where the orbit is
#   entered; the norm of the larger block there does not along one $\rho$-curve, and over the $GL(2)$
#   orbit it spans a bounded range, lower for LoRA than for attention but overlapping it.
# * With weight decay a bounded loss already has a Poincare inequality (Holley-Stroock); the Villani
#   route does not need boundedness, which matters for unbounded activations.
#

# %% [markdown]
# ## Exercises
#
# 1. Show that on the flat set $V = 0$ the Hessian of $L$ in the $U$ block is zero, and that the
#    $V$-block Laplacian is exactly quadratic in $\rho$ along $U = \rho U_0$.
#
# ```{admonition} Solution
# :class: dropdown
# With $V = 0$, moving $U$ by $E$ moves $W = W_{\mathrm{pre}} + UV$ by $EV = 0$, so $L$ is constant in $U$
# and its $U$-block Hessian vanishes. Moving $V$ by $E$ moves $W$ by $\rho U_0 E$, and $W$ itself stays
# at $W_{\mathrm{pre}}$, so the second derivative is $\rho^2 D^2_W L(W_{\mathrm{pre}})[U_0E, U_0E]$: exactly
# quadratic in $\rho$. The printed column $\Delta_V L/\rho^2$ is constant, as it must be.
# ```
#
# 2. Why does BFGS sometimes fail to find a stationary point of the unregularized LoRA loss, and
#    why does a warm start from a slightly regularized minimizer help?
#
# ```{admonition} Solution
# :class: dropdown
# The stationary points form whole orbits $(UG, G^{-1}V)$, so the Hessian is singular along the
# orbit's tangent directions. BFGS's curvature model has no information in those directions,
# and its steps can run along the orbit, where $\lVert U\rVert$ and $\lVert V\rVert$ become unbalanced and the
# conditioning gets worse. A weight-decay minimizer is exactly balanced, $U^\top U = VV^\top$ for every
# $\lambda > 0$ (multiply the two stationarity equations as in {eq}`eq-ch09-balance`; the printed deviations,
# below $2\times10^{-7}$ at $\lambda = 10^{-3}$ and $10^{-9}$ at $\lambda = 0.1$, are the optimizer's
# residual), so it gives a balanced, well-conditioned start. Polishing from there is not a small step:
# in this chapter it moves $UV$ by the Frobenius distance printed in the orbit section and ends at an
# unbalanced point, whose place along the orbit round-off decides, because without the weight decay
# nothing holds the iterates at the balanced point (which is why the chapter reports the balanced
# point of that orbit). What the warm start buys is a start where the curvature
# along the orbit has not yet degraded, so BFGS reaches a stationary point (gradient norm printed)
# instead of stopping on precision loss.
# ```
#
# 3. Replace $\tanh$ by softplus in the model. Which of this chapter's arguments still hold?
#
# ```{admonition} Solution
# :class: dropdown
# The symmetry and the flat set $V = 0$ are untouched: they come from the factorization $UV$.
# The bound $\lvert\hat y\rvert \le \lVert a\rVert_1$ fails, so the data loss is unbounded (it grows quadratically
# along many directions). Then the argument that the partition function diverges needs a
# different proof (it still diverges along the orbits, which have infinite volume in the
# directions where $L$ is constant), and the Holley-Stroock shortcut is lost. The Villani route
# does not use boundedness, which is one reason to prefer it.
# ```
#
