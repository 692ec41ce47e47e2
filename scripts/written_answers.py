"""The written questions of a problem set: the students' answers to read, the marks to fill in.

``scripts/grade.py`` calls :func:`export` and :func:`update_marks` after grading a folder:

* :func:`export` writes one HTML page per submission holding, for each written question (the
  ``WRITTEN`` questions of grading_checks.py, found in the reference notebook between otter's
  ``<!-- BEGIN QUESTION -->`` and ``<!-- END QUESTION -->`` markers), the prompt, the student's
  answer cells and, folded, the model answer and rubric. The student's text is rendered as
  Markdown with raw HTML escaped (its maths stays as TeX), pictures pasted into a cell are kept,
  and the page runs no script (a content security policy allows nothing but inline styles and
  embedded pictures). With ``pdf=True`` each page is also printed to PDF by Chromium
  (``ATTNBOOK_CHROMIUM``, else ``chromium`` on the PATH).
* :func:`update_marks` keeps the marks file, a CSV with a row per submission and a column per
  written question (and one for comments), that the lecturer fills in: it is created with empty
  marks, rows for new submissions are appended, and marks already there are never touched.
  :func:`read_marks` checks it (each mark empty or a number from 0 to the question's points).
"""

from __future__ import annotations

import base64
import binascii
import csv
import html
import json
import math
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

BEGIN, END = "<!-- BEGIN QUESTION -->", "<!-- END QUESTION -->"
UNANSWERED = "_Type your answer here, replacing this text._"
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
IMAGE_LIMIT = 5 * 2 ** 20              # bytes of one pasted picture kept in a page
TEXT_LIMIT = 200_000                   # characters of one submission's answer to one question
POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
STYLE = """body{font:16px/1.5 system-ui,sans-serif;max-width:52em;margin:2em auto;padding:0 1em}
.answer{border-left:4px solid #0072b2;padding:.2em 1em;margin:1em 0;background:#f4f8fb}
.missing{color:#d55e00}.mark{border:1px solid #999;padding:.5em 1em;display:inline-block}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5em}.math{font-family:monospace}
details{margin:1em 0;color:#333}h1{font-size:1.4em}"""


def default_marks(sheet: Path) -> Path:
    """The marks file beside ``sheet``: ``ps1_scores.csv`` -> ``ps1_scores-written.csv``."""
    return sheet.with_name(f"{sheet.stem}-written.csv")


def default_answers(sheet: Path) -> Path:
    """The answers' folder beside ``sheet``: ``ps1_scores.csv`` -> ``ps1_scores-written/``."""
    return sheet.with_name(f"{sheet.stem}-written")


@dataclass
class Written:
    """One written question, read from the reference notebook."""

    name: str
    points: float
    heading: str                   # the prompt's "## ..." line, how a submission is searched
    prompt: str                    # Markdown
    model: str                     # Markdown: the model answer and the rubric


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def questions(reference: Path, written: dict[str, float]) -> list[Written]:
    """The written questions of ``reference`` (the instructor notebook), matched in order to
    ``written`` (question -> points); raises when the notebook's count differs."""
    cells = json.loads(reference.read_text())["cells"]
    blocks, current = [], None
    for cell in cells:                 # one cell may end a question and begin the next
        text = _source(cell)
        ends_first = END in text and (BEGIN not in text or text.index(END) < text.index(BEGIN))
        if current is not None and ends_first:
            blocks.append(current)
            current = None
        if BEGIN in text:
            current = [cell]
            if END in text.split(BEGIN, 1)[1]:
                blocks.append(current)
                current = None
        elif current is not None:
            current.append(cell)
    if len(blocks) != len(written):
        raise ValueError(f"{reference.name} has {len(blocks)} written question(s) between otter's "
                         f"markers, WRITTEN in grading_checks.py lists {len(written)}")
    found = []
    for (name, points), block in zip(written.items(), blocks):
        prompt = _source(block[0]).split(BEGIN, 1)[1].split(END, 1)[0].strip()
        heading = next((line.strip() for line in prompt.splitlines() if line.startswith("## ")),
                       "")
        model = "\n\n".join(_source(c) for c in block[1:] if "otter_assign_solution_cell"
                            in c.get("metadata", {}).get("tags", []))
        found.append(Written(name, points, heading, prompt, model))
    return found


