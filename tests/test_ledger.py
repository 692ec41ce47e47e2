"""The claims ledger (attnbook.ledger, book/claims.yml) against the chapters and the notes.

* every claim of book/claims.yml gets a row, and a row's verdict is one a chapter cell showed
  in the section the claims file names (or the claims file says why it is not yet tested);
* every recorded verdict agrees with its own measurements and thresholds;
* a verdict's record reads back as the same verdict (property test), and the ledger catches a
  status that disagrees with its numbers;
* the staleness check (--verify) compares verdicts exactly and values within their spread,
  naming the claim and the value;
* every [seed]/[abstract] bullet of the design notes is in the claims file, at the line the
  file names (only where the notes are available, ../shared/design; a clean clone skips it);
* the page's "Headline claims" tables list exactly the claims marked ``headline: true`` (a
  claim's stricter readings in its row), the full entries (one box per claim, one reading per
  row of the claims file) mark exactly those rows, and the opening summary's and the counts
  table's numbers are the counts of the verdicts in the entries;
* a chapter whose checks are on a Reproduction report page lists, in its section "The papers'
  claims", exactly the claims tested there or in the chapter, each with the ledger's verdict.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from attnbook import ledger, verdicts

ROOT = Path(__file__).resolve().parents[1]
DESIGN = ROOT.parent / "shared" / "design"

CLAIMS = ledger.load_claims()


def _stored_lines(notebook: Path) -> dict[int, str]:
    """Cell index -> all text the cell printed (stream and text/plain), from the .ipynb."""
    cells = json.loads(notebook.read_text())["cells"]
    return {i: "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get(
        "text/plain", "")) for o in c.get("outputs", []))
            for i, c in enumerate(cells) if c["cell_type"] == "code"}


def test_every_claim_has_a_row_whose_verdict_a_chapter_cell_printed():
    rows, problems = ledger.ledger_rows(CLAIMS)
    assert problems == [], "\n".join(problems)
    assert [row.claim["id"] for row in rows] == [c["id"] for c in CLAIMS["claims"]]
    page = ledger.render(rows, CLAIMS["design_notes"])
    assert all(ledger.escape(n["not_checkable"]) in page
               for n in CLAIMS["design_notes"] if n.get("not_checkable"))
    full = [entry for part in ("Part I:", "Part II:") for entry in _entries(_section(page, part))]
    assert len(full) == len(rows)
    for row, entry in zip(rows, full):
        assert f'id="claim-{row.claim["id"]}"' in entry and f"`{row.claim['id']}`" in entry
        if row.printed is None:
            assert row.claim.get("not_yet_tested"), row.claim["id"]
            continue
        printed = _stored_lines(ROOT / row.claim["notebook"])[row.printed.cell]
        assert str(row.printed.verdict) in printed, row.claim["id"]
        assert row.printed.section == row.claim["section"]
        # every measured value is in the claim's entry, as the ledger writes it
        for item in ledger.value_items(row.printed.verdict):
            assert item in entry, (row.claim["id"], item)
        for m in row.printed.verdict.measurements:
            assert ledger.maths(m.shown) in entry, (row.claim["id"], m)
    tested = [row for row in rows if row.printed is not None]
    statuses = [row.printed.verdict.status for row in tested]
    assert all(f"`{s}`" in page for s in statuses)
    # one verdict badge per reading, on its first line (its sub-claims' statuses are words)
    assert [len(VERDICT_BADGE.findall(entry.split("\n")[1])) for entry in full] == [1] * len(rows)


VERDICT_BADGE = re.compile(r"\{bdg-(?:success|warning|danger|dark|light)\}`([^`]+)`")
HEADLINE = "{bdg-primary}`headline`"


def _section(page: str, title: str) -> str:
    """The text of the page's ``## title...`` section, up to the next ``## `` heading."""
    parts = re.split(r"^## ", page, flags=re.M)
    found = [p for p in parts[1:] if p.startswith(title)]
    assert len(found) == 1, f"{len(found)} sections titled {title!r}"
    return found[0]


