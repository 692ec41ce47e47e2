"""The whole-book PDF (``scripts/book_pdf.py``), read back with pypdf.

Runs only when ``ATTNBOOK_BOOK_PDF`` names a printed book (``scripts/test.sh`` step 3 prints
``_build/pdf/attnbook.pdf`` and then runs this file); otherwise every test is skipped with that
reason. Titles and texts are compared with all whitespace removed (a title may wrap, or break
after a hyphen) and NFKC-normalized (ligatures). Fails when

* a part of ``_toc.yml`` has no top-level bookmark, or its chapters are not the bookmarks
  under it, in order; or the outline goes deeper than parts > chapters > sections;
* a page does not end with its number (the footer);
* the contents list does not print, after each part's and chapter's title, the page its
  bookmark points to;
* a part or a chapter does not begin its page: text lies above the point its bookmark shows;
* a page shows folded material or its toggles: a hidden cell's "Show code cell source" or
  "...: show content" line, an exercise solution (its dropdown's title "Solution" on a line of
  its own, or a run of plain words from a solution's text in the sources), or the
  enlarged-figure view's Close button;
* the book has fewer pages than two per chapter or more than ``MAX_PAGES``, or is larger than
  ``MAX_MEGABYTES``;
* a table, output, code block, figure or display equation is wider than the text block or cut
  in its own box (``OUT.layout.json``, which ``scripts/book_pdf.py`` measures in the print
  layout);
* a page ends with a heading (printed apart from the text it heads), or holds nothing but one;
* a page shows screen-only wording ("click", "tap"): mark it with the ``screen-only`` class.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from pathlib import Path
from typing import NamedTuple

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PDF = os.environ.get("ATTNBOOK_BOOK_PDF")
# The book printed at 740 A4 pages and 14.4 MB (December 2026). Far more means the print
# styles broke (folded material shown, outputs wrapped one word a line, figures unscaled).
MAX_PAGES = 1000
MAX_MEGABYTES = 25
FOLDED_TOGGLE = re.compile(r"(show|hide) (code cell )?(source|content|outputs?)$",
                           re.IGNORECASE | re.MULTILINE)
SOLUTION = re.compile(r"```\{admonition\} Solution\n:class: dropdown\n(.*?)\n```", re.DOTALL)
PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z,.;:()-]*")
MIN_PHRASE_WORDS = 8

# Wording that only makes sense on a screen: an instruction to click or tap something.
SCREEN_WORDING = re.compile(r"\b(?:click|tap|hover)(?: or (?:click|tap))? (?:on |over )?"
                            r"(?:a|an|the|any|it|here|this|one)\b", re.IGNORECASE)
# A heading shorter than this (compact) is not looked for at a page's end ("Summary" is).
MIN_HEADING_CHARS = 5

pytestmark = pytest.mark.skipif(not PDF, reason="set ATTNBOOK_BOOK_PDF to a printed book "
                                "(scripts/test.sh step 3 prints one) to check it")


class Bookmark(NamedTuple):
    depth: int      # 0 for a top-level bookmark
    title: str      # compact (see compact())
    page: int       # 1-based, as the footer numbers the pages
    top: float      # the height on the page it shows (PDF points from the bottom)


class Book(NamedTuple):
    reader: object              # the pypdf PdfReader
    bookmarks: list[Bookmark]
    pages: list[str]            # each page's text without its last line, NFKC-normalized
    footers: list[str]          # each page's last line
    megabytes: float


def compact(text: str) -> str:
    """``text`` NFKC-normalized with all whitespace removed, typographic quotes as straight
    ones (the HTML prints "The book's code" with a curly apostrophe)."""
    text = unicodedata.normalize("NFKC", text).translate(
        {0x2018: "'", 0x2019: "'", 0x201C: '"', 0x201D: '"'})
    return "".join(text.split())


@pytest.fixture(scope="module")
def book() -> Book:
    from pypdf import PdfReader

    reader = PdfReader(PDF)
    marks: list[Bookmark] = []

    def walk(items: list, depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
            else:
                marks.append(Bookmark(depth, compact(item.title),
                                      reader.get_destination_page_number(item) + 1,
                                      float(item.top)))

    walk(reader.outline, 0)
    texts = [unicodedata.normalize("NFKC", page.extract_text()).rstrip()
             for page in reader.pages]
    pages, _, footers = zip(*(text.rpartition("\n") for text in texts))
    return Book(reader, marks, list(pages), list(footers), Path(PDF).stat().st_size / 1e6)


def highest_text(book: Book, page: int) -> float:
    """The height of the highest text baseline on ``page`` (1-based), in PDF points."""
    heights = []

    def record(text: str, cm: list[float], tm: list[float], *_: object) -> None:
        if text.strip():          # the text matrix's origin mapped to the page (PDF 9.4.4)
            heights.append(cm[1] * tm[4] + cm[3] * tm[5] + cm[5])

    book.reader.pages[page - 1].extract_text(visitor_text=record)
    return max(heights)


def source_text(name: str) -> str:
    """The Markdown of a ``_toc.yml`` entry: a book page, or a notebook's Markdown cells."""
    path = ROOT / name
    if (notebook := path.with_suffix(".ipynb")).exists():
        cells = json.loads(notebook.read_text())["cells"]
        return "\n\n".join("".join(cell["source"]) for cell in cells
                           if cell["cell_type"] == "markdown")
    return path.with_suffix(".md").read_text()


