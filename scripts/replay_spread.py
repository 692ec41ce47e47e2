"""Measure how much of its tolerance every replay of a stored run uses on other CPUs.

A chapter's replay (:func:`attnbook.experiments.replay`) compares a live rerun of a stored run's
first stretch with the stored numbers, within a tolerance that must hold on any IEEE-754
machine. This script executes every chapter that replays a stored run under several CPU and BLAS
configurations (``scripts/cpu_env.py``: numpy's SIMD level, OpenBLAS's kernel set, one or two
BLAS threads), with each replay logging the fraction of its tolerance each compared key used
(``ATTNBOOK_REPLAY_LOG``; replays only warn, so a run outside its tolerance is measured too),
and writes the largest fraction per replay and configuration to
``attnbook/experiments/stored/replay_spread.json``. Each chapter then prints that spread beside
its tolerance, and ``tests/test_replay_spread.py`` requires a margin of at least 10 (a fraction
of at most 0.1) for every replay.

Usage: ``python scripts/replay_spread.py [NOTEBOOK ...]`` (default: every chapter that calls
``experiments.replay``); about 15 minutes on two cores. Notebooks are executed in a temporary
copy; nothing in ``notebooks/`` changes.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from cpu_env import environment  # noqa: E402

#: label -> (level of scripts/cpu_env.py, BLAS threads)
CONFIGURATIONS = {
    "native SIMD, 1 BLAS thread": ("native", 1),
    "native SIMD, 2 BLAS threads": ("native", 2),
    "AVX2 (Haswell kernels), 1 BLAS thread": ("avx2", 1),
    "baseline SIMD (Nehalem kernels), 2 BLAS threads": ("baseline", 2),
}
MARGIN = 10.0
"""A replay's tolerance must be at least this many times the largest deviation measured."""


def replaying_notebooks() -> list[Path]:
    """The chapters whose code calls ``experiments.replay``."""
    return [path for path in sorted((ROOT / "notebooks").glob("*.ipynb"))
            if "experiments.replay(" in path.read_text()]


def execute(notebook: Path) -> None:
    """Execute ``notebook`` on a fresh kernel (in this process's environment), discarding it."""
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.read(notebook, as_version=4)
    NotebookClient(nb, timeout=1200, kernel_name="python3",
                   resources={"metadata": {"path": str(notebook.parent)}}).execute()


def run_configuration(label: str, notebooks: list[Path], log: Path) -> None:
    level, threads = CONFIGURATIONS[label]
    env = {**os.environ, **environment(level, threads=threads),
           "ATTNBOOK_REPLAY": "warn", "ATTNBOOK_REPLAY_LOG": str(log)}

    def one(notebook: Path) -> None:
        clock = time.perf_counter()
        subprocess.run([sys.executable, __file__, "--execute", str(notebook)], env=env,
                       check=True)
        print(f"  {label}: {notebook.name} in {time.perf_counter() - clock:.0f} s", flush=True)

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(one, notebooks))


def summarize(logs: dict[str, Path]) -> dict:
    replays: dict[str, dict] = {}
    for label, log in logs.items():
        for line in log.read_text().splitlines():
            entry = json.loads(line)
            record = replays.setdefault(entry["name"], {"used": 0.0, "by_configuration": {},
                                                        "worst_key": None})
            used = max((key["used"] for key in entry["keys"]), default=0.0)
            worst = max(entry["keys"], key=lambda key: key["used"])
            record["by_configuration"][label] = max(used,
                                                    record["by_configuration"].get(label, 0.0))
            if used >= record["used"]:
                record["used"], record["worst_key"] = used, worst["key"]
            record["tolerances"] = sorted({(key["rtol"], key["atol"]) for key in entry["keys"]})
    return replays


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--execute", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.execute:
        execute(args.execute)
        return 0
    notebooks = [path.resolve() for path in args.notebooks] or replaying_notebooks()
    missing = [str(path) for path in notebooks if not path.is_file()]
    if missing:
        parser.error(f"no such notebook: {', '.join(missing)}")
    with tempfile.TemporaryDirectory() as tmp:
        logs = {}
        for label in CONFIGURATIONS:
            print(f"== {label}", flush=True)
            logs[label] = Path(tmp) / f"{len(logs)}.jsonl"
            logs[label].touch()
            run_configuration(label, notebooks, logs[label])
        replays = summarize(logs)
    path = ROOT / "attnlib" / "experiments" / "stored" / "replay_spread.json"
    old = json.loads(path.read_text())["replays"] if path.exists() else {}
    if args.notebooks:                  # a partial rerun keeps the other replays' entries
        replays = {**old, **replays}
    path.write_text(json.dumps({
        "configurations": {label: dict(zip(("level", "blas_threads"), setting))
                           for label, setting in CONFIGURATIONS.items()},
        "margin": MARGIN, "replays": dict(sorted(replays.items()))}, indent=1) + "\n")
    print(f"{'replay':40s} largest fraction of its tolerance used (worst key)")
    for name, record in sorted(replays.items()):
        flag = "" if record["used"] <= 1 / MARGIN else f"  <- margin below {MARGIN:g}"
        print(f"{name:40s} {record['used']:.3g} ({record['worst_key']}){flag}")
    print(f"wrote {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