def _table_rows(section: str) -> list[str]:
    """The body rows of the section's list-table(s), each as its text (header row dropped)."""
    rows = []
    for table in re.findall(r"```\{list-table\}\n(.*?)\n```", section, flags=re.S):
        rows += ["* - " + r for r in re.split(r"^\* - ", table, flags=re.M)[1:]][1:]
    return rows


def _entries(section: str) -> list[str]:
    """The readings of the section's claim boxes, in order: one per row of the claims file,
    each from its container's first line to its end."""
    return [":::: " + block.split("\n::::\n")[0]
            for block in re.split(r"^::::\{container\} ", section, flags=re.M)[1:]]


def _counts(text: str) -> dict[str, int]:
    """``{status: n}`` from text such as "19 are reproduced, 9 partly reproduced and ..."."""
    statuses = sorted((*verdicts.STATUSES, ledger.NOT_YET_TESTED), key=len, reverse=True)
    pattern = rf"(\d+) (?:are |is )?({'|'.join(map(re.escape, statuses))})"
    return {s: int(n) for n, s in re.findall(pattern, text)}


def _page() -> tuple[list, str]:
    rows, problems = ledger.ledger_rows(CLAIMS)
    assert problems == [], "\n".join(problems)
    return rows, ledger.render(rows, CLAIMS["design_notes"])


