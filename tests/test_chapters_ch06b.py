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
