"""Every chapter notebook must have been executed once, in order, on a fresh kernel.

nbval never compares a cell whose ``execution_count`` is null, so an unexecuted notebook
would pass silently; these tests close that gap and also require stored outputs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
TOC = (Path(__file__).resolve().parents[1] / "_toc.yml").read_text()


def code_cells(path: Path) -> list[dict]:
    notebook = json.loads(path.read_text())
    return [cell for cell in notebook["cells"]
            if cell["cell_type"] == "code" and "".join(cell["source"]).strip()]


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "no notebooks found under notebooks/"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_executed_once_in_order(path: Path) -> None:
    counts = [cell.get("execution_count") for cell in code_cells(path)]
    unexecuted = sum(count is None for count in counts)
    assert unexecuted == 0, f"{path.name}: {unexecuted} code cell(s) never executed"
    assert counts == list(range(1, len(counts) + 1)), (
        f"{path.name}: execution counts {counts} are not 1..{len(counts)}; "
        "run `python scripts/execute_notebooks.py` on it")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_has_stored_outputs(path: Path) -> None:
    with_output = [cell for cell in code_cells(path) if cell.get("outputs")]
    assert len(with_output) >= 1, f"{path.name}: no cell has a stored output"
    figures = sum("image/png" in output.get("data", {})
                  for cell in code_cells(path) for output in cell.get("outputs", []))
    # a chapter teaches with figures; a Reproduction report page may hold checks only
    assert figures >= 1 or path.stem.startswith("report_"), f"{path.name}: no stored figure"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_stored_output_is_an_error(path: Path) -> None:
    # a widget callback's exception is shown as an output, not raised: the cell still "runs"
    errors = [f"{output.get('ename')}: {output.get('evalue')}" for cell in code_cells(path)
              for output in cell.get("outputs", []) if output.get("output_type") == "error"]
    assert not errors, f"{path.name} stores error outputs: {errors}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_in_table_of_contents(path: Path) -> None:
    assert f"notebooks/{path.stem}" in TOC, f"{path.name} is not listed in _toc.yml"


def _notebook_text():
    import importlib.util
    path = Path(__file__).resolve().parents[1] / "scripts" / "notebook_text.py"
    spec = importlib.util.spec_from_file_location("notebook_text", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_notebook_has_a_current_text_twin() -> None:
    problems = _notebook_text().stale()
    assert not problems, ("\n".join(problems)
                          + "\nrun `python scripts/notebook_text.py` after editing a notebook")


def test_text_twins_report_edits_missing_and_orphaned_files(tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    text = _notebook_text()
    monkeypatch.setattr(text, "NOTEBOOKS", tmp_path)
    monkeypatch.setattr(text, "TEXT", tmp_path / "text")
    notebook = tmp_path / "ch99_demo.ipynb"
    notebook.write_text(NOTEBOOKS[0].read_text())
    assert text.stale() == ["text/ch99_demo.py is missing"]
    text.write(notebook)
    assert text.stale() == []
    cells = json.loads(notebook.read_text())
    cells["cells"][0]["source"] = ["# an edited title\n"]
    notebook.write_text(json.dumps(cells))
    assert text.stale() == ["text/ch99_demo.py differs from ch99_demo.ipynb"]
    notebook.unlink()
    assert text.stale() == ["text/ch99_demo.py has no notebook"]
