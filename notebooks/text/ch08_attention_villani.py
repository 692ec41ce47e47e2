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
# # Chapter 8: Attention in $W_Q, W_K$ and the Villani condition
#
# :::{admonition} Overview
# Chapter 7 defined Gibbs measures, the Poincare inequality and Villani functions. This chapter
# takes the first of the two models of {cite}`frangi2026`, a single softmax attention layer
# trained only in its query and key matrices, and checks the facts its Theorem 3.1 rests on: the
# loss's symmetry, the Gibbs measure without a regularizer, the Villani quantity on the orbit
# through a stationary point and along generic rays, and an argument in every direction.
#
# **The answer.** Without a regularizer the attention loss is constant along non-compact
# symmetry orbits and has no Gibbs measure; the source's mild regularizers make the Villani
# quantity positive at infinity, but along the orbit through a stationary point only beyond a
# crossover radius that no training run visits.
#
# **You need** chapter 7, the softmax and its Jacobian, and derivatives of functions of
# matrices; the argument in every direction is optional. **Time:** about 2.5 hours, with the 3
# exercises.
# :::
#
# :::{dropdown} What the papers claim
# - **[summary]** Theorem 3.1: the MSE of one attention layer in $(W_Q, W_K)$ plus a mild
#   regularizer, $\lambda\lVert W\rVert_F^2\log(1+\lVert W\rVert_F^2)$ or
#   $\lambda\lVert W\rVert_F^{2+\varepsilon}$, is a Villani function, for any data distribution
#   and any network size.
# - **[summary]** The factorized losses are invariant under the general linear group; without a
#   regularizer the Gibbs measure is not normalizable.
# - **[summary]** The proofs rest on bounds on the gradients and Laplacians of the factorized
#   losses, including the Jacobian and Hessian of the row softmax, and on their scale invariance.
# :::
#
# :::{dropdown} This book's choices
# - **[choice]** The source's Definitions 2.4 and 2.5 are not available: the model
#   {eq}`eq-ch08-1`, with $W_V$ fixed, is this book's reading.
# - **[choice]** The super-quadratic regularizer is $g(t) = (1+t)^{1+\varepsilon/2} - 1$, smooth at
#   $W = 0$ where the source's $t^{1+\varepsilon/2}$ is not.
# - **[choice]** A small synthetic problem: $n = 6$ inputs of $N = 5$ tokens, $d = 3$, $d_k = 2$,
#   targets from a random teacher layer plus noise.
# - **[choice]** The orbit computations use $\lambda = 0.01$ at $s = 0.01$, 1 and 100.
# :::

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import math
import textwrap

import matplotlib.pyplot as plt
import numpy as np
import sympy as sp

from attnlib import villani
from attnbook.chapters.ch08 import (LAM, TEMPERATURES, attention_problem,
                                    attention_stationary_point, closed_form_gaps, crossover_table,
                                    crossover_leading_orders, describe_closed_form_gaps,
                                    describe_estimate_radii, describe_log_partition, describe_ray,
                                    describe_weight_decay_estimate, laplacian_law_fit,
                                    log10_holley_stroock_bound, log_ball_volume,
                                    log_partition_curves, orbit_crossover_radii,
                                    orbit_villani_table, regularizers, smallest_logit_gap,
                                    sup_loss_bound)
from attnbook.claims import ch08
from attnbook.experiments import format_deviation
from attnbook.plotting import (NEUTRAL_GREY, OKABE_ITO, SERIES, figure, legend_below, orbit_schematic,
                              plot_series, use_book_style)
from attnlib.regularizers import Regularizer
from attnbook.tables import result_table

use_book_style()
SYMMETRY_SEED = 1     # random group elements
RAY_SEED = 2          # generic rays

# %% [markdown]
# ## The model and its symmetry
#
# The model is our choice, since the source's Definitions 2.4 and 2.5 are not available: an input is a
# token matrix $X_i \in \mathbb{R}^{N\times d}$, the output is
#
# $$
# \hat Y(X) = \operatorname{RowSoftmax}\!\left(\frac{X W_Q W_K^\top X^\top}{\sqrt{d_k}}\right) X W_V ,
# $$ (eq-ch08-1)
#
# with $W_V$ fixed and only $W_Q, W_K \in \mathbb{R}^{d\times d_k}$ trained, as in the source.
# The loss is $f = L + R(W_Q) + R(W_K)$ with
#
# $$
# L(W_Q, W_K) = \frac{1}{2n}\sum_{i=1}^n \lVert \hat Y(X_i) - Y_i \rVert_F^2 ,\qquad
# R(W) = \lambda\, g(\lVert W\rVert_F^2).
# $$ (eq-ch08-2)
#
# The regularizer profiles are weight decay $g(t) = t$ and the source's two mild forms:
# the log-amplified $g(t) = t\log(1+t)$ and the super-quadratic form, which the source writes
# $\lambda\lVert W\rVert_F^{2+\varepsilon}$. This book uses
# $g(t) = (1+t)^{1+\varepsilon/2} - 1$. That form is infinitely differentiable, while
# $t^{1+\varepsilon/2}$ is only twice differentiable at $W = 0$, and the Villani definition asks
# for a smooth function. The two forms grow alike at infinity, which is all that matters below.
#
# We work with a small synthetic problem: $n = 6$ inputs of $N = 5$ tokens in dimension $d = 3$,
# $d_k = 2$, so $D = 2 d d_k = 12$ trained parameters. The targets come from a random teacher
# attention layer plus noise.

# %%
# n = 6 inputs of N = 5 tokens, d = 3, d_k = 2, noise 0.5
problem = attention_problem()
n, N, d = problem.X.shape
print(f"n = {n}, N = {N}, d = {d}, d_k = {problem.d_k}, D = {problem.dim}")
teacher = problem.theta_teacher
print(f"loss at the teacher: {problem.data_loss(teacher):.4f}")

