"""The book's figure style: one place for sizes, fonts, colours and line styles.

Every chapter calls :func:`use_book_style` once and draws with :func:`figure`, so that figures
are drawn at the size they are shown. The book's text column is about 690 CSS pixels wide and
figures are saved at :data:`DPI` = 100 dots per inch, so a figure ``w`` inches wide is a
``100 w`` pixel image shown at (almost) its natural size; :data:`WIDTHS` fixes the three
widths the book uses. A font of ``s`` points is then ``s * 100 / 72`` pixels tall on screen,
and the smallest font the style uses (9 pt, tick labels and legends) is 12.5 pixels, which is
9 pt at the 96 pixels per inch that browsers assume.

Colours come from the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), chosen
to stay apart under the common colour-vision deficiencies; every named series of the book
(:data:`SERIES`) also has its own line style and marker, so curves stay distinguishable in
grey. A method has one style across the whole book: ``plot_series(ax, x, y, "gd")``.
"""

from __future__ import annotations

from typing import Any

import matplotlib as mpl
import matplotlib.pyplot as plt
from cycler import cycler

from ._validation import check_int, check_positive

# plot_series and legend_below are thin wrappers of matplotlib calls (they accept whatever
# ax.plot and fig.legend accept, NaN gaps included) and stay outside the checked API.
__all__ = ["DPI", "WIDTHS", "OKABE_ITO", "CYCLE_COLOURS", "SERIES", "SERIES_GROUPS",
           "METHOD_COLOURS", "use_book_style", "figure", "new_figure", "series_style"]

#: Dots per inch of every saved figure (inline backend and ``savefig``).
DPI = 100

#: Figure widths in inches: "full" fills the ~690 px text column, "medium" and "small" are
#: for single plots that need less room (a square scatter plot, a small inset-like figure).
WIDTHS = {"full": 6.8, "medium": 5.4, "small": 4.2}

#: The Okabe-Ito palette (hex sRGB).
OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky blue": "#56B4E9",
    "bluish green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "reddish purple": "#CC79A7",
}

#: Colours of the default cycle for unnamed curves (yellow is left out: too light on white).
#: The cycle holds colours only: chapters use solid and dashed lines to mean things (train
#: and test, first and second block), so line styles come from the code or from SERIES.
CYCLE_COLOURS = tuple(OKABE_ITO[name] for name in
                      ("blue", "vermillion", "bluish green", "orange", "reddish purple",
                       "sky blue", "black"))

_MARK_EVERY = 0.1   # one marker per tenth of the axes diagonal, whatever the data density

#: One style per named series, the same in every chapter. Part I compares training methods
#: (``attnlib.algorithm.METHODS`` plus the OLS reference); Part II compares regularizers.
#: Two series that appear in the same figure differ in colour, line style and marker.
SERIES: dict[str, dict[str, Any]] = {
    # Part I: methods
    "algorithm1": {"color": OKABE_ITO["blue"], "linestyle": "-", "marker": "o",
                   "label": "Algorithm 1"},
    "random+precond+reg": {"color": OKABE_ITO["sky blue"], "linestyle": "--", "marker": "s",
                           "label": "random + precond + reg"},
    "gd": {"color": OKABE_ITO["vermillion"], "linestyle": "-.", "marker": "^", "label": "GD"},
    "sgd": {"color": OKABE_ITO["orange"], "linestyle": ":", "marker": "v", "label": "SGD"},
    "adam": {"color": OKABE_ITO["reddish purple"], "linestyle": (0, (5, 1.5, 1, 1.5, 1, 1.5)),
             "marker": "D", "label": "Adam"},
    "ols": {"color": OKABE_ITO["black"], "linestyle": "--", "marker": None, "label": "OLS fit"},
    # Part II: regularizers
    "none": {"color": OKABE_ITO["vermillion"], "linestyle": "-", "marker": "^",
             "label": "none"},
    "weight decay": {"color": OKABE_ITO["orange"], "linestyle": ":", "marker": "v",
                     "label": "weight decay"},
    "log": {"color": OKABE_ITO["blue"], "linestyle": "--", "marker": "o", "label": "log"},
    "power": {"color": OKABE_ITO["bluish green"], "linestyle": "-.", "marker": "s",
              "label": "power"},
}

#: Groups of series that share figures; the palette test checks every pair inside a group.
SERIES_GROUPS = {
    "methods": ("algorithm1", "random+precond+reg", "gd", "sgd", "adam", "ols"),
    "regularizers": ("none", "weight decay", "log", "power"),
}

