"""Write the claims ledger page from the verdict records in the chapters' executed outputs.

Usage (from the repository root, with .venv's Python; both README commands run it before the
book build)::

    python -m attnbook.ledger [--check] [--verify --root ROOT] [--json PATH]

It reads ``book/claims.yml`` (every checkable [summary]/[abstract] claim of the two papers, the
chapter and section that tests it) and, from the stored outputs of the notebooks, the verdict
records that every shown :class:`attnbook.verdicts.VerdictTable` puts in its output (MIME type
:data:`attnbook.verdicts.RECORD_MIME`: label, claim, status, reason, each measured value with
its threshold, direction, printed form and spread, the sub-verdicts). No printed text is read
back. It writes ``book/ledger.md``:

* a prose summary, computed from the rows: how many claims of each paper, how many of them
  have each verdict, and the headline claims (``headline: true`` in the claims file) named
  by verdict;
* "Headline claims": one compact table of the headline rows (claim, paper, verdict, link to
  the chapter section and to the full row);
* one full table per paper: one row per claim with the measured numbers, the thresholds and
  the verdict, taken from the records, headline rows marked with a badge;
* the statements of the sources that make no checkable claim, and why;

and ``book/ledger.json``, the same rows as data (the book publishes it beside the page).

It fails (exit status 1, one message per problem, nothing written) when a claim has no
verdict record and the claims file does not say why it is not yet tested, when a verdict is
shown outside the section the claims file names or twice there with different text, when a
labelled [summary]/[abstract] verdict is shown in a section where the claims file does not list
it, or when a record's status disagrees with its own measurements (or sub-verdicts).
``--check`` does all of this and writes nothing. ``--verify`` compares the records of
``--root``'s notebooks (the build's fresh execution) with the stored ones: verdicts exactly,
each measured value within its recorded spread (or, with no spread, as printed), naming the
claim and the value that differ.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from docutils.nodes import make_id

from attnbook import claims as book_claims
from attnbook.verdicts import (NOT_REPRODUCED, NOT_TESTABLE, PARTLY, RECORD_MIME, REPRODUCED,
                               STATUSES, Measurement, Verdict, combine, status_of_levels)

__all__ = ["Printed", "Row", "load_claims", "printed_verdicts", "inconsistencies", "ledger_rows",
           "summary", "render", "verdict_differences", "row_differences", "ledger_records",
           "with_shown_parts", "main"]

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "book" / "claims.yml"
LEDGER = ROOT / "book" / "ledger.md"
NOT_YET_TESTED = "not yet tested"
SOURCE_LABELS = ("[summary]", "[abstract]")
CHOICE = "[choice]"      # a row with the book's stricter reading of a source claim



@dataclass(frozen=True)
class Printed:
    """One verdict record in a notebook's stored output: where it is, its label and verdict,
    and its sub-verdicts: the verdict's own parts (:func:`attnbook.verdicts.combine`), else
    those shown under it."""

    notebook: str
    cell: int
    section: str
    label: str | None
    verdict: Verdict
    parts: tuple[Verdict, ...] = ()


def headings(notebook: dict) -> list[tuple[int, int, str]]:
    """(cell index, level, title) of every markdown heading, in order."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        fence = False
        for line in "".join(cell["source"]).splitlines():
            if line.lstrip().startswith(("```", ":::")):
                fence = not fence
            match = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
            if match and not fence:
                found.append((index, len(match[1]), match[2]))
    return found


def printed_verdicts(path: Path, notebook: dict | None = None) -> list[Printed]:
    """Every verdict record shown by a code cell of the notebook at ``path`` (or of
    ``notebook``, that notebook's contents, when given)."""
    notebook = json.loads(path.read_text()) if notebook is None else notebook
    titles = {index: title for index, _, title in headings(notebook)}
    section, found = "", []
    for index, cell in enumerate(notebook["cells"]):
        section = titles.get(index, section)
        if cell["cell_type"] != "code":
            continue
        for output in cell.get("outputs", []):
            for row in output.get("data", {}).get(RECORD_MIME, {}).get("rows", []):
                verdict = Verdict.from_record(row["verdict"])
                parts = verdict.parts or tuple(Verdict.from_record(p) for p in row["parts"])
                found.append(Printed(path.name, index, section, row["label"].strip() or None,
                                     verdict, parts))
    return found