# %% [markdown]
# The data loss depends on $(W_Q, W_K)$ only through $P = W_Q W_K^\top$, so
# $L(W_Q G, W_K G^{-\top}) = L(W_Q, W_K)$ for every invertible $G \in GL(d_k)$: the loss is constant
# along orbits of the general linear group. A regularizer breaks the symmetry. We check both
# with random $G$, and we follow the scale orbit $(\rho W_Q, W_K/\rho)$ over twelve decades of
# $\rho$. (We write $\rho$ for the scale because $r$ is the LoRA rank of Chapter 9.)

# %%
rng_sym = np.random.default_rng(SYMMETRY_SEED)
theta = problem.theta_teacher
decay = problem.with_regularizer(Regularizer("weight_decay", lam=0.01))
for _ in range(4):
    G = rng_sym.standard_normal((2, 2)) * 3
    moved = problem.act(theta, G)               # (W_Q G, W_K G^-T)
    change = abs(decay.loss(moved) - decay.loss(theta))
    print(f"cond(G) = {np.linalg.cond(G):7.2f}: "
          f"change of L + weight decay {change:.3g}")

# %%
orbit = villani.orbit_points(problem, theta, np.log(np.logspace(-6, 6, 7)))
losses = problem.data_loss(orbit)
print("L along (rho W_Q, W_K / rho), rho = 1e-6 ... 1e6:")
print(textwrap.fill(" ".join(f"{v:.10f}" for v in losses), 80))

# %% [markdown]
# The data loss does not move, to rounding level, under any of the four random $G$ or along twelve
# decades of the scale orbit; the check below asks each relative change to be at most $10^{-12}$.
#

# %% mystnb={"code_prompt_show": "Reproduction check: show {type}"} tags=["hide-cell"]
rng_check = np.random.default_rng(SYMMETRY_SEED)          # the same four G as above
group_changes = [abs(problem.data_loss(problem.act(theta, rng_check.standard_normal((2, 2)) * 3))
                     - problem.data_loss(theta)) / problem.data_loss(theta) for _ in range(4)]
print("relative change of L under each G: "
      + ", ".join(format_deviation(change) for change in group_changes))
orbit_change = np.ptp(problem.data_loss(orbit)) / problem.data_loss(theta)
symmetry = ch08.symmetry(group_changes, orbit_change)
from attnbook.verdicts import verdict_table
display(verdict_table([("[summary]", symmetry)]))

# %% [markdown]
# ## Without a regularizer the Gibbs measure is not normalizable
#
# Every output row is a convex combination of the rows of $X_i W_V$, so $L$ is bounded:
# $0 \le L \le \sup L < \infty$. Then $e^{-2L/s} \ge e^{-2\sup L/s} > 0$ everywhere and
# $\int_{\mathbb{R}^D} e^{-2L/s} = \infty$ for every $s > 0$: the partition function diverges
# because the loss is constant along non-compact orbits. So condition 3 of the Villani
# definition fails, and $\mu_s$ does not exist.
#
# ### A reduced example with sympy
#
# Take $d = d_k = 1$, one input with $N = 2$ tokens $x = (1, -2)$, $W_V = 1$ and targets
# $y = (1/2, 1)$. Then $L$ is a function of $p = w_q w_k$ alone. sympy confirms the invariance
# and finds finite limits as $p \to \pm\infty$. It also shows that the pushforward of the area
# element under $(w_q, w_k) \mapsto p$, restricted to the box $[-R, R]^2$, has density
# $2\log(R^2/\lvert p\rvert)$: each value of $p$ is carried by a whole hyperbola. So
# $Z_R = \int_{[-R,R]^2} e^{-2L/s} \ge 4R^2 e^{-2\sup L/s}$, which grows without bound.

# %%
w_q, w_k, c, p, w = sp.symbols("w_q w_k c p w", real=True)
R = sp.Symbol("R", positive=True)
xs, ys = [1, -2], [sp.Rational(1, 2), 1]


def reduced_loss(product):
    outputs = []
    for xa in xs:
        wts = [sp.exp(xa * xb * product) for xb in xs]
        outputs.append(sum(wt * xb for wt, xb in zip(wts, xs)) / sum(wts))
    squares = [(o - yt) ** 2 for o, yt in zip(outputs, ys)]
    return sp.Rational(1, 2) * sum(squares)


# %%
L_red = reduced_loss(w_q * w_k)
moved = L_red.subs({w_q: c * w_q, w_k: w_k / c}, simultaneous=True)
print("L(c w_q, w_k / c) - L(w_q, w_k) simplifies to",
      sp.simplify(moved - L_red))
L_p = reduced_loss(p)
print("limit p -> +oo:", sp.limit(L_p, p, sp.oo),
      "  limit p -> -oo:", sp.limit(L_p, p, -sp.oo))

# %%
sup_bound = sp.Rational(1, 2) * sum((max(map(abs, xs)) + abs(yt)) ** 2
                                    for yt in ys)
print("bound sup L <=", sup_bound)
q_pos = sp.Symbol("q", positive=True)
density = 2 * sp.integrate(1 / w, (w, q_pos / R, R))     # p = +-q
print("pushforward density at |p| = q:", sp.simplify(density))
total = 2 * sp.integrate(density, (q_pos, 0, R**2))
print("its integral over -R^2 < p < R^2:", sp.simplify(total))

# %% [markdown]
# ### Numerics: the partition function over growing balls
#
# For the 12-parameter problem we estimate
# $Z_R = \int_{\lVert\theta\rVert\le R} e^{-2 f(\theta)/s}\, d\theta$ in polar coordinates. The
# mean of $e^{-2f(\rho u)/s}$ over directions is estimated with 200 random directions, and the
# radial integral uses the trapezoid rule (`villani.radial_log_partition`). At $s = 1$, without a
# regularizer, $\log Z_R$ keeps growing like $D \log R$, above the lower bound
# $\log \operatorname{vol}(B_R) - 2\sup L/s$. With any regularizer ($\lambda = 0.1$ here), it levels off.

