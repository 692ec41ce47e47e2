#!/usr/bin/env bash
# Open the book's notebooks live in JupyterLab (with jupyterlab-myst, so solutions, admonitions,
# math and citations render as in the book). Sets up .venv first if needed (as the README's
# commands do). Extra arguments go to `jupyter lab`, for example `--no-browser --port 8890`.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
ROOT_FLAG=(); [ "$(id -u)" -ne 0 ] || ROOT_FLAG=(--allow-root)   # Jupyter refuses root otherwise
exec "$ROOT/.venv/bin/jupyter" lab --ServerApp.root_dir="$ROOT/notebooks" "${ROOT_FLAG[@]}" "$@"
