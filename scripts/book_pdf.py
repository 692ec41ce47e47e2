"""Print the whole book to one PDF: the single-page build, rendered by headless Chromium.

Usage (from the repository root, with .venv's Python; ``scripts/build_book.sh`` runs it when
``ATTNBOOK_PDF`` names the file, as the publishing workflow does)::

    python scripts/book_pdf.py OUT.pdf

Builds ``_build/singlehtml`` from the notebooks' stored outputs (execution off: the HTML
build has just executed them, and the tests check that stored and fresh outputs agree),
serves it on 127.0.0.1, waits for MathJax, and prints it with the book's print styles (one
column, no navigation, code wrapped). The browser is ``ATTNBOOK_CHROMIUM``, else the first
of chromium, chromium-browser and google-chrome (GitHub's Ubuntu runners have Chrome) on the
PATH.
"""

from __future__ import annotations

import functools
import http.server
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def build_single_page(out_dir: Path) -> Path:
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    override = ROOT / "_build_config_pdf.yml"
    override.write_text(yaml.safe_dump(config, sort_keys=False))
    env = {**os.environ, "ATTNBOOK_PDF": ""}      # no link to the PDF inside the PDF
    try:
        subprocess.run([str(Path(sys.executable).parent / "jupyter-book"), "build", str(ROOT),
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
            page.pdf(path=str(pdf), format="A4", print_background=True,
                     margin={"top": "15mm", "bottom": "15mm", "left": "14mm", "right": "14mm"})
            browser.close()
    finally:
        server.shutdown()


def main(argv: list[str]) -> int:
    if len(argv) != 1 or not argv[0].endswith(".pdf"):
        print("usage: python scripts/book_pdf.py OUT.pdf", file=sys.stderr)
        return 2
    pdf = Path(argv[0]).resolve()
    site = build_single_page(ROOT / "_build" / "pdf")
    print_pdf(site, pdf)
    print(f"book_pdf: wrote {pdf} ({pdf.stat().st_size / 1e6:.1f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