# %%
s_partition = 1.0
radii = np.linspace(0.0, 12.0, 61)
log_z = log_partition_curves(problem, s_partition, radii)   # lambda = 0.1
sup_L = sup_loss_bound(problem)     # outputs are convex combinations
D = problem.dim
log_ball = log_ball_volume(D, radii[1:])           # log vol(B_R)
print(f"bound sup L <= {sup_L:.3f}")
print(describe_log_partition(log_z))

# %% mystnb={"code_prompt_show": "Drawing code: show {type}", "figure": {"caption": "The log partition function $\\log Z_R$ over balls of growing radius $R$ at $s = 1$ (attention): without a regularizer it keeps growing, with any of the three regularizers it levels off.", "name": "fig-ch08-partition"}, "image": {"alt": "Log Z_R against the radius R for no regularizer, weight decay, log and power regularizers, each with its own colour, line style and marker."}} tags=["hide-input"]
fig, ax = figure()
for name, values in log_z.items():
    plot_series(ax, radii[1:], values[1:], name)
ax.plot(radii[1:], log_ball - 2 * sup_L / s_partition, "k:", label=r"lower bound (no regularizer)")
ax.set_xlabel(r"radius $R$ of the ball in $\theta$-space")
ax.set_ylabel(r"$\log Z_R$")
ax.set_title(f"partition function over growing balls, $s = {s_partition:g}$")
ax.legend()
plt.show()

# %% [markdown]
# {numref}`fig-ch08-partition` shows the result: without a regularizer $\log Z_R$ keeps climbing,
# with any of the three it levels off. A finite ball cannot show a divergence (the proof is the
# bound $L \le \sup L$); what it can show is that $\log Z_R$ has not levelled off. The check below
# asks it to grow from $R = 6$ to $R = 12$ by at least half of $D\log 2$, the growth of
# $\log\operatorname{vol}(B_R)$.
#

# %% mystnb={"code_prompt_show": "Reproduction check: show {type}"} tags=["hide-cell"]
growth = {name: values[60] - values[30] for name, values in log_z.items()}
print("growth of log Z_R from R = 6 to 12: " + ", ".join(f"{SERIES[name]['label']} {g:.2f}" for name, g in growth.items())
      + f"; D log 2 = {D * math.log(2):.2f}")
normalizable = ch08.not_normalizable(growth["none"] / (D * math.log(2)), dim=D)
display(verdict_table([("[summary]", normalizable)]))

# %% [markdown]
# ## The Villani quantity on the orbit through a stationary point
#
# We find a stationary point $\theta^\star = (W_Q^\star, W_K^\star)$ of the unregularized loss with BFGS
# from the teacher. Along its orbit $(\rho W_Q^\star, W_K^\star/\rho)$ the loss is constant and its
# gradient vanishes: $\nabla_{W_Q} L$ is divided by $\rho$ and $\nabla_{W_K} L$ multiplied by $\rho$. The
# Hessian block in $W_K$ sees $W_Q$ twice, so its trace scales like $\rho^2$, and the $W_Q$ block scales
# like $1/\rho^2$:
#
# $$
# \begin{gathered}
# \Delta L(\rho W_Q^\star, W_K^\star/\rho) = a\rho^2 + \frac{b}{\rho^2},\\
# a = \Delta_{W_K} L(\theta^\star),\quad b = \Delta_{W_Q} L(\theta^\star).
# \end{gathered}
# $$ (eq-ch08-3)
#
# The Laplacians here are exact: the library sums analytic second directional derivatives
# along the $D$ coordinate axes, with no finite differences. We check the law by a least-squares fit
# over four decades of $\rho$.

# %%
theta_star, grad_norm = attention_stationary_point(problem)   # BFGS
consts = villani.orbit_constants(problem, theta_star)      # a, b, q, k
print(f"L(theta*) = {problem.data_loss(theta_star):.4f}")
print(f"a = {consts.a:.4f}, b = {consts.b:.4f}, q = ||W_Q*||^2 = "
      f"{consts.q:.4f}, k = ||W_K*||^2 = {consts.k:.4f}")
rho = np.logspace(-2, 2, 9)
a_fit, b_fit, resid = laplacian_law_fit(problem, theta_star, rho)
print(f"fit over rho in [1e-2, 1e2]: a = {a_fit:.6f}, b = {b_fit:.6f}")

# %% mystnb={"code_prompt_show": "Check against the closed form: show {type}"} tags=["hide-cell"]
print(f"||grad L(theta*)|| {format_deviation(grad_norm, resolution=1e-7)}")
print(f"fit of the law: max relative residual {format_deviation(resid)}")

# %% [markdown]
# So on this orbit $\nabla \tilde f = \nabla R$ and the Villani quantity is a closed form in
# $\rho$, with $t_Q = q\rho^2$, $t_K = k/\rho^2$, $q = \lVert W_Q^\star\rVert_F^2$, $k = \lVert W_K^\star\rVert_F^2$
# and $D_Q = D_K = d d_k$:
#
# $$
# \begin{aligned}
# \mathcal V_s(\rho) = {}& \frac{4\lambda^2\big(t_Q\, g'(t_Q)^2 + t_K\, g'(t_K)^2\big)}{s}
#  - a\rho^2 - \frac{b}{\rho^2}\\
#  & - 2\lambda\big(D_Q g'(t_Q) + 2t_Q g''(t_Q)\big)\\
#  & - 2\lambda\big(D_K g'(t_K) + 2t_K g''(t_K)\big).
# \end{aligned}
# $$ (eq-ch08-4)
#
# `villani.orbit_villani_over_rho2` evaluates $\mathcal V_s/\rho^2$ in 40-digit arithmetic from
# $\log\rho$, so $\rho = 10^{300}$ is no problem. First we check it against the direct computation
# (exact gradient and exact Laplacian of the regularized loss at the orbit points).

# %%
lam = LAM
regs = regularizers(lam)
log_rho_check = np.log(np.array([0.1, 1.0, 10.0, 100.0]))
# V_1 from the exact gradient and Laplacian at four points of the orbit
checked = closed_form_gaps(problem, theta_star, consts, regs,
                           log_rho_check)
