"""The ``Examples`` sections of attnlib's docstrings run, and print what they say.

Every module of the package (private ones included) has its doctests run, one test per module;
the entry points a researcher meets first each show at least one example. The examples are
written to be portable: seeded generators, and printed values that are shapes, booleans or
numbers rounded to a few significant digits, never raw round-off.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import time

import numpy as np
import pytest

import attnlib

MODULES = sorted(info.name for info in pkgutil.walk_packages(attnlib.__path__, "attnlib."))
OPTIONS = doctest.NORMALIZE_WHITESPACE | doctest.ELLIPSIS
#: Modules whose entry points must show at least one runnable example.
ENTRY_POINT_MODULES = ("data", "attention", "algorithm", "optim", "reference", "langevin",
                       "sweep")
#: Seconds one module's examples may take in all (they are meant to take well under a
#: second each; a slow example belongs in the tests, not in a docstring).
BUDGET = 10.0


def _doctests(module_name: str) -> list[doctest.DocTest]:
    """The doctests of ``module_name`` that hold at least one example."""
    module = importlib.import_module(module_name)
    return [test for test in doctest.DocTestFinder().find(module) if test.examples]


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples_run(module_name: str) -> None:
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    start = time.perf_counter()
    with np.printoptions():                 # an example may not change numpy's printing
        for test in _doctests(module_name):
            runner.run(test, out=report.append)
    elapsed = time.perf_counter() - start
    results = runner.summarize(verbose=False)
    assert results.failed == 0, "".join(report)
    assert elapsed < BUDGET, f"{module_name}'s examples took {elapsed:.1f} s"


@pytest.mark.parametrize("name", ENTRY_POINT_MODULES)
def test_entry_point_module_has_examples(name: str) -> None:
    examples = sum(len(test.examples) for test in _doctests(f"attnlib.{name}"))
    assert examples > 0, (f"attnlib.{name} has no example: add an Examples section (>>> lines) "
                          "to the docstring of its main entry point")


def test_the_runner_reports_a_failing_example() -> None:
    test = doctest.DocTestParser().get_doctest(">>> 1 + 1\n3\n", {}, "wrong", "wrong.py", 0)
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=OPTIONS)
    runner.run(test, out=report.append)
    assert runner.summarize(verbose=False).failed == 1 and "Expected" in "".join(report)
