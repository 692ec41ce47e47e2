"""attnbook.claims: the registry of claim texts, and no notebook cell deciding a verdict."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

from attnbook import claims

ROOT = Path(__file__).resolve().parents[1]
CHAPTERS = sorted((ROOT / "notebooks").glob("ch*.ipynb"))
DECIDING = {"verdict", "combine", "interval_verdict", "not_testable"}


def deciding_calls(source: str) -> list[str]:
    """Names of attnbook.verdicts' deciding functions that ``source`` calls (``verdicts.x(...)``
    or a bare ``x(...)`` imported from it), and ``"status comparison"`` for each comparison
    involving a verdict's ``.status`` (a rule combining verdicts), ignoring IPython magics."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    found = []
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in DECIDING and isinstance(
                    func.value, ast.Name) and func.value.id == "verdicts":
                found.append(func.attr)
            elif isinstance(func, ast.Name) and func.id in DECIDING:
                found.append(func.id)
        elif isinstance(node, ast.Compare) and any(
                isinstance(side, ast.Attribute) and side.attr == "status"
                for side in (node.left, *node.comparators)):
            found.append("status comparison")
    return found


def test_deciding_calls_are_found():
    assert deciding_calls("v = verdicts.verdict('c', 1.0, 2.0)") == ["verdict"]
    assert deciding_calls("from attnbook.verdicts import combine\nprint(combine('c', []))") == [
        "combine"]
    assert deciding_calls("print(claims.ch05.headline(gap=1.0))") == []
    assert deciding_calls("both = [c for c in cells if v[c].status == verdicts.REPRODUCED]") == [
        "status comparison"]
    assert deciding_calls("ok = 'reproduced' != part.status") == ["status comparison"]
    assert deciding_calls("colour = {verdicts.REPRODUCED: 'g'}[v.status]") == []


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_no_notebook_cell_decides_a_verdict(notebook):
    cells = json.loads(notebook.read_text())["cells"]
    offending = [(i, deciding_calls("".join(c["source"]))) for i, c in enumerate(cells)
                 if c["cell_type"] == "code"]
    offending = [(i, calls) for i, calls in offending if calls]
    assert not offending, (f"{notebook.name}: cells {offending} decide verdicts; move the "
                           "rule into attnbook.claims." + notebook.stem.split("_")[0])


def test_registry_ids_are_unique_and_texts_non_empty():
    texts = claims.registry()
    assert all(isinstance(t, str) and t.strip() for t in texts.values())


def test_unknown_claim_id_is_a_clear_error():
    with pytest.raises(ValueError, match="claim_id must be an id defined by a module of attnbook.claims, got 'no-such-claim'"):
        claims.text("no-such-claim")
