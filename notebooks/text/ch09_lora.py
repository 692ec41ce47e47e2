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
# The second model of {cite}`frangi2026` is a depth-2 network fine-tuned through a low-rank
# update, as in LoRA {cite}`hu2022lora`. This chapter repeats the steps of Chapter 8 for it: the
# symmetry, the divergent partition function, the Villani quantity on the orbit through a
# stationary point, and the crossover radii of the mild regularizers. It adds one object the
# attention model does not have, the flat set $V = 0$.
#
# ## Overview
#
# **What you will learn.** Why the LoRA loss is invariant under $(U, V) \to (UG, G^{-1}V)$ and has
# no Gibbs measure without a regularizer; how the flat set $V = 0$ differs from a symmetry orbit;
# why a weight-decay minimizer is exactly balanced, $U^\top U = VV^\top$; and where, along the
# orbit through a stationary point, the mild regularizers make the Villani quantity positive.
#
# **The answer in one sentence.** LoRA behaves like attention, with mild regularization making its
# loss Villani only beyond a crossover radius, plus a flat set $V = 0$ on which the data loss
# itself, not the regularizer, sets the sign of the Villani quantity.
#
# **What you need.** Chapter 8 (the orbit through a stationary point, the closed form of the
# Villani quantity, the crossover formulas and the Holley-Stroock argument) and the Villani
# conditions of Chapter 7; a depth-2 network with a $\tanh$ activation.
#
# **Optional on a first reading.** "Villani is sufficient, not necessary", which carries Chapter 8's
# arguments over, and "Other data and sizes".
#
# **For a researcher.** For the log form at $s = 1$ and $\lambda = 0.01$ the decisive crossover on
# the orbit through the balanced stationary point is $10^{13.42}$, reached at the $\rho \to 0$ end,
# where the larger block has norm $10^{13.86}$. That norm, unlike the radius, does not depend on
# where along the $\rho$-curve one starts; over the whole $GL(2)$ orbit it runs from $10^{10.97}$ to
# $10^{17.95}$, against $10^{16.31}$ to $10^{24.20}$ for attention ($10^{18.31}$ at Chapter 8's point).
# LoRA's crossover is closer in at the chapters' points and at both ends of the ranges, but the
# ranges overlap; either way it is far from any trained point.
#
# Labels as in Chapter 8: **[summary]**, **[abstract]**, **[derived]**, **[choice]**.

# %% [markdown]
# :::{admonition} Learning objectives
# After this chapter you can identify LoRA's scale symmetry and flat set; say when weight decay picks a balanced point.
#
# Estimated student time: about 2.5 hours (reading and running the chapter, and its 3 exercises at about 30 minutes each; the teaching guide's estimate).
# :::

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import math

import matplotlib.pyplot as plt
import numpy as np

from attnlib import villani
from attnbook.chapters.ch08 import (LAM, TEMPERATURES, attention_problem,
                                    attention_stationary_point, closed_form_gaps, crossover_table,
                                    laplacian_law_fit, log10_holley_stroock_bound,
                                    log_partition_curves, orbit_crossover_radii, regularizers)
from attnbook.chapters.ch09 import balanced_stationary_point, lora_problem, weight_decay_minimizer
from attnbook.experiments import format_deviation
from attnbook.plotting import (OKABE_ITO, SERIES, figure, legend_below, orbit_schematic, plot_series,
                              use_book_style)
from attnlib.regularizers import Regularizer
from attnbook.tables import result_table

use_book_style()
SYMMETRY_SEED = 1     # random group elements
FLAT_SEED = 4         # direction in the flat set
GROUP_SEED = 6        # random group elements for the check of the orbit sampling

# %% [markdown]
# ## The model and its scale redundancy
#
# LoRA adapts a pretrained weight matrix by a low-rank product. The summary writes
# $W' = W_{\mathrm{pre}} + \alpha BA$ and notes the invariance $A \to cA$, $B \to B/c$, which makes the
# landscape "flat" [summary]. The book's model (the source's Definitions 2.6 and 2.7 are not
# available to us) is
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
problem = lora_problem()      # n = 20 samples in d = 3, width m = 8, rank r = 2, noise 0.1
print(f"n = {problem.n}, d = {problem.x.shape[1]}, width m = {problem.a.size}, "
      f"rank r = {problem.rank}, D = {problem.dim}")
