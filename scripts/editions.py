"""Build the student and instructor editions of the book from the one source.

Usage (from the repository root; started by another Python it re-runs itself with .venv's)::

    .venv/bin/python scripts/editions.py [--out _build/editions] [--html] [student] [instructor]
    .venv/bin/python scripts/editions.py --student-bundle [--out _build/editions]

For each edition it writes ``OUT/EDITION/`` holding

* ``notebooks/``: copies of the chapter notebooks. In the student edition every
  ``{admonition} Solution`` block (the one place solutions are written, see CONTRIBUTING.md)
  is removed from the markdown cells; the instructor edition keeps them. Code cells and their
  stored outputs are copied unchanged.
* ``problem_sets/``: ``otter assign`` output of each problem set in ``notebooks/problem_sets``:
  the student edition gets the notebooks with stubs and the public checks, the instructor
  edition the notebooks with the reference solutions and all checks, and the autograder zip.
  The zip is self-contained: it holds an ``attnlib`` wheel and a ``requirements.txt`` pinning
  otter-grader, ``attnlib`` and every package they need (from ``constraints.txt``), so a
  grader that installs only the zip (Gradescope, a clean virtual environment) has ``attnlib``.
* with ``--html``: ``html/``, the book built by Jupyter Book from these notebooks and the
  prose pages (stored outputs rendered, nothing re-executed).

With ``--student-bundle``: ``OUT/student-bundle/``, what students are given and nothing else:
the student edition's notebooks and problem sets, its HTML (``html/``), the lecture slides
(``slides/``, scripts/slides.py), the ``attnlib`` and ``attnbook`` wheels, a
``requirements.txt`` pinning every package the notebooks need (installs the wheels from the
same folder), the licences and a README saying what is where and how to install it. The
bundle's notebooks are made to read like the book in JupyterLab (:func:`book_like_notebook`):
the book's numbers and citations as Markdown links into ``html/``, each figure's caption under
it, the code cells the book folds collapsed, a reference list at the end.

Nothing is edited by hand: rerun this command after changing a chapter or a problem set.
"""

from __future__ import annotations

import argparse
import json
import os
import posixpath
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[1]


def _use_the_environment() -> None:
    """Re-run this script with the repository's ``.venv`` Python when another one started it
    (``python3 scripts/editions.py``): otter-grader and Jupyter Book live in ``.venv``."""
    venv_python = ROOT / ".venv" / "bin" / "python"
    if Path(sys.executable).with_name("otter").exists() or not venv_python.exists():
        return
    os.execv(venv_python, [str(venv_python), *sys.argv])


if __name__ == "__main__":
    _use_the_environment()

import yaml  # noqa: E402  (after the switch to .venv, which has it)

EDITIONS = ("student", "instructor")
PROBLEM_SETS = ROOT / "notebooks" / "problem_sets"
# What the student notebooks and problem sets need (the book's package attnbook, which stands on
# attnlib with all its extras), and what the autograder needs (attnlib with its extras); both
# get the book's packages as wheels and every other package pinned from constraints.txt.
STUDENT_PACKAGES = ("attnbook", "ipywidgets", "ipykernel", "otter-grader", "jupyterlab",
                    "jupyterlab-myst")
GRADER_PACKAGES = ("attnlib[all]", "otter-grader", "ipykernel")
#: The book's own packages, installed from wheels beside the requirements file.
OWN_PACKAGES = ("attnlib", "attnbook")
LICENSES = ("LICENSE", "LICENSE-TEXT.md")
# An opening fence of three or more backticks or colons with the Solution admonition; the
# block ends at the next line holding only the same fence (CommonMark/MyST fenced directive).
_SOLUTION_OPEN = re.compile(r"^(?P<fence>`{3,}|:{3,})\{admonition\}\s+Solution\b.*$")


