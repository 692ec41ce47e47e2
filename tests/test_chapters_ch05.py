"""attnbook.chapters.ch05: the objects chapter 5 builds and its report page re-checks."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook import experiments
from attnbook.chapters import ch05
from attnbook.experiments import ablations, part1


@pytest.fixture(scope="module")
def runs() -> dict[str, np.ndarray]:
    return experiments.load("paper1_defaults")


def test_constants_match_the_stored_run(runs: dict[str, np.ndarray]) -> None:
    assert list(ch05.METHODS) == experiments.config(runs)["methods"]
    assert set(ch05.LABELS) == set(ch05.METHODS)
    assert ch05.seeds(runs) == part1.SETTINGS.seeds
    assert ch05.L_STAR == pytest.approx(part1.SETTINGS.p * part1.SETTINGS.noise_std ** 2 / 2)
    assert ch05.INIT_SCALES[3] == pytest.approx(np.sqrt(part1.SETTINGS.d))
    assert part1.SETTINGS.noise_std in ch05.NOISE_AXIS


def test_stacked_picks_one_method_of_a_stored_curve(runs: dict[str, np.ndarray]) -> None:
    curves = ch05.stacked(runs, "excess_risk", "sgd")
    assert curves.shape == (len(ch05.seeds(runs)), runs["iteration"].size)
    np.testing.assert_array_equal(curves, runs["excess_risk"][:, :, ch05.METHODS.index("sgd")])


def test_lowest_minima_are_the_best_certified_values(runs: dict[str, np.ndarray]) -> None:
    best = ch05.lowest_minima(runs)
    assert set(best) == {(tag, s) for tag in ("Q", "L") for s in ch05.seeds(runs)}
    for i, s in enumerate(ch05.seeds(runs)):
        assert best["Q", s] <= runs["ref_Q_value"][i].min()     # chapter 12 may go lower
        assert best["L", s] == runs["ref_L_value"][i].min()


@pytest.mark.parametrize("method", ch05.METHODS)
def test_gap_is_measured_to_the_minimum_of_the_trained_objective(
        runs: dict[str, np.ndarray], method: str) -> None:
    gaps = ch05.gap(runs, ch05.lowest_minima(runs), method)
    if method in part1.LAM1_METHODS:          # Q_hat = L_hat + R_hat: chapters 5, 6 and 12's table
        lowest = part1.lowest_known_minima()
        minima = np.array([lowest[s]["value"] for s in ch05.seeds(runs)])
    else:                                     # L_hat alone: the stored run's certified minima
        minima = runs["ref_L_value"].min(axis=1)
    np.testing.assert_allclose(gaps + minima[:, None], ch05.stacked(runs, "objective", method),
                               rtol=1e-14)
    assert np.all(gaps > 0)                   # no iterate beats the lowest known minimum


def test_start_comparison_agrees_with_the_starts_computed_live(
        runs: dict[str, np.ndarray]) -> None:
    e_spectral, e_random, ratios, loss_ratio, excess_ratio = ch05.start_comparison(runs)
    for i, s in enumerate(ch05.seeds(runs)):
        # the stored run's first iterates are the two starts (tolerance: rounding only)
        live = ablations.start_excess_risks(s, noise_std=part1.SETTINGS.noise_std)
        assert e_spectral[i] == pytest.approx(live["spectral"], rel=1e-12)
        assert e_random[i] == pytest.approx(live["random"], rel=1e-12)
        loss = (e_random[i] + ch05.L_STAR) / (e_spectral[i] + ch05.L_STAR)
        assert ratios[i] == pytest.approx((loss, e_random[i] / e_spectral[i]), rel=1e-15)
    assert loss_ratio == np.median([r[0] for r in ratios])
    assert excess_ratio == np.median([r[1] for r in ratios])
    assert 1 < loss_ratio < excess_ratio    # the noise floor caps the loss ratio
