"""Sphinx extension for the book's HTML pages (loaded through ``_config.yml``).

* Adds ``book/_static/book.css`` (wrapping code and output, tables and display maths that
  scroll in their own box, figure and slider layout, print layout) and ``book.js`` (the
  navigation fix below) to every page. They live outside the book root's ``_static/``,
  which Jupyter Book would scan and add file by file.
* pydata-sphinx-theme 0.17 renders a second, hidden ``.primary-toggle`` (and
  ``.secondary-toggle``) before sphinx-book-theme's visible one, and both themes bind their
  click handlers with ``document.querySelector``, i.e. to the hidden button; ``book.js``
  forwards clicks on the visible buttons to it.
* Sets the theme's ``default_mode`` (an ``html_context`` key) to ``auto`` (the empty default logs
  "Got invalid theme mode" on a reader's first visit) and drops repeated script entries
  (sphinx-thebe registers its inline configuration twice, a ``const`` redeclaration error).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

STATIC = Path(__file__).resolve().parents[1] / "_static"


def _config_inited(app, config) -> None:
    config.html_static_path = [*config.html_static_path, str(STATIC)]
    config.html_context = {"default_mode": "auto", **config.html_context}


def _unique_scripts(app, pagename: str, templatename: str, context: dict[str, Any],
                    doctree) -> None:
    scripts = context.get("script_files", [])
    unique, seen = [], set()
    for script in scripts:
        # an inline script may be registered with filename None and again with ""
        key = (getattr(script, "filename", script) or "",
               repr(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    # in place: the list is the builder's, to which later handlers (MathJax) still add
    scripts[:] = unique


def setup(app) -> dict[str, Any]:
    app.connect("config-inited", _config_inited)
    app.connect("html-page-context", _unique_scripts, priority=1)
    app.add_css_file("book.css", priority=900)
    app.add_js_file("book.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
