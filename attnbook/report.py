"""The Reproduction report's pages rerun their chapter first (book tooling, all chapters).

Each chapter teaches; its audit (the verdicts on the papers' claims with their thresholds,
the instance grids, the second reconstructions, the replays of stored runs) sits on a page
of the Reproduction report, ``notebooks/report_<chapter>.ipynb``. A report page needs the
chapter's objects (its problems, minimizers, measurements), so its first cell calls
:func:`rerun_chapter`, which executes the chapter notebook's code cells, in order, in the
report's own kernel namespace, with every output (text, figures, widgets) captured and
dropped: the page shows only its checks. The report is executed and compared by the test
command like every chapter, so every check that left a chapter still runs and still fails the
tests when its numbers move.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["chapter_code_cells", "rerun_chapter"]

#: The book's notebooks.
NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def chapter_code_cells(chapter: str, notebooks: Path = NOTEBOOKS) -> list[str]:
    """The sources of the code cells of ``notebooks/<chapter>.ipynb``, in order.

    ``chapter`` is the notebook's stem, e.g. ``"ch09_lora"``; a ``ValueError`` names the
    chapters there are when it is not one of them.
    """
    if not isinstance(notebooks, (str, Path)) or not Path(notebooks).is_dir():
        raise ValueError(f"notebooks: expected the folder of the book's notebooks, got "
                         f"{notebooks!r}")
    notebooks = Path(notebooks)
    path = notebooks / f"{chapter}.ipynb"
    if not isinstance(chapter, str) or not chapter or not path.is_file():
        known = sorted(p.stem for p in notebooks.glob("ch*.ipynb"))
        raise ValueError(f"chapter: expected one of {known}, got {chapter!r}")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]


def rerun_chapter(chapter: str, namespace: dict[str, Any] | None = None, *,
                  notebooks: Path = NOTEBOOKS) -> int:
    """Execute chapter ``chapter``'s code cells in the running IPython kernel, silently.

    Every cell runs through the kernel (so magics such as ``%matplotlib inline`` work) into
    the kernel's user namespace (``namespace``, when given, must be that namespace: pass
    ``globals()``); outputs are captured and dropped. Returns the number of cells run.
    Raises ``RuntimeError`` outside IPython, and ``RuntimeError`` naming the cell (its
    number among the chapter's code cells and its first line) when a cell fails.
    """
    from IPython import get_ipython
    from IPython.utils.capture import capture_output

    sources = chapter_code_cells(chapter, notebooks)
    shell = get_ipython()
    if shell is None:
        raise RuntimeError("rerun_chapter runs inside a Jupyter/IPython kernel (a report page)")
    if namespace is not None and namespace is not shell.user_ns:
        raise ValueError("namespace: expected the kernel's globals() (or None)")
    for number, source in enumerate(sources, start=1):
        with capture_output(stdout=True, stderr=True, display=True):
            # an ipywidgets Output (e.g. interact) re-parents the display publisher, which
            # IPython's capturing publisher does not support: its outputs are dropped anyway
            if not hasattr(shell.display_pub, "set_parent"):
                shell.display_pub.set_parent = lambda parent: None
            result = shell.run_cell(source, store_history=False, silent=False)
        if not result.success:
            first_line = source.strip().splitlines()[0] if source.strip() else ""
            error = result.error_in_exec or result.error_before_exec
            raise RuntimeError(f"{chapter}: code cell {number} ({first_line!r}) failed: "
                               f"{error!r}") from error
    return len(sources)
