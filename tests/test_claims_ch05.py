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
FAST, SGD = "p1-random-start-fast", "p1-sgd-2000"


def test_observation_three_over_all_scales_is_the_choice_row():
    held = np.array([[[0.05, 0.1], [0.05, 0.06]],             # c = 0.3: both rules hold
                     [[0.05, 0.11], [0.09, 0.02]]])           # c = 2: one seed fails (fixed)
    fast = ch05.scale_region(FAST + "-all-scales", held, SCALES, RULES)
    assert fast.status == PARTLY and "c = 2, fixed step = 0.11: fails <= 0.1" in fast.reason
    assert fast.claim == ch05.CLAIMS[FAST + "-all-scales"] and "[choice]" in fast.claim
    assert "c = 0.3 included" in fast.claim
    assert ch05.region(FAST, held, SCALES, RULES) == {"fixed": [0.3], "reevaluated": [0.3, 2.0]}
    # the null: every run converged, so "converges fast" holds everywhere
    null = np.full((2, 2, 3), 0.05)
    assert ch05.scale_region(FAST + "-all-scales", null, SCALES, RULES).status == REPRODUCED
    assert ch05.scale_region(SGD + "-all-scales", null, SCALES, RULES).status == NOT_REPRODUCED
    # SGD "not converged" needs every seed outside the band: the smallest value decides
    stuck = np.full((2, 2, 3), 0.5)
    stuck[1, 1, 2] = 0.1
    sgd = ch05.scale_region(SGD + "-all-scales", stuck, SCALES, RULES)
    assert sgd.status == PARTLY and "c = 2, reevaluated step = 0.1: fails > 0.1" in sgd.reason
    assert ch05.region(SGD + "-all-scales", stuck, SCALES, RULES) == {
        "fixed": [0.3, 2.0], "reevaluated": [0.3]}
    assert ch05.scale_region(SGD + "-all-scales", np.full((2, 2, 3), 0.101), SCALES,
                             RULES).status == REPRODUCED
    with pytest.raises(ValueError, match="shape"):
        ch05.scale_region(SGD + "-all-scales", np.zeros((2, 3)), SCALES, RULES)
    with pytest.raises(ValueError, match="claim_id"):
        ch05.region("p1-algorithm1-2000", null, SCALES, RULES)
    with pytest.raises(ValueError, match="claim_id"):        # the [summary] id is source_start's
        ch05.scale_region(SGD, null, SCALES, RULES)


def test_the_sources_start_is_where_observation_one_holds():
    # spectral start within 10% (independent of c); log10 ratios 0.5 / 2.0 / 2.9 / 3.7 at four c
    scales = (0.3, 2.0, 3.16, 5.0)
    assert ch05.observation1_scales(scales, [0.07, 0.04], [0.5, 2.0, 2.9, 3.7]) == [3.16, 5.0]
    assert ch05.observation1_scales(scales, [0.07, 0.04], [0.5, 2.0, 2.9, 3.7],
                                    threshold=1.9) == [2.0, 3.16, 5.0]
    assert ch05.observation1_scales(scales, [0.07, 0.2], [0.5, 2.0, 2.9, 3.7]) == []
    with pytest.raises(ValueError, match="one value per scale"):
        ch05.observation1_scales(scales, [0.07], [0.5, 2.0])


