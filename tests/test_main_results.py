"""Main results restates the chapters' findings as the chapters state them now.

Main results (``notebooks/main_results.ipynb``) names every verdict it states with the claim's id,
``**status** (`claim-id`)`` in its text and ``claim-id: status`` in what its cells print. The
tests read its stored outputs and its markdown and compare them with the verdict records of the
pages that decide the claims: the claims ledger's rows (computed from those pages' stored
records by ``attnbook.ledger``, and the published ``book/ledger.json``) for the papers' claims,
the records chapter 6b shows for its own laws. They also compare chapter 6b's law and measured
exponents, and chapter 10's and chapter 12's reading of Theorem 3.3, with what those chapters
print. A status word without a claim id, a status, law, exponent or number that differs from
the chapter's, or a reading the chapter has replaced (Box-Cox exponents, a sigma / n law) fails.
"""

from __future__ import annotations

import json
import re
from functools import lru_cache
from pathlib import Path

import pytest

from attnbook import ledger
from attnbook.claims import ch06b as claims6b
from attnbook.verdicts import STATUSES

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
MAIN = NOTEBOOKS / "main_results.ipynb"
#: A verdict word: the four statuses, and "not testable" in any other wording (longest first, so
#: "partly reproduced" is never read as "reproduced").
STATUS = r"partly reproduced|not reproduced|not testable(?: here)?|reproduced"
#: How the text names a verdict: the status (bold or not) and the claim's id in backquotes.
TAGGED = re.compile(rf"\**(?P<status>{STATUS})\**\s+\(`(?P<id>[a-z0-9][a-z0-9-]*)`\)")
#: How a cell prints one: ``claim-id: status`` or ``claim-id (what): status (reason)``.
PRINTED = re.compile(rf"^\s*(?P<id>[a-z0-9]+(?:-[a-z0-9]+)+)(?: \((?P<what>[^)]*)\))?: "
                     rf"(?P<status>{STATUS})(?: \((?P<reason>.*)\))?$", re.M)


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def markdown(path: Path) -> str:
    """All markdown of a notebook, cells joined by blank lines."""
    return "\n\n".join("".join(c["source"]) for c in _cells(path) if c["cell_type"] == "markdown")


def printed(path: Path) -> str:
    """All text the notebook's code cells printed or displayed (stream and text/plain)."""
    return "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/plain", ""))
                     for c in _cells(path) if c["cell_type"] == "code"
                     for o in c.get("outputs", []))


