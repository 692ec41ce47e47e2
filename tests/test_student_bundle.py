"""The student bundle's notebooks read like the book in JupyterLab (scripts/editions.py, issue 67).

jupyterlab-myst renders MyST but resolves no reference across notebooks, numbers figures and
equations 1, 2, ... per notebook and cites nothing from a .bib file, and no Jupyter front end
shows a caption kept in cell metadata. So the bundle's copies of the chapters get the book's
numbers (Fig. 1.5, (6b.2), Fig. R5.1) and citations as Markdown links into the bundle's HTML
edition, each figure's caption under it, the cells the book folds collapsed and a reference
list. These tests need no build: they transform the student edition in memory. The numbers are
checked against the rules of ``book/_ext/book_html.py`` by values read off a build of
6 December 2026 and, when ``ATTNBOOK_HTML`` names a built book (``scripts/test.sh`` step 3),
against every figure and equation number of that build and every link target in it.
tests/test_editions.py builds the bundle itself (with its ``html/`` and ``slides/``).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest

from test_numbering import _Numbers
from test_rendered_book import HTML_DIR

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("editions", ROOT / "scripts" / "editions.py")
editions = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(editions)

needs_html = pytest.mark.skipif(not HTML_DIR, reason="set ATTNBOOK_HTML to a built book "
                                "(scripts/test.sh does) to check numbers and links against it")
# Read off the HTML edition built from the student notebooks (every figure and equation number
# of that build agreed with book_targets); one of each kind of page and label.
BOOK_NUMBERS = {
    "fig-intro-paper1-defaults": "Fig. 1",        # the pages of no chapter count among
    "fig-main-ball": "Fig. 2",                    # themselves, in book order
    "fig-ch01-schematic": "Fig. 1.1",
    "fig-ch01-escape": "Fig. 1.5",
    "eq-ch01-theorem2": "(1.1)",                  # inside a dropdown: numbered all the same
    "eq-ch01-1": "(1.2)",
    "eq-ch08-8": "(8.10)",                        # in an exercise's statement
    "fig-ch06b-shared-keys": "Fig. 6b.4",
    "eq-ch06b-invariance": "(6b.2)",
    "fig-ch05-remedies": "Fig. R5.2",             # a Reproduction report page
    "fig-appendix-competitors": "Fig. A.2",
    "sec-ch04-spectral": "Spectral initialization",
}
LINK = re.compile(r"\]\((?P<href>[^)\s]+)\)")


@pytest.fixture(scope="module")
def student(tmp_path_factory) -> Path:
    """The student edition's notebooks (solutions removed), not yet made book-like."""
    out = tmp_path_factory.mktemp("student")
    editions.write_notebooks("student", out)
    return out / "notebooks"


@pytest.fixture(scope="module")
def targets(student):
    return editions.book_targets(student)


@pytest.fixture(scope="module")
def book_like(student, targets) -> dict[str, dict]:
    """Every student notebook made book-like, by name."""
    bib = editions.bibliography()
    return {path.name: editions.book_like_notebook(json.loads(path.read_text()),
                                                   f"notebooks/{path.stem}", *targets, bib)
            for path in sorted(student.glob("*.ipynb"))}


def _markdown(notebook: dict) -> list[str]:
    return ["".join(cell["source"]) for cell in notebook["cells"]
            if cell["cell_type"] == "markdown"]


def test_numbers_are_the_books(targets) -> None:
    found = {label: targets[0][label].text for label in BOOK_NUMBERS}
    assert found == BOOK_NUMBERS


def test_removing_solutions_changes_no_number(targets) -> None:
    """The bundle links into the student HTML: its numbers must be the full book's too."""
    assert targets == editions.book_targets(ROOT / "notebooks")


def test_roles_become_linked_text() -> None:
    targets = {"fig-a": editions.Target("notebooks/ch01_model", "fig-a", "Fig. 1.3"),
               "eq-b": editions.Target("notebooks/ch02_x", "equation-eq-b", "(2.4)"),
               "sec-c": editions.Target("notebooks/ch04_x", "sec-c", "Spectral start")}
    titles = {"book/notation": "Notation"}
    cited: list[str] = []
    text = ("{numref}`fig-a`, {numref}`Figure %s <fig-a>`, {eq}`eq-b`, {ref}`sec-c`, "
            "{ref}`the start <sec-c>`, {doc}`../book/notation`, {doc}`Ch. 2 <ch02_x>`, "
            "{cite}`goel2026`, {cite:t}`goel2026`, {cite:p}`frangi2026,tu2016`.")
    resolved = editions.resolve_roles(text, "notebooks/ch01_model", targets, titles,
                                      editions.bibliography(), cited)
    bibliography = "(../html/book/bibliography.html)"
    assert resolved == (
        "[Fig. 1.3](../html/notebooks/ch01_model.html#fig-a), "
        "[Figure 1.3](../html/notebooks/ch01_model.html#fig-a), "
        "[(2.4)](../html/notebooks/ch02_x.html#equation-eq-b), "
        "[Spectral start](../html/notebooks/ch04_x.html#sec-c), "
        "[the start](../html/notebooks/ch04_x.html#sec-c), "
        "[Notation](../html/book/notation.html), [Ch. 2](ch02_x.ipynb), "
        f"[[Goel et al., 2026]]{bibliography}, [Goel et al. (2026)]{bibliography}, "
        f"[(Frangi et al., 2026)]{bibliography}; [(Tu et al., 2016)]{bibliography}.")
    assert cited == ["goel2026", "frangi2026", "tu2016"]


