"""The Reproduction report's pages rerun their chapter (attnbook.report), and the chapters'
checks and first cells are folded by one rule (scripts/fold_checks.py)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest

from attnbook import report

ROOT = Path(__file__).resolve().parents[1]


def _load_fold_checks():
    spec = importlib.util.spec_from_file_location("fold_checks", ROOT / "scripts" / "fold_checks.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _write_chapter(folder: Path, name: str, sources: list[str]) -> None:
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A chapter")] + [
        nbformat.v4.new_code_cell(source) for source in sources])
    nbformat.write(notebook, folder / f"{name}.ipynb")


def test_chapter_code_cells_reads_the_code_in_order_and_names_the_chapters_there_are(tmp_path):
    _write_chapter(tmp_path, "ch01_toy", ["a = 1", "b = a + 1"])
    assert report.chapter_code_cells("ch01_toy", tmp_path) == ["a = 1", "b = a + 1"]
    with pytest.raises(ValueError, match=r"chapter: expected one of \['ch01_toy'\], got 'ch9'"):
        report.chapter_code_cells("ch9", tmp_path)


def test_rerun_chapter_needs_a_kernel():
    with pytest.raises(RuntimeError, match="inside a Jupyter/IPython kernel"):
        report.rerun_chapter("ch01_model")


@pytest.fixture()
def shell():
    from IPython.core.interactiveshell import InteractiveShell
    shell = InteractiveShell.instance()
    yield shell
    InteractiveShell.clear_instance()


def test_rerun_chapter_leaves_the_chapter_objects_and_drops_its_output(tmp_path, shell, capsys):
    _write_chapter(tmp_path, "ch01_toy", ["a = 2\nprint('not shown')", "b = a ** 3\nb"])
    assert report.rerun_chapter("ch01_toy", shell.user_ns, notebooks=tmp_path) == 2
    assert shell.user_ns["b"] == 8
    assert "not shown" not in capsys.readouterr().out
    with pytest.raises(ValueError, match="namespace: expected the kernel's globals"):
        report.rerun_chapter("ch01_toy", {}, notebooks=tmp_path)


def test_rerun_chapter_names_the_cell_that_fails(tmp_path, shell):
    _write_chapter(tmp_path, "ch01_toy", ["a = 2", "b = 1 / (a - 2)  # the bad one"])
    with pytest.raises(RuntimeError, match=r"ch01_toy: code cell 2 \('b = 1 / \(a - 2\)"
                                           r"  # the bad one'\) failed: ZeroDivisionError"):
        report.rerun_chapter("ch01_toy", notebooks=tmp_path)


def test_every_report_page_reruns_its_chapter_first():
    pages = sorted((ROOT / "notebooks").glob("report_*.ipynb"))
    for page in pages:
        chapter = page.stem.removeprefix("report_")
        assert (ROOT / "notebooks" / f"{chapter}.ipynb").is_file(), page.name
        cells = [c for c in json.loads(page.read_text())["cells"] if c["cell_type"] == "code"]
        assert f'rerun_chapter("{chapter}"' in "".join(cells[0]["source"]), page.name


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
        "hide-input", fold_checks.RERUN_PROMPT)
