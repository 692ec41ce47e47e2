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
# # Chapter 1: The model
#
# :::{admonition} Overview
# This chapter fixes the model Part I studies: a single softmax self-attention layer
# that turns $n$ samples into an in-context regression predictor. You will write its prediction
# $\hat y_j = A h_j$ as a regression estimator, compute a softmax stably, differentiate the loss,
# and see why the choice of mask (may a token attend to itself?) decides whether the training
# loss means what we want. The answer: with every token in its own context, a layer trained on
# few samples can make each token copy itself and push its training loss below the noise level
# while its error on new points grows; leaving each token out of its own context removes this
# escape, so the book trains with leave-one-out. You need linear regression, the softmax and the
# chain rule for matrices. Optional on a first reading: the subsection "Two population optima,
# two different answers" and exercise 3. Time: about 2.75 hours with the four exercises.
# :::

# %% [markdown]
# ::::{dropdown} What the papers claim
# The summaries of {cite}`goel2026` tell Part I's story in four steps **[summary]**: a single
# softmax self-attention layer is trained to perform linear regression (this chapter); in the
# limit of infinitely many samples its regression problem is a nonconvex weighted matrix
# factorization (chapter 2); the global minima of the regularized population loss form a smooth
# manifold $S$, near which the loss is one-point strongly convex and one-point smooth
# (chapter 3); and Algorithm 1 (spectral initialization, a regularizer and a preconditioner,
# chapter 4) converges to them at a geometric rate. Their Theorem 2, as the summaries state it,
# bounds the excess population loss of the parameters $\theta_m$ after $m$ iterations on $n$
# samples **[summary]**:
#
# $$
# L(\theta_m) - L^\star \;\lesssim\; n^{-2}\log^6 n \;+\; \mu^m, \qquad \mu < 1 .
# $$ (eq-ch01-theorem2)
#
# The summaries call the first term a statistical bias; the second is the optimization error.
# They give no constants, no conditions and no value of $\mu$. The later version's abstract
# states a $1/n$ term in place of $n^{-2}\log^6 n$ **[abstract]**. The paper's experiments use
# $p = 20$, $d = 10$, $n = 500$ **[summary]**. Chapters 5 and 6 measure both terms in this
# book's reconstruction.
# ::::
#
# :::{dropdown} This book's choices
# - **[choice]** A Gaussian design $x \sim \mathcal N(0, \Sigma)$ (the summaries do not name the distribution): "The data".
# - **[choice]** The defaults $\kappa = 10$, $M$ with i.i.d. $\mathcal N(0, 1/(pd))$ entries and $\sigma = 0.1$: "The data".
# - **[choice]** The parametrisation by a value/output map $A$ and a merged key-query matrix $B$: "The layer".
# - **[choice]** Leave-one-out in every chapter (the sources do not say which mask the paper uses): "Two masks, and why the book uses leave-one-out".
# - **[choice]** The ray $B = c\,\hat\Sigma^{-1}$ along which the escape is measured: "Measuring the memorising escape".
# - **[choice]** The balanced optimum as the regularized algorithm's target (**[derived]** to reach the irreducible loss; chapter 3): "Two population optima, two different answers".
# :::

# %% mystnb={"code_prompt_show": "Imports and settings: show {type}"} tags=["hide-input"]
# %matplotlib inline
import numpy as np
import matplotlib.pyplot as plt

from attnlib import algorithm, attention, data, geometry
from attnbook.chapters import ch01
from attnbook.tables import result_table
from attnbook.plotting import NEUTRAL_GREY, OKABE_ITO, figure, use_book_style
from attnbook.slider import frame_slider

use_book_style()
SEED_PROBLEM, SEED_TRAIN, SEED_TEST, SEED_INIT, SEED_PROMPT = 2026, 1, 2, 3, 4
problem = data.default_problem(rng=np.random.default_rng(SEED_PROBLEM))
print(f"d = {problem.d}, p = {problem.p}, noise std = {problem.noise_std}, "
      f"cond(Sigma) = {np.linalg.cond(problem.Sigma):.3g}, L* = {problem.L_star:.3g}")

