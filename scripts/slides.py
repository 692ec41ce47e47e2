"""Build the lecture slides: one reveal.js deck per 90-minute session, viewable offline.

Usage (from the repository root, with the environment's Python)::

    .venv/bin/python scripts/slides.py [--out _build/slides] [session01 ...]

``book/slides.yml`` is written as slides, not as chapters re-flowed: for each session of the
teaching guide's plan it names the chapter and lists 10 to 15 slides, each either

* a **figure** of the chapter (by its ``mystnb`` figure name, taken from the stored outputs,
  nothing executed; the schematics first) with a one-line ``takeaway``, or
* a title with three to five ``bullets`` (markdown, inline mathematics between ``$``), with
  at most one display equation: ``eq`` names a labelled display equation of the chapter
  (copied from it, so slides and chapter agree) and ``tex`` gives one directly.

A title slide is added in front of each deck. The deck is ``OUT/SESSION.html``. Mathematics is
typeset in the browser by MathJax 3 (SVG output), copied from the pinned ``sphinx-mathjax-offline``
package of the environment; reveal.js comes from the npm registry (``npm pack``, cached in
``~/.cache/attnbook/npm``). Both are served from ``OUT/vendor/``: nothing is requested from the
network. The rules the slides keep (at most about 40 words, no code, nothing beyond 1280 x 720)
are checked by ``tests/test_slides.py`` in headless Chromium.
"""

from __future__ import annotations

import argparse
import html
import importlib.metadata
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "book" / "slides.yml"
NOTEBOOKS = ROOT / "notebooks"
CACHE = Path(os.environ.get("ATTNBOOK_CACHE", Path.home() / ".cache" / "attnbook")) / "npm"
REVEAL_VERSION = "4.6.1"
#: The slide geometry every deck is laid out for (and checked at).
WIDTH, HEIGHT = 1280, 720
#: The budget: words a slide (title, bullets and takeaway; a formula counts as one word).
MAX_WORDS, MEDIAN_WORDS = 55, 40
DISPLAY = re.compile(r"\$\$(.*?)\$\$(?:\s*\(([\w-]+)\))?", re.S)
INLINE = re.compile(r"\$([^$]+)\$")


def spec() -> dict[str, dict]:
    """The sessions of ``book/slides.yml``, in order."""
    return yaml.safe_load(SPEC.read_text())["sessions"]


def vendor(out: Path) -> Path:
    """reveal.js (npm tarball, cached) and MathJax (from the environment) into ``out/vendor``."""
    target = out / "vendor"
    target.mkdir(parents=True, exist_ok=True)
    reveal = target / "reveal.js"
    if not reveal.exists():
        CACHE.mkdir(parents=True, exist_ok=True)
        tarball = CACHE / f"reveal.js-{REVEAL_VERSION}.tgz"
        if not tarball.exists():
            subprocess.run(["npm", "pack", f"reveal.js@{REVEAL_VERSION}", "--silent",
                            "--pack-destination", str(CACHE)], check=True)
        unpacked = CACHE / f"reveal.js-{REVEAL_VERSION}"
        if not unpacked.exists():
            with tarfile.open(tarball) as archive:
                archive.extractall(unpacked, filter="data")
        shutil.copytree(unpacked / "package" / "dist", reveal)
    mathjax = target / "mathjax"
    if not mathjax.exists():
        source = Path(importlib.metadata.distribution("sphinx-mathjax-offline").locate_file(
            "sphinx-mathjax-offline/static/mathjax"))
        mathjax.mkdir()
        shutil.copy(source / "tex-svg.js", mathjax / "tex-svg.js")
        for folder in ("input", "ui"):  # components MathJax may load on demand
            shutil.copytree(source / folder, mathjax / folder)
    return target


def chapter(stem: str) -> dict:
    return json.loads((NOTEBOOKS / f"{stem}.ipynb").read_text())


def chapter_title(notebook: dict) -> str:
    for cell in notebook["cells"]:
        for line in "".join(cell["source"]).splitlines():
            if cell["cell_type"] == "markdown" and line.startswith("# "):
                return line[2:].strip()
    raise ValueError("chapter without a title")


def figure(notebook: dict, name: str) -> str:
    """The stored PNG (base64) of the chapter's figure ``name``."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and \
                cell["metadata"].get("mystnb", {}).get("figure", {}).get("name") == name:
            for output in cell.get("outputs", []):
                if "image/png" in output.get("data", {}):
                    return "".join(output["data"]["image/png"]).replace("\n", "")
    raise ValueError(f"no stored figure {name!r}")


def equation(notebook: dict, label: str) -> str:
    """The TeX of the chapter's display equation labelled ``label``."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "markdown":
            for match in DISPLAY.finditer("".join(cell["source"])):
                if match.group(2) == label:
                    return match.group(1).strip()
    raise ValueError(f"no display equation ({label})")


def words(slide: dict) -> int:
    """Visible words of a slide: title, bullets, takeaway; a formula counts as one word."""
    text = " ".join([slide.get("title", ""), *slide.get("bullets", []), slide.get("takeaway", "")])
    text = INLINE.sub(" x ", text)
    return len(re.findall(r"[A-Za-z0-9][\w'’-]*", text))