print("V_1 on the orbit:")
orbit_villani_table(checked)

# %% mystnb={"code_prompt_show": "Check against the closed form: show {type}"} tags=["hide-cell"]
print(describe_closed_form_gaps(checked))

# %% [markdown]
# Up to $\rho = 100$ the quantity is negative for every regularizer at $\lambda = 0.01$, $s = 1$:
# the $-a\rho^2$ term wins. The question is what happens further out.
#
# ### The crossover radius, derived with sympy
#
# For large $\rho$ only $4\lambda^2 t_Q g'(t_Q)^2/s$ and $a\rho^2$ matter. Dividing by $\rho^2$,
# the sign of $\mathcal V_s$ is that of $4\lambda^2 q\, g'(q\rho^2)^2/s - a$:
#
# * weight decay, $g' = 1$: the limit $4\lambda^2 q/s - a$ is a constant, so the quantity tends to
#   $-\infty$ exactly when $s > 4\lambda^2 q / a$;
# * log-amplified, $g'(t) = \log(1+t) + t/(1+t) \approx \log t + 1$, which grows without bound;
# * super-quadratic, $g'(t) \approx (1+\varepsilon/2)\, t^{\varepsilon/2}$, which also grows without bound.
#
# sympy solves the leading-order equations for $\log\rho^\star$:

# %%
lam_s, s_s, a_s, q_s, eps_s, u = sp.symbols("lambda s a q epsilon u",
                                            positive=True)
# u = log rho: the larger root of 4 lambda^2 q g'(q e^{2u})^2 / s = a
log_root, pow_root, wd_threshold = crossover_leading_orders(
    lam_s, s_s, a_s, q_s, eps_s, u)
print("log-amplified:  log rho* ~", log_root)
print("super-quadratic: log rho* ~\n   ", pow_root)
print("weight decay fails for s >", wd_threshold)

# %% [markdown]
# That is, $\log\rho^\star \approx \sqrt{sa/q}/(4\lambda) - \tfrac12\log q - \tfrac12$ for the log form
# and $\rho^\star \approx \big[sa / (4\lambda^2(1+\varepsilon/2)^2 q^{1+\varepsilon})\big]^{1/(2\varepsilon)}$ for the
# power form. `villani.crossover_log_radius` finds the exact largest root of $\mathcal V_s$ (a scan in
# $\log\rho$, then bisection in mpmath), and we compare it with these formulas. The weight-decay
# rows give the critical temperature $4\lambda^2 q / a$.

# %%
temperatures = TEMPERATURES
s_star = villani.weight_decay_threshold(consts, lam)
print(f"weight decay, lambda = {lam}: threshold 4 lambda^2 q / a = "
      f"{s_star:.3g}")
never = [s for s in temperatures if villani.crossover_log_radius(
    consts, regs["weight_decay"], s) == math.inf]
print("rho* = infinity (never positive) for s = "
      + ", ".join(f"{s:g}" for s in never))

# %%
print("log10 rho* as rho -> oo and log10(1/rho*) as rho -> 0, "
      "with leading orders:")
crossovers = orbit_crossover_radii(consts, regs, temperatures)
# log of rho* sqrt(q), the larger block at the crossover
block = crossovers["log", 1.0].up + 0.5 * math.log(consts.q)
print(f"log form, s = 1: the larger block at rho* has ||W_Q||_F = "
      f"10^{block / math.log(10):.2f}")
crossover_table(consts, regs, crossovers)

# %% [markdown]
# The orbit has two ends. As $\rho \to 0$ the blocks swap roles ($t_K = k/\rho^2$ grows, the
# $b/\rho^2$ term dominates), so the same formulas hold with $(a, q)$ replaced by $(b, k)$, and the
# crossover there is $\log(1/\rho_\star)$. The Villani quantity on the orbit is positive only outside
# *both* crossovers, so the larger one decides (Exercise 3). Here the $\rho \to \infty$ end decides
# for both forms at every temperature in the table. These radii are counted from $\theta^\star$, the
# point where BFGS stopped: starting the $\rho$-curve at $(cW_Q^\star, W_K^\star/c)$ divides $\rho^\star$ by
# $c$, while the Frobenius norm of the larger block at the crossover, $\rho^\star\sqrt q = 10^{18.31}$
# (printed above the table), stays the same. Chapter 9 compares the two models by that norm over the
# whole $GL(2)$ orbit.
#
# {numref}`fig-ch08-orbit-schematic` draws this orbit to scale in the plane of the two block norms,
# for the log form at $\lambda = 0.01$ and $s = 1$. On logarithmic axes the orbit
# $(\rho W_Q^\star, W_K^\star/\rho)$ is a straight line of slope $-1$ through $\theta^\star$, and the data
# loss has the same value $L(\theta^\star)$ at every point of it. Follow it from $\theta^\star$ either way:
# along the dashed stretch the spreading term $a\rho^2 + b/\rho^2$ of the Laplacian beats the
# regularizer's push and $\mathcal V_s < 0$; past the open circles, the crossovers
# $\rho^\star = 10^{18.04}$ and $\rho_\star = 10^{-11.30}$ of the table, $\lVert\nabla R\rVert^2/s$ wins and
# $\mathcal V_s > 0$. The arrows give the exact direction of $-\nabla R$ out there: it shrinks the larger
# block.

# %% mystnb={"code_prompt_show": "Drawing code: show {type}", "figure": {"caption": "Schematic, drawn to scale from this chapter's numbers: the orbit through the stationary point in the plane of the block norms, on which the data loss is constant, with the log regularizer's crossovers beyond which its gradient dominates ($\\lambda = 0.01$, $s = 1$).", "name": "fig-ch08-orbit-schematic"}, "image": {"alt": "A straight line of slope minus one in the plane of log10 of the norms of W_Q and W_K, dashed between two open circles at the crossover radii and solid beyond them, with arrows showing the direction of minus the regularizer's gradient."}} tags=["hide-input"]
orbit_schematic(consts, crossovers["log", 1.0], regs["log"], ("W_Q", "W_K"),
                rf"attention, log form, $\lambda = {lam:g}$, $s = 1$")