def test_observation_three_at_the_sources_start_ignores_the_other_scales():
    # a null satisfying "SGD has not converged" at the sources' start (c = 2, both rules) and
    # violating it at c = 0.3: the [summary] row passes, the all-scales [choice] row is partly
    held = np.full((2, 2, 3), 0.5)
    held[0, 0] = [0.08, 0.2, 0.3]
    sgd = ch05.source_start(SGD, held, SCALES, RULES, [2.0])
    assert sgd.status == REPRODUCED and sgd.claim == ch05.CLAIMS[SGD]
    assert "c = 0.3" not in sgd.reason and "c = 2, fixed step = 0.5 > 0.1" in sgd.reason
    assert "observation 1 holds" in sgd.claim
    assert ch05.scale_region(SGD + "-all-scales", held, SCALES, RULES).status == PARTLY
    # violated at the sources' start: one seed converged at c = 2 with one rule, all with both
    held[1, 1, 0] = 0.05
    assert ch05.source_start(SGD, held, SCALES, RULES, [2.0]).status == PARTLY
    assert ch05.source_start(SGD, np.full((2, 2, 3), 0.05), SCALES, RULES,
                             [2.0]).status == NOT_REPRODUCED
    # "converges fast": largest value over the seeds decides, at the start's cells only
    fast = np.full((2, 2, 3), 0.05)
    fast[0] = 0.5                                             # fails at c = 0.3 only
    assert ch05.source_start(FAST, fast, SCALES, RULES, [2.0]).status == REPRODUCED
    fast[1, 0, 1] = 0.11                                      # fails with the fixed step
    verdict = ch05.source_start(FAST, fast, SCALES, RULES, [2.0])
    assert verdict.status == PARTLY and "c = 2, fixed step = 0.11: fails <= 0.1" in verdict.reason
    assert ch05.source_start(FAST, np.full((2, 2, 3), 0.2), SCALES, RULES,
                             [0.3, 2.0]).status == NOT_REPRODUCED
    # observation 1 holding nowhere leaves the sources' start off the axis: not testable
    assert ch05.source_start(SGD, held, SCALES, RULES, []).status == NOT_TESTABLE
    with pytest.raises(ValueError, match="start_scales"):
        ch05.source_start(SGD, held, SCALES, RULES, [1.0])
    with pytest.raises(ValueError, match="claim_id"):
        ch05.source_start(SGD + "-all-scales", held, SCALES, RULES, [2.0])


def test_the_literal_preconditioner_factor_two_and_partial_band():
    # the null of the book's bar: both readings halve the excess risk
    assert ch05.literal_preconditioner({"S^-1 G_B": 0.5, "G_B S^-1": 0.3}).status == REPRODUCED
    # every reading speeds training up, one not by a factor 2: partly (the worst reading decides)
    verdict = ch05.literal_preconditioner({"S^-1 G_B": 0.593, "G_B S^-1": 0.801})
    assert verdict.status == PARTLY
    assert "G_B S^-1 = 0.801: fails <= 0.5, meets partial <= 1" in verdict.reason
    assert ch05.literal_preconditioner({"S^-1 G_B": 0.593, "G_B S^-1": 0.4}).status == PARTLY
    # a reading that does not speed training up at all: not reproduced, also at exactly 1
    for slow in (1.0, 1.3):
        verdict = ch05.literal_preconditioner({"S^-1 G_B": 0.3, "G_B S^-1": slow})
        assert verdict.status == NOT_REPRODUCED and "partial" not in verdict.reason
    assert ch05.literal_preconditioner({"S^-1 G_B": 0.9},
                                       partial=0.8).status == NOT_REPRODUCED
    # a check at another step is never the ledger's row
    other = ch05.literal_preconditioner({"S^-1 G_B": 0.76, "G_B S^-1": 0.9}, step_multiple=2)
    assert other.status == PARTLY and other.claim.endswith("(every run at 2 times its rule's step)")
    assert other.claim != ch05.CLAIMS["p1-algorithm1-preconditioner-literal"]
    with pytest.raises(ValueError, match="ratios"):
        ch05.literal_preconditioner({})


def test_the_literal_preconditioners_earlier_rule_is_printed_beside():
    earlier = ch05.literal_earlier_rule({"S^-1 G_B": 0.593, "G_B S^-1": 0.801})
    assert earlier.status == NOT_REPRODUCED and "earlier rule" in earlier.claim
    assert earlier.claim != ch05.CLAIMS["p1-algorithm1-preconditioner-literal"]
    assert ch05.literal_earlier_rule({"S^-1 G_B": 0.5, "G_B S^-1": 0.3}).status == REPRODUCED
    assert ch05.literal_earlier_rule({"S^-1 G_B": 0.593, "G_B S^-1": 0.4}).status == PARTLY


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
