"""The grade sheet of scripts/grade.py: one CSV row per submission, automatic and written points.

Columns: ``submission``, ``status``, ``automatic`` and ``automatic_max``, ``written`` (the
marks filled in so far; empty while none is) and ``written_max``, ``total`` and ``max``,
``unmarked`` (written questions still without a mark), one column per automatically checked
question, one per written question, ``seconds``, ``user``, ``flags`` and ``message``.

:class:`Sheet` writes the header at once and appends a row as each submission is graded, so a
batch that stops keeps its rows; at the end the whole sheet, sorted and with the written marks,
is written beside the file and moved over it in one step. Every text that can come from a
submission (its file name, its messages, its flags) goes through :func:`cell_text`.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path

MESSAGE_LIMIT, FLAGS_LIMIT, FLAG_LIMIT, NAME_LIMIT = 1000, 1000, 160, 200
# What makes a spreadsheet read a cell as a formula (with the full-width forms some read alike);
# tab and carriage return are replaced with spaces before this is checked.
_FORMULA_START = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def cell_text(value: object, limit: int = MESSAGE_LIMIT) -> str:
    """``value`` as the text of one cell of the sheet: every control or invisible character
    (newline, tab, carriage return, bidirectional overrides) a space, runs of spaces one,
    a leading formula character (=, +, -, @) quoted with ``'``, and at most ``limit``
    characters (cut with an ellipsis)."""
    text = " ".join("".join(ch if ch.isprintable() else " " for ch in str(value)).split())
    if text.startswith(_FORMULA_START):
        text = "'" + text
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


@dataclass
class Result:
    """One submission's automatic grading (a row of the sheet, before the written marks)."""

    submission: str
    status: str
    seconds: float
    user: str
    scores: dict[str, float] = field(default_factory=dict)
    max_scores: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    message: str = ""


FIRST_COLUMNS = ["submission", "status", "automatic", "automatic_max", "written",
                 "written_max", "total", "max", "unmarked"]
LAST_COLUMNS = ["seconds", "user", "flags", "message"]


def _number(value: float) -> str:
    return f"{value:g}"


def sheet_key(submission: str) -> str:
    """How a submission is named in the sheet and in the marks file."""
    return cell_text(submission, NAME_LIMIT)


def sheet_row(result: Result, questions: dict[str, float], written: dict[str, float],
              marks: dict[str, float | None] | None = None) -> list[str]:
    """``result``'s row of the sheet with the written ``marks`` (question -> points or None):
    the columns are FIRST_COLUMNS, ``questions``, ``written`` and LAST_COLUMNS."""
    given = {q: (marks or {}).get(q) for q in written}
    automatic = sum(result.scores.values())
    marked = sum(v for v in given.values() if v is not None)
    unmarked = [q for q, v in given.items() if v is None]
    top_auto, top_written = sum(questions.values()), sum(written.values())
    return [sheet_key(result.submission), result.status, _number(automatic), _number(top_auto),
            "" if written and len(unmarked) == len(written) else _number(marked),
            _number(top_written), _number(automatic + marked), _number(top_auto + top_written),
            " ".join(unmarked), *(_number(result.scores.get(q, 0.0)) for q in questions),
            *("" if v is None else _number(v) for v in given.values()),
            f"{result.seconds:.1f}", cell_text(result.user, NAME_LIMIT),
            cell_text("; ".join(cell_text(f, FLAG_LIMIT) for f in result.flags), FLAGS_LIMIT),
            cell_text(result.message, MESSAGE_LIMIT)]


class Sheet:
    """The grade sheet (see the module docstring): the header at once, a row appended as each
    submission is graded, and at the end the whole sheet, sorted, with the written marks,
    written beside the file and moved over it in one step."""

    def __init__(self, path: Path, questions: dict[str, float], written: dict[str, float]):
        overlap = sorted(set(questions) & set(written))
        if overlap:
            raise ValueError(f"questions {overlap} are both automatic and written")
        self.path, self.questions, self.written = path, questions, written
        self.columns = [*FIRST_COLUMNS, *questions, *written, *LAST_COLUMNS]
        with path.open("w", newline="") as handle:
            csv.writer(handle).writerow(self.columns)

    def append(self, result: Result) -> None:
        with self.path.open("a", newline="") as handle:
            csv.writer(handle).writerow(sheet_row(result, self.questions, self.written))
            handle.flush()
            os.fsync(handle.fileno())

    def finish(self, results: list[Result], marks: dict[str, dict]) -> None:
        rows = [sheet_row(r, self.questions, self.written, marks.get(sheet_key(r.submission)))
                for r in sorted(results, key=lambda r: r.submission)]
        replace_rows(self.path, [self.columns, *rows])


def merged_rows(path: Path, questions: dict[str, float], written: dict[str, float],
                marks: dict[str, dict]) -> list[list[str]]:
    """The rows of the sheet ``path`` (header first) with the written ``marks`` copied in and
    the written points and totals recomputed; raises when its columns are not those of a sheet
    of these questions."""
    columns = [*FIRST_COLUMNS, *questions, *written, *LAST_COLUMNS]
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    if not rows or rows[0] != columns:
        raise ValueError(f"{path} is not a sheet of these questions written by scripts/grade.py:"
                         f" expected the columns {columns}, got {rows[0] if rows else 'nothing'}")
    merged = [columns]
    for values in rows[1:]:
        row = dict(zip(columns, values))
        result = Result(row["submission"], row["status"], float(row["seconds"]), row["user"],
                        scores={q: float(row[q]) for q in questions},
                        flags=[row["flags"]] if row["flags"] else [], message=row["message"])
        merged.append(sheet_row(result, questions, written, marks.get(row["submission"])))
    return merged


def replace_rows(path: Path, rows: list[list[str]]) -> None:
    """Write ``rows`` as CSV beside ``path`` and move the file over it (one step)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.partial")
    try:
        with temporary.open("w", newline="") as handle:
            csv.writer(handle).writerows(rows)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)
