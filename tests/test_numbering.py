"""Figures, tables and numbered equations are numbered within their chapter, and every
reference shows the number its target has.

A page titled "Chapter 6b: ..." numbers its figures Fig. 6b.1, 6b.2, ... and its equations
(6b.1), (6b.2), ...; "Checks for Chapter 5: ..." (a Reproduction report page) R5.1, ...;
"Appendix: ..." A.1, ...; the pages of no chapter (the introduction, the main results, the back
matter) count 1, 2, 3, ... among themselves. The expected label comes from the page's title, so
a page that ``book/_ext/book_html.py`` fails to recognise (chapter 6b's figures were once
"Fig. 34" and "Fig. 35", between Fig. 6.9 and Fig. 7.1) fails here.

The first two tests need no build: the extension's label of every page of the table of
contents is the one its title gives, and its hook renumbers Sphinx's numbers as above. The others
parse the built HTML without a browser and run only when ``ATTNBOOK_HTML`` names a built site
(``scripts/test.sh`` step 3).
"""

from __future__ import annotations

import json
import posixpath
import re
import sys
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from test_rendered_book import HTML_DIR, pages

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "book" / "_ext"))
import book_html  # noqa: E402

needs_html = pytest.mark.skipif(not HTML_DIR, reason="set ATTNBOOK_HTML to a built book "
                                "(scripts/test.sh does) to check the rendered numbers")
_TITLE = re.compile(r"(?P<report>Checks for )?Chapter (?P<chapter>\d+[a-z]?):"
                    r"|(?P<appendix>Appendix)\b")
# Sphinx's numfig_format prefixes: "Fig. 6b.1", "Table 2", "Listing 1"
_CAPTION = re.compile(r"(?P<kind>Fig\.|Table|Listing) (?P<number>[\w.]+)")
_EQUATION = re.compile(r"\((?P<number>[\w.]+)\)")                    # "(6b.1)"


def title_label(title: str) -> str | None:
    """The numbering label a page's title gives: "Chapter 6b: ..." -> "6b", "Checks for
    Chapter 5: ..." -> "R5", "Appendix: ..." -> "A", any other title -> None."""
    match = _TITLE.match(title)
    if match is None:
        return None
    return "A" if match["appendix"] else ("R" if match["report"] else "") + match["chapter"]


def _toc_docnames() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"], *(chapter["file"] for part in toc["parts"]
                           for chapter in part["chapters"])]


def _source_title(docname: str) -> str:
    """The first level-1 heading of the page's source (notebook or Markdown file)."""
    notebook = ROOT / f"{docname}.ipynb"
    if notebook.exists():
        cells = json.loads(notebook.read_text())["cells"]
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    else:
        text = (ROOT / f"{docname}.md").read_text()
    return next(line[2:] for line in text.splitlines() if line.startswith("# "))


#: Pages written by the build step (python -m attnbook.ledger), absent from a fresh checkout;
#: their titles name no chapter.
GENERATED_PAGES = {"book/ledger"}


def test_every_page_gets_the_label_its_title_gives() -> None:
    labels = {docname: title_label(_source_title(docname)) for docname in _toc_docnames()
              if docname not in GENERATED_PAGES}
    assert "6b" in labels.values() and "R6b" in labels.values() and "A" in labels.values()
    wrong = {docname: (book_html.chapter_label(docname), label)
             for docname, label in labels.items() if book_html.chapter_label(docname) != label}
    assert not wrong, f"docname: (extension's label, title's label): {wrong}"


def test_chapters_count_from_one_and_the_other_pages_among_themselves() -> None:
    """Sphinx's book-wide numbers (as it assigns them) become chapter numbers; a back-matter
    figure continues the front matter's count, not the chapters'."""
    env = SimpleNamespace(toc_fignumbers={
        "book/intro": {"figure": {"i": (1,)}},
        "notebooks/ch06b_finite_sample": {"figure": {"late": (3,), "early": (2,)},
                                          "displaymath": {"e": (1,)}},
        "book/teaching_guide": {"figure": {"g": (4,)}}})
    assert book_html._number_per_chapter(None, env) == []
    assert env.toc_fignumbers == {
        "book/intro": {"figure": {"i": (1,)}},
        "notebooks/ch06b_finite_sample": {"figure": {"early": ("6b", 1), "late": ("6b", 2)},
                                          "displaymath": {"e": ("6b", 1)}},
        "book/teaching_guide": {"figure": {"g": (2,)}}}


