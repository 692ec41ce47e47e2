#!/usr/bin/env bash
# README command 1: set everything up, execute every notebook, build the HTML book.
# Options through the environment (the publishing workflow sets both):
#   ATTNBOOK_REPOSITORY_URL=https://github.com/OWNER/REPO  repository, issue, edit-this-page,
#       Binder and Colab buttons (book/_ext/book_html.py); without it the site shows none;
#   ATTNBOOK_PDF=attnbook.pdf  also print the whole book from the single-page build with
#       headless Chromium (scripts/book_pdf.py) to _build/html/attnbook.pdf, linked from the
#       landing page.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
start=$SECONDS
# --- claims ledger (issue 19): book/ledger.md from the chapters' stored outputs, and after the
# build the same page from the freshly executed chapters (stale stored outputs fail) ---
.venv/bin/python -m attnbook.ledger
# --- end claims ledger ---
echo "== building the book (executing every notebook on a fresh kernel)"
.venv/bin/jupyter-book build . -W -n --keep-going
# A reader's build never dies on a check: a verdict that differs on this machine is a warning
# here (and a replay outside its tolerance a warning box in its page); the test command fails.
.venv/bin/python -m attnbook.ledger --verify --root _build/jupyter_execute \
  || echo "warning: the verdicts computed on this machine differ from the stored ones (above);" \
          "the book shows the stored ledger. bash scripts/test.sh checks this strictly." >&2
if [ -n "${ATTNBOOK_PDF:-}" ]; then
  echo "== printing the whole book to _build/html/$ATTNBOOK_PDF"
  .venv/bin/python scripts/book_pdf.py "_build/html/$ATTNBOOK_PDF"
fi
echo "== built in $((SECONDS - start)) s: open $ROOT/_build/html/index.html"
