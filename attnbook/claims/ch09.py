"""Chapter 9 (LoRA): the verdict on Theorem 3.2."""

from __future__ import annotations

from typing import Mapping

from .. import verdicts
from .ch08 import (BOUND_MAX, CROSSOVER_MAX, any_data_and_size, crossover_part,
                   every_direction_part)

__all__ = ["CLAIMS", "theorem_32", "lora_any_data_and_size"]

CLAIMS = {
    "p2-lora-villani": "Theorem 3.2: the mildly regularized LoRA depth-2 loss is Villani",
    "p2-lora-any-data-size": "Theorem 3.2 for any data distribution and any network size",
}


def theorem_32(log10_crossovers: Mapping[str, float], worst_margin: Mapping[str, float], *,
               maximum: float = CROSSOVER_MAX) -> tuple[verdicts.Verdict, list[verdicts.Verdict]]:
    """Theorem 3.2 on this instance, by the rules of chapter 8: the orbit part
    (:func:`attnbook.claims.ch08.crossover_part`) and the every-direction inequalities at the
    random points (:func:`attnbook.claims.ch08.every_direction_part`). Returns the combined
    verdict and its two parts."""
    parts = [crossover_part(log10_crossovers, maximum=maximum),
             every_direction_part(worst_margin)]
    return verdicts.combine(CLAIMS["p2-lora-villani"], parts), parts


def lora_any_data_and_size(evidence: Mapping[str, Mapping[str, tuple[float, float]]],
                           untested: Mapping[str, str], *, crossover_max: float = CROSSOVER_MAX,
                           bound_max: float = BOUND_MAX
                           ) -> tuple[verdicts.Verdict, list[verdicts.Verdict]]:
    """Theorem 3.2 on a grid of LoRA instances, by chapter 8's rule
    (:func:`attnbook.claims.ch08.any_data_and_size`); ``untested`` maps the instances where no
    stationary point of the data loss was found to the reason."""
    return any_data_and_size(evidence, untested=untested,
                             claim=CLAIMS["p2-lora-any-data-size"],
                             crossover_max=crossover_max, bound_max=bound_max)
