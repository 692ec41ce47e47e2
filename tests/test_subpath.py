"""The built book works under a sub-path, as a GitHub Pages project site serves it.

Runs only when ``ATTNBOOK_HTML`` names a built site (the browser step of ``scripts/test.sh``).
The site is served at ``http://127.0.0.1:PORT/attnbook/`` and nothing else exists on that
server, so a link or asset with an absolute path (``/_static/...``) fails with 404. Headless
Chromium opens the root (Jupyter Book's redirect), a prose page, the ledger and two chapters;
every request must succeed and stay on the server, including those the browser makes on its
own (a page that names no icon makes it ask for ``/favicon.ico``), which only the server
sees; every page names an icon. The ledger's links to chapter sections must name sections
that exist in the built chapters.
"""

from __future__ import annotations

import functools
import http.server
import os
import re
import threading
from pathlib import Path
from urllib.parse import urljoin, urlparse

import pytest

HTML_DIR = os.environ.get("ATTNBOOK_HTML")
CHROMIUM = os.environ.get("ATTNBOOK_CHROMIUM", "/usr/bin/chromium")
PREFIX = "/attnbook/"
PAGES = ["", "book/intro.html", "book/ledger.html", "notebooks/ch04_algorithm1.html",
         "notebooks/ch11_darcy.html"]

pytestmark = pytest.mark.skipif(not HTML_DIR, reason="set ATTNBOOK_HTML to a built book "
                                "(scripts/test.sh does) to run the sub-path check")


class _PrefixHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the site only below PREFIX; every other path is a 404. Records the paths it
    answers with an error."""

    errors: list[str] = []

    def translate_path(self, path: str) -> str:
        route = urlparse(path).path
        if not route.startswith(PREFIX):
            return str(Path(self.directory) / "__outside_the_prefix__")
        return super().translate_path("/" + route[len(PREFIX):])

    def send_error(self, code: int, *args: object, **kwargs: object) -> None:
        self.errors.append(f"{code} {self.path}")
        super().send_error(code, *args, **kwargs)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> str:
    handler = functools.partial(_PrefixHandler, directory=HTML_DIR)
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}{PREFIX}"
    httpd.shutdown()


def test_pages_load_under_a_prefix_with_no_failed_request(site: str) -> None:
    from playwright.sync_api import sync_playwright

    failed: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page()
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(
            site.split(PREFIX)[0]) else (failed.append(route.request.url), route.abort()))
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.on("response", lambda response: failed.append(f"{response.status} {response.url}")
                if response.status >= 400 else None)
        landed = []
        for path in PAGES:
            page.goto(site + path, wait_until="load")
            page.wait_for_load_state("networkidle")
            landed.append(page.url)
            assert page.locator("h1").count() >= 1, f"{page.url}: no page title"
        browser.close()
    assert landed[0].startswith(site) and landed[0] != site, "the root did not redirect"
    assert all(url.startswith(site) for url in landed), landed
    assert not failed, f"failed or off-site requests under {PREFIX}: {failed[:10]}"
    assert not _PrefixHandler.errors, f"the server answered with errors: {_PrefixHandler.errors}"


def test_ledger_links_point_at_existing_sections() -> None:
    root = Path(HTML_DIR)
    ledger = (root / "book" / "ledger.html").read_text()
    links = set(re.findall(r'href="(\.\./notebooks/[^"#]+\.html)#([^"]+)"', ledger))
    assert links, "the ledger links to no chapter section"
    missing = []
    for page, anchor in sorted(links):
        target = (root / "book" / page).resolve()
        if not target.exists() or f'id="{anchor}"' not in target.read_text():
            missing.append(urljoin("book/ledger.html", page) + "#" + anchor)
    assert not missing, f"ledger links to sections that do not exist: {missing}"


def test_no_page_links_to_an_absolute_path() -> None:
    """Every page of the site, not only the ones opened above: a root-absolute href or src
    ("/_static/...") would leave the project's sub-path."""
    root = Path(HTML_DIR)
    absolute = re.compile(r'(?:href|src)="/(?!/)[^"]*"')
    offenders = {str(path.relative_to(root)): absolute.findall(path.read_text(errors="replace"))
                 for path in root.rglob("*.html")}
    assert len(offenders) >= 10, f"only {len(offenders)} pages built"
    offenders = {page: found[:3] for page, found in offenders.items() if found}
    assert not offenders, f"root-absolute links: {offenders}"


def test_every_page_names_an_icon() -> None:
    """A page that names no icon (as Jupyter Book's bare redirect at the root did) makes the
    browser ask for ``/favicon.ico``: a 404, and outside the sub-path. The browser's own
    request is not always made before the redirect, so the page's source is checked."""
    root = Path(HTML_DIR)
    pages = [path for path in root.rglob("*.html") if "_static" not in path.relative_to(root).parts]
    assert len(pages) >= 10, f"only {len(pages)} pages built"
    without = [str(path.relative_to(root)) for path in pages
               if not re.search(r'<link rel="(shortcut )?icon"', path.read_text(errors="replace"))]
    assert not without, f"pages naming no icon: {without}"