def _fragment_problems(m: Measurement) -> list[str]:
    """Where a measurement's credit disagrees with its value, threshold and direction."""
    if m.earned_level() != m.level:
        return [f"{m.name} = {m.value:g} is recorded with credit {m.level}, its numbers give "
                f"{m.earned_level()} ({m.op} {m.threshold:g})"]
    return []


def inconsistencies(verdict: Verdict) -> list[str]:
    """Where a recorded status disagrees with the verdict's own numbers.

    Each measurement's credit must follow from its value, direction and thresholds, and the
    status from the credits by the rule of ``attnbook.verdicts`` (all pass: reproduced; none
    even partly: not reproduced; otherwise partly). A combined verdict must follow the rule of
    ``verdicts.combine`` from its parts; a not-testable verdict must have a reason; any other
    verdict must carry its measurements or its parts.
    """
    if verdict.status == NOT_TESTABLE and not verdict.parts:
        return [] if verdict.reason.strip() else ["a not-testable verdict without a reason"]
    if verdict.measurements:
        problems = [p for m in verdict.measurements for p in _fragment_problems(m)]
        expected = status_of_levels([m.level for m in verdict.measurements])
        if expected != verdict.status:
            problems.append(f"status {verdict.status!r} but its measurements give {expected!r}")
        return problems
    if verdict.parts:
        expected = combine(verdict.claim, verdict.parts)
        if (expected.status, expected.reason) != (verdict.status, verdict.reason):
            return [f"status {verdict.status!r} ({verdict.reason!r}) but its parts give "
                    f"{expected.status!r} ({expected.reason!r})"]
        return []
    return ["a verdict with neither measurements nor sub-verdicts"]


def evidence_notebook(claim: dict) -> str:
    """The notebook whose section ``evidence`` shows the measurement: ``evidence_notebook``
    when the claim gives one (a chapter, when the verdict is printed on its Reproduction
    report page), else the claim's ``notebook``."""
    return claim.get("evidence_notebook") or claim["notebook"]


def load_claims(path: Path = CLAIMS) -> dict:
    """The claims file, checked for its required fields."""
    data = yaml.safe_load(path.read_text())
    required = ("id", "paper", "label", "claim", "notebook", "section", "evidence")
    ids = set()
    texts = book_claims.registry()
    for claim in data["claims"]:
        # the claim's text is typed once: in its chapter module of attnbook.claims
        if claim.get("id") in texts:
            if "claim" in claim:
                raise ValueError(f"{path.name}: claim {claim['id']} has its text in "
                                 "attnbook.claims; remove its 'claim' field here")
            claim["claim"] = texts[claim["id"]]
        missing = [key for key in required if not claim.get(key)]
        if missing:
            raise ValueError(f"{path.name}: claim {claim.get('id', '?')} lacks {missing}")
        if claim["label"] not in (*SOURCE_LABELS, CHOICE) or claim["paper"] not in (1, 2):
            raise ValueError(f"{path.name}: claim {claim['id']}: label must be one of "
                             f"{(*SOURCE_LABELS, CHOICE)} and paper 1 or 2")
        cause = claim.get("cause")
        if cause is not None and not all(cause.get(k) for k in ("text", "notebook", "section")):
            raise ValueError(f"{path.name}: claim {claim['id']}: cause needs text, notebook "
                             "and section")
        if claim.get("headline", False) not in (True, False):
            raise ValueError(f"{path.name}: claim {claim['id']}: headline must be true or "
                             "absent")
        if claim.get("headline") and not claim.get("short"):
            raise ValueError(f"{path.name}: claim {claim['id']}: a headline claim needs a "
                             "short name (short)")
        if claim["id"] in ids:
            raise ValueError(f"{path.name}: claim id {claim['id']} appears twice")
        ids.add(claim["id"])
    source = None
    for claim in data["claims"]:
        # a [choice] row is the stricter reading of the source row before it: both are
        # headline rows or neither is, so the headline list never shows one reading alone
        if claim["label"] != CHOICE:
            source = claim
        elif source is None or bool(claim.get("headline")) != bool(source.get("headline")):
            raise ValueError(f"{path.name}: claim {claim['id']} ([choice]) and the source row "
                             f"before it ({source['id'] if source else 'none'}) must both be "
                             "headline rows or neither")
    for bullet in data.get("design_notes", []):
        unknown = set(bullet.get("claims", [])) - ids
        if unknown or not (bullet.get("claims") or bullet.get("not_checkable")):
            raise ValueError(f"{path.name}: design-note bullet at {bullet['note']}:"
                             f"{bullet['line']} needs known claims or not_checkable "
                             f"(unknown: {sorted(unknown)})")
    return data


