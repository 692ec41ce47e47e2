"""Result tables that a reader compares: HTML in the book, aligned text in a terminal.

A chapter that prints a table of results (methods against measures, a competitor
benchmark) returns ``result_table(columns, rows)`` as the cell's last value instead of
printing padded strings. The book renders the HTML form (``_repr_html_``): a real table whose
columns stay aligned, that scrolls sideways in its own box when it is wider than the column,
with numbers right-aligned in tabular figures (``book/_static/book.css``). Plain text
(``str``, ``repr``, nbval's ``text/plain``) is the same table with space-padded columns.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from numbers import Integral, Real
from typing import Sequence

__all__ = ["ResultTable", "result_table"]


@dataclass(frozen=True)
class ResultTable:
    """Columns (header texts) and rows of already formatted cell texts."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[bool, ...]

    def __str__(self) -> str:
        widths = [max(len(text) for text in column)
                  for column in zip(self.columns, *self.rows)]
        lines = [self._line(self.columns, widths),
                 "  ".join("-" * width for width in widths)]
        lines += [self._line(row, widths) for row in self.rows]
        return "\n".join(line.rstrip() for line in lines)

    __repr__ = __str__

    def _line(self, cells: Sequence[str], widths: Sequence[int]) -> str:
        return "  ".join(text.rjust(width) if numeric else text.ljust(width)
                         for text, width, numeric in zip(cells, widths, self.numeric))

    def _repr_html_(self) -> str:
        def cell(tag: str, text: str, numeric: bool) -> str:
            style = ' class="attn-num"' if numeric else ""
            return f"<{tag}{style}>{html.escape(text)}</{tag}>"

        head = "".join(cell("th", text, numeric)
                       for text, numeric in zip(self.columns, self.numeric))
        body = "".join("<tr>" + "".join(cell("td", text, numeric)
                                        for text, numeric in zip(row, self.numeric)) + "</tr>"
                       for row in self.rows)
        return (f'<table class="attn-result-table"><thead><tr>{head}</tr></thead>'
                f"<tbody>{body}</tbody></table>")


def result_table(columns: Sequence[str], rows: Sequence[Sequence[object]], *,
                 number_format: str = ".3g") -> ResultTable:
    """A :class:`ResultTable`; integers are written in full, other real numbers with
    ``number_format``, the rest with ``str``. A column of numbers only is right-aligned."""
    columns = tuple(str(c) for c in columns)
    if not columns:
        raise ValueError("columns must name at least one column, got none")
    for i, row in enumerate(rows):
        if len(row) != len(columns):
            raise ValueError(f"rows[{i}] must have {len(columns)} cells (one per column), "
                             f"got {len(row)}")

    def is_number(value: object) -> bool:
        return isinstance(value, Real) and not isinstance(value, bool)

    numeric = tuple(bool(rows) and all(is_number(row[j]) for row in rows)
                    for j in range(len(columns)))
    def text(value: object) -> str:
        if is_number(value) and not isinstance(value, Integral):
            return format(value, number_format)
        return str(value)

    texts = tuple(tuple(text(value) for value in row) for row in rows)
    return ResultTable(columns, texts, numeric)
