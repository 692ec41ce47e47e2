"""The README's benchmark tables are written from the stored benchmark results, not typed."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _tables_module():
    spec = importlib.util.spec_from_file_location("readme_tables",
                                                  ROOT / "benchmarks" / "readme_tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_readme_tables_are_the_stored_results() -> None:
    readme = (ROOT / "README.md").read_text()
    assert _tables_module().render(readme) == readme, (
        "README.md's benchmark tables differ from attnlib/experiments/stored/benchmark_*.json; "
        "run python benchmarks/readme_tables.py")


def test_a_changed_result_changes_the_table() -> None:
    tables = _tables_module()
    bench = {"meta": {"n": 500, "iterations": 10, "rounds": 1, "date_utc": "x"}, "load": [1.0],
             "rows": [{"name": "loss_and_grad", "seconds_median": 0.002, "ratio_median": 1.0,
                       "ratio_min": 1.0, "ratio_max": 1.0, "cpu_ratio_median": 1.0}]}
    first = tables.algorithm_table(bench)
    bench["rows"][0]["seconds_median"] = 0.003
    assert first != tables.algorithm_table(bench) and "| 3 |" in tables.algorithm_table(bench)
