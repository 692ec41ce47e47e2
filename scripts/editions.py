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

With ``--student-bundle``: ``OUT/student-bundle/``, what students are given for graded work
and nothing else: the student edition's notebooks and problem sets, an ``attnlib`` wheel, a
``requirements.txt`` pinning every package the notebooks need (installs the wheel from the
same folder), the licences and a README saying how to install and open it.

Nothing is edited by hand: rerun this command after changing a chapter or a problem set.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

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


def _stage_master(master: Path, stage: Path, wheel: Path) -> Path:
    """Copy ``master`` and its autograder files into ``stage`` with a self-contained autograder:
    the wheel and a pinned requirements file added to its assignment configuration."""
    notebook = json.loads(master.read_text())
    config_cell = notebook["cells"][0]
    config = yaml.safe_load("".join(config_cell["source"]).removeprefix("# ASSIGNMENT CONFIG"))
    for name in config.get("autograder_files", []):
        shutil.copy(master.parent / name, stage / name)
    shutil.copy(wheel, stage / wheel.name)
    write_requirements(stage / "requirements.txt", GRADER_PACKAGES, wheel_dir="files")
    config.update(requirements="requirements.txt", overwrite_requirements=True,
                  python_version=f"{sys.version_info.major}.{sys.version_info.minor}",
                  autograder_files=[*config.get("autograder_files", []), wheel.name])
    config_cell["source"] = "# ASSIGNMENT CONFIG\n" + yaml.safe_dump(config, sort_keys=False)
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


BUNDLE_README = """# How softmax attention trains: student bundle

The chapters as notebooks (`notebooks/`, no solutions) and the problem sets (`problem_sets/`,
each a notebook with its public checks in `tests/`). Install once, in this folder:

    python3 -m venv .venv
    .venv/bin/python -m pip install -r requirements.txt
    .venv/bin/jupyter lab

(`requirements.txt` installs `attnlib` from the wheel in this folder and pins every other
package.) Work through a problem set top to bottom; each `grader.check` cell says which public
checks pass. Hand in the problem set's `.ipynb` file, saved after *Restart Kernel and Run All
Cells*, as your instructor asks; it is graded with further hidden checks.

Licences: the code is MIT-licensed (`LICENSE`), the text and figures CC BY 4.0
(`LICENSE-TEXT.md`).
"""


def student_bundle(out: Path) -> Path:
    """Write ``out/student-bundle``: the student edition, an attnlib wheel, pinned requirements,
    the licences and a README; nothing else (no master notebook, no hidden check)."""
    bundle = out / "student-bundle"
    shutil.rmtree(bundle, ignore_errors=True)
    bundle.mkdir(parents=True)
    write_notebooks("student", bundle)
    assign_problem_sets("student", bundle, run_tests=False)
    wheel = build_wheel(bundle)
    book_wheel = build_wheel(bundle, "attnbook")
    write_requirements(bundle / "requirements.txt", STUDENT_PACKAGES, wheel_dir=".")
    for name in LICENSES:
        shutil.copy(ROOT / name, bundle / name)
    (bundle / "README.md").write_text(BUNDLE_README)
    print(f"student bundle: {len(chapter_notebooks())} notebooks, "
          f"{len(list((bundle / 'problem_sets').glob('*/*.ipynb')))} problem sets, {wheel.name}, "
          f"{book_wheel.name} "
          f"-> {bundle}")
    return bundle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("editions", nargs="*", metavar="EDITION",
                        help=f"editions to build, from {EDITIONS} (default: both)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "editions")
    parser.add_argument("--html", action="store_true", help="also build each edition's HTML")
    parser.add_argument("--student-bundle", action="store_true",
                        help="write OUT/student-bundle (what students get for graded work) "
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
