"""Tests of attnbook.chapters.ch07: the wells' spectral gaps, the relaxation runs, the noise
floor and the fitted decay rate that Chapter 7 and its report page share."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from attnbook.chapters import ch07


@pytest.fixture(scope="module")
def relaxed_1d() -> ch07.Relaxation:
    return ch07.relaxation_1d()


def test_the_1d_gap_does_not_depend_on_the_box() -> None:
    # the Gibbs mass of the tilted well lies well inside [-3, 3]: a gap of the operator on R
    gap, wider = ch07.well_gap(), ch07.well_gap(half_width=3.5)
    assert 0.05 < gap < 0.2
    assert wider == pytest.approx(gap, rel=1e-6)


def test_the_gap_shrinks_at_lower_temperature() -> None:
    # hopping over the barrier is the slow motion: Kramers' law, lambda_1 ~ exp(-2 Delta f / s)
    assert ch07.well_gap(0.4) < 0.5 * ch07.well_gap(0.7)


def test_a_relaxation_is_a_seeded_run_with_one_distance_per_recorded_time() -> None:
    small = ch07.relaxation_1d(chains=300)
    again = ch07.relaxation_1d(chains=300)
    other = ch07.relaxation_1d(chains=300, seed=ch07.SEEDS["one_d"] + 1)
    assert small.tv.shape == small.run.times.shape
    assert small.run.states.shape == (small.run.times.size, 300, 1)
    assert np.array_equal(small.tv, again.tv)
    assert not np.array_equal(small.tv, other.tv)
    assert small.probabilities.sum() == pytest.approx(1.0)
    assert np.all((small.tv >= 0) & (small.tv <= 1))
    assert small.tv[0] > 0.9                    # every chain starts in the higher well
    assert small.tv[-1] < 0.5 * small.tv[0]


def test_the_noise_floor_falls_with_the_sample_size(relaxed_1d: ch07.Relaxation) -> None:
    few = ch07.relaxation_1d(chains=200)
    rng = np.random.default_rng(0)
    floor_few, floor_many = ch07.noise_floor(few, rng), ch07.noise_floor(relaxed_1d, rng)
    # the histogram error of an exact sample falls like 1/sqrt(chains): 50 times the chains
    assert 0 < floor_many < floor_few / 3
    assert floor_many < relaxed_1d.tv[-1]       # the chains at t = 40 are not yet exact


def test_decay_rate_recovers_an_exponential_above_the_floor() -> None:
    times = np.linspace(0.0, 40.0, 201)
    tv = np.maximum(0.9 * np.exp(-0.3 * times), 0.01)
    synthetic = ch07.Relaxation(run=SimpleNamespace(times=times), edges=[], probabilities=None,
                                tv=tv)
    rate, window = ch07.decay_rate(synthetic, floor=0.01)
    assert rate == pytest.approx(0.3, rel=1e-9)
    assert np.all(times[window] >= 2) and np.all(tv[window] >= 0.03)
    assert window.sum() > 10


def test_the_1d_chains_forget_their_start_at_the_rate_of_the_gap(
        relaxed_1d: ch07.Relaxation) -> None:
    # the chapter's Poincare evidence: the fitted rate within 10% of lambda_1 (it prints 1.03)
    floor = ch07.noise_floor(relaxed_1d, np.random.default_rng(ch07.SEEDS["floor"]))
    rate, _ = ch07.decay_rate(relaxed_1d, floor)
    assert abs(np.log(rate / ch07.well_gap())) < np.log(1.1)


# ---------------------------------------------------------------------------------------------
# The integrator's checks and what the chapter's cells print
# ---------------------------------------------------------------------------------------------

def test_weak_order_errors_shrink_with_the_step() -> None:
    mean_err, var_err = ch07.weak_order_errors([0.5, 0.125], chains=20_000)
    assert len(mean_err) == len(var_err) == 2
    assert mean_err[1] < mean_err[0] and var_err[1] < var_err[0]


def test_stationary_biases_and_their_description() -> None:
    well = ch07.curved_well()
    start = np.tile([1.0, 0.5], (50, 1))
    biases = ch07.stationary_biases(well, start, 0.0, ch07.TEMPERATURE,
                                    runs=(("Euler-Maruyama", 0.05), ("MALA", 0.05)))
    assert set(biases) == {("Euler-Maruyama", 0.05), ("MALA", 0.05)}
    assert biases["Euler-Maruyama", 0.05][2] is None
    assert 0 < biases["MALA", 0.05][2] <= 1
    text = ch07.describe_biases(biases)
    assert "acceptance" in text.splitlines()[1]
    assert text.splitlines()[-1].startswith("Euler-Maruyama bias / h: ")


def test_the_spreading_and_box_descriptions() -> None:
    times = np.array([0.0, 10.0, 50.0, 200.0])
    text = ch07.describe_spreading(times, np.array([0.0, 2.0, 11.1, 55.0]),
                                   np.array([1.0, 0.94, 0.79, 0.64]))
    assert text.splitlines()[0] == "t =  10: E x^2 =    2.0, fraction in [-3, 3] = 0.94"
    boxes = ch07.describe_box_gaps([5, 10, 20, 40], [0.4, 0.1, 0.03, 0.007])
    assert boxes.splitlines() == ["log growth, lambda_1 on [-L, L]: L=5: 4.00e-01, "
                                  "L=10: 1.00e-01, L=20: 3.00e-02", "  L=40: 7.00e-03"]
