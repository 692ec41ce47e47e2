"""Chapter 2 (the infinite-data limit): the fits and lines the chapter prints, so that its open
cells show the idea.

``notebooks/ch02_infinite_data.ipynb`` measures with :mod:`attnlib.symbolic` how fast a finite
context approaches its infinite-data limit and hands the errors to these functions, which fit
and print them (the chapter has no Reproduction report page).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from attnlib import fitting

__all__ = ["LOSS_MAX_N", "convergence_fits", "fit_lines"]

#: The largest context size at which the chapter measures the loss error (its cost grows like n^2).
LOSS_MAX_N = 4096


def convergence_fits(ns: np.ndarray, errors: Mapping[str, np.ndarray], *,
                     loss_max_n: int = LOSS_MAX_N) -> dict[str, fitting.PowerLawFit]:
    """Power laws fitted to the Monte Carlo errors of
    :func:`attnlib.symbolic.finite_context_errors` against the context size ``ns``.

    Three fits, keyed by what they fit: the output error over every ``n``, the output error
    over the last four sizes, and the loss error for ``n <= loss_max_n`` (where it was
    measured). ``errors["output_error"]`` and ``errors["loss_error"]`` have one row per ``n``.
    """
    has_loss = ns <= loss_max_n
    output = errors["output_error"]
    return {"output error slope (all n):": fitting.fit_power_law(ns, output),
            f"output error slope (n >= {ns[-4]}):": fitting.fit_power_law(ns[-4:], output[-4:]),
            f"loss error slope (n <= {loss_max_n}):":
                fitting.fit_power_law(ns[has_loss], errors["loss_error"][has_loss])}


def fit_lines(fits: Mapping[str, fitting.PowerLawFit]) -> str:
    """One line per fit: its name, the fitted exponent and its 95% confidence interval."""
    return "\n".join(f"{name:31s} {fit.exponent:.3f} (95% CI {fit.ci[0]:.3f} to {fit.ci[1]:.3f})"
                     for name, fit in fits.items())
