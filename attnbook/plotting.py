"""The book's figure style: one place for sizes, fonts, colours and line styles.

Every chapter calls :func:`use_book_style` once and draws with :func:`figure`, so that figures
are drawn at the size they are shown. The book's text column is about 690 CSS pixels wide and
figures are laid out at :data:`DPI` = 100 dots per inch, so a figure ``w`` inches wide is shown
``100 w`` CSS pixels wide; :data:`WIDTHS` fixes the three widths the book uses. A font of ``s``
points is then ``s * 100 / 72`` CSS pixels tall, and the smallest font the style uses (9 pt,
tick labels and legends) is 12.5 CSS pixels, which is 9 pt at the 96 pixels per inch that
browsers assume.

In a notebook, :func:`use_book_style` makes every displayed figure a :func:`figure_png`: pixels
at :data:`PIXEL_RATIO` times that size (sharp on 2x screens and projectors), a 256-colour
palette (about the bytes of a plain 1x image) and three text records the book's browser check
reads: the smallest text on the figure in CSS pixels at its natural size
(:func:`smallest_text_px`), the pairs of series a colour-blind reader cannot tell apart
(:func:`confusable_series`) and the faults of its layout (unlabelled ticks, overlapping
texts). A figure too wide for a phone also carries its :func:`narrow_figure` rendering.

Colours come from the Okabe-Ito palette (Okabe & Ito 2008, "Color Universal Design"), chosen
to stay apart under the common colour-vision deficiencies; every named series of the book
(:data:`SERIES`) also has its own line style and marker, so curves stay distinguishable in
grey. A method has one style across the whole book: ``plot_series(ax, x, y, "gd")``.
"""

from __future__ import annotations

import io
import itertools
import math
import warnings
from typing import TYPE_CHECKING, Any

import matplotlib as mpl
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
from cycler import cycler

from attnlib._validation import check_in_range, check_int, check_positive

if TYPE_CHECKING:
    from attnlib.regularizers import Regularizer
    from attnlib.villani import OrbitConstants, OrbitCrossovers

# plot_series and legend_below are thin wrappers of matplotlib calls (they accept whatever
# ax.plot and fig.legend accept, NaN gaps included) and stay outside the checked API.
__all__ = ["DPI", "PIXEL_RATIO", "WIDTHS", "OKABE_ITO", "NEUTRAL_GREY", "CYCLE_COLOURS",
           "SERIES", "SERIES_GROUPS", "METHOD_COLOURS", "CVD", "MIN_DELTA_E", "MAX_COLUMNS",
           "MAX_ROWS", "use_book_style", "figure",
           "series_style", "delta_e", "smallest_text_px", "confusable_series", "figure_png",
           "png_records", "orbit_schematic", "tilted_orbit_schematic", "TILTED_ORBIT_CURVES",
           "LEGEND_LOCATIONS", "NARROW_WIDTH", "SHRINK_WIDTH", "SHRUNK_WIDTH",
           "NARROW_METADATA_KEY", "PHONE_COLUMN_PX", "MIN_PHONE_TEXT_PX", "narrow_figure"]

#: Dots per inch of the figure layout (one CSS pixel per dot when shown at natural size).
DPI = 100

#: Image pixels per CSS pixel of a displayed figure (2, sharp on 2x screens).
PIXEL_RATIO = 2

#: The most panels side by side in one figure row (a panel narrower than ~220 px cannot
#: hold 9 pt labels).
MAX_COLUMNS = 3
#: The most rows of panels in one figure (the book stacks at most 4; beyond a few dozen a
#: figure is unreadable, and matplotlib's layout cost grows with every axes).
MAX_ROWS = 50

#: Width in CSS pixels of the book's text column on a 390 px phone (the page's margins take
#: the rest): a wider figure is shown shrunk to it.
PHONE_COLUMN_PX = 342

#: Smallest text in CSS px that a figure may show on that phone. A figure whose text would
#: be smaller there gets a narrow rendering (see narrow_figure).
MIN_PHONE_TEXT_PX = 11.0

#: Width in inches of a figure's narrow rendering for phones (360 CSS px, about 375 with its
#: margins), which a 390 px phone shows at 0.91 of its size: its 9 pt text is 11.4 CSS px.
NARROW_WIDTH = 3.6

#: Widest figure (inches) whose panels, in one column, narrow_figure redraws smaller as they
#: are ("medium" and a little more); wider ones are laid out again at NARROW_WIDTH.
SHRINK_WIDTH = 5.6
#: Width in inches of the widest such smaller drawing (400 CSS px). A drawing whose smallest
#: text is large enough is shrunk to it, others to as little as NARROW_WIDTH.
SHRUNK_WIDTH = 4.0

#: Figure widths in inches; "full" fills the ~690 px text column, "medium" and "small" are
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

#: Grey for reference lines, guides and context drawn behind the series (not a series colour).
NEUTRAL_GREY = "#999999"

#: Colours of the default cycle for unnamed curves (yellow is left out, too light on white).
#: The cycle holds colours only: chapters use solid and dashed lines to mean things (train
#: and test, first and second block), so line styles come from the code or from SERIES.
CYCLE_COLOURS = tuple(OKABE_ITO[name] for name in
                      ("blue", "vermillion", "bluish green", "orange", "reddish purple",
                       "sky blue", "black"))

_MARK_EVERY = 0.1   # one marker per tenth of the axes diagonal, whatever the data density

#: One style per named series, the same in every chapter. Part I compares training methods
#: (keys of ``attnlib.algorithm.METHODS`` plus the OLS reference); Part II compares
#: regularizers (keys: ``attnlib.regularizers.REGULARIZER_NAMES``; ``label`` is how they print).
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
    "weight_decay": {"color": OKABE_ITO["orange"], "linestyle": ":", "marker": "v",
                     "label": "weight decay"},
    "log": {"color": OKABE_ITO["blue"], "linestyle": "--", "marker": "o", "label": "log"},
    "power": {"color": OKABE_ITO["bluish green"], "linestyle": "-.", "marker": "s",
              "label": "power"},
}

