#!/usr/bin/env bash
# Publish the built book as a GitHub Pages project site: push _build/html to the gh-pages
# branch with ghp-import (as Jupyter Book's documentation does), building it first (README
# command 1) when there is no build yet.
#
#   bash scripts/publish.sh
#
# Options through the environment: ATTNBOOK_HTML (the site to push, default _build/html),
# ATTNBOOK_REMOTE (default origin). The gh-pages branch is replaced by one commit (no history)
# holding the site and a .nojekyll file (so GitHub serves _static/ and _images/ as they are);
# the site's links are relative, so it works under the project sub-path
# https://USER.github.io/REPO/ (tests/test_subpath.py serves it under a prefix). The site's
# _colab/ folder holds the chapters' Colab copies its Colab buttons open.
# On GitHub: Settings > Pages > Source "Deploy from a branch", branch gh-pages, folder /.
# .github/workflows/book.yml runs this on every push to main, in a job that only downloads
# the built site (ghp-import from PATH; .venv is set up only when neither exists).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
HTML="${ATTNBOOK_HTML:-_build/html}"
REMOTE="${ATTNBOOK_REMOTE:-origin}"
if [ ! -f "$HTML/index.html" ]; then
  echo "== no built book in $HTML: building it first"
  bash scripts/build_book.sh
fi
GHP_IMPORT=.venv/bin/ghp-import
if [ ! -x "$GHP_IMPORT" ]; then
  GHP_IMPORT="$(command -v ghp-import || true)"
fi
if [ -z "$GHP_IMPORT" ]; then
  source scripts/setup.sh
  GHP_IMPORT=.venv/bin/ghp-import
fi
echo "== pushing $HTML to the gh-pages branch of $REMOTE"
"$GHP_IMPORT" --no-jekyll --no-history --push --force --remote "$REMOTE" --branch gh-pages \
  --message "Book built from $(git rev-parse --short HEAD)" "$HTML"
echo "== published: $(git log -1 --format='%h %s' gh-pages)"