def _claims_section(notebook: Path) -> list[str] | None:
    """The bullets of the chapter's section "The papers' claims" (None when it has none)."""
    for cell in json.loads(notebook.read_text())["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and text.startswith("## The papers' claims"):
            return [line[2:] for line in text.splitlines() if line.startswith("- ")]
    return None


def test_each_chapter_names_its_claims_with_the_ledgers_verdict_and_links_its_report():
    rows, _ = ledger.ledger_rows(CLAIMS)
    reports = sorted((ROOT / "notebooks").glob("report_*.ipynb"))
    assert reports, "no Reproduction report pages"
    for report in reports:
        chapter = ROOT / "notebooks" / (report.stem.removeprefix("report_") + ".ipynb")
        bullets = _claims_section(chapter)
        assert bullets is not None, f"{chapter.name} has no section 'The papers' claims'"
        expected = [f"{ledger._badge(ledger.status_of(row))} **{row.claim['label']}** "
                    + ledger.escape(row.claim.get("short") or row.claim["claim"])
                    for row in rows if Path(row.claim["notebook"]).name in (chapter.name,
                                                                            report.name)]
        assert bullets == expected, chapter.name
        assert f"<{report.stem}>`" in json.dumps(json.loads(chapter.read_text())["cells"])


def test_headline_section_lists_exactly_the_headline_claims_and_marks_their_rows():
    rows, page = _page()
    marked = [c["id"] for c in CLAIMS["claims"] if c.get("headline") is True]
    # 10 to 14 headline claims of the sources; each [choice] row of one follows it in the list
    sources = [c["id"] for c in CLAIMS["claims"]
               if c.get("headline") is True and c["label"] != ledger.CHOICE]
    assert 10 <= len(sources) <= 14 and {1, 2} <= {c["paper"] for c in CLAIMS["claims"]
                                                   if c.get("headline")}
    listed = _table_rows(_section(page, "Headline claims"))
    # one row per claim: its source's reading and its stricter readings, each linked
    assert len(listed) == len(sources)
    assert [i for r in listed for i in re.findall(r'href="#claim-([^"]+)"', r)] == marked
    status = {row.claim["id"]: ledger.status_of(row) for row in rows}
    assert [b for r in listed for b in VERDICT_BADGE.findall(r)] == [status[i] for i in marked]
    full = [e for part in ("Part I:", "Part II:") for e in _entries(_section(page, part))]
    badged = [re.search(r'id="claim-([^"]+)"', e)[1] for e in full if HEADLINE in e]
    assert badged == marked
    # the badge is on the headline entries, and named once in the summary
    assert page.count(HEADLINE) == len(marked) + 1


def test_summary_counts_are_the_counts_of_the_verdicts_in_the_tables():
    rows, page = _page()
    summary = page.split("\n\n")[1]
    assert summary == ledger.summary(rows) and 3 <= summary.count(". ") + 1 <= 6
    full = {part: _entries(_section(page, part)) for part in ("Part I:", "Part II:")}
    in_tables = [VERDICT_BADGE.search(e)[1] for part in full.values() for e in part]
    overall = summary.split("Of all ")[1].split(". ")[0]
    assert _counts(overall) == {s: in_tables.count(s) for s in set(in_tables)}
    assert f"This page checks {len(in_tables)} claims" in summary
    for part, key in (("Part I", "goel2026"), ("Part II", "frangi2026")):
        assert f"{len(full[part + ':'])} of {{cite}}`{key}` ({part})" in summary
    listed = _table_rows(_section(page, "Headline claims"))
    headline = summary.split("Of these, ")[1].split(". ")[0]
    badges = [b for r in listed for b in VERDICT_BADGE.findall(r)]
    assert _counts(headline) == {s: badges.count(s) for s in set(badges)}
    assert f"The {len(badges)} headline claims" in summary
    # the counts table under the summary: per part, the headline claims and all
    table = re.search(r"```\{list-table\}\n:header-rows: 1\n:class: ledger-counts\n\n(.*?)\n```",
                      page, flags=re.S)[1]
    header, *lines = re.split(r"^\* - ", table, flags=re.M)[1:]
    columns = VERDICT_BADGE.findall(header)
    counted = {line.split("\n")[0]: [int(n) for n in re.findall(r"^  - (\d+)$", line, flags=re.M)]
               for line in lines}
    by_part = {"Part I": full["Part I:"], "Part II": full["Part II:"]}
    for name, numbers in counted.items():
        entries = next((v for k, v in by_part.items() if name.startswith(k + ",")), None)
        if name == "all":
            entries = full["Part I:"] + full["Part II:"]
        elif name == "headline claims":
            entries = [e for part in full.values() for e in part if HEADLINE in e]
        found = [VERDICT_BADGE.search(e)[1] for e in entries]
        assert numbers == [found.count(s) for s in columns] + [len(found)], name


def test_headline_marks_are_checked(tmp_path):
    base = {"paper": 1, "notebook": "notebooks/ch09_test.ipynb", "section": "S", "evidence": "S"}
    source = {**base, "id": "a", "claim": "a", "label": "[summary]", "headline": True,
              "short": "a"}
    choice = {**base, "id": "b", "claim": "b", "label": "[choice]"}
    cases = {"must both be headline rows or neither": [source, choice],
             "needs a short name": [{**source, "short": ""}],
             "headline must be true or absent": [{**source, "headline": "yes"}]}
    for message, claims in cases.items():
        path = tmp_path / "claims.yml"
        path.write_text(yaml.safe_dump({"claims": claims}))
        with pytest.raises(ValueError, match=message):
            ledger.load_claims(path)
    path.write_text(yaml.safe_dump({"claims": [source, {**choice, "headline": True,
                                                        "short": "b"}]}))
    assert [c["id"] for c in ledger.load_claims(path)["claims"] if c.get("headline")] == ["a", "b"]


def test_printed_verdicts_agree_with_their_numbers_and_thresholds():
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    printed = [p for path in notebooks for p in ledger.printed_verdicts(path)]
    assert printed, "no chapter prints a verdict line"
    problems = [f"{p.notebook} cell {p.cell}: {problem}"
                for p in printed for problem in ledger.inconsistencies(p.verdict)]
    assert problems == []


_values = st.lists(st.floats(-1e4, 1e4, allow_nan=False).filter(lambda x: abs(x) > 1e-6),
                   min_size=1, max_size=4)


@settings(deadline=None, max_examples=150)
@given(values=_values, threshold=st.floats(-1e3, 1e3), direction=st.sampled_from(["<", "<=", ">", ">="]),
       slack=st.one_of(st.none(), st.floats(0.1, 100.0)), spread=st.floats(0.0, 1.0))
def test_a_record_reads_back_as_the_same_verdict(values, threshold, direction, slack, spread):
    partial = None if slack is None else threshold + (slack if direction in ("<", "<=") else -slack)
    verdict = verdicts.verdict("a claim: with a colon", values, threshold, direction=direction,
                               partial=partial, quantity="q at k = 3", spread=spread,
                               labels=[f"seed {i}" for i in range(len(values))])
    back = verdicts.Verdict.from_record(json.loads(json.dumps(verdict.record())))
    assert back == verdict and back.measurements == verdict.measurements
    assert ledger.inconsistencies(back) == []
    assert [m.name for m in back.measurements] == [f"q at k = 3 seed {i}" for i in range(len(values))]
    # the same numbers under any other status are caught
    for status in (verdicts.REPRODUCED, verdicts.PARTLY, verdicts.NOT_REPRODUCED):
        if status != verdict.status:
            assert ledger.inconsistencies(dataclasses.replace(verdict, status=status))


def test_inconsistent_records_are_caught():
    passing = verdicts.verdict("c", 0.3, 0.5)
    failing = verdicts.verdict("c", 0.7, 0.5)
    bad = [
        dataclasses.replace(passing, status=verdicts.NOT_REPRODUCED),       # 0.3 <= 0.5 passes
        dataclasses.replace(failing, measurements=(dataclasses.replace(
            failing.measurements[0], level=2),), status=verdicts.REPRODUCED),  # 0.7 <= 0.5 fails
        dataclasses.replace(verdicts.combine("c", [passing, failing]),
                            status=verdicts.REPRODUCED),                     # combined: partly
        verdicts.Verdict("c", verdicts.REPRODUCED, "looks fine to me"),      # no numbers at all
    ]
    for verdict in bad:
        assert ledger.inconsistencies(verdict), verdict
    good = [passing, failing, verdicts.combine("c", [passing, failing]),
            verdicts.combine("c", [passing, verdicts.not_testable("z", "no data")]),
            verdicts.not_testable("c", "no data")]
    for verdict in good:
        assert ledger.inconsistencies(verdict) == [], verdict


def _verdict_output(rows: list[tuple[str, verdicts.Verdict]]) -> dict:
    """The output a shown VerdictTable of ``rows`` leaves in a notebook."""
    bundle = verdicts.verdict_table(rows)._repr_mimebundle_()
    return {"output_type": "display_data", "metadata": {}, "data": bundle}


def _notebook(cells: list[tuple[str, object]]) -> dict:
    """A minimal notebook: ("md", text), ("code", source) and ("verdicts", rows) cells, the
    last showing a VerdictTable of rows (label, Verdict)."""
    out = []
    for kind, content in cells:
        if kind == "md":
            out.append({"cell_type": "markdown", "metadata": {}, "source": content})
        else:
            outputs = [_verdict_output(content)] if kind == "verdicts" else []
            out.append({"cell_type": "code", "metadata": {}, "execution_count": 1,
                        "source": "" if kind == "verdicts" else content, "outputs": outputs})
    return {"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def test_generator_reports_missing_misplaced_and_unlisted_verdicts(tmp_path):
    (tmp_path / "notebooks").mkdir()
    chapter = _notebook([("md", "# Chapter 9: Test\n## Setup"), ("code", "x = 1"),
                         ("md", "## Claims"),
                         ("verdicts", [("[summary]", verdicts.verdict("a", 1, 2, quantity="v")),
                                       ("[abstract]", verdicts.verdict("unlisted", 3, 2))]),
                         ("md", "## Later"), ("verdicts", [("", verdicts.verdict("b", 1, 2))])])
    (tmp_path / "notebooks" / "ch09_test.ipynb").write_text(json.dumps(chapter))
    base = {"paper": 1, "label": "[summary]", "notebook": "notebooks/ch09_test.ipynb",
            "section": "Claims", "evidence": "Setup"}
    data = {"claims": [{**base, "id": "a", "claim": "a"}, {**base, "id": "b", "claim": "b"},
                       {**base, "id": "c", "claim": "c"},
                       {**base, "id": "d", "claim": "d", "not_yet_tested": "no data"}]}
    rows, problems = ledger.ledger_rows(data, root=tmp_path)
    text = "\n".join(problems)
    assert "'unlisted'" in text                                  # labelled, not in the file
    assert "claim b: printed in section 'Later', not in 'Claims'" in text
    assert "claim c: no cell of ch09_test.ipynb shows a verdict" in text
    assert "claim a" not in text and "claim d" not in text
    assert [r.printed is not None for r in rows] == [True, False, False, False]
    assert "not yet tested" in ledger.render(rows) and "no data" in ledger.render(rows)


def test_every_claim_comes_from_a_design_note_bullet_and_the_page_is_in_the_toc():
    cited = {cid for bullet in CLAIMS["design_notes"] for cid in bullet.get("claims", [])}
    assert cited == {claim["id"] for claim in CLAIMS["claims"]}
    parts = {part["caption"]: [entry["file"] for entry in part["chapters"]]
             for part in yaml.safe_load((ROOT / "_toc.yml").read_text())["parts"]}
    captions = list(parts)
    report = parts["Reproduction report"]          # after Part III, before the back matter
    assert captions.index("Reproduction report") == captions.index("Back matter") - 1
    assert captions[captions.index("Reproduction report") - 1].startswith("Part III")
    assert report[0] == "book/ledger"                 # the ledger opens the report
    assert report[1:] == [f"notebooks/{p.stem}" for p in
                          sorted((ROOT / "notebooks").glob("report_*.ipynb"))]


def design_note_bullets(text: str) -> list[tuple[int, str]]:
    """(line number, first line) of every bullet that states what a source says: each bullet
    of a "## What the sources state" section, and any other bullet that opens with [seed] or
    [abstract]."""
    found, in_sources = [], False
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("## "):
            in_sources = line.startswith("## What the sources state")
        if line.startswith("- ") and (in_sources or re.match(r"- \[(seed|abstract)", line)):
            found.append((number, line[2:].rstrip()))
    return found


def test_design_note_claims_are_all_in_the_claims_file():
    if not DESIGN.is_dir():
        pytest.skip(f"the design notes are not available at {DESIGN} (a clean clone has only "
                    "the repository); the claims file's list of design-note bullets is checked "
                    "where they are")
    listed = {(b["note"], b["line"]): b["text"] for b in CLAIMS["design_notes"]}
    notes = sorted({b["note"] for b in CLAIMS["design_notes"]})
    assert {p.name for p in DESIGN.glob("paper*.md")} == set(notes)
    found = {(note, number): first for note in notes
             for number, first in design_note_bullets((DESIGN / note).read_text())}
    missing = {key: first for key, first in found.items() if listed.get(key) != first}
    stale = {key: text for key, text in listed.items() if found.get(key) != text}
    assert not missing, f"design-note bullets not in book/claims.yml (note, line): {missing}"
    assert not stale, f"book/claims.yml names bullets the notes no longer have: {stale}"
    assert len(found) >= 15 and np.all([text.strip() for text in found.values()])


def _verify(tmp_path, stored: verdicts.Verdict, fresh: verdicts.Verdict,
            capsys) -> tuple[int, str]:
    """--verify of a one-claim ledger whose chapter showed ``stored`` when stored and
    ``fresh`` when executed again; returns the exit status and what it printed."""
    roots = {"stored": stored, "fresh": fresh}
    claims = {"claims": [{"id": "a", "claim": stored.claim, "paper": 1, "label": "[summary]",
                          "notebook": "notebooks/ch09_test.ipynb", "section": "Claims",
                          "evidence": "Claims"}],
              "design_notes": [{"note": "n.md", "line": 1, "text": "t", "claims": ["a"]}]}
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "claims.yml").write_text(yaml.safe_dump(claims))
    for name, verdict in roots.items():
        (tmp_path / name / "notebooks").mkdir(parents=True)
        chapter = _notebook([("md", "# Chapter 9: Test\n## Claims"),
                             ("verdicts", [("[summary]", verdict)])])
        (tmp_path / name / "notebooks" / "ch09_test.ipynb").write_text(json.dumps(chapter))
    options = ["--claims", str(tmp_path / "claims.yml"), "--out", str(tmp_path / "ledger.md")]
    assert ledger.main([*options, "--root", str(tmp_path / "stored")]) == 0
    capsys.readouterr()
    status = ledger.main(["--verify", *options, "--stored", str(tmp_path / "stored"),
                          "--root", str(tmp_path / "fresh")])
    return status, capsys.readouterr().err


def _a(values: list[float], spread: float | list[float] = 0.0) -> verdicts.Verdict:
    return verdicts.verdict("a", values, 80, quantity="log10 crossover,",
                            labels=["n=20 d=5 (interpolates)", "n=20 d=3"], fmt=".2f",
                            spread=spread)


def test_verify_passes_on_the_same_verdicts(tmp_path, capsys):
    assert _verify(tmp_path, _a([5.62, 13.42]), _a([5.62, 13.42]), capsys) == (0, "")


def test_verify_names_the_claim_and_the_value_that_moved(tmp_path, capsys):
    status, err = _verify(tmp_path, _a([5.62, 13.42]), _a([5.62, 13.45]), capsys)
    assert status == 1
    assert "a: log10 crossover, n=20 d=3 = 13.42 stored, = 13.45 here (spread 0: as printed)" in err
    assert "d=5" not in err


def test_verify_names_a_changed_verdict(tmp_path, capsys):
    status, err = _verify(tmp_path, _a([5.62, 13.42]), _a([5.62, 93.42]), capsys)
    assert status == 1 and "a: verdict 'reproduced' stored, 'partly reproduced' here" in err


def test_verify_accepts_a_value_within_its_recorded_spread_only(tmp_path, capsys):
    """An interpolating instance's crossover depends on which global minimum the solver
    reaches (5.62, 5.59 and 5.76 under three CPU settings): its spread is recorded, so 5.62 ->
    5.59 is the same measurement; beyond the spread it is not."""
    spread = [0.3, 0.0]
    assert _verify(tmp_path / "1", _a([5.62, 13.42], spread), _a([5.59, 13.42], spread),
                   capsys) == (0, "")
    status, err = _verify(tmp_path / "2", _a([5.62, 13.42], spread), _a([6.02, 13.42], spread),
                          capsys)
    assert status == 1 and "(interpolates) = 5.62 stored, = 6.02 here (spread 0.3)" in err


def test_a_choice_row_and_a_shared_cause_are_rendered_with_a_link(tmp_path):
    (tmp_path / "notebooks").mkdir()
    chapter = _notebook([("md", "# Chapter 9: Test\n## Claims"),
                         ("verdicts", [("[summary]", verdicts.verdict("a", 1, 2)),
                                       ("[choice]", verdicts.verdict("a strictly", 3, 2))]),
                         ("md", "## Why")])
    (tmp_path / "notebooks" / "ch09_test.ipynb").write_text(json.dumps(chapter))
    base = {"paper": 1, "notebook": "notebooks/ch09_test.ipynb", "section": "Claims",
            "evidence": "Claims"}
    cause = {"text": "one reason", "notebook": "notebooks/ch09_test.ipynb", "section": "Why"}
    data = {"claims": [{**base, "id": "a", "claim": "a", "label": "[summary]"},
                       {**base, "id": "b", "claim": "a strictly", "label": "[choice]",
                        "cause": cause}]}
    rows, problems = ledger.ledger_rows(data, root=tmp_path)
    assert problems == []
    page = ledger.render(rows)
    assert "**\\[choice\\]** a strictly" in page or "**[choice]** a strictly" in page
    assert 'ch09_test.html#why">one reason</a>' in page
    rows, problems = ledger.ledger_rows(
        {"claims": [{**data["claims"][1], "cause": {**cause, "section": "Nowhere"}}]},
        root=tmp_path)
    assert any("its cause links to no heading 'Nowhere'" in p for p in problems)


_EVIDENCE = re.compile(r'evidence: (?:\{numref\}`Fig\. %s in [^`<]+ <(?P<figure>[^>`]+)>`'
                       r'|<a href="[^"]+">(?:chapter|report on chapter) [^:<]+: '
                       r'(?P<title>[^<]*)</a>)')


def test_evidence_links_say_which_figure_or_section():
    """Each row's evidence is a figure reference (rendered "Fig. 5.3 in chapter 5") to a figure
    of the evidence chapter, or a link titled by its page ("chapter 4", "report on chapter 5")
    and the evidence section's heading; never a bare word."""
    rows, page = _page()
    found = [m.groupdict() for m in _EVIDENCE.finditer(page)]
    assert len(found) == len(rows), "a row without a recognisable evidence link"
    figures = sum(f["figure"] is not None for f in found)
    assert 0 < figures < len(rows), f"{figures} of {len(rows)} rows cite a figure"
    for row, link in zip(rows, found):
        evidence = ROOT / ledger.evidence_notebook(row.claim)
        if link["figure"] is not None:
            names = {c.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
                     for c in json.loads(evidence.read_text())["cells"]}
            assert link["figure"] in names, f"{row.claim['id']}: no figure {link['figure']}"
        else:
            assert link["title"] == row.claim["evidence"], row.claim["id"]


def test_evidence_cites_the_sections_named_figure_else_its_heading(tmp_path):
    (tmp_path / "notebooks").mkdir()
    image = {"output_type": "display_data", "metadata": {}, "data": {"image/png": "iVBOR"}}
    drawn = _notebook([("md", "# Chapter 9: Test\n## Claims"),
                       ("verdicts", [("[summary]", verdicts.verdict(x, 1, 2)) for x in "abc"]),
                       ("md", "## Unnamed figure"), ("code", ""), ("md", "## Named figure"),
                       ("code", ""), ("code", "")])
    drawn["cells"][3]["outputs"] = [image]                                  # no name
    drawn["cells"][5]["outputs"] = []
    drawn["cells"][5]["metadata"] = {"mystnb": {"figure": {"name": "fig-not-drawn"}}}
    drawn["cells"][6]["outputs"] = [image]
    drawn["cells"][6]["metadata"] = {"mystnb": {"figure": {"name": "fig-drawn"}}}
    (tmp_path / "notebooks" / "ch09_test.ipynb").write_text(json.dumps(drawn))
    base = {"paper": 1, "label": "[summary]", "notebook": "notebooks/ch09_test.ipynb",
            "section": "Claims"}
    data = {"claims": [{**base, "id": x, "claim": x, "evidence": evidence}
                       for x, evidence in zip("abc", ("Named figure", "Unnamed figure",
                                                      "Claims"))]}
    rows, problems = ledger.ledger_rows(data, root=tmp_path)
    assert problems == []
    assert [m.groupdict() for m in _EVIDENCE.finditer(ledger.render(rows))] == [
        {"figure": "fig-drawn", "title": None}, {"figure": None, "title": "Unnamed figure"},
        {"figure": None, "title": "Claims"}]


def test_the_ledger_as_data_is_strict_json_with_every_claim():
    rows, _ = _page()
    text = json.dumps(ledger.ledger_records(rows), allow_nan=False)
    data = json.loads(text)
    assert [c["id"] for c in data["claims"]] == [c["id"] for c in CLAIMS["claims"]]
    for row, entry in zip(rows, data["claims"]):
        if row.printed is not None:
            assert entry["verdict"]["status"] == row.printed.verdict.status
            assert len(entry["verdict"]["measurements"]) == len(row.printed.verdict.measurements)