def strip_solutions(markdown: str) -> tuple[str, int]:
    """Remove every ``{admonition} Solution`` fenced block from ``markdown``.

    Returns the text without the blocks (blank lines around a removed block collapsed to one)
    and the number of blocks removed. Raises ``ValueError`` on a block that is never closed.
    """
    lines = markdown.split("\n")
    kept: list[str] = []
    removed = 0
    i = 0
    while i < len(lines):
        match = _SOLUTION_OPEN.match(lines[i].strip())
        if not match:
            kept.append(lines[i])
            i += 1
            continue
        fence = match["fence"]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == fence), None)
        if end is None:
            raise ValueError(f"unclosed Solution block starting at line {i + 1}: {lines[i]!r}")
        removed += 1
        i = end + 1
        while kept and not kept[-1].strip() and i < len(lines) and not lines[i].strip():
            i += 1
    return "\n".join(kept).rstrip("\n") + ("\n" if markdown.endswith("\n") else ""), removed


def student_notebook(notebook: dict) -> tuple[dict, int]:
    """A copy of ``notebook`` whose markdown cells have no Solution blocks, and how many went."""
    copy = json.loads(json.dumps(notebook))
    total = 0
    for cell in copy["cells"]:
        if cell["cell_type"] == "markdown":
            text, removed = strip_solutions("".join(cell["source"]))
            if removed:
                cell["source"] = text.splitlines(keepends=True)
                total += removed
    return copy, total


def chapter_notebooks() -> list[Path]:
    """The book's notebooks (the main-results page, the chapters, their Reproduction report
    pages and the appendix), in file-name order."""
    return sorted((ROOT / "notebooks").glob("*.ipynb"))


def write_notebooks(edition: str, out: Path) -> int:
    """Copy the chapter notebooks into ``out/notebooks``; returns the solutions removed."""
    target = out / "notebooks"
    target.mkdir(parents=True, exist_ok=True)
    removed = 0
    for path in chapter_notebooks():
        notebook = json.loads(path.read_text())
        if edition == "student":
            notebook, count = student_notebook(notebook)
            removed += count
        (target / path.name).write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return removed


def tool(name: str) -> str:
    """The environment's executable ``name`` (next to this Python), or a clear error."""
    path = Path(sys.executable).with_name(name)
    if not path.exists():
        raise SystemExit(f"error: {path} not found: run this script with the project's "
                         "environment, .venv/bin/python (bash scripts/setup.sh creates it)")
    return str(path)


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def constraint_pins() -> dict[str, str]:
    """constraints.txt as canonical package name -> pinned version."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.lstrip().startswith("#"):
            name, version = line.split("==", 1)
            pins[_canonical(name.strip())] = version.strip()
    return pins


def pinned_requirements(roots: tuple[str, ...]) -> list[str]:
    """``name==version`` for ``roots`` and everything they need (the book's own packages,
    installed from their wheels, are left out).

    The dependency graph is read from the installed packages' metadata (markers evaluated for
    this platform and the requested extras); every version comes from constraints.txt, and a
    package missing there is an error naming it.
    """
    from importlib import metadata

    from packaging.requirements import Requirement

    pins = constraint_pins()
    wanted = [Requirement(root) for root in roots]
    seen: set[tuple[str, frozenset[str]]] = set()
    names: set[str] = set()
    while wanted:
        requirement = wanted.pop()
        name = _canonical(requirement.name)
        key = (name, frozenset(requirement.extras))
        if key in seen:
            continue
        seen.add(key)
        names.add(name)
        for text in metadata.requires(name) or []:
            dependency = Requirement(text)
            marker = dependency.marker
            if marker is None or any(marker.evaluate({"extra": extra})
                                     for extra in ("", *requirement.extras)):
                wanted.append(dependency)
    names -= set(OWN_PACKAGES)
    missing = sorted(names - set(pins))
    if missing:
        raise ValueError(f"constraints.txt pins no version of {', '.join(missing)}")
    return [f"{name}=={pins[name]}" for name in sorted(names)]


def write_requirements(path: Path, roots: tuple[str, ...], *, wheel_dir: str) -> Path:
    """A requirements file: the book's own packages that ``roots`` name (attnbook brings
    attnlib) from the wheels in ``wheel_dir`` (relative to the file) and
    :func:`pinned_requirements` of ``roots``."""
    own = ["attnlib", *(["attnbook"] if "attnbook" in roots else [])]
    lines = [f"# {' and '.join(own)} from the wheels beside this file; every other package pinned",
             f"--find-links {wheel_dir}",
             *(f"{name}=={metadata_version(name)}" for name in own), *pinned_requirements(roots)]
    path.write_text("\n".join(lines) + "\n")
    return path


def metadata_version(package: str) -> str:
    from importlib import metadata

    return metadata.version(package)


def build_wheel(dest: Path, package: str = "attnlib") -> Path:
    """Build the wheel of ``package`` (``attnlib``, from ``attnlib/pyproject.toml``, or
    ``attnbook``, from the root ``pyproject.toml``) from a copy of its sources (the repository
    is untouched)."""
    if package not in OWN_PACKAGES:
        raise ValueError(f"package must be one of {OWN_PACKAGES}, got {package!r}")
    dest.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    with tempfile.TemporaryDirectory() as scratch:
        source = Path(scratch) / "src"
        if package == "attnlib":
            shutil.copytree(ROOT / "attnlib", source, ignore=ignore)
        else:
            source.mkdir()
            for name in ("pyproject.toml", "README.md"):
                shutil.copy(ROOT / name, source / name)
            shutil.copytree(ROOT / "attnbook", source / "attnbook", ignore=ignore)
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                        "--no-build-isolation", "--disable-pip-version-check",
                        "--wheel-dir", str(dest), str(source)], check=True)
    return next(dest.glob(f"{package}-*.whl"))


def _feedback_init_cell(master: Path) -> dict:
    """The problem set's "Initialize Otter" cell: ``grader`` is the ``BriefGrader`` (otter's
    ``Notebook``) of ``check_feedback.py`` beside ``master``, whose code is copied in (its module
    docstring left out), so a failing check prints its message, not otter's doctest trace, and
    the notebook needs no file beside it."""
    source = (master.parent / "check_feedback.py").read_text()
    body = source.split('"""', 2)[2].strip("\n")
    return {"cell_type": "code", "execution_count": None, "id": "initialize-otter",
            "metadata": {"deletable": False, "editable": False}, "outputs": [],
            "source": "# Initialize Otter. A failing check prints its message; for otter's full "
                      "report of\n# every check call grader.check(\"q...\", verbose=True), or set "
                      "grader.verbose = True.\n" + body
                      + f'\n\n\ngrader = BriefGrader("{master.name}")\n'}


