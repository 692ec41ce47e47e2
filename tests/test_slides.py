"""The lecture slides of scripts/slides.py: slides that are slides, checked in the browser.

Without a browser, on book/slides.yml: one deck per session of the teaching guide's plan, 10 to
15 slides a deck (title slide included), at most about 40 words a slide (median at most 40, none
over 55; a formula counts as one word), three to five bullets or one figure with a one-line
takeaway, no code, and every chapter schematic on a slide of its chapter's deck.

In headless Chromium (``ATTNBOOK_CHROMIUM`` or ``/usr/bin/chromium``), every deck opened offline
at 1280 x 720: reveal.js and MathJax start from the deck's own vendor/ folder with every network
request blocked, and on every slide nothing runs past the 1280 x 720 slide, no raw TeX
(``$...$``, ``\\command``) or MyST markup (``{eq}``, ``:::``) is left in the visible text,
MathJax reports no error, and there is no code block.
"""

from __future__ import annotations

import json
import os
import re
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import slides  # noqa: E402

CHROMIUM = os.environ.get("ATTNBOOK_CHROMIUM", "/usr/bin/chromium")
SESSIONS = slides.spec()
needs_chromium = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                    reason=f"no Chromium at {CHROMIUM} (set ATTNBOOK_CHROMIUM)")


def test_one_deck_of_10_to_15_slides_per_session() -> None:
    assert len(SESSIONS) == 13, "one deck per session of the teaching guide's plan"
    counts = {session: 1 + len(entry["slides"]) for session, entry in SESSIONS.items()}
    assert all(10 <= n <= 15 for n in counts.values()), counts
    chapters = [entry["chapter"] for entry in SESSIONS.values()]
    book = sorted(p.stem for p in slides.NOTEBOOKS.glob("ch*.ipynb"))
    assert sorted(chapters) == book, "every chapter gets exactly one session"


def test_slides_are_short() -> None:
    counts = [n for deck in slides.word_counts().values() for n in deck]
    assert statistics.median(counts) <= slides.MEDIAN_WORDS, statistics.median(counts)
    assert max(counts) <= slides.MAX_WORDS, max(counts)
    for session, entry in SESSIONS.items():
        for slide in entry["slides"]:
            where = f"{session}: {slide.get('title')!r}"
            bullets = slide.get("bullets", [])
            if "figure" in slide:
                assert slide.get("takeaway") and not bullets, f"{where}: a figure and one takeaway"
                assert slides.words({"title": slide["takeaway"]}) <= 20, f"{where}: takeaway"
            elif "eq" in slide or "tex" in slide:
                assert 1 <= len(bullets) <= 3, f"{where}: an equation with one to three bullets"
            else:
                assert 3 <= len(bullets) <= 5, f"{where}: three to five bullets"
            text = json.dumps(slide)
            assert "`" not in text and "```" not in text, f"{where}: code on a slide"


def test_every_schematic_is_on_a_slide() -> None:
    for session, entry in SESSIONS.items():
        notebook = slides.chapter(entry["chapter"])
        schematics = {cell["metadata"]["mystnb"]["figure"]["name"] for cell in notebook["cells"]
                      if cell["cell_type"] == "code" and cell["metadata"].get("mystnb", {})
                      .get("figure", {}).get("caption", "").startswith("Schematic")}
        used = {slide.get("figure") for slide in entry["slides"]}
        assert schematics <= used, f"{session}: schematics not on a slide: {schematics - used}"
        assert len(used - {None}) >= 3, f"{session}: built from fewer than three figures"


@pytest.fixture(scope="session")
def decks(tmp_path_factory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("slides")
    return {session: slides.build(session, out) for session in SESSIONS}


#: Run in the page for the present slide: what overflows the slide box, what raw markup is
#: visible, and whether MathJax failed or code is shown.
AUDIT = """() => {
  const box = document.querySelector('.reveal .slides').getBoundingClientRect();
  const slide = document.querySelector('.reveal .slides > section.present');
  const out = [];
  for (const el of [slide, ...slide.querySelectorAll('*')]) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < box.left - 1 || r.top < box.top - 1 || r.right > box.right + 1 ||
        r.bottom > box.bottom + 1)
      out.push(`${el.tagName.toLowerCase()} [${Math.round(r.left)}, ${Math.round(r.top)}, ` +
               `${Math.round(r.right)}, ${Math.round(r.bottom)}]`);
  }
  const copy = slide.cloneNode(true);
  copy.querySelectorAll('mjx-container, img').forEach(e => e.remove());
  return {box: [box.left, box.top, box.width, box.height], overflow: out.slice(0, 5),
          text: copy.textContent,
          errors: slide.querySelectorAll('[data-mjx-error], mjx-merror, [data-mml-node="merror"]').length,
          code: slide.querySelectorAll('pre, code').length,
          title: (slide.querySelector('h1, h2') || {}).textContent};
}"""
RAW = re.compile(r"\$|\\[A-Za-z]+|\\\(|\\\[|\{(eq|ref|numref|doc|cite|math|figure)\}|:::|```")


@needs_chromium
def test_decks_render_within_the_slide_offline(decks) -> None:
    from playwright.sync_api import sync_playwright

    problems = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                             args=["--no-sandbox"])
        for session, deck in decks.items():
            page = browser.new_page(viewport={"width": slides.WIDTH, "height": slides.HEIGHT})
            remote = []

            def block(route, request, remote=remote):
                remote.append(request.url)
                route.abort()

            page.route("http*://**", block)
            page.goto(deck.as_uri())
            page.wait_for_selector(".reveal.ready", state="attached", timeout=60_000)
            total = page.evaluate("Reveal.getTotalSlides()")
            assert total == 1 + len(SESSIONS[session]["slides"]), session
            for index in range(total):
                page.evaluate(f"Reveal.slide({index})")
                found = page.evaluate(AUDIT)
                where = f"{session} slide {index + 1} ({found['title']!r})"
                assert [round(v) for v in found["box"]] == [0, 0, slides.WIDTH, slides.HEIGHT], (
                    f"{where}: the slide is not laid out at {slides.WIDTH} x {slides.HEIGHT}")
                if found["overflow"]:
                    problems.append(f"{where}: runs off the slide: {found['overflow']}")
                raw = RAW.search(found["text"])
                if raw:
                    problems.append(f"{where}: raw markup {raw.group(0)!r} in "
                                    f"{found['text'][max(raw.start() - 40, 0):raw.end() + 40]!r}")
                if found["errors"]:
                    problems.append(f"{where}: {found['errors']} MathJax errors")
                if found["code"]:
                    problems.append(f"{where}: code on a slide")
            page.keyboard.press("Home")
            page.keyboard.press("ArrowRight")
            assert page.evaluate("Reveal.getIndices().h") == 1, f"{session}: arrow keys"
            assert not remote, f"{session}: requests left the machine: {remote}"
            page.close()
        browser.close()
    assert not problems, "\n".join(problems)
