"""The replays' tolerances hold on other CPUs with a margin (scripts/replay_spread.py measured it),
and every replay a chapter prints reports that spread."""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest

from attnbook import experiments

ROOT = Path(__file__).resolve().parents[1]
SPREAD = json.loads(experiments.REPLAY_SPREAD_FILE.read_text())
REPLAYED = re.compile(r"^(\w+): (\d+) arrays replayed, within (.*) of the stored run(.*)$",
                      re.MULTILINE)


def _printed_replays() -> list[tuple[str, str, str]]:
    """(notebook, run name, rest of the line) for every replay line in the stored outputs."""
    found = []
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            for output in cell.get("outputs", []):
                for match in REPLAYED.finditer(output.get("text", "")):
                    found.append((path.name, match.group(1), match.group(4)))
    return found


def test_the_spread_was_measured_on_several_cpu_configurations() -> None:
    levels = {setting["level"] for setting in SPREAD["configurations"].values()}
    threads = {setting["blas_threads"] for setting in SPREAD["configurations"].values()}
    assert {"native", "avx2", "baseline"} <= levels and {1, 2} <= threads


@pytest.mark.parametrize("name", sorted(SPREAD["replays"]))
def test_every_replay_keeps_its_margin_on_every_configuration(name: str) -> None:
    record = SPREAD["replays"][name]
    assert set(record["by_configuration"]) == set(SPREAD["configurations"]), name
    assert record["used"] <= 1 / SPREAD["margin"], (
        f"{name}: the replay used {record['used']:.3g} of its tolerance ({record['worst_key']}) "
        f"on some CPU; widen the tolerance or replay a better-conditioned stretch")
    assert name in experiments.stored_names()


def test_every_printed_replay_reports_its_measured_spread() -> None:
    printed = _printed_replays()
    assert len({name for _, name, _ in printed}) >= 25
    missing = [f"{notebook}: {name}" for notebook, name, rest in printed
               if name not in SPREAD["replays"] or "spread over 4 CPU/BLAS setups" not in rest]
    assert not missing, "rerun scripts/replay_spread.py for: " + ", ".join(missing)
