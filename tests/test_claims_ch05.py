"""attnlib.claims.ch05: the two readings of each observation, both sides of every threshold."""

import pytest

from attnlib.claims import ch05
from attnlib.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED

SEEDS = (0, 1)


def test_observation_one():
    assert ch05.start_loss([0.05, 0.1], SEEDS).status == REPRODUCED
    assert ch05.start_loss([0.11, 0.2], SEEDS).status == NOT_REPRODUCED
    assert ch05.three_orders(2.5).status == REPRODUCED
    assert ch05.three_orders(2.0).status == PARTLY
    assert ch05.three_orders(1.4).status == NOT_REPRODUCED
    region = ch05.three_orders_by_scale([0.3, 2.0, 5.0], [0.5, 2.1, 3.7])
    assert region.status == PARTLY and "c = 5: " not in region.reason
    assert "c = 0.3 = 0.5: fails >= 2.5" in region.reason


def test_the_seeds_reading_judges_the_loss_and_the_choice_the_gap():
    assert ch05.converged_loss("p1-algorithm1-2000", [0.063, 0.1], SEEDS).status == REPRODUCED
    assert ch05.converged_loss("p1-algorithm1-2000", [0.11, 0.2], SEEDS).status == NOT_REPRODUCED
    assert ch05.converged_loss("p1-sgd-2000", [0.11, 0.2], SEEDS).status == REPRODUCED
    assert ch05.converged_loss("p1-sgd-2000", [0.07, 0.2], SEEDS).status == PARTLY
    assert ch05.converged_gap("p1-algorithm1-2000-gap", [1e-3, 5e-4], SEEDS).status == REPRODUCED
    assert ch05.converged_gap("p1-random-start-fast-gap", [2e-3, 0.5], SEEDS).status == (
        NOT_REPRODUCED)
    assert ch05.converged_gap("p1-sgd-2000-gap", [2e-3, 0.5], SEEDS).status == REPRODUCED
    assert "[choice]" in ch05.converged_gap("p1-sgd-2000-gap", [0.5], [0]).claim
    with pytest.raises(ValueError, match="claim_id"):
        ch05.converged_loss("p1-algorithm1-2000-gap", [0.1], [0])
    with pytest.raises(ValueError, match="claim_id"):
        ch05.converged_gap("p1-sgd-2000", [0.1], [0])


def test_global_optimum_readings():
    seed, basin = ch05.global_optimum([0.5, 1.0], [1e-3, 2e-4], SEEDS)
    assert seed.status == REPRODUCED and basin.status == REPRODUCED
    seed, basin = ch05.global_optimum([1.2, 1.5], [0.04, 0.02], SEEDS)
    assert seed.status == NOT_REPRODUCED and basin.status == NOT_REPRODUCED


def test_power_law_needs_a_margin_and_prints_the_earlier_rule():
    verdict, earlier = ch05.power_law([3.5, 1.4], SEEDS)
    assert verdict.status == PARTLY and earlier.status == REPRODUCED
    verdict, _ = ch05.power_law([2.1, 3.0], SEEDS)
    assert verdict.status == REPRODUCED
    verdict, earlier = ch05.power_law([0.9, 1.0], SEEDS)
    assert verdict.status == NOT_REPRODUCED and earlier.status == NOT_REPRODUCED


def test_preconditioner_kappa_threshold():
    assert ch05.preconditioner_kappa(2.0).status == REPRODUCED
    assert ch05.preconditioner_kappa(2.1).status == NOT_REPRODUCED


def test_map_claims_thresholds():
    values = dict(start=0.1, orders=1.5, alg1=1e-3, sgd=2e-3)
    claims = ch05.map_claims(values, 2000)
    assert [claims[k].status for k in ("start", "orders", "alg1", "sgd")] == [
        REPRODUCED, PARTLY, REPRODUCED, REPRODUCED]
    claims = ch05.map_claims(dict(start=0.2, orders=1.4, alg1=2e-3, sgd=1e-3), 2000)
    assert [claims[k].status for k in ("start", "orders", "alg1", "sgd")] == [
        NOT_REPRODUCED, NOT_REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE]


def test_observation1_region_on_both_sides_of_each_threshold():
    cells = {"near": ([0.05, 0.099], 2.5), "partly": ([0.05], 2.49), "far start": ([0.05, 0.101], 3.7),
             "low ratio": ([0.01], 1.49)}
    assert ch05.observation1_region(cells) == {"both": ["near"], "partly": ["partly"]}
    assert ch05.observation1_region({"a": (0.2, 3.0)}, tolerance=0.25) == {"both": ["a"],
                                                                          "partly": []}
    assert ch05.observation1_region(cells, threshold=2.0)["both"] == ["near", "partly"]
    assert ch05.observation1_region(cells, partial=1.4)["partly"] == ["partly", "low ratio"]
