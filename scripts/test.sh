#!/usr/bin/env bash
# README command 2: set everything up and run every test:
#   1. unit and property tests of attnlib, the executed-in-order check, and nbval, which
#      re-executes every notebook on a fresh kernel and compares it with its stored outputs;
#   2. the book build (-W -n: warnings and broken references fail), rendering the stored
#      outputs (nbval has just executed every notebook; executing them again would double
#      the run time);
#   3. the browser check: headless Chromium opens every built page with no network. The
#      browser is ATTNBOOK_CHROMIUM if set, else chromium on the PATH, else Debian's chromium
#      installed with apt-get (as root or with password-less sudo) only when a browser step runs;
#      then a few pages with the site served under a sub-path (as a GitHub Pages project site);
#   4. the teaching material: the problem sets' checks (otter-grader) against the reference
#      solutions and wrong answers, the sandboxed batch grader against the known attacks
#      (patched checks, rewritten tests, withheld attnlib functions, reading or writing outside
#      the sandbox, detached processes, broken notebooks: each scores 0 or is flagged; full CSV)
#      and the self-contained autograder zip in a fresh virtual environment; the student
#      bundle (no solution, hidden check or master inside, no exercise answered in the prose,
#      the HTML edition builds, it installs and runs in a fresh virtual environment); and
#      chapter 1 live in JupyterLab driven by headless Chromium, lab.sh on a given folder, and
#      the weekly reveal.js slide decks opened offline.
#      The chapters are not executed again here: step 1's nbval has just executed them, and the
#      student edition's code cells are checked to be theirs. The fresh environments are
#      built from wheels downloaded once and kept in ~/.cache/attnbook (tests/fresh_venv.py).
# ATTNBOOK_STEPS selects steps (default "1 2 3 4"); ATTNBOOK_PYTEST_ARGS adds (shell-quoted)
# arguments to step 1's pytest (test_portability.sh deselects its listed known failures); ATTNBOOK_NOTEBOOKS=0 leaves the notebooks
# (nbval) out of step 1: scripts/test_portability.sh runs step 1 under other CPU settings and the
# unit tests on the system's python3 that way. ATTNBOOK_REPLAY=strict (tests/conftest.py sets it
# for every pytest run): a replay of a stored run outside its tolerance fails the tests (a
# reader's build only shows a warning in the page).
# Each step prints its time and, on Linux, the CPU time the whole machine spent meanwhile (from
# /proc/stat, so other jobs on the machine count too) as cores busy on average: a step near the
# core count is bound by computation, one well below it by waiting. A failing step does not stop
# the others; the command fails at the end, listing them.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" || exit 1
source "$ROOT/scripts/system_packages.sh"
set +e
# Busy CPU ticks of the whole machine since boot (empty where /proc/stat is missing).
busy_ticks() {
  [ -r /proc/stat ] || return 0
  local _ user nice system idle iowait irq softirq steal rest
  read -r _ user nice system idle iowait irq softirq steal rest < /proc/stat
  echo $((user + nice + system + irq + softirq + steal))
}
# took LABEL SINCE TICKS: "== LABEL took ... s", the wall time since SECONDS was SINCE and the
# cores busy on average since busy_ticks was TICKS (out of the online cores: not nproc, which
# obeys the OMP_NUM_THREADS=1 that setup.sh exports).
took() {
  local label=$1 since=$2 ticks=$3 now busy wall
  now=$(busy_ticks); wall=$((SECONDS - since))
  if [ -n "$ticks" ] && [ -n "$now" ] && [ "$wall" -gt 0 ]; then
    busy=$(( (now - ticks) * 100 / $(getconf CLK_TCK) ))      # CPU seconds x 100
    printf '== %s took %d s (CPU %d s: %d.%02d of %d cores busy on average)\n' "$label" "$wall" \
      $((busy / 100)) $((busy / wall / 100)) $((busy / wall % 100)) "$(getconf _NPROCESSORS_ONLN)"
  else
    echo "== $label took $wall s"
  fi
}
start=$SECONDS
start_ticks=$(busy_ticks)
failed=()
TEACHING_TESTS=(tests/test_problem_sets.py tests/test_grading.py tests/test_editions.py tests/test_live_lab.py
                tests/test_slides.py)

STEPS=" ${ATTNBOOK_STEPS:-1 2 3 4} "
want() { [[ "$STEPS" == *" $1 "* ]]; }
export ATTNBOOK_REPLAY=strict

if want 1; then
echo "== 1/4 unit tests, notebook checks and nbval"
step=$SECONDS; step_ticks=$(busy_ticks)
notebooks=(notebooks --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout=600
           --ignore=notebooks/problem_sets)
[ "${ATTNBOOK_NOTEBOOKS:-1}" = 0 ] && notebooks=()
extra=(); [ -n "${ATTNBOOK_PYTEST_ARGS:-}" ] && eval "extra=(${ATTNBOOK_PYTEST_ARGS})"
# the library writes only where its user says: its own files are the same after the tests
library_files() { git status --porcelain --untracked-files=all -- attnlib 2>/dev/null
                  git diff -- attnlib 2>/dev/null | sha256sum; }
