"""attnbook.tables: result tables as aligned text and as HTML."""

from __future__ import annotations

import pytest

from attnbook.tables import result_table


def test_text_form_keeps_columns_aligned() -> None:
    table = result_table(["method", "gap", "steps"],
                         [["Algorithm 1", 1.23456e-9, 40], ["GD", 0.5, 2000]])
    lines = str(table).splitlines()
    assert lines == ["method            gap  steps",
                     "-----------  --------  -----",
                     "Algorithm 1  1.23e-09     40",
                     "GD                0.5   2000"]


def test_html_form_is_a_table_with_numeric_columns_marked() -> None:
    table = result_table(["method", "gap"], [["a<b", 0.25]])
    page = table._repr_html_()
    assert page.startswith('<table class="attn-result-table"><thead><tr><th>method</th>'
                           '<th class="attn-num">gap</th></tr></thead>')
    assert "<td>a&lt;b</td><td class=\"attn-num\">0.25</td>" in page


def test_bad_shapes_are_named() -> None:
    with pytest.raises(ValueError, match=r"rows\[1\] must have 2 cells"):
        result_table(["a", "b"], [[1, 2], [3]])
    with pytest.raises(ValueError, match="columns must name"):
        result_table([], [])
