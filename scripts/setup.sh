#!/usr/bin/env bash
# Create .venv (once) and install attnlib with the book, test and distributed extras, pinned by
# constraints.txt. Reinstalls only when pyproject.toml or constraints.txt change.
# Sourced by build_book.sh and test.sh; sets $VENV_PY.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
# --- broken .venv (a half-built or moved environment): detect it and rebuild ---
if [ -e .venv ] && ! { .venv/bin/python -c "" && .venv/bin/python -m pip --version; } \
    > /dev/null 2>&1; then
  echo "== .venv is broken (its python or pip does not run); removing and rebuilding it"
  rm -rf .venv || { echo "error: cannot remove .venv; delete it by hand (rm -rf .venv)" >&2; exit 1; }
fi
# --- end broken .venv ---
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv || {
    echo "error: '$PYTHON -m venv' failed; on Debian/Ubuntu install python3-venv (apt-get install python3-venv)" >&2
    rm -rf .venv; exit 1; }
fi
stamp=.venv/.attnlib-install-stamp
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
# A current stamp with a package missing (a deleted or interrupted install) reinstalls too.
missing="$(.venv/bin/python -I - <<'PY' 2>&1
import importlib.util
modules = ("attnlib", "numpy", "scipy", "sympy", "matplotlib", "jupyter_book", "pytest",
           "xdist", "nbval", "hypothesis", "playwright", "ipywidgets", "mpmath", "dask",
           "distributed", "threadpoolctl")
print(" ".join(m for m in modules if importlib.util.find_spec(m) is None))
PY
)"
if [ -n "$missing" ] && [ -e "$stamp" ]; then      # a fresh .venv has no stamp: nothing to say
  echo "== .venv lacks: $missing (reinstalling; if this repeats, run: rm -rf .venv)"
  rm -f "$stamp"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "== installing attnlib and the pinned book/test stack into .venv (a few minutes the first time)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[book,test,distributed]"
  echo "$want" > "$stamp"
fi
VENV_PY="$ROOT/.venv/bin/python"
export VENV_PY
# One BLAS thread per process keeps runs reproducible and avoids oversubscribing 2 cores
# when notebooks run in parallel; attnlib's benchmarks set their own thread counts.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
export PYDEVD_DISABLE_FILE_VALIDATION=1
