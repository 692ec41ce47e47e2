"""Chapter 2 (the infinite-data limit): the verdict on the factorization claim."""

from __future__ import annotations

from .. import verdicts

__all__ = ["CLAIMS", "factorization"]

CLAIMS = {
    "p1-infinite-data-factorization":
        "in the infinite-sample limit the regression problem is a weighted matrix factorization",
}


def factorization(failed: int, checked: int) -> verdicts.Verdict:
    """Reproduced when none of the ``checked`` sympy identities (population loss at two sizes,
    the factorization) fails: ``failed <= 0``."""
    return verdicts.verdict(
        CLAIMS["p1-infinite-data-factorization"], failed, 0, direction="<=",
        quantity=f"sympy identities that fail, of {checked} (population loss at 2 sizes, "
                 "factorization)")
