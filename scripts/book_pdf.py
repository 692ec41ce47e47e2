"""Print the whole book to one PDF: the single-page build, rendered by headless Chromium.

Usage (from the repository root, with .venv's Python; ``scripts/build_book.sh`` runs it when
``ATTNBOOK_PDF`` names the file, as the publishing workflow does, and ``scripts/test.sh``
step 3 prints ``_build/pdf/attnbook.pdf`` and checks it with ``tests/test_book_pdf.py``)::

    python scripts/book_pdf.py OUT.pdf

Builds ``_build/pdf/_build/singlehtml`` from the notebooks' stored outputs (execution off: the
HTML build has just executed them, and the tests check that stored and fresh outputs agree),
serves it on 127.0.0.1, waits for MathJax, and prints it with the book's print styles
(``@media print`` in ``book/_static/book.css``: one column, no navigation, code wrapped,
folded material left out, each part and each chapter on a new page, page numbers in the
footer). Before printing, the page is shaped as a book (``SHAPE_AS_BOOK``): a title page for
each part of ``_toc.yml`` (the captions of the contents list) before its first chapter, each
chapter's link target moved into the chapter (so the contents' links land on its first page),
and a page-number box for each entry of the contents list.

The book is printed twice. Chromium writes a named destination for every in-page link
target; the first print's destinations give each part's and chapter's page, which are
written into the contents' boxes (fixed width, so nothing moves) for the second print, and a
part, chapter or section whose page differs between the two prints fails the run. The bookmarks are then
added from the second print's destinations: the contents list, the introduction and the
parts at the top, chapters (and the introduction's sections) under them, each chapter's
sections (h3) under it, folded. Smaller headings are left out.

Beside the PDF it writes ``OUT.layout.json`` (read by ``tests/test_book_pdf.py``), measured
in the print layout just before printing: ``wide``, every table, output, code block, figure or
display equation wider than the text block or cut inside its own box (paper cannot scroll),
and ``headings``, the text of every heading, to find a page that ends with one (a heading
printed apart from what follows it).

The browser is ``ATTNBOOK_CHROMIUM``, else the first of chromium, chromium-browser and
google-chrome (GitHub's Ubuntu runners have Chrome) on the PATH.
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import unicodedata
from pathlib import Path
from typing import NamedTuple

import yaml
from pypdf import PdfReader, PdfWriter
from pypdf.generic import Fit

ROOT = Path(__file__).resolve().parents[1]
PAGE_FORMAT, PAGE_WIDTH_MM, SIDE_MARGIN_MM = "A4", 210, 14
MARGINS = {"top": "15mm", "bottom": "18mm", "left": f"{SIDE_MARGIN_MM}mm",
           "right": f"{SIDE_MARGIN_MM}mm"}
# The printed column in CSS pixels (96 to the inch). book.js fits wide display maths to the
# window's width (a formula wider than the column would be cut off in print): the window is
# given this width before printing.
COLUMN_PX = round((PAGE_WIDTH_MM - 2 * SIDE_MARGIN_MM) / 25.4 * 96)
FOOTER = ('<div style="width: 100%; text-align: center; font-size: 9px; color: #444;">'
          '<span class="pageNumber"></span></div>')
# pypdf warns that Chromium's trailer undercounts its objects; the file reads correctly.
logging.getLogger("pypdf").setLevel(logging.ERROR)

# Shapes the single page as a book (see the module docstring). Returns the bookmarks to add,
# [depth, title, target id] in reading order, and the target ids of the contents' entries.
SHAPE_AS_BOOK = """() => {
  const article = document.querySelector("article.bd-article");
  const toc = document.getElementById("jb-print-toc");
  const target = (link) => decodeURIComponent(link.hash.slice(1));
  article.querySelectorAll("span[id^='document-']").forEach((anchor) => {
    const chapter = anchor.nextElementSibling;
    chapter.classList.add("attn-print-chapter");
    chapter.prepend(anchor);
  });
  const contents = [];
  const addPageBox = (holder, id) => {
    holder.classList.add("attn-print-entry");
    const leader = document.createElement("span");
    leader.className = "attn-print-leader";
    const page = document.createElement("span");
    page.className = "attn-print-page";
    page.textContent = "0";       // a digit holds the number's line (and baseline) until then
    holder.append(leader, page);
    contents.push(id);
  };
  toc.querySelectorAll("p.caption").forEach((caption, i) => {
    const chapters = caption.nextElementSibling.querySelectorAll("a");
    const part = document.createElement("div");
    part.className = "attn-print-part";
    part.id = `attn-part-${i + 1}`;
    part.textContent = caption.textContent.trim();
    document.getElementById(target(chapters[0])).parentElement.before(part);
    addPageBox(caption, part.id);
    chapters.forEach((link) => addPageBox(link.parentElement, target(link)));
  });
  const text = (heading) => {
    const copy = heading.cloneNode(true);
    copy.querySelectorAll(".headerlink, mjx-container > :not(mjx-assistive-mml)").forEach(
      (node) => node.remove());
    return copy.textContent;
  };
  const bookmarks = [[0, "Contents", toc.id]];
  article.querySelectorAll(".attn-print-part, h1, h2, h3").forEach((heading) => {
    const id = heading.id || heading.parentElement.id;
    if (!document.getElementById(id).getClientRects().length) return;   // not printed
    const depth = heading.tagName === "DIV" ? 0 : Number(heading.tagName[1]) - 1;
    bookmarks.push([depth, text(heading), id]);
  });
  // Chromium writes a named destination for each target of a link in the page.
  const links = document.createElement("nav");
  links.hidden = true;
  new Set([...bookmarks.map((mark) => mark[2]), ...contents]).forEach((id) => {
    const link = document.createElement("a");
    link.href = "#" + encodeURIComponent(id);
    links.append(link);
  });
  document.body.append(links);
  return [bookmarks, contents];
}"""
# The print layout's problems (see the module docstring): what is wider than the text block or
# cut in its box, and the headings' texts.
LAYOUT_CHECK = """() => {
  const article = document.querySelector("article.bd-article");
  const room = article.getBoundingClientRect();
  const style = getComputedStyle(article);
  const right = room.right - parseFloat(style.paddingRight) + 1;
  const shown = (element) => element.getClientRects().length > 0
    && !element.closest("details:not([open]), .d-print-none");
  const wide = [];
  article.querySelectorAll("table, pre, div.cell_output > *, img, figure, "
                           + "mjx-container[display='true'], .attn-slider").forEach((element) => {
    if (!shown(element)) return;
    const box = element.getBoundingClientRect();
    const overflow = getComputedStyle(element).overflowX;
    const cut = ["auto", "scroll", "hidden", "clip"].includes(overflow)
      && element.scrollWidth > element.clientWidth + 1;
    if (box.right > right || cut) {
      const heading = element.closest("section")
        && element.closest("section").querySelector("h1, h2, h3, h4");
      wide.push({what: element.tagName.toLowerCase() + (element.className
                   ? "." + String(element.className).split(" ").filter(Boolean).join(".") : ""),
                 text: element.textContent.replace(/\\s+/g, " ").trim().slice(0, 70),
                 section: heading ? heading.textContent.replace("#", "").trim() : "",
                 width: Math.round(Math.max(box.width, element.scrollWidth)),
                 room: Math.round(right - box.left)});
    }
  });
  const headings = Array.from(article.querySelectorAll("h1, h2, h3, h4, h5, h6"))
    .filter(shown).map((h) => {
      const copy = h.cloneNode(true);
      copy.querySelectorAll(".headerlink, mjx-container > :not(mjx-assistive-mml)")
        .forEach((node) => node.remove());
      return copy.textContent.trim();
    });
  return {wide, headings};
}"""
FILL_CONTENTS = """(numbers) => {
  document.querySelectorAll("#jb-print-toc .attn-print-page").forEach(
    (box, i) => { box.textContent = String(numbers[i]); });
}"""


class Place(NamedTuple):
    page: int       # 1-based, as the footer numbers the pages
    left: float
    top: float


def normalized(text: str) -> str:
    """``text`` as compared between the HTML, the bookmarks and the extracted text: NFKC
    (ligatures such as "fi" split) with runs of whitespace collapsed to one space."""
    return " ".join(unicodedata.normalize("NFKC", text).split())


def destinations(reader: PdfReader) -> dict[str, Place]:
    """Each named destination of the PDF (an element id, without the name's slash): its page
    and the point it shows."""
    return {name.removeprefix("/"): Place(reader.get_destination_page_number(dest) + 1,
                                          float(dest.left), float(dest.top))
            for name, dest in reader.named_destinations.items()}


def with_bookmarks(printed: bytes, marks: list[list], places: dict[str, Place]) -> PdfWriter:
    """The printed PDF with ``marks`` ([depth, title, target id], reading order) as its outline,
    each pointing at its target's destination; only top-level bookmarks start open."""
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(printed)))
    parents: list = []
    for depth, title, target in marks:
        depth = min(depth, len(parents))          # a heading level skipped: hang it one below
        place = places[target]
        parents[depth:] = [writer.add_outline_item(
            title=normalized(title), page_number=place.page - 1,
            parent=parents[depth - 1] if depth else None,
            fit=Fit.xyz(place.left, place.top), is_open=depth == 0)]
    writer.page_mode = "/UseOutlines"
    return writer


