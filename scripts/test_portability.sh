#!/usr/bin/env bash
# The test command's checks on machines unlike this one (CI runs this after scripts/test.sh):
#   A. step 1 of scripts/test.sh (unit tests and nbval on every notebook) with numpy held to its
#      baseline SIMD paths, OpenBLAS to its Nehalem kernels and two BLAS threads
#      (scripts/cpu_env.py), as on an older CPU, and attnlib's fused kernel off (ATTNLIB_KERNEL=0:
#      the numpy path, the reference): the stored outputs and every replay of a stored run must
#      hold there too (scripts/test.sh itself runs everything with the kernel);
#   B. the unit tests in a fresh environment (.venv-system) built with the system's own python3
#      (ATTNBOOK_SYSTEM_PYTHON, default /usr/bin/python3: Debian 12's is 3.11.2), installing the
#      same pinned stack without attnlib's fused kernel (ATTNBOOK_WITHOUT_KERNEL=1: numba is
#      not installed there, so attnlib runs as installed without its `fast` extra); on
#      Debian/Ubuntu python3-venv is installed with apt-get when missing (as root or with
#      password-less sudo).
# Both run even if one fails; the command fails at the end, listing them.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
failed=()
system_python="${ATTNBOOK_SYSTEM_PYTHON:-/usr/bin/python3}"

echo "== A. step 1 with baseline SIMD, OpenBLAS Nehalem kernels, two BLAS threads, no fused kernel"
bash scripts/setup.sh > /dev/null || { echo "error: setting up .venv failed" >&2; exit 1; }
settings="$(.venv/bin/python scripts/cpu_env.py baseline --threads 2)" || exit 1
echo "$settings"
( eval "$settings"; ATTNLIB_KERNEL=0 ATTNBOOK_STEPS=1 bash scripts/test.sh ) \
  || failed+=("A (older CPU settings)")

echo "== B. unit tests on the system python3 ($system_python), without the fused kernel (no numba)"
if ! [ -x "$system_python" ]; then
  failed+=("B (no $system_python; set ATTNBOOK_SYSTEM_PYTHON)")
else
  source scripts/system_packages.sh
  if ! "$system_python" -c "import ensurepip, venv" 2> /dev/null \
      && ! { install_debian_packages python3-venv \
             && "$system_python" -c "import ensurepip, venv" 2> /dev/null; }; then
    echo "error: $system_python cannot create a venv: install Debian's python3-venv" >&2
    failed+=("B (install Debian's python3-venv)")
  else
    PYTHON="$system_python" ATTNBOOK_VENV=.venv-system ATTNBOOK_WITHOUT_KERNEL=1 \
      ATTNBOOK_STEPS=1 ATTNBOOK_NOTEBOOKS=0 bash scripts/test.sh || failed+=("B (system python3)")
  fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "== portability checks FAILED: ${failed[*]}"
  exit 1
fi
echo "== portability checks passed"