#: Groups of series that share figures; the palette test checks every pair inside a group.
SERIES_GROUPS = {
    "methods": ("algorithm1", "random+precond+reg", "gd", "sgd", "adam", "ols"),
    "regularizers": ("none", "weight_decay", "log", "power"),
}

#: Colour of each Part I method (kept for chapters that only need the colour).
METHOD_COLOURS = {name: SERIES[name]["color"] for name in SERIES_GROUPS["methods"]}


#: Colour-vision simulations after Machado, Oliveira & Fernandes (2009), severity 1.0, acting on
#: linear sRGB.
CVD = {
    "normal vision": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}

#: Smallest CIE76 colour difference between two series that share a line style and marker
#: (about 2.3 is "just noticeable"; the old green/red pair #2ca02c/#d62728 is 7.3 under
#: deuteranopia).
MIN_DELTA_E = 15.0


def use_book_style() -> None:
    """Set matplotlib defaults for the book: 100 dpi, 10/9 pt fonts, Okabe-Ito cycle.

    In IPython it also makes :func:`figure_png` the PNG form of every displayed figure.
    """
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
    _register_png_formatter()


def _register_png_formatter() -> None:
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None:
        return
    # Load the backend first: importing matplotlib's inline backend (at a notebook's first
    # figure) re-selects its own PNG formatter and would replace this one.
    plt.close(plt.figure())
    formatter = shell.display_formatter.formatters["image/png"]
    formatter.for_type(mpl.figure.Figure, _displayed_png)


#: Key of a displayed figure's output metadata that holds its narrow rendering (base64 PNG),
#: which the book's HTML build (book/_ext/book_html.py) serves to screens below 600 px.
NARROW_METADATA_KEY = "attn:narrow-png"


def _displayed_png(fig) -> tuple[str, dict[str, Any]] | None:
    """IPython's PNG form of a figure: base64 :func:`figure_png`, its CSS size and, for a
    figure wider than :data:`NARROW_WIDTH`, its :func:`narrow_figure` rendering."""
    import base64

    if not fig.axes and not fig.texts and not fig.images:
        return None   # an empty figure shows nothing, as in the inline backend
    png = figure_png(fig)
    width, height = _png_size(png)
    metadata: dict[str, Any] = {"width": round(width / PIXEL_RATIO),
                                "height": round(height / PIXEL_RATIO)}
    narrow = narrow_figure(fig)
    if narrow is not None:
        metadata[NARROW_METADATA_KEY] = base64.b64encode(figure_png(narrow)).decode("ascii")
        plt.close(narrow)
    return base64.b64encode(png).decode("ascii"), metadata


def _png_size(png: bytes) -> tuple[int, int]:
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def figure_png(fig, *, pixel_ratio: int = PIXEL_RATIO) -> bytes:
    """The figure as a palette PNG at ``pixel_ratio`` image pixels per CSS pixel.

    Carries three text chunks for the book's checks: ``attn:min-text-px`` (the
    :func:`smallest_text_px` of the figure), ``attn:confusable`` (the
    :func:`confusable_series` pairs, ``;``-separated, empty when there are none) and
    ``attn:layout-faults`` (what a reader would see broken, ``;``-separated, empty when
    nothing is: a panel with ticks but no tick labels and no panel beside or below it that
    shows them for the same scale, and texts, such as axis labels, tick labels, titles,
    legends and annotations, that overlap).
    """
    from PIL import Image, PngImagePlugin

    pixel_ratio = check_int("pixel_ratio", pixel_ratio, minimum=1)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI * pixel_ratio, bbox_inches="tight",
                metadata={"Software": None})
    image = Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")
    palette = image.quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                             dither=Image.Dither.NONE)
    info = PngImagePlugin.PngInfo()
    info.add_text("attn:min-text-px", f"{smallest_text_px(fig):.2f}")
    info.add_text("attn:confusable", ";".join(
        f"{a} / {b} ({vision})" for a, b, vision in confusable_series(fig)))
    info.add_text("attn:layout-faults", ";".join(_layout_faults(fig)))
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True, pnginfo=info)
    return out.getvalue()


def narrow_figure(fig) -> "matplotlib.figure.Figure | None":
    """A copy of ``fig`` laid out for a phone, or None when it needs none or cannot have one.

    A 390 px phone shows a figure in a column of :data:`PHONE_COLUMN_PX` CSS pixels; a figure
    whose smallest text would be under :data:`MIN_PHONE_TEXT_PX` there gets a copy that keeps
    the fonts and is narrower. A grid of images (two rows or more of two columns or more,
    every panel an image, as truth, prediction and error side by side) keeps its columns at
    :data:`NARROW_WIDTH`, with tick labels and axis labels only on its outer panels when the
    panels show the same extent. A figure whose panels (axes placed on a grid, with their
    twins, insets and colour bars) already form one column and that is at most
    :data:`SHRINK_WIDTH` wide is drawn as it is, smaller: as wide as keeps its text at
    :data:`MIN_PHONE_TEXT_PX`, between :data:`NARROW_WIDTH` and :data:`SHRUNK_WIDTH`. Any
    other is :data:`NARROW_WIDTH` wide, its panels stacked in one column in reading order,
    left to right then top to bottom; a panel keeps its height, within 0.45 and 0.8 of the new
    width (a single wide panel whose texts would then overlap is tried shrunk, and a grid or
    a shrunk figure whose texts would overlap is tried stacked). A stacked panel whose axis
    was shared with a neighbour that showed its tick labels gets them (and the neighbour's
    axis label) back. Titles and axis labels wrap, a legend wider than the
    figure loses columns, a legend taller or wider than its panel moves below the figure
    (every axes' legend does where texts would otherwise overlap), and minor tick labels that
    would overlap are left out; the figure grows until every panel has its height.

    None when ``fig`` shows its text at :data:`MIN_PHONE_TEXT_PX` or more on the phone as it
    is, has no gridded panel, would have more overlapping texts (titles, axis and tick
    labels, legends, annotations) than it has, or cannot be copied (pickled).
    """
    if _phone_text_px(fig) >= MIN_PHONE_TEXT_PX:
        return None
    panels = _panel_groups(fig)
    if not panels:
        return None
    rows = {row for (row, _), _ in panels}
    columns = {column for (_, column), _ in panels}
    if len(rows) > 1 and len(columns) > 1 and all(
            any(ax.images for ax in axes) for _, axes in panels):
        layouts = ["grid", "stack"]
    elif _draws_smaller(fig):
        layouts = ["shrink", "stack"]
    else:
        layouts = ["stack", "shrink"] if len(columns) == 1 else ["stack"]
    collisions = _colliding_texts(fig)
    for layout in layouts:
        copy = _copy_figure(fig)
        if copy is None:
            return None
        with warnings.catch_warnings():   # a layout on its way may not fit yet
            warnings.filterwarnings("ignore", "constrained_layout not applied")
            _lay_out_narrow(copy, layout)
            if _colliding_texts(copy) > collisions:
                _move_legends_below(copy)
            if _colliding_texts(copy) <= collisions:
                return copy
        plt.close(copy)   # texts that were apart now overlap
    return None


