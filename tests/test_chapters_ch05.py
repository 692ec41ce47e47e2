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


# ---------------------------------------------------------------------------------------------
# What the chapter's cells print
# ---------------------------------------------------------------------------------------------

def test_headline_curves_start_at_one_and_carry_the_curvatures(
        runs: dict[str, np.ndarray]) -> None:
    k = np.arange(5.0)
    headline = {"iteration": k, "gap_population": 2.0 * 0.5 ** k,
                "gap_closed_form": 3.0 * 0.25 ** k, "step_population": 0.1,
                "step_closed_form": 0.2, "s_d_population": 0.05, "s_d_closed_form": 0.06}
    relative, its, steps, curvature = ch05.headline_curves(headline, runs)
    assert set(relative) == set(its) == set(steps) == set(curvature) == {
        "population", "closed_form", "finite"}
    np.testing.assert_allclose(relative["population"], 0.5 ** k, rtol=1e-15)
    np.testing.assert_allclose(relative["closed_form"], 0.25 ** k, rtol=1e-15)
    assert relative["finite"][0] == 1.0 and np.all(relative["finite"] > 0)
    assert its["finite"] is runs["iteration"]
    assert curvature["finite"] == runs["basin_hessian"][0][0] == runs["basin_hessian"][0].min()
    assert steps == {"population": 0.1, "closed_form": 0.2,
                     "finite": float(runs["step"][0, 0])}


def test_slow_directions_counts_the_soft_eigenvalues() -> None:
    text = ch05.slow_directions(np.array([1e-3, 0.01, 0.2, 0.9]))
    assert text.startswith("finite Q_hat, seed 0: 2 of 4 Hessian eigenvalues below 0.05;")
    assert "h_min = 0.001, h_max = 0.9" in text


def test_the_descriptions_print_the_computed_numbers(runs: dict[str, np.ndarray]) -> None:
    comparison = ch05.start_comparison(runs)
    assert f"{comparison.loss_ratio:.3g}" in ch05.describe_starts(comparison)
    starts = [{"spectral": 0.005, "random": 0.25}, {"spectral": 0.002, "random": 0.1}]
    assert ch05.describe_zero_noise(starts) == "sigma = 0: spectral start 0.005 / 0.002, ratio 50 / 50"
    grid = {"log10_ratio": np.zeros((len(ch05.INIT_SCALES), len(ch05.NOISE_AXIS))),
            "start": np.full((len(ch05.NOISE_AXIS), 3), 0.05)}
    assert len(ch05.describe_start_grid(grid).splitlines()) == 1 + len(ch05.NOISE_AXIS)
    best = ch05.lowest_minima(runs)
    gaps, excess = ch05.gap(runs, best, "algorithm1"), ch05.stacked(runs, "excess_risk",
                                                                     "algorithm1")
    text = ch05.describe_algorithm1(gaps, excess)
    assert f"{np.median(gaps[:, -1]):.2e} at 2000" in text


def test_end_readings_are_the_last_iterates_under_both_readings(
        runs: dict[str, np.ndarray]) -> None:
    best = ch05.lowest_minima(runs)
    relative_loss, gap_ratio = ch05.end_readings(runs, best)
    for m in ch05.METHODS:
        np.testing.assert_array_equal(
            relative_loss[m], ch05.stacked(runs, "excess_risk", m)[:, -1] / ch05.L_STAR)
        gaps = ch05.gap(runs, best, m)
        np.testing.assert_array_equal(gap_ratio[m], gaps[:, -1] / gaps[:, 0])
    table = str(ch05.end_readings_table(relative_loss, gap_ratio))
    assert all(ch05.LABELS[m] in table for m in ch05.METHODS)


def test_sweep_tables_have_one_table_per_threshold() -> None:
    sweep = experiments.load("paper1_condition_sweep")
    tables = ch05.sweep_tables(sweep)
    assert [heading.split(" (")[0] for heading, _ in tables] == [
        f"iterations to excess risk at most {t:g}" for t in sweep["thresholds"]]
    cap = int(sweep["iteration"][-1])
    assert all(f"cap {cap}" in heading for heading, _ in tables)
    assert any(f"> {cap}" in str(table) for _, table in tables)
