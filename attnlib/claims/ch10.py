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
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .. import verdicts
from .._validation import as_matrix

__all__ = ["CLAIMS", "LOG_MAX", "POWER_MIN", "MIN_RANGE", "MIN_POINTS", "growth_exponent",
           "fixed_temperature", "annealed"]

CLAIMS = {
    "p2-log-time": "Theorem 3.3: time to reach f* + eps grows like log(1/eps)",
}

LOG_MAX = 0.25      # [choice] p_hat at most this: logarithmic
POWER_MIN = 0.5     # [choice] p_hat above this: a power law at least like eps^(-1/2)
MIN_RANGE = 3.0     # [choice] eps must span at least this factor
MIN_POINTS = 4      # [choice] and at least this many reached eps
_EXPONENTS = np.round(np.arange(0.0, 2.0 + 1e-9, 0.01), 2)


def _box_cox(eps: np.ndarray, p: float) -> np.ndarray:
    return np.log(1.0 / eps) if p == 0 else (eps ** (-p) - 1.0) / p


def growth_exponent(epsilons: Sequence[float], times: Sequence[float]) -> float:
    """The least-squares Box-Cox exponent ``p_hat`` of ``times`` against ``epsilons`` (module
    docstring); NaN entries (``eps`` not reached) are dropped. Returns NaN when fewer than
    :data:`MIN_POINTS` finite pairs remain or they span less than :data:`MIN_RANGE`."""
    eps = as_matrix("epsilons", epsilons, ndim=1, finite=False)
    t = as_matrix("times", times, shape=eps.shape, ndim=1, finite=False)
    if np.any(eps[np.isfinite(eps)] <= 0):
        raise ValueError("epsilons must be positive")
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
    verdict and its two parts."""
    parts = [_exponent_verdict("time for the mean loss, fixed s", mean_loss,
                               "Box-Cox exponent p_hat of t_eps,"),
             _exponent_verdict("expected hitting time, fixed s", hitting,
                               "Box-Cox exponent p_hat of E[tau_eps],")]
    return verdicts.combine(CLAIMS["p2-log-time"], parts), parts


def annealed(mean_loss: float, hitting: float) -> verdicts.Verdict:
    """[choice] The annealed reading, ``s_eps = 2 eps / D`` lowered with ``eps``: ``p_hat`` of
    the time for the mean loss and of the expected hitting time, each at its own ``s_eps``."""
    return _exponent_verdict(
        "annealed reading (s = 2 eps / D): time grows like log(1/eps)",
        {"mean loss": mean_loss, "expected hitting time": hitting},
        "Box-Cox exponent p_hat,")
