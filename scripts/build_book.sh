#!/usr/bin/env bash
# README command 1: set everything up, execute every notebook, build the HTML book.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
start=$SECONDS
# --- claims ledger (issue 19): book/ledger.md from the chapters' stored outputs, and after the
# build the same page from the freshly executed chapters (stale stored outputs fail) ---
.venv/bin/python scripts/build_ledger.py
# --- end claims ledger ---
echo "== building the book (executing every notebook on a fresh kernel)"
.venv/bin/jupyter-book build . -W -n --keep-going
.venv/bin/python scripts/build_ledger.py --verify --root _build/jupyter_execute  # claims ledger
echo "== built in $((SECONDS - start)) s: open $ROOT/_build/html/index.html"