rng_sym = np.random.default_rng(SYMMETRY_SEED)
theta = problem.theta_teacher
decay = problem.with_regularizer(Regularizer("weight_decay", 0.01))
for _ in range(4):
    G = 3 * rng_sym.standard_normal((2, 2))
    moved = problem.act(theta, G)
    change = abs(problem.data_loss(moved) - problem.data_loss(theta)) / problem.data_loss(theta)
    print(f"cond(G) = {np.linalg.cond(G):6.2f}: relative change of L {format_deviation(change)}, "
          f"of L + weight decay {abs(decay.loss(moved) - decay.loss(theta)):.3g}")

# %% [markdown]
# ## The partition function diverges
#
# Because $\tanh$ is bounded, $\lvert\hat y\rvert \le \lVert a\rVert_1$ and the data loss is bounded by
# $\frac{1}{2n}\sum_i(\lVert a\rVert_1 + \lvert y_i\rvert)^2$. As in Chapter 8, $e^{-2L/s}$ is bounded below by a
# positive constant, so $\int e^{-2L/s} = \infty$ and the unregularized Gibbs measure does not exist. The radial estimate of $Z_R = \int_{\lVert\theta\rVert\le R} e^{-2f/s}$ (200 directions,
# $s = 1$, $\lambda = 0.1$ for the regularizers) shows it ({numref}`fig-ch09-partition`): without a
# regularizer $\log Z_R$ keeps growing, with any of the three it levels off.

# %%
s_partition = 1.0
radii = np.linspace(0.0, 12.0, 61)
log_z = log_partition_curves(problem, s_partition, radii)   # Chapter 8's estimate: lambda = 0.1
sup_L = 0.5 * np.mean((np.abs(problem.a).sum() + np.abs(problem.y)) ** 2)
print(f"bound sup L <= {sup_L:.3f}")
for name, values in log_z.items():
    print(f"{SERIES[name]['label']:>12}: log Z_R at R = 3, 6, 12: "
          + ", ".join(f"{values[i]:.2f}" for i in (15, 30, 60)))

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
rng_flat = np.random.default_rng(FLAT_SEED)
U0 = rng_flat.standard_normal((problem.a.size, problem.rank))
U0 /= np.linalg.norm(U0)
base = problem.pack(U0, np.zeros((problem.rank, problem.x.shape[1])))
g0 = problem.gradient(base)
c1 = float(g0 @ g0)
c2 = problem.data_laplacian_blocks(base)[1]
print(f"c1 = {c1:.4g}, c2 = {c2:.4g}, c1 / c2 = {c1 / c2:.4g}")

# %%
print("   rho   L          ||grad L||^2/rho^2   Delta_U L   Delta_V L/rho^2")
for rho_flat in (1.0, 10.0, 1e3, 1e5):
    x = rho_flat * base
    g = problem.gradient(x)
    lap_u, lap_v = problem.data_laplacian_blocks(x)
    print(f"{rho_flat:6.0e} {problem.data_loss(x):.6f} {g @ g / rho_flat**2:18.6g} "
          f"{lap_u:11.2e} {lap_v / rho_flat**2:15.6g}")

# %%
flat_losses = [problem] + [problem.with_regularizer(Regularizer(name, 0.01))
                          for name in ("weight_decay", "log")]
for s in (0.5 * c1 / c2, 2 * c1 / c2):
    values = [villani.villani_quantity(loss, 1e3 * base, s).value / 1e6 for loss in flat_losses]
    print(f"s = {s:.4g}: V_s / rho^2 at rho = 1e3 (none, weight decay, log):")
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
warm, theta_star = balanced_stationary_point(problem)   # warm start, polish, balanced point
grad_norm = np.linalg.norm(problem.gradient(theta_star))
consts = villani.orbit_constants(problem, theta_star)
print(f"L(theta*) = {problem.data_loss(theta_star):.3e}, ||grad L(theta*)|| "
      f"{format_deviation(grad_norm, resolution=1e-7)}")
print(f"a = {consts.a:.4f}, b = {consts.b:.4f}, q = {consts.q:.4f}, k = {consts.k:.4f}")
(U_warm, V_warm), (U_star, V_star) = problem.unpack(warm), problem.unpack(theta_star)
print(f"the polish moves U V by {np.linalg.norm(U_star @ V_star - U_warm @ V_warm):.2f} (Frobenius)")
print(f"||U||_F^2, ||V||_F^2: warm start {np.sum(U_warm**2):.2f}, {np.sum(V_warm**2):.2f}; "
      f"theta* (balanced) {np.sum(U_star**2):.2f}, {np.sum(V_star**2):.2f}")

# %%
rho = np.logspace(-2, 2, 9)
a_fit, b_fit, resid = laplacian_law_fit(problem, theta_star, rho)
print(f"fit over rho in [1e-2, 1e2]: a = {a_fit:.6f}, b = {b_fit:.6f}")
print(f"  max relative residual {format_deviation(resid)}")

