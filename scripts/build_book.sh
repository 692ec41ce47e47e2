#!/usr/bin/env bash
# README command 1: set everything up, execute every notebook, build the HTML book.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
start=$SECONDS
echo "== building the book (executing every notebook on a fresh kernel)"
.venv/bin/jupyter-book build . -W -n --keep-going
echo "== built in $((SECONDS - start)) s: open $ROOT/_build/html/index.html"
