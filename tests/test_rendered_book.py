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
* a code or output block scrolls sideways (1280 px, on screen or printed), or the page
  does, or inline maths runs past the window edge without a scroll box of its own (390 px);
* the visible navigation button does nothing: below 992 px it must open the navigation
  drawer, above it must hide the sidebar;
* an interactive figure does not change its image when its slider moves, or a widget view
  is embedded that needs a kernel;
* it shows a Python traceback or an nbval marker.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path
from typing import Iterator

import pytest

HTML_DIR = os.environ.get("ATTNBOOK_HTML")
CHROMIUM = os.environ.get("ATTNBOOK_CHROMIUM", "/usr/bin/chromium")
SKIP_DIRS = {"_static", "_sources", "_images", "vendor"}
SKIP_PAGES = {"genindex.html", "search.html"}
WIDTHS = (1280, 900, 390)
MIN_FIGURE_SCALE = 0.7

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
        self.page.route("**/*", self._route)
        self.page.on("console", lambda m: self.errors.append(f"console: {m.text}")
                     if m.type == "error" else None)
        self.page.on("pageerror", lambda e: self.errors.append(f"uncaught: {e}"))
        self.page.on("requestfailed", lambda r: None if r.url in self.external
                     else self.errors.append(f"failed request: {r.url}"))
        self.page.on("response", lambda r: self.errors.append(f"HTTP {r.status}: {r.url}")
                     if r.status >= 400 else None)

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
                    + _check_text(page) + _check_sliders(page) + _check_navigation(page, width))
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
                      ok: img.complete && img.naturalWidth > 0, natural: img.naturalWidth,
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
                'article div.highlight pre, article div.cell_output pre, article .output pre'))
            .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
            .map(pre => pre.textContent.trim().split('\\n')[0].slice(0, 60))""")
        problems += [f"code/output block scrolls sideways: {first!r}" for first in scrolling]
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


def _check_sliders(page) -> list[str]:
    problems = []
    sliders = page.locator(".attn-slider")
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        caption = slider.evaluate("s => !!(s.closest('figure') && s.closest('figure')"
                                  ".querySelector('figcaption'))")
        if not caption:
            problems.append(f"interactive figure {i + 1} has no caption")
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
            control.evaluate("(input, value) => { input.value = String(value); "
                             "input.dispatchEvent(new Event('input', {bubbles: true})); }",
                             current)
    return problems


def _check_navigation(page, width: int) -> list[str]:
    toggle = page.locator(".primary-toggle:visible").first
    if toggle.count() == 0:
        return ["no visible navigation button"]
    toggle.click()
    page.wait_for_timeout(500)   # the themes animate the sidebar for 0.25 s
    if width < 992:
        opened = page.evaluate("() => { const d = document.getElementById("
                               "'pst-primary-sidebar-modal'); return !!(d && d.open); }")
        if not opened:
            return ["the navigation button does not open the navigation drawer"]
        page.keyboard.press("Escape")
        return []
    hidden = page.evaluate("() => { const s = document.getElementById('pst-primary-sidebar');"
                           " const style = s && getComputedStyle(s); return !s || "
                           "style.display === 'none' || style.visibility === 'hidden' || "
                           "s.getBoundingClientRect().right <= 0; }")
    return [] if hidden else ["the sidebar toggle does not hide the sidebar"]
