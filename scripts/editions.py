"""Build the student and instructor editions of the book from the one source.

Usage (from the repository root, with .venv's Python)::

    python scripts/editions.py [--out _build/editions] [--html] [student] [instructor]

For each edition it writes ``OUT/EDITION/`` holding

* ``notebooks/``: copies of the chapter notebooks. In the student edition every
  ``{admonition} Solution`` block (the one place solutions are written, see CONTRIBUTING.md)
  is removed from the markdown cells; the instructor edition keeps them. Code cells and their
  stored outputs are copied unchanged.
* ``problem_sets/``: ``otter assign`` output of each problem set in ``notebooks/problem_sets``:
  the student edition gets the notebooks with stubs and the public checks, the instructor
  edition the notebooks with the reference solutions and all checks (``autograder/``).
* with ``--html``: ``html/``, the book built by Jupyter Book from these notebooks and the
  prose pages (stored outputs rendered, nothing re-executed).

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
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
EDITIONS = ("student", "instructor")
PROBLEM_SETS = ROOT / "notebooks" / "problem_sets"
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
    """The book's notebooks (chapters and appendix), in file-name order."""
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


def assign_problem_sets(edition: str, out: Path, *, run_tests: bool = True) -> list[Path]:
    """Run ``otter assign`` on every problem set; keep the part the edition hands out.

    ``otter assign`` executes the reference solutions against every check unless
    ``run_tests`` is False, and fails when one of them does not pass.
    """
    written = []
    for master in sorted(PROBLEM_SETS.glob("ps*.ipynb")):
        build = out / "problem_sets" / "_otter" / master.stem
        shutil.rmtree(build, ignore_errors=True)
        command = [str(Path(sys.executable).with_name("otter")), "assign", str(master), str(build)]
        if not run_tests:
            command.append("--no-run-tests")
        subprocess.run(command, check=True, cwd=master.parent)
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
    shutil.copy(ROOT / "_toc.yml", out / "_toc.yml")
    # the claims ledger page (issue 19), from this edition's notebooks
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_ledger.py"), "--root", str(out),
                    "--out", str(out / "book" / "ledger.md")], check=True)
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    config["exclude_patterns"] = [*config.get("exclude_patterns", []), "problem_sets", "html"]
    (out / "_config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    jupyter_book = Path(sys.executable).with_name("jupyter-book")
    subprocess.run([str(jupyter_book), "build", str(out), "-W", "-n", "--keep-going",
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("editions", nargs="*", metavar="EDITION",
                        help=f"editions to build, from {EDITIONS} (default: both)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "editions")
    parser.add_argument("--html", action="store_true", help="also build each edition's HTML")
    parser.add_argument("--execute", action="store_true",
                        help="execute each edition's chapter notebooks (outside the repository) "
                             "and print their run times")
    args = parser.parse_args()
    for edition in args.editions or EDITIONS:
        target = build(edition, args.out.resolve(), html=args.html)
        if args.execute:
            times = execute_notebooks(sorted((target / "notebooks").glob("*.ipynb")))
            print(f"{edition}: all notebooks {sum(w for w, _ in times.values()):.0f} s wall, "
                  f"{sum(c for _, c in times.values()):.0f} s CPU")


if __name__ == "__main__":
    main()
