"""Browser check of the built book: headless Debian chromium opens every page, offline.

Runs only when ``ATTNBOOK_HTML`` names a built site (``scripts/test.sh`` builds the book and
then runs this file); otherwise every test is skipped with that reason. Each page is served
from 127.0.0.1 and every request to any other host is blocked and counted, so the checks
prove the book renders with no network. Every page is opened at 1280, 900 and 390 CSS px
wide (desktop, tablet, phone), and fails when

* it logs a JavaScript error, a request fails, or it requests anything outside the site;
* it contains math but MathJax rendered no ``mjx-container``, produced an ``mjx-merror`` or
  an undefined macro, or left TeX delimiters unrendered;
* an image does not load, has no alt text or a file name as alt text, or (at 1280 px) is
  shown at less than 70% of its natural width (its labels would shrink below ~6 pt);
* a notebook figure or slider has no caption;
* a code block other than a code cell scrolls sideways (1280 px, on screen or printed), or the
  page does, or
  inline maths runs past the window edge without a scroll box of its own (390 px);
* a line of a code cell wraps (any width): code cells keep their lines whole
  (``white-space: pre``) and scroll in their box, never wrapping to column 0;
* a printed output scrolls sideways (any width): printed text wraps at the column's edge
  with a hanging indent, so every number it prints is on screen;
* a result table (``attnbook.tables``, a verdict table) scrolls sideways or runs past its box
  (any width; book.js stacks one that does not fit), or a stacked table's value has no label;
* a fold button (a hidden cell's summary, a dropdown's toggle) is named "Toggle hidden
  content" instead of its fold's title;
* a display equation is wider than its column at 1280 px, or scrolls without the cue; a
  numbered one is cut (scrolls) at any width, or its number is neither beside its box nor
  right under its end;
* raw TeX or a ``$`` is left in the page's text (outside code and rendered maths);
* a figure cannot be enlarged, its enlarged view is wider than the window, its smallest
  text (the ``attn:min-text-px`` record that ``attnbook.plotting.figure_png`` writes into the
  image shown: on a phone, the figure's narrow rendering) is under 11 CSS px in the enlarged
  view or, at 900 px and up, on the page, it carries no such record, it has series that
  only colour tells apart and a colour-blind reader cannot (``attn:confusable``), or its
  layout has a fault (``attn:layout-faults``: a panel with ticks but no tick labels where no
  aligned panel labels them, overlapping titles, axis or tick labels, legends, annotations);
* a table header breaks a word, or (below 600 px) a stacked table's value has no label;
* the phone's "on this page" drawer stays open after a tap on a section, or the section
  lands more than 100 px below the top of the screen;
* the visible navigation button does nothing: below 992 px it must open the navigation
  drawer, above it must hide the sidebar;
* an interactive figure does not change its image when its slider moves, a frame it shows
  has a layout fault or (390 px) smaller text than 10 CSS px on the page (a phone must get
  the frame's narrow rendering), or a widget view is embedded that needs a kernel;
* it shows a Python traceback or an nbval marker.

At 390 px a chapter page fails when everything it downloaded (figures included, after all the
checks above) exceeds 1.5 MB gzipped. More tests: the ledger gives every claim its own anchor
and is published as data (``book/ledger.json``) beside its page; at 1280 px it uses the
window's width and its last claim ends within ``LEDGER_MAX_SCREENS`` screens of 800 px; the
sections that show a claim's verdict or evidence link back to its entry; the search ranks the
chapters above the API reference for "Villani" and "Algorithm 1", its snippets show no TeX and
its magnifier does not cover the query; the glossary defines the main concepts, links each
to a section that exists, and puts them in the general index.
"""

from __future__ import annotations

import base64
import functools
import gzip
import http.server
import json
import os
import re
import threading
from pathlib import Path
from typing import Iterator
from urllib.parse import unquote, urlparse

import pytest

from attnbook.plotting import png_records

HTML_DIR = os.environ.get("ATTNBOOK_HTML")
CHROMIUM = os.environ.get("ATTNBOOK_CHROMIUM", "/usr/bin/chromium")
SKIP_DIRS = {"_static", "_sources", "_images", "vendor"}
SKIP_PAGES = {"genindex.html", "search.html"}
WIDTHS = (1280, 900, 390)
MIN_FIGURE_SCALE = 0.7
MIN_FIGURE_TEXT_PX = 11.0
MIN_SLIDER_TEXT_PX = 10.0   # a slider frame on a phone's page (it has no enlarged view check)
PAGE_BUDGET_BYTES = 1_500_000
MAX_HEADING_TOP_PX = 100   # a section picked in the phone's drawer opens at the top
# The claims ledger at 1280 x 800: its last claim within this many screens from the top (it
# was 51 screens of a 690 px table column before issue "The online book, fourth pass").
LEDGER_MAX_SCREENS = 17
LEDGER_SCREEN_PX = 800
# Concepts the glossary must define (and the general index list).
GLOSSARY_CONCEPTS = ("Villani condition", "Poincare inequality", "spectral initialization",
                     "preconditioner", "balancing regularizer", "one-point strong convexity",
                     "Gibbs measure", "Langevin dynamics", "LoRA")
MIN_GLOSSARY_TERMS = 30

pytestmark = pytest.mark.skipif(not HTML_DIR, reason="set ATTNBOOK_HTML to a built book "
                                "(scripts/test.sh does) to run the browser check")


def pages() -> list[str]:
    if not HTML_DIR:
        return []
    root = Path(HTML_DIR)
    return sorted(str(path.relative_to(root)) for path in root.rglob("*.html")
                  if not SKIP_DIRS & set(path.relative_to(root).parts)
                  and path.name not in SKIP_PAGES and not _is_redirect(path))


def _is_redirect(path: Path) -> bool:
    """The root index.html that Jupyter Book writes is only a redirect to the first page."""
    return 'http-equiv="Refresh"' in path.read_text(errors="replace")[:2000]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    handler = functools.partial(_QuietHandler, directory=HTML_DIR)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"{CHROMIUM} not found: apt-get install chromium"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync"])
        yield browser
        browser.close()


def test_site_has_pages() -> None:
    assert len(pages()) >= 3, f"only {pages()} built"


