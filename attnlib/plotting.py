"""The book's figure style: one place for sizes, fonts and colours used by every chapter."""

from __future__ import annotations

import matplotlib as mpl
import matplotlib.pyplot as plt

from ._validation import check_int, check_positive

__all__ = ["METHOD_COLOURS", "use_book_style", "new_figure"]

#: Colours for the methods compared across Part I (consistent from chapter to chapter).
METHOD_COLOURS = {
    "algorithm1": "#0b6e4f",
    "random+precond+reg": "#4c9be8",
    "gd": "#d1495b",
    "sgd": "#edae49",
    "adam": "#6c4f9f",
    "ols": "#333333",
}


def use_book_style() -> None:
    """Set matplotlib defaults for the book: readable fonts, light grid, tight layout, 110 dpi."""
    mpl.rcParams.update({
        "figure.figsize": (6.4, 4.0),
        "figure.dpi": 110,
        "savefig.dpi": 110,
        "figure.autolayout": True,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "font.size": 10,
        "axes.titlesize": 11,
        "legend.fontsize": 9,
        "legend.frameon": False,
        "image.cmap": "viridis",
    })


def new_figure(ncols: int = 1, nrows: int = 1, *, width: float = 6.4, height: float = 4.0,
               **kwargs):
    """Create a figure with the book style; returns ``(fig, axes)`` like ``plt.subplots``."""
    ncols = check_int("ncols", ncols, minimum=1)
    nrows = check_int("nrows", nrows, minimum=1)
    width = check_positive("width", width)
    height = check_positive("height", height)
    use_book_style()
    return plt.subplots(nrows, ncols, figsize=(width, height), **kwargs)