def _move_legends_below(fig) -> None:
    """Move every axes' legend under the figure (where a layout engine makes room for it
    there): the panels get their width back and no legend covers their texts."""
    if fig.get_layout_engine() is None:
        return
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is not None:
            _fewer_legend_columns(fig, _legend_below(fig, legend))


def _draws_smaller(fig) -> bool:
    """Whether ``narrow_figure`` draws ``fig`` as it is, only smaller: its panels form one
    column and it is at most :data:`SHRINK_WIDTH` wide."""
    return (len({column for (_, column), _ in _panel_groups(fig)}) == 1
            and fig.get_figwidth() <= SHRINK_WIDTH)


def _phone_text_px(fig) -> float:
    """The smallest text of ``fig`` in CSS px as a 390 px phone shows it: whole, shrunk to
    its :data:`PHONE_COLUMN_PX` column when it is wider."""
    return smallest_text_px(fig) * min(1.0, PHONE_COLUMN_PX / _css_width(fig))


def _css_width(fig) -> float:
    """The width in CSS px of ``figure_png(fig)``: the tight bounding box and its margins."""
    fig.canvas.draw()
    return (fig.get_tightbbox().width + 2 * mpl.rcParams["savefig.pad_inches"]) * DPI


def _copy_figure(fig) -> "matplotlib.figure.Figure | None":
    """A deep copy of ``fig`` (through pickle), or None when it cannot be pickled; it has its
    own Agg canvas, so that drawing it lays it out and measures its texts."""
    import pickle

    from matplotlib.backends.backend_agg import FigureCanvasAgg

    try:
        copy = pickle.loads(pickle.dumps(fig))
    except (pickle.PicklingError, TypeError, AttributeError):
        return None
    plt.close(copy)   # unpickling may register it with pyplot; it is only rendered
    FigureCanvasAgg(copy)   # an unpickled figure's canvas does not draw
    return copy


def _lay_out_narrow(fig, layout: str) -> None:
    """Resize ``fig`` for a phone: ``"shrink"`` keeps the drawing, narrower; ``"grid"`` keeps
    the grid at :data:`NARROW_WIDTH`; ``"stack"`` puts its panels in one column at
    :data:`NARROW_WIDTH`. Then the texts are fitted (see ``_fit_texts``)."""
    width, height = fig.get_size_inches()
    if layout == "shrink":
        margin = _css_width(fig) / DPI - width     # the tight box's margin, about fixed
        # 3% to spare: the tight box moves a little when the drawing is laid out again
        fitting = (PHONE_COLUMN_PX * smallest_text_px(fig) / (1.03 * MIN_PHONE_TEXT_PX * DPI)
                   - margin)
        narrow = min(max(fitting, NARROW_WIDTH), SHRUNK_WIDTH)
        fig.set_size_inches(narrow, height * narrow / width)
        _fit_texts(fig)
    elif layout == "grid":
        fig.set_size_inches(NARROW_WIDTH, height * NARROW_WIDTH / width)
        _label_outer_panels(fig)
        _one_colour_bar_per_scale(fig)
        _fit_texts(fig, titles_over_panels=True)
        _trim_image_rows(fig)
    else:
        fig.canvas.draw()   # the laid-out panel heights
        heights = [min(max(max(ax.get_position().height for ax in axes) * height,
                           0.45 * NARROW_WIDTH), 0.8 * NARROW_WIDTH)
                   for _, axes in _panel_groups(fig)]
        grid = fig.add_gridspec(len(heights), 1, height_ratios=heights)
        for row, (_, axes) in enumerate(_panel_groups(fig)):
            for ax in axes:
                ax.set_subplotspec(grid[row, 0])
        decorations = 0.75   # inches per panel for its title, tick labels and axis labels
        fig.set_size_inches(NARROW_WIDTH, sum(heights) + decorations * len(heights)
                            + (0.4 if fig.get_suptitle() else 0.0))
        fig.canvas.draw()
        for ax, letter in _unlabelled_ticks(fig):   # hidden because a neighbour showed them
            if len(getattr(ax, f"get_shared_{letter}_axes")().get_siblings(ax)) > 1:
                _show_shared_tick_labels(ax, letter)
        _fit_texts(fig)
        for _ in range(3):   # grow the figure until every panel has its height again
            fig.canvas.draw()
            drawn = [max(ax.get_position().height for ax in axes) * fig.get_figheight()
                     for _, axes in _panel_groups(fig)]
            missing = sum(max(want - got, 0.0) for want, got in zip(heights, drawn))
            if missing < 0.05:
                break
            fig.set_size_inches(NARROW_WIDTH, fig.get_figheight() + missing)


