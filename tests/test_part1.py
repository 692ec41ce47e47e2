"""Part I's experiment helpers (attnbook.experiments.part1, ablations) used by chapter 5."""

import numpy as np
import pytest

from attnlib import algorithm
from attnbook.experiments import ablations, part1


def test_reference_start_labels_name_the_det_of_each_start():
    loss = algorithm.closed_form_loss(*_moments())
    settings = part1.SETTINGS
    labels = part1.reference_start_labels()["Q"][1:1 + settings.reference_rotations]
    starts = part1.reference_starts(loss, 0)
    assert len(starts) == len(labels) == settings.reference_rotations
    for label, (_, b) in zip(labels, starts):
        _, v = loss.manifold.factor(np.zeros((settings.p, settings.d)), b)
        rotation = np.linalg.solve(loss.manifold.V_star, v)      # V = V_star O
        assert f"(det {int(np.round(np.linalg.det(rotation))):+d})" in label


def _moments():
    from attnlib import population
    _, (x, y), _ = ablations.defaults_data(0)
    return population.empirical_moments(x, y)


def test_lowest_known_minima_are_the_smallest_stored_values():
    table = part1.lowest_known_minima()
    assert sorted(table) == list(part1.SETTINGS.seeds)
    stored = part1.load("paper1_defaults")
    for seed, row in table.items():
        assert row["value"] <= stored["ref_Q_value"][list(stored["seeds"]).index(seed)].min()
        assert row["excess_risk"] > 0 and row["source"]


def test_headline_comparison_gaps_start_positive_and_shrink():
    out = ablations.headline_comparison(0, iterations=30)
    for name in ("population", "closed_form"):
        gap = out[f"gap_{name}"]
        assert gap.shape == (31,) and gap[0] > 0 and gap[-1] < gap[0]
        assert 0 < float(out[f"s_d_{name}"]) and 0 < float(out[f"step_{name}"])
    with pytest.raises(ValueError, match="iterations"):
        ablations.headline_comparison(0, iterations=0)


def test_start_claims_grid_grows_with_the_init_scale():
    grid = ablations.start_claims_grid((0.3, 3.0), (0.1,), seeds=(0,))
    assert grid["start"].shape == (1, 1) and grid["log10_ratio"].shape == (2, 1)
    assert grid["log10_ratio"][1, 0] > grid["log10_ratio"][0, 0]
    assert grid["log10_ratio"][0, 0] == pytest.approx(np.log10(
        (ablations.start_excess_risks(0, noise_std=0.1)["random"] + 0.1)
        / (ablations.start_excess_risks(0, noise_std=0.1)["spectral"] + 0.1)))
    with pytest.raises(ValueError, match="noise_levels"):
        ablations.start_claims_grid((0.3,), (0.0,))


def test_spectral_start_distances_are_p_distances_to_s():
    from attnlib import geometry, population
    out = ablations.spectral_start_distances((0,))
    problem, (x, y), _ = ablations.defaults_data(0)
    manifold = geometry.minimizer_manifold(problem.Sigma, problem.M)
    start = algorithm.spectral_init(*population.empirical_moments(x, y))
    assert out["distance"][0] == pytest.approx(manifold.distance(*start))
    assert out["radius"][0] == pytest.approx(np.sqrt(2 * manifold.singular_values[-1]))
    with pytest.raises(ValueError, match="seeds"):
        ablations.spectral_start_distances(())


def test_the_regularizer_and_the_gradient_of_q_vanish_on_s():
    kept = ablations.regularizer_on_manifold(0, rotations=2)
    assert max(kept.values()) < 1e-12


def test_dimension_rates_match_the_prediction_for_small_d():
    from attnbook.experiments import scaling
    out = scaling.dimension_rates((3, 4), iterations=1500)
    assert np.allclose(out["mu_predicted"], out["mu_predicted"][0])     # d-independent
    assert np.all(np.abs(out["mu_measured"] - out["mu_predicted"]) < 5e-3)
    with pytest.raises(ValueError, match="dims"):
        scaling.dimension_rates((1,))


def test_a_new_baseline_is_measured_against_the_objective_it_trains():
    """The reference objective comes from the method itself (issue 28): a new lam = 1 baseline
    needs no list to be edited, and one without a stored reference is refused."""
    from dataclasses import replace

    heavy_ball = replace(algorithm.METHODS["algorithm1"], update=algorithm.Momentum(decay=0.5))
    assert part1.reference_tag(heavy_ball) == "Q"
    assert part1.reference_tag(replace(algorithm.METHODS["gd"], update=algorithm.Adam())) == "L"
    with pytest.raises(ValueError, match="lam = 0.5 with the 'balancing' regularizer"):
        part1.reference_tag(replace(heavy_ball, lam=0.5))
    with pytest.raises(ValueError, match="'normalized' regularizer"):
        part1.reference_tag(replace(heavy_ball, regularizer="normalized"))
    assert part1.LAM1_METHODS == tuple(
        name for name, m in algorithm.METHODS.items() if m.lam == 1.0)
