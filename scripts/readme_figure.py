"""Draw the README's figure from the stored run ``paper1_defaults`` (chapter 5's experiment).

Usage: ``python scripts/readme_figure.py`` writes ``book/figures/paper1_defaults.png``.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402

from attnlib import experiments  # noqa: E402
from attnlib.plotting import (METHOD_COLOURS, SERIES, legend_below, new_figure,  # noqa: E402
                              plot_series)

OUT = Path(__file__).resolve().parents[1] / "book" / "figures" / "paper1_defaults.png"


def main() -> None:
    stored = experiments.load("paper1_defaults")
    config = json.loads(str(stored["config"]))
    iterations = stored["iteration"]
    curves = np.stack([stored[f"excess_risk_seed{s}"] for s in config["seeds"]])
    fig, ax = new_figure(height=4.2)
    for index, method in enumerate(config["methods"]):
        median = np.median(curves[:, :, index], axis=0)
        low, high = curves[:, :, index].min(axis=0), curves[:, :, index].max(axis=0)
        plot_series(ax, iterations + 1, median, method)
        ax.fill_between(iterations + 1, low, high, color=METHOD_COLOURS[method], alpha=0.15)
    ax.axhline(float(stored["ols_formula"]), color=METHOD_COLOURS["ols"], ls=SERIES["ols"]["linestyle"],
               label="OLS, exact expected excess risk")
    ax.set(xscale="log", yscale="log", xlabel="iteration + 1",
           ylabel=r"excess population risk $L(\theta) - L^\star$",
           title=f"d = {config['d']}, p = {config['p']}, n = {config['n']}: "
                 f"median and range over {len(config['seeds'])} seeds")
    ax.set_ylim(bottom=float(stored["ols_formula"]) / 3)
    legend_below(fig, ncol=3)
    fig.savefig(OUT)
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