def _stage_master(master: Path, stage: Path, wheel: Path) -> Path:
    """Copy ``master`` and its autograder files into ``stage`` with a self-contained autograder:
    the wheel and a pinned requirements file added to its assignment configuration, and otter's
    init cell replaced by :func:`_feedback_init_cell` (short feedback from the checks)."""
    notebook = json.loads(master.read_text())
    config_cell = notebook["cells"][0]
    config = yaml.safe_load("".join(config_cell["source"]).removeprefix("# ASSIGNMENT CONFIG"))
    for name in config.get("autograder_files", []):
        shutil.copy(master.parent / name, stage / name)
    shutil.copy(wheel, stage / wheel.name)
    write_requirements(stage / "requirements.txt", GRADER_PACKAGES, wheel_dir="files")
    config.update(requirements="requirements.txt", overwrite_requirements=True,
                  python_version=f"{sys.version_info.major}.{sys.version_info.minor}",
                  autograder_files=[*config.get("autograder_files", []), wheel.name],
                  init_cell=False)
    config_cell["source"] = "# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False)
    notebook["cells"].insert(1, _feedback_init_cell(master))
    staged = stage / master.name
    staged.write_text(json.dumps(notebook, indent=1))
    return staged


def assign(master: Path, build: Path, *, wheel: Path, run_tests: bool = True) -> Path:
    """``otter assign`` of one problem set into ``build`` (``student/`` and ``autograder/``),
    with a self-contained autograder zip holding ``wheel`` (:func:`_stage_master`); returns
    ``build``.

    ``otter assign`` executes the reference solutions against every check unless
    ``run_tests`` is False, and fails when one of them does not pass.
    """
    shutil.rmtree(build, ignore_errors=True)
    with tempfile.TemporaryDirectory() as scratch:
        stage = Path(scratch)
        staged = _stage_master(master, stage, wheel)
        command = [tool("otter"), "assign", str(staged), str(build)]
        if not run_tests:
            command.append("--no-run-tests")
        done = subprocess.run(command, cwd=stage, capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"otter assign {master.name} failed:\n{done.stdout[-4000:]}"
                           f"{done.stderr[-4000:]}")
    return build


