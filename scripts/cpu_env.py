"""Environment settings that make numpy and OpenBLAS compute as on an older CPU.

The book's checks must hold on any IEEE-754 machine, so the test command is also run with
numpy held to older SIMD paths and OpenBLAS to an older kernel set (``.ci/run`` does that for
step 1; ``scripts/replay_spread.py`` measures the replays' spread under each setting). numpy
accepts in ``NPY_DISABLE_CPU_FEATURES`` only features this CPU has, so the list is read from
the running numpy; ``OPENBLAS_CORETYPE`` picks OpenBLAS's kernels for an older core (x86-64
only; elsewhere the setting is left out and the script says so on stderr).

Usage: ``eval "$(python scripts/cpu_env.py LEVEL [--threads K])"`` exports the settings into
the shell (the script prints ``export NAME='VALUE'`` lines), with LEVEL one of ``native``, ``avx2`` (numpy without its AVX-512 paths, OpenBLAS's
Haswell kernels) or ``baseline`` (numpy's baseline SIMD only, OpenBLAS's Nehalem kernels),
and K BLAS threads (default 1).
"""

from __future__ import annotations

import argparse
import platform
import shlex
import sys

#: level -> (numpy dispatch targets kept, OpenBLAS core type)
LEVELS = {"native": (None, None), "avx2": (("X86_V3",), "Haswell"), "baseline": ((), "Nehalem")}


def environment(level: str, *, threads: int = 1) -> dict[str, str]:
    """The variables that make numpy/OpenBLAS compute at ``level`` with ``threads`` threads."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a positive integer, got {threads!r}")
    env = {"OPENBLAS_NUM_THREADS": str(threads), "OMP_NUM_THREADS": str(threads)}
    keep, core = LEVELS[level]
    if keep is None:
        return env
    if platform.machine().lower() not in ("x86_64", "amd64"):
        print(f"cpu_env: {platform.machine()} is not x86-64; level {level!r} leaves numpy and "
              f"OpenBLAS native", file=sys.stderr)
        return env
    from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    disabled = [name for name in __cpu_dispatch__ if __cpu_features__.get(name)
                and name not in keep]
    if disabled:
        env["NPY_DISABLE_CPU_FEATURES"] = " ".join(disabled)
    env["OPENBLAS_CORETYPE"] = core
    return env


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("level", choices=sorted(LEVELS))
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    args = parser.parse_args(argv)
    for name, value in environment(args.level, threads=args.threads).items():
        print(f"export {name}={shlex.quote(value)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