plt.show()

# %% [markdown]
# {numref}`fig-ch08-villani-orbit` reads the same orbit quantitatively. It shows $\mathcal V_s/\max(\rho^2, \rho^{-2})$ (same sign as $\mathcal V_s$, finite at both
# ends; `villani.orbit_villani_scaled`) against $\log_{10}\rho$, over as many decades as it takes
# on each side (symmetric log scale, clipped at $10^3$). Weight decay tends to its negative limits
# $4\lambda^2 q/s - a$ and $4\lambda^2 k/s - b$ and is indistinguishable from no regularizer at this
# $\lambda$. The two mild regularizers cross zero at the radii in the table (dotted lines, one per end).

# %% mystnb={"figure": {"caption": "The Villani quantity $\\mathcal V_s/\\max(\\rho^2, \\rho^{-2})$ along the symmetry orbit against $\\log_{10}\\rho$ at $s = 0.01, 1, 100$ (attention), on a symmetric log scale; dotted verticals mark the crossovers of the log and power regularizers at both ends of the orbit.", "name": "fig-ch08-villani-orbit"}, "image": {"alt": "Three panels, one per temperature, of V_s over rho squared against log10 rho for the four regularizers; weight decay stays negative, log and power turn positive after dotted crossover lines."}} tags=["hide-input"]
fig, axes = figure(1, 3, height=2.9)
for ax, s in zip(axes, temperatures):
    right = 1.3 * max(crossovers["log", s].up, crossovers["power", s].up) / math.log(10)
    left = 1.3 * max(crossovers["log", s].down, crossovers["power", s].down) / math.log(10)
    log10_rho = np.linspace(-left, right, 400)
    for name, reg in regs.items():
        plot_series(ax, log10_rho, villani.orbit_villani_scaled(consts, reg, s, log10_rho * math.log(10)),
                    name)
    for name, style in (("log", SERIES["log"]["color"]), ("power", SERIES["power"]["color"])):
        for end in (crossovers[name, s].up, -crossovers[name, s].down):
            ax.axvline(end / math.log(10), color=style, ls=":", lw=1)
    ax.axhline(0, color="k", lw=0.8)
    ax.set_yscale("symlog", linthresh=1.0)
    ax.set_ylim(-100, 1000)
    ax.set_xlabel(r"$\log_{10}\rho$")
    ax.set_title(f"$s = {s:g}$")
axes[0].set_ylabel(r"$\mathcal{V}_s / \max(\rho^2, \rho^{-2})$ on the orbit")
legend_below(fig, ncol=4)
plt.show()

# %% [markdown]
# ### Weight decay: a threshold temperature
#
# At $\lambda = 0.01$ this threshold, the critical temperature $4\lambda^2 q/a$ of weight decay, is tiny. With $\lambda = 1$ it is of order one, and
# the two sides of it can be compared directly. As $\rho \to \infty$,
# $\mathcal V_s/\rho^2 \to 4\lambda^2 q/s - a$, positive below the critical temperature and negative above it. On the
# other end of the orbit ($\rho \to 0$) the roles of the blocks swap and the critical temperature is
# $4\lambda^2 k/b$, so weight decay passes on this orbit only for $s < 4\lambda^2\min(q/a, k/b)$.

# %%
strong = Regularizer("weight_decay", 1.0)
s_up = villani.weight_decay_threshold(consts, 1.0)
s_down = villani.weight_decay_threshold(consts.swapped(), 1.0)
print(f"lambda = 1: threshold as rho -> oo: {s_up:.4f}; "
      f"as rho -> 0: {s_down:.4f}")
far = np.log(np.array([1e3, 1e30, 1e300]))
for s in (0.5 * s_up, 2 * s_up):
    values = villani.orbit_villani_over_rho2(consts, strong, s, far)
    print(f"s = {s:.4f}: V_s / rho^2 at rho = 1e3, 1e30, 1e300: "
          + ", ".join(f"{v:.4f}" for v in values))
    print(f"  limit 4 lam^2 q / s - a = {4 * consts.q / s - consts.a:.4f}")

# %% [markdown]
# ## Generic rays decide nothing
#
# Along a ray $\theta = \rho u$ with a random unit direction $u$, the logits grow like $\rho^2$ and the
# softmax saturates: each row of attention weights tends to a one-hot vector. Once $\rho^2$ times
# the smallest gap between the two largest logits of the direction is large, $\nabla L$ and $\Delta L$
# vanish. Then only the regularizer is left, and every regularizer, weight decay included,
# gives a positive Villani quantity. Rays therefore test the regularizer, not the loss. The
# orbit through a stationary point is where the condition is decided.

# %%
rng_ray = np.random.default_rng(RAY_SEED)
u_dir = rng_ray.standard_normal(problem.dim)
u_dir /= np.linalg.norm(u_dir)                  # a random unit direction
min_gap = smallest_logit_gap(problem, u_dir)    # over all attention rows
print(f"smallest top-two logit gap of the direction: {min_gap:.2e}")

# %%
# along the ray rho u: the data terms, and V_1 for two regularizers
rhos = (1, 4, 16, 64, 256, 1024)
print(describe_ray(problem, u_dir, min_gap, regs, rhos))

# %% mystnb={"code_prompt_show": "Drawing code: show {type}", "figure": {"caption": "The data terms of the Villani quantity against the distance from the origin (attention): along a generic ray the softmax saturates and both terms vanish once $\\rho^2$ times the logit gap is well past 1, while along the orbit through the stationary point the Laplacian grows like $a\\rho^2$.", "name": "fig-ch08-ray"}, "image": {"alt": "Log-log plot against the parameter norm: a rising solid line for the Laplacian on the orbit, and dashed and dotted lines for the Laplacian and squared gradient on the ray that collapse after a vertical marker."}} tags=["hide-input"]
norms = np.logspace(0, 3, 61)                 # ||theta|| along the ray; the orbit from rho = 1
ray_grad = np.array([np.sum(problem.gradient(r * u_dir) ** 2) for r in norms])
ray_lap = np.abs([problem.laplacian(r * u_dir) for r in norms])
rho_orbit = np.logspace(0, 3, 61)
orbit_norm = np.sqrt(consts.q * rho_orbit**2 + consts.k / rho_orbit**2)
shown = orbit_norm <= norms[-1]
fig, ax = figure(width="medium", height=3.8)
ax.loglog(orbit_norm[shown], (consts.a * rho_orbit**2 + consts.b / rho_orbit**2)[shown],
          color=OKABE_ITO["vermillion"], lw=2.5, label=r"$\Delta L$ on the orbit")