def assign_problem_sets(edition: str, out: Path, *, run_tests: bool = True) -> list[Path]:
    """:func:`assign` every problem set; keep the part the edition hands out (the student
    notebooks and public checks, or the reference solutions, every check and the zip)."""
    written = []
    with tempfile.TemporaryDirectory() as scratch:
        wheel = build_wheel(Path(scratch))
        for master in sorted(PROBLEM_SETS.glob("ps*.ipynb")):
            build = assign(master, out / "problem_sets" / "_otter" / master.stem, wheel=wheel,
                           run_tests=run_tests)
            part = "student" if edition == "student" else "autograder"
            target = out / "problem_sets" / master.stem
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(build / part, target)
            written.append(target / master.name)
    shutil.rmtree(out / "problem_sets" / "_otter", ignore_errors=True)
    return written


def build_html(out: Path) -> Path:
    """Build the book from ``out``'s notebooks and the prose pages into ``out/html``."""
    shutil.copytree(ROOT / "book", out / "book", dirs_exist_ok=True)
    # the pages' footer and citation block read the version and CITATION.cff
    for name in ("_toc.yml", "pyproject.toml", "CITATION.cff"):
        shutil.copy(ROOT / name, out / name)
    # the claims ledger page (issue 19), from this edition's notebooks
    subprocess.run([sys.executable, "-m", "attnbook.ledger", "--root", str(out),
                    "--out", str(out / "book" / "ledger.md")], check=True, cwd=ROOT)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    config["exclude_patterns"] = [*config.get("exclude_patterns", []), "problem_sets", "html"]
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    subprocess.run([tool("jupyter-book"), "build", str(out), "-W", "-n", "--keep-going",
                    "--path-output", str(out)], check=True)
    html = out / "html"
    shutil.rmtree(html, ignore_errors=True)
    shutil.move(out / "_build" / "html", html)
    shutil.rmtree(out / "_build", ignore_errors=True)
    return html


def execute_notebooks(paths: list[Path], *, timeout: int = 600) -> dict[str, tuple[float, float]]:
    """Execute each notebook in place on a fresh kernel, in its own directory, one at a time.

    Returns name -> (wall seconds, CPU seconds of the kernel and this process). Raises
    ``nbclient.exceptions.CellExecutionError`` naming the cell when one fails.
    """
    import nbclient
    import nbformat

    times = {}
    for path in paths:
        notebook = nbformat.read(path, as_version=4)
        cpu_before = sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
                         for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
        start = time.perf_counter()
        nbclient.NotebookClient(notebook, timeout=timeout, kernel_name="python3",
                                resources={"metadata": {"path": str(path.parent)}}).execute()
        wall = time.perf_counter() - start
        cpu = sum(resource.getrusage(who).ru_utime + resource.getrusage(who).ru_stime
                  for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) - cpu_before
        nbformat.write(notebook, path)
        times[path.name] = (wall, cpu)
        print(f"{path.name}: {wall:.1f} s wall, {cpu:.1f} s CPU "
              f"(load average {os.getloadavg()[0]:.1f})", flush=True)
    return times


def build(edition: str, out: Path, *, html: bool = False, run_tests: bool = True) -> Path:
    """Write one edition into ``out/edition`` and return that directory."""
    if edition not in EDITIONS:
        raise ValueError(f"edition must be one of {EDITIONS}, got {edition!r}")
    target = out / edition
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    removed = write_notebooks(edition, target)
    sets = assign_problem_sets(edition, target, run_tests=run_tests)
    print(f"{edition}: {len(chapter_notebooks())} notebooks ({removed} solutions removed), "
          f"{len(sets)} problem sets -> {target}")
    if html:
        print(f"{edition}: HTML in {build_html(target) / 'index.html'}")
    return target


