"""Schematics of the mechanisms: the pictures a chapter shows before it measures.

Each function draws one figure with :func:`attnbook.plotting.figure` (so it carries the book's
style and, when displayed, its narrow rendering for phones) and returns it; a notebook shows it
with ``plt.show()`` in a folded cell whose caption starts with "Schematic".

* :func:`gibbs_schematic` (chapter 10): the Gibbs density around a minimum, whose mean sits
  ``s / 4`` per direction (``sD / 4`` in all ``D``) above it; and along an orbit of minimizers,
  the chains' drift without a regularizer against their confinement with a mild one.
* :func:`vit_schematic` (chapter 11): the one-layer ViT regressor of the Darcy experiment, from
  the coefficient field through patches, embedding, one softmax attention layer and the readout
  to the solution field, with the Phase 1 -> Phase 2 protocol.
* :func:`spectral_ball_schematic` (Main results, Part I): the plane of chapter 3, with the orbit
  of minima, the points of ``S``, the balls of one-point strong convexity and the spectral
  start's distance to ``S``.
* :func:`villani_chain_schematic` (Main results, Part II): the chain from the Villani condition
  to a Poincare inequality and to the convergence of the Langevin law.
"""

from __future__ import annotations

import numpy as np

from attnlib._validation import as_matrix, check_in_range, check_int, check_positive
from attnbook.plotting import NEUTRAL_GREY, OKABE_ITO, figure

__all__ = ["MAX_DRAWN_SIZE", "gibbs_schematic", "vit_schematic", "spectral_ball_schematic",
           "villani_chain_schematic"]

#: Largest size a schematic labels or draws to scale (a width, a key dimension, a singular value):
#: beyond it the picture says nothing more.
MAX_DRAWN_SIZE = 10 ** 6


def _box(ax, x, y, text, colour, *, fontsize=10):
    """A rounded box of ``text`` centred at ``(x, y)``, outlined in ``colour``."""
    ax.text(x, y, text, ha="center", va="center", fontsize=fontsize, linespacing=1.5,
            bbox=dict(boxstyle="round,pad=0.45", fc="white", ec=colour, lw=1.6))


def _arrow(ax, start, end, colour="k", **kwargs):
    ax.annotate("", xy=end, xytext=start,
                arrowprops=dict(arrowstyle="-|>", color=colour, lw=1.6, mutation_scale=16,
                                **kwargs))


