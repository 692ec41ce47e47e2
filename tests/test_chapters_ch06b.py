"""attnbook.chapters.ch06b: what chapter 6b computes and its report re-checks, on the stored run
and on small cases with known answers."""

import numpy as np
import pytest

from attnbook import experiments
from attnbook.chapters import ch06b


@pytest.fixture(scope="module")
def methods_run():
    return experiments.load("finite_sample_methods")


def one_run(values, evaluations, initial_value=1.0, basin_value=0.0):
    """A stored run of one data set and one method (shapes (1, 1) and (1, 1, 1, records))."""
    return {"values": np.array(values, float)[None, None, None],
            "evaluations": np.array(evaluations, float)[None, None, None],
            "initial_value": np.array([[initial_value]]),
            "basin_value": np.array([[basin_value]])}


def test_evaluations_to_counts_the_first_record_within_the_gap():
    run = one_run([1.0, 0.5, 1e-4, 2e-6], [0, 10, 20, 30])
    reference = ch06b.lowest_known_minimum(run)
    assert reference[0, 0] == 0.0
    counts = ch06b.evaluation_counts(run, reference)
    assert [counts[level][0, 0, 0] for level in ch06b.LEVELS] == [20, np.inf, np.inf]
    assert ch06b.evaluations_to(run, 1e-6, reference)[0, 0, 0] == np.inf
    assert ch06b.evaluations_to(run, 1e-3, np.array([[0.5]]))[0, 0, 0] == 10


def test_the_lowest_known_minimum_is_below_the_basin_and_every_value(methods_run):
    lowest = ch06b.lowest_known_minimum(methods_run)
    assert np.all(lowest <= methods_run["basin_value"])
    assert np.all(lowest[..., None, None] <= np.nan_to_num(methods_run["values"], nan=np.inf))
    below = lowest < methods_run["basin_value"] - 1e-12 * np.abs(methods_run["basin_value"])
    assert below.sum() == 1                                    # the chapter's "1 of 12"


def test_evaluation_counts_on_the_stored_run_are_the_chapters(methods_run):
    """Stricter gaps need at least as many evaluations; L-BFGS (method 3) reaches 1e-9 in 11 of
    12 runs, in 249 to 1471 evaluations, as the chapter prints."""
    counts = ch06b.evaluation_counts(methods_run, ch06b.lowest_known_minimum(methods_run))
    assert np.all(counts[1e-3] <= counts[1e-6]) and np.all(counts[1e-6] <= counts[1e-9])
    lbfgs = counts[1e-9][..., 3]
    assert np.isfinite(lbfgs).sum() == 11
    assert (lbfgs[np.isfinite(lbfgs)].min(), lbfgs[np.isfinite(lbfgs)].max()) == (249, 1471)


def test_early_stops_first_iteration_within_ten_percent():
    basin = np.array([[1.0, 1.0]])
    alg1 = np.array([[[2.0, 1.2, 1.05, 1.0], [0.5, 0.6, 0.7, 0.8]]])
    assert ch06b.early_stops(alg1, basin) == [2, None]
    assert ch06b.early_stops(alg1, basin, tolerance=0.5) == [1, 0]


def test_early_stops_on_the_stored_run_are_the_chapters(methods_run):
    stops = ch06b.early_stops(methods_run["alg1_excess_risk"], methods_run["basin_excess_risk"])
    assert len(stops) == 12
    assert sum(stop == 0 for stop in stops) == 3 and stops.count(None) == 4
    assert sorted(stop for stop in stops if stop) == [11, 28, 36, 38, 60]


# ---------------------------------------------------------------------------------------------
# The Monte Carlo runs, what the cells print, and the chapter's schematic
# ---------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def point_of_s():
    from attnlib import algorithm, data, population

    problem = data.default_problem(rng=np.random.default_rng(0), d=4, p=6, kappa=4.0,
                                   noise_std=0.1)
    half, inv_half = population.spd_sqrt(problem.Sigma)
    rotation, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((4, 4)))
    a, b = algorithm.spectral_init(problem.Sigma, problem.M)
    return problem, a, b, half @ rotation @ inv_half


def test_rotation_differences_vanish_for_the_identity(point_of_s):
    problem, a, b, _ = point_of_s
    same = ch06b.rotation_differences(problem, a, b, np.eye(4), "loo",
                                      np.random.default_rng(2), stacks=3, prompts=5, n=6)
    assert same.shape == (3,) and np.allclose(same, 0.0, atol=1e-12)


def test_rotation_differences_draw_from_the_generator_they_are_given(point_of_s):
    problem, a, b, r_mat = point_of_s
    one, two = (ch06b.rotation_differences(problem, a, b, r_mat, "loo",
                                           np.random.default_rng(3), stacks=2, prompts=4, n=5)
                for _ in range(2))
    assert np.array_equal(one, two) and np.any(one != 0)
    text = ch06b.describe_rotation_differences({"loo": np.array([1.0, -1.0, 2.0, 0.0])})
    assert text.splitlines()[0] == "mean of L_hat(AR, BR) - L_hat(A, B):"
    assert "mask 'loo': +5.00e-01" in text and "standard errors" in text


def test_tilt_spreads_are_positive_per_size(point_of_s):
    problem = point_of_s[0]
    free, noise = ch06b.tilt_spreads(problem, 0.3, "shared", np.array([20, 40]), draws=12)
    assert free.shape == noise.shape == (2,) and np.all(free > 0) and np.all(noise > 0)


def test_the_descriptions_count_what_the_stored_run_holds(methods_run):
    lowest = ch06b.lowest_known_minimum(methods_run)
    counts = ch06b.evaluation_counts(methods_run, lowest)
    methods = experiments.config(methods_run)["methods"]
    text = ch06b.describe_method_counts(methods_run, lowest, counts, methods)
    assert len(text.splitlines()) == 3 + len(methods)
    risk, basin = methods_run["alg1_excess_risk"], methods_run["basin_excess_risk"]
    stops = ch06b.early_stops(risk, basin)
    assert f"of {len(stops)} runs" in ch06b.describe_early_stops(risk, basin, stops)
    assert ch06b.describe_end_points(methods_run).count("the minimizer") == 2


def test_the_tilted_orbit_schematic_draws_one_curve_per_tilt():
    import matplotlib.pyplot as plt

    from attnbook.plotting import NEUTRAL_GREY, TILTED_ORBIT_CURVES, tilted_orbit_schematic

    fig = tilted_orbit_schematic()
    top, bottom = fig.axes
    assert [line.get_label() for line in bottom.get_lines() if not line.get_label().startswith(
        "_")] == [label for _, _, label in TILTED_ORBIT_CURVES]
    plt.close(fig)
    fig = tilted_orbit_schematic([(0.0, NEUTRAL_GREY, "flat")], legend_loc="lower left")
    assert len(fig.axes[1].get_lines()) == 1          # a flat curve gets no star
    plt.close(fig)
    with pytest.raises(ValueError):
        tilted_orbit_schematic([])