# The bundle's notebooks read like the book in JupyterLab (issue 67): jupyterlab-myst renders
# MyST, but resolves no reference to another notebook, cites nothing from a .bib file, numbers
# a notebook's equations 1, 2, ... and shows no figure caption kept in cell metadata. So the
# bundle's copies get the book's numbers and citations as plain Markdown, captions as Markdown
# cells under their figures, and the book's folded code cells collapsed.
ROLE = re.compile(r"\{(?P<role>numref|ref|eq|doc|cite(?::\w+)?)\}`(?P<body>[^`]+)`")
_EXPLICIT = re.compile(r"(?P<text>.*?)\s*<(?P<target>[^<>]+)>", re.S)
# A labelled display equation, "$$ body $$ (label)" (MyST dollarmath)
_DISPLAY_LABEL = re.compile(r"\$\$(?P<body>(?:(?!\$\$).)*?)\$\$[ \t]*\((?P<label>[\w-]+)\)",
                            re.S)
_DISPLAY_LINES = re.compile(r"^(?P<indent>[ \t]*)" + _DISPLAY_LABEL.pattern + r"[ \t]*$",
                            re.S | re.M)
_FIGURE_NAME = re.compile(r"^(`{3,}|:{3,})\{figure\}.*?^:name:\s*(?P<label>\S+)", re.M | re.S)
_SECTION = re.compile(r"^\((?P<label>[\w-]+)\)=\s*\n+#+\s+(?P<title>.+)$", re.M)
#: The book's fold tags (myst-nb) -> the JupyterLab cell metadata that collapses the same parts.
FOLDS = {"hide-input": {"source_hidden": True}, "hide-output": {"outputs_hidden": True},
         "hide-cell": {"source_hidden": True, "outputs_hidden": True}}
#: Where the bundle's notebooks find the HTML edition and the bibliography page.
HTML_FROM_NOTEBOOKS = "../html"
BIBLIOGRAPHY_PAGE = "book/bibliography"


class Target(NamedTuple):
    """A place a reference can point to: its page (docname), HTML id and the text a reference
    to it shows (``Fig. 1.3``, ``(2.4)``, a section's title)."""

    page: str
    anchor: str
    text: str