#: Colour of each Part I method (kept for chapters that only need the colour).
METHOD_COLOURS = {name: SERIES[name]["color"] for name in SERIES_GROUPS["methods"]}


def use_book_style() -> None:
    """Set matplotlib defaults for the book: 100 dpi, 10/9 pt fonts, Okabe-Ito cycle."""
    mpl.rcParams.update({
        "figure.figsize": (WIDTHS["full"], 0.6 * WIDTHS["full"]),
        "figure.dpi": DPI,
        "savefig.dpi": DPI,
        "figure.autolayout": False,
        "figure.constrained_layout.use": True,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.prop_cycle": cycler(color=CYCLE_COLOURS),
        "font.size": 10,
        "axes.titlesize": 10,
        "axes.labelsize": 10,
        "xtick.labelsize": 9,
        "ytick.labelsize": 9,
        "legend.fontsize": 9,
        "legend.title_fontsize": 9,
        "figure.titlesize": 10,
        "legend.frameon": False,
        "lines.linewidth": 1.6,
        "lines.markersize": 5,
        "image.cmap": "viridis",
    })


def figure(nrows: int = 1, ncols: int = 1, *, width: str | float = "full",
           aspect: float = 0.62, **kwargs: Any):
    """A figure drawn at the size it is shown; returns ``(fig, axes)`` like ``plt.subplots``.

    ``width`` is a key of :data:`WIDTHS` or inches (at most the full column); each panel is
    ``aspect`` times as high as it is wide. At most three panels share a row: stack or split
    wider layouts, since a panel narrower than ~220 px cannot hold 9 pt labels.
    """
    inches = _width_inches(width)
    nrows, ncols = check_int("nrows", nrows, minimum=1), check_int("ncols", ncols, minimum=1)
    if ncols > 3:
        raise ValueError(f"ncols must be at most 3 at the book's column width, got {ncols}; "
                         "stack the panels in more rows or split the figure")
    aspect = check_positive("aspect", aspect)
    use_book_style()
    height = nrows * aspect * inches / ncols + 0.35
    return plt.subplots(nrows, ncols, figsize=(inches, height), **kwargs)


def new_figure(ncols: int = 1, nrows: int = 1, *, width: str | float = "full",
               height: float | None = None, **kwargs: Any):
    """Like :func:`figure` with an explicit ``height`` in inches (older chapters' signature)."""
    inches = _width_inches(width)
    if height is None:
        return figure(nrows, ncols, width=inches, **kwargs)
    nrows, ncols = check_int("nrows", nrows, minimum=1), check_int("ncols", ncols, minimum=1)
    height = check_positive("height", height)
    use_book_style()
    return plt.subplots(nrows, ncols, figsize=(inches, height), **kwargs)


def series_style(name: str, *, markers: bool = True) -> dict[str, Any]:
    """Matplotlib keyword arguments (colour, line style, marker, label) of a named series."""
    if name not in SERIES:
        raise ValueError(f"name must be one of {sorted(SERIES)}, got {name!r}")
    style = dict(SERIES[name])
    if not markers or style["marker"] is None:
        style.pop("marker")
    else:
        style["markevery"] = _MARK_EVERY
    return style


def plot_series(ax, x, y, name: str, *, markers: bool = True, **kwargs: Any):
    """``ax.plot(x, y)`` in the book-wide style of series ``name``; ``kwargs`` override it."""
    return ax.plot(x, y, **{**series_style(name, markers=markers), **kwargs})


def legend_below(fig, *, ncol: int = 3, **kwargs: Any):
    """One legend for the whole figure, centred under the panels (needs constrained layout).

    Collects the labelled artists of every axes once each (the first occurrence of a label).
    """
    handles, labels = [], []
    for ax in fig.axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    return fig.legend(handles, labels, loc="outside lower center", ncol=ncol, **kwargs)


def _width_inches(width: str | float) -> float:
    if isinstance(width, str):
        if width not in WIDTHS:
            raise ValueError(f"width must be one of {sorted(WIDTHS)} or inches, got {width!r}")
        return WIDTHS[width]
    width = check_positive("width", width)
    if width > WIDTHS["full"]:
        raise ValueError(f"width must be in (0, {WIDTHS['full']}] inches (the text column), "
                         f"got {width!r}")
    return width