def _fit_texts(fig, *, titles_over_panels: bool = False) -> None:
    """Fit the texts of a resized figure: titles wrap to the figure's width (to their panel's
    with ``titles_over_panels``, for panels side by side), axis labels to their panel, minor
    tick labels that overlap go, legends lose columns until they fit and an axes' legend
    taller or wider than its panel moves below the figure."""
    fig.canvas.draw()   # the sizes of the titles and tick labels in the new layout
    for ax in fig.axes:
        _wrap_to_length(ax.title, ax.bbox.width if titles_over_panels else fig.bbox.width)
    if fig.get_suptitle():
        _wrap_to_length(fig._suptitle, fig.bbox.width)
    for ax in fig.axes:
        if not hasattr(ax, "_colorbar"):
            _wrap_to_length(ax.xaxis.label, ax.bbox.width)
            _wrap_to_length(ax.yaxis.label, ax.bbox.height)
        for axis in (ax.xaxis, ax.yaxis):
            if _labels_overlap(axis.get_minorticklabels(), axis.get_majorticklabels()):
                axis.set_minor_formatter(mpl.ticker.NullFormatter())
    for legend in fig.legends + [ax.get_legend() for ax in fig.axes if ax.get_legend()]:
        _fewer_legend_columns(fig, legend)
    fig.canvas.draw()
    for ax in fig.axes:
        legend = ax.get_legend()
        if legend is None or fig.get_layout_engine() is None:
            continue
        extent = legend.get_window_extent()
        if extent.height > 0.9 * ax.bbox.height or extent.width > 0.9 * ax.bbox.width:
            _fewer_legend_columns(fig, _legend_below(fig, legend))


def _legend_below(fig, legend):
    """Move an axes' ``legend`` under the figure (a figure legend, "outside lower center")."""
    handles, labels = _legend_items(fig, legend)
    title = legend.get_title()
    moved = fig.legend(handles, labels, loc="outside lower center", ncols=legend._ncols,
                       title=title.get_text() or None,
                       title_fontproperties=title.get_fontproperties())
    legend.remove()
    return moved


def _show_shared_tick_labels(ax, letter: str) -> None:
    """Show the tick labels (and offset text) of ``ax``'s ``letter`` axis on its first side,
    and its axis label when it has none, from the axes it shares that axis with."""
    axis = getattr(ax, f"{letter}axis")
    side = "labelleft" if letter == "y" else "labelbottom"
    axis.set_tick_params(which="both", **{side: True})
    axis.offsetText.set_visible(True)
    if not axis.label.get_text():
        shared = getattr(ax, f"get_shared_{letter}_axes")().get_siblings(ax)
        named = [other for other in shared if getattr(other, f"{letter}axis").label.get_text()]
        if named:
            axis.label.set_text(getattr(named[0], f"{letter}axis").label.get_text())


def _label_outer_panels(fig) -> None:
    """In a grid whose panels show one extent, keep tick and axis labels on the outer panels
    only (the bottom row's x axes, the first column's y axes)."""
    panels = [axes[0] for _, axes in _panel_groups(fig)]
    if len({(ax.get_xlim(), ax.get_ylim()) for ax in panels}) == 1:
        for ax in panels:
            ax.label_outer()


def _one_colour_bar_per_scale(fig) -> None:
    """In each row of a grid, drop a panel's colour bar when the panel to its right has one
    with the same colours and limits (one bar then reads for both)."""
    rows: dict[int, list[Any]] = {}
    for (row, _), axes in _panel_groups(fig):
        rows.setdefault(row, []).append(axes[0])
    for panels in rows.values():
        bars = [ax._colorbars[-1]._colorbar if ax._colorbars else None for ax in panels]
        for bar, right in zip(bars, bars[1:]):
            if bar is not None and right is not None and bar is not right and (
                    bar.cmap.name, bar.mappable.get_clim()) == (right.cmap.name,
                                                                right.mappable.get_clim()):
                bar.remove()


def _trim_image_rows(fig) -> None:
    """Take out the height that the rows of a grid of images leave empty (an image keeps its
    aspect, so a row taller than its images is margin), down to rows 1.3 times as high as
    their images and at least an inch (room for a colour bar's tick labels)."""
    for _ in range(4):
        fig.canvas.draw()
        height = fig.get_figheight()
        rows: dict[int, float] = {}
        for (row, _), axes in _panel_groups(fig):
            allotted = axes[0].get_position(original=True).height * height
            spare = allotted - max(1.3 * axes[0].get_position().height * height, 1.0)
            rows[row] = min(rows.get(row, spare), spare)
        spare = sum(max(row, 0.0) for row in rows.values())
        if spare < 0.05:
            return
        fig.set_size_inches(fig.get_figwidth(), height - spare)


def _colliding_texts(fig) -> int:
    """How many pairs of texts (titles, axis and tick labels, legends, annotations) overlap,
    in one axes or across axes."""
    return len(_overlapping_texts(fig))


def _layout_faults(fig) -> list[str]:
    """Faults of ``fig`` a reader sees, described: each axis with ticks but without tick labels
    that no aligned panel of the same scale labels (``_unlabelled_ticks``), and each pair of
    overlapping texts (``_overlapping_texts``)."""
    fig.canvas.draw()
    faults = [f"{_axes_name(ax)}: {letter} ticks without tick labels"
              for ax, letter in _unlabelled_ticks(fig)]
    return faults + [f"{a} overlaps {b}" for a, b in _overlapping_texts(fig)]


def _axes_name(ax) -> str:
    title = ax.get_title().replace("\n", " ")
    return f"panel {title[:30]!r}" if title else f"panel {ax.figure.axes.index(ax) + 1}"