class _Page:
    """A fresh browser context at one width, with its errors and requests recorded."""

    def __init__(self, browser, server: str, width: int) -> None:
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        self.page = self.context.new_page()
        self.server = server
        self.external: list[str] = []
        self.errors: list[str] = []
        self.responses: list = []
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}")
                     if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("requestfailed", lambda r: None if r.url in self.external
                     else self.errors.append(f"failed request: {r.url}"))
        self.page.on("response", self._response)

    def _response(self, response) -> None:
        self.responses.append(response)
        if response.status >= 400:
            self.errors.append(f"HTTP {response.status}: {response.url}")

    def _route(self, request_route) -> None:
        if request_route.request.url.startswith(self.server):
            request_route.continue_()
        else:
            self.external.append(request_route.request.url)
            request_route.abort()

    def open(self, path: str):
        self.page.goto(f"{self.server}/{path}", wait_until="load")
        if self.page.locator(".math, mjx-container").count() > 0:
            self.page.wait_for_function(
                "() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                timeout=30_000)
            self.page.evaluate("() => MathJax.startup.promise")
        self.page.wait_for_timeout(200)   # deferred theme scripts bind their handlers
        return self.page

    def close(self) -> None:
        self.context.close()


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("page_path", pages())
def test_page(page_path: str, width: int, server: str, browser) -> None:
    session = _Page(browser, server, width)
    try:
        page = session.open(page_path)
        problems = (_check_math(page) + _check_images(page, width) + _check_overflow(page, width)
                    + _check_outputs(page) + _check_code(page) + _check_result_tables(page)
                    + _check_fold_buttons(page) + _check_display_math(page, width)
                    + _check_text(page) + _check_raw_tex(page) + _check_tables(page, width)
                    + _check_figure_text(page, width) + _check_sliders(page, width)
                    + _check_footer(page) + _check_contents_drawer(page, width)
                    + _check_navigation(page, width))
        if width == 390 and page_path.startswith("notebooks/"):   # a chapter
            problems += _check_weight(session)
        problems += session.errors + [f"outside request: {url}" for url in session.external]
    finally:
        session.close()
    assert not problems, f"{page_path} at {width} px:\n  " + "\n  ".join(problems[:12])


def _check_math(page) -> list[str]:
    if page.locator(".math, mjx-container").count() == 0:
        return []
    problems = []
    if page.locator("mjx-container").count() == 0:
        problems.append("math on the page but MathJax rendered nothing")
    # TeX errors render as mjx-merror; undefined macros (noundefined) as red text.
    errors = page.locator("mjx-merror, mjx-container mjx-mtext[style*='color: red']").count()
    if errors:
        problems.append(f"{errors} MathJax error(s)")
    unrendered = [delim for delim in ("\\(", "\\[") if delim in page.inner_text("body")]
    if unrendered:
        problems.append(f"math left unrendered (raw {unrendered} in the text)")
    return problems


def _check_images(page, width: int) -> list[str]:
    images = page.evaluate("""() => Array.from(document.querySelectorAll('article img'))
        .map(img => ({src: img.getAttribute('src').slice(0, 80), alt: img.getAttribute('alt'),
                      ok: img.complete && img.naturalWidth > 0,
                      // a 2x figure states its CSS size (inline style or attribute)
                      natural: parseFloat(img.style.width) || parseFloat(img.getAttribute('width'))
                               || img.naturalWidth,
                      shown: img.getBoundingClientRect().width,
                      right: img.getBoundingClientRect().right,
                      caption: !img.closest('.cell_output') || !!(img.closest('figure')
                        && img.closest('figure').querySelector('figcaption')
                        && img.closest('figure').querySelector('figcaption')
                               .textContent.trim())}))""")
    viewport = page.evaluate("() => document.documentElement.clientWidth")
    problems = []
    for image in images:
        name = image["src"] if image["src"].startswith("data:") is False else "a slider frame"
        alt = (image["alt"] or "").strip()
        if not image["ok"]:
            problems.append(f"image did not load: {name}")
            continue
        if not alt or re.search(r"(\.(png|jpe?g|gif|svg)$)|_images/", alt):
            problems.append(f"image without a description as alt text: {name} (alt {alt!r})")
        if not image["caption"]:
            problems.append(f"notebook figure without a caption: {name}")
        if width >= 1280 and image["shown"] < MIN_FIGURE_SCALE * image["natural"]:
            problems.append(f"figure shown at {image['shown']:.0f} of its {image['natural']} px: "
                            f"draw it at the size it is shown ({name})")
        if image["right"] > viewport + 1:
            problems.append(f"image overflows the window ({image['right']:.0f} > {viewport}): "
                            f"{name}")
    return problems


def _check_overflow(page, width: int) -> list[str]:
    problems = []
    if width >= 1280:
        scrolling = page.evaluate("""() => Array.from(document.querySelectorAll(
                'article div.highlight pre'))
            .filter(pre => !pre.closest('div.cell_output, div.output, div.cell_input'))
            .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
            .map(pre => pre.textContent.trim().split('\\n')[0].slice(0, 60))""")
        problems += [f"code block scrolls sideways: {first!r}" for first in scrolling]
        page.emulate_media(media="print")
        cut = page.evaluate("""() => Array.from(document.querySelectorAll('pre'))
            .filter(pre => pre.scrollWidth > pre.clientWidth + 1).length""")
        page.emulate_media(media="screen")
        if cut:
            problems.append(f"{cut} code/output block(s) cut off at the edge when printed")
    if width <= 390:
        sizes = page.evaluate("() => [document.documentElement.scrollWidth, "
                              "document.documentElement.clientWidth]")
        if sizes[0] > sizes[1] + 1:
            problems.append(f"page is {sizes[0]} px wide in a {sizes[1]} px window")
        clipped = page.evaluate("""() => Array.from(document.querySelectorAll(
                'article mjx-container:not([display="true"])'))
            .filter(m => { const width = document.documentElement.clientWidth;
                           const box = m.getBoundingClientRect();
                           const content = (m.firstElementChild || m).getBoundingClientRect();
                           const scrolls = ['auto', 'scroll'].includes(getComputedStyle(m).overflowX);
                           return box.width > 0 && (box.right > width + 1
                               || (content.right > width + 1 && !scrolls)); })
            .map(m => m.closest('p, li, td, div').textContent.trim().slice(0, 60))""")
        problems += [f"inline maths cut off at the window edge: {text!r}" for text in clipped]
    return problems


def _check_text(page) -> list[str]:
    text = page.inner_text("body")
    problems = []
    if "Traceback (most recent call last)" in text:
        problems.append("shows a traceback")
    if "NBVAL_" in text:
        problems.append("shows an nbval marker (use a cell tag: nbval-ignore-output)")
    widget_views = page.locator(
        "script[type='application/vnd.jupyter.widget-view+json'], .jupyter-widgets").count()
    if widget_views:
        problems.append(f"{widget_views} ipywidgets view(s) that need a kernel")
    return problems


def _check_sliders(page, width: int) -> list[str]:
    """Every slider has a caption, each control changes the frame, and each frame shown (the
    first, and the one after each move) has no layout fault and, at 390 px, text of at least
    MIN_SLIDER_TEXT_PX CSS px on the page (from the frame's ``attn:min-text-px`` record)."""
    problems = []
    sliders = page.locator(".attn-slider")
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        caption = slider.evaluate("s => !!(s.closest('figure') && s.closest('figure')"
                                  ".querySelector('figcaption'))")
        if not caption:
            problems.append(f"interactive figure {i + 1} has no caption")
        problems += _check_slider_frame(slider.locator("img"), f"slider {i + 1}", width)
        inputs = slider.locator("input[type=range]")
        for j in range(inputs.count()):
            control = inputs.nth(j)
            before = slider.locator("img").get_attribute("src")
            current = int(control.input_value())
            target = 0 if current > 0 else int(control.get_attribute("max"))
            control.evaluate("(input, value) => { input.value = String(value); "
                             "input.dispatchEvent(new Event('input', {bubbles: true})); }",
                             target)
            if slider.locator("img").get_attribute("src") == before:
                problems.append(f"slider {i + 1}, control {j + 1}: moving it changed nothing")
            problems += _check_slider_frame(slider.locator("img"),
                                            f"slider {i + 1}, control {j + 1} moved", width)
            control.evaluate("(input, value) => { input.value = String(value); "
                             "input.dispatchEvent(new Event('input', {bubbles: true})); }",
                             current)
    return list(dict.fromkeys(problems))   # a fault of every frame is named once


def _check_slider_frame(image, name: str, width: int) -> list[str]:
    """The frame a slider shows: no layout fault, and at 390 px its smallest text on the page
    (its record, scaled from the frame's CSS width to its shown width) is readable."""
    src = image.get_attribute("src") or ""
    data = _image_bytes(src, "") if src.startswith("data:image/png;base64,") else None
    records = png_records(data) if data else {}
    if "attn:min-text-px" not in records:
        return [f"{name}: frame without a text-size record (draw it after "
                f"attnbook.plotting.use_book_style)"]
    problems = []
    if records.get("attn:layout-faults"):
        problems.append(f"{name}: frame layout faults: {records['attn:layout-faults'][:200]}")
    sizes = image.evaluate("""img => ({shown: img.getBoundingClientRect().width,
        css: parseFloat(img.getAttribute('width')) || img.naturalWidth / 2})""")
    on_page = float(records["attn:min-text-px"]) * sizes["shown"] / sizes["css"]
    if width == 390 and on_page < MIN_SLIDER_TEXT_PX:
        problems.append(f"{name}: smallest frame text {on_page:.1f} px on the page at {width} px "
                        f"(under {MIN_SLIDER_TEXT_PX:g}: no narrow rendering shown?)")
    return problems


def _becomes(page, condition: str, timeout_ms: float = 2000) -> bool:
    """Whether the JavaScript ``condition`` holds within ``timeout_ms`` (the themes animate
    their drawers and sidebar for 0.25 s; waiting for the state, not a fixed time)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(condition, timeout=timeout_ms)
    except PlaywrightTimeout:
        return False
    return True


def _check_navigation(page, width: int) -> list[str]:
    toggle = page.locator(".primary-toggle:visible").first
    if toggle.count() == 0:
        return ["no visible navigation button"]
    toggle.click()
    if width < 992:
        if not _becomes(page, "() => { const d = document.getElementById("
                              "'pst-primary-sidebar-modal'); return !!(d && d.open); }"):
            return ["the navigation button does not open the navigation drawer"]
        page.keyboard.press("Escape")
        return []
    hidden = _becomes(page, "() => { const s = document.getElementById('pst-primary-sidebar');"
                            " const style = s && getComputedStyle(s); return !s || "
                            "style.display === 'none' || style.visibility === 'hidden' || "
                            "s.getBoundingClientRect().right <= 0; }")
    return [] if hidden else ["the sidebar toggle does not hide the sidebar"]


# A function body's prelude for page.evaluate: renderedLines(el) counts the visual lines of
# el's text (the distinct tops of its text boxes, 3 px apart or more).
RENDERED_LINES = """() => { function renderedLines(element) {
    const tops = [];
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) {
        const range = document.createRange();
        range.selectNodeContents(walker.currentNode);
        for (const r of range.getClientRects()) {
            if (r.width > 0 && r.height > 0) tops.push(r.top);
        }
    }
    tops.sort((a, b) => a - b);
    return tops.filter((top, i) => i === 0 || top - tops[i - 1] >= 3).length;
}"""


def _check_outputs(page) -> list[str]:
    """Printed outputs wrap at the column's edge: none scrolls sideways (its numbers would be
    out of sight), and a wrapped line goes on indented (a hanging indent)."""
    found = page.evaluate("""() => Array.from(document.querySelectorAll(
            'article div.cell_output pre')).filter(pre => pre.offsetParent !== null)
        .map(pre => ({first: pre.textContent.split('\\n')[0].slice(0, 60),
                      scrolls: pre.scrollWidth > pre.clientWidth + 1,
                      indent: getComputedStyle(pre).textIndent}))""")
    problems = []
    for block in found:
        if block["scrolls"]:
            problems.append(f"printed output scrolls sideways: {block['first']!r}")
        elif "hanging" not in block["indent"]:
            problems.append(f"printed output wraps without a hanging indent: {block['first']!r}")
    return problems


def _check_code(page) -> list[str]:
    """A code cell's lines never wrap: it is set with white-space: pre, and shows as many lines
    as it has (a long line scrolls in its box, with the scroll cue)."""
    found = page.evaluate(RENDERED_LINES + """; return Array.from(document.querySelectorAll(
            'article div.cell_input pre')).filter(pre => pre.offsetParent !== null)
        .map(pre => { const text = pre.textContent.replace(/\\n$/, '');
            return {first: text.split('\\n')[0].slice(0, 60), lines: text.split('\\n').length,
                    rendered: renderedLines(pre), space: getComputedStyle(pre).whiteSpace,
                    scrolls: pre.scrollWidth > pre.clientWidth + 1,
                    cue: pre.parentElement.classList.contains('attn-scrolls')}; }); }""")
    problems = []
    for block in found:
        if block["space"] != "pre" or block["rendered"] > block["lines"]:
            problems.append(f"a code line wraps ({block['lines']} lines shown as "
                            f"{block['rendered']}, white-space {block['space']}): "
                            f"{block['first']!r}")
        elif block["scrolls"] and not block["cue"]:
            problems.append(f"code cell scrolls without a scroll cue: {block['first']!r}")
    return problems


def _check_result_tables(page) -> list[str]:
    """A result table never scrolls sideways or runs past its box; a stacked one (book.js)
    labels every value with its column's header."""
    found = page.evaluate("""() => Array.from(document.querySelectorAll(
            'article table.attn-result-table')).filter(t => t.offsetParent !== null).map(t => {
        const box = t.parentElement.getBoundingClientRect(), own = t.getBoundingClientRect();
        return {first: t.textContent.trim().slice(0, 50),
                scrolls: t.scrollWidth > t.clientWidth + 1 || own.right > box.right + 1,
                unlabelled: t.classList.contains('attn-stacked') ? Array.from(
                    t.querySelectorAll('tbody td')).filter(td => !td.hasAttribute('data-label'))
                    .length : 0}; })""")
    problems = []
    for table in found:
        if table["scrolls"]:
            problems.append(f"result table scrolls sideways: {table['first']!r}")
        if table["unlabelled"]:
            problems.append(f"stacked result table with {table['unlabelled']} unlabelled "
                            f"value(s): {table['first']!r}")
    return problems


