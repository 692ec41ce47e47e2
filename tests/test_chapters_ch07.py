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
