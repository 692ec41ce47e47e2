"""The student and instructor editions built by scripts/editions.py from the one source.

The student edition must contain no solution text (chapter solutions, problem-set reference
solutions), keep every code cell unchanged, build as HTML with warnings as errors, and its
notebooks must execute on a fresh kernel from a directory outside the repository.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("editions", ROOT / "scripts" / "editions.py")
editions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(editions)

SOURCES = editions.chapter_notebooks()
SOLUTION_BLOCK = re.compile(r"^(`{3,}|:{3,})\{admonition\} Solution.*?\n(.*?)^\1\s*$",
                            re.MULTILINE | re.DOTALL)


def _solution_bodies(path: Path) -> list[str]:
    """The text of every Solution block of a notebook's markdown cells."""
    cells = json.loads(path.read_text())["cells"]
    return [match.group(2) for cell in cells if cell["cell_type"] == "markdown"
            for match in SOLUTION_BLOCK.finditer("".join(cell["source"]))]


def _code(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "code"]


def test_strip_solutions_removes_only_the_blocks() -> None:
    text = ("Exercise 1.\n\n```{admonition} Solution\n:class: dropdown\nsecret one\n```\n\n"
            "Exercise 2.\n\n::::{admonition} Solution\n:class: dropdown\n```python\nx = 1\n```\n"
            "::::\n\nAfter.\n")
    stripped, removed = editions.strip_solutions(text)
    assert removed == 2
    assert stripped == "Exercise 1.\n\nExercise 2.\n\nAfter.\n"


def test_strip_solutions_rejects_an_unclosed_block() -> None:
    with pytest.raises(ValueError, match="unclosed Solution block"):
        editions.strip_solutions("```{admonition} Solution\n:class: dropdown\nno end\n")


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    """The student edition's notebooks and problem sets, in a directory outside the repository."""
    return editions.build("student", tmp_path_factory.mktemp("editions"), run_tests=False)


@pytest.fixture(scope="module")
def student_html(student) -> Path:
    """The student edition built as HTML (warnings are errors)."""
    return editions.build_html(student)


def test_sources_mark_solutions() -> None:
    assert sum(len(_solution_bodies(path)) for path in SOURCES) >= 30


def test_student_notebooks_have_no_solution_text(student) -> None:
    for source in SOURCES:
        copy = student / "notebooks" / source.name
        text = copy.read_text()
        assert "{admonition} Solution" not in text, f"{source.name}: a Solution block is left"
        for body in _solution_bodies(source):
            lines = [line.strip() for line in body.splitlines()
                     if len(line.strip()) > 20 and not line.startswith(":")]
            for line in lines:
                assert json.dumps(line)[1:-1] not in text, (
                    f"{source.name}: solution text left: {line[:80]!r}")
        assert _code(copy) == _code(source), f"{source.name}: code cells were changed"


@pytest.mark.xdist_group("editions_html")
def test_student_html_has_no_solutions(student_html) -> None:
    pages = list(student_html.rglob("*.html"))
    chapters = [page for page in pages if page.parent.name == "notebooks"]
    assert len(chapters) == len(SOURCES), sorted(page.name for page in chapters)
    for page in chapters:
        html = page.read_text()
        assert "Exercises" in html or page.stem.startswith("appendix"), page.name
        assert not re.search(r'class="[^"]*\badmonition\b[^"]*\bdropdown\b', html), (
            f"{page.name}: a dropdown admonition is left")
        assert ">Solution<" not in html, f"{page.name}: a Solution title is left"


def test_student_problem_sets_have_stubs_only(student) -> None:
    sets = sorted((student / "problem_sets").glob("*/*.ipynb"))
    assert len(sets) >= 3
    for path in sets:
        text = path.read_text()
        assert "BEGIN SOLUTION" not in text and "grader.check(" in text, path.name


@pytest.mark.parametrize("name", [path.name for path in SOURCES])
def test_student_notebook_executes(student, name: str) -> None:
    path = student / "notebooks" / name
    editions.execute_notebooks([path])
    outputs = [o for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"
               for o in c.get("outputs", [])]
    assert not [o for o in outputs if o.get("output_type") == "error"]
    assert outputs, f"{name}: executed but produced no output"
