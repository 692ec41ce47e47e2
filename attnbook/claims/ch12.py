"""Chapter 12 (both papers on one problem): verdicts on Theorem 3.3 there and the
preconditioner [choice] question."""

from __future__ import annotations

from typing import Mapping, Sequence

from .. import verdicts

__all__ = ["CLAIMS", "SPEEDUP_CLAIM", "SPEEDUP_MIN", "GAP_PARTIAL", "preconditioner_speedup",
           "theorem_33_on_part1"]

CLAIMS = {
    "p2-theorem-3-3-part1-problem":
        "Theorem 3.3 on Part I's problem: Langevin with a mild regularizer comes within eps of "
        "the minimum",
}
#: [choice] this book's question, not a claim of either source (so not in the ledger)
SPEEDUP_CLAIM = "the preconditioner speeds up Langevin training (kappa = 1 to 1000)"
SPEEDUP_MIN = 2.0   # [choice] reproduced: at least twice as fast at every kappa (partly: not slower)
GAP_PARTIAL = 10.0  # [choice] partly: the final gap within 10 eps


def preconditioner_speedup(speedups: Sequence[float], kappas: Sequence[float], *,
                           minimum: float = SPEEDUP_MIN) -> verdicts.Verdict:
    """Speed-up (plain chains' time to target / preconditioned chains') at least ``minimum``
    at every condition number (partly: at least 1)."""
    return verdicts.verdict(SPEEDUP_CLAIM, list(speedups), minimum, direction=">=", partial=1.0,
                            quantity="speed-up", labels=[f"kappa={k:g}" for k in kappas])


def theorem_33_on_part1(final_gap_over_eps: Mapping[str, float],
                        offset_over_eps: Mapping[str, float], *, partial: float = GAP_PARTIAL
                        ) -> tuple[verdicts.Verdict, list[verdicts.Verdict]]:
    """Each method's final chain-mean gap over ``eps`` at most 1 (partly: at most ``partial``);
    the quantity names the method's Gibbs offset ``s D / 4`` at its final temperature over
    ``eps`` (``offset_over_eps``): above 1 the temperature alone keeps the expected gap above
    ``eps``. Returns the combined verdict and one part per method."""
    parts = [verdicts.verdict(
        f"{name}: final gap <= eps", ratio, 1.0, partial=partial,
        quantity=f"final gap / eps (Gibbs offset at its final s: {offset_over_eps[name]:.3g} eps)")
        for name, ratio in final_gap_over_eps.items()]
    return verdicts.combine(CLAIMS["p2-theorem-3-3-part1-problem"], parts), parts
