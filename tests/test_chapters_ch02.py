"""attnbook.chapters.ch02: the power-law fits chapter 2 prints from its Monte Carlo."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook.chapters import ch02


def test_the_fits_recover_known_slopes_on_the_sizes_they_name() -> None:
    ns = 2 ** np.arange(5, 15)
    rng = np.random.default_rng(0)
    noise = np.exp(0.01 * rng.standard_normal((ns.size, 3)))
    errors = {"output_error": 2.0 * ns[:, None] ** -0.4 * noise,
              "loss_error": 0.5 * ns[:, None] ** -0.8 * noise}
    errors["loss_error"][ns > ch02.LOSS_MAX_N] = np.nan        # not measured there
    fits = ch02.convergence_fits(ns, errors)
    assert list(fits) == ["output error slope (all n):", "output error slope (n >= 2048):",
                          "loss error slope (n <= 4096):"]
    output, tail, loss = fits.values()
    assert output.exponent == pytest.approx(-0.4, abs=0.01)
    assert tail.exponent == pytest.approx(-0.4, abs=0.05)
    assert loss.exponent == pytest.approx(-0.8, abs=0.01)


def test_the_lines_keep_the_chapters_format() -> None:
    ns = np.array([10.0, 100.0, 1000.0, 10_000.0])
    fits = ch02.convergence_fits(ns, {"output_error": 1 / ns, "loss_error": ns ** -2.0},
                                 loss_max_n=1000)
    lines = ch02.fit_lines(fits).splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("output error slope (all n):     -1.000 (95% CI ")
    assert lines[2].startswith("loss error slope (n <= 1000):   -2.000")
