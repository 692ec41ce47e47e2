"""attnbook.claims.ch10: the Box-Cox rule separates log(1/eps) from power laws; the exponential-
approach rule fits within the errors and separates an exponential from a power-law approach,
calibrated on simulated curves of the stored runs' own shapes; thresholds."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook.claims import ch10
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED

EPS = np.geomspace(0.4, 0.02, 8)


@pytest.mark.parametrize("p", [0.0, 0.3, 0.5, 1.0])
def test_growth_exponent_recovers_the_exponent(p):
    h = np.log(1 / EPS) if p == 0 else (EPS ** -p - 1) / p
    assert ch10.growth_exponent(EPS, 2.0 + 3.0 * h) == pytest.approx(p, abs=0.011)


def test_growth_exponent_needs_a_range():
    assert np.isnan(ch10.growth_exponent([0.4, 0.3, 0.2], [1.0, 2.0, 3.0]))       # 3 points
    assert np.isnan(ch10.growth_exponent(np.geomspace(0.4, 0.15, 6), np.arange(6.0)))  # 2.7x
    assert np.isfinite(ch10.growth_exponent(np.geomspace(0.4, 0.13, 6), np.arange(6.0)))
    times = np.log(1 / EPS)
    times[-2:] = np.nan                                     # not reached: dropped
    assert ch10.growth_exponent(EPS, times) == pytest.approx(0.0, abs=0.011)
    with pytest.raises(ValueError, match="epsilons"):
        ch10.growth_exponent([-0.1, 0.2, 0.3, 0.4], [1.0, 2.0, 3.0, 4.0])


def test_readings_on_both_sides_of_the_thresholds():
    combined, parts = ch10.fixed_temperature({"s = 0.02": 0.24}, {"s = 0.01": 0.0})
    assert combined.status == REPRODUCED
    combined, parts = ch10.fixed_temperature({"s = 0.02": 0.26}, {"s = 0.01": 0.0})
    assert parts[0].status == PARTLY and combined.status == PARTLY
    combined, parts = ch10.fixed_temperature({"a": 0.51}, {"b": 0.9})
    assert combined.status == NOT_REPRODUCED
    combined, parts = ch10.fixed_temperature({"a": 0.1, "b": float("nan")}, {"c": float("nan")})
    assert parts[0].status == REPRODUCED and parts[1].status == NOT_TESTABLE
    assert "1 of 2 testable" in parts[0].reason and combined.status == PARTLY
    assert ch10.annealed(0.49, 0.2).status == PARTLY
    assert ch10.annealed(0.2, 0.25).status == REPRODUCED
    assert ch10.annealed(0.6, 0.7).status == NOT_REPRODUCED


def _ar1_noise(size: int, rho: float, sd: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    noise = np.empty(size)
    noise[0] = rng.standard_normal()
    for k in range(1, size):
        noise[k] = rho * noise[k - 1] + np.sqrt(1 - rho**2) * rng.standard_normal()
    return sd * noise


def test_log_time_as_stated_is_not_testable():
    assert ch10.log_time_as_stated().status == NOT_TESTABLE


T = np.linspace(0.0, 100.0, 1001)
#: AR(1) noise with coefficient 0.98 has (1 + rho) / (1 - rho) = 99 records per independent one
TAU_98 = (1 + 0.98) / (1 - 0.98)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_an_exactly_exponential_approach_passes_and_excludes_a_power_law(seed):
    """The null: two exponential rates plus noise correlated along the record (as the chain
    means are) fit within the errors, and the best power law is worse by more than 9 independent
    records' chi^2; one rate too (the power-law alternative keeps its power at most 10)."""
    sem = np.full(T.size, 0.003)
    two = (0.1 + 0.5 * np.exp(-T / 3.0) + 0.2 * np.exp(-T / 30.0)
           + _ar1_noise(T.size, 0.98, 0.003, seed))
    fits = {"two rates": ch10.exponential_approach(T, two, sem, correlation=TAU_98)}
    assert ch10.exponential_verdict(fits).status == REPRODUCED
    assert fits["two rates"].parameters[2] > fits["two rates"].parameters[4]   # fast rate first
    one = 0.1 + 0.7 * np.exp(-T / 10.0) + _ar1_noise(T.size, 0.98, 0.003, seed + 10)
    fit = ch10.exponential_approach(T, one, sem, correlation=TAU_98)
    assert ch10.curve_level(fit) >= 1 and fit.power_parameters[3] == pytest.approx(10.0)
    # without the bound the power law's limit a, t_0 -> infinity is this exponential itself:
    # consistent with both, never excluded
    unbounded = ch10.exponential_approach(T, one, sem, correlation=TAU_98, power_max=np.inf)
    assert abs(unbounded.separation) < 1.0 and ch10.curve_level(unbounded) == 1


