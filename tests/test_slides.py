"""The weekly reveal.js decks of scripts/slides.py, opened offline in headless Chromium.

For each week of book/slides.yml: the deck builds, every section the spec names is in it as a
slide, reveal.js (served from the deck's own vendor/ folder) starts with no network, and no
request leaves the machine. Chromium: ``ATTNBOOK_CHROMIUM`` or ``/usr/bin/chromium``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import slides  # noqa: E402

CHROMIUM = os.environ.get("ATTNBOOK_CHROMIUM", "/usr/bin/chromium")
WEEKS = sorted(yaml.safe_load(slides.SPEC.read_text()))
pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason=f"no Chromium at {CHROMIUM} (set ATTNBOOK_CHROMIUM)")


@pytest.fixture(scope="session")
def decks(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("slides")
    return {week: slides.build(week, out) for week in WEEKS}


def test_every_week_has_a_deck_of_its_sections(decks) -> None:
    spec = yaml.safe_load(slides.SPEC.read_text())
    assert len(decks) == 6
    for week, deck in decks.items():
        html = deck.read_text()
        assert "embed-amd.js" not in html, f"{week}: loads the widget manager from a CDN"
        for sections in spec[week].values():
            for section in sections:
                assert f"<h2 id=\"{section.replace(' ', '-')}" in html, f"{week}: no slide {section!r}"


def test_decks_run_offline_in_chromium(decks) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox"])
        for week, deck in decks.items():
            page = browser.new_page()
            remote = []

            def block(route, request, remote=remote):
                remote.append(request.url)
                route.abort()

            page.route("http*://**", block)
            page.goto(deck.as_uri())
            # reveal.js marks its root "ready" once initialized (it is loaded through require.js,
            # so there is no global Reveal object)
            page.wait_for_selector(".reveal.ready", state="attached", timeout=60_000)
            total = page.locator(".reveal .slides > section").count()
            assert total >= 4, f"{week}: {total} slides"
            first = page.locator(".reveal .slides > section.present").first.inner_text()
            page.keyboard.press("ArrowRight")
            page.wait_for_function("(old) => { const s = document.querySelector("
                                   "'.reveal .slides > section.present'); "
                                   "return s && s.innerText !== old; }", arg=first, timeout=30_000)
            assert not remote, f"{week}: requests left the machine: {remote}"
            page.close()
        browser.close()