# %% [markdown]
# ## The data
#
# The task is random (synthetic) linear regression, as in the paper's experiments, with
# $p = 20$, $d = 10$ and $n = 500$. The sources do not name the distribution of $x$; the book
# uses a Gaussian design:
#
# $$
# x \sim \mathcal N(0, \Sigma) \in \mathbb R^d, \qquad
# y = M x + \varepsilon \in \mathbb R^p, \qquad
# \varepsilon \sim \mathcal N(0, \sigma^2 I_p).
# $$ (eq-ch01-1)
#
# The covariance, the true map and the noise level are not given by the sources; the book's
# defaults are: $\Sigma = O_\Sigma \operatorname{diag}(1, \dots, 1/\kappa) O_\Sigma^\top$ with a
# geometric spectrum, condition number $\kappa = 10$ and a Haar-random rotation $O_\Sigma$; $M$ with
# i.i.d. $\mathcal N(0, 1/(pd))$ entries; $\sigma = 0.1$. No predictor can beat the noise: every
# loss below is compared with the irreducible loss $L^\star = p\sigma^2/2$.
# `attnlib.data.default_problem` draws this task from one seeded generator; the training
# samples and 10,000 fresh test points come from their own seeds:

# %%
n, n_test = 500, 10_000
X, Y = problem.sample(n, rng=np.random.default_rng(SEED_TRAIN))
test_rng = np.random.default_rng(SEED_TEST)
X_test, Y_test = problem.sample(n_test, rng=test_rng)

# %% [markdown]
# ## The layer
#
# The layer has two parameter matrices (the book's parametrisation, consistent with the sources):
# a value/output map $A \in \mathbb R^{p\times d}$ and a merged key-query matrix
# $B \in \mathbb R^{d\times d}$. The $n$ samples are the tokens; each sample $x_j$ queries the
# others with logits $s_{ji} = x_j^\top B x_i$:
#
# $$
# \begin{aligned}
# w_{ji} &= \frac{\exp(x_j^\top B x_i)}{\sum_{k \in C(j)} \exp(x_j^\top B x_k)}
# \quad (i \in C(j)),\\
# h_j &= \sum_{i \in C(j)} w_{ji}\, x_i, \qquad \hat y_j = A h_j .
# \end{aligned}
# $$ (eq-ch01-2)
#
# The context $C(j)$ is either every sample except $j$ (**leave-one-out**, `mask="loo"`) or every
# sample (**all tokens**, `mask="all"`). The empirical loss is
#
# $$
# \hat L(A, B) = \frac{1}{2n} \sum_{j=1}^n \lVert y_j - A h_j \rVert^2 .
# $$ (eq-ch01-3)
#
# A new point $x$ is predicted with the $n$ training samples as its context,
# $\hat y(x) = A \sum_{i=1}^n \operatorname{softmax}_i(x^\top B x_i)\, x_i$
# (`attention.predict_new`); its error on fresh points is the **deployed test risk**.
#
# See {numref}`fig-ch01-schematic` for one query of the layer on a small prompt.

# %% mystnb={"figure": {"caption": "Schematic: one query of the layer on a prompt of six tokens $(x_i, y_i)$. The query token $x_3$ scores every key $x_i$ with the logit $s_{3i}$; the softmax weights $w_{3i}$ (bars, exact values at a point of $S$) differ between the two masks only in the query's own entry.", "name": "fig-ch01-schematic"}, "image": {"alt": "Six token boxes x_i over y_i, the third outlined as the query; below, the logit of each token and paired bars of its softmax weight with all tokens and with leave-one-out, where the third token's bar is replaced by a cross; then the formulas for h_3, the prediction and the loss term."}} tags=["hide-input"]
from matplotlib.patches import FancyBboxPatch