def test_a_power_law_approach_is_not_exponential():
    sem = np.full(T.size, 1e-4)
    power = 0.1 + (1.0 + T / 0.01) ** -0.5 + _ar1_noise(T.size, 0.5, 1e-4, 3)
    fit = ch10.exponential_approach(T, power, sem, correlation=3.0)
    assert fit.power_law < 2.0 < fit.exponential and fit.separation < -ch10.SEPARATION_MIN
    verdict = ch10.exponential_verdict({"power": fit})
    assert verdict.status == NOT_REPRODUCED
    assert [part.status for part in verdict.parts] == [NOT_REPRODUCED, NOT_REPRODUCED]


def test_the_verdict_on_both_sides_of_the_thresholds():
    def fit(exponential: float, separation: float) -> ch10.ApproachFit:
        records = 1001
        return ch10.ApproachFit(chi2_one=1e9, chi2_two=exponential * (records - 5),
                                chi2_power=exponential * (records - 5) + 10.0 * separation,
                                records=records, deterministic=1, correlation=10.0,
                                parameters=(0.0,) * 5, power_parameters=(0.0,) * 4)
    assert ch10.exponential_verdict({"a": fit(1.0, 9.0)}).status == REPRODUCED
    both = ch10.exponential_verdict({"a": fit(1.0, 8.9), "b": fit(1.0, 20.0)})
    assert both.status == PARTLY and [p.status for p in both.parts] == [REPRODUCED, PARTLY]
    assert ch10.exponential_verdict({"a": fit(1.0, -8.9)}).status == PARTLY   # consistent with both
    assert ch10.exponential_verdict({"a": fit(1.0, -9.1)}).status == PARTLY   # old rule still passes
    assert ch10.curve_level(fit(1.0, -9.1)) == 0
    assert ch10.exponential_verdict({"a": fit(3.1, -9.1)}).status == NOT_REPRODUCED
    assert ch10.curve_level(fit(3.1, 50.0)) == 0                   # no exponential fit: no credit
    assert ch10.old_rule_verdict({"a": fit(3.0, -50.0)}).status == REPRODUCED
    assert ch10.exponential_verdict({"a": fit(1.0, 5.0)}, separation=4.0).status == REPRODUCED


def test_a_round_off_standard_error_marks_a_deterministic_record():
    """The common start of identical chains has a standard error of 0 or of float64 round-off;
    either way it is deterministic and left out, so it cannot pin the fit (a real standard
    error is kept)."""
    sem = np.full(T.size, 0.003)
    curve = 0.1 + 0.5 * np.exp(-T / 3.0) + 0.2 * np.exp(-T / 30.0) + _ar1_noise(T.size, 0.98,
                                                                               0.003, 5)
    curve[0] = 0.9                                          # a start off the relaxation curve
    fits = {}
    for first in (0.0, 1e-17, 1e-6):
        sem[0] = first
        fits[first] = ch10.exponential_approach(T, curve, sem, correlation=TAU_98)
    assert fits[0.0].deterministic == fits[1e-17].deterministic == 1
    assert fits[0.0].chi2_two == pytest.approx(fits[1e-17].chi2_two, rel=1e-9)
    assert fits[1e-6].deterministic == 0 and fits[1e-6].records == T.size
    at_start = {first: fit.parameters[0] + fit.parameters[1] + fit.parameters[3]
                for first, fit in fits.items()}                  # the two-rate curve at t = 0
    assert at_start[1e-6] == pytest.approx(0.9, abs=1e-5)         # a kept start pins the fit
    assert abs(at_start[0.0] - 0.9) > 0.05 and abs(at_start[1e-17] - 0.9) > 0.05


