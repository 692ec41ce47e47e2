#!/usr/bin/env bash
# Open the book's notebooks live in JupyterLab (with jupyterlab-myst, so solutions, admonitions,
# math and citations render as in the book). Sets up .venv first if needed (as the README's
# commands do).
#   bash scripts/lab.sh                 the repository's notebooks (solutions folded)
#   bash scripts/lab.sh --student       the student edition (no solutions), built first
#   bash scripts/lab.sh --dir PATH      any folder, e.g. an unpacked student bundle
# Other arguments go to `jupyter lab`, for example `--no-browser --port 8890`; a
# --ServerApp.root_dir (or --notebook-dir) of your own replaces the folder chosen here.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
dir="$ROOT/notebooks"
args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --student)
      "$ROOT/.venv/bin/python" "$ROOT/scripts/editions.py" student
      dir="$ROOT/_build/editions/student"; shift ;;
    --dir)
      [ $# -ge 2 ] && [ -d "$2" ] || { echo "error: --dir needs an existing folder" >&2; exit 2; }
      dir="$(cd "$2" && pwd)"; shift 2 ;;
    --ServerApp.root_dir=*|--notebook-dir=*|--ServerApp.root_dir|--notebook-dir)
      dir=""; args+=("$1"); shift ;;
    *) args+=("$1"); shift ;;
  esac
done
flags=()
[ -z "$dir" ] || flags+=(--ServerApp.root_dir="$dir")
[ "$(id -u)" -ne 0 ] || flags+=(--allow-root)   # Jupyter refuses root otherwise
exec "$ROOT/.venv/bin/jupyter" lab "${flags[@]}" "${args[@]}"
