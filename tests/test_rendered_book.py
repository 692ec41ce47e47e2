"""Browser check of the built book: headless Debian chromium opens every page, offline.

Runs only when ``ATTNBOOK_HTML`` names a built site (``scripts/test.sh`` builds the book and
then runs this file); otherwise every test is skipped with that reason. Each page is served
from 127.0.0.1 and every request to any other host is blocked and counted, so the checks
prove the book renders with no network. A page fails when

* it contains math but MathJax rendered no ``mjx-container``, produced an ``mjx-merror`` or
  an undefined macro, or left TeX delimiters unrendered;
* an image does not load (``naturalWidth == 0``);
* it embeds widget state but no widget was rendered;
* it shows a Python traceback;
* it requested anything from outside the site.
"""

from __future__ import annotations

import functools
import http.server
import os
import threading
from pathlib import Path
from typing import Iterator

import pytest

HTML_DIR = os.environ.get("ATTNBOOK_HTML")
CHROMIUM = os.environ.get("ATTNBOOK_CHROMIUM", "/usr/bin/chromium")
SKIP_DIRS = {"_static", "_sources", "_images", "vendor"}
SKIP_PAGES = {"genindex.html", "search.html"}

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


@pytest.mark.parametrize("page_path", pages())
def test_page_renders_offline(page_path: str, server: str, browser) -> None:
    page = browser.new_page()
    external: list[str] = []

    def route(request_route) -> None:
        if request_route.request.url.startswith(server):
            request_route.continue_()
        else:
            external.append(request_route.request.url)
            request_route.abort()

    page.route("**/*", route)
    page.goto(f"{server}/{page_path}", wait_until="load")
    html = page.content()
    has_math = page.locator(".math, mjx-container").count() > 0
    if has_math:
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise",
                               timeout=30_000)
        page.evaluate("() => MathJax.startup.promise")
        containers = page.locator("mjx-container").count()
        # TeX errors render as mjx-merror; undefined macros (noundefined) as red text.
        errors = page.locator("mjx-merror, mjx-container mjx-mtext[style*='color: red']").count()
        assert containers > 0, f"{page_path}: math on the page but MathJax rendered nothing"
        assert errors == 0, f"{page_path}: {errors} MathJax error(s)"
        unrendered = [delim for delim in ("\\(", "\\[") if delim in page.inner_text("body")]
        assert not unrendered, f"{page_path}: math left unrendered (raw {unrendered} in the text)"
    broken = page.evaluate("""() => Array.from(document.images)
        .filter(img => !(img.complete && img.naturalWidth > 0)).map(img => img.src)""")
    assert not broken, f"{page_path}: images that did not load: {broken}"
    if "application/vnd.jupyter.widget-state+json" in html:
        page.wait_for_selector(".jupyter-widgets", timeout=30_000)
        rendered = page.locator(".jupyter-widgets").count()
        assert rendered > 0, f"{page_path}: widget state embedded but no widget rendered"
    text = page.inner_text("body")
    assert "Traceback (most recent call last)" not in text, f"{page_path} shows a traceback"
    assert not external, f"{page_path} requested outside the site: {external[:5]}"
    page.close()