ax.loglog(norms, np.where(ray_lap > 0, ray_lap, np.nan), color=OKABE_ITO["blue"], ls="--", lw=2.5,
          label=r"$|\Delta L|$ on the ray")
ax.loglog(norms, np.where(ray_grad > 0, ray_grad, np.nan), color=OKABE_ITO["sky blue"], ls=":",
          lw=2.5, label=r"$\Vert\nabla L\Vert^2$ on the ray")
ax.axvline(1 / math.sqrt(min_gap), color=NEUTRAL_GREY, ls="-.", lw=1.5)
ax.text(1.1 / math.sqrt(min_gap), 1e-8, r"$\rho^2\times$gap$\,=1$", fontsize=11)
ax.set_ylim(1e-10, 1e7)
ax.set_xlabel(r"distance from the origin, $\Vert\theta\Vert$")
ax.set_ylabel("data terms of $\\mathcal{V}_s$")
ax.legend(loc="lower left")
plt.show()

# %% [markdown]
# For this direction the smallest logit gap is about $10^{-3}$. So the loss still moves at
# $\rho = 16$ and $64$, where the weight-decay quantity is negative. By $\rho = 256$ ($\rho^2 \times$ gap $\approx 77$),
# $\lVert\nabla L\rVert^2$ is below $10^{-60}$ and both regularizers give a positive quantity.
# {numref}`fig-ch08-ray` sets the ray beside the orbit through $\theta^\star$: along the ray both
# data terms collapse once $\rho^2$ times the gap is well past 1 (the vertical line marks 1), while
# along the orbit
# the Laplacian keeps growing like $a\rho^2$. How fast the softmax saturates depends on the
# direction, but it always does.

# %% [markdown]
# ## Villani is sufficient, not necessary
#
# The Villani condition is one route to a Poincare inequality {cite}`villani2009`. Here another
# route is available. With weight decay,
# $\tilde f = L + \lambda\lVert\theta\rVert^2$, and $L$ is bounded with oscillation
# $\operatorname{osc} L = \sup L - \inf L \le \sup L$. So $\mu_s \propto e^{-2\tilde f/s}$ is the Gaussian
# $\mathcal N(0, \tfrac{s}{4\lambda} I)$, whose Poincare constant is $s/(4\lambda)$, tilted by the bounded factor
# $e^{-2L/s}$. By the Holley-Stroock perturbation lemma {cite}`holley1987`,
#
# $$
# C_P(\mu_s) \le e^{2\operatorname{osc} L / s}\,\frac{s}{4\lambda}\qquad\text{for every } s > 0.
# $$ (eq-ch08-5)
#
# So weight decay already gives a Poincare inequality at every temperature, even where the
# Villani quantity tends to $-\infty$ on the orbit above. What the mild regularizers buy is the
# Villani route to the proof, which the source's convergence theorem uses. The bound's constant is
# $e^{2\operatorname{osc}L/s}$, which explodes as $s \to 0$: the regularizers change constants and the
# proof route, not existence.

# %%
for s in (100.0, 1.0, 0.1):
    log10_bound = log10_holley_stroock_bound(sup_L, s, lam)
    print(f"s = {s:>5g}, lambda = {lam}: C_P <= 10^{log10_bound:.3g}")

# %% [markdown]
# ## The argument in every direction
#
# The orbit computations above follow one curve to infinity. The Villani condition asks for
# every direction, and a short argument covers them all. It uses the proof
# ingredients the summary names: bounds on the gradients and Laplacians of the factorized losses,
# including the Jacobian and Hessian of the row softmax, and the scale invariance of factorized
# losses. The source's own proof is not available; what follows is this book's version,
# each step with its inequality; {doc}`the report page <report_ch08_attention_villani>` checks every
# inequality numerically at random parameters.
#
# **Step 1: the softmax.** For $s = \operatorname{softmax}(z)$ the Jacobian is
# $J = \operatorname{diag}(s) - ss^\top$. Row $j$ of $J$ has absolute sum
# $s_j(1 - s_j) + s_j\sum_{k\ne j}s_k = 2s_j(1 - s_j) \le 1/2$, and Gershgorin's theorem bounds the
# eigenvalues of the symmetric $J$ by that row sum. Along a direction $u$, with
# $c = u - \langle s, u\rangle$, $D^2 s[u, u] = s\circ(c^2 - \langle s, c^2\rangle)$, whose entries sum in
# absolute value to at most $2\langle s, c^2\rangle = 2\operatorname{Var}_s(u)$; Popoviciu's inequality bounds
# that variance by $\tfrac14(\max u - \min u)^2$. So, for every $z$,
#
# $$
# \begin{aligned}
# \lVert J\rVert_2 &\le \tfrac12 ,\\
# \lVert D^2 s[u,u]\rVert_2 &\le \lVert D^2 s[u,u]\rVert_1 \le 2\operatorname{Var}_s(u)\\
# &\le \tfrac12(\max u - \min u)^2 \le \lVert u\rVert_2^2 .
# \end{aligned}
# $$ (eq-ch08-softmax)
#
# Neither bound depends on $z$: saturation does not hurt. sympy confirms the row sum and its maximum:

