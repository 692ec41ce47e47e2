"""The book's figure style: colour-blind-safe series, sizes that fit the text column."""

from __future__ import annotations

import itertools

import matplotlib

matplotlib.use("Agg")

import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pytest

from attnlib import plotting

# Machado, Oliveira & Fernandes (2009), severity 1.0, acting on linear sRGB.
CVD = {
    "normal vision": np.eye(3),
    "protanopia": np.array([[0.152286, 1.052583, -0.204868],
                            [0.114503, 0.786281, 0.099216],
                            [-0.003882, -0.048116, 1.051998]]),
    "deuteranopia": np.array([[0.367322, 0.860646, -0.227968],
                              [0.280085, 0.672501, 0.047413],
                              [-0.011820, 0.042940, 0.968881]]),
}
# CIE76 colour difference (Euclidean distance in CIELAB). About 2.3 is "just noticeable";
# the green/red pair the book used before (#2ca02c, #d62728) is 7.3 under deuteranopia.
MIN_DELTA_E = 15.0


def _linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def _lab(linear_rgb: np.ndarray) -> np.ndarray:
    to_xyz = np.array([[0.4124564, 0.3575761, 0.1804375],
                       [0.2126729, 0.7151522, 0.0721750],
                       [0.0193339, 0.1191920, 0.9503041]])
    t = to_xyz @ np.clip(linear_rgb, 0.0, 1.0) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def delta_e(colour_a: str, colour_b: str, vision: str) -> float:
    """CIE76 difference of two colours as seen under ``vision`` (a key of ``CVD``)."""
    a, b = (CVD[vision] @ _linear(np.array(mcolors.to_rgb(c))) for c in (colour_a, colour_b))
    return float(np.linalg.norm(_lab(a) - _lab(b)))


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
