#!/usr/bin/env bash
# Create .venv (once) and install attnlib with the book and test extras, pinned by
# constraints.txt. Reinstalls only when pyproject.toml or constraints.txt change.
# Sourced by build_book.sh and test.sh; sets $VENV_PY.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  echo "== creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv || {
    echo "error: '$PYTHON -m venv' failed; on Debian/Ubuntu install python3-venv (apt-get install python3-venv)" >&2
    rm -rf .venv; exit 1; }
fi
stamp=.venv/.attnlib-install-stamp
want="$(cat pyproject.toml constraints.txt | sha256sum | cut -c1-16)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "== installing attnlib and the pinned book/test stack into .venv (a few minutes the first time)"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[book,test]"
  echo "$want" > "$stamp"
fi
VENV_PY="$ROOT/.venv/bin/python"
export VENV_PY
# One BLAS thread per process keeps runs reproducible and avoids oversubscribing 2 cores
# when notebooks run in parallel; attnlib's benchmarks set their own thread counts.
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}" OPENBLAS_NUM_THREADS="${OPENBLAS_NUM_THREADS:-1}"
export PYDEVD_DISABLE_FILE_VALIDATION=1