def _shown_tick_labels(axis) -> list[Any]:
    """The visible, non-empty tick labels of ``axis`` (as last drawn) at ticks in its view,
    centred within the axes' span along the axis (a label matplotlib did not draw, at a tick
    outside the view, may keep an old position)."""
    low, high = sorted(axis.get_view_interval())
    slack = 1e-9 * (high - low)
    box = axis.axes.bbox
    span = (box.x0, box.x1) if axis.axis_name == "x" else (box.y0, box.y1)
    labels = []
    for locations, ticks in ((axis.get_majorticklocs(), axis.get_major_ticks),
                             (axis.get_minorticklocs(), axis.get_minor_ticks)):
        for location, tick in zip(locations, ticks(len(locations))):
            if low - slack <= location <= high + slack:
                labels += [label for label in (tick.label1, tick.label2)
                           if label.get_visible() and label.get_text().strip()
                           and _centred_within(label, axis.axis_name, span)]
    return labels


def _centred_within(label, letter: str, span: tuple[float, float]) -> bool:
    """Whether ``label``'s centre along the ``letter`` axis lies within ``span`` (pixels)."""
    extent = mpl.text.Text.get_window_extent(label)
    centre = (extent.x0 + extent.x1) / 2 if letter == "x" else (extent.y0 + extent.y1) / 2
    return span[0] - 1 <= centre <= span[1] + 1


def _has_ticks(axis) -> bool:
    """Whether ``axis`` draws tick marks in its view."""
    low, high = sorted(axis.get_view_interval())
    locations = [x for x in axis.get_majorticklocs() if low <= x <= high]
    ticks = axis.get_major_ticks(len(locations))
    return any(tick.tick1line.get_visible() or tick.tick2line.get_visible() for tick in ticks)


def _shown_axes(fig) -> list[Any]:
    return [ax for ax in fig.axes if ax.get_visible() and ax.axison]


def _unlabelled_ticks(fig) -> list[tuple[Any, str]]:
    """Each (axes, "x" or "y") whose axis has ticks but no tick labels, and where no other
    panel labels the same scale for it: an axes sharing that axis (or showing the same view)
    in the same row, for y, or below it in the same column, for x (as last drawn)."""
    shown = _shown_axes(fig)
    found = []
    for ax in shown:
        for letter in "xy":
            axis = getattr(ax, f"{letter}axis")
            if not axis.get_visible() or not _has_ticks(axis) or _shown_tick_labels(axis):
                continue
            if not any(_labels_for(other, ax, letter) for other in shown if other is not ax):
                found.append((ax, letter))
    return found


def _labels_for(other, ax, letter: str) -> bool:
    """Whether ``other`` shows tick labels that read for ``ax``'s ``letter`` axis: the same
    scale (a shared axis or the same view) and beside it (y) or below it (x)."""
    axis, mine = getattr(other, f"{letter}axis"), getattr(ax, f"{letter}axis")
    same = (getattr(ax, f"get_shared_{letter}_axes")().joined(ax, other)
            or (np.allclose(axis.get_view_interval(), mine.get_view_interval())
                and axis.get_scale() == mine.get_scale()))
    if not same or not _shown_tick_labels(axis):
        return False
    a, b = ax.bbox, other.bbox
    if letter == "y":
        return b.y0 < a.y1 and b.y1 > a.y0
    return b.x0 < a.x1 and b.x1 > a.x0 and b.y1 <= a.y0 + 1


def _overlapping_texts(fig) -> list[tuple[str, str]]:
    """Pairs of texts of ``fig`` (titles, axis labels, tick labels, legends, annotations, the
    figure's own texts and legends) whose boxes overlap by more than 2 pixels each way, as
    last drawn; a text turned by other than a right angle is not boxed. Each pair is named."""
    fig.canvas.draw()
    boxes = [(name, box) for name, box in _text_boxes(fig) if box.width > 0 and box.height > 0]
    pairs = []
    for (name_a, a), (name_b, b) in itertools.combinations(boxes, 2):
        if min(a.x1, b.x1) - max(a.x0, b.x0) > 2 and min(a.y1, b.y1) - max(a.y0, b.y0) > 2:
            pairs.append((name_a, name_b))
    return pairs


def _text_boxes(fig) -> list[tuple[str, Any]]:
    """Every shown text of ``fig`` with its window extent, named for a fault report."""
    def text(artist, kind: str) -> list[tuple[str, Any]]:
        words = artist.get_text().strip()
        if not artist.get_visible() or not words or artist.get_rotation() % 90:
            return []
        short = words.replace("\n", " ")
        return [(f"{kind} {short[:30]!r}", mpl.text.Text.get_window_extent(artist))]

    boxes = []
    for ax in [ax for ax in fig.axes if ax.get_visible()]:
        for title in (ax.title, ax._left_title, ax._right_title):
            boxes += text(title, "title")
        if ax.axison:
            for letter in "xy":
                axis = getattr(ax, f"{letter}axis")
                if axis.get_visible():
                    boxes += text(axis.label, f"{letter} label")
                    for label in _shown_tick_labels(axis):
                        boxes += text(label, f"{letter} tick label")
        for annotation in ax.texts:
            boxes += text(annotation, "text")
        legend = ax.get_legend()
        if legend is not None and legend.get_visible():
            boxes.append((f"legend of {_axes_name(ax)}", legend.get_window_extent()))
    for legend in fig.legends:
        if legend.get_visible():
            boxes.append(("figure legend", legend.get_window_extent()))
    # the suptitle and the sup-labels are also in fig.texts: each text once
    for artist in dict.fromkeys(fig.texts + [fig._suptitle, fig._supxlabel, fig._supylabel]):
        if artist is not None:
            boxes += text(artist, "figure text")
    return boxes


def _labels_overlap(minor: list[Any], major: list[Any]) -> bool:
    """Whether a minor tick label overlaps another tick label (as last drawn)."""
    def boxes(labels: list[Any]) -> list[Any]:
        return [label.get_window_extent() for label in labels
                if label.get_visible() and label.get_text().strip()]
    minor_boxes, major_boxes = boxes(minor), boxes(major)
    return any(a.overlaps(b) for a, b in itertools.combinations(minor_boxes, 2)) or any(
        a.overlaps(b) for a in minor_boxes for b in major_boxes)


