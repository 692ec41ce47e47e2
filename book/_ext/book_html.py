"""Sphinx extension for the book's HTML pages (loaded through ``_config.yml``).

* Adds ``book/_static/book.css`` (wrapping code, printed output and tables and display maths
  that scroll in their own box with a cue, enlargeable figures, stacked tables on phones,
  print layout) and ``book.js`` (the navigation fix below, the scroll cues, the enlarged
  figure view, table labels) to every page. They live outside the book root's ``_static/``,
  which Jupyter Book would scan and add file by file.
* pydata-sphinx-theme 0.17 renders a second, hidden ``.primary-toggle`` (and
  ``.secondary-toggle``) before sphinx-book-theme's visible one, and both themes bind their
  click handlers with ``document.querySelector``, i.e. to the hidden button; ``book.js``
  forwards clicks on the visible buttons to it.
* Sets the theme's ``default_mode`` (an ``html_context`` key) to ``auto`` (the empty default logs
  "Got invalid theme mode" on a reader's first visit) and drops repeated script entries
  (sphinx-thebe registers its inline configuration twice, a ``const`` redeclaration error).
* Page weight: drops the theme's 1.49 MB ``fontawesome.js`` (the theme's CSS already draws
  the same icons from the Font Awesome web font) and the ipywidgets state JSON that myst-nb
  embeds (the book loads no widget manager; its sliders are kernel-free).
* Numbers figures, tables and equations per chapter (``Fig. 5.3``: chapter 5, third figure;
  ``Fig. 6b.1``, a Reproduction report page's ``Fig. R5.1``, the appendix's ``A.1``); the
  pages of no chapter count 1, 2, 3 among themselves.
* Footer: build date (``SOURCE_DATE_EPOCH`` when set, else today, UTC), the version from
  ``pyproject.toml``, the commit, and the licences (code MIT, text CC BY 4.0).
* Repository links only when the build names a repository: ``ATTNBOOK_REPOSITORY_URL``
  (``https://github.com/OWNER/REPO``, set by the publishing workflow) turns on the theme's
  repository, "open an issue" and "edit this page" buttons and, on chapter pages, Binder
  (``binder/`` holds its environment) and Colab launch buttons. Colab opens a copy of the
  chapter, written next to the site under ``_colab/``, whose first cell installs ``attnlib``
  from the repository when it is missing. A local build without the variable shows none.
* The site root's ``index.html``: the redirect to the landing page, naming an (empty) icon
  so that browsers do not ask for ``/favicon.ico``.
* The ``attn-citation`` directive: the book's BibTeX entry from ``CITATION.cff`` (licences as
  ``Code: MIT; text: CC BY 4.0``; a ``url`` when the build names a repository); the
  ``attn-pdf-link`` directive: a link to the whole-book PDF when the build makes one
  (``ATTNBOOK_PDF`` names its file at the site's root; ``scripts/build_book.sh`` prints it
  from the single-page build), nothing otherwise.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import yaml
from docutils import nodes
from sphinx.util.docutils import SphinxDirective

STATIC = Path(__file__).resolve().parents[1] / "_static"
ROOT = Path(__file__).resolve().parents[2]
REPOSITORY_VARIABLE = "ATTNBOOK_REPOSITORY_URL"
BINDER = "https://mybinder.org"
COLAB = "https://colab.research.google.com"
COLAB_DIR = "_colab"
#: The licence of each part of the book: (its SPDX identifier, as ``CITATION.cff`` lists it;
#: its name; its file).
LICENCES = {"code": ("MIT", "MIT", "LICENSE"),
            "text": ("CC-BY-4.0", "CC BY 4.0", "LICENSE-TEXT.md")}
_FONTAWESOME_JS = re.compile(r'<script defer src="[^"]*_static/scripts/fontawesome\.js[^"]*">'
                             r"</script>\s*")
_REPOSITORY = re.compile(r"^https://github\.com/(?P<org>[\w.-]+)/(?P<repo>[\w.-]+?)/?$")


def repository_url() -> str | None:
    """The repository the build links to (``ATTNBOOK_REPOSITORY_URL``), or None."""
    url = os.environ.get(REPOSITORY_VARIABLE, "").strip()
    if not url:
        return None
    if not _REPOSITORY.match(url):
        raise ValueError(f"{REPOSITORY_VARIABLE} must be https://github.com/OWNER/REPO, "
                         f"got {url!r}")
    return url.rstrip("/")


def colab_install_cell(url: str) -> dict[str, Any]:
    """The first cell of a Colab copy: installs attnlib from ``url`` when it is missing."""
    source = ["# Colab: install attnlib (the book's package) when it is missing\n",
              "import importlib.util\n",
              "if importlib.util.find_spec(\"attnlib\") is None:\n",
              f"    %pip install --quiet \"attnlib @ git+{url}\"\n"]
    return {"cell_type": "code", "execution_count": None, "id": "colab-install",
            "metadata": {}, "outputs": [], "source": source}


def build_date() -> str:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (datetime.datetime.fromtimestamp(int(epoch), datetime.timezone.utc) if epoch
              else datetime.datetime.now(datetime.timezone.utc))
    return moment.date().isoformat()


def book_version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def _commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout.strip() or None
    except (OSError, subprocess.CalledProcessError):
        return None


def footer_html(url: str | None) -> str:
    """Build date, version (and commit) and the licences; links to the licence files when
    the build names a repository, else to the licences' own pages."""
    commit = _commit()
    version = f"version {book_version()}" + (f" ({commit})" if commit else "")
    deeds = {"MIT": "https://opensource.org/license/mit",
             "CC BY 4.0": "https://creativecommons.org/licenses/by/4.0/"}
    licences = []
    for part, (_, name, path) in LICENCES.items():
        target = f"{url}/blob/main/{path}" if url else deeds[name]
        licences.append(f'{part}: <a href="{target}">{name}</a>')
    return (f'<p class="attn-footer">Built {build_date()} &middot; {version} &middot; '
            f"Licence: {', '.join(licences)}</p>")


