"""attnbook.schematics: each schematic draws one readable figure at the book's widths, with no
overlapping annotations, a narrow rendering where the figure is wide, and named errors."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from attnbook import plotting, schematics  # noqa: E402


def _fields(size: int = 16) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(0.0, 1.0, size)
    a = np.where(np.add.outer(np.sin(7 * x), np.cos(5 * x)) > 0, 12.0, 3.0)
    return a, np.outer(np.sin(np.pi * x), np.sin(np.pi * x))


DRAWINGS = {
    "gibbs": lambda: schematics.gibbs_schematic(),
    "vit": lambda: schematics.vit_schematic(*_fields(), patch=4, width=32, key_dim=8),
    "ball": lambda: schematics.spectral_ball_schematic(0.0557, 0.225),
    "chain": lambda: schematics.villani_chain_schematic(),
}


@pytest.mark.parametrize("name", sorted(DRAWINGS))
def test_each_schematic_is_readable_at_its_width(name: str) -> None:
    fig = DRAWINGS[name]()
    try:
        assert fig.get_figwidth() <= plotting.WIDTHS["full"]
        assert plotting.smallest_text_px(fig) >= 11.0
        assert plotting._colliding_texts(fig) == 0
        if fig.get_figwidth() > plotting.WIDTHS["small"] * 1.01:     # a phone gets its own
            narrow = plotting.narrow_figure(fig)
            assert narrow is not None and narrow.get_figwidth() < fig.get_figwidth()
            plt.close(narrow)
    finally:
        plt.close(fig)


def test_the_gibbs_schematic_draws_the_mean_s_over_4_above_the_minimum() -> None:
    fig = schematics.gibbs_schematic(s=2.0)
    try:
        levels = {round(line.get_ydata()[0], 9) for line in fig.axes[0].lines
                  if len(set(line.get_ydata())) == 1}
        assert {0.0, 0.5} <= levels                          # f* and f* + s / 4
        assert [ax.get_title()[:3] for ax in fig.axes] == ["(a)", "(b)", "(c)"]
    finally:
        plt.close(fig)


def test_the_vit_schematic_counts_its_tokens_and_names_bad_fields() -> None:
    fig = DRAWINGS["vit"]()
    try:
        assert any("N = 16" in text.get_text() for text in fig.axes[0].texts)
    finally:
        plt.close(fig)
    a, u = _fields()
    with pytest.raises(ValueError, match="patch"):
        schematics.vit_schematic(a, u, patch=5, width=32, key_dim=8)
    with pytest.raises(ValueError, match="u_field"):
        schematics.vit_schematic(a, u[:, :-1], patch=4, width=32, key_dim=8)


def test_the_ball_schematic_refuses_a_bad_radius() -> None:
    with pytest.raises(ValueError, match="r_start"):
        schematics.spectral_ball_schematic(0.05, -1.0)
