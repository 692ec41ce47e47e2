"""The teaching guide's plan fits the book (book/teaching_guide.md).

The seven-week plan schedules as many sessions as there are slide decks, one chapter each, in
the order of book/slides.yml; every chapter, 6b included, has a row in the objectives and
workload table and in the core-path table; the table's prose-word counts are within 15% of the
chapters' (counted as tests/test_teaching_layout.py counts them), its reading times are those
counts at the reading rate the guide states, and its run times are the appendix's measured
ones; grading, sandboxing and tooling sit in the instructor appendix at the end.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
sys.path.insert(0, str(ROOT / "tests"))
import slides  # noqa: E402
from test_teaching_layout import prose_words  # noqa: E402

GUIDE = (ROOT / "book" / "teaching_guide.md").read_text()
CHAPTERS = sorted((ROOT / "notebooks").glob("ch*.ipynb"))


def number(stem: str) -> str:
    """'ch06b_finite_sample' -> '6b'."""
    return stem.split("_")[0].removeprefix("ch").lstrip("0")


def section(heading: str) -> str:
    match = re.search(rf"^#+ {re.escape(heading)}\n(.*?)(?=^## |\Z)", GUIDE, re.S | re.M)
    assert match, f"no section {heading!r} in the teaching guide"
    return match.group(1)


def table_rows(text: str) -> dict[str, list[str]]:
    """Rows of the markdown tables in ``text`` whose first cell starts with a chapter number."""
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        match = re.match(r"(\d+b?)\. ", cells[0]) if line.startswith("|") else None
        if match:
            rows[match.group(1)] = cells
    return rows


def test_sessions_match_the_decks() -> None:
    plan = section("A seven-week module")
    sessions = re.findall(r"Session (\d+): chapter (\d+b?)", plan)
    decks = slides.spec()
    assert [int(n) for n, _ in sessions] == list(range(1, len(decks) + 1)), sessions
    assert [chapter for _, chapter in sessions] == [number(e["chapter"]) for e in decks.values()]
    assert f"{len(sessions)} sessions" in plan.replace("Thirteen", "13"), (
        "the plan must say how many sessions it schedules")


def test_every_chapter_has_objectives_workload_and_a_core_path() -> None:
    workload = table_rows(section("Learning objectives and workload, chapter by chapter"))
    core = table_rows(section("Core path and optional sections"))
    wanted = [number(path.stem) for path in CHAPTERS]
    assert sorted(workload) == sorted(wanted), sorted(workload)
    assert sorted(core) == sorted(wanted), sorted(core)


def test_reading_times_follow_the_word_counts() -> None:
    text = section("Learning objectives and workload, chapter by chapter")
    rate = int(re.search(r"\*\*(\d+) words a minute\*\*", text).group(1))
    workload = table_rows(text)
    runs = table_rows(section("How long each notebook takes to run"))
    for path in CHAPTERS:
        row = workload[number(path.stem)]
        words, reading, run = int(row[2]), int(row[3]), float(row[4])
        cells = json.loads(path.read_text())["cells"]
        measured = sum(prose_words("".join(c["source"])) for c in cells if c["cell_type"] == "markdown")
        assert abs(words / measured - 1) <= 0.15, (
            f"{path.stem}: the guide says {words} prose words, the chapter has {measured}; "
            "update the workload table")
        assert reading == round(words / rate), f"{path.stem}: {words} words at {rate} a minute"
        assert run == float(runs[number(path.stem)][1]), f"{path.stem}: run time"


def test_instructor_material_is_an_appendix_at_the_end() -> None:
    headings = re.findall(r"^(#+) (.+)$", GUIDE, re.M)
    top = [title for level, title in headings if level == "##"]
    assert top[-1] == "Instructor appendix", top
    after = [title for _, title in headings[[t for _, t in headings].index("Instructor appendix"):]]
    for title in ("Grading", "Why otter-grader", "Handing out: the student bundle",
                  "How long each notebook takes to run"):
        assert title in after, f"{title!r} is not in the instructor appendix"
