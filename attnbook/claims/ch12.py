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
    ``eps`` (``offset_over_eps``). A method whose offset exceeds ``eps`` (ratio above 1) is run
    where its part cannot succeed by construction: at that temperature the expected gap stays
    above ``eps`` however long the chain runs. Its part is not testable at this temperature
    (:func:`attnbook.verdicts.not_testable`; the offset in its claim, the offset and the final
    gap in its reason), and :func:`attnbook.verdicts.combine` rests the combined verdict on the
    other parts, naming the skipped one. Returns the combined verdict and one part per method."""
    if set(final_gap_over_eps) != set(offset_over_eps) or not final_gap_over_eps:
        raise ValueError("final_gap_over_eps and offset_over_eps must name the same methods "
                         "(at least one)")
    parts = []
    for name, ratio in final_gap_over_eps.items():
        claim, offset = f"{name}: final gap <= eps", float(offset_over_eps[name])
        if offset > 1.0:
            parts.append(verdicts.not_testable(
                f"{claim} (its Gibbs offset {offset:.3g} eps > eps)",
                f"not testable at this temperature: its Gibbs offset s D / 4 at its final s "
                f"is {offset:.3g} eps > eps, so its expected gap cannot come within eps "
                f"however long it runs (final gap {ratio:.3g} eps)"))
            continue
        parts.append(verdicts.verdict(
            claim, ratio, 1.0, partial=partial,
            quantity=f"final gap / eps (Gibbs offset at its final s: {offset:.3g} eps)"))
    return verdicts.combine(CLAIMS["p2-theorem-3-3-part1-problem"], parts), parts
