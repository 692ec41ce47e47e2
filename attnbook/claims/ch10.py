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

and, as the alternative, a power-law approach ``F + c (1 + t / t_0)^{-a}``, each by weighted
least squares with the chains' standard errors; :func:`exponential_verdict` calls the approach
exponential when the better exponential fit has ``chi^2`` per record at most
``CHI2_MAX`` [choice] (a correct model has mean 1; records of the same chains are
correlated over the relaxation time, so its spread is wide).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from .. import verdicts
from attnlib._validation import as_matrix, check_positive_entries

__all__ = ["CLAIMS", "LOG_MAX", "POWER_MIN", "MIN_RANGE", "MIN_POINTS", "CHI2_MAX", "FIRST_RULE",
           "growth_exponent", "fixed_temperature", "annealed", "log_time_as_stated",
           "ApproachFit", "exponential_approach", "exponential_verdict"]

CLAIMS = {
    "p2-log-time": "Theorem 3.3: time to reach f* + eps grows like log(1/eps)",
    "p2-exponential-approach": "at each fixed temperature the chain-mean loss approaches its "
                               "long-time value exponentially (one or two rates)",
    "p2-log-time-annealed": "annealed reading (s = 2 eps / D): time grows like log(1/eps)",
}

LOG_MAX = 0.25      # [choice] p_hat at most this: logarithmic
POWER_MIN = 0.5     # [choice] p_hat above this: a power law at least like eps^(-1/2)
MIN_RANGE = 3.0     # [choice] eps must span at least this factor
MIN_POINTS = 4      # [choice] and at least this many reached eps
CHI2_MAX = 3.0      # [choice] chi^2 per record of an acceptable exponential fit
#: The Box-Cox reading of Theorem 3.3 at fixed s, printed as the first rule only (docstring)
FIRST_RULE = "first rule: at each fixed s, t_eps is logarithmic in 1/eps by its Box-Cox shape"
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
    """Weighted least-squares fits of a relaxation curve: ``chi^2`` per record of the one-rate
    and two-rate exponential and of the power-law approach, and the two-rate parameters
    ``(F, c_1, r_1, c_2, r_2)`` (rates ordered fast to slow)."""

    one_rate: float
    two_rates: float
    power_law: float
    parameters: tuple[float, ...]

    @property
    def exponential(self) -> float:
        """``chi^2`` per record of the better exponential fit."""
        return min(self.one_rate, self.two_rates)


def _one_rate(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    return q[0] + q[1] * np.exp(-q[2] * t)


def _two_rates(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    return q[0] + q[1] * np.exp(-q[2] * t) + q[3] * np.exp(-q[4] * t)


def _power_law(t: np.ndarray, q: np.ndarray) -> np.ndarray:
    return q[0] + q[1] * (1.0 + t / q[2]) ** (-q[3])


def _best_chi2_per_record(model, t: np.ndarray, y: np.ndarray, se: np.ndarray,
                          starts: list[list[float]], lower: list[float]
                          ) -> tuple[float, np.ndarray]:
    """The lowest ``chi^2`` per record over several starts (a nonlinear fit can stall)."""
    best = (np.inf, np.asarray(starts[0]))
    for start in starts:
        fit = optimize.least_squares(lambda q: (model(t, q) - y) / se, start, method="trf",
                                     bounds=(lower, np.inf), max_nfev=20_000)
        best = min(best, (float(2.0 * fit.cost / (t.size - len(start))), fit.x),
                   key=lambda pair: pair[0])
    return best


def exponential_approach(times: object, mean: object, sem: object) -> ApproachFit:
    """Fit ``mean`` (the chain-mean loss at ``times``, standard errors ``sem``) by one and two
    exponential rates and by a power-law approach (module docstring), each from a grid of
    starts (rates ``{1, 3, 10, 30, 100} / T`` with ``T`` the time span; ``t_0`` and the power on
    a grid), keeping the best; records with a zero standard error (the common start) are left
    out. Rates, ``t_0`` and the power are kept positive."""
    t = as_matrix("times", times, ndim=1)
    y = as_matrix("mean", mean, shape=t.shape, ndim=1)
    se = as_matrix("sem", sem, shape=t.shape, ndim=1)
    if np.any(se < 0):
        raise ValueError("sem must be non-negative")
    keep = se > 0
    if keep.sum() < 8:
        raise ValueError(f"sem must be positive in at least 8 records, got {int(keep.sum())}")
    t, y, se = t[keep], y[keep], se[keep]
    level, excess = float(y[-1]), float(y[0] - y[-1])
    span = float(t[-1] - t[0]) or 1.0
    rates = [k / span for k in (1.0, 3.0, 10.0, 30.0, 100.0)]
    free, positive = -np.inf, 1e-9
    one, _ = _best_chi2_per_record(_one_rate, t, y, se, [[level, excess, r] for r in rates],
                                   [free, free, positive])
    two, q = _best_chi2_per_record(
        _two_rates, t, y, se,
        [[level, 0.7 * excess, fast, 0.3 * excess, slow] for fast in rates for slow in rates
         if slow < fast], [free, free, positive, free, positive])
    power, _ = _best_chi2_per_record(
        _power_law, t, y, se,
        [[level, excess, span * f, a] for f in (1e-3, 1e-2, 1e-1) for a in (0.5, 1.0, 2.0)],
        [free, free, positive, positive])
    if q[2] < q[4]:
        q = q[[0, 3, 4, 1, 2]]
    return ApproachFit(one_rate=one, two_rates=two, power_law=power,
                       parameters=tuple(float(v) for v in q))


def exponential_verdict(fits: Mapping[str, ApproachFit], *,
                        chi2_max: float = CHI2_MAX) -> verdicts.Verdict:
    """Reproduced for a curve when its better exponential fit has ``chi^2`` per record at most
    ``chi2_max``, keyed by the curve (model, ``s``)."""
    return verdicts.verdict(CLAIMS["p2-exponential-approach"],
                            [fit.exponential for fit in fits.values()], chi2_max,
                            quantity="chi^2 per record of the better exponential fit",
                            labels=list(fits), fmt=".2f")