def answer_cells(notebook: dict, question: Written, index: int) -> list[dict] | None:
    """The cells of ``notebook`` answering ``question`` (the ``index``-th written one): those
    after the cell holding its heading, up to otter's end marker or the next section; else the
    ``index``-th answer cell otter made (tag ``otter_answer_cell``) of the Markdown ones; None
    when neither is there."""
    cells = [c for c in notebook.get("cells", []) if isinstance(c, dict)]
    start = next((i for i, c in enumerate(cells) if question.heading and
                  question.heading in _source(c)), None)
    if start is not None:
        found = []
        for cell in cells[start + 1:]:
            text = _source(cell)
            tagged = "otter_answer_cell" in (cell.get("metadata") or {}).get("tags", [])
            if END in text or BEGIN in text or (text.startswith("## ") and not tagged):
                break
            found.append(cell)
        return found
    tagged = [c for c in cells if c.get("cell_type") == "markdown" and "otter_answer_cell"
              in (c.get("metadata") or {}).get("tags", [])]
    return [tagged[index]] if index < len(tagged) else None


def _markdown():
    from markdown_it import MarkdownIt
    from mdit_py_plugins.dollarmath import dollarmath_plugin

    return MarkdownIt("commonmark", {"html": False}).enable("table").use(dollarmath_plugin)


def _with_pictures(text: str, cell: dict) -> str:
    """``text`` with each ``attachment:NAME`` of the cell replaced by the picture as a data URL
    (PNG, JPEG or GIF of at most IMAGE_LIMIT bytes; anything else is left as a dead link)."""
    attachments = cell.get("attachments") if isinstance(cell.get("attachments"), dict) else {}

    def picture(match: re.Match) -> str:
        bundle = attachments.get(match.group(1))
        for kind in IMAGE_TYPES:
            data = bundle.get(kind) if isinstance(bundle, dict) else None
            data = "".join(data) if isinstance(data, list) else data
            if isinstance(data, str) and len(data) <= IMAGE_LIMIT * 4 // 3 + 4:
                try:
                    base64.b64decode(data, validate=True)
                except (binascii.Error, ValueError):
                    continue
                return f"data:{kind};base64,{data}"
        return match.group(0)

    return re.sub(r"attachment:([^\s)\"']+)", picture, text)


def _render_cells(cells: list[dict], markdown) -> str:
    parts = []
    for cell in cells:
        text = _source(cell)[:TEXT_LIMIT]
        if cell.get("cell_type") == "markdown":
            parts.append(markdown.render(_with_pictures(text, cell)))
        elif text.strip():
            parts.append(f"<pre>{html.escape(text)}</pre>")
    return "\n".join(parts)


def page(submission: str, assignment: str, written: list[Written], notebook: dict | None,
         problem: str = "") -> str:
    """The HTML page of one submission's written answers (``problem``: why its notebook could
    not be read)."""
    markdown = _markdown()
    title = html.escape(f"{assignment}: {submission}, written answers")
    body = [f"<h1>{title}</h1>"]
    if problem:
        body.append(f'<p class="missing">The notebook could not be read: '
                    f"{html.escape(problem)}</p>")
    for index, question in enumerate(written):
        cells = answer_cells(notebook, question, index) if notebook is not None else None
        body.append(f"<h2>{html.escape(question.heading.removeprefix('## ') or question.name)}"
                    f"</h2><p><code>{html.escape(question.name)}</code>, "
                    f"{question.points:g} points</p>")
        prompt = question.prompt.replace(question.heading, "", 1) if question.heading else (
            question.prompt)
        body.append(f"<details><summary>The question</summary>"
                    f"{markdown.render(prompt)}</details>")
        answered = [c for c in cells or [] if _source(c).strip() not in ("", UNANSWERED)]
        if cells is None:
            body.append('<p class="missing">No answer found: the question\'s cells are missing '
                        "from the notebook.</p>")
        elif not answered:
            body.append('<p class="missing">Not answered.</p>')
        else:
            body.append(f'<div class="answer">{_render_cells(answered, markdown)}</div>')
        body.append(f'<p class="mark">Mark: ____ of {question.points:g}</p>')
        if question.model:
            body.append("<details><summary>Model answer and rubric (instructor only)</summary>"
                        f"{markdown.render(question.model)}</details>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta http-equiv=\"Content-Security-Policy\" content=\"{POLICY}\">"
            f"<title>{title}</title><style>{STYLE}</style></head><body>"
            + "\n".join(body) + "</body></html>\n")


def _file_name(submission: str, taken: set[str]) -> str:
    """A safe, unused file name for ``submission``'s page (letters, digits, ``._-`` only)."""
    stem = re.sub(r"[^A-Za-z0-9._-]", "_", Path(submission).stem)[:80].lstrip(".") or "page"
    name, count = stem, 1
    while name in taken:
        count += 1
        name = f"{stem}-{count}"
    taken.add(name)
    return name


