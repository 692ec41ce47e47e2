"""attnbook.claims.ch05: the two readings of each observation, both sides of every threshold."""

import numpy as np
import pytest

from attnbook.claims import ch05
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED

SEEDS = (0, 1)


def test_observation_one():
    assert ch05.start_loss([0.05, 0.1], SEEDS).status == REPRODUCED
    assert ch05.start_loss([0.11, 0.2], SEEDS).status == NOT_REPRODUCED
    assert ch05.three_orders(2.5).status == REPRODUCED
    assert ch05.three_orders(2.0).status == PARTLY
    assert ch05.three_orders(1.4).status == NOT_REPRODUCED
    assert "c = 0.3" in ch05.three_orders(2.5).claim           # the book's choice of c
    region = ch05.three_orders_by_scale([0.3, 2.0, 5.0], [0.5, 2.1, 3.7])
    assert region.status == PARTLY and "c = 5: " not in region.reason
    assert "c = 0.3 = 0.5: fails >= 2.5" in region.reason


def test_the_seeds_reading_judges_the_loss_and_the_choice_the_gap():
    assert ch05.algorithm1_loss([0.063, 0.1], SEEDS).status == REPRODUCED
    assert ch05.algorithm1_loss([0.063, 0.101], SEEDS).status == PARTLY
    assert ch05.algorithm1_loss([0.11, 0.2], SEEDS).status == NOT_REPRODUCED
    assert "tests that it stays" in ch05.algorithm1_loss([0.05], [0]).claim
    earlier = ch05.earlier_loss_rule("p1-sgd-2000", [0.11, 0.2], SEEDS)
    assert earlier.status == REPRODUCED and "earlier rule" in earlier.claim
    assert earlier.claim != ch05.CLAIMS["p1-sgd-2000"]          # never the ledger's row
    assert ch05.earlier_loss_rule("p1-sgd-2000", [0.07, 0.2], SEEDS).status == PARTLY
    assert ch05.earlier_loss_rule("p1-random-start-fast", [0.1, 0.05], SEEDS).status == REPRODUCED
    assert ch05.converged_gap("p1-algorithm1-2000-gap", [1e-3, 5e-4], SEEDS).status == REPRODUCED
    assert ch05.converged_gap("p1-random-start-fast-gap", [2e-3, 0.5], SEEDS).status == (
        NOT_REPRODUCED)
    assert ch05.converged_gap("p1-sgd-2000-gap", [2e-3, 0.5], SEEDS).status == REPRODUCED
    assert "[choice]" in ch05.converged_gap("p1-sgd-2000-gap", [0.5], [0]).claim
    with pytest.raises(ValueError, match="claim_id"):
        ch05.earlier_loss_rule("p1-algorithm1-2000-gap", [0.1], [0])
    with pytest.raises(ValueError, match="claim_id"):
        ch05.converged_gap("p1-sgd-2000", [0.1], [0])


ITERATIONS = np.arange(0, 2001, 10)


def test_the_loss_reading_needs_the_band_from_iteration_1000_on():
    # a null that satisfies "converged": inside the band from iteration 500 on
    inside = np.where(ITERATIONS >= 500, 0.05, 5.0)
    assert ch05.held_loss(inside, ITERATIONS) == 0.05
    assert ch05.stays_from(inside, ITERATIONS) == 500
    # entering the band at 1500 is too late; the last iterate alone would call it converged
    late = np.where(ITERATIONS >= 1500, 0.05, 0.3)
    assert ch05.held_loss(late, ITERATIONS) == 0.3 and ch05.stays_from(late, ITERATIONS) == 1500
    # inside at 300, drifting out again by 2000: not converged, best iterate inside
    drift = np.where(ITERATIONS >= 300, 0.05 + 7e-5 * (ITERATIONS - 300), 1.0)
    assert ch05.held_loss(drift, ITERATIONS) > 0.1 and ch05.stays_from(drift, ITERATIONS) == (
        np.inf)
    assert ch05.held_loss(np.full(ITERATIONS.size, 0.1), ITERATIONS) == 0.1
    with pytest.raises(ValueError, match="iterations"):
        ch05.held_loss([0.1, 0.2], [0, 10])


SCALES, RULES = (0.3, 2.0), ("fixed", "reevaluated")


def test_observation_three_is_a_region_of_scale_and_step_rule():
    held = np.array([[[0.05, 0.1], [0.05, 0.06]],             # c = 0.3: both rules hold
                     [[0.05, 0.11], [0.09, 0.02]]])           # c = 2: one seed fails (fixed)
    fast = ch05.scale_region("p1-random-start-fast", held, SCALES, RULES)
    assert fast.status == PARTLY and "c = 2, fixed step = 0.11: fails <= 0.1" in fast.reason
    assert ch05.region("p1-random-start-fast", held, SCALES, RULES) == {
        "fixed": [0.3], "reevaluated": [0.3, 2.0]}
    # the null: every run converged, so "converges fast" holds everywhere
    null = np.full((2, 2, 3), 0.05)
    assert ch05.scale_region("p1-random-start-fast", null, SCALES, RULES).status == REPRODUCED
    assert ch05.scale_region("p1-sgd-2000", null, SCALES, RULES).status == NOT_REPRODUCED
    # SGD "not converged" needs every seed outside the band: the smallest value decides
    stuck = np.full((2, 2, 3), 0.5)
    stuck[1, 1, 2] = 0.1
    sgd = ch05.scale_region("p1-sgd-2000", stuck, SCALES, RULES)
    assert sgd.status == PARTLY and "c = 2, reevaluated step = 0.1: fails > 0.1" in sgd.reason
    assert ch05.region("p1-sgd-2000", stuck, SCALES, RULES) == {"fixed": [0.3, 2.0],
                                                                "reevaluated": [0.3]}
    assert ch05.scale_region("p1-sgd-2000", np.full((2, 2, 3), 0.101), SCALES,
                             RULES).status == REPRODUCED
    with pytest.raises(ValueError, match="shape"):
        ch05.scale_region("p1-sgd-2000", np.zeros((2, 3)), SCALES, RULES)
    with pytest.raises(ValueError, match="claim_id"):
        ch05.region("p1-algorithm1-2000", null, SCALES, RULES)


def test_the_literal_preconditioner_uses_chapter_fours_threshold():
    assert ch05.literal_preconditioner({"S^-1 G_B": 0.5, "G_B S^-1": 0.3}).status == REPRODUCED
    assert ch05.literal_preconditioner({"S^-1 G_B": 0.593, "G_B S^-1": 0.4}).status == PARTLY
    verdict = ch05.literal_preconditioner({"S^-1 G_B": 0.593, "G_B S^-1": 0.801})
    assert verdict.status == NOT_REPRODUCED and "S^-1 G_B = 0.593: fails <= 0.5" in verdict.reason


def test_global_optimum_readings():
    seed, basin = ch05.global_optimum([0.5, 1.0], [1e-3, 2e-4], SEEDS)
    assert seed.status == REPRODUCED and basin.status == REPRODUCED
    assert "largest excess risk" in seed.claim and "largest excess risk" in seed.reason
    seed, basin = ch05.global_optimum([1.2, 1.5], [0.04, 0.02], SEEDS)
    assert seed.status == NOT_REPRODUCED and basin.status == NOT_REPRODUCED
    against_basin, against_smallest = ch05.global_optimum_references(
        {"the basin minimizer": [0.9, 1.0], "the smallest": [1.01, 2.0]}, SEEDS)
    assert against_basin.status == REPRODUCED and against_smallest.status == NOT_REPRODUCED
    assert against_basin.claim not in ch05.CLAIMS.values()


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
