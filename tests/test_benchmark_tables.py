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
    bench = {"meta": {"n": 500, "iterations": 10, "rounds": 1, "date_utc": "x", "target": 1.15},
             "load": [1.0], "rows": [{"name": "loss_and_grad", "seconds_median": 0.002, "ratio_median": 1.0,
                       "ratio_min": 1.0, "ratio_max": 1.0, "cpu_ratio_median": 1.0}]}
    first = tables.algorithm_table(bench)
    bench["rows"][0]["seconds_median"] = 0.003
    assert first != tables.algorithm_table(bench) and "| 3 |" in tables.algorithm_table(bench)


def test_the_target_lines_follow_the_numbers() -> None:
    """The lines under the tables say which rows meet their targets, computed, not typed."""
    tables = _tables_module()
    row = {"seconds_median": 0.002, "ratio_min": 1.0, "ratio_max": 1.3, "cpu_ratio_median": 1.0}
    bench = {"meta": {"n": 500, "iterations": 10, "rounds": 1, "date_utc": "x", "target": 1.15},
             "load": [1.0], "rows": [dict(row, name="train_bare", ratio_median=1.10),
                      dict(row, name="train_chapter", ratio_median=1.20)]}
    assert "met by train_bare; missed by train_chapter." in tables.algorithm_table(bench)
    bench["rows"][1]["ratio_median"] = 1.15
    assert "met by train_bare, train_chapter; missed by none." in tables.algorithm_table(bench)

    def config(threads: int, ratio: float, earlier: float) -> dict:
        return {"n": 2000, "dtype": "float64", "threads": threads, "target": 1.5,
                "seconds_median": 0.02, "floor_seconds_median": 0.01, "ratio_median": ratio,
                "ratio_min": ratio, "ratio_max": ratio, "earlier_ratio_median": earlier,
                "load": [1.0]}

    floor = {"meta": {"date_utc": "x"}, "rows": [config(1, 1.4, 1.6), config(2, 1.6, 1.4)]}
    line = tables.floor_table(floor).splitlines()[-1]
    assert ("met by 1 of 2 configurations (n = 2000 float64 1 thread); under the earlier floor "
            "rule: met by 1 of 2 configurations (n = 2000 float64 2 threads)") in line


def test_the_competitor_summary_follows_the_numbers() -> None:
    """The line under the competitor table: where attnlib was the fastest, its closest
    competitor, its smallest memory ratio from n = 2000 on; a competitor that is faster
    somewhere is named there."""
    tables = _tables_module()

    def row(impl: str, n: int, seconds: float, mb: float) -> dict:
        return {"impl": impl, "dtype": "float64", "n": n, "seconds_median": seconds,
                "peak_mb": mb, "load": [1.0]}

    bench = {"rows": [row("attnlib", 500, 1.0, 4), row("torch_compile", 500, 1.3, 4),
                      row("attnlib", 2000, 1.0, 10), row("torch_compile", 2000, 2.0, 50),
                      row("torch_naive", 2000, 3.0, 30)]}
    line = tables.competitors_table(bench).splitlines()[-1]
    assert ("attnlib was the fastest in 2 of 2 configurations run; its closest competitor in "
            "time: torch.compile at n = 500, float64 (1.30x); within 10% of its time, either "
            "way: none; its smallest memory ratio from n = 2000 on: 3.0x (naive autograd, "
            "n = 2000, float64)") in line
    bench["rows"][1]["seconds_median"] = 0.8
    line = tables.competitors_table(bench).splitlines()[-1]
    assert ("fastest in 1 of 2 configurations run (not at n = 500 float64); its closest "
            "competitor in time: torch.compile at n = 500, float64 (0.80x)") in line
    bench["rows"][1]["seconds_median"] = 1.05
    line = tables.competitors_table(bench).splitlines()[-1]
    assert ("within 10% of its time, either way: torch.compile at n = 500, float64 (1.05x)"
            in line)
