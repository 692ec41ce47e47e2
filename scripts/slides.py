"""Build one reveal.js slide deck per course week from the chapters, viewable offline.

Usage (from the repository root, with the environment's Python)::

    .venv/bin/python scripts/slides.py [--out _build/slides] [week1 ...]

``book/slides.yml`` names, for each week, the chapters and the ``##`` sections whose cells carry
the argument. For each week this writes ``OUT/weekN.slides.html``: the chapter's title cell and
the cells of those sections, taken from the student edition (no solution; stored outputs, nothing
executed), with reveal.js slide metadata set on the copy (a section heading starts a slide, each
further cell a sub-slide), converted by nbconvert's slides exporter (``jupyter nbconvert --to slides``). reveal.js, require.js
and jQuery are served from ``OUT/vendor/`` (fetched once from the npm registry with ``npm pack``
into ``~/.cache/attnbook/npm``), not from a CDN; math is shown as TeX source (MathJax is not
loaded, so nothing is requested from the network).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "book" / "slides.yml"
CACHE = Path(os.environ.get("ATTNBOOK_CACHE", Path.home() / ".cache" / "attnbook")) / "npm"
# npm package -> (version, folder under vendor/ the template's URL points to, file or folder)
VENDOR = {"reveal.js": ("4.6.1", "reveal.js", "."), "requirejs": ("2.3.6", "require.js", "require.js"),
          "jquery": ("3.5.1", "jquery.min.js", "dist/jquery.min.js")}


def vendor(out: Path) -> Path:
    """Unpack reveal.js, require.js and jQuery into ``out/vendor`` (npm tarballs cached)."""
    target = out / "vendor"
    target.mkdir(parents=True, exist_ok=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    for package, (version, name, member) in VENDOR.items():
        tarball = CACHE / f"{package}-{version}.tgz"
        if not tarball.exists():
            subprocess.run(["npm", "pack", f"{package}@{version}", "--silent",
                            "--pack-destination", str(CACHE)], check=True)
        unpacked = CACHE / f"{package}-{version}"
        if not unpacked.exists():
            with tarfile.open(tarball) as archive:
                archive.extractall(unpacked, filter="data")
        source = unpacked / "package" / member
        destination = target / name
        if destination.exists():
            continue
        if source.is_dir():
            shutil.copytree(source, destination)
        else:
            shutil.copy(source, destination)
    return target


def _section_of(cells: list[dict]) -> list[str | None]:
    """For each cell, the ``##`` section it belongs to (None before the first one)."""
    current, sections = None, []
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("## "):
                    current = line[3:].strip()
        sections.append(current)
    return sections


def week_notebook(chapters: dict[str, list[str]]) -> dict:
    """The week's deck as a notebook: selected cells of the student edition, slide metadata set."""
    from editions import student_notebook

    cells = []
    for chapter, wanted in chapters.items():
        notebook, _ = student_notebook(json.loads((ROOT / "notebooks" / f"{chapter}.ipynb").read_text()))
        sections = _section_of(notebook["cells"])
        missing = set(wanted) - set(filter(None, sections))
        if missing:
            raise ValueError(f"book/slides.yml: {chapter} has no section {sorted(missing)}")
        previous = None
        for index, (cell, section) in enumerate(zip(notebook["cells"], sections)):
            if not (index == 0 or section in wanted):
                continue
            if cell["cell_type"] == "code" and not cell.get("outputs"):
                continue
            for output in cell.get("outputs", []):  # live widgets need a kernel and a CDN
                output.get("data", {}).pop("application/vnd.jupyter.widget-view+json", None)
            kind = "slide" if index == 0 or section != previous else "subslide"
            cell.setdefault("metadata", {})["slideshow"] = {"slide_type": kind}
            cells.append(cell)
            previous = section
        first = notebook
    metadata = {key: value for key, value in first["metadata"].items() if key != "widgets"}
    return {**first, "metadata": metadata, "cells": cells}


def build(week: str, out: Path) -> Path:
    """Write ``out/WEEK.slides.html`` and return it."""
    spec = yaml.safe_load(SPEC.read_text())
    if week not in spec:
        raise ValueError(f"week must be one of {sorted(spec)}, got {week!r}")
    out.mkdir(parents=True, exist_ok=True)
    vendor(out)
    import nbformat
    from nbconvert import SlidesExporter

    exporter = SlidesExporter(reveal_url_prefix="vendor/reveal.js",
                              require_js_url="vendor/require.js",
                              jquery_url="vendor/jquery.min.js", mathjax_url="")
    notebook = nbformat.reads(json.dumps(week_notebook(spec[week])), as_version=4)
    html, _ = exporter.from_notebook_node(notebook)
    deck = out / f"{week}.slides.html"
    deck.write_text(html)
    return deck


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("weeks", nargs="*", help="weeks of book/slides.yml (default: all)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "slides")
    args = parser.parse_args()
    for week in args.weeks or sorted(yaml.safe_load(SPEC.read_text())):
        print(f"{week}: {build(week, args.out.resolve())}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