def gibbs_schematic(s: float = 2.0, lam: float = 0.15):
    """Schematic of the Gibbs measure ``mu_s ~ exp(-2 f / s)`` of Langevin training (chapter 10).

    Three panels. (a) Across a minimum, ``f = f* + x^2 / 2``: the Gibbs density (shaded) and the
    mean of ``f`` under it, ``s / 4`` above ``f*`` (``sD / 4`` over ``D`` quadratic directions).
    (b) Along an orbit of minimizers without a regularizer: the loss is constant along the orbit,
    so the chains' spread (ellipses at three times) keeps growing along it: no Gibbs measure.
    (c) With a mild regularizer ``lam |x|^2 log(1 + |x|^2)`` along the orbit: the Gibbs density
    (contours) is confined, and ``-grad R`` points back. ``s`` and ``lam`` only set the drawing.
    Returns the figure.
    """
    s, lam = check_positive("s", s), check_positive("lam", lam)
    fig, axes = figure(1, 3, height=2.9)
    ax = axes[0]
    x = np.linspace(-3.0, 3.0, 400)
    ax.fill_between(x, 0, 1.6 * np.exp(-x ** 2 / s), color=OKABE_ITO["sky blue"], alpha=0.55,
                    lw=0, label=r"Gibbs density $\propto e^{-2f/s}$")
    ax.plot(x, 0.5 * x ** 2, color="k", lw=2, label="loss $f$")
    ax.axhline(0.0, color=NEUTRAL_GREY, ls=":", lw=1.5)
    ax.axhline(s / 4, color=OKABE_ITO["vermillion"], ls="--", lw=1.8)
    ax.annotate("", xy=(-2.2, s / 4), xytext=(-2.2, 0.0),
                arrowprops=dict(arrowstyle="<->", lw=1.4, color=OKABE_ITO["vermillion"]))
    ax.text(-2.05, s / 8, "$s/4$", va="center", fontsize=10, color=OKABE_ITO["vermillion"])
    ax.text(1.45, s / 4 + 0.08, "mean of $f$", fontsize=9, color=OKABE_ITO["vermillion"],
            va="bottom")
    ax.text(2.9, -0.12, r"$f^\star$", fontsize=10, va="top", ha="right", color="k")
    ax.set(xlim=(-3.0, 3.0), ylim=(-0.6, 4.4), xticks=[], yticks=[],
           xlabel="one direction across the minimum", title="(a) around a minimum")
    ax.legend(loc="upper center", fontsize=9, frameon=False)

    xx, yy = np.meshgrid(np.linspace(-4.0, 4.0, 300), np.linspace(-1.6, 1.6, 200))
    for ax in axes[1:]:
        ax.axhline(0.0, color="k", ls="--", lw=1.2)
        ax.set(xlim=(-4.0, 4.0), ylim=(-1.6, 1.6), xticks=[], yticks=[],
               xlabel="along the orbit of minimizers", ylabel="across")
    ax = axes[1]
    ax.contourf(xx, yy, yy ** 2, levels=8, cmap="Blues", alpha=0.25)
    theta = np.linspace(0.0, 2 * np.pi, 200)
    for t, shade in ((1, 0.9), (10, 0.6), (100, 0.3)):
        width = 0.32 * np.sqrt(t)
        ax.plot(width * np.cos(theta), 0.45 * np.sin(theta), color=OKABE_ITO["blue"],
                alpha=shade, lw=2)
    ax.text(0.0, 0.6, "chains at $t = 1, 10, 100$", fontsize=9, ha="center", va="bottom")
    for sign in (1, -1):
        _arrow(ax, (sign * 2.4, -1.05), (sign * 3.8, -1.05), OKABE_ITO["blue"])
    ax.text(0.0, -1.05, "drift", ha="center", va="center", fontsize=9)
    ax.text(-3.9, 1.45, "$L$ constant on the orbit", fontsize=9, va="top")
    ax.set_title("(b) no regularizer: no $\\mu_s$")
    ax = axes[2]
    density = np.exp(-2 * (0.5 * yy ** 2 + lam * xx ** 2 * np.log1p(xx ** 2)) / s)
    ax.contourf(xx, yy, density, levels=np.linspace(0.05, 1.0, 7), cmap="Blues", alpha=0.8)
    for sign in (1, -1):
        _arrow(ax, (sign * 3.8, 0.9), (sign * 2.7, 0.9), OKABE_ITO["vermillion"])
        ax.text(sign * 3.3, 1.05, r"$-\nabla R$", ha="center", va="bottom", fontsize=9,
                color=OKABE_ITO["vermillion"])
    ax.text(0.0, -1.4, r"confined: $\mu_s$ exists", ha="center", va="bottom", fontsize=9)
    ax.set_title("(c) mild regularizer")
    return fig