# %%
s1, s2, s3 = sp.symbols("s_1 s_2 s_3", positive=True)
svec = sp.Matrix([s1, s2, s3])
J = sp.diag(s1, s2, s3) - svec * svec.T
# off the diagonal |J_jk| = s_j s_k; with s_3 = 1 - s_1 - s_2
row = J[0, 0] - J[0, 1] - J[0, 2]
row_sum = sp.simplify(row.subs(s3, 1 - s1 - s2))
print("row 1 absolute sum of J:", sp.factor(row_sum),
      "; its maximum over s_1:",
      sp.maximum(2 * s1 * (1 - s1), s1, sp.Interval(0, 1)))

# %% [markdown]
# **Step 2: the data loss.** $L$ depends on $P = W_QW_K^\top$ only. Write $x_i = \lVert X_i\rVert_2$,
# $z_i = \lVert X_iW_V\rVert_2$ and $r_i$ for a bound on the residual $\lVert\hat Y_i - Y_i\rVert_F$ (each output row is
# a convex combination of rows of $X_iW_V$). Step 1 gives, at every $P$,
# $\lVert\partial L/\partial P\rVert_F \le C$ and $\lvert D^2_P L[H,H]\rvert \le h\lVert H\rVert_F^2$ with constants built from
# $x_i, z_i, r_i$ (`AttentionProblem.derivative_constants` states them). Since
# $\nabla_{W_Q}L = (\partial L/\partial P)\,W_K$ and moving $W_Q$ by a unit $E$ moves $P$ by $EW_K^\top$,
#
# $$
# \lVert\nabla_{W_Q}L\rVert_F \le C\,\lVert W_K\rVert_F,\qquad
# \lvert\Delta_{W_Q}L\rvert \le C'\,\lVert W_K\rVert_F^2,\qquad C' = d\,h,
# $$ (eq-ch08-6)
#
# and the same with $Q$ and $K$ exchanged. So $\lVert\nabla L\rVert \le C\lVert\theta\rVert$ and
# $\lvert\Delta L\rvert \le C'\lVert\theta\rVert^2$.

# %%
C_grad, C_lap = problem.derivative_constants()
print(f"constants of this problem: C = {C_grad:.1f}, C' = {C_lap:.0f}")

# %% [markdown]
# **Step 3: the larger block.** Let $W_Q$ be the larger block, $t = \lVert W_Q\rVert_F^2 \ge \lVert W_K\rVert_F^2$.
# Then $\lVert\nabla\tilde f\rVert \ge \lVert 2\lambda g'(t)W_Q + \nabla_{W_Q}L\rVert \ge \sqrt t\,\big(2\lambda g'(t) - C\big)$,
# and, since $g'$ and $tg''$ are nondecreasing for all three forms,
# $\Delta\tilde f \le 2C't + 4\lambda\big(D_Q g'(t) + 2tg''(t)\big)$. Hence
#
# $$
# \begin{aligned}
# \mathcal V_s(\theta) \;\ge\; B(t) = {}& \frac{t\,\big(2\lambda g'(t) - C\big)_+^2}{s}\\
# & - 2C't - 4\lambda\big(D_Q g'(t) + 2tg''(t)\big)
# \end{aligned}
# $$ (eq-ch08-7)
#
# (`villani.villani_lower_bound`).

# %% [markdown]
# **Step 4: the three regularizers.** Divide {eq}`eq-ch08-7` by $t$. For the log form
# $g'(t) = \log(1+t) + t/(1+t)$ grows like $\log t$, for the power form $g'(t) \sim (1+\varepsilon/2)\,t^{\varepsilon/2}$,
# and for both the last term over $t$ tends to zero; for weight decay $g' = 1$ and $g'' = 0$. So
#
# $$
# \frac{B(t)}{t} \longrightarrow
# \begin{cases}
# +\infty & \text{log and power forms } (\lambda, s > 0),\\[2pt]
# (2\lambda - C)_+^2/s - 2C' & \text{weight decay.}
# \end{cases}
# $$ (eq-ch08-limits)
#
# Since $t \ge \lVert\theta\rVert^2/2$, condition 4 holds for the two mild forms as $\lVert\theta\rVert \to \infty$ in
# every direction. Conditions 2 and 3 follow from $\tilde f \ge R(W_Q) + R(W_K)$ with
# $g(t) \ge t - (e - 1)$: the power form has $g(t) \ge t$ for every $t \ge 0$, while the log form has
# $t\log(1+t) \ge t$ only for $t \ge e - 1 \approx 1.72$, and below that it falls short of $t$ by less than $e - 1$; so
# $\tilde f \ge \lambda(\lVert\theta\rVert^2 - 2(e-1))$ for both. For weight decay the estimate proves the
# condition only when $2\lambda > C$ and $s < (2\lambda - C)^2/(2C')$. That weight decay genuinely fails above a
# finite temperature is what the orbit shows: there $\mathcal V_s/\rho^2 \to 4\lambda^2q/s - a$, also a constant
# whose sign depends on $s$. The constants of the estimate are crude; the orbit gives the sharp ones
# along its direction. sympy checks the monotonicity of $g'$ and $tg''$ and the limits:

# %%
t_s, lam_b, C_s, C2_s, D_s, s_b, e_s = sp.symbols(
    "t lambda C Cprime D s epsilon", positive=True)
profiles = {"weight_decay": t_s, "log": t_s * sp.log(1 + t_s),
            "power": (1 + t_s) ** (1 + e_s / 2) - 1}
for name, g in profiles.items():
    g1, g2 = sp.diff(g, t_s), sp.diff(g, t_s, 2)
    B_over_t = ((2 * lam_b * g1 - C_s) ** 2 / s_b - 2 * C2_s
                - 4 * lam_b * (D_s * g1 + 2 * t_s * g2) / t_s)
    limit = sp.limit(B_over_t.subs(e_s, sp.Rational(1, 2)), t_s, sp.oo)
    tg2 = sp.factor(sp.simplify(sp.diff(t_s * g2, t_s)))
    print(f"{SERIES[name]['label']}: d/dt g' = {sp.simplify(g2)}")
    print(f"  d/dt(t g'') = {tg2}")
    print(f"  lim B(t)/t = {limit}")

