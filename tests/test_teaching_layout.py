"""A chapter teaches before it audits: its prose is broken up by figures and display
equations, its visible code is short (the code that draws a figure is folded), and each
paper's mechanism has a schematic.

Measured on the chapters' sources and stored outputs (the teaching layer; the Reproduction
report pages are exempt). Prose words are the words of the markdown cells outside display
mathematics, code and HTML; a figure is an image output of a code cell."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("ch*.ipynb"))

#: The targets: about 800 prose words between pictures or displays, about 700 per figure,
#: no visible code cell longer than 15 non-blank lines.
MAX_PROSE_RUN = 850
MAX_WORDS_PER_FIGURE = 750
MAX_VISIBLE_CODE_LINES = 15
#: Chapters written as lectures: a prose budget for the teaching layer.
PROSE_BUDGET = {"ch05_experiment": 2600, "ch06_scaling": 3100, "ch10_langevin": 3100}
FOLDED = {"hide-input", "hide-cell", "remove-input", "remove-cell"}
DISPLAY = re.compile(r"(\$\$.*?\$\$(?: \([\w-]+\))?|```\{math\}.*?```)", re.S)


def prose_words(markdown: str) -> int:
    """Words of running text: display math, code blocks and HTML removed, inline math one word."""
    text = DISPLAY.sub(" ", markdown)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    text = re.sub(r"\$[^$]+\$", " x ", text)
    text = re.sub(r"<[^>]+>", " ", text)
    return len(re.findall(r"[A-Za-z0-9][\w'’-]*", text))


@dataclass
class Layout:
    prose: int = 0
    figures: int = 0
    displays: int = 0
    longest_run: int = 0
    long_code_cells: list[tuple[int, int]] = field(default_factory=list)
    open_drawing_cells: list[int] = field(default_factory=list)
    schematics: list[str] = field(default_factory=list)


def layout(path: Path) -> Layout:
    """Walk the cells in order, counting prose words since the last figure or display."""
    found, run = Layout(), 0
    for index, cell in enumerate(json.loads(path.read_text())["cells"]):
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            for piece in DISPLAY.split(source):
                if DISPLAY.fullmatch(piece):
                    found.displays += 1
                    found.longest_run, run = max(found.longest_run, run), 0
                else:
                    words = prose_words(piece)
                    found.prose += words
                    run += words
            continue
        if cell["cell_type"] != "code":
            continue
        tags = set(cell["metadata"].get("tags", []))
        lines = sum(bool(line.strip()) for line in source.splitlines())
        if not tags & FOLDED and lines > MAX_VISIBLE_CODE_LINES:
            found.long_code_cells.append((index, lines))
        for output in cell.get("outputs", []):
            if "image/png" in output.get("data", {}):
                found.figures += 1
                found.longest_run, run = max(found.longest_run, run), 0
                if not tags & FOLDED and index not in found.open_drawing_cells:
                    found.open_drawing_cells.append(index)
        caption = cell["metadata"].get("mystnb", {}).get("figure", {}).get("caption", "")
        if caption.startswith("Schematic"):
            found.schematics.append(cell["metadata"]["mystnb"]["figure"]["name"])
    found.longest_run = max(found.longest_run, run)
    return found


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_prose_is_broken_up_by_figures_and_displays(path: Path) -> None:
    found = layout(path)
    assert found.longest_run <= MAX_PROSE_RUN, (
        f"{path.stem}: {found.longest_run} prose words in a row without a figure or a display "
        f"equation (at most {MAX_PROSE_RUN})")
    per_figure = found.prose / max(found.figures, 1)
    assert per_figure <= MAX_WORDS_PER_FIGURE, (
        f"{path.stem}: {found.prose} prose words for {found.figures} figures, "
        f"{per_figure:.0f} per figure (at most {MAX_WORDS_PER_FIGURE})")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_visible_code_is_short(path: Path) -> None:
    long_cells = layout(path).long_code_cells
    assert not long_cells, (f"{path.stem}: visible code cells (index, non-blank lines) over "
                            f"{MAX_VISIBLE_CODE_LINES} lines: {long_cells}; fold drawing code, "
                            "move computation into attnlib")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_drawing_cells_are_folded(path: Path) -> None:
    """A code cell that draws a figure shows the figure and folds its code, however short."""
    open_cells = layout(path).open_drawing_cells
    assert not open_cells, (f"{path.stem}: code cells drawing a figure with their code open "
                            f"(cell index): {open_cells}; tag them hide-input")


@pytest.mark.parametrize("stem", sorted(PROSE_BUDGET))
def test_lecture_chapters_keep_their_prose_budget(stem: str) -> None:
    found = layout(NOTEBOOKS / f"{stem}.ipynb")
    assert found.prose <= PROSE_BUDGET[stem], (
        f"{stem}: {found.prose} prose words in the teaching layer (at most {PROSE_BUDGET[stem]}; "
        "the audit belongs on its Reproduction report page)")


def test_chapter_5_opens_with_its_explanation() -> None:
    """Chapter 5 states its rate as display equations and shows the population against
    finite-sample figure before about five screens of text (about 1,000 prose words)."""
    path = NOTEBOOKS / "ch05_experiment.ipynb"
    assert layout(path).displays >= 2
    words_before = 0
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] == "markdown":
            words_before += prose_words("".join(cell["source"]))
        elif any("image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            break
    assert words_before <= 1000, f"chapter 5's first figure comes after {words_before} words"


def test_each_mechanism_has_a_schematic() -> None:
    """Schematics (captions starting "Schematic") of the layer, the manifold of minima,
    Algorithm 1, the Villani chain, the orbit with its crossover radius, and the bridge."""
    where = {path.stem.split("_")[0]: layout(path).schematics for path in CHAPTERS}
    required = [("ch01",), ("ch02", "ch03"), ("ch04",), ("ch07",), ("ch08",), ("ch12",)]
    missing = [" or ".join(group) for group in required
               if not any(where.get(chapter) for chapter in group)]
    assert not missing, f"no schematic in {missing}"
    assert sum(len(names) for names in where.values()) >= 6


def test_the_theorems_are_stated_as_display_mathematics() -> None:
    """Paper 1's Theorem 2 in chapter 1; paper 2's Theorems 3.1-3.3 in chapter 7."""
    for stem, theorems in (("ch01_model", ["Theorem 2"]),
                           ("ch07_gibbs_poincare_villani",
                            ["Theorem 3.1", "Theorem 3.2", "Theorem 3.3"])):
        cells = json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())["cells"]
        markdown = ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]
        for theorem in theorems:
            assert any(theorem in text and DISPLAY.search(text) for text in markdown), (
                f"{stem}: no markdown cell states {theorem} with a display equation")


def test_the_measure_counts_what_it_names() -> None:
    """The instrument on a small known notebook: two runs of prose split by a display."""
    text = "one two three $x$ four\n\n$$\na = b\n$$ (eq-x)\n\nfive six ```code here```"
    assert prose_words(text) == 7
    assert [prose_words(p) for p in DISPLAY.split(text) if not DISPLAY.fullmatch(p)] == [5, 2]


# ---------------------------------------------------------------------------------------------
# The reading path: the answer first, the audit's labels out of the teaching sentences, code
# that shows the idea.
# ---------------------------------------------------------------------------------------------

#: An Overview of about 150 words (what you will learn and why, the answer, what you need).
MAX_OVERVIEW_WORDS = 170
#: Prose words before the first content section: the title, the Overview and two folded boxes
#: (about 1.5 screens at 1280 x 800).
MAX_WORDS_BEFORE_FIRST_SECTION = 230
#: Sentences carrying an audit marker (a source label, a verdict, the ledger, a stored run or a
#: replay) at most this fraction of a chapter's teaching sentences.
MAX_AUDIT_SENTENCES = 0.08
#: Open code cells: median non-blank lines, and characters per line (the code box holds 75
#: characters at 1280 px; longer lines wrap into false indentation).
MAX_MEDIAN_OPEN_LINES = 8
MAX_OPEN_LINE_CHARS = 75
AUDIT = re.compile(r"\[(?:summary|abstract|derived|choice|seed)[^\]]*\]|\breproduc|\bverdict"
                   r"|\bledger\b|\bstored run|\breplay", re.I)
#: Folded boxes whose text is the audit's, not the teaching prose: the sources' statements, the
#: book's choices, the claims list and the reproduction checks.
AUDIT_BOXES = re.compile(r"^(:{3,})\{(?:dropdown|admonition)\}\s*(?:What the papers claim|This "
                         r"book's choices|The papers' claims|The claims and their verdicts|"
                         r"Reproduction check)[^\n]*\n.*?^\1\s*$", re.M | re.S)
#: Output text of a check of code against a closed form (a deviation below a tolerance).
IDENTITY_CHECK = re.compile(r"(?:<|<=|≤)\s*\d(?:\.\d+)?e-\d")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _open_code(path: Path) -> list[dict]:
    return [cell for cell in _cells(path) if cell["cell_type"] == "code"
            and not set(cell["metadata"].get("tags", [])) & FOLDED]


def _sentences(markdown: str) -> list[str]:
    text = AUDIT_BOXES.sub(" ", markdown)
    text = DISPLAY.sub(" ", text)
    text = re.sub(r"```.*?```", " ", text, flags=re.S)
    return [s for s in re.split(r"(?<=[.!?])\s+", text) if prose_words(s) >= 3]


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_overview_is_short_and_the_first_section_comes_early(path: Path) -> None:
    """One Overview of about 150 words (with the learning objectives and the time), no label
    legend, no "For a researcher" bullets, and the first content section right after it."""
    cells = [c for c in _cells(path) if c["cell_type"] == "markdown"]
    texts = ["".join(c["source"]) for c in cells]
    overview = [t for t in texts if re.search(r"\{admonition\}\s*Overview|^## Overview", t, re.M)]
    assert len(overview) == 1, f"{path.stem}: {len(overview)} Overview boxes"
    body = AUDIT_BOXES.sub(" ", overview[0])
    words = prose_words(body.split("Overview", 1)[1])
    assert words <= MAX_OVERVIEW_WORDS, f"{path.stem}: the Overview has {words} words"
    assert not any("For a researcher" in t for t in texts), path.stem
    assert not any("Learning objectives" in t for t in texts), f"{path.stem}: merge them"
    before = 0
    for text in texts:
        heading = re.search(r"^## (?!Overview)", text, re.M)
        before += prose_words(AUDIT_BOXES.sub(" ", text[:heading.start()] if heading else text))
        if heading:
            break
    assert before <= MAX_WORDS_BEFORE_FIRST_SECTION, (
        f"{path.stem}: {before} prose words before the first content section")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_the_audits_labels_stay_out_of_the_teaching_sentences(path: Path) -> None:
    sentences = [s for c in _cells(path) if c["cell_type"] == "markdown"
                 for s in _sentences("".join(c["source"]))]
    marked = [s for s in sentences if AUDIT.search(s)]
    share = len(marked) / max(len(sentences), 1)
    assert share <= MAX_AUDIT_SENTENCES, (
        f"{path.stem}: {len(marked)} of {len(sentences)} sentences ({share:.0%}) carry an audit "
        f"marker (at most {MAX_AUDIT_SENTENCES:.0%}); e.g. {marked[:2]}")


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.stem)
def test_open_code_shows_the_idea(path: Path) -> None:
    """Open cells are a few short lines; checks of code against closed forms are folded."""
    cells = _open_code(path)
    lengths = [sum(bool(line.strip()) for line in "".join(c["source"]).splitlines())
               for c in cells]
    if lengths:
        median = float(sorted(lengths)[len(lengths) // 2] if len(lengths) % 2 else
                       sum(sorted(lengths)[len(lengths) // 2 - 1:len(lengths) // 2 + 1]) / 2)
        assert median <= MAX_MEDIAN_OPEN_LINES, f"{path.stem}: median open cell {median} lines"
    long_lines = [(i, line) for i, c in enumerate(cells)
                  for line in "".join(c["source"]).splitlines() if len(line) > MAX_OPEN_LINE_CHARS]
    assert not long_lines, (f"{path.stem}: {len(long_lines)} open code lines over "
                            f"{MAX_OPEN_LINE_CHARS} characters, e.g. {long_lines[0][1]!r}")
    checks = [i for i, c in enumerate(cells) for o in c.get("outputs", [])
              if IDENTITY_CHECK.search("".join(o.get("text", "")) + "".join(
                  o.get("data", {}).get("text/plain", "")))]
    assert not checks, f"{path.stem}: open cells print identity checks (fold them): {checks}"


def test_the_new_schematics_exist() -> None:
    """Chapters 5, 10 and 11 draw their mechanism too: at least 11 schematics in all."""
    where = {path.stem.split("_")[0]: layout(path).schematics for path in CHAPTERS}
    assert all(where.get(chapter) for chapter in ("ch05", "ch10", "ch11")), where
    assert sum(len(names) for names in where.values()) >= 11


def test_the_reading_path_instruments_count_what_they_name() -> None:
    boxed = ("Teaching sentence one here. A **[summary]** label sits here.\n\n"
             ":::{dropdown} What the papers claim\nThe sources say **[summary]** this.\n:::\n")
    assert [bool(AUDIT.search(s)) for s in _sentences(boxed)] == [False, True]
    assert IDENTITY_CHECK.search("max deviation < 1e-12") and not IDENTITY_CHECK.search("1e-3")