GENERIC_FOLD_NAME = "Toggle hidden content"


def _check_fold_buttons(page) -> list[str]:
    """Every fold button is named by its fold's visible title, none "Toggle hidden content"."""
    names = page.evaluate("""() => Array.from(document.querySelectorAll(
            'article button, article summary, article [role=button]'))
        .map(b => [b.getAttribute('aria-label'), b.textContent.replace(/\\s+/g, ' ').trim()])""")
    generic = [visible for label, visible in names if (label or "").strip() == GENERIC_FOLD_NAME]
    return [f"{len(generic)} fold button(s) named \"{GENERIC_FOLD_NAME}\", e.g. "
            f"{generic[0][:50]!r}"] if generic else []


def _check_display_math(page, width: int) -> list[str]:
    found = page.evaluate("""() => Array.from(document.querySelectorAll(
            'article mjx-container[display="true"]')).map(m => ({
        text: (m.querySelector('mjx-assistive-mml math') || m).getAttribute('alttext')
              || (m.parentElement.textContent || '').trim().slice(0, 50),
        content: (m.firstElementChild || m).getBoundingClientRect().width,
        column: m.clientWidth, scrolls: m.scrollWidth > m.clientWidth + 1,
        cue: m.parentElement.classList.contains('attn-scrolls'),
        number: (() => { const n = m.parentElement.querySelector(':scope > span.eqno');
            if (!n) return null;
            const box = m.getBoundingClientRect(), tag = n.getBoundingClientRect();
            return {text: n.textContent.replace('#', '').trim(),
                    beside: tag.left >= box.right - 1 && tag.top < box.bottom,
                    under: tag.top >= box.bottom - 1 && tag.top - box.bottom < 16
                           && tag.right >= box.right - 24}; })()}))""")
    problems = []
    for math in found:
        number = math["number"]
        if number and math["scrolls"]:
            problems.append(f"numbered equation {number['text']} is cut (scrolls in its box) "
                            f"at {width} px: {math['text'][:50]!r}")
        elif width >= 1280 and math["content"] > math["column"] + 1:
            problems.append(f"display equation {math['content']:.0f} px wide in a "
                            f"{math['column']} px column: {math['text'][:50]!r}")
        elif number and not (number["beside"] or number["under"]):
            problems.append(f"the number {number['text']} is not with its equation's end at "
                            f"{width} px: {math['text'][:50]!r}")
        elif math["scrolls"] and not math["cue"]:
            problems.append(f"display equation scrolls without a scroll cue: "
                            f"{math['text'][:50]!r}")
    return problems