class _Numbers(HTMLParser):
    """A built page's title, its numbered items in order (kind, HTML id, number) and its
    internal links whose text is a number (href, kind, number)."""

    def __init__(self) -> None:
        super().__init__()
        self.title = ""
        self.items: list[tuple[str, str, str]] = []
        self.references: list[tuple[str, str, str]] = []
        self._in_title = False
        self._owner = ""                  # id of the last figure, table or equation opened
        self._capture = False             # reading a caption's or an equation's number
        self._link: str | None = None
        self._text = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = {name: value or "" for name, value in attrs}
        classes = attr.get("class", "").split()
        if self._capture:
            self._end_capture()
        if tag == "h1" and not self.title:
            self._in_title = True
        elif tag in ("figure", "table") and attr.get("id"):
            self._owner = attr["id"]
        elif tag == "div" and "math" in classes and attr.get("id"):
            self._owner = attr["id"]
        elif tag == "span" and {"caption-number", "eqno"} & set(classes):
            self._capture, self._text = True, ""
        elif tag == "a" and "reference" in classes and "internal" in classes:
            self._link, self._text = attr.get("href", ""), ""

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        if self._capture or self._link is not None:
            self._text += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "h1":
            self._in_title = False
        elif tag == "span" and self._capture:
            self._end_capture()
        elif tag == "a" and self._link is not None:
            number = _number(self._text.strip())
            if number:
                self.references.append((self._link, *number))
            self._link = None

    def _end_capture(self) -> None:
        number = _number(self._text.strip())
        assert number, f"unreadable number {self._text!r}"
        self.items.append((number[0], self._owner, number[1]))
        self._capture = False


def _number(text: str) -> tuple[str, str] | None:
    """("Fig.", "6b.1") from "Fig. 6b.1", ("Equation", "5.2") from "(5.2)", else None."""
    if match := _EQUATION.fullmatch(text):
        return "Equation", match["number"]
    match = _CAPTION.fullmatch(text)
    return (match["kind"], match["number"]) if match else None


def _parsed() -> dict[str, _Numbers]:
    parsed = {}
    for page in pages():
        parser = _Numbers()
        parser.feed((Path(HTML_DIR) / page).read_text(errors="replace"))
        parsed[page] = parser
    return parsed


@needs_html
def test_numbers_run_within_each_pages_chapter() -> None:
    parsed = _parsed()
    wrong, outside = [], {}
    for page, numbers in parsed.items():
        label = title_label(numbers.title.strip())
        for kind in dict.fromkeys(kind for kind, _, _ in numbers.items):
            found = [number for k, _, number in numbers.items if k == kind]
            if label is None:
                outside.setdefault(kind, []).extend(found)
            elif found != [f"{label}.{k}" for k in range(1, len(found) + 1)]:
                wrong.append(f"{page} ({numbers.title.strip()!r}): {kind} {found}")
    for kind, found in outside.items():
        if not all(n.isdigit() for n in found) or sorted(map(int, found)) != list(
                range(1, len(found) + 1)):
            wrong.append(f"the pages of no chapter: {kind} {found}, not 1 to {len(found)}")
    counted = sum(len(numbers.items) for numbers in parsed.values())
    assert counted >= 50, f"only {counted} numbered figures and equations found"
    assert not wrong, "numbers outside their chapter:\n" + "\n".join(wrong)


@needs_html
def test_every_reference_shows_its_targets_number() -> None:
    parsed = _parsed()
    numbered = {(page, owner): (kind, number) for page, numbers in parsed.items()
                for kind, owner, number in numbers.items}
    wrong, checked = [], 0
    for page, numbers in parsed.items():
        for href, kind, number in numbers.references:
            path, _, anchor = href.partition("#")
            target = (posixpath.normpath(posixpath.join(posixpath.dirname(page), path))
                      if path else page)
            checked += 1
            if numbered.get((target, anchor)) != (kind, number):
                wrong.append(f"{page}: {kind} {number} links to {target}#{anchor}, numbered "
                             f"{numbered.get((target, anchor))}")
    assert checked >= 20, f"only {checked} references to numbers found"
    assert not wrong, "\n".join(wrong)
