"""Execute notebooks in place on a fresh kernel, in order, storing their outputs.

Usage: ``python scripts/execute_notebooks.py notebooks/ch01_model.ipynb [...]``
(no argument: every notebook under notebooks/). Each notebook runs top to bottom with the
working directory set to its folder, as Jupyter Book runs it (the book shows each interactive
figure through its precomputed frames, :mod:`attnbook.slider`). Prints the wall time of each
notebook and rewrites its text twin (``scripts/notebook_text.py``).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notebook_text import write as write_text_twin  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
# The same single-threaded BLAS as the test command (scripts/setup.sh), so that the stored
# outputs are what nbval reproduces there.
for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def execute(path: Path, timeout: int = 600) -> float:
    """Run ``path`` on a fresh ``python3`` kernel, save it in place, return the seconds taken."""
    notebook = nbformat.read(path, as_version=4)
    start = time.perf_counter()
    NotebookClient(notebook, timeout=timeout, kernel_name="python3", allow_errors=False,
                   store_widget_state=True,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    seconds = time.perf_counter() - start
    nbformat.write(notebook, path)
    write_text_twin(path)
    return seconds


def main(argv: list[str]) -> None:
    if any(arg in ("-h", "--help") for arg in argv):
        print(__doc__)
        return
    bad = [arg for arg in argv if not (arg.endswith(".ipynb") and Path(arg).is_file())]
    if bad:
        sys.exit(f"error: not a notebook file: {', '.join(bad)} (usage: python "
                 f"scripts/execute_notebooks.py [notebooks/NAME.ipynb ...])")
    paths = [Path(arg) for arg in argv] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    for path in paths:
        print(f"{path}: {execute(path.resolve()):.1f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