def _config_inited(app, config) -> None:
    # recorded as config values, so that a build with other values rereads every page
    config.attnbook_pdf = os.environ.get("ATTNBOOK_PDF", "").strip()
    config.attnbook_repository_url = repository_url() or ""
    config.html_static_path = [*config.html_static_path, str(STATIC)]
    config.html_context = {"default_mode": "auto", **config.html_context}
    url = repository_url()
    options = dict(config.html_theme_options or {})
    options["extra_footer"] = footer_html(url)
    buttons = ("use_repository_button", "use_issues_button", "use_edit_page_button")
    options.update({button: url is not None for button in buttons})
    if url:
        options.update({"repository_url": url, "repository_branch": "main",
                        "path_to_docs": "",
                        "launch_buttons": {**options.get("launch_buttons", {}),
                                           "binderhub_url": BINDER, "colab_url": COLAB,
                                           "notebook_interface": "jupyterlab"}})
    else:
        options["launch_buttons"] = {key: value for key, value
                                     in options.get("launch_buttons", {}).items()
                                     if key not in ("binderhub_url", "colab_url")}
    config.html_theme_options = options


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


def _drop_widget_state(app, pagename: str, templatename: str, context: dict[str, Any],
                       doctree) -> None:
    scripts = context.get("script_files", [])
    scripts[:] = [script for script in scripts
                  if getattr(script, "attributes", {}).get("type")
                  != "application/vnd.jupyter.widget-state+json"]


def _colab_buttons(app, pagename: str, templatename: str, context: dict[str, Any],
                   doctree) -> None:
    """Point the Colab button at the chapter's copy with the install cell (``_colab/``)."""
    url = repository_url()
    if not url:
        return
    match = _REPOSITORY.match(url)
    for group in context.get("header_buttons", []):
        for button in group.get("buttons", []) if group.get("label") == "launch-buttons" else []:
            if button.get("url", "").startswith(COLAB):
                button["url"] = (f"{COLAB}/github/{match['org']}/{match['repo']}/blob/gh-pages/"
                                 f"{COLAB_DIR}/{pagename}.ipynb")


def _write_colab_copies(app, exception) -> None:
    url = repository_url()
    if exception is not None or not url or app.builder.name != "html":
        return
    for docname in app.env.found_docs:
        source = Path(app.env.doc2path(docname))
        if source.suffix != ".ipynb":
            continue
        notebook = json.loads(source.read_text())
        notebook["cells"] = [colab_install_cell(url), *notebook["cells"]]
        target = Path(app.outdir) / COLAB_DIR / f"{docname}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")


def _drop_fontawesome_js(app, exception) -> None:
    if exception is not None or app.builder.name not in ("html", "singlehtml", "dirhtml"):
        return
    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text()
        lean = _FONTAWESOME_JS.sub("", text)
        if lean != text:
            page.write_text(lean)


#: Below this width (CSS px) a figure with a narrow rendering shows that one, in the page
#: and in its enlarged view (book.css and book.js use the same breakpoint).
NARROW_BREAKPOINT = 600
_NARROW_KEY = "attn:narrow-png"   # attnbook.plotting.NARROW_METADATA_KEY
_IMAGE_TAG = re.compile(r'(?<!\.narrow\.png">)<img\b[^>]*?\bsrc="(?P<src>[^"]*?_images/(?P<name>[\w.-]+?)'
                        r'\.png)"[^>]*>')
