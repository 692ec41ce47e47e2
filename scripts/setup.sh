#!/usr/bin/env bash
# Create .venv (once) and install the two packages, editable: the library attnlib (attnlib/pyproject.toml)
# and the book's attnbook (pyproject.toml) with the book, test and distributed extras, pinned by
# constraints.txt. Reinstalls only when a pyproject.toml or constraints.txt changes.
# Sourced by build_book.sh and test.sh; sets $VENV (the environment's folder) and $VENV_PY.
# PYTHON picks the interpreter (default python3) and ATTNBOOK_VENV the folder (default .venv):
# scripts/test_portability.sh builds a second environment with the system's own python3.
# ATTNBOOK_WITHOUT_KERNEL=1 leaves attnlib's fused kernel out of the environment (numba and
# llvmlite are uninstalled after the install): attnlib as installed without its `fast` extra.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
VENV="${ATTNBOOK_VENV:-.venv}"
WITHOUT_KERNEL="${ATTNBOOK_WITHOUT_KERNEL:-0}"
# --- broken environment (a half-built or moved environment): detect it and rebuild ---
if [ -e "$VENV" ] && ! { "$VENV"/bin/python -c "" && "$VENV"/bin/python -m pip --version; } \
    > /dev/null 2>&1; then
  echo "== $VENV is broken (its python or pip does not run); removing and rebuilding it"
  rm -rf "$VENV" || { echo "error: cannot remove $VENV; delete it by hand (rm -rf $VENV)" >&2; exit 1; }
fi
# --- end broken environment ---
if [ ! -x "$VENV"/bin/python ]; then
  echo "== creating $VENV with $($PYTHON --version)"
  "$PYTHON" -m venv "$VENV" || {
    echo "error: '$PYTHON -m venv' failed; on Debian/Ubuntu install python3-venv (apt-get install python3-venv)" >&2
    rm -rf "$VENV"; exit 1; }
fi
stamp="$VENV"/.attnlib-install-stamp
want="$(cat pyproject.toml attnlib/pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
# A current stamp with a package missing (a deleted or interrupted install) reinstalls too.
missing="$(ATTNBOOK_WITHOUT_KERNEL="$WITHOUT_KERNEL" "$VENV"/bin/python -I - <<'PY' 2>&1
import importlib.util
import os
modules = ("attnlib", "attnbook", "numpy", "scipy", "sympy", "matplotlib", "jupyter_book", "pytest",
           "xdist", "nbval", "hypothesis", "playwright", "ipywidgets", "mpmath", "dask",
           "distributed", "threadpoolctl", "pypdf")
if os.environ["ATTNBOOK_WITHOUT_KERNEL"] != "1":
    modules += ("numba",)
print(" ".join(m for m in modules if importlib.util.find_spec(m) is None))
PY
)"
if [ -n "$missing" ] && [ -e "$stamp" ]; then      # a fresh environment has no stamp: nothing to say
  echo "== $VENV lacks: $missing (reinstalling; if this repeats, run: rm -rf $VENV)"
  rm -f "$stamp"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "== installing attnlib, attnbook and the pinned book/test stack into $VENV (a few minutes the first time)"
  "$VENV"/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt \
    -e "./attnlib[all,fast]" -e ".[book,test,distributed]"
  echo "$want" > "$stamp"
fi
if [ "$WITHOUT_KERNEL" = 1 ] && "$VENV"/bin/python -I -c "import numba" 2> /dev/null; then
  echo "== $VENV: uninstalling numba and llvmlite (ATTNBOOK_WITHOUT_KERNEL=1: attnlib without its kernel)"
  "$VENV"/bin/python -m pip uninstall --quiet --yes numba llvmlite
fi
VENV_PY="$ROOT/$VENV/bin/python"
export VENV VENV_PY
# One BLAS thread per process keeps runs reproducible and avoids oversubscribing 2 cores
# when notebooks run in parallel; attnlib's benchmarks set their own thread counts.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
export PYDEVD_DISABLE_FILE_VALIDATION=1