@pytest.mark.parametrize("rho", [0.0, 0.9])
def test_correlation_records_measures_the_records_per_independent_record(rho):
    """128 AR(1) chains: the tail average's variance over one record's is (1 + rho) / (1 - rho),
    1 for independent records (the null), 19 for rho = 0.9."""
    from attnlib import langevin
    chains = np.column_stack([_ar1_noise(1001, rho, 1.0, seed) for seed in range(128)])
    _, sem = langevin.chain_mean(chains)
    _, tail_sem = langevin.tail_mean(chains, fraction=0.5)
    expected = (1 + rho) / (1 - rho)
    # the tail variance comes from 128 chains: a relative error of about sqrt(2 / 127) = 13%
    assert ch10.correlation_records(sem, tail_sem) == pytest.approx(expected, rel=0.35)
    with pytest.raises(ValueError, match="tail"):
        ch10.correlation_records(np.zeros(1001), tail_sem)


#: [choice] the calibration: this many simulated curves of each kind per stored run
CALIBRATION_SEEDS = range(10)


@pytest.fixture(scope="module")
def calibration():
    """The rule's reading (``ch10.curve_level``) of exponential and power-law curves of the
    stored runs' own fitted shapes, standard errors and correlation (``ch10.calibrate``), and the
    old rule's (chi^2 per record of the better exponential fit at most ``CHI2_MAX``)."""
    from attnbook.chapters.ch10 import relaxation_fits, temperature_runs
    nulls: dict[str, list[ch10.ApproachFit]] = {"exponential": [], "power law": []}
    for fit, times, sem in relaxation_fits(temperature_runs()).values():
        for kind, fits in ch10.calibrate(fit, times, sem, CALIBRATION_SEEDS).items():
            nulls[kind] += fits
    levels = {kind: np.array([ch10.curve_level(f) for f in fits]) for kind, fits in nulls.items()}
    old_rule = {kind: np.array([f.exponential <= ch10.CHI2_MAX for f in fits])
                for kind, fits in nulls.items()}
    return levels, old_rule


def test_the_rule_accepts_exponential_nulls_of_the_runs_shapes(calibration):
    levels, _ = calibration
    assert levels["exponential"].size == 60
    assert np.mean(levels["exponential"] >= 1) >= 0.95        # never called not exponential
    assert np.mean(levels["exponential"] == 2) >= 0.4         # the power law often excluded


def test_the_rule_rejects_power_law_nulls_of_the_runs_shapes(calibration):
    levels, old_rule = calibration
    assert levels["power law"].size == 60
    assert np.mean(levels["power law"] == 2) <= 0.05          # rarely called exponential
    # discriminates: a power law excluded far more often for exponential curves
    assert np.mean(levels["exponential"] == 2) - np.mean(levels["power law"] == 2) >= 0.35


def test_the_old_rule_alone_accepts_the_power_laws_as_readily(calibration):
    """The review's finding: chi^2 per record <= 3 accepts power-law curves of the runs' shapes
    as readily as exponential ones, so it shows consistency, not an exponential approach."""
    _, old_rule = calibration
    assert np.mean(old_rule["exponential"]) >= 0.95 and np.mean(old_rule["power law"]) >= 0.9


def test_null_curve_and_calibrate_refuse_an_unknown_kind():
    fit = ch10.ApproachFit(1.0, 1.0, 1.0, 100, 0, 4.0, (0.1, 0.5, 1.0, 0.2, 0.1),
                           (0.1, 0.7, 1.0, 1.0))
    with pytest.raises(ValueError, match="kind"):
        ch10.null_curve(fit, "stretched", T, np.ones(T.size), np.random.default_rng(0))
    curve, tau = ch10.null_curve(fit, "power law", T, np.full(T.size, 1e-3),
                                 np.random.default_rng(0))
    assert curve.shape == T.shape and 2.0 < tau < 6.0


def test_exponential_approach_refuses_bad_input():
    with pytest.raises(ValueError, match="sem"):
        ch10.exponential_approach(np.arange(10.0), np.ones(10), -np.ones(10), correlation=1.0)
    with pytest.raises(ValueError, match="at least 8"):
        ch10.exponential_approach(np.arange(10.0), np.ones(10), np.zeros(10), correlation=1.0)
    with pytest.raises(ValueError, match="at least 8"):            # round-off is not an error bar
        ch10.exponential_approach(np.arange(10.0), np.ones(10), np.full(10, 1e-17),
                                  correlation=1.0)
    with pytest.raises(ValueError, match="correlation"):
        ch10.exponential_approach(np.arange(10.0), np.ones(10), np.ones(10), correlation=0.0)
    with pytest.raises(ValueError, match="power_max"):
        ch10.exponential_approach(np.arange(10.0), np.ones(10), np.ones(10), correlation=1.0,
                                  power_max=-1.0)
