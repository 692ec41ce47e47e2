"""The deciding logic of every verdict the book prints, one module per chapter.

A chapter measures numbers; the module of the same name here (``attnbook.claims.ch05`` for
``notebooks/ch05_experiment.ipynb``) turns them into :class:`attnbook.verdicts.Verdict` objects,
and the chapter only prints them. No notebook cell compares a measurement with a threshold
or combines verdicts (``tests/test_claims.py`` fails if one calls
:func:`attnbook.verdicts.verdict`, :func:`~attnbook.verdicts.combine`,
:func:`~attnbook.verdicts.interval_verdict` or :func:`~attnbook.verdicts.not_testable`, or
compares a verdict's ``status``).

Each chapter module defines

* ``CLAIMS: dict[str, str]``, the text of each claim it judges, keyed by the claim's id in
  ``book/claims.yml``. This is the one place the text is typed: the ledger
  (``python -m attnbook.ledger``) takes it from here through :func:`text`;
* functions that take measured numbers (plain floats and arrays, never a notebook's state)
  and return ``Verdict``\\ s built with ``verdicts.verdict(CLAIMS[claim_id], ...)``, with the
  thresholds as keyword arguments whose defaults are the book's fixed rule, so a unit test can
  feed numbers on both sides of each threshold.
"""

from __future__ import annotations

from importlib import import_module
from pkgutil import iter_modules

__all__ = ["chapter_modules", "registry", "text"]


def chapter_modules() -> list[str]:
    """The names of the chapter modules present (``ch01``, ``ch02``, ...), sorted."""
    return sorted(m.name for m in iter_modules(__path__) if m.name.startswith("ch"))


def registry() -> dict[str, str]:
    """Every claim id judged by a chapter module, mapped to its text.

    Raises ``ValueError`` if two modules define the same id."""
    texts: dict[str, str] = {}
    for name in chapter_modules():
        for claim_id, claim_text in import_module(f"{__name__}.{name}").CLAIMS.items():
            if claim_id in texts:
                raise ValueError(f"claim id {claim_id!r} is defined by two chapter modules")
            texts[claim_id] = claim_text
    return texts


def text(claim_id: str) -> str:
    """The text of claim ``claim_id`` (an id of ``book/claims.yml``); ``ValueError`` if no
    chapter module defines it."""
    if not isinstance(claim_id, str):
        raise TypeError(f"claim_id must be a string (an id of book/claims.yml), got "
                        f"{type(claim_id).__name__}")
    texts = registry()
    if claim_id not in texts:
        raise ValueError(f"claim_id must be an id defined by a module of attnbook.claims, got "
                         f"{claim_id!r} (known: {len(texts)} ids)")
    return texts[claim_id]