def chapter_title(name: str, *, raw: bool = False) -> str:
    """A page's title as printed: its first heading without Markdown's and TeX's marks ($, `,
    _, ^, braces: "Attention in $W_Q, W_K$" prints as "Attention in WQ, WK"); ``raw``: as
    written."""
    title = next(line[2:] for line in source_text(name).splitlines() if line.startswith("# "))
    return title if raw else re.sub(r"[$`_^{}]", "", title)


def title_pattern(raw: str) -> str:
    """A regex for a title in the text extracted from the PDF (compact): its maths ($...$)
    may be missing there (MathJax draws its glyphs, the bookmarks spell them)."""
    pieces = re.split(r"\$([^$]*)\$", raw)
    return "".join(f"(?:{re.escape(compact(re.sub(r'[`_^{}]', '', piece)))})?" if i % 2
                   else re.escape(compact(re.sub(r"[`_^{}]", "", piece)))
                   for i, piece in enumerate(pieces))


def toc() -> list[tuple[str, list[str]]]:
    """Each part of ``_toc.yml``: its caption and its chapters' files."""
    parts = yaml.safe_load((ROOT / "_toc.yml").read_text())["parts"]
    return [(part["caption"], [chapter["file"] for chapter in part["chapters"]])
            for part in parts]


def toc_parts() -> list[tuple[str, list[str]]]:
    """Each part of ``_toc.yml``: its caption and its chapters' titles, compact."""
    return [(compact(caption), [compact(chapter_title(name)) for name in chapters])
            for caption, chapters in toc()]


def test_a_bookmark_per_part_and_chapter(book: Book) -> None:
    for caption, chapters in toc_parts():
        found = [i for i, mark in enumerate(book.bookmarks)
                 if mark.depth == 0 and mark.title == caption]
        assert found, f"no top-level bookmark for the part {caption!r}"
        under = []
        for mark in book.bookmarks[found[0] + 1:]:
            if mark.depth == 0:
                break
            if mark.depth == 1:
                under.append(mark.title)
        assert under == chapters, f"the bookmarks under {caption!r} are not its chapters"
    deepest = max(mark.depth for mark in book.bookmarks)
    assert deepest <= 2, f"bookmarks {deepest + 1} levels deep: only parts > chapters > sections"


def test_every_page_carries_its_number(book: Book) -> None:
    wrong = [(number, footer) for number, footer in enumerate(book.footers, 1)
             if footer != str(number)]
    assert not wrong, f"{len(wrong)} pages without their number as the footer, e.g. {wrong[:5]}"


def parts_and_chapters(book: Book) -> list[Bookmark]:
    """The bookmark of each part and chapter, in the contents' order."""
    marks = {mark.title: mark for mark in book.bookmarks if mark.depth <= 1}
    titles = [title for caption, chapters in toc_parts() for title in (caption, *chapters)]
    missing = [title for title in titles if title not in marks]
    assert not missing, f"no part or chapter bookmark for {missing}"
    return [marks[title] for title in titles]


def test_contents_page_numbers_match_the_bookmarks(book: Book) -> None:
    entries = parts_and_chapters(book)
    start = next((mark.page for mark in book.bookmarks if mark.title == "Contents"), None)
    assert start, "no bookmark for the contents list"
    end = next(mark.page for mark in book.bookmarks if mark.depth == 0 and mark.page > start)
    contents = compact(" ".join(book.pages[start - 1:end - 1]))
    titles = [title for caption, chapters in toc()
              for title in (caption, *(chapter_title(name, raw=True) for name in chapters))]
    position = 0
    for mark, title in zip(entries, titles):   # in order: "Chapter 4: ..." is in "Checks for ..."
        found = re.compile(title_pattern(title) + r"(\d+)").search(contents, position)
        assert found, f"the contents list has no page number after {mark.title!r}"
        assert int(found[1]) == mark.page, (f"the contents list gives {mark.title!r} page "
                                            f"{found[1]}, its bookmark page {mark.page}")
        position = found.end()


