"""The Reproduction report's pages share their chapter's functions (attnbook.chapters), no
notebook executes another, and the chapters' checks and first cells are folded by one rule
(scripts/fold_checks.py)."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
#: What would run another notebook from a code cell: IPython's %run, a notebook client, the
#: old report helper.
RUNS_A_NOTEBOOK = ("%run", "nbclient", "NotebookClient", "execute_notebook", "rerun_chapter",
                   "nbformat.read", "papermill")


def _load_fold_checks():
    spec = importlib.util.spec_from_file_location("fold_checks", ROOT / "scripts" / "fold_checks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _code_cells(path: Path) -> list[str]:
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"]
            if c["cell_type"] == "code"]


def test_no_notebook_executes_another_notebook():
    pages = sorted((ROOT / "notebooks").rglob("*.ipynb"))
    assert len(pages) > 20
    for page in pages:
        for source in _code_cells(page):
            found = [word for word in RUNS_A_NOTEBOOK if word in source]
            assert not found, f"{page.name} runs another notebook ({found})"


def borrowed_names(code: str) -> set[str]:
    """The names ``code`` reads that it neither defines, imports nor gets as builtins: what it
    would take from a namespace another page filled."""
    import builtins

    code = "\n".join(line for line in code.splitlines()
                     if not line.lstrip().startswith(("%", "!")))
    tree = ast.parse(code)
    defined = set(dir(builtins)) | {"display", "get_ipython"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            defined |= {(a.asname or a.name).split(".")[0] for a in node.names}
    read = {node.id for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return read - defined


def test_each_report_page_takes_its_chapters_objects_from_attnbook_not_from_a_namespace():
    """A report page's chapter objects come from imports of attnbook.chapters (or a stored
    run), never from a namespace another page filled."""
    pages = sorted((ROOT / "notebooks").glob("report_*.ipynb"))
    assert pages
    for page in pages:
        assert borrowed_names("\n".join(_code_cells(page))) == set(), page.name


def test_the_namespace_check_catches_a_borrowed_name():
    assert borrowed_names("import numpy as np\nx = np.mean(ch05_runs['sgd'])") == {"ch05_runs"}
    assert borrowed_names("from attnbook.chapters import ch05\nruns = ch05.runs()") == set()


def test_the_notebooks_are_folded_by_the_rule(capsys):
    assert _load_fold_checks().main(["--check"]) == 0, capsys.readouterr().out


def test_fold_rule_folds_checks_and_first_cells_and_leaves_teaching_cells_open():
    fold_checks = _load_fold_checks()
    chapter = Path("ch05_experiment.ipynb")

    def cell(text: str, figure: bool = False) -> nbformat.NotebookNode:
        data = {"text/plain": "<Figure>", "image/png": "iVBOR"} if figure else {}
        outputs = [nbformat.v4.new_output("stream", name="stdout", text=text)]
        if figure:
            outputs.append(nbformat.v4.new_output("display_data", data=data))
        return nbformat.v4.new_code_cell("print(...)", outputs=outputs)

    verdict = cell("[summary]   claim: partly reproduced (v = 2 <= 1)\n")
    replay = cell("replayed iterations 0..20 of seed 0.\n")
    teaching = cell("largest eigenvalue 3.2\n")
    figure = cell("claim: reproduced (v = 1 <= 2)\n", figure=True)
    assert fold_checks.wanted_fold(chapter, 5, verdict, 2)[0] == "hide-cell"
    assert fold_checks.wanted_fold(chapter, 5, replay, 2)[0] == "hide-cell"
    assert fold_checks.wanted_fold(chapter, 5, teaching, 2) is None
    assert fold_checks.wanted_fold(chapter, 5, figure, 2) is None
    assert fold_checks.wanted_fold(chapter, 2, teaching, 2) == (
        "hide-input", fold_checks.FIRST_PROMPT)
    report_page = Path("report_ch05_experiment.ipynb")
    assert fold_checks.wanted_fold(report_page, 5, verdict, 2) is None   # the report shows checks
    assert fold_checks.wanted_fold(report_page, 2, teaching, 2) == (
        "hide-input", fold_checks.FIRST_PROMPT)