library_before=$(library_files)
"$VENV"/bin/python -m pytest tests "${notebooks[@]}" -n "${ATTNBOOK_WORKERS:-2}" --dist loadfile -q \
  "${TEACHING_TESTS[@]/#/--ignore=}" "${extra[@]}" || failed+=("1 (tests)")
if [ "$(library_files)" != "$library_before" ]; then
  echo "error: the tests changed files in attnlib/ (git status --porcelain -- attnlib):"
  git status --porcelain --untracked-files=all -- attnlib; failed+=("1 (attnlib's files changed)")
fi
took 1/4 "$step" "$step_ticks"
fi

if want 2; then
echo "== 2/4 building the book from the stored outputs (-W -n)"
step=$SECONDS; step_ticks=$(busy_ticks)
rm -rf _build/html
# --- claims ledger (issue 19): book/ledger.md from the chapters' stored outputs ---
"$VENV"/bin/python -m attnbook.ledger || failed+=("2 (claims ledger)")
# --- end claims ledger ---
trap 'rm -f _build_config_test.yml' EXIT
"$VENV"/bin/python - <<'PY' && "$VENV"/bin/jupyter-book build . -W -n --keep-going --config _build_config_test.yml || failed+=("2 (book build)")
import yaml
config = yaml.safe_load(open("_config.yml"))
config["execute"]["execute_notebooks"] = "off"
open("_build_config_test.yml", "w").write(yaml.safe_dump(config, sort_keys=False))
PY
took 2/4 "$step" "$step_ticks"
fi

# --- Chromium for steps 3 and 4: found, or installed only when a browser step runs ---
find_chromium() {
  if [ -n "${ATTNBOOK_CHROMIUM:-}" ]; then
    [ -x "$ATTNBOOK_CHROMIUM" ] && return 0
    echo "error: ATTNBOOK_CHROMIUM=$ATTNBOOK_CHROMIUM is not an executable file" >&2; return 1
  fi
  ATTNBOOK_CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
  [ -n "$ATTNBOOK_CHROMIUM" ] && return 0
  need_command chromium chromium "the browser check (or ATTNBOOK_CHROMIUM=/path/to/chromium)" \
    && ATTNBOOK_CHROMIUM="$(command -v chromium)"
}
# --- end Chromium ---

chromium_ok=0
if want 3 || want 4; then find_chromium && chromium_ok=1 && export ATTNBOOK_CHROMIUM; fi

if want 3; then
echo "== 3/4 browser check of every page (offline)"
step=$SECONDS; step_ticks=$(busy_ticks)
if [ ! -f _build/html/index.html ]; then
  echo "skipped: the book was not built (step 2 failed)"; failed+=("3 (browser check: no book)")
elif [ "$chromium_ok" = 1 ]; then
  # test_subpath.py (issue 19): the site served under /attnbook/; test_numbering.py: figure
  # and equation numbers within their chapter, references showing their target's number;
  # test_student_bundle.py: the bundle's numbers and links are the built book's
  ATTNBOOK_HTML="$ROOT/_build/html" "$VENV"/bin/python -m pytest tests/test_rendered_book.py \
    tests/test_subpath.py tests/test_numbering.py tests/test_student_bundle.py -q \
    -n "${ATTNBOOK_WORKERS:-2}" \
    || failed+=("3 (browser check)")
  # the whole-book PDF (issue 47): printed from the single-page build, then read back
  "$VENV"/bin/python scripts/book_pdf.py _build/pdf/attnbook.pdf \
    && ATTNBOOK_BOOK_PDF="$ROOT/_build/pdf/attnbook.pdf" "$VENV"/bin/python -m pytest \
    tests/test_book_pdf.py -q || failed+=("3 (whole-book PDF)")
else
  failed+=("3 (browser check: no Chromium)")
fi
took 3/4 "$step" "$step_ticks"
fi

if want 4; then
echo "== 4/4 teaching material: problem sets, student edition, live JupyterLab"
step=$SECONDS; step_ticks=$(busy_ticks)
# The sandboxed grader (scripts/grade.py) runs each submission under bubblewrap: its tests
# need bwrap. Without it (and no way to install it) they are left out and the step fails.
teaching=("${TEACHING_TESTS[@]}")
if ! need_command bwrap bubblewrap "the sandboxed grader's tests"; then
  teaching=(tests/test_editions.py tests/test_live_lab.py tests/test_slides.py)
  failed+=("4 (grader tests not run: install Debian's bubblewrap)")
fi
if [ "$chromium_ok" = 1 ]; then
  # --dist loadfile: each file's tests on one worker, so its fixtures (problem sets assigned,
  # the bundle, the decks) are built once. (pytest-xdist 3.8's loadgroup does not group under
  # pytest 9: its suffix hook lacks @hookimpl and is never called.)
  "$VENV"/bin/python -m pytest "${teaching[@]}" -n "${ATTNBOOK_WORKERS:-2}" --dist loadfile -q \
    || failed+=("4 (teaching material)")
else
  failed+=("4 (teaching material: no Chromium for the live JupyterLab test)")
fi
took 4/4 "$step" "$step_ticks"
fi

took "steps${STEPS% }" "$start" "$start_ticks"
if [ ${#failed[@]} -gt 0 ]; then
  echo "== FAILED step(s): ${failed[*]} (after $((SECONDS - start)) s)"
  exit 1
fi
echo "== all tests passed in $((SECONDS - start)) s"
