"""Chapter 10 (Langevin dynamics): readings of Theorem 3.3, "time O(log(1/eps))".

The rule, fixed before the runs it judges were looked at [choice]: over a range of ``eps``, fit
the times ``t_eps`` with the Box-Cox family

    t = a + b h_p(eps),    h_p(eps) = (eps^(-p) - 1) / p,    h_0(eps) = log(1/eps),

which is ``a + b log(1/eps)`` at ``p = 0`` and a power law ``a + c eps^(-p)`` for ``p > 0``;
``p`` is chosen on a grid of ``[0, 2]`` (step 0.01) by least squares, ``a`` and ``b`` by linear
least squares for each ``p``. A logarithmic time has ``p_hat`` near 0: the reading is
reproduced when ``p_hat <= 0.25``, partly when ``p_hat <= 0.5`` (the growth ``eps^(-1/2)``
that the first rule fixed, a ratio of halving increments <= 2, still accepted), not reproduced
above. A range of ``eps`` narrower than a factor :data:`MIN_RANGE` (or fewer than
:data:`MIN_POINTS` times) cannot tell the two apart and is reported as not testable.

That rule judges the shape of ``t_eps`` over at most one decade of ``eps``; it rejects curves
that converge exactly exponentially (``offset + (E0 - offset) e^{-t}`` gives ``p_hat`` up to
0.42 on the chapter's grids), so it is printed as the first rule only. Theorem 3.3 as the
summary states it, "time ``O(log(1/eps))``" with constants that depend on ``s`` and are not
given, is a bound no finite range of ``eps`` can confirm or refute: :func:`log_time_as_stated`
says so. Its measurable consequence at a fixed ``s`` is that the chain-mean loss approaches its
long-time value exponentially; :func:`exponential_approach` fits::

    one rate:  E(t) = F + c e^{-r t},      two rates:  E(t) = F + c_1 e^{-r_1 t} + c_2 e^{-r_2 t},

and, as the alternative, a power-law approach ``F + c (1 + t / t_0)^{-a}`` with ``a`` at most
``POWER_MAX`` [choice] (the family's limit ``a, t_0 -> infinity`` at fixed ``a / t_0`` is the
one-rate exponential; the bound keeps the alternative algebraic over the records), each by
weighted least squares with the chains' standard errors. A record whose standard error is at
most ``SE_ROUNDOFF`` times the curve's largest value is deterministic (the common start of
all chains: identical values whose standard deviation is float64 round-off, or exactly 0) and is
left out of every fit; weighting it by its round-off standard error would pin the fit to it.

:func:`exponential_verdict` judges each curve (model, ``s``) by two measurements:

* **the old rule** [choice]: the better exponential fit has ``chi^2`` per record at most
  ``CHI2_MAX`` (a correct model has mean 1; records of the same chains are correlated, so
  its spread is wide). It accepts every exponential curve but also power-law curves that two
  rates mimic within the errors, so it shows consistency, not that the approach is exponential;
* **a power law excluded** [choice]: the chi^2 difference of the best power law and the better
  exponential fit, in units of independent records, ``(chi^2_pow - chi^2_exp) / tau``, where
  ``tau`` (:func:`correlation_records`) is how many records of the chain mean carry the
  information of one independent record: the variance of the tail average over the variance of
  one record, both measured from the independent chains. A power law is excluded when the
  separation is at least ``SEPARATION_MIN`` (9, "three standard errors" for one parameter);
  the exponential is excluded when it is at most ``-SEPARATION_MIN``; in between the curve is
  consistent with both.

The two combine (:func:`attnbook.verdicts.combine`): reproduced when every curve passes both;
partly when the exponential fits but a power law is not excluded everywhere. The separation rule
replaced the old rule after a review had shown that the old rule accepts power-law curves and had
reported where the runs exclude a power law; its limit and its ``tau`` were fixed by a calibration
on simulated curves, not by the runs' separations (``tests/test_claims_ch10.py``,
:func:`calibrate`): exponential and power-law curves of the runs' own fitted shapes, their
standard errors, and noise correlated along the record as an AR(1) series with the runs' ``tau``
(that noise model matches the variance of averages over many records, which is what a smooth
difference between two fits sees; it is the calibration's assumption). The report page prints
both rules' outcomes and varies the limits.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from dataclasses import dataclass

import numpy as np
from scipy import optimize, signal

from .. import verdicts
from attnlib._validation import as_matrix, check_positive, check_positive_entries

__all__ = ["CLAIMS", "LOG_MAX", "POWER_MIN", "MIN_RANGE", "MIN_POINTS", "CHI2_MAX",
           "SEPARATION_MIN", "POWER_MAX", "SE_ROUNDOFF", "FIRST_RULE", "OLD_RULE",
           "POWER_LAW_EXCLUDED", "growth_exponent", "fixed_temperature", "annealed",
           "log_time_as_stated", "ApproachFit", "correlation_records", "exponential_approach",
           "old_rule_verdict", "power_law_excluded", "exponential_verdict", "curve_level",
           "null_curve", "calibrate"]

CLAIMS = {
    "p2-log-time": "Theorem 3.3: time to reach f* + eps grows like log(1/eps)",
    "p2-exponential-approach": "at each fixed temperature the chain-mean loss approaches its "
                               "long-time value exponentially (one or two rates), and a "
                               "power-law approach is excluded",
    "p2-log-time-annealed": "annealed reading (s = 2 eps / D): time grows like log(1/eps)",
}

LOG_MAX = 0.25      # [choice] p_hat at most this: logarithmic
POWER_MIN = 0.5     # [choice] p_hat above this: a power law at least like eps^(-1/2)
MIN_RANGE = 3.0     # [choice] eps must span at least this factor
MIN_POINTS = 4      # [choice] and at least this many reached eps
CHI2_MAX = 3.0      # [choice] chi^2 per record of an acceptable exponential fit (old rule)
SEPARATION_MIN = 9.0  # [choice] (chi^2_pow - chi^2_exp) / tau at least this: power law excluded
POWER_MAX = 10.0    # [choice] largest power a of the power-law alternative
SE_ROUNDOFF = 1e-12  # a standard error at most this times the curve's scale is round-off
#: The Box-Cox reading of Theorem 3.3 at fixed s, printed as the first rule only (docstring)
FIRST_RULE = "first rule: at each fixed s, t_eps is logarithmic in 1/eps by its Box-Cox shape"
#: The two measurements :func:`exponential_verdict` combines (module docstring)
OLD_RULE = "old rule: the better exponential fit is within the errors"
POWER_LAW_EXCLUDED = "a power-law approach is excluded"
_EXPONENTS = np.round(np.arange(0.0, 2.0 + 1e-9, 0.01), 2)


def _box_cox(eps: np.ndarray, p: float) -> np.ndarray:
    return np.log(1.0 / eps) if p == 0 else (eps ** (-p) - 1.0) / p


def growth_exponent(epsilons: Sequence[float], times: Sequence[float]) -> float:
    """The least-squares Box-Cox exponent ``p_hat`` of ``times`` against ``epsilons`` (module
    docstring); NaN entries (``eps`` not reached) are dropped. Returns NaN when fewer than
    :data:`MIN_POINTS` finite pairs remain or they span less than :data:`MIN_RANGE`."""
    eps = as_matrix("epsilons", epsilons, ndim=1, finite=False)
    t = as_matrix("times", times, shape=eps.shape, ndim=1, finite=False)
    check_positive_entries("epsilons", eps[np.isfinite(eps)])
    keep = np.isfinite(eps) & np.isfinite(t)
    eps, t = eps[keep], t[keep]
    if eps.size < MIN_POINTS or eps.max() / eps.min() < MIN_RANGE:
        return float("nan")
    best, best_rss = float("nan"), np.inf
    for p in _EXPONENTS:
        design = np.column_stack([np.ones_like(eps), _box_cox(eps, float(p))])
        coef, *_ = np.linalg.lstsq(design, t, rcond=None)
        rss = float(np.sum((design @ coef - t) ** 2))
        if rss < best_rss:
            best, best_rss = float(p), rss
    return best


def _exponent_verdict(claim: str, exponents: Mapping[str, float], quantity: str) -> verdicts.Verdict:
    """``p_hat`` against the rule for every label with a long enough range (the others are
    counted in the quantity; none: not testable)."""
    testable = {k: v for k, v in exponents.items() if np.isfinite(v)}
    if not testable:
        return verdicts.not_testable(claim, f"eps range shorter than a factor {MIN_RANGE:g} or "
                                            f"fewer than {MIN_POINTS} times for every label")
    return verdicts.verdict(claim, list(testable.values()), LOG_MAX, partial=POWER_MIN,
                            quantity=f"{quantity} {len(testable)} of {len(exponents)} testable,",
                            labels=list(testable), fmt=".2f")


def fixed_temperature(mean_loss: Mapping[str, float], hitting: Mapping[str, float]
                      ) -> tuple[verdicts.Verdict, list[verdicts.Verdict]]:
    """Theorem 3.3 read as the summary states it, at each fixed temperature ``s`` for ``eps``
    above that ``s``'s Gibbs offset: ``mean_loss`` maps a label (model, ``s``) to ``p_hat`` of
    the time the chain-mean loss first stays within ``f* + eps``; ``hitting`` to ``p_hat`` of
    the expected hitting time (mean over chains of each chain's first passage below
    ``f* + eps``). NaN marks a label whose ``eps`` range is too short. Returns the combined
    verdict (:data:`FIRST_RULE`; it rejects exact exponentials, so it is not the ledger's
    verdict on Theorem 3.3) and its two parts."""
    parts = [_exponent_verdict("time for the mean loss, fixed s", mean_loss,
                               "Box-Cox exponent p_hat of t_eps,"),
             _exponent_verdict("expected hitting time, fixed s", hitting,
                               "Box-Cox exponent p_hat of E[tau_eps],")]
    return verdicts.combine(FIRST_RULE, parts), parts


def annealed(mean_loss: float, hitting: float) -> verdicts.Verdict:
    """[choice] The annealed reading, ``s_eps = 2 eps / D`` lowered with ``eps``: ``p_hat`` of
    the time for the mean loss and of the expected hitting time, each at its own ``s_eps``."""
    return _exponent_verdict(
        CLAIMS["p2-log-time-annealed"],
        {"mean loss": mean_loss, "expected hitting time": hitting},
        "Box-Cox exponent p_hat,")


def log_time_as_stated() -> verdicts.Verdict:
    """Theorem 3.3 as the summary states it: a bound ``O(log(1/eps))`` whose constants depend on
    ``s`` and are not given cannot be confirmed or refuted by times over a finite ``eps`` range."""
    return verdicts.not_testable(
        CLAIMS["p2-log-time"],
        "an O(log(1/eps)) bound with unstated, s-dependent constants: no finite eps range can "
        "confirm or refute it; its measurable consequence is judged as p2-exponential-approach")


@dataclass(frozen=True)
class ApproachFit:
    """Weighted least-squares fits of a relaxation curve (module docstring): the total ``chi^2``
    of the one-rate and two-rate exponential and of the power-law approach over the ``records``
    fitted (``deterministic`` records left out), the curve's correlation ``tau`` in records
    (:func:`correlation_records`), the two-rate parameters ``(F, c_1, r_1, c_2, r_2)`` (rates
    ordered fast to slow) and the power-law parameters ``(F, c, t_0, a)``."""

    chi2_one: float
    chi2_two: float
    chi2_power: float
    records: int
    deterministic: int
    correlation: float
    parameters: tuple[float, ...]
    power_parameters: tuple[float, ...]

    @property
    def one_rate(self) -> float:
        """``chi^2`` per record (per degree of freedom) of the one-rate fit."""
        return self.chi2_one / (self.records - 3)

    @property
    def two_rates(self) -> float:
        """``chi^2`` per record of the two-rate fit."""
        return self.chi2_two / (self.records - 5)

    @property
    def power_law(self) -> float:
        """``chi^2`` per record of the power-law fit."""
        return self.chi2_power / (self.records - 4)

    @property
    def exponential(self) -> float:
        """``chi^2`` per record of the better exponential fit (the old rule's measurement)."""
        return min(self.one_rate, self.two_rates)

    @property
    def separation(self) -> float:
        """``(chi^2_pow - chi^2_exp) / tau``: the power law's excess ``chi^2`` over the better
        exponential fit in units of independent records; positive favours the exponential."""
        return (self.chi2_power - min(self.chi2_one, self.chi2_two)) / self.correlation


def _one_rate(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    return q[0] + q[1] * np.exp(-q[2] * t)


def _two_rates(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    return q[0] + q[1] * np.exp(-q[2] * t) + q[3] * np.exp(-q[4] * t)


def _power_law(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    return q[0] + q[1] * (1.0 + t / q[2]) ** (-q[3])


def _best_chi2(model, t: np.ndarray, y: np.ndarray, se: np.ndarray, starts: list[list[float]],
               lower: list[float], upper: list[float] | None = None) -> tuple[float, np.ndarray]:
    """The lowest total ``chi^2`` over several starts (a nonlinear fit can stall)."""
    upper = [np.inf] * len(lower) if upper is None else upper
    best = (np.inf, np.asarray(starts[0], dtype=float))
    for start in starts:
        fit = optimize.least_squares(lambda q: (model(t, q) - y) / se, start, method="trf",
                                     bounds=(lower, upper), max_nfev=20_000)
        best = min(best, (float(2.0 * fit.cost), fit.x), key=lambda pair: pair[0])
    return best


def _deterministic(mean: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Records whose standard error is at most ``SE_ROUNDOFF`` of the curve's scale."""
    return se <= SE_ROUNDOFF * float(np.max(np.abs(mean)))


def correlation_records(sem: object, tail_sem: float, *, fraction: float = 0.5) -> float:
    """How many records of a chain-mean curve carry the information of one independent record:
    ``tau = R_tail tail_sem^2 / mean(sem^2 over the tail)``, the variance of the average over the
    last ``fraction`` of the ``R`` records (``tail_sem``, from the chains' own tail averages, as
    :func:`attnlib.langevin.tail_mean` computes it) over the variance of one record of that
    average. For independent records it is 1; for an AR(1) series with coefficient ``rho`` over
    a long tail, ``(1 + rho) / (1 - rho)``."""
    se = as_matrix("sem", sem, ndim=1)
    tail_sem = check_positive("tail_sem", tail_sem)
    start = min(int(np.floor((1 - fraction) * se.size)), se.size - 1)
    tail = se[start:]
    if np.any(tail <= 0):
        raise ValueError("sem must be positive over the tail")
    return float(tail.size * tail_sem**2 / np.mean(tail**2))


def exponential_approach(times: object, mean: object, sem: object, *, correlation: float,
                         power_max: float | None = None) -> ApproachFit:
    """Fit ``mean`` (the chain-mean loss at ``times``, standard errors ``sem``, ``correlation``
    records per independent record) by one and two exponential rates and by a power-law
    approach with power at most ``power_max`` (default ``POWER_MAX``; module docstring), each
    from a grid of starts (rates ``{1, 3, 10, 30, 100} / T`` with ``T`` the time span; ``t_0`` and
    the power on a grid), keeping the best; deterministic records (standard error at most
    ``SE_ROUNDOFF`` of the curve's scale: the common start) are left out. Rates, ``t_0``
    and the power are kept positive."""
    t = as_matrix("times", times, ndim=1)
    y = as_matrix("mean", mean, shape=t.shape, ndim=1)
    se = as_matrix("sem", sem, shape=t.shape, ndim=1)
    correlation = check_positive("correlation", correlation)
    power_max = POWER_MAX if power_max is None else float(power_max)
    if not power_max > 0:                               # infinity allowed: no bound
        raise ValueError(f"power_max must be > 0 (or infinity), got {power_max!r}")
    if np.any(se < 0):
        raise ValueError("sem must be non-negative")
    fixed = _deterministic(y, se)
    if (~fixed).sum() < 8:
        raise ValueError(f"sem must be above round-off (SE_ROUNDOFF = {SE_ROUNDOFF:g} of the "
                         f"curve's scale) in at least 8 records, got {int((~fixed).sum())}")
    t, y, se = t[~fixed], y[~fixed], se[~fixed]
    level, excess = float(y[-1]), float(y[0] - y[-1])
    span = float(t[-1] - t[0]) or 1.0
    rates = [k / span for k in (1.0, 3.0, 10.0, 30.0, 100.0)]
    free, positive = -np.inf, 1e-9
    one, _ = _best_chi2(_one_rate, t, y, se, [[level, excess, r] for r in rates],
                        [free, free, positive])
    two, q = _best_chi2(
        _two_rates, t, y, se,
        [[level, 0.7 * excess, fast, 0.3 * excess, slow] for fast in rates for slow in rates
         if slow < fast], [free, free, positive, free, positive])
    power, p = _best_chi2(
        _power_law, t, y, se,
        [[level, excess, span * f, min(a, power_max)] for f in (1e-3, 1e-2, 1e-1)
         for a in (0.5, 1.0, 2.0)],
        [free, free, positive, positive], [np.inf, np.inf, np.inf, power_max])
    if q[2] < q[4]:
        q = q[[0, 3, 4, 1, 2]]
    return ApproachFit(chi2_one=one, chi2_two=two, chi2_power=power, records=int(t.size),
                       deterministic=int(fixed.sum()), correlation=correlation,
                       parameters=tuple(float(v) for v in q),
                       power_parameters=tuple(float(v) for v in p))


def old_rule_verdict(fits: Mapping[str, ApproachFit], *,
                     chi2_max: float = CHI2_MAX) -> verdicts.Verdict:
    """The old rule, kept beside the new one: reproduced for a curve when its better exponential
    fit has ``chi^2`` per record at most ``chi2_max`` (consistency with an exponential approach;
    it does not exclude a power law)."""
    return verdicts.verdict(OLD_RULE, [fit.exponential for fit in fits.values()], chi2_max,
                            quantity="chi^2 per record of the better exponential fit",
                            labels=list(fits), fmt=".2f")


def power_law_excluded(fits: Mapping[str, ApproachFit], *,
                       separation: float = SEPARATION_MIN) -> verdicts.Verdict:
    """Per curve: a power law excluded (full credit) when ``(chi^2_pow - chi^2_exp) / tau`` is at
    least ``separation``; consistent with both (half credit) down to ``-separation``; the
    exponential excluded below."""
    return verdicts.verdict(POWER_LAW_EXCLUDED, [fit.separation for fit in fits.values()],
                            separation, direction=">=", partial=-separation,
                            quantity="(chi^2 power law - chi^2 exponential) / tau",
                            labels=list(fits), fmt=".1f")


def exponential_verdict(fits: Mapping[str, ApproachFit], *, chi2_max: float = CHI2_MAX,
                        separation: float = SEPARATION_MIN) -> verdicts.Verdict:
    """The claim's verdict: :func:`old_rule_verdict` (the exponential fits within the errors)
    and :func:`power_law_excluded` combined; reproduced only when both are, for every curve."""
    return verdicts.combine(CLAIMS["p2-exponential-approach"],
                            [old_rule_verdict(fits, chi2_max=chi2_max),
                             power_law_excluded(fits, separation=separation)])


def curve_level(fit: ApproachFit, *, chi2_max: float = CHI2_MAX,
                separation: float = SEPARATION_MIN) -> int:
    """One curve's credit under :func:`exponential_verdict`: 2 (the exponential fits and a power
    law is excluded), 1 (the exponential fits, consistent with both), 0 (it does not fit, or a
    power law fits better by ``separation``)."""
    if fit.exponential > chi2_max:
        return 0
    return 2 if fit.separation >= separation else 1 if fit.separation >= -separation else 0


def null_curve(fit: ApproachFit, kind: str, times: object, sem: object,
               rng: np.random.Generator, *, chains: int = 128) -> tuple[np.ndarray, float]:
    """A simulated chain-mean curve for the calibration: ``kind`` ``"exponential"`` (the fit's
    two-rate curve) or ``"power law"`` (its power-law curve) at ``times``, plus ``sem`` times an
    AR(1) series of unit variance with coefficient ``(tau - 1) / (tau + 1)`` (``tau`` the fit's
    correlation); deterministic records get no noise. Returns the curve and the ``tau`` a run of
    ``chains`` chains would measure (``tau`` times a chi-square of ``chains - 1`` degrees of
    freedom over ``chains - 1``: the sampling error of ``tail_sem^2``)."""
    t = as_matrix("times", times, ndim=1)
    se = as_matrix("sem", sem, shape=t.shape, ndim=1)
    if kind == "exponential":
        curve = _two_rates(t, np.asarray(fit.parameters))
    elif kind == "power law":
        curve = _power_law(t, np.asarray(fit.power_parameters))
    else:
        raise ValueError(f"kind must be 'exponential' or 'power law', got {kind!r}")
    rho = (fit.correlation - 1.0) / (fit.correlation + 1.0)
    scale = np.sqrt(1.0 - rho**2)
    kicks = rng.standard_normal(t.size)
    kicks[0] /= scale                                   # start the series in its stationary law
    noise = signal.lfilter([scale], [1.0, -rho], kicks)
    noise[_deterministic(curve, se)] = 0.0
    measured = fit.correlation * rng.chisquare(chains - 1) / (chains - 1)
    return curve + se * noise, float(measured)


def calibrate(fit: ApproachFit, times: object, sem: object, seeds: Sequence[int], *,
              chains: int = 128) -> dict[str, list[ApproachFit]]:
    """The fits of simulated curves of ``fit``'s own shapes and noise (:func:`null_curve`, one
    ``numpy.random.default_rng(seed)`` per seed and kind, the power-law seeds offset by
    1,000,003), by kind (``"exponential"``, ``"power law"``): :func:`curve_level` of each is the
    rule's reading, ``exponential <= CHI2_MAX`` the old rule's."""
    found: dict[str, list[ApproachFit]] = {"exponential": [], "power law": []}
    for kind, offset in (("exponential", 0), ("power law", 1_000_003)):
        for seed in seeds:
            curve, tau = null_curve(fit, kind, times, sem, np.random.default_rng(seed + offset),
                                    chains=chains)
            found[kind].append(exponential_approach(times, curve, sem, correlation=tau))
    return found
