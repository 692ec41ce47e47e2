"""Fold what a reader of a chapter does not need open: its first cell and its checks.

Usage: ``python scripts/fold_checks.py`` sets the folds in every notebook;
``python scripts/fold_checks.py --check`` exits 1 naming each cell whose fold is not the
rule's (the tests run it).

The rule, from each cell's source and stored outputs:

* the first code cell of a chapter or of the Main results page (imports, settings, the load
  of a stored run) is folded to one line, "Imports and settings" (its code; its output, when
  it prints one, stays visible unless it is a check); a report page's first cell (its
  imports and the calls of its chapter's functions) is folded the same way;
* in a chapter, a code cell whose printed output is a check (a verdict on a source's claim,
  a replay of a stored run, certified minima) and which draws no figure is folded whole,
  "Reproduction check". A cell that draws a figure stays open: its figure teaches.

Folding uses myst-nb's cell tags (``hide-input``, ``hide-cell``) with the prompt in the
cell's ``mystnb`` metadata; other tags (e.g. ``nbval-ignore-output``) are kept. Drawing
code that the chapter folds by hand (``hide-input`` on a figure cell) is left as it is.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
FOLD_TAGS = ("hide-input", "hide-cell")
#: Printed text that marks a check: a verdict status, a replay, certified minima.
CHECK = re.compile(r": (reproduced|partly reproduced|not reproduced|not testable here)\b"
                   r"|\breplayed\b|\bcertified minima\b")
FIRST_PROMPT = "Imports and settings: show {type}"
CHECK_PROMPT = "Reproduction check: show {type}"


def _text(cell: nbformat.NotebookNode) -> str:
    parts = []
    for output in cell.get("outputs", []):
        parts.append(output.get("text", "") or output.get("data", {}).get("text/plain", ""))
    return "".join(parts)


def _draws(cell: nbformat.NotebookNode) -> bool:
    return any("image/png" in output.get("data", {}) for output in cell.get("outputs", []))


def is_check(cell: nbformat.NotebookNode) -> bool:
    """True for a code cell whose output is a check and which draws no figure."""
    return cell.cell_type == "code" and not _draws(cell) and CHECK.search(_text(cell)) is not None


def wanted_fold(path: Path, index: int, cell: nbformat.NotebookNode, first_code: int
                ) -> tuple[str, str] | None:
    """``(tag, prompt)`` the rule gives cell ``index`` of ``path``, or ``None`` (open)."""
    if cell.cell_type != "code":
        return None
    chapter = path.name.startswith("ch")
    if chapter and index != first_code and is_check(cell):
        return "hide-cell", CHECK_PROMPT
    if index != first_code:
        return None
    if chapter and is_check(cell):
        return "hide-cell", CHECK_PROMPT
    if chapter or path.name.startswith(("main_results", "report_")):
        return "hide-input", FIRST_PROMPT
    return None


def fold(path: Path, write: bool) -> list[str]:
    """Apply the rule to ``path`` (written back when ``write``); returns the cells changed."""
    notebook = nbformat.read(path, as_version=4)
    code = [i for i, cell in enumerate(notebook.cells) if cell.cell_type == "code"]
    changed = []
    for index, cell in enumerate(notebook.cells):
        want = wanted_fold(path, index, cell, code[0] if code else -1)
        tags = list(cell.metadata.get("tags", []))
        prompt = cell.metadata.get("mystnb", {}).get("code_prompt_show")
        if want is None:
            if any(tag in tags for tag in FOLD_TAGS) and prompt is not None and \
                    prompt in (FIRST_PROMPT, CHECK_PROMPT):
                changed.append(f"{path.name} cell {index}: unfold")
                cell.metadata["tags"] = [t for t in tags if t not in FOLD_TAGS]
                cell.metadata["mystnb"].pop("code_prompt_show")
                if not cell.metadata["mystnb"]:
                    del cell.metadata["mystnb"]
                if not cell.metadata["tags"]:
                    del cell.metadata["tags"]
            continue
        tag, wanted_prompt = want
        new_tags = [t for t in tags if t not in FOLD_TAGS] + [tag]
        if new_tags != tags or prompt != wanted_prompt:
            changed.append(f"{path.name} cell {index}: {tag}")
            cell.metadata["tags"] = new_tags
            cell.metadata.setdefault("mystnb", {})["code_prompt_show"] = wanted_prompt
    if changed and write:
        nbformat.write(notebook, path)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a notebook's folds are not the rule's")
    args = parser.parse_args(argv)
    changed = [line for path in sorted(NOTEBOOKS.glob("*.ipynb"))
               for line in fold(path, write=not args.check)]
    for line in changed:
        print(("not folded by the rule: " if args.check else "") + line)
    if args.check and changed:
        print("run: python scripts/fold_checks.py")
        return 1
    print(f"fold_checks: {len(changed)} cells {'differ' if args.check else 'changed'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