def export(reference: Path, written: dict[str, float], submissions: list[Path], folder: Path,
           *, pdf: bool = False) -> list[Path]:
    """Write each submission's page (and with ``pdf`` its PDF) into ``folder``; returns the
    pages. Nothing is written when the problem set has no written question."""
    if not written:
        return []
    found = questions(reference, written)
    folder.mkdir(parents=True, exist_ok=True)
    pages, taken = [], set()
    for submission in submissions:
        notebook, problem = None, ""
        try:
            notebook = json.loads(submission.read_text())
            if not isinstance(notebook, dict) or not isinstance(notebook.get("cells"), list):
                notebook, problem = None, "it has no list of cells"
        except (OSError, ValueError, UnicodeDecodeError) as error:
            problem = f"{type(error).__name__}: {error}"[:200]
        path = folder / f"{_file_name(submission.name, taken)}.html"
        path.write_text(page(submission.name, reference.stem, found, notebook, problem))
        pages.append(path)
    if pdf:
        print_pdfs(pages)
    return pages


def chromium() -> str:
    """The Chromium to print with: ``ATTNBOOK_CHROMIUM``, else the first on the PATH."""
    found = os.environ.get("ATTNBOOK_CHROMIUM") or next(filter(None, map(
        shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    if not found:
        raise ValueError("--pdf needs Chromium: install chromium or set ATTNBOOK_CHROMIUM "
                         "(the HTML pages are written either way)")
    return found


def print_pdfs(pages: list[Path]) -> list[Path]:
    """Print each HTML page to a PDF beside it with one headless Chromium (Playwright)."""
    from playwright.sync_api import sync_playwright

    printed = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(),
                                             args=["--no-sandbox", "--disable-gpu"])
        try:
            view = browser.new_page()
            for path in pages:
                view.goto(path.resolve().as_uri(), wait_until="load")
                view.pdf(path=str(path.with_suffix(".pdf")), format="A4",
                         margin={"top": "2cm", "bottom": "2cm", "left": "2cm", "right": "2cm"})
                printed.append(path.with_suffix(".pdf"))
        finally:
            browser.close()
    return printed


def read_marks(path: Path, written: dict[str, float]) -> dict[str, dict[str, float | None]]:
    """The marks in ``path``: submission -> written question -> points (None when empty).

    Raises ``ValueError`` naming the file, line and column when a column is not a written
    question of the problem set, a submission appears twice, or a mark is not a number from 0
    to the question's points."""
    with path.open(newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader, None)
        expected = ["submission", *written, "comment"]
        if header is None or header[:1] != ["submission"] or not set(header) <= set(expected):
            raise ValueError(f"{path}: the first line must name the columns {expected} "
                             f"(the written questions of this problem set), got {header}")
        marks: dict[str, dict[str, float | None]] = {}
        for line, values in enumerate(reader, 2):
            if not any(value.strip() for value in values):
                continue
            if len(values) > len(header):
                raise ValueError(f"{path}, line {line}: {len(values)} cells, the header has "
                                 f"{len(header)}")
            row = dict(zip(header, values))
            submission = row["submission"].strip()
            if submission in marks:
                raise ValueError(f"{path}, line {line}: {submission!r} appears twice")
            marks[submission] = {q: _mark(path, line, q, row.get(q, ""), points)
                                 for q, points in written.items()}
    return marks


def _mark(path: Path, line: int, question: str, text: str, points: float) -> float | None:
    text = text.strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value <= points:
        raise ValueError(f"{path}, line {line}, {question}: expected a mark from 0 to "
                         f"{points:g} (or empty), got {text[:40]!r}")
    return value


def update_marks(path: Path, submissions: list[str], written: dict[str, float]
                 ) -> dict[str, dict[str, float | None]]:
    """Create the marks file ``path`` with an empty row per submission, or append rows for the
    submissions it lacks (marks already there are kept); returns its marks. Nothing is written
    when the problem set has no written question."""
    if not written:
        return {}
    if not path.exists():
        with path.open("w", newline="") as handle:
            csv.writer(handle).writerow(["submission", *written, "comment"])
    marks = read_marks(path, written)
    missing = [s for s in submissions if s not in marks]
    if missing:
        with path.open(newline="") as handle:
            width = len(next(csv.reader(handle)))
        with path.open("rb+") as handle:          # end the last line before appending
            if handle.seek(0, os.SEEK_END):
                handle.seek(-1, os.SEEK_END)
                if handle.read(1) not in (b"\n", b"\r"):
                    handle.write(b"\r\n")
        with path.open("a", newline="") as handle:
            csv.writer(handle).writerows([[s, *[""] * (width - 1)] for s in missing])
        marks.update({s: dict.fromkeys(written) for s in missing})
    return marks
