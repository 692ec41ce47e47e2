#!/usr/bin/env bash
# Publish the built book as a GitHub Pages project site: push _build/html to the gh-pages
# branch with ghp-import (as Jupyter Book's documentation does), building it first (README
# command 1) when there is no build yet.
#
#   bash scripts/publish.sh
#
# Options through the environment: ATTNBOOK_HTML (the site to push, default _build/html),
# ATTNBOOK_REMOTE (a remote's name or URL, default origin), GITHUB_TOKEN (a token to push with).
# No token ever reaches the disk: with GITHUB_TOKEN set, the push authenticates with an HTTP
# header that git reads from the environment of this script's commands (GIT_CONFIG_COUNT,
# GIT_CONFIG_KEY_0, GIT_CONFIG_VALUE_0; git >= 2.31), scoped to the remote's URL, never from
# .git/config. A remote whose URL carries credentials (https://user:token@host/...) has them
# taken out of .git/config before anything else runs and sent the same way (with a warning:
# give the URL without them, and the token in GITHUB_TOKEN). The gh-pages branch is replaced by one commit (no history)
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
URL="$(git remote get-url "$REMOTE" 2>/dev/null || printf '%s' "$REMOTE")"
CREDENTIALS=""
if [[ "$URL" =~ ^(https?://)([^/@]+)@(.*)$ ]]; then
  CREDENTIALS="${BASH_REMATCH[2]}"
  URL="${BASH_REMATCH[1]}${BASH_REMATCH[3]}"
  if git remote get-url "$REMOTE" >/dev/null 2>&1; then
    git remote set-url "$REMOTE" "$URL"
    echo "warning: the URL of remote $REMOTE held credentials; they were taken out of" \
         ".git/config (give the URL without them and the token in GITHUB_TOKEN)" >&2
  fi
fi
if [ -n "${GITHUB_TOKEN:-}" ]; then
  CREDENTIALS="x-access-token:$GITHUB_TOKEN"
fi
if [ -n "$CREDENTIALS" ]; then
  export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0="http.$URL.extraheader"
  GIT_CONFIG_VALUE_0="AUTHORIZATION: basic $(printf '%s' "$CREDENTIALS" | base64 | tr -d '\n')"
  export GIT_CONFIG_VALUE_0
fi
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
echo "== pushing $HTML to the gh-pages branch of ${URL}"
"$GHP_IMPORT" --no-jekyll --no-history --push --force --remote "$REMOTE" --branch gh-pages \
  --message "Book built from $(git rev-parse --short HEAD)" "$HTML"
echo "== published: $(git log -1 --format='%h %s' gh-pages)"