def test_parts_and_chapters_begin_a_page(book: Book) -> None:
    late = [f"{mark.title} (page {mark.page})" for mark in parts_and_chapters(book)
            if highest_text(book, mark.page) > mark.top]
    assert not late, f"text above the start of: {late}"


def test_no_folded_material_or_widgets(book: Book) -> None:
    shown = [f"page {number}: {match[0]!r}" for number, text in enumerate(book.pages, 1)
             for match in FOLDED_TOGGLE.finditer(text)]
    assert not shown, f"{len(shown)} folded-cell toggles printed, e.g. {shown[:5]}"
    closers = [number for number, text in enumerate(book.pages, 1) if "\u00d7 Close" in text]
    assert not closers, f"the enlarged-figure view's Close button printed on pages {closers}"


def longest_plain_run(markdown: str) -> list[str]:
    """The longest run of consecutive plain words (no maths, code or markup) in ``markdown``."""
    runs: list[list[str]] = [[]]
    for word in markdown.split():
        if PLAIN_WORD.fullmatch(word):
            runs[-1].append(word)
        else:
            runs.append([])
    return max(runs, key=len)


def test_no_solutions_printed(book: Book) -> None:
    titled = [number for number, text in enumerate(book.pages, 1)
              if re.search(r"^Solution$", text, re.MULTILINE)]
    assert not titled, f"solution dropdowns printed on pages {titled}"
    solutions = [solution for _, chapters in toc() for name in chapters
                 for solution in SOLUTION.findall(source_text(name))]
    phrases = [compact(" ".join(run)) for run in map(longest_plain_run, solutions)
               if len(run) >= MIN_PHRASE_WORDS]
    assert len(phrases) >= len(solutions) / 2, (
        f"only {len(phrases)} of {len(solutions)} solutions have a phrase to look for")
    whole = compact(" ".join(book.pages))
    printed = [phrase for phrase in phrases if phrase in whole]
    assert not printed, f"{len(printed)} of {len(phrases)} solutions printed, e.g. {printed[:3]}"


def test_page_count_and_size(book: Book) -> None:
    chapters = sum(len(chapters) for _, chapters in toc_parts())
    assert 2 * chapters <= len(book.pages) <= MAX_PAGES, f"{len(book.pages)} pages"
    assert book.megabytes <= MAX_MEGABYTES, f"{book.megabytes:.1f} MB"


def layout() -> dict:
    """What scripts/book_pdf.py measured in the print layout (``OUT.layout.json``)."""
    path = Path(PDF).with_suffix(".layout.json")
    assert path.is_file(), f"{path.name} is missing: print the book with scripts/book_pdf.py"
    return json.loads(path.read_text())


def test_nothing_is_wider_than_the_text_block() -> None:
    wide = layout()["wide"]
    assert not wide, (f"{len(wide)} element(s) wider than the text block or cut in their box, "
                      "e.g. " + "; ".join(f"{w['what']} in {w['section']!r} ({w['width']} px in "
                                          f"{w['room']}): {w['text'][:40]!r}" for w in wide[:4]))


def test_no_page_ends_with_a_heading(book: Book) -> None:
    """A heading is printed with the text it heads: no page's last lines are a heading, and
    no page holds only one (a part's title page is a title, not a heading)."""
    headings = {compact(text) for text in layout()["headings"]
                if len(compact(text)) >= MIN_HEADING_CHARS}
    parts = {compact(caption) for caption, _ in toc()}
    alone = []
    for number, text in enumerate(book.pages, 1):
        lines = [line for line in text.splitlines() if line.strip()]
        if compact(text) in parts:
            continue                      # a part's title page: its title alone, on purpose
        for k in (1, 2, 3):
            if len(lines) >= k and compact(" ".join(lines[-k:])) in headings:
                alone.append(f"page {number}: {' '.join(lines[-k:])!r}"
                             + (" (the only text)" if len(lines) == k else ""))
                break
    assert not alone, f"{len(alone)} page(s) end with a heading, e.g. {alone[:5]}"


def test_no_screen_only_wording(book: Book) -> None:
    found = [f"page {number}: {text[max(0, m.start() - 40):m.end() + 30]!r}"
             for number, text in enumerate(book.pages, 1)
             for m in SCREEN_WORDING.finditer(text)]
    assert not found, f"{len(found)} screen-only phrase(s) printed, e.g. {found[:4]}"