# %%
lam = LAM
regs = regularizers(lam)
log_rho_check = np.log(np.array([0.1, 1.0, 10.0, 100.0]))
gaps = [gap for _, gap in closed_form_gaps(problem, theta_star, consts, regs,
                                           log_rho_check).values()]
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
    decayed = problem.with_regularizer(Regularizer("weight_decay", lam_balance))
    minimizer = weight_decay_minimizer(problem, lam_balance)
    U_min, V_min = problem.unpack(minimizer)
    grad_U, grad_V = problem.unpack(decayed.gradient(minimizer))
    deviation = np.abs(U_min.T @ U_min - V_min @ V_min.T).max()
    bound = (np.linalg.norm(U_min) * np.linalg.norm(grad_U)
             + np.linalg.norm(V_min) * np.linalg.norm(grad_V)) / (2 * lam_balance)
    print(f"weight decay lambda = {lam_balance:g}: max |U^T U - V V^T| = {deviation:.1e}")
    print(f"  (bound from the residual gradient {bound:.1e}; ||U^T U||_max = "
          f"{np.abs(U_min.T @ U_min).max():.3f})")

# %% [markdown]
# ### The crossover radii at both ends
#
# As in Chapter 8 the orbit has two ends: as $\rho \to 0$ the blocks swap roles and the formulas
# hold with $(a, q)$ replaced by $(b, k)$ (`consts.swapped()`). The quantity is positive only
# outside both crossovers, so the larger decides (Chapter 8, Exercise 3). {numref}`fig-ch09-villani-orbit` shows
# $\mathcal V_s/\max(\rho^2, \rho^{-2})$, which has the sign of $\mathcal V_s$ and a finite scale at both ends.

# %%
temperatures = TEMPERATURES
print(f"weight decay, lambda = {lam}: threshold 4 lambda^2 q / a = "
      f"{villani.weight_decay_threshold(consts, lam):.3g} (rho -> oo),")
print(f"  4 lambda^2 k / b = {villani.weight_decay_threshold(consts.swapped(), lam):.3g} (rho -> 0)")

# %%
print("log10 rho* as rho -> oo and log10(1/rho*) as rho -> 0, with leading orders:")
crossovers = orbit_crossover_radii(consts, regs, temperatures)   # (form, s) -> both ends
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
def log10_block_norm(problem, theta, reg, s=1.0, *, exact=True):
    """log10 N of eq-ch09-block-norm on the rho-curve through theta."""
    c = villani.orbit_constants(problem, theta)
    if not exact:    # Chapter 8's leading order at each end (swapped: the rho -> 0 end)
        return max(villani.asymptotic_crossover_log_radius(end, reg, s) + 0.5 * math.log(end.q)
                   for end in (c, c.swapped())) / math.log(10)
    c = villani.orbit_constants(problem, problem.act(theta, (c.k / c.q) ** 0.25 * np.eye(2)))
    both = villani.orbit_crossovers(c, reg, s)      # exact roots from the balanced point, q = k
    return (both.decisive + 0.5 * math.log(c.q)) / math.log(10)

for c in (1e-3, 1.0, 1e3):     # log form, s = 1: starts on the rho-curve through theta*
    start = problem.act(theta_star, c * np.eye(2))
    decisive = villani.orbit_crossovers(villani.orbit_constants(problem, start), regs["log"], 1.0)
    print(f"start (c U*, V*/c), c = {c:5g}: log10 decisive crossover "
          f"{decisive.decisive / math.log(10):5.2f}, log10 N = "
          f"{log10_block_norm(problem, start, regs['log']):.2f}")

# %% [markdown]
# From $c = 10^{-3}$ to $10^3$ the decisive crossover moves by six decades and $N$ does not move.
# To cover the orbit we sample $G = R(\varphi_1)\,\mathrm{diag}(e^{a_1}, e^{a_2})\,R(\varphi_2)$, with
# $R$ a rotation. Only $P = GG^\top = R(\varphi_1)\,\mathrm{diag}(e^{2a_1}, e^{2a_2})\,R(\varphi_1)^\top$
# enters $a/q$ and $b/k$, so $\varphi_2$ drops out, and the common factor $e^{(a_1 + a_2)/2}$ only moves
# the start along the $\rho$-curve. It is therefore enough to take
# $G = R(\varphi)\,\mathrm{diag}(e^{\delta/2}, e^{-\delta/2})$ with $0 \le \varphi < \pi$ and
# $0 \le \delta \le 2B$, where $B$ bounds $\lvert a_1\rvert$ and $\lvert a_2\rvert$ (the check below
# confirms the reduction on random $G$). **[choice]** 90 angles and steps of 0.25 in $\delta$, up to
# $B = 6$; the leading order {eq}`eq-ch09-block-norm` screens this grid, and the exact roots are
# computed at its extreme points. Chapter 8's problem and stationary point are rebuilt with the same
# calls as there.