def _wrap_to_length(text, length: float) -> None:
    """Break a text longer than ``length`` display pixels along its direction (as last drawn)
    into lines that fit, at spaces outside its maths (``$...$`` stays on one line)."""
    extent = text.get_window_extent()
    drawn = extent.height if text.get_rotation() % 180 == 90 else extent.width
    words = _words_outside_maths(text.get_text())
    if drawn > 0.95 * length and len(words) > 1:
        characters = max(int(len(text.get_text()) * 0.9 * length / drawn), 10)
        lines = [words[0]]
        for word in words[1:]:
            if len(lines[-1]) + 1 + len(word) > characters:
                lines.append(word)
            else:
                lines[-1] += " " + word
        text.set_text("\n".join(lines))


def _words_outside_maths(text: str) -> list[str]:
    """``text`` split at the spaces that lie outside its ``$...$`` maths."""
    words, current, in_maths = [], "", False
    for character in text:
        if character == "$":
            in_maths = not in_maths
        if character == " " and not in_maths:
            words.append(current)
            current = ""
        else:
            current += character
    return [word for word in words + [current] if word]


def _panel_groups(fig) -> list[tuple[tuple[int, int], list[Any]]]:
    """The figure's panels in reading order: axes on a grid, grouped by their grid cell
    (a twin shares its parent's), each keyed by the cell's first (row, column)."""
    groups: dict[tuple[int, int, int, int, int], list[Any]] = {}
    for ax in fig.axes:
        spec = ax.get_subplotspec()
        if spec is None or hasattr(ax, "_colorbar"):
            continue
        key = (spec.rowspan.start, spec.colspan.start, spec.rowspan.stop, spec.colspan.stop,
               id(spec.get_gridspec()))
        groups.setdefault(key, []).append(ax)
    return [((key[0], key[1]), axes) for key, axes in sorted(groups.items())]


def _legend_items(fig, legend) -> tuple[list[Any], list[str]]:
    """The handles and labels of ``legend``: the plotted artists where the legend shows them,
    else the legend's own (for handles made for the legend only)."""
    labels = [label.get_text() for label in legend.texts]
    originals = {label: handle for ax in fig.axes
                 for handle, label in zip(*ax.get_legend_handles_labels())}
    return [originals.get(label, own) for label, own in zip(labels, legend.legend_handles)], labels


def _fewer_legend_columns(fig, legend) -> None:
    """Drop a legend's columns one at a time until it is no wider than what holds it (its
    axes or the figure). Matplotlib fixes the columns when it makes a legend, so its items
    are packed again from the original handles, and its title and place restored."""
    title = legend.get_title()
    text, properties = title.get_text(), title.get_fontproperties()
    handles, labels = _legend_items(fig, legend)
    place, outside = legend._loc_real, legend._outside_loc
    while legend._ncols > 1 and _wider_than(fig, legend, legend.parent.bbox.width):
        legend.set_ncols(legend._ncols - 1)
        legend._init_legend_box(handles, labels)
        legend.set_title(text, prop=properties)
        legend.set_loc(place)
        legend._outside_loc = outside


def _wider_than(fig, artist, width: float) -> bool:
    fig.canvas.draw()
    return artist.get_window_extent().width > width


def png_records(png: bytes) -> dict[str, str]:
    """The ``attn:`` text chunks of a :func:`figure_png` (empty for any other PNG)."""
    from PIL import Image

    text = getattr(Image.open(io.BytesIO(png)), "text", {})
    return {key: value for key, value in text.items() if key.startswith("attn:")}


def smallest_text_px(fig) -> float:
    """Height in CSS pixels of the smallest visible text, at the figure's natural size.

    A font of ``s`` points is ``s * DPI / 72`` pixels. Every visible, non-empty text artist
    counts (titles, labels, legends, annotations, colour bars), and of the tick labels those
    of ticks inside the axes' view; the tick and axis labels of an axes drawn without its axes
    (``ax.axis("off")``) or of a hidden axis do not. ``inf`` when the figure has no text.
    """
    fig.canvas.draw()   # places the ticks
    axes = [axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)]
    drawn = [axis for ax in _shown_axes(fig) for axis in (ax.xaxis, ax.yaxis)
             if axis.get_visible()]
    not_drawn = {id(label) for axis in axes for tick in axis.majorTicks + axis.minorTicks
                 for label in (tick.label1, tick.label2)}
    not_drawn |= {id(text) for axis in axes if axis not in drawn
                  for text in (axis.label, axis.offsetText)}
    texts = [text for text in fig.findobj(mpl.text.Text) if id(text) not in not_drawn]
    sizes = [text.get_fontsize() for text in texts
             if text.get_visible() and text.get_text().strip()]
    sizes += [label.get_fontsize() for axis in drawn for label in _shown_tick_labels(axis)]
    return min(sizes, default=float("inf")) * DPI / 72


def delta_e(colour_a: Any, colour_b: Any, vision: str = "normal vision") -> float:
    """CIE76 difference (Euclidean distance in CIELAB) of two colours seen under ``vision``.

    ``vision`` is a key of :data:`CVD`; the simulation matrix acts on linear sRGB.
    """
    if vision not in CVD:
        raise ValueError(f"vision must be one of {sorted(CVD)}, got {vision!r}")
    rgbs = []
    for name, colour in (("colour_a", colour_a), ("colour_b", colour_b)):
        try:
            rgbs.append(np.array(mcolors.to_rgb(colour)))
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{name} must be a matplotlib colour ('#1f77b4', 'C0', an RGB "
                             f"triple in [0, 1]), got {colour!r}") from exc
    a, b = (CVD[vision] @ _linear(rgb) for rgb in rgbs)
    return float(np.linalg.norm(_lab(a) - _lab(b)))


