"""Chapter 9 (LoRA): the verdict on Theorem 3.2."""

from __future__ import annotations

from typing import Mapping

from .. import verdicts
from .ch08 import CROSSOVER_MAX, crossover_part

__all__ = ["CLAIMS", "theorem_32"]

CLAIMS = {
    "p2-lora-villani": "Theorem 3.2: the mildly regularized LoRA depth-2 loss is Villani",
}


def theorem_32(log10_crossovers: Mapping[str, float], *, maximum: float = CROSSOVER_MAX
               ) -> tuple[verdicts.Verdict, verdicts.Verdict]:
    """Theorem 3.2 on this instance: the orbit part (the rule of chapter 8,
    :func:`attnlib.claims.ch08.crossover_part`); the inequalities in every other direction are
    not tested for LoRA in this book (chapter 8 tests them for attention), so that part is
    named as not tested. Returns the combined verdict and the orbit part."""
    orbit = crossover_part(log10_crossovers, maximum=maximum)
    others = verdicts.not_testable(
        "the other directions", "not tested yet: the book checks the every-direction "
        "inequalities numerically for attention (chapter 8) only")
    return verdicts.combine(CLAIMS["p2-lora-villani"], [orbit, others]), orbit