# %%
# where the estimate B turns positive (log10 of ||W||_F = sqrt(t) on the
# larger block), against the orbit's decisive log10 rho*
print(describe_estimate_radii(regs, temperatures, C_grad, C_lap,
                              problem.dim // 2, crossovers, lam))

# %%
lam_strong = 200.0         # weight decay: the estimate against the orbit
print(describe_weight_decay_estimate(consts, lam, lam_strong,
                                     C_grad, C_lap))

# %% [markdown]
# The price of covering every direction is the constant: for the log form at
# $\lambda = 0.01$ and $s = 1$ the estimate turns positive only beyond $\lVert W\rVert_F \approx 10^{2723}$, where
# the orbit through the stationary point crosses at $\rho^\star \approx 10^{18.0}$. The argument proves the limit,
# not a useful radius. For weight decay it proves the condition only below $s = 4.87$ at $\lambda = 200$,
# while the orbit shows failure above $5.49\times10^{4}$: between the two the estimate says nothing.
# {doc}`The report page <report_ch08_attention_villani>` checks each inequality of the argument at 40
# random parameters: all hold, the softmax bounds are attained, and the data-loss bounds are loose.

# %% [markdown]
# ## The papers' claims
#
# The {doc}`Reproduction report <report_ch08_attention_villani>` judges each claim below from this chapter's measurements, with its threshold; the [claims ledger](../book/ledger.md) gathers the whole book's.
#
# ::::{dropdown} The claims and their verdicts
# - {bdg-success}`reproduced` **[summary]** Theorem 3.1: regularized attention is Villani
# - {bdg-success}`reproduced` **[summary]** no regularizer: Gibbs measure not normalizable
# - {bdg-success}`reproduced` **[summary]** the factorized losses are invariant under the general linear group
# - {bdg-success}`reproduced` **[summary]** Theorem 3.1 for any data distribution and any network size
# ::::

# %% [markdown]
# ## Summary
#
# * The attention data loss depends on $(W_Q, W_K)$ only through $W_Q W_K^\top$, so it is constant
#   along non-compact $GL(d_k)$ orbits; being bounded as well, it has no normalizable Gibbs measure.
# * On the orbit through a stationary point the Villani quantity has a closed form: the loss
#   Laplacian grows like $\rho^2$, weight decay's push only keeps pace with it, so weight decay fails
#   above a critical temperature, while the mild regularizers outgrow it beyond a crossover radius.
# * Along generic rays the softmax saturates and only the regularizer is left, so rays test the
#   regularizer, not the loss; the orbits through stationary points are where the condition is decided.
# * The Villani condition is sufficient for a Poincare inequality, not necessary: with a bounded loss,
#   weight decay already gives one by the Holley-Stroock lemma, with a constant that explodes as
#   $s \to 0$.
# * Bounds on the softmax Jacobian and Hessian that do not depend on the logits prove the condition in
#   every direction for the mild regularizers, with constants too crude to say where it starts to hold.
#

# %% [markdown]
# ## Exercises
#
# 1. Show that
#
#    $$\Delta_{W_K} L(\rho W_Q, W_K/\rho) = \rho^2\, \Delta_{W_K} L(W_Q, W_K)$$ (eq-ch08-8)
#
#    at *any* point, not
#    only at a stationary point. Where does stationarity enter the closed form of $\mathcal V_s$?
#
# ```{admonition} Solution
# :class: dropdown
# $L(W_Q, W_K) = F(W_Q W_K^\top)$. At $(\rho W_Q, W_K/\rho)$, moving $W_K$ by $E$ moves $P$ by
# $\rho W_Q E^\top$, so the second derivative along $E$ is $\rho^2 D^2F(P)[W_Q E^\top, W_Q E^\top]$, and
# $P$ itself does not change. Summing over a basis of $E$ gives the factor $\rho^2$ at any point.
# Stationarity enters through the gradient: $\nabla\tilde f = \nabla L + \nabla R$. Only when
# $\nabla L(\theta^\star) = 0$ does $\nabla L$ vanish along the whole orbit, which removes the cross term
# $2\langle\nabla L, \nabla R\rangle$ and $\lVert\nabla L\rVert^2$.
# ```
#
# 2. Using the leading-order formula for the power form, what happens to $\rho^\star$ as
#    $\varepsilon \to 0$? Relate the answer to the critical temperature of weight decay.
#
# ```{admonition} Solution
# :class: dropdown
# $\log\rho^\star \approx \log\!\big[sa/(4\lambda^2(1+\varepsilon/2)^2 q^{1+\varepsilon})\big]/(2\varepsilon)$. As
# $\varepsilon \to 0$ the logarithm tends to $\log(sa/(4\lambda^2 q))$. If $s > 4\lambda^2 q/a$ it is positive and
# $\log\rho^\star \to +\infty$: the crossover runs off to infinity, as it must, since weight decay is the
# $\varepsilon = 0$ case and fails there. If $s < 4\lambda^2 q/a$ it is negative, and $\rho^\star$ tends to 0 on
# this side of the orbit.
# ```
#
# 3. Compute the critical temperature of weight decay for the other end of the orbit ($\rho \to 0$) at $\lambda = 0.01$
#    with `villani.weight_decay_threshold(consts.swapped(), 0.01)`, and the log form's crossover with
#    `villani.crossover_log_radius(consts.swapped(), Regularizer("log", 0.01), 1.0)`. Which end decides?
#    (You should find a critical temperature of about $3.35\times10^{-4}$.)
#
# ```{admonition} Solution
# :class: dropdown
# `consts.swapped()` exchanges the roles $(a, q) \leftrightarrow (b, k)$, so the critical temperature on the
# $\rho \to 0$ side is $4\lambda^2 k/b$, and the crossover is read in $\log(1/\rho)$. Weight decay must pass
# at both ends, so the smaller critical temperature, $4\lambda^2\min(q/a, k/b)$, decides. For the mild regularizers
# the quantity tends to $+\infty$ at both ends, and the larger of the two crossover radii tells how
# far out one must go.
# ```
#