# %%
attention = attention_problem()                            # Chapter 8's problem
attention_star, _ = attention_stationary_point(attention)  # and its stationary point
models = {"attention": (attention, attention_star), "LoRA": (problem, theta_star)}


def group_element(phi, delta):
    """G = R(phi) diag(e^(delta/2), e^(-delta/2))."""
    rotation = np.array([[math.cos(phi), -math.sin(phi)], [math.sin(phi), math.cos(phi)]])
    return rotation * np.exp([delta / 2, -delta / 2])


grid = np.array([(phi, delta) for phi in np.linspace(0.0, math.pi, 90, endpoint=False)
                 for delta in np.linspace(0.0, 12.0, 49)])
screen = {name: np.array([log10_block_norm(p, p.act(th, group_element(*g)), regs["log"],
                                           exact=False) for g in grid])
          for name, (p, th) in models.items()}

# %%
rng_group = np.random.default_rng(GROUP_SEED)
worst = 0.0
for _ in range(5):
    phi1, phi2 = rng_group.uniform(0.0, math.pi, 2)
    a1, a2 = rng_group.uniform(-3.0, 3.0, 2)
    full = group_element(phi1, 0.0) @ np.diag(np.exp([a1, a2])) @ group_element(phi2, 0.0)
    for p, th in models.values():
        worst = max(worst, abs(log10_block_norm(p, p.act(th, full), regs["log"])
                               - log10_block_norm(p, p.act(th, group_element(phi1, a1 - a2)),
                                                  regs["log"])))
print("G = R(phi1) diag(e^a1, e^a2) R(phi2) against R(phi1) diag(e^(d/2), e^(-d/2)),")
print(f"d = a1 - a2: largest change of log10 N over 5 random G, both models "
      f"{format_deviation(worst, resolution=1e-9)}")

# %%
bounds = [0.25, 0.5, 1.0, 2.0, 3.0, 4.0, 6.0]
ranges, gaps = {}, []
for name, (p, th) in models.items():
    for B in bounds:
        inside = np.flatnonzero(grid[:, 1] <= 2 * B + 1e-9)
        ends = inside[[np.argmin(screen[name][inside]), np.argmax(screen[name][inside])]]
        ranges[name, B] = [log10_block_norm(p, p.act(th, group_element(*grid[i])), regs["log"])
                           for i in ends]
        gaps += [abs(exact - screen[name][i]) for exact, i in zip(ranges[name, B], ends)]
print("log10 N over the sampled orbit (log form, s = 1): exact roots at the grid's")
print(f"extreme points; largest gap to the leading order there "
      f"{format_deviation(max(gaps), resolution=1e-6)} decades")
result_table(["B", "attention: min", "max", "LoRA: min", "max"],
             [[f"{B:g}", *ranges["attention", B], *ranges["LoRA", B]] for B in bounds],
             number_format=".2f")

# %%
at_point = {name: log10_block_norm(p, th, regs["log"]) for name, (p, th) in models.items()}
(att_low, att_high), (lora_low, lora_high) = (ranges[name, bounds[-1]] for name in models)
print(f"log10 N at the chapters' points: attention {at_point['attention']:.2f}, "
      f"LoRA {at_point['LoRA']:.2f}")
print(f"  LoRA closer in by {at_point['attention'] - at_point['LoRA']:.2f} decades")
print(f"over the orbits: attention {att_low:.2f} to {att_high:.2f}, "
      f"LoRA {lora_low:.2f} to {lora_high:.2f}")
print(f"  LoRA lower by {att_low - lora_low:.2f} (smallest) and {att_high - lora_high:.2f} (largest);")
print(f"  overlap {att_low:.2f} to {lora_high:.2f}" if lora_high >= att_low
      else "  no overlap: LoRA's whole range lies below attention's")

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
# The measurements of this chapter bear on these claims; {doc}`the Reproduction report's page for Chapter 9 <report_ch09_lora>` judges each from the numbers, with its threshold, the choices it varies and the replays of the stored runs:
#
# - {bdg-success}`reproduced` **[summary]** Theorem 3.2: regularized LoRA is Villani
# - {bdg-success}`reproduced` **[summary]** Theorem 3.2 for any data distribution and any network size

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
