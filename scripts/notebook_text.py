"""Each notebook's text twin: ``notebooks/text/NAME.py`` holds the code and prose of
``notebooks/NAME.ipynb`` in jupytext's percent format (no outputs), so a review reads a plain
diff of what changed.

Usage: ``python scripts/notebook_text.py`` rewrites every twin from its notebook (and deletes
twins whose notebook is gone); ``--check`` only lists the stale ones and exits 1 if any.
``scripts/execute_notebooks.py`` rewrites a notebook's twin each time it runs the notebook.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TEXT = NOTEBOOKS / "text"


def text_of(notebook: Path) -> str:
    """The percent-format text of ``notebook`` (its cells' sources and metadata)."""
    return jupytext.writes(nbformat.read(notebook, as_version=4), fmt="py:percent")


def twin(notebook: Path) -> Path:
    """Where the text twin of ``notebook`` lives."""
    return TEXT / f"{notebook.stem}.py"


def stale() -> list[str]:
    """Twins that differ from their notebook, are missing, or have no notebook."""
    notebooks = sorted(NOTEBOOKS.glob("*.ipynb"))
    problems = [f"text/{twin(nb).name} differs from {nb.name}" if twin(nb).exists()
                else f"text/{twin(nb).name} is missing" for nb in notebooks
                if not twin(nb).exists() or twin(nb).read_text() != text_of(nb)]
    names = {nb.stem for nb in notebooks}
    problems += [f"text/{path.name} has no notebook" for path in sorted(TEXT.glob("*.py"))
                 if path.stem not in names]
    return problems


def write(notebook: Path) -> Path:
    """Rewrite the twin of ``notebook`` from it; return the twin's path."""
    TEXT.mkdir(exist_ok=True)
    twin(notebook).write_text(text_of(notebook))
    return twin(notebook)


def main(argv: list[str]) -> int:
    if argv == ["--check"]:
        problems = stale()
        print("\n".join(problems) or "every notebook's text twin is current")
        return 1 if problems else 0
    if argv:
        print(__doc__)
        return 2
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        write(notebook)
    for orphan in sorted(TEXT.glob("*.py")):
        if not (NOTEBOOKS / f"{orphan.stem}.ipynb").exists():
            orphan.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