@dataclass(frozen=True)
class Row:
    """One ledger row: the claim and the verdict a chapter showed for it (None: not yet);
    ``figure`` names the evidence section's first named figure (None: it has none)."""

    claim: dict
    printed: Printed | None
    chapter: str
    figure: str | None


def chapter_title(notebook: dict) -> str:
    """'Chapter N' (or the page title) from the notebook's first heading."""
    title = next(t for _, level, t in headings(notebook) if level == 1)
    return title.split(":")[0]


def section_figure(notebook: dict, section: str) -> str | None:
    """The name of the first named figure under heading ``section`` (up to the next heading):
    myst-nb's ``mystnb.figure.name`` cell metadata, the figure's label and HTML id; None when
    the section shows no named figure."""
    titles = {index: title for index, _, title in headings(notebook)}
    current = None
    for index, cell in enumerate(notebook["cells"]):
        current = titles.get(index, current)
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        if current == section and name and any(
                "image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            return str(name)
    return None


def ledger_rows(data: dict, root: Path = ROOT) -> tuple[list[Row], list[str]]:
    """One row per claim of ``data``, and every problem found (empty when all is well)."""
    problems: list[str] = []
    rows: list[Row] = []
    notebooks = {path.name: path for path in sorted((root / "notebooks").glob("*.ipynb"))}
    printed = [p for path in notebooks.values() for p in printed_verdicts(path)]
    for p in printed:
        for problem in inconsistencies(p.verdict):
            problems.append(f"{p.notebook} cell {p.cell}: {p.verdict.claim!r}: {problem}")
    known = {(Path(c["notebook"]).name, c["section"], c["claim"]) for c in data["claims"]}
    for p in printed:
        if p.label in SOURCE_LABELS and (p.notebook, p.section, p.verdict.claim) not in known:
            problems.append(f"{p.notebook} cell {p.cell} prints a {p.label} verdict in section "
                            f"{p.section!r} that book/claims.yml does not list there: "
                            f"{p.verdict.claim!r}")
    for claim in data["claims"]:
        name = Path(claim["notebook"]).name
        if name not in notebooks:
            problems.append(f"claim {claim['id']}: no notebook {claim['notebook']}")
            continue
        notebook = json.loads(notebooks[name].read_text())
        evidence_name = Path(evidence_notebook(claim)).name
        if evidence_name not in notebooks:
            problems.append(f"claim {claim['id']}: no notebook {evidence_notebook(claim)}")
            continue
        evidence = json.loads(notebooks[evidence_name].read_text())
        for key, where, page in (("section", name, notebook),
                                 ("evidence", evidence_name, evidence)):
            if claim[key] not in {t for _, _, t in headings(page)}:
                problems.append(f"claim {claim['id']}: {where} has no heading {claim[key]!r}")
        cause = claim.get("cause")
        if cause is not None and (Path(cause["notebook"]).name not in notebooks or cause[
                "section"] not in {t for _, _, t in headings(json.loads(
                    notebooks[Path(cause["notebook"]).name].read_text()))}):
            problems.append(f"claim {claim['id']}: its cause links to no heading "
                            f"{cause['section']!r} of {cause['notebook']}")
        mine = [p for p in printed if p.notebook == name and p.verdict.claim == claim["claim"]]
        here = [p for p in mine if p.section == claim["section"]]
        if len({p.verdict for p in here}) > 1:
            problems.append(f"claim {claim['id']}: {name} prints different verdicts for it "
                            f"in section {claim['section']!r}")
        if mine and not here:
            problems.append(f"claim {claim['id']}: printed in section {mine[0].section!r}, "
                            f"not in {claim['section']!r}")
        for p in here:
            if p.label is not None and p.label != claim["label"]:
                problems.append(f"claim {claim['id']}: printed with label {p.label}, "
                                f"book/claims.yml says {claim['label']}")
        if here and claim.get("not_yet_tested"):
            problems.append(f"claim {claim['id']}: {name} now shows a verdict; remove "
                            "not_yet_tested from book/claims.yml")
        if not here and not claim.get("not_yet_tested"):
            problems.append(f"claim {claim['id']}: no cell of {name} shows a verdict "
                            f"'{claim['claim']}: <status> (<reason>)' and book/claims.yml "
                            "gives no not_yet_tested reason")
        chosen = here[-1] if here else None
        rows.append(Row(claim, chosen, chapter_title(notebook),
                        section_figure(evidence, claim["evidence"])))
    return rows, problems


_ESCAPE = re.compile(r"([\\`*_\[\]<>$|{}~#])")


def escape(text: str) -> str:
    """``text`` with Markdown/MyST punctuation backslash-escaped, so it renders literally."""
    return _ESCAPE.sub(r"\\\1", " ".join(text.split()))


def heading_anchor(title: str) -> str:
    """The HTML id Sphinx gives the section titled ``title`` (docutils ``make_id`` of its text)."""
    return make_id(title.replace("$", ""))


def _link(text: str, notebook: str, section: str) -> str:
    page = Path(notebook).with_suffix(".html").name
    return f'<a href="../notebooks/{page}#{heading_anchor(section)}">{text}</a>'


BADGES = {REPRODUCED: "success", PARTLY: "warning", NOT_REPRODUCED: "danger",
          NOT_TESTABLE: "dark", NOT_YET_TESTED: "light"}


def claim_anchor_id(claim_id: str) -> str:
    """The HTML id of a claim's row: ``ledger.html#claim-<id>`` links to that one claim."""
    return "claim-" + make_id(claim_id)


def _claim_anchor(claim_id: str) -> str:
    """The claim's id and a link to itself, the row's anchor."""
    anchor = claim_anchor_id(claim_id)
    return (f'<small>`{claim_id}` <a class="claim-anchor" id="{anchor}" href="#{anchor}" '
            f'title="Link to this claim">#</a></small>')


HEADLINE_BADGE = "{bdg-primary}`headline`"
PAPERS = {1: ("Part I: fast global convergence via preconditioning", "goel2026"),
          2: ("Part II: the Villani condition, Langevin training, LoRA", "frangi2026")}
ORDER = (*STATUSES, NOT_YET_TESTED)
HEADLINES_TITLE = "Headline claims"


def _badge(status: str) -> str:
    return f"{{bdg-{BADGES[status]}}}`{status}`"


def status_of(row: Row) -> str:
    """The row's verdict: the printed status, or "not yet tested"."""
    return row.printed.verdict.status if row.printed else NOT_YET_TESTED


def status_counts(rows: list[Row]) -> dict[str, int]:
    """How many of ``rows`` have each verdict, in the order of ``ORDER`` (zeros left out)."""
    statuses = [status_of(row) for row in rows]
    return {s: statuses.count(s) for s in ORDER if s in statuses}


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _counted(counts: dict[str, int], names: dict[str, str] | None = None) -> str:
    """"19 are reproduced, 9 partly reproduced and 4 not testable here", each count followed
    by ``names[status]`` in parentheses when given."""
    parts = [f"{n} {s}" + (f" ({names[s]})" if names else "") for s, n in counts.items()]
    parts[0] = parts[0].replace(" ", " is " if next(iter(counts.values())) == 1 else " are ", 1)
    return _and(parts)


def summary(rows: list[Row]) -> str:
    """The page's opening paragraph, every number and name computed from ``rows``: the
    claims per paper, the verdicts of all of them, and the headline claims named by verdict."""
    per_paper = [f"{sum(r.claim['paper'] == paper for r in rows)} of {{cite}}`{key}` "
                 f"(Part {numeral})" for (paper, (_, key)), numeral
                 in zip(PAPERS.items(), ("I", "II"))]
    choices = sum(r.claim["label"] == CHOICE for r in rows)
    counts = status_counts(rows)
    headline = [r for r in rows if r.claim.get("headline")]
    text = [f"This page checks {len(rows)} claims about the two papers: {_and(per_paper)}"
            + (f"; {choices} of them are a stricter reading chosen by this book "
               f"(**[choice]**) of the source claim listed just before"
               if choices else "") + ".",
            f"Of all {len(rows)}, {_counted(counts)}."]
    if headline:
        names = {s: "; ".join(f"*{escape(r.claim['short'])}*" for r in headline
                              if status_of(r) == s) for s in ORDER}
        text += [f"The {len(headline)} headline claims, each paper's main theorems and the main "
                 f"findings of its experiments, are listed first below and carry a "
                 f"{HEADLINE_BADGE} badge in the full tables.",
                 f"Of these, {_counted(status_counts(headline), names)}.",
                 f"The other {len(rows) - len(headline)} rows are the technical claims: "
                 "intermediate results, side observations and second readings of a headline "
                 "statement."]
    return " ".join(text)


def evidence_link(row: Row) -> str:
    """The row's evidence, named: its figure's number (``{numref}``, "Fig. 5.3") when the
    evidence section shows a named figure, else a link titled by that section's heading."""
    if row.figure:
        return f"{{numref}}`{row.figure}`"
    claim = row.claim
    return _link(claim["evidence"], evidence_notebook(claim), claim["evidence"])


def _cells(row: Row) -> list[str | list[str]]:
    """Claim (with where it is tested and the evidence), measured, threshold, verdict."""
    claim, printed = row.claim, row.printed
    chapter = f"{{doc}}`{row.chapter} <../{Path(claim['notebook']).with_suffix('')}>`"
    where = (f"{chapter}, {_link(claim['section'], claim['notebook'], claim['section'])}"
             + "; evidence: " + evidence_link(row))
    printed_as = (f" <br> <small>verdict printed as: {escape(claim['claim'])}</small>"
                  if claim.get("statement") else "")
    cause = claim.get("cause")
    shared = ("" if cause is None else f" <br> <small>one cause of several rows: "
              f"{_link(escape(cause['text']), cause['notebook'], cause['section'])}</small>")
    title = ((HEADLINE_BADGE + " " if claim.get("headline") else "")
             + f"**{claim['label']}** {escape(claim.get('statement') or claim['claim'])}"
             f"{printed_as}{shared} <br> {where} <br> {_claim_anchor(claim['id'])}")
    if printed is None:
        return [title, escape(claim.get("not_yet_tested", "no verdict printed")), "",
                _badge(NOT_YET_TESTED)]
    verdict = printed.verdict
    if verdict.measurements:
        return [title, _measured(verdict), _thresholds(verdict.measurements),
                _badge(verdict.status)]
    if verdict.status == NOT_TESTABLE:
        return [title, escape(verdict.reason), "", _badge(NOT_TESTABLE)]
    testable = [p for p in printed.parts if p.status != NOT_TESTABLE]
    skipped = [p.claim for p in printed.parts if p.status == NOT_TESTABLE]
    measured = [escape(f"{p.claim}: {p.status}") + (": " + escape("; ".join(
        f"{m.name} {m.shown}" for m in p.measurements)) if p.measurements else "")
                for p in testable]
    if skipped:
        measured.append(escape(f"not testable: {', '.join(skipped)}"))
    thresholds = _thresholds([m for p in testable for m in p.measurements], partial=False)
    return [title, measured, thresholds or "per part, in the chapter section",
            f"{_badge(verdict.status)} (combined)"]


def _measured(verdict: Verdict) -> list[str]:
    return [escape(f"{m.name} {m.shown}") for m in verdict.measurements]


def _thresholds(measurements: list[Measurement] | tuple[Measurement, ...], *,
                partial: bool = True) -> list[str]:
    """Each threshold once (equal numbers once, whatever digits they were printed with), in
    the order of the measured values it belongs to."""
    shown: dict[tuple, str] = {}
    for m in measurements:
        loose = partial and m.partial is not None
        key = (m.op, m.threshold, m.partial if loose else None)
        shown.setdefault(key, f"{m.op} {m.threshold_text}"
                         + (f" (partly: {m.op} {m.partial_text})" if loose else ""))
    return [escape(text) for text in shown.values()]


def _cell_markdown(cell: str | list[str], first: bool) -> list[str]:
    lead = "* - " if first else "  - "
    if isinstance(cell, str):
        return [lead + (cell or " ")]
    if not cell:
        return [lead + " "]
    if len(cell) == 1:
        return [lead + cell[0]]
    return [lead + "- " + cell[0], *("    - " + item for item in cell[1:])]


def _headline_table(rows: list[Row]) -> list[str]:
    """The "Headline claims" table: one compact row per headline claim (its short name,
    linked to its full row; the paper; the verdict; the chapter section that tests it)."""
    lines = ["```{list-table}", ":header-rows: 1", ":widths: 46 16 18 20",
             ":class: ledger-headlines", "",
             "* - Claim", "  - Paper", "  - Verdict", "  - Tested in"]
    for row in rows:
        claim = row.claim
        verdict = _badge(status_of(row))
        if row.printed is not None and not row.printed.verdict.measurements \
                and status_of(row) != NOT_TESTABLE:
            verdict += " (combined)"
        lines += [f"* - **{claim['label']}** <a href=\"#{claim_anchor_id(claim['id'])}\">"
                  f"{escape(claim['short'])}</a>",
                  f"  - {{cite}}`{PAPERS[claim['paper']][1]}`",
                  f"  - {verdict}",
                  f"  - {row.chapter}: "
                  f"{_link(escape(claim['section']), claim['notebook'], claim['section'])}"]
    return lines + ["```", ""]


def render(rows: list[Row], notes: list[dict] = ()) -> str:
    """The ledger page (MyST Markdown): the summary (:func:`summary`) and how the page is
    made; the headline claims in one compact table; one full table per paper, headline rows
    marked; then what the claims-file bullets ``notes`` state that makes no checkable claim,
    and why."""
    lines = [
        "# What the papers claim and what this book measured",
        "",
        summary(rows),
        "",
        "Each row of the full tables gives a claim, labelled by where the book found it "
        "(**[summary]**: a summary of the paper; **[abstract]**: a public abstract), the "
        "chapter section that tests it, the measured numbers, the thresholds and the verdict. "
        "The thresholds are the book's **[choice]**; each chapter section says why. Nothing "
        "here is typed: `python -m attnbook.ledger` writes this page before each book build "
        "from `book/claims.yml` and the verdict records the chapters' cells output (computed "
        "by `attnbook.verdicts` from the measured numbers and thresholds); the same rows are "
        "published as data in <a href=\"ledger.json\">ledger.json</a>. A claim whose chapter shows no "
        "verdict yet is marked *not yet tested*, with the reason from the claims file.",
        "",
    ]
    headline = [r for r in rows if r.claim.get("headline")]
    if headline:
        lines += [f"## {HEADLINES_TITLE}", "",
                  "Each paper's main theorems and the main findings of its experiments; a claim's "
                  "name links to its full row below.", ""]
        lines += _headline_table(headline)
    for paper, (part, key) in PAPERS.items():
        mine = [r for r in rows if r.claim["paper"] == paper]
        counts = status_counts(mine)
        marked = sum(bool(r.claim.get("headline")) for r in mine)
        lines += [f"## {part}", "",
                  f"{len(mine)} claims of {{cite}}`{key}`: "
                  + ", ".join(f"{n} {s}" for s, n in counts.items())
                  + (f"; {marked} of them headline claims" if marked else "") + ".", "",
                  "```{list-table}", ":header-rows: 1", ":widths: 40 30 12 18",
                  ":class: ledger-table", "",
                  "* - Claim, where it is tested, evidence", "  - Measured", "  - Threshold",
                  "  - Verdict"]
        for row in mine:
            for i, cell in enumerate(_cells(row)):
                lines += _cell_markdown(cell, first=i == 0)
        lines += ["```", ""]
    left_out = [(n["note"], n.get("not_checkable") or n.get("unchecked")) for n in notes
                if n.get("not_checkable") or n.get("unchecked")]
    if left_out:
        lines += ["## What the ledger leaves out", "",
                  "Statements of the sources that make no claim this book can measure, from "
                  "`book/claims.yml`:", ""]
        lines += [f"- Part {'I' if note.startswith('paper1') else 'II'}: {escape(why)}."
                  for note, why in left_out]
        lines += [""]
    return "\n".join(lines)


def _same_value(old: Measurement, new: Measurement) -> bool:
    """Whether two runs measured the same value: within the recorded spread (the larger of
    the two), or, with no spread, printed the same."""
    spread = max(old.spread, new.spread)
    if spread > 0:
        return abs(old.value - new.value) <= spread
    return old.shown == new.shown


def verdict_differences(where: str, old: Verdict, new: Verdict) -> list[str]:
    """What differs between the stored verdict ``old`` and the recomputed ``new``: the status
    exactly; each measurement's name and threshold exactly and its value within its spread;
    then the sub-verdicts, the same way."""
    if old.status != new.status:
        return [f"{where}: verdict {old.status!r} stored, {new.status!r} here"]
    olds, news = old.measurements, new.measurements
    if [(m.name, m.op, m.threshold_text) for m in olds] != [
            (m.name, m.op, m.threshold_text) for m in news]:
        return [f"{where}: measured {[m.name for m in olds]} against "
                f"{[m.threshold_text for m in olds]} stored, {[m.name for m in news]} against "
                f"{[m.threshold_text for m in news]} here"]
    found = [f"{where}: {a.name} {a.shown} stored, {b.shown} here (spread "
             f"{max(a.spread, b.spread):g}{'' if max(a.spread, b.spread) else ': as printed'})"
             for a, b in zip(olds, news) if not _same_value(a, b)]
    if [p.claim for p in old.parts] != [p.claim for p in new.parts]:
        return found + [f"{where}: sub-verdicts {[p.claim for p in old.parts]} stored, "
                        f"{[p.claim for p in new.parts]} here"]
    for a, b in zip(old.parts, new.parts):
        found += verdict_differences(f"{where}, {a.claim}", a, b)
    return found


def row_differences(stored: list[Row], fresh: list[Row]) -> list[str]:
    """Every claim whose verdict, or one of whose measured values, differs between ``stored``
    and ``fresh`` rows (:func:`verdict_differences`)."""
    found = []
    fresh_by_id = {row.claim["id"]: row for row in fresh}
    for old in stored:
        claim = old.claim["id"]
        new = fresh_by_id.get(claim)
        if new is None or (old.printed is None) != (new.printed is None):
            found.append(f"{claim}: shown in one of the two runs only")
        elif old.printed is not None:
            found += verdict_differences(claim, with_shown_parts(old.printed),
                                         with_shown_parts(new.printed))
    return found


def ledger_records(rows: list[Row]) -> dict[str, Any]:
    """The ledger as data: per claim its id, paper, label, text, where it is tested, and the
    record of its verdict (``None`` when not yet tested)."""
    return {"claims": [
        {"id": row.claim["id"], "paper": row.claim["paper"], "label": row.claim["label"],
         "claim": row.claim["claim"], "headline": bool(row.claim.get("headline")),
         "notebook": row.claim["notebook"], "section": row.claim["section"],
         "verdict": None if row.printed is None else with_shown_parts(row.printed).record()}
        for row in rows]}


def with_shown_parts(printed: Printed) -> Verdict:
    """The printed verdict with the sub-verdicts shown under it as its parts."""
    return replace(printed.verdict, parts=printed.parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check only; write nothing")
    parser.add_argument("--out", type=Path, default=LEDGER)
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the rows as data (default: beside --out, .json)")
    parser.add_argument("--claims", type=Path, default=CLAIMS)
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="read ROOT/notebooks/*.ipynb (default: the repository)")
    parser.add_argument("--verify", action="store_true",
                        help="fail, naming each claim and value, where the verdicts from "
                             "ROOT's notebooks differ from the stored notebooks' (build_book.sh: "
                             "the freshly executed chapters against the stored): verdicts "
                             "exactly, values within their recorded spread")
    parser.add_argument("--stored", type=Path, default=ROOT,
                        help="with --verify: the root whose notebooks hold the stored outputs")
    args = parser.parse_args(argv)
    data = load_claims(args.claims)
    rows, problems = ledger_rows(data, root=args.root)
    if problems:
        print("ledger: the ledger cannot be written:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    tested = sum(row.printed is not None for row in rows)
    page = render(rows, data.get("design_notes", []))
    if args.verify:
        stored, stored_problems = ledger_rows(data, root=args.stored)
        differences = stored_problems + row_differences(stored, rows)
        if differences:
            print(f"ledger: the verdicts in {args.root / 'notebooks'} differ from the stored "
                  f"ones in {args.stored / 'notebooks'} (verdicts exactly, values within their "
                  "recorded spread):", file=sys.stderr)
            for difference in differences:
                print(f"  - {difference}", file=sys.stderr)
            return 1
        print(f"ledger: {len(rows)} claims; {args.root / 'notebooks'} gives the same "
              "verdicts and values")
        return 0
    if not args.check:
        args.out.write_text(page)
        (args.json or args.out.with_suffix(".json")).write_text(
            json.dumps(ledger_records(rows), indent=1, ensure_ascii=False) + "\n")
    print(f"ledger: {len(rows)} claims, {tested} with a printed verdict"
          + ("" if args.check else f"; wrote {args.out}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