def _inline(text: str) -> str:
    """Markdown (emphasis) to HTML, inline mathematics kept intact for MathJax as \\( \\)."""
    from markdown_it import MarkdownIt

    maths: list[str] = []

    def keep(match: re.Match) -> str:
        maths.append(match.group(1))
        return f"MATHSPAN{len(maths) - 1}END"

    rendered = MarkdownIt("commonmark").renderInline(INLINE.sub(keep, text))
    return re.sub(r"MATHSPAN(\d+)END", lambda m: r"\(" + html.escape(maths[int(m.group(1))]) + r"\)",
                  rendered)


def _display(tex: str) -> str:
    tex = re.sub(r"\\(textbf|text)\{\[(derived|summary|abstract|choice)\]\}", "", tex)
    return r'<div class="equation">\[' + html.escape(tex) + r"\]</div>"


def slide_html(slide: dict, notebook: dict) -> str:
    if "chapter" in slide:  # a slide may quote another chapter's figure or equation
        notebook = chapter(slide["chapter"])
    title = f"<h2>{_inline(slide['title'])}</h2>" if slide.get("title") else ""
    body = []
    if "figure" in slide:
        body.append(f'<img class="figure" alt="{html.escape(slide["figure"])}" '
                    f'src="data:image/png;base64,{figure(notebook, slide["figure"])}">')
    if "eq" in slide:
        body.append(_display(equation(notebook, slide["eq"])))
    if "tex" in slide:
        body.append(_display(slide["tex"]))
    if slide.get("bullets"):
        body.append("<ul>" + "".join(f"<li>{_inline(b)}</li>" for b in slide["bullets"]) + "</ul>")
    if slide.get("takeaway"):
        body.append(f'<p class="takeaway">{_inline(slide["takeaway"])}</p>')
    kind = "figure-slide" if "figure" in slide else "text-slide"
    return f'<section class="{kind}">{title}{"".join(body)}</section>'


STYLE = f"""
.reveal {{ font-size: 30px; }}
.reveal .slides section {{ text-align: left; box-sizing: border-box; padding: 0 48px;
  width: {WIDTH}px; }}
.reveal h1 {{ font-size: 54px; text-transform: none; }}
.reveal h2 {{ font-size: 42px; text-transform: none; margin: 0 0 24px 0; }}
.reveal ul {{ display: block; margin: 12px 0 0 1.1em; }}
.reveal li {{ margin: 10px 0; line-height: 1.3; }}
.reveal .equation {{ font-size: 30px; margin: 14px 0 18px 0; text-align: center; }}
.reveal img.figure {{ display: block; margin: 0 auto; max-width: {WIDTH - 96}px;
  max-height: {HEIGHT - 200}px; border: 0; box-shadow: none; }}
.reveal .takeaway {{ text-align: center; font-size: 28px; margin: 14px 0 0 0; }}
.reveal .title-slide p {{ font-size: 30px; color: #555; }}
"""


def deck_html(session: str, entry: dict, index: int, total: int) -> str:
    notebook = chapter(entry["chapter"])
    title = (f'<section class="title-slide"><h1>{_inline(chapter_title(notebook))}</h1>'
             f"<p>{_inline(entry['subtitle'])}</p>"
             f"<p>Session {index} of {total}</p></section>")
    slides = "\n".join(slide_html(slide, notebook) for slide in entry["slides"])
    config = {"width": WIDTH, "height": HEIGHT, "margin": 0, "minScale": 1, "maxScale": 1,
              "hash": True, "center": True, "transition": "none", "slideNumber": True}
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Session {index}: {html.escape(chapter_title(notebook))}</title>
<link rel="stylesheet" href="vendor/reveal.js/reveal.css">
<link rel="stylesheet" href="vendor/reveal.js/theme/white.css">
<style>{STYLE}</style>
<script>
window.MathJax = {{
  tex: {{inlineMath: [['\\\\(', '\\\\)']], displayMath: [['\\\\[', '\\\\]']]}},
  svg: {{fontCache: 'global'}},
  options: {{enableMenu: false}}
}};
</script>
<script src="vendor/mathjax/tex-svg.js"></script>
<script src="vendor/reveal.js/reveal.js"></script>
</head><body>
<div class="reveal"><div class="slides">
{title}
{slides}
</div></div>
<script>
MathJax.startup.promise.then(() => Reveal.initialize({json.dumps(config)}));
</script>
</body></html>
"""


def build(session: str, out: Path) -> Path:
    """Write ``out/SESSION.html`` and return it."""
    sessions = spec()
    if session not in sessions:
        raise ValueError(f"session must be one of {sorted(sessions)}, got {session!r}")
    out.mkdir(parents=True, exist_ok=True)
    vendor(out)
    index = list(sessions).index(session) + 1
    deck = out / f"{session}.html"
    deck.write_text(deck_html(session, sessions[session], index, len(sessions)))
    return deck


def word_counts() -> dict[str, list[int]]:
    """Words on each slide of each deck (title slides included)."""
    counts = {}
    for session, entry in spec().items():
        title = {"title": entry["subtitle"]}
        counts[session] = [words(title)] + [words(slide) for slide in entry["slides"]]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="*", help="sessions of book/slides.yml (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    args = parser.parse_args()
    for session in args.sessions or list(spec()):
        print(f"{session}: {build(session, args.out.resolve())}")
    counts = [n for deck in word_counts().values() for n in deck]
    print(f"{len(spec())} decks, {len(counts)} slides, median {statistics.median(counts)} words "
          f"a slide, at most {max(counts)}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
