"""attnbook.claims.ch02: the factorization verdict on both sides of its threshold."""

from attnbook.claims import ch02
from attnbook.verdicts import NOT_REPRODUCED, REPRODUCED


def test_factorization_fails_when_an_identity_fails():
    assert ch02.factorization(0, 4).status == REPRODUCED
    verdict = ch02.factorization(1, 4)
    assert verdict.status == NOT_REPRODUCED
    assert verdict.claim == ch02.CLAIMS["p1-infinite-data-factorization"]
    assert "of 4" in verdict.reason
