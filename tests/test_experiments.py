"""attnlib.experiments: stored benchmark results shipped as package data."""

from __future__ import annotations

import fnmatch
from pathlib import Path

import pytest

import attnlib
from attnlib import experiments

ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_results_load_from_the_package() -> None:
    results = experiments.load_benchmark("attention")
    assert {"meta", "rows", "notes", "langevin"} <= set(results)
    assert results["rows"] and all("impl" in row and "n" in row for row in results["rows"])


def test_benchmark_results_are_package_data() -> None:
    path = experiments.benchmark_path("attention")
    package = Path(attnlib.__file__).resolve().parent
    relative = path.relative_to(package / "experiments")
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())[
        "tool"]["setuptools"]["package-data"]["attnlib.experiments"]
    assert any(fnmatch.fnmatch(str(relative), pattern) for pattern in patterns), (
        f"{relative} is not matched by the package-data patterns {patterns}")


def test_missing_benchmark_names_the_command() -> None:
    with pytest.raises(FileNotFoundError, match="benchmarks/bench_nothing.py"):
        experiments.load_benchmark("nothing")
