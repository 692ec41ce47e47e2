"""The book's figure style: colour-blind-safe series, sizes that fit the text column."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import matplotlib.figure
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnbook import plotting

CVD = plotting.CVD
MIN_DELTA_E = plotting.MIN_DELTA_E
delta_e = plotting.delta_e


def test_delta_e_flags_the_old_green_red_pair() -> None:
    # the simulation is not the identity: red and green collapse under deuteranopia only
    assert delta_e("#2ca02c", "#d62728", "normal vision") > 100
    assert delta_e("#2ca02c", "#d62728", "deuteranopia") < MIN_DELTA_E
    assert delta_e("#000000", "#ffffff", "protanopia") == pytest.approx(100.0, abs=0.01)


@pytest.mark.parametrize("vision", list(CVD))
@pytest.mark.parametrize("group", list(plotting.SERIES_GROUPS))
def test_series_colours_stay_apart(group: str, vision: str) -> None:
    names = plotting.SERIES_GROUPS[group]
    close = [(a, b, round(delta_e(plotting.SERIES[a]["color"], plotting.SERIES[b]["color"],
                                  vision), 1))
             for a, b in itertools.combinations(names, 2)]
    close = [pair for pair in close if pair[2] < MIN_DELTA_E]
    assert not close, f"{group} under {vision}: pairs closer than {MIN_DELTA_E}: {close}"


@pytest.mark.parametrize("vision", list(CVD))
def test_cycle_colours_stay_apart(vision: str) -> None:
    worst = min(delta_e(a, b, vision)
                for a, b in itertools.combinations(plotting.CYCLE_COLOURS, 2))
    assert worst >= MIN_DELTA_E, f"default cycle under {vision}: closest pair {worst:.1f}"


@pytest.mark.parametrize("group", list(plotting.SERIES_GROUPS))
def test_series_differ_without_colour(group: str) -> None:
    # in grey every pair still differs in line style and (where both have one) in marker
    names = plotting.SERIES_GROUPS[group]
    for a, b in itertools.combinations(names, 2):
        style_a, style_b = plotting.SERIES[a], plotting.SERIES[b]
        assert style_a["linestyle"] != style_b["linestyle"] or \
            style_a["marker"] != style_b["marker"], (a, b)
        assert style_a["label"] != style_b["label"]


def test_one_colour_per_method() -> None:
    assert plotting.METHOD_COLOURS == {name: plotting.SERIES[name]["color"]
                                       for name in plotting.SERIES_GROUPS["methods"]}
    for group in plotting.SERIES_GROUPS.values():
        colours = [plotting.SERIES[name]["color"] for name in group]
        assert len(set(colours)) == len(colours)


def test_figure_fits_the_column_and_fonts_are_readable() -> None:
    column_px = 690
    for width in plotting.WIDTHS:
        fig, _ = plotting.figure(1, 2, width=width)
        assert fig.get_figwidth() * fig.dpi <= column_px
        plt.close(fig)
    smallest_pt = min(matplotlib.rcParams[key] for key in
                      ("font.size", "xtick.labelsize", "ytick.labelsize", "legend.fontsize"))
    # 9 pt on screen is 12 CSS px; a figure shown at natural size has dpi/72 px per point
    assert smallest_pt * plotting.DPI / 72 >= 12


def test_plot_series_uses_the_registered_style() -> None:
    fig, ax = plotting.figure()
    (line,) = plotting.plot_series(ax, np.arange(5), np.arange(5.0), "gd")
    assert mcolors.to_hex(line.get_color()) == plotting.SERIES["gd"]["color"].lower()
    assert line.get_label() == "GD" and line.get_marker() == "^"
    (plain,) = plotting.plot_series(ax, [0, 1], [0, 1], "ols", label="OLS reference")
    assert plain.get_label() == "OLS reference" and plain.get_marker() in ("None", None, "")
    assert plotting.legend_below(fig, ncol=2) is not None
    plt.close(fig)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="name must be one of"):
        plotting.series_style("lbfgs")
    with pytest.raises(ValueError, match="width"):
        plotting.figure(width=11.0)
    with pytest.raises(ValueError, match="width"):
        plotting.figure(width="huge")
    with pytest.raises(ValueError, match="ncols"):
        plotting.figure(1, 4)
    with pytest.raises(ValueError, match="aspect"):
        plotting.figure(aspect=0.0)
    with pytest.raises(ValueError, match="vision must be one of"):
        plotting.delta_e("red", "blue", "tritanopia")


def _two_lines(colour_a: str, colour_b: str, **style_b):
    fig, ax = plotting.figure()
    ax.plot([0, 1], [0, 1], color=colour_a, label="a")
    ax.plot([0, 1], [1, 0], color=colour_b, label="b", **style_b)
    return fig


def test_confusable_series_finds_pairs_only_colour_tells_apart() -> None:
    fig = _two_lines("#2ca02c", "#d62728")           # red/green, same style: confusable
    assert plotting.confusable_series(fig) == [("a", "b", "deuteranopia")]
    plt.close(fig)
    fig = _two_lines("#2ca02c", "#d62728", linestyle="--")   # a line style tells them apart
    assert plotting.confusable_series(fig) == []
    plt.close(fig)
    fig = _two_lines(plotting.OKABE_ITO["blue"], plotting.OKABE_ITO["vermillion"])
    assert plotting.confusable_series(fig) == []
    plt.close(fig)
    fig = _two_lines("#777777", "#787878")             # the same grey to everyone
    assert plotting.confusable_series(fig)[0][2] == "normal vision"
    fig.axes[0].get_lines()[1].set_label("_piece of a")  # unlabelled: not a series
    assert plotting.confusable_series(fig) == []
    plt.close(fig)


def test_smallest_text_counts_every_text_but_ticks_out_of_view() -> None:
    fig, (left, right) = plotting.figure(1, 2)
    assert plotting.smallest_text_px(fig) == pytest.approx(9 * plotting.DPI / 72)
    right.set_xlabel("tiny", fontsize=6)
    assert plotting.smallest_text_px(fig) == pytest.approx(6 * plotting.DPI / 72)
    right.xaxis.label.set_visible(False)
    left.annotate("note", (0.5, 0.5), fontsize=7.5)
    assert plotting.smallest_text_px(fig) == pytest.approx(7.5 * plotting.DPI / 72)
    plt.close(fig)
    empty = matplotlib.figure.Figure()
    assert plotting.smallest_text_px(empty) == float("inf")


def test_figure_png_is_sharp_and_carries_its_records() -> None:
    fig = _two_lines("#2ca02c", "#d62728")
    fig.axes[0].set_title("small", fontsize=8)
    png = plotting.figure_png(fig)
    width, _ = plotting._png_size(png)
    # bbox_inches="tight" trims or pads the margin by a few hundredths of an inch
    css_width = plotting.DPI * fig.get_figwidth()
    assert width == pytest.approx(plotting.PIXEL_RATIO * css_width, rel=0.05)
    records = plotting.png_records(png)
    assert float(records["attn:min-text-px"]) == pytest.approx(8 * plotting.DPI / 72, abs=0.01)
    assert records["attn:confusable"] == "a / b (deuteranopia)"
    plt.close(fig)
    with pytest.raises(ValueError, match="pixel_ratio"):
        plotting.figure_png(fig, pixel_ratio=0)


def test_notebooks_display_figures_as_figure_png() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        plotting.use_book_style()
        fig, ax = plotting.figure(width="small")
        ax.plot([0, 1], [0, 1])
        ax.tick_params(labelsize=12)   # 16.7 px, 13 px on a phone: no narrow rendering
        data, metadata = shell.display_formatter.format(fig)
        plt.close(fig)
    finally:
        InteractiveShell.clear_instance()
    png = __import__("base64").b64decode(data["image/png"])
    width, height = plotting._png_size(png)
    assert metadata["image/png"] == {"width": round(width / 2), "height": round(height / 2)}
    assert set(plotting.png_records(png)) == {"attn:min-text-px", "attn:confusable",
                                              "attn:layout-faults"}


def test_series_are_keyed_by_the_library_names() -> None:
    from attnlib import algorithm, regularizers
    assert set(plotting.SERIES_GROUPS["methods"]) == set(algorithm.METHODS) | {"ols"}
    assert set(plotting.SERIES_GROUPS["regularizers"]) <= set(regularizers.REGULARIZER_NAMES)


def _panel_boxes(fig) -> list:
    fig.canvas.draw()
    return [ax.get_position() for ax in fig.axes if ax.get_subplotspec() is not None]


def test_narrow_figure_stacks_the_panels_at_phone_width_with_the_same_text() -> None:
    fig, axes = plotting.figure(1, 3)
    for i, ax in enumerate(axes):
        plotting.plot_series(ax, [0, 1], [0, i], "gd")
        ax.set_title(f"panel {i}, with a title long enough to need two lines on a phone")
    plotting.legend_below(fig, ncol=3)
    narrow = plotting.narrow_figure(fig)
    assert narrow is not None and narrow is not fig
    width, _ = plotting._png_size(plotting.figure_png(narrow))
    # 360 CSS px laid out; bbox_inches="tight" adds the margin of tick labels and titles
    assert width / plotting.PIXEL_RATIO <= 1.1 * plotting.DPI * plotting.NARROW_WIDTH
    boxes = _panel_boxes(narrow)
    assert len(boxes) == 3
    assert all(upper.y0 > lower.y1 for upper, lower in zip(boxes, boxes[1:]))   # one column
    assert all(box.x1 - box.x0 > 0.6 for box in boxes)                          # full width
    assert plotting.smallest_text_px(narrow) == plotting.smallest_text_px(fig)
    assert all("\n" in ax.get_title() for ax in narrow.axes)
    assert [ax.get_title() for ax in fig.axes][0].count("\n") == 0   # the original untouched
    plt.close(fig)
    plt.close(narrow)


def _phone_px(png: bytes) -> float:
    """The smallest text of a figure_png as a 390 px phone shows it (in its 342 px column)."""
    width = plotting._png_size(png)[0] / plotting.PIXEL_RATIO
    return float(plotting.png_records(png)["attn:min-text-px"]) * min(
        1.0, plotting.PHONE_COLUMN_PX / width)


def test_narrow_figure_shrinks_a_column_and_refuses_colliding_annotations() -> None:
    small, ax = plotting.figure(width="small")
    ax.plot([0, 1], [0, 1])
    assert _phone_px(plotting.figure_png(small)) < plotting.MIN_PHONE_TEXT_PX   # 9 pt: 9.9 px
    shrunk_small = plotting.narrow_figure(small)
    assert plotting.NARROW_WIDTH <= shrunk_small.get_figwidth() < plotting.SHRUNK_WIDTH
    assert _phone_px(plotting.figure_png(shrunk_small)) >= plotting.MIN_PHONE_TEXT_PX
    ax.tick_params(labelsize=12)                       # 16.7 px, 13 px on a phone
    assert plotting.narrow_figure(small) is None
    schematic, ax = plotting.figure(width="medium", height=4.0)
    ax.set_axis_off()
    ax.text(0.5, 0.5, "a box")
    shrunk = plotting.narrow_figure(schematic)
    assert shrunk.get_figwidth() == plotting.SHRUNK_WIDTH
    assert shrunk.get_figheight() == pytest.approx(4.0 * plotting.SHRUNK_WIDTH / 5.4)
    assert plotting.smallest_text_px(shrunk) == plotting.smallest_text_px(schematic)
    annotated, ax = plotting.figure()
    ax.plot([0, 1], [0, 1])
    for x in (0.02, 0.36):   # apart at full width, overlapping at phone width
        ax.text(x, 0.5, "a rather long annotation", transform=ax.transAxes)
    assert plotting.narrow_figure(annotated) is None
    ax.texts[1].set_position((0.5, 0.1))   # apart at both widths
    assert plotting.narrow_figure(annotated) is not None
    for fig in (small, shrunk_small, schematic, shrunk, annotated):
        plt.close(fig)


def test_stacked_panels_of_a_shared_axis_get_their_tick_labels_back() -> None:
    fig, axes = plotting.figure(1, 3, sharey=True)
    for i, ax in enumerate(axes):
        ax.plot([0, 1], [1, 2 + i])
        ax.set_title(f"panel {i}")
    axes[0].set_ylabel("norm")
    assert plotting.png_records(plotting.figure_png(fig))["attn:layout-faults"] == ""
    narrow = plotting.narrow_figure(fig)
    narrow.canvas.draw()
    assert all(plotting._shown_tick_labels(ax.yaxis) for ax in narrow.axes)
    assert [ax.get_ylabel() for ax in narrow.axes] == ["norm"] * 3
    assert plotting.png_records(plotting.figure_png(narrow))["attn:layout-faults"] == ""
    # stacked as before (each panel alone in its row, the labels hidden): a recorded fault
    unlabelled, axes = plotting.figure(3, 1)
    for ax in axes[1:]:
        ax.tick_params(labelleft=False)
    faults = plotting.png_records(plotting.figure_png(unlabelled))["attn:layout-faults"]
    assert faults.count("y ticks without tick labels") == 2, faults
    for f in (fig, narrow, unlabelled):
        plt.close(f)


def test_overlapping_twin_labels_are_recorded_as_a_layout_fault() -> None:
    fig, ax = plotting.figure(width="small")
    twin = ax.twinx()
    ax.set_ylabel("loss of the first series")
    twin.set_ylabel("norm of the second series")
    assert plotting.png_records(plotting.figure_png(fig))["attn:layout-faults"] == ""
    twin.yaxis.set_label_position("left")
    for axis in (ax.yaxis, twin.yaxis):
        axis.set_label_coords(-0.25, 0.5)        # one over the other, left of the ticks
    faults = plotting.png_records(plotting.figure_png(fig))["attn:layout-faults"]
    assert faults == ("y label 'loss of the first series' overlaps "
                      "y label 'norm of the second series'"), faults
    plt.close(fig)


def test_a_legend_taller_than_its_stacked_panel_moves_below_the_figure() -> None:
    fig, axes = plotting.figure(1, 2)
    for k in range(12):
        axes[0].plot([0, 1], [k, k + 1], label=f"series number {k}")
    axes[0].legend(ncols=3, loc="upper left")
    axes[1].plot([0, 1], [0, 1])
    narrow = plotting.narrow_figure(fig)
    assert narrow.axes[0].get_legend() is None and len(narrow.legends) == 1
    narrow.canvas.draw()
    legend = narrow.legends[0].get_window_extent()
    assert all(legend.y1 <= ax.get_window_extent().y0 for ax in narrow.axes)   # below both
    assert narrow.legends[0].get_window_extent().width <= narrow.bbox.width
    assert plotting.png_records(plotting.figure_png(narrow))["attn:layout-faults"] == ""
    plt.close(fig)
    plt.close(narrow)


def test_a_wide_legend_that_would_cover_the_narrow_panel_moves_below_it() -> None:
    # a one-panel figure whose legend, at phone width, crowds the panel so that its tick labels
    # overlap: the narrow copy moves the legend under the figure instead of giving up
    fig, ax = plotting.figure(width=6.4, height=4.2)
    scales = [0.3, 1, 2, np.sqrt(10), 5]
    for k in range(4):
        ax.plot(scales, np.arange(1, 6) * (k + 1), "o-",
                label=f"a long series label, method number {k}, re-evaluated step")
    ax.set(xscale="log", yscale="log", xlabel="scale $c$ of the random start")
    ax.set_xticks(scales, ["0.3", "1", "2", "$\\sqrt{d}$", "5"])
    ax.minorticks_off()
    ax.legend(fontsize=9, loc="upper left")
    narrow = plotting.narrow_figure(fig)
    assert narrow is not None and narrow.axes[0].get_legend() is None
    assert len(narrow.legends) == 1
    assert plotting.png_records(plotting.figure_png(narrow))["attn:layout-faults"] == ""
    plt.close(fig)
    plt.close(narrow)


def test_labels_wrap_outside_their_maths() -> None:
    assert plotting._words_outside_maths(r"max $\max_{1000 \leq k}\,(L - L^\star)$ of it") == [
        "max", r"$\max_{1000 \leq k}\,(L - L^\star)$", "of", "it"]
    fig, ax = plotting.figure(width=2.0, height=2.0)
    ax.set_ylabel(r"the largest $\max_{1000 \leq k \leq 2000}$ relative excess over the run")
    fig.canvas.draw()
    plotting._wrap_to_length(ax.yaxis.label, 0.5 * ax.bbox.height)
    lines = ax.yaxis.label.get_text().split("\n")
    assert len(lines) > 1 and all(line.count("$") % 2 == 0 for line in lines)
    plt.close(fig)


def test_a_grid_of_images_keeps_its_columns_at_phone_width() -> None:
    fig, axes = plotting.figure(3, 3, height=6.6)
    field = np.outer(np.sin(np.linspace(0, 3, 16)), np.cos(np.linspace(0, 3, 16)))
    for row in range(3):
        for col, title in enumerate(["true u", "predicted u", "error"]):
            image = axes[row, col].imshow(field * (1 + 0.1 * col), extent=(0, 1, 0, 1),
                                          vmin=-1, vmax=1)
            axes[row, col].set(xlabel="$x_1$", ylabel="$x_2$", title=title if row == 0 else "")
            fig.colorbar(image, ax=axes[row, col], shrink=0.8)
    narrow = plotting.narrow_figure(fig)
    assert narrow.get_figwidth() == plotting.NARROW_WIDTH
    narrow.canvas.draw()
    panels = [ax for ax in narrow.axes if ax.images]
    columns = {round(ax.get_position().x0, 2) for ax in panels}
    rows = {round(ax.get_position().y0, 2) for ax in panels}
    assert len(columns) == 3 and len(rows) == 3               # three by three, not stacked
    assert [" ".join(ax.get_title().split()) for ax in panels[:3]] == [
        "true u", "predicted u", "error"]                      # kept (wrapped to the panel)
    png = plotting.figure_png(narrow)
    assert plotting.png_records(png)["attn:layout-faults"] == ""
    assert _phone_px(png) >= plotting.MIN_PHONE_TEXT_PX
    # one colour bar per row where the three panels share colours and limits
    assert len(narrow.axes) - len(panels) == 3
    plt.close(fig)
    plt.close(narrow)


def test_a_slider_frame_has_a_narrow_rendering_readable_on_a_phone() -> None:
    from attnbook.slider import frame_slider

    def draw(top: float):
        fig, axes = plotting.figure(1, 2)
        for ax in axes:
            ax.plot([0, 1], [0, top])
        return fig

    def draw_small(top: float):
        fig, ax = plotting.figure(width="small")
        ax.plot([0, 1], [0, top])
        return fig

    slider = frame_slider(draw, controls={"top": [1.0, 2.0]}, alt="up to {top:g}")
    for frame in slider.frames.values():
        assert _phone_px(frame.png) < 10.0 <= _phone_px(frame.narrow)
    page = slider.to_html()
    assert "(max-width: 599.98px)" in page
    assert all(__import__("base64").b64encode(frame.narrow).decode("ascii") in page
               for frame in slider.frames.values())
    # a single small panel is only drawn smaller: one frame, at the narrow size
    small = frame_slider(draw_small, controls={"top": [1.0, 2.0]}, alt="up to {top:g}")
    for frame in small.frames.values():
        assert frame.narrow is None and _phone_px(frame.png) >= plotting.MIN_PHONE_TEXT_PX


def test_notebooks_carry_the_narrow_rendering_of_wide_figures() -> None:
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    try:
        plotting.use_book_style()
        fig, axes = plotting.figure(1, 2)
        for ax in axes:
            ax.plot([0, 1], [0, 1])
        data, metadata = shell.display_formatter.format(fig)
        plt.close(fig)
    finally:
        InteractiveShell.clear_instance()
    narrow = __import__("base64").b64decode(metadata["image/png"][plotting.NARROW_METADATA_KEY])
    assert plotting._png_size(narrow)[0] < plotting._png_size(
        __import__("base64").b64decode(data["image/png"]))[0]
    assert "attn:min-text-px" in plotting.png_records(narrow)