def test_cite_labels_follow_the_author_count() -> None:
    entries = editions.bibliography().entries
    assert editions.cite_text(entries["villani2009"], "cite:t") == "Villani (2009)"
    assert editions.cite_text(entries["kingma2015"], "cite:p") == "(Kingma and Ba, 2015)"
    assert editions.cite_text(entries["schonemann1966"], "cite") == "[Schönemann, 1966]"


def test_labelled_equations_carry_the_books_number() -> None:
    targets = {"eq-b": editions.Target("notebooks/ch02_x", "equation-eq-b", "(2.4)")}
    text = "Text:\n\n   $$\n   a = b\n   $$ (eq-b)\n\nmore, and $x$ inline."
    assert editions.number_equations(text, targets) == (
        "Text:\n\n   ```{math}\n   :enumerator: 2.4\n   a = b\n   ```\n\nmore, and $x$ inline.")


def test_no_role_or_label_is_left(book_like) -> None:
    for name, notebook in book_like.items():
        for text in _markdown(notebook):
            assert not editions.ROLE.search(text), f"{name}: {editions.ROLE.search(text)[0]}"
            assert not editions._DISPLAY_LABEL.search(text), f"{name}: a $$ (label) is left"


def test_every_figure_has_its_caption_below_it(book_like, targets) -> None:
    checked = 0
    for name, notebook in book_like.items():
        cells = notebook["cells"]
        for cell, after in zip(cells, cells[1:]):
            figure = cell["metadata"].get("mystnb", {}).get("figure")
            if cell["cell_type"] != "code" or not figure:
                continue
            number = targets[0][figure["name"]].text
            caption = "".join(after["source"])
            assert after["cell_type"] == "markdown", f"{name}: no caption under {number}"
            assert caption.startswith(f"**{number}** "), caption[:80]
            assert figure["caption"][:30].split("{")[0] in caption, caption[:80]
            checked += 1
    assert checked >= 90


def test_folded_cells_are_collapsed_and_code_is_unchanged(book_like, student) -> None:
    collapsed = 0
    for name, notebook in book_like.items():
        source = json.loads((student / name).read_text())
        code = [c for c in notebook["cells"] if c["cell_type"] == "code"]
        assert [c["source"] for c in code] == [
            c["source"] for c in source["cells"] if c["cell_type"] == "code"], name
        for cell in code:
            tags = cell["metadata"].get("tags", [])
            hidden = cell["metadata"].get("jupyter", {})
            assert hidden.get("source_hidden", False) == bool(
                {"hide-input", "hide-cell"} & set(tags)), (name, tags, hidden)
            assert hidden.get("outputs_hidden", False) == bool(
                {"hide-output", "hide-cell"} & set(tags)), (name, tags, hidden)
            collapsed += bool(hidden)
    assert collapsed >= 150


def test_cited_works_are_listed_at_the_end(book_like) -> None:
    last = "".join(book_like["ch01_model.ipynb"]["cells"][-1]["source"])
    assert last.startswith("## References") and "**Goel et al. (2026)**" in last
    for name, notebook in book_like.items():
        cited = sum(text.count("(../html/book/bibliography.html)")
                    for text in _markdown(notebook)[:-1])
        listed = _markdown(notebook)[-1].startswith("## References")
        assert listed == bool(cited), name


def test_the_readme_says_where_the_book_and_slides_are() -> None:
    for where in ("html/index.html", "notebooks/", "slides/session01.html", "problem_sets/"):
        assert f"`{where}`" in editions.BUNDLE_README, where


@needs_html
def test_numbers_match_the_built_book(targets) -> None:
    """Every numbered figure and equation of the built book has the number computed here."""
    built = {}
    for page in Path(HTML_DIR).joinpath("notebooks").glob("*.html"):
        parser = _Numbers()
        parser.feed(page.read_text(errors="replace"))
        built.update({(f"notebooks/{page.stem}", owner): number
                      for _, owner, number in parser.items})
    computed = {(t.page, t.anchor): t.text.removeprefix("Fig. ").strip("()")
                for t in targets[0].values() if t.page.startswith("notebooks/")
                and t.text.startswith(("Fig. ", "("))}
    assert len(built) >= 150
    assert {key: built.get(key) for key in computed} == computed


@needs_html
def test_every_link_reaches_its_target(book_like) -> None:
    checked = 0
    for name, notebook in book_like.items():
        for text in _markdown(notebook):
            for match in LINK.finditer(text):
                href = match["href"]
                if not href.startswith(editions.HTML_FROM_NOTEBOOKS + "/"):
                    continue
                page, _, anchor = href.removeprefix(editions.HTML_FROM_NOTEBOOKS + "/") \
                    .partition("#")
                html = (Path(HTML_DIR) / page).read_text(errors="replace")
                assert not anchor or f'id="{anchor}"' in html, f"{name}: {href}"
                checked += 1
    assert checked >= 200