n_prompt, j = 6, 2                       # a prompt of six tokens; the query is token j + 1 = 3
X_prompt, _ = problem.sample(n_prompt, rng=np.random.default_rng(SEED_PROMPT))
B_bal = geometry.minimizer_manifold(problem.Sigma, problem.M).point()[1]   # B at a point of S
logits = X_prompt[j] @ B_bal @ X_prompt.T
weights = {m: attention.attention_weights(B_bal, X_prompt, mask=m)[j] for m in ("all", "loo")}
colours = {"all": OKABE_ITO["vermillion"], "loo": OKABE_ITO["blue"]}
fig, ax = figure(width="medium", height=4.9)
ax.set(xlim=(0.35, n_prompt + 0.65), ylim=(-0.2, 10.4))
ax.axis("off")
for i in range(n_prompt):
    query = i == j
    ax.add_patch(FancyBboxPatch((i + 0.62, 8.35), 0.76, 1.35, boxstyle="round,pad=0.04",
                                fc="white", ec=OKABE_ITO["orange"] if query else NEUTRAL_GREY,
                                lw=2.5 if query else 1.2))
    ax.text(i + 1, 9.3, f"$x_{i + 1}$", ha="center", va="center", fontsize=13)
    ax.text(i + 1, 8.7, f"$y_{i + 1}$", ha="center", va="center", fontsize=12, color=NEUTRAL_GREY)
    ax.text(i + 1, 6.95, f"{logits[i]:+.1f}", ha="center", va="center", fontsize=11)
    for mask, offset in (("all", -0.18), ("loo", 0.18)):
        w = weights[mask][i]
        ax.bar(i + 1 + offset, 3.2 * w, width=0.34, bottom=3.2, color=colours[mask],
               label={"all": "all tokens", "loo": "leave-one-out"}[mask] if i == 0 else None)
        if mask == "loo" and query:      # the masked entry: the query's own token
            ax.text(i + 1 + offset, 3.45, "×", ha="center", va="center", fontsize=16,
                    color=colours[mask])
        else:
            ax.text(i + 1 + offset, 3.2 + 3.2 * w + 0.08, f"{w:.2f}", ha="center",
                    va="bottom", fontsize=9, rotation=90)
ax.text(0.4, 10.2, "prompt: tokens $(x_i, y_i)$; query token $x_3$", fontsize=11, va="center")
ax.text(0.4, 7.6, r"logits $s_{3i} = (B^\top x_3)^\top x_i$: query $B^\top x_3$, keys $x_i$",
        fontsize=11, va="center")
ax.axhline(3.2, xmin=0.02, xmax=0.98, color="black", lw=0.8)
ax.text(0.4, 2.7, r"weights $w_{3i}$ (the $\times$: masked)", fontsize=11, va="center")
ax.text(0.4, 1.5, r"$h_3 = \sum_{i} w_{3i}\,x_i$,  $\hat y_3 = A h_3$", fontsize=12, va="center")
ax.text(0.4, 0.4, r"loss term $\frac{1}{2}\|y_3 - \hat y_3\|^2$", fontsize=12, va="center")
ax.legend(loc="lower right", bbox_to_anchor=(1.0, -0.02), fontsize=10, frameon=False)
plt.show()

# %% [markdown]
# Read {numref}`fig-ch01-schematic` from the top down. The prompt is six samples
# $(x_i, y_i)$ of the default task, and the query token is $x_3$. Its query vector $B^\top x_3$
# meets each key $x_i$ in the logit $s_{3i} = x_3^\top B x_i$ (the numbers under the tokens); the
# softmax turns the logits of the context $C(3)$ into the weights $w_{3i}$ (the bars); the values
# $x_i$ averaged with these weights give $h_3$, which $A$ maps to the prediction $\hat y_3$. The
# targets $y_i$ never enter the attention: they appear only in the loss. The two masks differ in
# one entry. With all tokens, $x_3$ also attends to itself (the third "all tokens" bar); leave-one-out
# removes that entry (the cross) and renormalises the others, so every other weight grows by the
# same factor $1/(1 - w_{33})$. The weights were computed by `attention.attention_weights` at the
# key-query matrix $B$ of a point of $S$, the balanced optimum that the algorithm of later
# chapters targets (chapter 3).