#: The book's own figures (drawn by scripts, e.g. scripts/readme_figure.py) keep their narrow
#: renderings beside them as ``<name>.narrow.png``.
STATIC_FIGURES = ROOT / "book" / "figures"


def narrow_renderings(notebooks: list[Path]) -> dict[str, bytes]:
    """The narrow renderings that the notebooks' figures carry (``attnbook.plotting``'s
    :data:`NARROW_METADATA_KEY` in an output's metadata), keyed by the file name that
    myst-nb gives the figure's image (the SHA-256 of its PNG bytes)."""
    found = {}
    for path in notebooks:
        for cell in json.loads(path.read_text()).get("cells", []):
            for output in cell.get("outputs", []):
                narrow = output.get("metadata", {}).get("image/png", {}).get(_NARROW_KEY)
                if narrow and "image/png" in output.get("data", {}):
                    wide = base64.b64decode(output["data"]["image/png"])
                    found[hashlib.sha256(wide).hexdigest()] = base64.b64decode(narrow)
    return found


def _serve_narrow_figures(app, exception) -> None:
    """Write each figure's narrow rendering beside it (``_images/<hash>.narrow.png``) and make
    its ``<img>`` a ``<picture>`` that phones (below :data:`NARROW_BREAKPOINT`) load instead."""
    if exception is not None or app.builder.name not in ("html", "dirhtml"):
        return
    executed = Path(app.outdir).parent / "jupyter_execute"
    notebooks = [path for docname in app.env.found_docs
                 for path in (Path(app.env.doc2path(docname)), executed / f"{docname}.ipynb")
                 if path.suffix == ".ipynb" and path.is_file()]
    images = Path(app.outdir) / "_images"
    served = set()
    static = {path.name[:-len(".narrow.png")]: path.read_bytes()
              for path in STATIC_FIGURES.glob("*.narrow.png")}
    for name, narrow in {**narrow_renderings(notebooks), **static}.items():
        if (images / f"{name}.png").is_file():
            (images / f"{name}.narrow.png").write_bytes(narrow)
            served.add(name)

    def picture(match: re.Match) -> str:
        if match["name"] not in served:
            return match[0]
        narrow = match["src"][:-len(".png")] + ".narrow.png"
        return (f'<picture><source media="(max-width: {NARROW_BREAKPOINT - 0.02}px)" '
                f'srcset="{narrow}">{match[0]}</picture>')

    for page in Path(app.outdir).rglob("*.html"):
        text = page.read_text()
        rewritten = _IMAGE_TAG.sub(picture, text)
        if rewritten != text:
            page.write_text(rewritten)


def _write_root_redirect(app, exception) -> None:
    """The site root's ``index.html``: the redirect to the root page that sphinx-external-toc
    would write (it skips an existing file, and this runs first), naming an empty icon. A page
    that names none makes the browser ask for ``/favicon.ico``: a 404, and outside the site
    when it is served under a sub-path (a GitHub Pages project site). The page is left at
    once, so its icon is never shown; a link to the book's own icon would be a request that
    the redirect cancels."""
    if exception is not None or app.builder.name != "html" or app.config.root_doc == "index":
        return
    (Path(app.outdir) / "index.html").write_text(
        '<link rel="icon" href="data:," />\n'
        f'<meta http-equiv="Refresh" content="0; url={app.config.root_doc}.html" />\n')


def chapter_label(docname: str) -> str | None:
    """``notebooks/ch05_experiment`` -> ``"5"``, ``notebooks/ch06b_finite_sample`` -> ``"6b"``,
    a Reproduction report page ``notebooks/report_ch05_experiment`` -> ``"R5"``, the appendix ->
    ``"A"``, else None (a page of no chapter: the introduction, the main results, the back
    matter)."""
    name = Path(docname).name
    if match := re.match(r"(report_)?ch(\d+)([a-z]?)_", name):
        return ("R" if match[1] else "") + str(int(match[2])) + match[3]
    return "A" if name.startswith("appendix") else None


