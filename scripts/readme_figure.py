"""Draw the README's figure from the stored run ``paper1_defaults`` (chapter 5's experiment).

Usage: ``python scripts/readme_figure.py`` writes ``book/figures/paper1_defaults.png``, at two
image pixels per CSS pixel and with the book's figure records (``attnbook.plotting.figure_png``):
the introduction shows it at its CSS width, half its pixel width (652 px, set there), and the
book's browser checks read the records. Beside it, ``paper1_defaults.narrow.png``: the same
figure laid out for phones (``attnbook.plotting.narrow_figure``), which the book serves below
600 px.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from attnlib import experiments  # noqa: E402
from attnbook.plotting import (METHOD_COLOURS, figure, figure_png, narrow_figure,  # noqa: E402
                              plot_series)

OUT = Path(__file__).resolve().parents[1] / "book" / "figures" / "paper1_defaults.png"


def main() -> None:
    stored = experiments.load("paper1_defaults")
    config = json.loads(str(stored["config"]))
    seeds = config["seeds"]
    iterations = stored["iteration"]
    best = {tag: stored[f"ref_{tag}_value"].min(axis=1) for tag in ("Q", "L")}   # per seed
    fig, axes = figure(2, 1, width=6.4, height=6.4, sharex=True)
    for index, method in enumerate(config["methods"]):
        tag = "Q" if config["method_options"][method]["lam"] > 0 else "L"
        gaps = stored["objective"][:, :, index] - best[tag][:, None]         # (seed, iteration)
        risks = stored["excess_risk"][:, :, index]
        for ax, curves in zip(axes, (gaps, risks)):
            plot_series(ax, iterations + 1, np.median(curves, axis=0), method, ms=4)
            ax.fill_between(iterations + 1, curves.min(axis=0), curves.max(axis=0),
                            color=METHOD_COLOURS[method], alpha=0.15)
    axes[1].axhline(float(stored["ols_formula"]), color=METHOD_COLOURS["ols"], ls="--",
                    label="OLS, exact expected excess risk")
    axes[0].set(xscale="log", yscale="log",
                ylabel="optimization gap to the\ncertified optimum of its objective",
                title=f"d = {config['d']}, p = {config['p']}, n = {config['n']}: "
                      f"median and range over {len(seeds)} seeds")
    axes[1].set(xscale="log", yscale="log", xlabel="iteration + 1",
                ylabel=r"excess population risk $L(\theta) - L^\star$")
    axes[1].set_ylim(bottom=float(stored["ols_formula"]) / 3)
    axes[0].legend(ncols=2, loc="lower left")
    axes[1].legend(handles=[axes[1].lines[-1]], loc="upper right")
    OUT.write_bytes(figure_png(fig))
    narrow = OUT.with_suffix(".narrow.png")
    narrow.write_bytes(figure_png(narrow_figure(fig)))
    print(f"wrote {OUT} and {narrow}")


if __name__ == "__main__":
    main()