# %% [markdown]
# **Gradient.** With residuals $r_j = A h_j - y_j$, $g_j = A^\top r_j / n$ and
# $c_j = g_j^\top h_j$, reverse-mode differentiation through the softmax gives
#
# $$
# \nabla_A \hat L = \frac1n \sum_j r_j h_j^\top, \qquad
# \nabla_B \hat L = \sum_j x_j \Big[\sum_{i \in C(j)} w_{ji}\,(g_j^\top x_i - c_j)\, x_i\Big]^\top .
# $$ (eq-ch01-4)
#
# `attention.loss_and_grad` computes both in float64, a block of query rows at a time so that no
# $n \times n$ array is ever built (the tests compare it with central finite differences). The softmax subtracts each row's
# maximum before exponentiating, so even logits scaled by $10^6$ give finite results.

# %%
A0, B0 = algorithm.random_init(problem.d, problem.p,
                               rng=np.random.default_rng(SEED_INIT))
for mask in ch01.MASKS:
    loss, grad_A, grad_B = attention.loss_and_grad(A0, B0, X, Y, mask=mask)
    print(ch01.loss_and_gradient_line(mask, loss, grad_A, grad_B))
risk = attention.deployed_risk(A0, B0, X, X_test, Y_test)
print(f"deployed test risk at the same (A, B): {risk:.4f}")

# %% [markdown]
# At a random start of the book's scale (entries $\mathcal N(0, 0.3^2/d)$) the two
# masks give nearly the same loss and the deployed risk is close to both: with 500 tokens, one
# token's weight on itself is a small part of its average.
#
# ## Two masks, and why the book uses leave-one-out
#
# With leave-one-out, $\hat y_j$ is the in-context prediction of a point that is *not* in its own
# context, exactly how the layer is used on a new point. So $\hat L$ is an estimate of the deployed
# test risk. With all tokens in the context, a token can attend to itself. If every token's own
# logit is its largest, $x_j^\top B x_j > x_j^\top B x_i$ for all $i \neq j$, then scaling $B$ up
# sends $w_{jj} \to 1$, so $h_j \to x_j$ and the layer becomes the linear fit $\hat y_j = A x_j$ on
# the training points, while on a new point it copies the context sample with the largest logit.
# The empirical loss can then fall while the deployed risk grows: a **memorising escape**. The
# sources do not say which mask the paper uses; this book chooses leave-one-out for every
# chapter, and the next sections measure why.
#
# ### Attention weights
#
# The heatmaps show $w_{ji}$ for $n = 20$ samples, $B = c\, \hat\Sigma^{-1}$
# ($\hat\Sigma = X^\top X / n$, the whitening direction), for both masks. Row $j$ is query $j$.

# %% tags=["hide-input"]
n_small = 20
X_small, Y_small = problem.sample(n_small, rng=np.random.default_rng(SEED_TRAIN + 10))
whiten = np.linalg.inv(X_small.T @ X_small / n_small)


def show_weights(log10_scale: float) -> None:
    # Heatmaps of w_ji at B = 10**log10_scale * inv(Sigma_hat), n = 20, both masks.
    fig, axes = figure(1, 2, layout="constrained", height=3.0)
    for ax, mask in zip(axes, ("all", "loo")):
        weights = attention.attention_weights(10.0 ** log10_scale * whiten, X_small, mask=mask)
        image = ax.imshow(weights, vmin=0.0, vmax=1.0, cmap="magma")
        ax.set(title=f"mask = {mask!r}, $c = {10.0 ** log10_scale:.3g}$",
               xlabel="key token i", ylabel="query token j")
        ax.set_xticks(range(0, n_small, 5))
        ax.set_yticks(range(0, n_small, 5))
        ax.grid(False)
    fig.colorbar(image, ax=axes, label="weight $w_{ji}$", shrink=0.85)
    plt.show()


