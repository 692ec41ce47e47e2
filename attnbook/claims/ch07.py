"""Chapter 7 (Gibbs measures, Poincare inequalities, Villani): the verdict on the Poincare claim."""

from __future__ import annotations

import math

from .. import verdicts

__all__ = ["CLAIMS", "RATE_TOL", "BOX_TOL", "poincare"]

CLAIMS = {
    "p2-gibbs-poincare": "the Gibbs measure of a Villani loss satisfies a Poincare inequality",
}

RATE_TOL = math.log(1.1)   # [choice] the fitted decay rate matches the spectral gap within 10%
BOX_TOL = 1e-3             # [choice] the 1-D gap changes by at most 1e-3 (relative) with the box


def poincare(rate_1d: float, gap_1d: float, rate_2d: float, gap_2d: float, box_change: float,
             *, rate_tol: float = RATE_TOL, box_tol: float = BOX_TOL
             ) -> tuple[verdicts.Verdict, verdicts.Verdict]:
    """The Poincare claim on the chapter's two example potentials: the fitted total-variation
    decay rates match the spectral gaps ``lambda_1`` (``|log(rate / gap)| <= rate_tol``, 1-D
    and 2-D wells) and the 1-D gap is stable when the box grows (relative change
    ``box_change <= box_tol``, rounded to 1e-9). The theorem's "every Villani loss" is not
    testable by computation. Returns the combined verdict and the examples' verdict."""
    examples = verdicts.verdict(
        "a Poincare inequality with the computed gap, two example potentials",
        [abs(math.log(rate_1d / gap_1d)), abs(math.log(rate_2d / gap_2d)),
         round(abs(box_change), 9)],
        [rate_tol, rate_tol, box_tol], quantity="two example Villani potentials only:",
        labels=["|log(TV decay rate / lambda_1)|, 1-D well",
                "|log(TV decay rate / lambda_1)|, 2-D well",
                "relative change of lambda_1 (to 1e-9), 1-D box [-3, 3] -> [-3.5, 3.5]"])
    combined = verdicts.combine(CLAIMS["p2-gibbs-poincare"], [
        examples, verdicts.not_testable(
            "every Villani loss", "a theorem: a computation checks examples, not the implication")])
    return combined, examples