# TeX left in the text: a dollar sign, a backslash command, or ^{ / _{ outside code and maths
RAW_TEX = re.compile(r"\$|\\[A-Za-z]{2,}|[_^]\{")


def _check_raw_tex(page) -> list[str]:
    texts = page.evaluate("""() => {
        // dt.sig: an API signature is Python code (a string default may hold ^{ or $)
        const skip = 'pre, code, kbd, script, style, mjx-container, .math, .highlight, '
                   + 'textarea, .sd-badge, dt.sig';
        const walker = document.createTreeWalker(document.querySelector('article')
            || document.body, NodeFilter.SHOW_TEXT);
        const found = [];
        while (walker.nextNode()) {
            const node = walker.currentNode;
            if (node.parentElement && !node.parentElement.closest(skip)) {
                found.push(node.textContent);
            }
        }
        return found;
    }""")
    problems = []
    for text in texts:
        match = RAW_TEX.search(text)
        if match:
            start = max(0, match.start() - 30)
            problems.append(f"raw TeX or $ in the text: {text[start:match.end() + 30]!r}")
    return problems


def _check_tables(page, width: int) -> list[str]:
    """Header cells break only between words; stacked rows (phones) label their values."""
    problems = page.evaluate(RENDERED_LINES + """; return Array.from(document.querySelectorAll(
        'article table th'))
        .filter(th => th.offsetParent !== null && th.textContent.trim())
        .map(th => { const words = th.textContent.trim().split(/\\s+/).length;
            return renderedLines(th) > words
                ? `table header breaks a word: ${th.textContent.trim()}` : null; })
        .filter(Boolean); }""")
    if width < 600:
        unlabelled = page.evaluate("""() => Array.from(document.querySelectorAll(
                'article .pst-scrollable-table-container > table')).filter(t =>
                t.querySelector('thead th')).flatMap(t => Array.from(
                t.querySelectorAll('tbody td:not(:first-child)')))
            .filter(td => td.offsetParent !== null && !td.hasAttribute('data-label')).length""")
        if unlabelled:
            problems.append(f"{unlabelled} value(s) of stacked tables without a label")
    return problems


def _image_bytes(src: str, page_url: str) -> bytes | None:
    if src.startswith("data:image/png;base64,"):
        return base64.b64decode(src.split(",", 1)[1])
    if urlparse(src).scheme:   # an absolute URL (currentSrc) of the site's server
        target = Path(HTML_DIR) / unquote(urlparse(src).path.lstrip("/"))
    else:
        path = Path(HTML_DIR) / unquote(urlparse(page_url).path.lstrip("/"))
        target = (path.parent / unquote(urlparse(src).path)).resolve()
    return target.read_bytes() if target.is_file() and target.suffix == ".png" else None