# %% mystnb={"figure": {"caption": "Attention weights $w_{ji}$ at a small scale, $c = 0.1$: every row is spread over all tokens, for both masks.", "name": "fig-ch01-weights-small"}, "image": {"alt": "Two 20 by 20 heatmaps of attention weights, all tokens (left) and leave-one-out (right), at c = 0.1; both are nearly uniform, the left one with a slightly brighter diagonal."}} tags=["hide-input"]
show_weights(-1.0)

# %% mystnb={"figure": {"caption": "Attention weights at a large scale, $c = 10$: each row collapses onto one token, the query itself with all tokens (the diagonal), another sample with leave-one-out.", "name": "fig-ch01-weights-large"}, "image": {"alt": "Two 20 by 20 heatmaps at c = 10: the all-tokens map is bright on the diagonal and dark elsewhere; the leave-one-out map has one bright cell per row off the diagonal."}} tags=["hide-input"]
show_weights(1.0)

# %% [markdown]
# {numref}`fig-ch01-weights-small` and {numref}`fig-ch01-weights-large` show the result. At $c = 0.1$ the weights are spread over all tokens (each about $1/n$), the diagonal of the
# all-tokens panel only slightly brighter. At $c = 10$ almost every row has collapsed onto a
# single token: with all tokens that token is the query itself (the bright diagonal), with
# leave-one-out it is some other sample. Move the slider below to see the transition.
#
# See {numref}`fig-ch01-weights-slider`.

# %% mystnb={"figure": {"caption": "Interactive: the attention weights of both masks as the scale $c$ moves from $10^{-2}$ to $10^{3}$. The frames were computed when the notebook ran; in Jupyter with a kernel the slider recomputes them.", "name": "fig-ch01-weights-slider"}} tags=["nbval-ignore-output", "hide-input"]
frame_slider(show_weights, controls={"log10_scale": np.arange(-2.0, 3.01, 0.5)},
             labels={"log10_scale": "log₁₀ c"}, initial={"log10_scale": 0.0},
             alt="Heatmaps of the attention weights for both masks at c = 10^{log10_scale:g}")

# %% [markdown]
# ## Measuring the memorising escape
#
# Fix $A = \hat A$, the least-squares fit of $Y$ on $X$ (the map the memorising layer would use),
# and move along the ray $B = c\,\hat\Sigma^{-1}$ (the direction is the book's choice). For each $c$ we record
# the empirical loss under each mask and the deployed test risk on 10,000 fresh points, all as
# excess over $L^\star$. We do this for $n = 20$ (small relative to $d = 10$) and the default
# $n = 500$.

# %%
scales = np.geomspace(1e-2, 1e3, 21)  # scales[8] = 1
samples = {20: (X_small, Y_small), 500: (X, Y)}
results = {size: attention.memorising_escape(*xy, X_test, Y_test, scales)
           for size, xy in samples.items()}
excess = {size: ch01.excess(curves, problem.L_star)
          for size, curves in results.items()}
ch01.escape_table(results, excess)