def named_verdicts(text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """``(claim id, status)`` for every verdict ``text`` names with its id, and the contexts of
    every verdict word it uses without one."""
    tagged = [(m["id"], m["status"]) for m in TAGGED.finditer(text)]
    covered = [range(*m.span("status")) for m in TAGGED.finditer(text)]
    untagged = [text[max(0, m.start() - 60):m.end() + 20].replace("\n", " ")
                for m in re.finditer(STATUS, text)
                if not any(m.start() in span for span in covered)]
    return tagged, untagged


@lru_cache(maxsize=None)
def ledger_verdicts() -> dict[str, dict]:
    """Claim id -> the verdict record the ledger computes from the deciding pages' outputs (a
    claim whose page shows no record for it is missing: what Main results names of it fails
    here; the ledger's own problems are tests/test_ledger.py's)."""
    rows, _ = ledger.ledger_rows(ledger.load_claims())
    return {row.claim["id"]: ledger.with_shown_parts(row.printed).record()
            for row in rows if row.printed is not None}


@lru_cache(maxsize=None)
def chapter6b_records() -> dict[str, list[dict]]:
    """Chapter 6b's own claim ids -> the records the chapter shows for them."""
    shown = ledger.printed_verdicts(NOTEBOOKS / "ch06b_finite_sample.ipynb")
    return {claim_id: [p.verdict.record() for p in shown if p.verdict.claim == text]
            for claim_id, text in claims6b.CLAIMS.items()}


def recorded_statuses(claim_id: str) -> set[str]:
    """The statuses the deciding page records for ``claim_id`` (empty: no record)."""
    if claim_id in ledger_verdicts():
        return {ledger_verdicts()[claim_id]["status"]}
    return {r["status"] for r in chapter6b_records().get(claim_id, [])}


def disagreements(named: list[tuple[str, str]]) -> list[str]:
    """Each ``(claim id, status)`` whose status is not the one recorded for the claim."""
    wrong = []
    for claim_id, status in named:
        recorded = recorded_statuses(claim_id)
        if not recorded:
            wrong.append(f"{claim_id}: no page records a verdict for this id")
        elif status not in recorded:
            wrong.append(f"{claim_id}: Main results says {status!r}, the record {sorted(recorded)}")
    return wrong


# --- the reading rules, checked on made-up text --------------------------------------------


def test_an_untagged_or_misnamed_verdict_is_caught():
    tagged, untagged = named_verdicts("the law is **partly reproduced** (`book-orbit-curvature-"
                                      "corrected`); Theorem 3.3 as stated is not testable.")
    assert tagged == [("book-orbit-curvature-corrected", "partly reproduced")]
    assert len(untagged) == 1 and "not testable" in untagged[0]
    assert disagreements([("p2-log-time", "reproduced")]) and disagreements([("p2-nope", "reproduced")])
    assert disagreements([("book-shared-key-tilt", "not reproduced")])
    assert not disagreements([("p2-log-time", ledger_verdicts()["p2-log-time"]["status"])])


def test_printed_verdict_lines_are_read_with_their_reason():
    found = [m.groupdict() for m in PRINTED.finditer(
        "  p2-theorem-3-3-part1-problem: partly reproduced (a: partly reproduced; not testable: b)\n"
        "  book-orbit-curvature-law (first law): not reproduced\n")]
    assert [(f["id"], f["what"], f["status"], f["reason"]) for f in found] == [
        ("p2-theorem-3-3-part1-problem", None, "partly reproduced",
         "a: partly reproduced; not testable: b"),
        ("book-orbit-curvature-law", "first law", "not reproduced", None)]


# --- every verdict Main results names ------------------------------------------------------


def test_every_verdict_the_text_names_is_tagged_and_is_the_recorded_one():
    tagged, untagged = named_verdicts(markdown(MAIN))
    assert untagged == [], "verdict words without a claim id:\n" + "\n".join(untagged)
    assert tagged, "Main results names no verdict"
    assert disagreements(tagged) == []
    assert set(s for _, s in tagged) <= set(STATUSES)


def test_every_verdict_a_cell_prints_is_the_recorded_one_with_its_reason():
    lines = [m.groupdict() for m in PRINTED.finditer(printed(MAIN))]
    assert lines, "Main results prints no verdict"
    assert disagreements([(f["id"], f["status"]) for f in lines]) == []
    for found in lines:
        if found["reason"] is not None:
            assert found["reason"] == ledger_verdicts()[found["id"]]["reason"], found["id"]
    # the text names no verdict that a cell does not print
    shown = {(f["id"], f["status"]) for f in lines}
    assert set(named_verdicts(markdown(MAIN))[0]) <= shown


def test_the_published_ledger_agrees_with_the_verdicts_main_results_names():
    """The records ``python -m attnbook.ledger`` publishes as ``book/ledger.json``, computed here
    from the notebooks (the file itself is generated, not tracked)."""
    rows, problems = ledger.ledger_rows(ledger.load_claims())
    assert problems == [], problems
    published = {c["id"]: c.get("verdict") for c in ledger.ledger_records(rows)["claims"]}
    named = {i for i, _ in named_verdicts(markdown(MAIN))[0] if i in ledger_verdicts()}
    for claim_id in named:
        assert published[claim_id] is not None, claim_id
        assert (published[claim_id]["status"], published[claim_id]["reason"]) == (
            ledger_verdicts()[claim_id]["status"], ledger_verdicts()[claim_id]["reason"]), (
            f"{claim_id}: book/ledger.json is stale; run python -m attnbook.ledger")


# --- chapter 6b: the law and the exponents -------------------------------------------------

CHAPTER_FIT = re.compile(r"sigma = (?P<sigma>[\d.]+), (?P<what>smallest|geometric mean)\s+"
                         r"~ n\^\((?P<b>[+-]\d+\.\d+) \+- (?P<se>\d+\.\d+)\)")
MAIN_FIT = re.compile(r"sigma = (?P<sigma>[\d.]+), (?P<what>smallest|geometric mean) of the 45 "
                      r"eigenvalues ~ n\^b, b\s+(?P<b>[+-]\d+\.\d+) \+- (?P<se>\d+\.\d+)")


def _fits(pattern: re.Pattern, text: str) -> dict[tuple[str, str], tuple[float, float]]:
    return {(m["sigma"], m["what"]): (float(m["b"]), float(m["se"]))
            for m in pattern.finditer(text)}


def _section(text: str, heading: str) -> str:
    """The markdown from ``heading`` to the next heading of any level."""
    start = text.index(heading)
    following = re.search(r"^#{1,6} ", text[start + len(heading):], flags=re.M)
    return text[start:start + len(heading) + (following.start() if following else len(text))]


def test_chapter_6b_exponents_are_the_chapters():
    chapter = _fits(CHAPTER_FIT, printed(NOTEBOOKS / "ch06b_finite_sample.ipynb"))
    assert len(chapter) == 4, chapter
    assert _fits(MAIN_FIT, printed(MAIN)) == chapter
    text = _section(markdown(MAIN), "### Why the finite sample slows Algorithm 1 down")
    quoted = {(float(b), float(se)) for b, se in
              re.findall(r"n\^\{(-?\d+\.\d+) \\pm (\d+\.\d+)\}", text)}
    assert quoted and quoted <= set(chapter.values()), quoted
    smallest = {v for (_, what), v in chapter.items() if what == "smallest"}
    assert smallest <= quoted, "the text must quote the smallest eigenvalue's exponents"
    # Algorithm 1's predicted iterations: the exponent the chapter's report page prints
    report = re.search(r"predicted from h_min: .*~ n\^\(\+(\d+\.\d+) \+- ",
                       printed(NOTEBOOKS / "report_ch06b_finite_sample.ipynb"))[1]
    assert re.search(rf"slowest mode ~ n\^b, b\s+{re.escape(report)}\b", printed(MAIN))
    assert f"$n^{{{report}}}$" in text


def test_chapter_6b_law_is_the_corrected_one():
    law = claims6b.CLAIMS["book-orbit-curvature-corrected"]
    assert chapter6b_records()["book-orbit-curvature-corrected"], "chapter 6b shows no such law"
    assert f"the law [derived]: {law}" in printed(MAIN)
    exponent = re.search(r"like n\^(-[\d/]+) with noisy and with noise-free", law)[1]
    text = _section(markdown(MAIN), "### Why the finite sample slows Algorithm 1 down")
    stated = re.findall(r"fall like \$n\^\{(-[\d/]+)\}\$ with and without noise", text)
    assert stated == [exponent], stated
    # the replaced law: a noise-set tilt sigma / n, and n^-3/2 other than as the first law's
    assert r"\sigma n^{-1}" not in text and "misses" not in text
    for sentence in re.split(r"(?<=[.;])\s", text):
        if "n^{-3/2}" in sentence:
            assert "first" in sentence, sentence


# --- chapter 10 and chapter 12: Theorem 3.3 ------------------------------------------------


def test_theorem_33_is_read_as_chapter_10_reads_it():
    text, shown = markdown(MAIN), printed(MAIN)
    named = dict(named_verdicts(text)[0])
    for claim_id in ("p2-log-time", "p2-exponential-approach", "p2-log-time-annealed"):
        assert claim_id in named, f"Main results does not state {claim_id}"
    # the Box-Cox exponents are chapter 10's first rule, not its reading of the theorem
    for replaced in ("Box-Cox", "p_hat", r"\hat p"):
        assert replaced not in text and replaced not in shown, replaced
    record = ledger_verdicts()["p2-exponential-approach"]
    measured = [m for part in (record, *record["parts"]) for m in part["measurements"]]
    fits = [m for m in measured if m["name"].startswith("chi^2 per record")]
    excluded = [m for m in measured if "power law" in m["name"]]
    assert fits, "chapter 10's record has no chi^2 of the exponential fit"
    values = [m["value"] for m in fits]
    row = re.search(r"fixed s, (\d+) runs: chi\^2 per record of the exponential fit \(limit (\S+)\); "
                    r"power law excluded\s+(\d+\.\d+) to (\d+\.\d+); (\d+) of (\d+)", shown)
    assert row, "Main results does not print chapter 10's fits"
    assert row.groups() == (str(len(fits)), f"{fits[0]['threshold']:g}", f"{min(values):.2f}",
                            f"{max(values):.2f}", str(sum(m["level"] == 2 for m in excluded)),
                            str(len(excluded)))
    flat = " ".join(text.split())
    assert f"all {row[1]} runs" in flat
    assert f"{row[3]} to {row[4]} against a limit of {row[2]}" in flat
    assert f"excluded in {row[5]} of the {row[6]}" in flat


def test_theorem_33_on_part_1s_problem_is_chapter_12s_verdict_and_numbers():
    record = ledger_verdicts()["p2-theorem-3-3-part1-problem"]
    text = " ".join(markdown(MAIN).split())
    testable = [p for p in record["parts"] if p["status"] != "not testable here"]
    skipped = [p for p in record["parts"] if p["status"] == "not testable here"]
    assert testable and skipped, "the record has no part set aside as not testable"
    for part in testable:
        gap = part["measurements"][0]["value"]
        assert f"at {gap:.3g} times $\\epsilon$" in text
    for part in skipped:
        offset = re.search(r"Gibbs offset s D / 4 at its final s is (\S+) eps", part["reason"])[1]
        assert f"Gibbs offset alone is {offset} times $\\epsilon$" in text


@pytest.mark.parametrize("page", sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")))
def test_no_page_restates_chapter_6b_first_law_as_current(page):
    """The first law's sigma-set tilt ("curvatures fall like sigma n^-1", "a term the derivation
    misses") is stated only by chapter 6b, as its first version."""
    if page.startswith(("ch06b_", "report_ch06b_")):
        return
    text = markdown(NOTEBOOKS / page)
    assert r"like $\sigma n^{-1}$" not in text and "derivation misses" not in text, page