def _number_per_chapter(app, env) -> list[str]:
    """Replace Sphinx's book-wide numbers of figures, tables and numbered equations: on a
    chapter's page the k-th of a kind is ``(label, k)`` (``Fig. 5.3``, equation ``(6b.2)``);
    the pages of no chapter share one sequence 1, 2, 3, ... in book order (Sphinx's own count
    would go on from the chapters' figures)."""
    # figtype -> (Sphinx's number, the page's numbers, node id) on the pages of no chapter
    outside: dict[str, list[tuple[tuple, dict, str]]] = {}
    for docname, by_type in env.toc_fignumbers.items():
        chapter = chapter_label(docname)
        for figtype, numbers in by_type.items():
            ordered = sorted(numbers, key=numbers.__getitem__)
            if chapter is None:
                outside.setdefault(figtype, []).extend(
                    (numbers[node_id], numbers, node_id) for node_id in ordered)
                continue
            for k, node_id in enumerate(ordered, start=1):
                numbers[node_id] = (chapter, k)
    for entries in outside.values():
        entries.sort(key=lambda entry: entry[0])
        for k, (_, numbers, node_id) in enumerate(entries, start=1):
            numbers[node_id] = (k,)
    return []


def licence_note(listed: str | list[str]) -> str:
    """``"Code: MIT; text: CC BY 4.0"``: each part's licence (:data:`LICENCES`), once
    ``listed`` (``CITATION.cff``'s ``license``) is checked to name exactly their SPDX
    identifiers."""
    identifiers = [spdx for spdx, _, _ in LICENCES.values()]
    if sorted([listed] if isinstance(listed, str) else listed) != sorted(identifiers):
        raise ValueError(f"CITATION.cff's license must list {identifiers}, got {listed!r}")
    note = "; ".join(f"{part}: {name}" for part, (_, name, _) in LICENCES.items())
    return note[0].upper() + note[1:]


def citation_bibtex(url: str | None) -> str:
    """The book's BibTeX entry, from ``CITATION.cff``, with ``url`` when the build names the
    repository. A build that names none (a local build) has no address to give: the
    repository's public address is not fixed in its files (the publishing workflow takes it
    from GitHub as ``ATTNBOOK_REPOSITORY_URL``, and ``CITATION.cff`` records none), so the
    entry then leaves ``url`` out rather than print a guessed one."""
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    authors = " and ".join("{" + a["name"] + "}" if "name" in a
                           else f"{a['family-names']}, {a['given-names']}"
                           for a in cff["authors"])
    fields = {"author": authors, "title": "{" + cff["title"] + "}",
              "year": str(datetime.date.fromisoformat(build_date()).year),
              "version": cff["version"], "note": licence_note(cff["license"])}
    if url:
        fields["url"] = url
    body = ",\n".join(f"  {key} = {{{value}}}" for key, value in fields.items())
    return f"@software{{attnbook,\n{body}\n}}"


class CitationDirective(SphinxDirective):
    """``{attn-citation}``: a BibTeX block with the book's citation (``CITATION.cff``)."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(ROOT / "CITATION.cff"))
        text = citation_bibtex(self.config.attnbook_repository_url or None)
        block = nodes.literal_block(text, text, language="bibtex")
        return [block]


class PdfLinkDirective(SphinxDirective):
    """``{attn-pdf-link}``: "the whole book as one PDF", when ``ATTNBOOK_PDF`` is set."""

    def run(self) -> list[nodes.Node]:
        name = self.config.attnbook_pdf
        if not name:
            return []
        href = "../" * self.env.docname.count("/") + name
        html = (f'<p class="attn-pdf">The whole book as one PDF, for reading offline or '
                f'printing: <a href="{href}" download>{name}</a>.</p>')
        return [nodes.raw("", html, format="html")]


def _publish_ledger_records(app, exception) -> None:
    """The claims ledger as data, ``book/ledger.json`` (written by ``python -m attnbook.ledger``
    beside ``book/ledger.md``), published beside the ledger page."""
    source = Path(app.srcdir) / "book" / "ledger.json"
    if exception is None and app.builder.format == "html" and source.is_file():
        shutil.copyfile(source, Path(app.outdir) / "book" / "ledger.json")


def setup(app) -> dict[str, Any]:
    app.add_config_value("attnbook_pdf", "", "env")
    app.add_config_value("attnbook_repository_url", "", "env")
    app.connect("config-inited", _config_inited)
    app.connect("html-page-context", _unique_scripts, priority=1)
    app.connect("html-page-context", _drop_widget_state, priority=900)
    app.connect("html-page-context", _colab_buttons, priority=900)
    app.connect("env-get-updated", _number_per_chapter, priority=900)
    app.connect("build-finished", _drop_fontawesome_js)
    app.connect("build-finished", _write_colab_copies)
    app.connect("build-finished", _write_root_redirect, priority=400)   # before the toc's own
    app.connect("build-finished", _serve_narrow_figures)
    app.connect("build-finished", _publish_ledger_records)
    app.add_directive("attn-citation", CitationDirective)
    app.add_directive("attn-pdf-link", PdfLinkDirective)
    app.add_css_file("book.css", priority=900)
    app.add_js_file("book.js", loading_method="defer")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