# %% mystnb={"figure": {"caption": "The memorising escape: along $B = c\\,\\hat\\Sigma^{-1}$ the all-tokens loss keeps falling while the deployed test risk rises; the leave-one-out loss tracks the deployed risk. Left $n = 20$, right $n = 500$; all as excess over $L^\\star$.", "name": "fig-ch01-escape"}, "image": {"alt": "Two panels against the scale c on a log axis: excess loss with all tokens, with leave-one-out, and the deployed test risk, for n = 20 and n = 500."}} tags=["hide-input"]
fig, axes = figure(1, 2, sharey=True, height=3.2)
styles = {"all": ("all tokens: $\\hat L - L^\\star$", OKABE_ITO["vermillion"], "-"),
          "loo": ("leave-one-out: $\\hat L - L^\\star$", OKABE_ITO["blue"], "-."),
          "deployed": ("deployed test risk $- L^\\star$", OKABE_ITO["black"], "--")}
for ax, (size, curves) in zip(axes, excess.items()):
    for key, (label, colour, line) in styles.items():
        ax.plot(scales, curves[key], line, color=colour, label=label)
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set(xscale="log", xlabel="scale $c$ in $B = c\\,\\hat\\Sigma^{-1}$",
           title=f"$n = {size}$, $d = {problem.d}$")
axes[0].set_ylabel("excess over $L^\\star$")
axes[0].legend(loc="center right")
plt.show()

# %% [markdown]
# **What the measurement shows ({numref}`fig-ch01-escape`).** At $n = 20$ every token's largest logit is its own (fraction
# 1.000 above), and the all-tokens loss falls as $c$ grows, from $+0.151$ above $L^\star$ at
# $c = 0.01$ to a plateau at $-0.044$: the in-sample least-squares residual, *below* the
# irreducible loss. Its minimum is at the largest scales tried, so minimising it pushes $B$ off to
# infinity. Meanwhile the deployed test risk has its minimum ($+0.157$) near $c = 0.3$ and rises
# to $+0.263$ at $c = 1000$. The leave-one-out loss has the deployed risk's shape (minimum near
# $c = 1$, rising at large $c$) and does not reward memorising; at this tiny $n$ it sits below the
# deployed risk (its minimum is $+0.097$).
#
# At $n = 500$ the escape is gone: only about half of the tokens (0.498) have their own logit
# largest, and all three curves have their minimum at the same finite scale, $c = 1$. The
# all-tokens loss is still optimistic along this ray ($+0.014$ at $c = 1$ against a deployed
# $+0.052$), because $B = \hat\Sigma^{-1}$ makes the softmax peaked enough that a token's own weight
# matters (next section). Leave-one-out tracks the deployed risk at every scale ($+0.048$ against
# $+0.052$ at $c = 1$, $+0.187$ against $+0.199$ at $c = 1000$).
#
# Whether some $B$ makes *every* token attend most to itself is a linear feasibility problem in
# $B$, one strict inequality per ordered pair of tokens:
#
# $$
# x_j^\top B\,(x_j - x_i) > 0 \qquad \text{for every } j \text{ and every } i \neq j .
# $$ (eq-ch01-5)
#
# It becomes infeasible once some sample lies close enough to a multiple $t x_j$, $t > 1$, of another. This chapter does not solve that problem,
# so it does not say at which $n$ the escape disappears: the measurement above shows only that at $n = 500$ the ray
# $c\hat\Sigma^{-1}$ no longer escapes.
#
# ### Two population optima, two different answers
#
# As $n \to \infty$, $h_j \to \Sigma B^\top x_j$ (chapter 2), so every $(A, B)$ with
# $A \Sigma B^\top = M$ reaches the irreducible loss in the infinite-data limit. Two such points, with the thin SVD
# $M\Sigma^{1/2} = \Phi \Gamma \Psi^\top$, are the *unbalanced* one and the *balanced* one that
# the regularised algorithm of later chapters targets (chapter 3 explains the balancing):
#
# $$
# \begin{aligned}
# \text{unbalanced:}\quad & A = M, & B &= \Sigma^{-1},\\
# \text{balanced:}\quad & A = \Phi \Gamma^{1/2} \Sigma^{-1/2}, & B &= \Sigma^{-1/2} \Psi \Gamma^{1/2} \Sigma^{-1/2} .
# \end{aligned}
# $$ (eq-ch01-6)
#
# At finite $n$ they are not equivalent:

# %%
optima = {"unbalanced": (problem.M, np.linalg.inv(problem.Sigma)),
          "balanced": geometry.minimizer_manifold(problem.Sigma,
                                                  problem.M).point()}
ch01.optima_table(optima, samples, X_test, Y_test, problem.L_star)

# %% [markdown]
# At the unbalanced point the softmax is peaked: a token puts on average 0.370 of its weight on
# itself at $n = 500$ (0.724 at $n = 20$), and the all-tokens loss ($+0.016$) badly underestimates
# the deployed risk ($+0.051$), which leave-one-out estimates well ($+0.050$). At the balanced
# point the self-weight is 0.003 at $n = 500$ and the two masks agree to about $10^{-4}$
# ($+0.0151$ and $+0.0152$, deployed $+0.0154$): this is the regime where "both masks behave alike".
# At $n = 20$ neither point is close to its infinite-data loss, and the masks differ even when
# balanced. So the mask matters whenever the softmax is sharp or $n$ is small, and leave-one-out
# is the one whose loss means what we want it to mean. The rest of Part I uses leave-one-out and
# $n = 500$ unless a chapter says otherwise.

# %% [markdown]
# ## Summary
#
# * The layer's prediction $\hat y_j = A h_j$ is an attention-weighted average of the context
#   samples mapped by $A$: an in-context regression estimator in which the key-query matrix $B$
#   sets how sharply each query selects its neighbours.
# * A softmax is computed stably by subtracting each row's maximum, and the gradient through it
#   has the closed form {eq}`eq-ch01-4`.
# * With all tokens in the context, scaling up $B$ lets every token attend to itself; at small
#   $n$ this memorising escape drives the training loss below the noise level while the error
#   on new points grows.
# * The leave-one-out loss predicts a point that is not in its own context, exactly how the
#   layer is used, so it tracks the deployed risk at every scale of $B$.
# * Points that are equally good in the infinite-data limit differ at finite $n$: a sharp
#   softmax makes the two masks disagree, a flat one makes them agree.

