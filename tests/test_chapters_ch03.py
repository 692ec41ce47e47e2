"""attnbook.chapters.ch03: the tables chapter 3 prints and the checks it folds."""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import algorithm, data, geometry, landscape, population
from attnbook.chapters import ch03


@pytest.fixture(scope="module")
def manifold() -> geometry.MinimizerManifold:
    problem = data.default_problem(rng=np.random.default_rng(3))
    return geometry.minimizer_manifold(problem.Sigma, problem.M)


def test_the_gram_table_checks_every_product_of_the_derivation(manifold) -> None:
    root = population.spd_sqrt(manifold.Xstar.T @ manifold.Xstar)[0]
    rotations = {"O = I": np.eye(manifold.Xstar.shape[1]), "O = Psi^T": manifold.right.T}
    table = ch03.gram_table(manifold, rotations, root)
    assert table.columns == ("Frobenius norm of", "O = I", "O = Psi^T")
    first, *others = table.rows
    assert first[1] != "< 1e-12" and first[2] == "< 1e-12"   # the Gram matrix moves with O
    assert all(row[1:] == ("< 1e-12", "< 1e-12") for row in others)


def test_values_at_rounding_level_show_as_zero() -> None:
    assert ch03.shown(3e-16) == "0" and ch03.shown(-2e-13) == "0"
    assert ch03.shown(0.0557) == "0.0557" and ch03.shown(-0.431) == "-0.431"


def test_the_stationary_tables_classify_the_points(manifold) -> None:
    table = landscape.stationary_point_table(manifold, lam=1.0, c=2.0)
    gradients, counts = ch03.gradient_table(table), ch03.count_table(table)
    rows = {row[0]: row for row in gradients.rows}
    assert rows["point of S (global minimum)"][1:] == ("0", "0", "0", "0")
    assert rows["unbalanced minimum of L (c = 2)"][2] != "0"          # not stationary for Q
    negative = {row[0]: int(row[1]) for row in counts.rows}
    assert negative["point of S (global minimum)"] == 0
    assert negative["balanced saddle, smallest s dropped"] == 1


def test_the_one_step_inequality_holds_along_a_run_at_the_best_step(manifold) -> None:
    s = manifold.singular_values
    alpha, beta = s[-1], (2 * s[0]) ** 2
    eta = alpha / beta
    assert "eta = alpha / beta = " in ch03.step_lines(alpha, beta)
    start = manifold.point(data.random_rotation(s.size, rng=np.random.default_rng(0)))
    start = (start[0] * 1.1, start[1] * 0.95)              # off S, inside the ball
    path = []
    algorithm.train(algorithm.closed_form_loss(manifold.Sigma, manifold.M),
                    algorithm.Method(update=algorithm.GD(step=eta)), init=start,
                    iterations=20, callback=lambda k, A, B: path.append((A, B)))
    check = ch03.path_check(path, manifold, eta)
    assert check.held and check.shrink.size == len(path) - 1
    assert np.all(check.shrink < 1) and check.distance[-1] < check.distance[0]
    assert ch03.path_lines(check).endswith("one-step bound held: True")


def test_the_sweep_lines_compute_the_figure_of_merit() -> None:
    sweep = {"alpha_P": np.array([0.3]), "beta_P": np.array([0.2]),
             "alpha_E": np.array([0.1]), "beta_E": np.array([0.05])}
    lines = ch03.sweep_lines(np.array([10.0]), sweep).splitlines()
    assert lines[1] == "    10 | 3.00e-01 2.00e-01 4.50e-01 | 1.00e-01 5.00e-02 2.00e-01"