def toc_docnames() -> list[str]:
    """The book's pages in the order of ``_toc.yml`` (its numbering order)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"], *(chapter["file"] for part in toc["parts"]
                           for chapter in part["chapters"])]


def _page_sources(docname: str, notebooks: Path) -> list[tuple[str, str, dict]] | None:
    """The page's cells as (type, source, metadata): a notebook from ``notebooks``, a Markdown
    page from the repository as one cell; None for a page with no source (generated)."""
    notebook = notebooks / f"{Path(docname).name}.ipynb"
    if docname.startswith("notebooks/") and notebook.exists():
        return [(cell["cell_type"], "".join(cell["source"]), cell["metadata"])
                for cell in json.loads(notebook.read_text())["cells"]]
    page = ROOT / f"{docname}.md"
    return [("markdown", page.read_text(), {})] if page.exists() else None


def _numbered_items(cells: list[tuple[str, str, dict]]) -> dict[str, list[str]]:
    """The page's figures and labelled display equations, each kind in document order (the
    order Sphinx numbers them in)."""
    items: dict[str, list[str]] = {"figure": [], "equation": []}
    for cell_type, source, metadata in cells:
        if cell_type == "code" and "figure" in metadata.get("mystnb", {}):
            items["figure"].append(metadata["mystnb"]["figure"].get("name", ""))
        elif cell_type == "markdown":
            items["figure"] += [m["label"] for m in _FIGURE_NAME.finditer(source)]
            items["equation"] += [m["label"] for m in _DISPLAY_LABEL.finditer(source)]
    return items


def book_targets(notebooks: Path) -> tuple[dict[str, Target], dict[str, str]]:
    """Every label of the book (figures, labelled equations, labelled sections) as a
    :class:`Target`, numbered as ``book/_ext/book_html.py`` numbers them (the k-th figure of
    chapter 6b's page is Fig. 6b.k, of a Reproduction report page R5.k; the pages of no
    chapter count 1, 2, ... among themselves in book order), and each page's title.

    The chapter pages are read from ``notebooks`` (an edition's copies), the prose pages from
    the repository."""
    chapter_label = _book_extension().chapter_label
    targets: dict[str, Target] = {}
    titles: dict[str, str] = {}
    outside = {"figure": 0, "equation": 0}
    for docname in toc_docnames():
        cells = _page_sources(docname, notebooks)
        if cells is None:
            continue
        text = "\n".join(source for kind, source, _ in cells if kind == "markdown")
        titles[docname] = next((line[2:].strip() for line in text.splitlines()
                                if line.startswith("# ")), docname)
        chapter = chapter_label(docname)
        for kind, labels in _numbered_items(cells).items():
            for k, label in enumerate(labels, start=1):
                if chapter is None:
                    outside[kind] += 1
                number = f"{chapter}.{k}" if chapter else str(outside[kind])
                if label:
                    targets[label] = (Target(docname, label, f"Fig. {number}") if kind == "figure"
                                      else Target(docname, f"equation-{label}", f"({number})"))
        for match in _SECTION.finditer(text):
            targets[match["label"]] = Target(docname, match["label"], match["title"].strip())
    return targets, titles


def _book_extension():
    """The book's Sphinx extension ``book/_ext/book_html.py``, whose ``chapter_label`` gives a
    page's numbering label."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_html", ROOT / "book/_ext/book_html.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _html_link(docname: str, anchor: str = "") -> str:
    """The relative link from a bundle notebook to a page (and anchor) of the HTML edition."""
    return f"{HTML_FROM_NOTEBOOKS}/{docname}.html" + (f"#{anchor}" if anchor else "")


def cite_text(entry, role: str) -> str:
    """The author-year label of a pybtex ``entry`` for a cite role: ``Goel et al.`` with
    ``2026``, as ``[Goel et al., 2026]`` (``{cite}``, the book's form), ``(Goel et al., 2026)``
    (``{cite:p}``), ``Goel et al. (2026)`` (``{cite:t}``), the authors or the year alone."""
    from pybtex.richtext import Text

    names = [Text.from_latex(" ".join(person.last_names)).render_as("text")
             for person in entry.persons.get("author", [])]
    authors = (names[0] if len(names) == 1 else " and ".join(names) if len(names) == 2
               else f"{names[0]} et al." if names else entry.fields.get("title", entry.key))
    year = entry.fields.get("year", "n.d.")
    return {"cite:p": f"({authors}, {year})", "cite:t": f"{authors} ({year})",
            "cite:author": authors, "cite:year": year}.get(role, f"[{authors}, {year}]")


def bibliography():
    """book/references.bib, parsed by pybtex (the library sphinxcontrib-bibtex uses)."""
    import pybtex.database

    return pybtex.database.parse_file(str(ROOT / "book" / "references.bib"))


def resolve_roles(markdown: str, docname: str, targets: dict[str, Target],
                  titles: dict[str, str], bib, cited: list[str]) -> str:
    """``markdown`` with every ``{numref}``, ``{eq}``, ``{ref}``, ``{doc}`` and ``{cite...}``
    role replaced by the text the book shows, linked to the HTML edition (a ``{doc}`` of a
    chapter page to its notebook beside this one); the keys cited are appended to ``cited``.
    Raises ``KeyError`` on a label, page or key the book does not have."""

    def replace(match: re.Match) -> str:
        role, body = match["role"], match["body"]
        explicit = _EXPLICIT.fullmatch(body)
        text, target = (explicit["text"], explicit["target"]) if explicit else ("", body)
        if role.startswith("cite"):
            keys = [key.strip() for key in target.split(",")]
            cited.extend(key for key in keys if key not in cited)
            return "; ".join(f"[{cite_text(bib.entries[key], role)}]"
                             f"({_html_link(BIBLIOGRAPHY_PAGE)})" for key in keys)
        if role == "doc":
            page = posixpath.normpath(posixpath.join(posixpath.dirname(docname), target))
            link = (f"{Path(page).name}.ipynb" if page.startswith("notebooks/")
                    else _html_link(page))
            return f"[{text or titles[page]}]({link})"
        found = targets[target]
        number = found.text.removeprefix("Fig. ").strip("()")
        shown = text.replace("%s", number).replace("{number}", number) if text else found.text
        return f"[{shown}]({_html_link(found.page, found.anchor)})"

    return ROLE.sub(replace, markdown)


def number_equations(markdown: str, targets: dict[str, Target]) -> str:
    """``markdown`` with each labelled display equation on lines of its own written as a
    ``{math}`` directive with the book's number (``:enumerator: 1.2``): jupyterlab-myst would
    number the ``$$`` form 1, 2, ... on its own."""

    def directive(match: re.Match) -> str:
        indent = match["indent"]
        number = targets[match["label"]].text.strip("()")
        body = [indent + line.strip() for line in match["body"].strip().splitlines()]
        return "\n".join([f"{indent}```{{math}}", f"{indent}:enumerator: {number}", *body,
                          f"{indent}```"])

    return _DISPLAY_LINES.sub(directive, markdown)


def reference_list(keys: list[str], bib) -> str:
    """A Markdown "References" section for the cited ``keys``, formatted like the book's
    bibliography (pybtex's plain style, sorted as there)."""
    import pybtex.plugin

    style = pybtex.plugin.find_plugin("pybtex.style.formatting", "plain")()
    backend = pybtex.plugin.find_plugin("pybtex.backends", "markdown")()
    entries = style.format_entries(style.sort([bib.entries[key] for key in keys]))
    lines = [f"- **{cite_text(bib.entries[e.key], 'cite:t')}**. "
             + " ".join(e.text.render(backend).split()) for e in entries]
    return ("## References\n\nThe works this page cites ([the book's bibliography]"
            f"({_html_link(BIBLIOGRAPHY_PAGE)}) has them all):\n\n" + "\n".join(lines) + "\n")


def _markdown_cell(cell_id: str, text: str) -> dict:
    return {"cell_type": "markdown", "id": cell_id, "metadata": {},
            "source": text.splitlines(keepends=True)}


def book_like_notebook(notebook: dict, docname: str, targets: dict[str, Target],
                       titles: dict[str, str], bib) -> dict:
    """A copy of ``notebook`` that reads like its book page in JupyterLab: references resolved
    (:func:`resolve_roles`), equations numbered as in the book (:func:`number_equations`), each
    figure's caption (its ``mystnb.figure`` metadata) as a Markdown cell under it, the cells the
    book folds collapsed (:data:`FOLDS`) and, when the page cites anything, a reference list at
    the end. Code is unchanged."""
    copy = json.loads(json.dumps(notebook))
    cited: list[str] = []
    cells = []
    for cell in copy["cells"]:
        if cell["cell_type"] == "markdown":
            text = resolve_roles("".join(cell["source"]), docname, targets, titles, bib, cited)
            text = number_equations(text, targets)
            cell["source"] = text.splitlines(keepends=True)
        cells.append(cell)
        for tag in set(cell["metadata"].get("tags", [])) & set(FOLDS):
            cell["metadata"].setdefault("jupyter", {}).update(FOLDS[tag])
        figure = cell["metadata"].get("mystnb", {}).get("figure")
        if cell["cell_type"] == "code" and figure and figure.get("name") in targets:
            caption = resolve_roles(figure.get("caption", ""), docname, targets, titles, bib,
                                    cited)
            cells.append(_markdown_cell(f"{cell['id']}-caption",
                                        f"**{targets[figure['name']].text}** {caption}\n"))
    if cited:
        cells.append(_markdown_cell("references", reference_list(cited, bib)))
    copy["cells"] = cells
    return copy


def book_like_notebooks(notebooks: Path) -> int:
    """Rewrite every notebook in ``notebooks`` with :func:`book_like_notebook`, numbered as the
    book built from these notebooks numbers them; returns the captions added."""
    targets, titles = book_targets(notebooks)
    bib = bibliography()
    captions = 0
    for path in sorted(notebooks.glob("*.ipynb")):
        notebook = book_like_notebook(json.loads(path.read_text()), f"notebooks/{path.stem}",
                                      targets, titles, bib)
        captions += sum(cell["id"].endswith("-caption") for cell in notebook["cells"])
        path.write_text(json.dumps(notebook, indent=1, ensure_ascii=False) + "\n")
    return captions


BUNDLE_README = """# How softmax attention trains: student bundle

What is where:

* `html/index.html`: the book (the student edition, without solutions) to read in a browser;
  open the file, nothing to install.
* `notebooks/`: the same chapters as notebooks to run and change (no solutions). In JupyterLab
  they read like the book: figure and equation numbers, citations with a reference list at the
  end, captions under the figures, and the code that draws a figure collapsed (click its `...`
  or the bar left of the cell to show it). Their links open the book's pages in `html/`.
* `slides/`: the lecture slides, one deck a session (`slides/session01.html`, ...), to open in a
  browser; the arrow keys move between slides.
* `problem_sets/`: the problem sets, each a notebook with its public checks in `tests/`.

Install once, in this folder:

    python3 -m venv .venv
    .venv/bin/python -m pip install -r requirements.txt
    .venv/bin/jupyter lab

(`requirements.txt` installs `attnlib` and `attnbook` from the wheels in this folder and pins
every other package.) Work through a problem set top to bottom; each `grader.check` cell says
which public checks pass. Hand in the problem set's `.ipynb` file, saved after *Restart Kernel
and Run All Cells*, as your instructor asks; it is graded with further hidden checks.

Licences: the code is MIT-licensed (`LICENSE`), the text and figures CC BY 4.0
(`LICENSE-TEXT.md`).
"""


def bundle_html(bundle: Path) -> Path:
    """The book built from ``bundle/notebooks`` (:func:`build_html`, in a scratch folder so the
    bundle gets only the pages) into ``bundle/html``."""
    with tempfile.TemporaryDirectory() as scratch:
        shutil.copytree(bundle / "notebooks", Path(scratch) / "notebooks")
        shutil.move(build_html(Path(scratch)), bundle / "html")
    return bundle / "html"


def bundle_slides(bundle: Path) -> list[Path]:
    """Every session's deck (``scripts/slides.py``) into ``bundle/slides``."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("slides", ROOT / "scripts" / "slides.py")
    slides = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(slides)
    return [slides.build(session, bundle / "slides") for session in slides.spec()]


def student_bundle(out: Path) -> Path:
    """Write ``out/student-bundle``: the student edition's notebooks (made to read like the
    book, :func:`book_like_notebooks`) and problem sets, its HTML, the slides, the attnlib and
    attnbook wheels, pinned requirements, the licences and a README; nothing else (no master
    notebook, no hidden check)."""
    start = time.perf_counter()
    bundle = out / "student-bundle"
    shutil.rmtree(bundle, ignore_errors=True)
    bundle.mkdir(parents=True)
    write_notebooks("student", bundle)
    html = bundle_html(bundle)  # from the notebooks as the book reads them: before the rewrite
    captions = book_like_notebooks(bundle / "notebooks")
    decks = bundle_slides(bundle)
    assign_problem_sets("student", bundle, run_tests=False)
    wheel = build_wheel(bundle)
    book_wheel = build_wheel(bundle, "attnbook")
    write_requirements(bundle / "requirements.txt", STUDENT_PACKAGES, wheel_dir=".")
    for name in LICENSES:
        shutil.copy(ROOT / name, bundle / name)
    (bundle / "README.md").write_text(BUNDLE_README)
    print(f"student bundle: {len(chapter_notebooks())} notebooks ({captions} captions), "
          f"{len(list((bundle / 'problem_sets').glob('*/*.ipynb')))} problem sets, "
          f"{html.name}/, {len(decks)} slide decks, {wheel.name}, {book_wheel.name} -> {bundle} "
          f"({time.perf_counter() - start:.0f} s)")
    return bundle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("editions", nargs="*", metavar="EDITION",
                        help=f"editions to build, from {EDITIONS} (default: both)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "editions")
    parser.add_argument("--html", action="store_true", help="also build each edition's HTML")
    parser.add_argument("--student-bundle", action="store_true",
                        help="write OUT/student-bundle (what students are given) "
                             "instead of the editions")
    parser.add_argument("--execute", action="store_true",
                        help="execute each edition's chapter notebooks (outside the repository) "
                             "and print their run times")
    args = parser.parse_args()
    tool("otter")  # fail early, with the fix, outside the project's environment
    if args.student_bundle:
        student_bundle(args.out.resolve())
        return
    for edition in args.editions or EDITIONS:
        target = build(edition, args.out.resolve(), html=args.html)
        if args.execute:
            times = execute_notebooks(sorted((target / "notebooks").glob("*.ipynb")))
            print(f"{edition}: all notebooks {sum(w for w, _ in times.values()):.0f} s wall, "
                  f"{sum(c for _, c in times.values()):.0f} s CPU")


if __name__ == "__main__":
    main()