# %% [markdown]
# ## Exercises
#
# 1. Show that if $x_j^\top B x_j > x_j^\top B x_i$ for every $i \neq j$, then with all tokens in
#    the context $h_j \to x_j$ as $B \to cB$, $c \to \infty$. What happens to $h_j$ under
#    leave-one-out?
#
# ```{admonition} Solution
# :class: dropdown
# With all tokens, $w_{ji} = 1 / \sum_k \exp(c\,(x_j^\top B x_k - x_j^\top B x_i))$. For $i = j$
# every exponent with $k \neq j$ is negative, so the sum tends to $1$ and $w_{jj} \to 1$; the
# other weights tend to $0$, hence $h_j \to x_j$. Under leave-one-out the query's own token is
# excluded and $h_j$ tends to the context token $x_{i^\star}$ with the largest logit
# $x_j^\top B x_{i^\star}$ (an average over ties).
# ```
#
# 2. With $n = 2$ and leave-one-out, compute $h_1, h_2$ and $\nabla_B \hat L$. Check your answer
#    with `attention.loss_and_grad`.
#
# ```{admonition} Solution
# :class: dropdown
# Each token has one context token, so $w_{12} = w_{21} = 1$, $h_1 = x_2$, $h_2 = x_1$ whatever
# $B$ is: the loss does not depend on $B$ and $\nabla_B \hat L = 0$ (in the formula,
# $g_j^\top x_i - c_j = 0$ because $h_j = x_i$). `attention.loss_and_grad(A, B, X[:2], Y[:2])[2]`
# returns a matrix of zeros up to rounding.
# ```
#
# 3. Derive $\nabla_A \hat L$ and the softmax step of $\nabla_B \hat L$ from the chain rule
#    $\partial \hat L / \partial s_{ji} = w_{ji}\,(\partial \hat L/\partial w_{ji} -
#    \sum_k w_{jk}\, \partial \hat L/\partial w_{jk})$.
#
# ```{admonition} Solution
# :class: dropdown
# $\hat L$ depends on $A$ through $r_j = A h_j - y_j$, so $\nabla_A \hat L = \frac1n \sum_j r_j h_j^\top$.
# For $B$: $\partial \hat L/\partial h_j = A^\top r_j / n = g_j$ and $h_j = \sum_i w_{ji} x_i$, so
# $\partial \hat L/\partial w_{ji} = g_j^\top x_i$ and
# $\sum_k w_{jk}\, g_j^\top x_k = g_j^\top h_j = c_j$. Hence
# $\partial \hat L/\partial s_{ji} = w_{ji}(g_j^\top x_i - c_j)$, and since
# $\partial s_{ji}/\partial B = x_j x_i^\top$,
# $\nabla_B \hat L = \sum_{j,i} w_{ji}(g_j^\top x_i - c_j)\, x_j x_i^\top$, the formula {eq}`eq-ch01-4`.
# ```
#
# 4. Repeat the escape measurement with $B = c I$ instead of $c\hat\Sigma^{-1}$ at $n = 20$. Does
#    every token still attend to itself at large $c$? What does that do to the all-tokens loss?
#    `attention.memorising_escape` fixes the direction $\hat\Sigma^{-1}$, so write its loop
#    yourself (`attention.memorising_escape??` in a cell shows its source; or follow this idea): fit
#    $\hat A$ by least squares of `Y_small` on `X_small`, then for each $c$ in `scales` evaluate
#    `attention.loss(A_hat, c * np.eye(problem.d), X_small, Y_small, mask="all")` and
#    `attention.deployed_risk(A_hat, c * np.eye(problem.d), X_small, X_test, Y_test)`, both minus
#    $L^\star$. With the chapter's samples you should find an all-tokens excess loss of about
#    $+0.005$ at $c = 1000$ (to within $0.0005$).
#
# ````{admonition} Solution
# :class: dropdown
# With $B = cI$ a token attends to itself only if no other sample has a larger inner product with
# it, $\lVert x_j\rVert^2 > x_j^\top x_i$ for every $i \neq j$. With 20 samples in $d = 10$ that
# fails for some tokens, so the all-tokens loss no longer reaches the in-sample least-squares
# residual as $c$ grows, and the deployed risk still grows with $c$. The whitening direction
# $\hat\Sigma^{-1}$ is the one along which the escape is cleanest, not the only one. The
# measurement, with the names of the cells above:
#
# ```python
# A_hat = np.linalg.lstsq(X_small, Y_small, rcond=None)[0].T
# own_top = np.argmax(X_small @ X_small.T, axis=1) == np.arange(n_small)
# print(f"B = c I, n = {n_small}: {np.count_nonzero(~own_top)} of {n_small} tokens have another "
#       f"token's logit above their own")
# least_squares = np.sum((Y_small - X_small @ A_hat.T) ** 2) / (2 * n_small) - problem.L_star
# eye_all = np.array([attention.loss(A_hat, c * np.eye(problem.d), X_small, Y_small, mask="all")
#                     for c in scales]) - problem.L_star
# eye_deployed = np.array([attention.deployed_risk(A_hat, c * np.eye(problem.d), X_small, X_test, Y_test)
#                          for c in scales]) - problem.L_star
# print(f"in-sample least-squares residual - L*: {least_squares:+.4f}")
# for label, curve in (("L_hat all - L*", eye_all), ("deployed - L* ", eye_deployed)):
#     print(f"{label}: min {curve.min():+.4f} at c = {scales[curve.argmin()]:.3g}; "
#           f"{curve[-1]:+.4f} at c = {scales[-1]:.0f}")
#
# ```
# ````
