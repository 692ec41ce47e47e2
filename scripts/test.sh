#!/usr/bin/env bash
# README command 2: set everything up and run every test:
#   1. unit and property tests of attnlib, the executed-in-order check, and nbval, which
#      re-executes every notebook on a fresh kernel and compares it with its stored outputs;
#   2. the book build (-W -n: warnings and broken references fail), rendering the stored
#      outputs (nbval has just executed every notebook; executing them again would double
#      the run time);
#   3. the browser check: headless chromium opens every built page with no network, and a
#      few pages with the site served under a sub-path (as a GitHub Pages project site);
#   4. the teaching material: the problem sets' checks (otter-grader) against the reference
#      solutions and against wrong answers, the student edition (no solution text, builds,
#      its notebooks execute outside the repository), and chapter 1 live in JupyterLab
#      driven by headless chromium.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
start=$SECONDS

if [ ! -x /usr/bin/chromium ]; then
  echo "== installing Debian chromium for the browser check"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium > /dev/null
fi

TEACHING_TESTS=(tests/test_problem_sets.py tests/test_editions.py tests/test_live_lab.py)

echo "== 1/4 unit tests, notebook checks and nbval"
.venv/bin/python -m pytest tests notebooks --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg \
  --nbval-cell-timeout=600 -n "${ATTNBOOK_WORKERS:-2}" --dist loadfile -q \
  --ignore=notebooks/problem_sets "${TEACHING_TESTS[@]/#/--ignore=}"

echo "== 2/4 building the book from the stored outputs (-W -n)"
rm -rf _build/html
# --- claims ledger (issue 19): book/ledger.md from the chapters' stored outputs ---
.venv/bin/python scripts/build_ledger.py
# --- end claims ledger ---
.venv/bin/python - <<'PY'
import yaml
config = yaml.safe_load(open("_config.yml"))
config["execute"]["execute_notebooks"] = "off"
open("_build_config_test.yml", "w").write(yaml.safe_dump(config, sort_keys=False))
PY
trap 'rm -f _build_config_test.yml' EXIT
.venv/bin/jupyter-book build . -W -n --keep-going --config _build_config_test.yml

echo "== 3/4 browser check of every page (offline)"
ATTNBOOK_HTML="$ROOT/_build/html" .venv/bin/python -m pytest tests/test_rendered_book.py \
  tests/test_subpath.py -q  # test_subpath.py (issue 19): the site served under /attnbook/

echo "== 4/4 teaching material: problem sets, student edition, live JupyterLab"
step=$SECONDS
.venv/bin/python -m pytest "${TEACHING_TESTS[@]}" -n "${ATTNBOOK_WORKERS:-2}" --dist loadgroup -q
echo "== 4/4 took $((SECONDS - step)) s"
echo "== all tests passed in $((SECONDS - start)) s"