def _linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _lab(linear_rgb: np.ndarray) -> np.ndarray:
    to_xyz = np.array([[0.4124564, 0.3575761, 0.1804375],
                       [0.2126729, 0.7151522, 0.0721750],
                       [0.0193339, 0.1191920, 0.9503041]])
    t = to_xyz @ np.clip(linear_rgb, 0.0, 1.0) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def confusable_series(fig) -> list[tuple[str, str, str]]:
    """Pairs of series in one axes that only colour tells apart, and too little of it.

    A series is a visible, labelled line (its label is in the legend, so the reader has to
    match it by its look) of at least two points; unlabelled lines (pieces of a labelled
    series, guides) are left out. Two series that share line style and marker are confusable
    when their colours differ by less than :data:`MIN_DELTA_E` (:func:`delta_e`) under any
    vision of :data:`CVD`. Returns ``(label a, label b, vision)`` triples, each pair once.
    """
    pairs: list[tuple[str, str, str]] = []
    for ax in fig.axes:
        lines = [line for line in ax.get_lines()
                 if line.get_visible() and not line.get_label().startswith("_")
                 and len(np.atleast_1d(line.get_xdata())) > 1]
        for a, b in itertools.combinations(lines, 2):
            if a.get_linestyle() != b.get_linestyle() or \
                    str(a.get_marker()) != str(b.get_marker()):
                continue
            for vision in CVD:
                pair = (a.get_label(), b.get_label(), vision)
                if delta_e(a.get_color(), b.get_color(), vision) < MIN_DELTA_E:
                    if pair not in pairs:
                        pairs.append(pair)
                    break
    return pairs


def figure(nrows: int = 1, ncols: int = 1, *, width: str | float = "full",
           aspect: float = 0.62, height: float | None = None, **kwargs: Any):
    """A figure drawn at the size it is shown; returns ``(fig, axes)`` like ``plt.subplots``
    (the one way chapters make a figure; ``kwargs`` go to ``plt.subplots``).

    ``width`` is a key of :data:`WIDTHS` or inches (at most the full column). The height is
    ``height`` inches if given, else each panel is ``aspect`` times as high as it is wide. At
    most :data:`MAX_COLUMNS` panels share a row and at most :data:`MAX_ROWS` rows: stack or
    split wider layouts.
    """
    inches = _width_inches(width)
    nrows = check_int("nrows", nrows, minimum=1, maximum=MAX_ROWS)
    ncols = check_int("ncols", ncols, minimum=1)
    if ncols > MAX_COLUMNS:
        raise ValueError(f"ncols must be at most {MAX_COLUMNS} at the book's column width, got "
                         f"{ncols}; stack the panels in more rows or split the figure")
    aspect = check_positive("aspect", aspect)
    height = (nrows * aspect * inches / ncols + 0.35 if height is None
              else check_positive("height", height))
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


def orbit_schematic(constants: "OrbitConstants", crossing: "OrbitCrossovers",
                    regularizer: "Regularizer", blocks: tuple[str, str], title: str):
    """Schematic of a factorized loss's orbit through a stationary point (chapters 8 and 9).

    The orbit ``(rho W_1*, W_2* / rho)`` is the line ``log10 ||W_1|| + log10 ||W_2|| = const``
    in the plane of the log10 block norms, through ``(log10 sqrt(q), log10 sqrt(k))`` of
    ``constants``; the data loss is constant along it. It is drawn dashed between the crossovers
    ``rho_* = e^{-crossing.down}`` and ``rho* = e^{crossing.up}`` (where the Villani quantity
    is negative) and solid beyond, with arrows in the exact direction of ``-grad R`` of
    ``regularizer`` (``R = g(||W_1||^2) + g(||W_2||^2)``, gradient components proportional to
    ``g'``) at the solid ends. ``blocks`` names the two blocks (TeX). Returns the figure.
    """
    if not (isinstance(blocks, tuple) and len(blocks) == 2
            and all(isinstance(b, str) for b in blocks)):
        raise TypeError(f"blocks: expected a pair of block names, got {blocks!r}")
    x0, y0 = 0.5 * math.log10(constants.q), 0.5 * math.log10(constants.k)
    u_up, u_down = crossing.up / math.log(10), -crossing.down / math.log(10)
    span = 0.3 * (u_up - u_down)
    fig, ax = figure(width="small", height=4.3)
    for lo, hi, colour, style in [(u_down - span, u_down, "blue", "-"),
                                  (u_down, u_up, "vermillion", "--"),
                                  (u_up, u_up + span, "blue", "-")]:
        ax.plot([x0 + lo, x0 + hi], [y0 - lo, y0 - hi], color=OKABE_ITO[colour], ls=style, lw=3)
    ax.plot(x0, y0, "ko", ms=8)
    ax.annotate(r"$\theta^\star$", (x0, y0), xytext=(10, 6), textcoords="offset points",
                fontsize=12)
    # along the orbit on its lower left (no other label's side), centred on theta* or, when
    # one dashed half is less than half the other, on the longer half
    half = 0.0 if min(-u_down, u_up) >= 0.5 * max(-u_down, u_up) else 0.5 * (
        u_down if -u_down > u_up else u_up)
    ax.annotate(r"$L = L(\theta^\star)$ all along", (x0 + half, y0 - half), xytext=(-11, -11),
                textcoords="offset points", rotation=-45, fontsize=11, ha="center",
                va="center", rotation_mode="anchor")
    for u, name in [(u_up, r"\rho^\star"), (u_down, r"\rho_\star")]:
        ax.plot(x0 + u, y0 - u, "o", mfc="white", mec="k", ms=9, mew=2)
        ax.annotate(rf"${name}=10^{{{u:.1f}}}$", (x0 + u, y0 - u), xytext=(10, 6),
                    textcoords="offset points", fontsize=11)
    for u in (u_up + 0.6 * span, u_down - 0.6 * span):        # -grad R, its exact direction
        x, y = x0 + u, y0 - u
        pull = -np.array([regularizer.dg(10.0 ** (2 * x)), regularizer.dg(10.0 ** (2 * y))])
        pull /= np.linalg.norm(pull)
        tip = np.array([x, y]) + 0.5 * span * pull
        ax.annotate("", xy=tip, xytext=(x, y), arrowprops=dict(arrowstyle="-|>", lw=2, color="k"))
        vertical = abs(pull[1]) > abs(pull[0])      # the label beyond the tip, off the orbit
        ax.annotate(r"$-\nabla R$", tip, xytext=4 * pull, textcoords="offset points",
                    fontsize=11, ha="center" if vertical else ("right" if pull[0] < 0 else "left"),
                    va=("top" if pull[1] < 0 else "bottom") if vertical else "center")
    mid = 0.5 * (u_up + u_down)
    ax.text(x0 + mid, y0 - mid, r"  $\mathcal{V}_s<0$", color=OKABE_ITO["vermillion"], fontsize=12)
    for u in (u_up + 0.9 * span, u_down - 0.9 * span):
        ax.text(x0 + u, y0 - u, r"  $\mathcal{V}_s>0$", color=OKABE_ITO["blue"], fontsize=12)
    ax.set_xlabel(rf"$\log_{{10}}\Vert {blocks[0]}\Vert_F$")
    ax.set_ylabel(rf"$\log_{{10}}\Vert {blocks[1]}\Vert_F$")
    ax.set_title(title)
    ax.set_aspect("equal")
    return fig


