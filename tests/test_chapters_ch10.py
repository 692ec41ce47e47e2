"""attnbook.chapters.ch10: the run names, the stored temperature runs, their temperatures and the
fits of their relaxation curves that Chapter 10 and its Reproduction report page share."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnbook.chapters import ch10
from attnbook.experiments import part2


def test_run_names_cover_both_experiments_on_both_models_kind_by_kind():
    assert ch10.run_names() == ["langevin_temperatures_attention", "langevin_temperatures_lora",
                                "langevin_norms_attention", "langevin_norms_lora"]
    assert ch10.run_names(("norms",), ("lora",)) == ["langevin_norms_lora"]
    with pytest.raises(ValueError, match="kind"):
        ch10.run_name("constants", "lora")
    with pytest.raises(ValueError, match="model"):
        ch10.run_name("temperatures", "vit")


def test_temperature_runs_hold_the_gibbs_means_above_the_minimum_at_the_shared_temperatures():
    runs = ch10.temperature_runs()
    assert list(runs) == ["langevin_temperatures_attention", "langevin_temperatures_lora"]
    temperatures = ch10.shared_temperatures(runs)
    assert temperatures == list(part2.TEMPERATURES["lora"].temperatures) == [0.02, 0.05, 0.2]
    for run in runs.values():
        assert run["loss_mean"].shape == (run["times"].size, len(temperatures))
        excess = run["tail_mean"] - float(run["f_star"])
        # the Gibbs mean F_s lies above f*, by more at a higher temperature
        assert np.all(excess > 0) and np.all(np.diff(excess) > 0)


def test_relaxation_fits_leave_out_the_deterministic_start_of_both_models():
    """Chapter 10's six relaxation curves: the common start of the chains has standard error 0
    (attention) or round-off (LoRA, about 1e-17); both are deterministic records, left out of the
    fits rather than weighting them by a round-off standard error; the correlation of the chain
    means spans many records."""
    runs = ch10.temperature_runs()
    assert runs["langevin_temperatures_attention"]["loss_sem"][0, 0] == 0.0
    lora_start = runs["langevin_temperatures_lora"]["loss_sem"][0]
    assert np.all(lora_start <= 1e-12 * runs["langevin_temperatures_lora"]["loss_mean"][0])
    fits = ch10.relaxation_fits(runs)
    assert list(fits) == [f"{m} s = {s:g}" for m in ch10.MODELS for s in (0.02, 0.05, 0.2)]
    for fit, times, sem in fits.values():
        assert fit.deterministic == 1 and fit.records == times.size - 1 == sem.size - 1
        assert fit.correlation > 10 and fit.exponential <= 3.0


def _run_with_temperatures(temperatures: list[float]) -> dict[str, np.ndarray]:
    return {"config": np.array(json.dumps({"temperatures": temperatures}))}


def test_shared_temperatures_refuses_runs_that_do_not_share_them():
    runs = {"langevin_temperatures_attention": _run_with_temperatures([0.02, 0.05]),
            "langevin_temperatures_lora": _run_with_temperatures([0.02, 0.05])}
    assert ch10.shared_temperatures(runs) == [0.02, 0.05]
    runs["langevin_temperatures_lora"] = _run_with_temperatures([0.02, 0.1])
    with pytest.raises(ValueError, match="differ"):
        ch10.shared_temperatures(runs)


def test_the_chapters_tables_read_the_stored_runs():
    from attnlib import langevin

    runs = {name: ch10.experiments.load(name) for name in ch10.run_names()}
    offsets = ch10.gibbs_offset_table(runs)
    assert len(offsets.rows) == 6 and offsets.columns[-2:] == ("ratio", "D_eff")
    for row in offsets.rows:              # F_s - f* is D_eff s / 4 and ratio (s D / 4)
        s, excess, equipartition, ratio = float(row[1]), float(row[4]), float(row[5]), float(row[6])
        assert excess == pytest.approx(ratio * equipartition, abs=0.006)
        assert float(row[7]) == pytest.approx(4 * excess / s, rel=0.01)
    run = runs["langevin_temperatures_lora"]
    eps = ch10.epsilon_grid(run, 0)
    assert eps.size == ch10.EPSILONS and np.all(np.diff(eps) < 0)
    gap = np.abs(run["loss_mean"][:, 0] - run["tail_mean"][0])
    table = ch10.hitting_table({("lora", 0.02): (eps, langevin.hitting_times(run["times"], gap,
                                                                            eps))})
    assert table.rows[0][:2] == ("lora", "0.02")
    norms = ch10.norm_table(runs)
    assert len(norms.rows) == 8 and norms.columns[2:4] == ("norms, t = 100", "norms, t = 400")


def test_the_epsilon_grid_refuses_a_start_at_the_gibbs_mean():
    run = {"loss_mean": np.array([[1.0], [1.0]]), "tail_mean": np.array([1.0]),
           "loss_sem": np.array([[0.1], [0.1]]), "tail_sem": np.array([0.1])}
    with pytest.raises(ValueError, match="too close"):
        ch10.epsilon_grid(run, 0)