def vit_schematic(a_field: np.ndarray, u_field: np.ndarray, *, patch: int, width: int,
                  key_dim: int):
    """Schematic of chapter 11's one-layer ViT regressor and its two training phases.

    From the top: the coefficient field ``a_field`` cut into patches of ``patch x patch`` nodes
    (the tokens), the patch embedding to ``width`` features, one softmax attention layer with
    query and key matrices of ``key_dim`` columns (the weights Phase 2 trains, in vermillion),
    the per-token readout, and the solution field ``u_field``; at the bottom, Phase 1 (every
    weight) and Phase 2 (only ``W_Q, W_K``, three losses, three optimisers). Returns the figure
    (drawn at the "small" width).
    """
    a_field = as_matrix("a_field", a_field)
    size = a_field.shape[0]
    a_field = as_matrix("a_field", a_field, shape=(size, size))
    u_field = as_matrix("u_field", u_field, shape=(size, size))
    patch = check_int("patch", patch, minimum=1, maximum=size)
    width = check_int("width", width, minimum=1, maximum=MAX_DRAWN_SIZE)
    key_dim = check_int("key_dim", key_dim, minimum=1, maximum=MAX_DRAWN_SIZE)
    if size % patch:
        raise ValueError(f"patch must divide the field's size {size}, got {patch!r}")
    tokens = (size // patch) ** 2
    phase2 = OKABE_ITO["vermillion"]
    fig, ax = figure(width="small", height=7.8)
    ax.set(xlim=(0, 10), ylim=(-0.4, 19.4))
    ax.axis("off")
    ax.imshow(a_field.T, origin="lower", extent=(0.3, 3.3, 15.9, 18.9), aspect="auto",
              cmap="cividis")
    for k in range(1, size // patch):
        edge = 3.0 * k * patch / size
        ax.plot([0.3 + edge] * 2, [15.9, 18.9], color="white", lw=1.2)
        ax.plot([0.3, 3.3], [15.9 + edge] * 2, color="white", lw=1.2)
    ax.text(3.7, 17.4, f"coefficient field $a$\ncut into $N = {tokens}$ patches\nof "
            f"${patch}\\times{patch}$ nodes: the tokens", va="center", fontsize=10)
    _arrow(ax, (1.8, 15.7), (1.8, 14.75))
    _box(ax, 5.0, 13.9, f"patch embedding, width $D = {width}$\n"
         r"$X = PE + \mathbf{1}b_E^\top + \mathrm{Pos}$", "k")
    _arrow(ax, (5.0, 12.95), (5.0, 12.05))
    _box(ax, 5.0, 10.6, "one softmax attention layer\n"
         r"$A = \mathrm{RowSoftmax}(XW_Q(XW_K)^\top/\sqrt{d_k})$" "\n"
         r"$H = X + AXW_V$", phase2)
    ax.text(5.0, 8.85, f"$W_Q, W_K$: ${width}\\times{key_dim}$ each", ha="center", va="center",
            fontsize=9, color=phase2)
    _arrow(ax, (5.0, 8.45), (5.0, 7.75))
    _box(ax, 5.0, 7.0, "readout per token\n"
         r"$\hat Y = \tanh(HW_1 + \mathbf{1}b_1^\top)W_2 + \mathbf{1}b_2^\top$", "k")
    _arrow(ax, (1.8, 6.1), (1.8, 5.5))
    ax.imshow(u_field.T, origin="lower", extent=(0.3, 3.3, 2.4, 5.4), aspect="auto")
    for k in range(1, size // patch):
        edge = 3.0 * k * patch / size
        ax.plot([0.3 + edge] * 2, [2.4, 5.4], color="white", lw=0.8)
        ax.plot([0.3, 3.3], [2.4 + edge] * 2, color="white", lw=0.8)
    ax.text(3.7, 3.9, "patches put back:\nthe solution field $u$", va="center", fontsize=10)
    _box(ax, 2.2, 1.0, "Phase 1\ntrain every\nweight (Adam)", "k", fontsize=9)
    _box(ax, 6.75, 1.0, "Phase 2: only $W_Q, W_K$\nnone, log or power $R$\nAdam, SGD, noisy SGD",
         phase2, fontsize=9)
    _arrow(ax, (3.75, 1.0), (4.3, 1.0))
    return fig


def spectral_ball_schematic(s_min: float, r_start: float, lam: float = 1.0):
    """Schematic of Part I's landscape on chapter 3's plane (Main results).

    On the plane ``(u, v)`` of the last columns of ``(U, V)`` the regularized loss is
    ``Q - L* = (uv - s_min)^2 / 2 + lam (u^2 - v^2)^2 / 8`` (eq-ch03-5), shaded on a log scale;
    the ``GL(d)`` orbit of minima of ``L`` is the hyperbola ``uv = s_min`` (dashed); the
    regularizer keeps its two points ``+-(sqrt(s_min), sqrt(s_min))`` of ``S``; the saddle sits
    at the origin; the balls of one-point strong convexity have radius ``sqrt(2 s_min)``; the
    dash-dotted circle has the spectral start's distance ``r_start`` to ``S``; the legend gives
    both radii. Returns the figure (drawn at the "small" width).
    """
    s_min = check_in_range("s_min", s_min, 0.0, MAX_DRAWN_SIZE, closed=(False, True))
    r_start = check_in_range("r_start", r_start, 0.0, MAX_DRAWN_SIZE, closed=(False, True))
    lam = check_positive("lam", lam)
    from matplotlib.patches import Circle

    root, ball = np.sqrt(s_min), np.sqrt(2 * s_min)
    edge = 2.2 * ball
    grid = np.linspace(-edge, edge, 301)
    uu, vv = np.meshgrid(grid, grid)
    excess = 0.5 * (uu * vv - s_min) ** 2 + lam / 8 * (uu ** 2 - vv ** 2) ** 2
    fig, ax = figure(width="small", height=4.9, layout="constrained")
    ax.contourf(uu, vv, np.log10(excess + 1e-3 * s_min ** 2), levels=14, cmap="Greens_r",
                alpha=0.75)
    branch = np.geomspace(s_min / edge, edge, 100)
    for sign in (1, -1):
        ax.plot(sign * branch, sign * s_min / branch, "--", color=OKABE_ITO["blue"], lw=2,
                label=r"orbit of minima of $L$" if sign == 1 else None)
        ax.add_patch(Circle((sign * root, sign * root), ball, fill=False, lw=1.5, color="k",
                            label=f"ball, radius {ball:.3g}" if sign == 1 else None))
    ax.add_patch(Circle((root, root), r_start, fill=False, lw=2.2, ls="-.",
                        color=OKABE_ITO["orange"],
                        label=f"spectral start, {r_start:.3g} from $S$"))
    ax.plot([root, -root], [root, -root], "o", color="k", ms=8, label="$S$ (minima kept)")
    ax.plot(0, 0, "X", color=OKABE_ITO["vermillion"], ms=10, label="saddle")
    ax.set(xlim=(-edge, edge), ylim=(-edge, edge), aspect="equal", xticks=[], yticks=[],
           xlabel="$u$ (last column of $U$)", ylabel="$v$ (last column of $V$)")
    fig.legend(loc="outside lower center", ncol=2, fontsize=9)
    return fig


def villani_chain_schematic():
    """Schematic of Part II's argument (chapter 7, Main results): the Villani condition on the
    potential ``f`` gives a Poincare inequality for ``mu_s ~ exp(-2 f / s)`` (Villani's theorem),
    which gives exponential convergence of the Langevin law in chi-square (Theorem 3.3, through
    Shi, Su and Jordan); Theorems 3.1 and 3.2 supply the condition for attention and LoRA.
    Returns the figure (drawn at the "small" width)."""
    from matplotlib.patches import FancyBboxPatch

    fig, ax = figure(width="small", height=5.2)
    ax.set(xlim=(0, 10), ylim=(0, 13.6))
    ax.axis("off")
    boxes = [(10.6, "Villani condition on $f$",
              r"$\Vert\nabla f\Vert^2/s-\Delta f\ \to\ +\infty$"),
             (6.2, "Poincaré inequality for $\\mu_s\\propto e^{-2f/s}$",
              r"$\mathrm{Var}_{\mu_s}g\ \leq\ C_P\int\Vert\nabla g\Vert^2d\mu_s$"),
             (1.8, r"Langevin law $p_t\ \to\ \mu_s$",
              r"$\chi^2(p_t\Vert\mu_s)\leq e^{-st/C_P}\chi^2(p_0\Vert\mu_s)$")]
    for y, head, formula in boxes:
        ax.add_patch(FancyBboxPatch((0.2, y - 1.05), 9.6, 2.1, boxstyle="round,pad=0.1",
                                    fill=False, lw=1.5, ec=OKABE_ITO["blue"]))
        ax.text(5, y + 0.45, head, ha="center", va="center", fontsize=10, weight="bold")
        ax.text(5, y - 0.45, formula, ha="center", va="center", fontsize=10)
    for y0, y1, name in ((9.4, 7.4, "Villani's theorem"),
                         (5.0, 3.0, "Theorem 3.3 (Shi, Su, Jordan)")):
        _arrow(ax, (1.2, y0), (1.2, y1))
        ax.text(1.7, (y0 + y1) / 2, name, fontsize=10, va="center", style="italic")
    ax.annotate("Theorems 3.1, 3.2: attention, LoRA", xy=(5, 11.75), xytext=(5, 13.1),
                ha="center", va="center", fontsize=10,
                arrowprops=dict(arrowstyle="-|>", lw=1.5, color=NEUTRAL_GREY))
    return fig