#: The loss along the orbit in :func:`tilted_orbit_schematic`: (scale of the tilt, colour,
#: legend label) per curve; chapter 6b's default compares infinite n, n and 4n.
TILTED_ORBIT_CURVES = ((0.0, NEUTRAL_GREY, "$n = \\infty$: flat"),
                       (1.0, OKABE_ITO["blue"], "sample size $n$: tilt $\\epsilon$"),
                       (0.25, OKABE_ITO["orange"], "$4n$: tilt $\\epsilon/4$"))


#: The legend positions matplotlib accepts by name.
LEGEND_LOCATIONS = frozenset({"best", "upper right", "upper left", "lower left", "lower right",
                              "right", "center left", "center right", "lower center",
                              "upper center", "center"})


def _orbit_tilt(t):
    """A fixed smooth function of the position on the orbit, standing for the random tilt."""
    return 0.55 * np.cos(t - 0.7) + 0.3 * np.cos(2 * t + 1.9) + 0.15 * np.cos(3 * t - 0.4)


def tilted_orbit_schematic(curves=TILTED_ORBIT_CURVES, *, height: float = 5.6,
                           legend_loc: str = "lower right"):
    """Schematic of an orbit of minimizers, exactly flat at infinite n and tilted at finite n
    (chapters 5 and 6b).

    Top: a ring-shaped valley (the orbit, dashed), steep across and soft along, with its one
    minimizer (star). Bottom: the loss along one loop of the orbit for each ``(scale, colour,
    label)`` of ``curves``, the same tilt times ``scale`` (0: flat), with a star at each
    tilted curve's minimum, and their legend at ``legend_loc``. Returns the figure (drawn at
    the "small" width).
    """
    curves = tuple(curves)
    if not curves or not all(len(curve) == 3 for curve in curves):
        raise ValueError(f"curves: expected (scale, colour, label) triples, got {curves!r}")
    height = check_in_range("height", height, 0.0, 30.0, closed=(False, True))
    if legend_loc not in LEGEND_LOCATIONS:
        raise ValueError(f"legend_loc must be one of {sorted(LEGEND_LOCATIONS)}, got "
                         f"{legend_loc!r}")
    theta = np.linspace(0, 2 * np.pi, 400)
    t_min = theta[np.argmin(_orbit_tilt(theta))]
    fig, axes = figure(2, 1, width="small", height=height,
                       gridspec_kw={"height_ratios": [1.2, 1]})
    x_grid, y_grid = np.meshgrid(np.linspace(-1.6, 1.6, 300), np.linspace(-1.6, 1.6, 300))
    landscape = (3 * (np.hypot(x_grid, y_grid) - 1) ** 2
                 + 0.3 * _orbit_tilt(np.arctan2(y_grid, x_grid)))
    axes[0].contourf(x_grid, y_grid, landscape, levels=np.linspace(-0.5, 3.5, 17),
                     cmap="Blues_r", alpha=0.7)
    axes[0].plot(np.cos(theta), np.sin(theta), "--", color="black", lw=1.5)
    axes[0].plot(np.cos(t_min), np.sin(t_min), "*", color=OKABE_ITO["vermillion"], ms=18)
    outward = np.array([np.cos(t_min), np.sin(t_min)])
    axes[0].annotate("", 1.5 * outward, 0.5 * outward, arrowprops=dict(arrowstyle="<->", lw=1.8))
    axes[0].text(*(0.35 * outward + [0.1, -0.05]), "steep\nacross", ha="center", va="center")
    arc = (t_min + 0.35, t_min + 1.3)
    axes[0].annotate("", (1.15 * np.cos(arc[1]), 1.15 * np.sin(arc[1])),
                     (1.15 * np.cos(arc[0]), 1.15 * np.sin(arc[0])),
                     arrowprops=dict(arrowstyle="->", lw=1.8, connectionstyle="arc3,rad=0.25"))
    axes[0].text(1.2 * np.cos(t_min + 1.1) + 0.1, 1.2 * np.sin(t_min + 1.1) - 0.25,
                 "soft\nalong")
    axes[0].text(-1.55, 1.5, "orbit (dashed)", va="top")
    axes[0].set(aspect="equal")
    axes[0].set_axis_off()
    for scale, colour, label in curves:
        axes[1].plot(theta, scale * _orbit_tilt(theta), color=colour, lw=2.2, label=label)
        if scale:
            axes[1].plot(t_min, scale * _orbit_tilt(t_min), "*", color=OKABE_ITO["vermillion"],
                         ms=14)
    axes[1].set(xlabel="position along the orbit (one loop)", ylabel="loss minus its mean",
                xticks=[], yticks=[0])
    low, high = axes[1].get_ylim()      # room for the legend beside the curves, not over them
    room = 0.25 * len(curves) * (high - low)
    axes[1].set_ylim(low - room * ("lower" in legend_loc), high + room * ("upper" in legend_loc))
    axes[1].legend(loc=legend_loc)
    return fig