def _check_figure_text(page, width: int) -> list[str]:
    """Every notebook figure opens an enlarged view that fits the window's width; its smallest
    text is measured there and on the page (CSS px) from the size record the book's figure
    style writes into the image shown (on a phone, the figure's narrow rendering)."""
    images = page.locator("article div.cell_output img, article figure img")
    problems = []
    for i in range(images.count()):
        image = images.nth(i)
        if image.evaluate("img => !!img.closest('.attn-slider')"):
            continue   # slider frames: _check_sliders reads their records
        src = image.evaluate("img => img.currentSrc || img.src") or ""
        data = _image_bytes(src, page.url)
        if data is None:
            continue   # not a PNG (no record to read)
        name = src.rsplit("/", 1)[-1][:60]
        records = png_records(data)
        if records.get("attn:confusable"):
            problems.append(f"series only colour tells apart, not under colour-blindness: "
                            f"{records['attn:confusable']} ({name})")
        if records.get("attn:layout-faults"):
            problems.append(f"figure layout faults: {records['attn:layout-faults'][:200]} "
                            f"({name})")
        if "attn:min-text-px" not in records:
            problems.append(f"figure without a text-size record (draw it after "
                            f"attnbook.plotting.use_book_style): {name}")
            continue
        text_px = float(records["attn:min-text-px"])
        sizes = image.evaluate("""img => ({shown: img.getBoundingClientRect().width,
            css: /\\.narrow\\.png$/.test(img.currentSrc) ? img.naturalWidth / 2
                 : parseFloat(img.style.width) || parseFloat(img.getAttribute('width'))
                 || img.naturalWidth})""")
        on_page = text_px * sizes["shown"] / sizes["css"]
        if width >= 900 and on_page < MIN_FIGURE_TEXT_PX:
            problems.append(f"smallest figure text {on_page:.1f} px on the page: {name}")
        if width in (390, 1280):   # the enlarged view, on a phone and a desktop
            image.scroll_into_view_if_needed()
            image.click()
            enlarged = page.evaluate("""() => { const d = document.querySelector(
                'dialog.attn-enlarged'); if (!d || !d.open) return null;
                const r = d.querySelector('img').getBoundingClientRect();
                return {left: r.left, right: r.right, width: r.width,
                        window: document.documentElement.clientWidth}; }""")
            page.keyboard.press("Escape")
            if enlarged is None:
                problems.append(f"figure does not open an enlarged view: {name}")
                continue
            if enlarged["left"] < -0.5 or enlarged["right"] > enlarged["window"] + 0.5:
                problems.append(f"enlarged figure wider than the window ({enlarged['width']:.0f}"
                                f" px in {enlarged['window']} px): {name}")
            if text_px * enlarged["width"] / sizes["css"] < MIN_FIGURE_TEXT_PX:
                problems.append(f"smallest figure text "
                                f"{text_px * enlarged['width'] / sizes['css']:.1f}"
                                f" px in the enlarged view: {name}")
    return problems


def _check_footer(page) -> list[str]:
    """Every page's footer: build date, version and both licences."""
    footer = page.locator(".attn-footer")
    if footer.count() == 0:
        return ["no footer with the build date, version and licences"]
    text = footer.first.inner_text()
    wanted = [r"Built \d{4}-\d{2}-\d{2}", r"version \d+\.\d+", "MIT", "CC BY 4.0"]
    return [f"footer lacks {pattern!r}: {text!r}" for pattern in wanted
            if not re.search(pattern, text)]


