"""attnbook.chapters.ch01: the tables chapter 1 prints from its open cells."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import attention, data, geometry
from attnbook.chapters import ch01


@pytest.fixture(scope="module")
def problem() -> data.RegressionProblem:
    return data.default_problem(rng=np.random.default_rng(2026))


def test_the_gradient_line_names_the_mask_and_the_norms() -> None:
    line = ch01.loss_and_gradient_line("loo", 0.30891, np.full((2, 2), 0.5), np.eye(3))
    assert line == "mask=loo: L_hat = 0.3089, |grad_A| = 1, |grad_B| = 1.73"
    assert ch01.MASKS == ("loo", "all")


def test_the_escape_table_reports_each_curve_as_excess(problem) -> None:
    X, Y = problem.sample(20, rng=np.random.default_rng(11))
    X_test, Y_test = problem.sample(200, rng=np.random.default_rng(2))
    scales = np.geomspace(1e-2, 1e3, 21)
    curves = attention.memorising_escape(X, Y, X_test, Y_test, scales)
    excess = ch01.excess(curves, problem.L_star)
    np.testing.assert_array_equal(excess["all"], curves.loss_all - problem.L_star)
    np.testing.assert_array_equal(excess["deployed"], curves.deployed - problem.L_star)
    table = ch01.escape_table({20: curves}, {20: excess})
    assert table.columns[-3:] == ("c = 0.01", "c = 1", "c = 1000")
    assert scales[8] == pytest.approx(1.0)
    assert [row[1] for row in table.rows] == ["L_hat all", "L_hat loo", "deployed"]
    best = int(np.argmin(excess["loo"]))
    assert table.rows[1][2] == format(excess["loo"][best], "+.4f")
    assert table.rows[1][-2] == format(excess["loo"][8], "+.4f")


def test_the_optima_table_has_one_row_per_optimum_and_sample(problem) -> None:
    samples = {20: problem.sample(20, rng=np.random.default_rng(5)),
               50: problem.sample(50, rng=np.random.default_rng(6))}
    X_test, Y_test = problem.sample(100, rng=np.random.default_rng(7))
    optima = {"unbalanced": (problem.M, np.linalg.inv(problem.Sigma)),
              "balanced": geometry.minimizer_manifold(problem.Sigma, problem.M).point()}
    table = ch01.optima_table(optima, samples, X_test, Y_test, problem.L_star)
    assert [(row[0], row[1]) for row in table.rows] == [
        ("unbalanced", "20"), ("unbalanced", "50"), ("balanced", "20"), ("balanced", "50")]
    A, B = optima["balanced"]
    X, Y = samples[50]
    loo = attention.loss(A, B, X, Y, mask="loo") - problem.L_star
    assert table.rows[3][4] == format(loo, "+.4f")
