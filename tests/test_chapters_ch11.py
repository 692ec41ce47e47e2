"""attnbook.chapters.ch11: the Phase-2 runs, their summaries and the strong strength that
Chapter 11 and its Reproduction report page share."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook.chapters import ch11
from attnbook.experiments import darcy_runs


@pytest.fixture(scope="module")
def stored() -> dict[str, dict[str, np.ndarray]]:
    return ch11.phase2_runs()


def test_the_runs_are_the_stored_phase2_configurations(stored):
    assert list(stored) == ["adam", "sgd", "noisy", ch11.STRONG]
    assert set(ch11.PHASE2_RUNS.values()) == set(darcy_runs.PHASE2)
    # the strong run: noisy SGD at a hundred times the book's strength, as its settings say
    assert ch11.strong_lambda(stored) == darcy_runs.PHASE2["darcy_phase2_noisy_strong"].lam
    assert ch11.strong_lambda(stored) == pytest.approx(100 * darcy_runs.BOOK.lam)


def test_summaries_average_the_seeds_over_the_last_epochs(stored):
    summaries = ch11.phase2_summaries(stored)
    assert list(summaries) == list(stored)
    for label, summary in summaries.items():
        assert list(summary) == list(darcy_runs.REGIMES)
        for regime, measured in summary.items():
            assert all(np.isfinite(value) for value in measured.values()), (label, regime)
            test = darcy_runs.seed_series(stored[label], regime, "test_loss")
            assert measured["test_loss"] == pytest.approx(
                test[:, -ch11.LAST_EPOCHS:].mean(axis=1).mean(), rel=1e-12)
            norms = darcy_runs.seed_series(stored[label], regime, "norm_WQ")
            assert measured["norm_WQ"] - measured["norm_WQ0"] == pytest.approx(
                measured["growth_WQ"], rel=1e-9)
            assert measured["norm_WQ0"] == pytest.approx(norms[:, 0].mean(), rel=1e-12)


def test_the_window_of_the_last_epochs_is_the_one_asked_for(stored):
    adam = {"adam": stored["adam"]}
    last_5 = ch11.phase2_summaries(adam, last=5)["adam"]["none"]
    test = darcy_runs.seed_series(stored["adam"], "none", "test_loss")
    assert last_5["test_loss"] == pytest.approx(test[:, -5:].mean(axis=1).mean(), rel=1e-12)
    assert last_5["test_loss"] != ch11.phase2_summaries(adam)["adam"]["none"]["test_loss"]


def test_the_tables_have_one_row_per_run_and_regime(stored):
    summaries = ch11.phase2_summaries(stored)
    expected = [(label, regime) for label in stored for regime in darcy_runs.REGIMES]
    for table in (ch11.error_table(summaries), ch11.norm_table(summaries),
                  ch11.gap_table(summaries)):
        assert [row[:2] for row in table.rows] == expected
    adam_none = summaries["adam"]["none"]
    assert ch11.norm_table(summaries).rows[0][2].startswith(f"{adam_none['norm_WQ0']:.2f} -> ")


def test_the_parameter_summary_counts_every_weight():
    from attnlib import vit

    params = vit.init_params(darcy_runs.model_config(darcy_runs.BOOK),
                             rng=np.random.default_rng(0))
    text = ch11.parameter_summary(params)
    total = sum(value.size for value in params.values())
    assert f"total {total} parameters, of which W_Q and W_K " \
           f"{params['W_Q'].size + params['W_K'].size}" in text
    assert all(name in text for name in params)


def test_the_gibbs_mode_shrinks_with_the_strength():
    setup = darcy_runs.BOOK
    for regime in ("log", "power"):
        weak, strong = (ch11.gibbs_mode_radius(setup, regime, lam) for lam in (1e-5, 1e-3))
        assert weak > 2 * strong > 0
    with pytest.raises(ValueError, match="active"):
        ch11.gibbs_mode_radius(setup, "none", 1e-5)