def _check_contents_drawer(page, width: int) -> list[str]:
    """Phones: the "on this page" drawer closes after a tap on a section."""
    if width >= 992:
        return []
    toggle = page.locator(".secondary-toggle:visible").first
    if toggle.count() == 0:
        return []   # a page without sections has no drawer
    toggle.click()
    if not _becomes(page, "() => document.getElementById('pst-secondary-sidebar-modal').open"):
        return ["the \"on this page\" button does not open its drawer"]
    links = page.locator("#pst-secondary-sidebar-modal a[href^='#']:visible")
    # a section from the middle: the first may already be near the top, the last may be too
    # close to the page's end to scroll up to the top
    link = links.nth(links.count() // 2)
    if links.count() == 0:
        page.keyboard.press("Escape")
        return []
    target = (link.get_attribute("href") or "#")[1:]
    link.click()
    if not _becomes(page, "() => !document.getElementById('pst-secondary-sidebar-modal').open"):
        page.keyboard.press("Escape")
        return ["the \"on this page\" drawer stays open after a tap on a section"]
    page.wait_for_timeout(300)
    top, at_end = page.evaluate("""id => { const heading = document.getElementById(
        decodeURIComponent(id)); const end = scrollY + innerHeight
        >= document.documentElement.scrollHeight - 2;
        return [heading ? heading.getBoundingClientRect().top : null, end]; }""", target)
    if top is None or not (0 <= top <= MAX_HEADING_TOP_PX or (top > 0 and at_end)):
        return [f"after a tap in the \"on this page\" drawer, #{target} lands at {top} px "
                f"(at most {MAX_HEADING_TOP_PX} px below the top expected)"]
    return []


def _check_weight(session: "_Page") -> list[str]:
    """Everything a phone downloaded for the page, gzipped as a server would send it (images
    and fonts count as they are: already compressed), is within the budget."""
    sizes = {}
    for response in session.responses:
        body = response.body()
        sizes[response.url] = min(len(body), len(gzip.compress(body, 6)))
    total = sum(sizes.values())
    if total <= PAGE_BUDGET_BYTES:
        return []
    heaviest = sorted(sizes.items(), key=lambda item: -item[1])[:5]
    return [f"{total / 1e6:.2f} MB gzipped in {len(sizes)} requests, budget "
            f"{PAGE_BUDGET_BYTES / 1e6} MB; heaviest: "
            + ", ".join(f"{url.rsplit('/', 1)[-1][:40]} {size / 1e3:.0f} kB"
                        for url, size in heaviest)]


def test_every_claim_has_its_own_anchor(server: str, browser) -> None:
    if "book/ledger.html" not in pages():
        pytest.skip("no ledger page in this build")
    session = _Page(browser, server, 390)
    try:
        page = session.open("book/ledger.html")
        ids = page.evaluate("() => Array.from(document.querySelectorAll('a.claim-anchor'))"
                            ".map(a => [a.id, a.getAttribute('href')])")
        rows = page.locator("div.ledger-reading").count()
        first = ids[0][0] if ids else None
        if first:
            page.goto(f"{server}/book/ledger.html#{first}")
            page.wait_for_timeout(300)
            top = page.evaluate(f"() => document.getElementById('{first}')"
                                ".getBoundingClientRect().top")
    finally:
        session.close()
    assert rows > 0 and len(ids) == rows, f"{len(ids)} anchors for {rows} claims"
    assert len({anchor for anchor, _ in ids}) == len(ids), "claim anchors repeat"
    assert all(href == f"#{anchor}" for anchor, href in ids)
    assert 0 <= top < 900, f"#{first} does not scroll its claim into view (top {top})"


def test_the_ledger_is_published_as_data_beside_its_page(server: str, browser) -> None:
    """The ledger page links ledger.json, which the site serves: every claim with its record."""
    if "book/ledger.html" not in pages():
        pytest.skip("no ledger page in this build")
    session = _Page(browser, server, 1280)
    try:
        page = session.open("book/ledger.html")
        href = page.evaluate("() => Array.from(document.querySelectorAll('a'))"
                             ".map(a => a.getAttribute('href')).find(h => h === 'ledger.json')")
        response = page.goto(f"{server}/book/ledger.json")
        data = json.loads(response.text()) if response and response.ok else None
    finally:
        session.close()
    assert href == "ledger.json", "the ledger page does not link ledger.json"
    assert data is not None, "the site does not serve book/ledger.json"
    assert len(data["claims"]) >= 40
    assert all({"id", "paper", "label", "verdict"} <= set(c) for c in data["claims"])


def _synthetic_figure_png() -> str:
    """A figure with 6 pt text and two lines only colour tells apart (red/green)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnbook import plotting

    fig, ax = plotting.figure(width="small")
    ax.plot([0, 1], [0, 1], color="#2ca02c", label="green")
    ax.plot([0, 1], [1, 0], color="#d62728", label="red")
    ax.set_xlabel("tiny label", fontsize=6)
    png = plotting.figure_png(fig)
    plt.close(fig)
    return base64.b64encode(png).decode("ascii")


def _faulty_figure_png() -> str:
    """A figure whose y label and its twin's are drawn one over the other (a layout fault)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnbook import plotting

    fig, ax = plotting.figure(width="small")
    twin = ax.twinx()
    ax.set_ylabel("loss of the first series")
    twin.set_ylabel("norm of the second series")
    twin.yaxis.set_label_position("left")
    for axis in (ax.yaxis, twin.yaxis):
        axis.set_label_coords(-0.25, 0.5)   # both left of the tick labels, one on the other
    png = plotting.figure_png(fig)
    plt.close(fig)
    return base64.b64encode(png).decode("ascii")


def _slider_html(*, narrow: bool) -> str:
    """A slider over two full-width panels; without ``narrow`` its frames lose their narrow
    renderings, as a slider drawn before they had them."""
    import dataclasses

    import matplotlib

    matplotlib.use("Agg")
    from attnbook import plotting
    from attnbook.slider import frame_slider

    def draw(top: float):
        fig, axes = plotting.figure(1, 2)
        for ax in axes:
            ax.plot([0, 1], [0, top])
        return fig

    slider = frame_slider(draw, controls={"top": [1.0, 2.0]}, alt="two lines up to {top:g}")
    if not narrow:
        slider.frames = {key: dataclasses.replace(frame, narrow=None)
                         for key, frame in slider.frames.items()}
    return (f'<html><body><article><figure style="margin: 0">{slider.to_html()}'
            f"<figcaption>A slider</figcaption></figure></article></body></html>")


def test_the_checks_catch_each_regression(browser) -> None:
    """Each check fails on a page made to break it (so none of them can pass vacuously)."""
    session = _Page(browser, "http://127.0.0.1:9", 1280)
    try:
        page = session.page
        long_line = "column_a   column_b   " * 12
        wide_row = "".join(f"<td>{i}.{i}{i}{i}{i}{i}{i}</td>" for i in range(14))
        page.set_content(f"""<html><body><article>
          <div class="cell_output"><div><pre style="white-space: pre; width: 300px;
            overflow-x: auto">{long_line}</pre></div></div>
          <div class="cell_input"><div class="highlight"><pre style="white-space: pre-wrap;
            width: 300px">{long_line}</pre></div></div>
          <details class="hide"><summary aria-label="Toggle hidden content">
            <p class="collapsed">Imports: show source</p></summary><p>x</p></details>
          <div class="cell_output"><div style="width: 300px"><table class="attn-result-table"
            style="display: block; overflow-x: auto; max-width: 100%"><thead><tr>
            {"<th>c</th>" * 14}</tr></thead><tbody><tr>{wide_row}</tr></tbody></table></div>
          </div>
          <p>the raw $x^{{2}}$ of an exercise</p>
          <div class="math"><mjx-container display="true" style="display: block; width: 300px;
            overflow-x: auto"><div style="width: 900px">a wide equation</div></mjx-container></div>
          <div class="math"><span class="eqno">(1.1)</span><mjx-container display="true"
            style="display: block; width: 300px; overflow-x: auto"><div style="width: 900px">a
            wide numbered equation</div></mjx-container></div>
          <table><thead><tr><th style="width: 10px; overflow-wrap: anywhere">Threshold</th>
            </tr></thead><tbody><tr><td>1</td></tr></tbody></table>
          <div class="cell_output"><img alt="a figure" width="300"
            src="data:image/png;base64,{_synthetic_figure_png()}"></div>
          <div class="cell_output"><img alt="a figure with a fault" width="432"
            src="data:image/png;base64,{_faulty_figure_png()}"></div>
        </article></body></html>""")
        static = Path(__file__).resolve().parents[1] / "book" / "_static"
        page.add_style_tag(path=str(static / "book.css"))
        page.add_script_tag(path=str(static / "book.js"))
        page.evaluate("() => { enlargeableFigures(); markScrollBoxes(); }")
        found = {
            "scrolling output": _check_outputs(page),
            "wrapped code": _check_code(page),
            "wide result table": _check_result_tables(page),
            "fold button": _check_fold_buttons(page),
            "raw TeX": _check_raw_tex(page),
            "wide equation": _check_display_math(page, 1280),
            "broken header": _check_tables(page, 1280),
            "figure": _check_figure_text(page, 1280),
        }
        # book.js stacks the wide table and names the fold by its title: both checks then pass
        page.evaluate("() => { fitResultTables(); nameFoldButtons(); }")
        fixed = {"wide result table": _check_result_tables(page),
                 "fold button": _check_fold_buttons(page),
                 "fold name": page.locator("summary").get_attribute("aria-label")}
    finally:
        session.close()
    phone = _Page(browser, "http://127.0.0.1:9", 390)
    try:   # a slider on a phone: its wide frames only, then with their narrow renderings
        for kind in ("wide", "narrow"):
            phone.page.set_content(_slider_html(narrow=kind == "narrow"))
            phone.page.add_style_tag(path=str(static / "book.css"))
            found[f"{kind} slider"] = _check_sliders(phone.page, 390)
    finally:
        phone.close()
    assert any("smallest frame text" in p for p in found["wide slider"]), found
    assert found["narrow slider"] == [], found
    assert any(p.startswith("figure layout faults: y label 'loss of the first series' overlaps "
                            "y label 'norm of the second series'") for p in found["figure"]), found
    assert any("printed output scrolls sideways" in p for p in found["scrolling output"]), found
    assert any("a code line wraps" in p for p in found["wrapped code"]), found
    assert any("result table scrolls sideways" in p for p in found["wide result table"]), found
    assert any("Toggle hidden content" in p for p in found["fold button"]), found
    assert any("raw TeX or $" in p for p in found["raw TeX"]), found
    assert any("display equation" in p and "wide" in p for p in found["wide equation"]), found
    assert any("numbered equation (1.1) is cut" in p for p in found["wide equation"]), found
    assert any("breaks a word" in p for p in found["broken header"]), found
    figure = " ".join(found["figure"])
    assert "green / red (deuteranopia)" in figure and "on the page" in figure, found
    assert fixed["wide result table"] == [] and fixed["fold button"] == [], fixed
    assert fixed["fold name"] == "Imports: show source", fixed


def test_the_ledger_fits_the_window_and_its_target_height(server: str, browser) -> None:
    """At 1280 x 800 the ledger uses the window's width (no squeezed value column) and its
    last claim ends within LEDGER_MAX_SCREENS screens; every claim keeps its verdict badge."""
    if "book/ledger.html" not in pages():
        pytest.skip("no ledger page in this build")
    session = _Page(browser, server, 1280)
    try:
        page = session.open("book/ledger.html")
        found = page.evaluate("""() => { const readings = document.querySelectorAll(
                'div.ledger-reading');
            const last = readings[readings.length - 1];
            return {article: document.querySelector('article').getBoundingClientRect().width,
                    bottom: last ? last.getBoundingClientRect().bottom + scrollY : null,
                    readings: readings.length,
                    badged: Array.from(readings).filter(r => r.querySelector('.sd-badge')).length,
                    headline: document.querySelectorAll('table.ledger-headlines a[href^="#claim-"]')
                        .length}; }""")
    finally:
        session.close()
    assert found["readings"] >= 40 and found["badged"] == found["readings"], found
    assert found["headline"] >= 10, found
    assert found["article"] >= 900, f"the ledger's column is {found['article']:.0f} px wide"
    screens = found["bottom"] / LEDGER_SCREEN_PX
    assert screens <= LEDGER_MAX_SCREENS, (f"the ledger's last claim ends {screens:.1f} screens "
                                           f"down (at most {LEDGER_MAX_SCREENS})")


def test_evidence_sections_link_back_to_their_ledger_entry(server: str, browser) -> None:
    """Every section (or figure) that shows a claim's verdict or evidence carries a link back
    to the claim's entry in the ledger (book.js, from book/ledger.json's targets); a sample of
    pages is opened, and each link's target exists on the ledger page."""
    ledger = Path(HTML_DIR or "") / "book" / "ledger.json"
    if not ledger.is_file():
        pytest.skip("no book/ledger.json in this build")
    claims = json.loads(ledger.read_text())["claims"]
    by_page: dict[str, set[str]] = {}
    for claim in claims:
        for target in claim.get("targets", []):
            page_path, _, anchor = target.partition("#")
            by_page.setdefault(page_path, set()).add(anchor)
    assert by_page, "book/ledger.json names no targets"
    sample = sorted(by_page)[:: max(1, len(by_page) // 5)]
    session = _Page(browser, server, 1280)
    problems = []
    try:
        page = session.open("book/ledger.html")
        anchors = set(page.evaluate("() => Array.from(document.querySelectorAll("
                                    "'a.claim-anchor')).map(a => a.id)"))
        for page_path in sample:
            page = session.open(page_path)
            page.wait_for_selector(".attn-ledger-back", timeout=5000)
            found = page.evaluate("""() => Array.from(document.querySelectorAll(
                    '.attn-ledger-back')).map(line => ({
                target: (line.closest('figure') || line.previousElementSibling
                         && line.previousElementSibling.closest('section') || {}).id,
                links: Array.from(line.querySelectorAll('a'))
                    .map(a => a.getAttribute('href'))}))""")
            shown = {line["target"] for line in found}
            missing = {a for a in by_page[page_path]
                       if page.evaluate("id => !!document.getElementById(id)", a)} - shown
            if missing:
                problems.append(f"{page_path}: no link back to the ledger at {sorted(missing)}")
            for line in found:
                for href in line["links"]:
                    if href.split("#")[-1] not in anchors:
                        problems.append(f"{page_path}: {href} names no claim of the ledger")
    finally:
        session.close()
    assert not problems, "\n".join(problems[:10])


def _search(page, server: str, query: str) -> list[dict]:
    page.goto(f"{server}/search.html?q={query.replace(' ', '+')}", wait_until="load")
    page.wait_for_function("() => { const s = document.querySelector('#search-results "
                           "p.search-summary'); return s && /found|did not match/.test("
                           "s.textContent); }", timeout=60_000)
    page.wait_for_timeout(1500)   # the snippets arrive one page fetch at a time
    return page.evaluate("""() => Array.from(document.querySelectorAll(
            '#search-results ul.search > li')).map(li => ({
        href: li.querySelector('a').getAttribute('href'),
        title: li.querySelector('a').textContent,
        snippet: (li.querySelector('p.context') || {textContent: ''}).textContent}))""")


@pytest.mark.parametrize("query", ["Villani", "Algorithm 1"])
def test_search_ranks_the_chapters_above_the_api_reference(query: str, server: str,
                                                          browser) -> None:
    """The first result is a chapter or report page, every API result comes after every
    chapter result, and no title or snippet shows TeX (the maths is shown as text)."""
    if not (Path(HTML_DIR or "") / "search.html").is_file():
        pytest.skip("no search page in this build")
    session = _Page(browser, server, 1280)
    try:
        results = _search(session.page, server, query)
        errors = list(session.errors)
    finally:
        session.close()
    assert results, f"no result for {query!r}"
    assert results[0]["href"].startswith("notebooks/"), f"first result {results[0]}"
    kinds = ["api" if r["href"].startswith("book/api") else "chapter"
             if r["href"].startswith("notebooks/") else "other" for r in results]
    if "api" in kinds:
        assert kinds.index("api") > max(i for i, k in enumerate(kinds) if k == "chapter"), kinds
    tex = [r["title"] + " | " + r["snippet"][:80] for r in results
           if re.search(r"\\[()\[\]]|\\[A-Za-z]{2,}|[_^]\{", r["title"] + r["snippet"])]
    assert not tex, f"TeX in search results: {tex[:3]}"
    assert not errors, errors


def test_the_search_box_icon_does_not_cover_the_query(server: str, browser) -> None:
    if not (Path(HTML_DIR or "") / "search.html").is_file():
        pytest.skip("no search page in this build")
    session = _Page(browser, server, 1280)
    try:
        session.open("search.html?q=Villani")
        boxes = session.page.evaluate("""() => Array.from(document.querySelectorAll(
                'form.bd-search')).filter(f => f.offsetParent !== null).map(f => {
            const icon = f.querySelector('.fa-magnifying-glass').getBoundingClientRect();
            const input = f.querySelector('input');
            const text = input.getBoundingClientRect().left
                         + parseFloat(getComputedStyle(input).paddingLeft);
            return {icon: icon.right, text}; })""")
    finally:
        session.close()
    assert boxes, "no search box on the search page"
    assert all(box["icon"] <= box["text"] for box in boxes), boxes


def test_the_glossary_defines_the_concepts_and_indexes_them(server: str, browser) -> None:
    """The glossary has at least MIN_GLOSSARY_TERMS terms, GLOSSARY_CONCEPTS among them;
    each definition links to a section that exists; the general index lists the concepts."""
    if "book/glossary.html" not in pages():
        pytest.skip("no glossary page in this build")
    session = _Page(browser, server, 1280)
    try:
        page = session.open("book/glossary.html")
        terms = page.evaluate("() => Array.from(document.querySelectorAll('dl.glossary dt'))"
                              ".map(dt => dt.textContent.replace('#', '').trim())")
        links = page.evaluate("""() => Array.from(document.querySelectorAll('dl.glossary dd a'))
            .map(a => a.href).filter(h => h.includes('#') && !h.includes('genindex'))""")
        targets = {}
        for link in sorted(set(links)):
            url, _, anchor = link.partition("#")
            page.goto(url, wait_until="load")
            targets[link] = page.evaluate("id => !!document.getElementById(id)", anchor)
        page = session.open("genindex.html")
        index = page.inner_text("article").lower()
    finally:
        session.close()
    lowered = [term.lower() for term in terms]
    assert len(terms) >= MIN_GLOSSARY_TERMS, f"{len(terms)} glossary terms"
    assert all(concept.lower() in lowered for concept in GLOSSARY_CONCEPTS), (
        sorted(set(c.lower() for c in GLOSSARY_CONCEPTS) - set(lowered)))
    broken = [link for link, ok in targets.items() if not ok]
    assert not broken, f"glossary links to sections that do not exist: {broken}"
    assert all(concept.lower() in index for concept in GLOSSARY_CONCEPTS), "not in the index"


def test_bibliography_links_every_arxiv_id(server: str, browser) -> None:
    """Every entry that names an arXiv identifier links to its arXiv page."""
    if "book/bibliography.html" not in pages():
        pytest.skip("no bibliography page in this build")
    session = _Page(browser, server, 1280)
    try:
        entries = session.open("book/bibliography.html").evaluate(
            "() => Array.from(document.querySelectorAll('div.citation')).map(e => "
            "({text: e.textContent, links: Array.from(e.querySelectorAll('a'))"
            ".map(a => a.href)}))")
    finally:
        session.close()
    with_ids = [(re.findall(r"arXiv:\s*(\d{4}\.\d{4,5})", e["text"]), e) for e in entries]
    with_ids = [(ids, e) for ids, e in with_ids if ids]
    assert len(with_ids) >= 3
    unlinked = [ids for ids, e in with_ids
                if not all(any(f"arxiv.org/abs/{i}" in link for link in e["links"])
                           for i in ids)]
    assert not unlinked, f"arXiv identifiers without a link: {unlinked}"


def test_landing_page_lists_every_chapter_and_how_to_cite(server: str, browser) -> None:
    import yaml

    toc = yaml.safe_load((Path(__file__).resolve().parents[1] / "_toc.yml").read_text())
    chapters = [entry["file"] for part in toc["parts"] for entry in part["chapters"]
                if entry["file"].startswith("notebooks/")
                and part["caption"] != "Reproduction report"]   # the intro links the ledger
    session = _Page(browser, server, 1280)
    try:
        page = session.open("book/intro.html")
        links = page.evaluate("() => Array.from(document.querySelectorAll("
                              "'#the-chapters table a')).map(a => a.getAttribute('href'))")
        rows = page.evaluate("() => Array.from(document.querySelectorAll("
                             "'#the-chapters table tbody tr')).map(r => r.cells[2].innerText)")
        bibtex = page.locator("#how-to-cite pre").first.inner_text()
        pdf_links = page.evaluate("() => Array.from(document.querySelectorAll('.attn-pdf a'))"
                                  ".map(a => a.getAttribute('href'))")
    finally:
        session.close()
    linked = {href.split("#")[0].removeprefix("../").removesuffix(".html") for href in links}
    assert linked == set(chapters), f"chapters not listed: {set(chapters) - linked}"
    assert len(rows) == len(chapters) and all(len(line.split()) >= 5 for line in rows)
    assert bibtex.startswith("@software{") and "title = " in bibtex and "version = " in bibtex
    for href in pdf_links:   # a build with ATTNBOOK_PDF links the whole-book PDF: it must exist
        pdf = (Path(HTML_DIR) / "book" / href).resolve()
        assert pdf.is_file() and pdf.read_bytes()[:5] == b"%PDF-", f"{href}: no PDF there"