def build_single_page(out_dir: Path) -> Path:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    override = ROOT / "_build_config_pdf.yml"
    override.write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "ATTNBOOK_PDF": ""}      # no link to the PDF inside the PDF
    try:
        subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT), "-q",
                        "--builder", "singlehtml", "--config", str(override),
                        "--path-output", str(out_dir)], check=True, env=env)
    finally:
        override.unlink(missing_ok=True)
    return out_dir / "_build" / "singlehtml"


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


def print_pdf(site: Path, pdf: Path) -> None:
    from playwright.sync_api import sync_playwright

    # The single page is written as the root document (book/intro.html) but its links are
    # relative to the site's root: serve a copy from there.
    root = yaml.safe_load((ROOT / "_toc.yml").read_text())["root"]
    page_name = "whole_book.html"
    shutil.copy(site / f"{root}.html", site / page_name)

    chromium = os.environ.get("ATTNBOOK_CHROMIUM") or next(
        filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    if not chromium:
        raise SystemExit("book_pdf: no Chromium (set ATTNBOOK_CHROMIUM or install chromium)")
    handler = functools.partial(_QuietHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium,
                                                 args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{server.server_address[1]}/{page_name}",
                      wait_until="load", timeout=300_000)
            page.wait_for_function("() => window.MathJax && MathJax.startup "
                                   "&& MathJax.startup.promise", timeout=120_000)
            page.evaluate("() => MathJax.startup.promise")
            page.emulate_media(media="print")
            page.set_viewport_size({"width": COLUMN_PX, "height": 1000})
            page.wait_for_timeout(1000)          # book.js refits 250 ms after a resize
            marks, contents = page.evaluate(SHAPE_AS_BOOK)

            def print_book() -> tuple[bytes, dict[str, Place]]:
                printed = page.pdf(format=PAGE_FORMAT, margin=MARGINS, print_background=True,
                                   display_header_footer=True, header_template="<div></div>",
                                   footer_template=FOOTER)
                return printed, destinations(PdfReader(io.BytesIO(printed)))

            _, draft_places = print_book()
            targets = {target for *_, target in marks} | set(contents)
            missing = sorted(targets - set(draft_places))
            if missing:
                raise SystemExit(f"book_pdf: no destination in the PDF for {missing}")
            page.evaluate(FILL_CONTENTS, [draft_places[target].page for target in contents])
            printed, places = print_book()
            layout = page.evaluate(LAYOUT_CHECK)
            browser.close()
    finally:
        server.shutdown()
    # (pages only: Chromium may place a destination a line apart between two identical prints)
    moved = [target for target in targets if places[target].page != draft_places[target].page]
    if moved:
        raise SystemExit("book_pdf: the page numbers in the contents moved the layout "
                         f"({len(moved)} parts, chapters or sections changed page: {moved[:3]})")
    with pdf.open("wb") as out:
        with_bookmarks(printed, marks, places).write(out)
    layout_file(pdf).write_text(json.dumps(layout, indent=1, ensure_ascii=False) + "\n")
    for item in layout["wide"]:
        print(f"book_pdf: wider than the text block ({item['width']} px in {item['room']}): "
              f"{item['what']} in {item['section']!r}: {item['text']!r}", file=sys.stderr)


def layout_file(pdf: Path) -> Path:
    """Where the print layout's measurements go: beside the PDF, ``OUT.layout.json``."""
    return pdf.with_suffix(".layout.json")


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].endswith(".pdf"):
        print("usage: python scripts/book_pdf.py OUT.pdf", file=sys.stderr)
        return 2
    pdf = Path(argv[0]).resolve()
    site = build_single_page(ROOT / "_build" / "pdf")
    print_pdf(site, pdf)
    print(f"book_pdf: wrote {pdf} ({pdf.stat().st_size / 1e6:.1f} MB, "
          f"{len(PdfReader(pdf).pages)} pages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
