"""The wall between the two packages: ``attnlib`` (the papers' algorithms) never leans on
``attnbook`` (the book's machinery), on matplotlib or on Dask, carries no data files, and its
wheel depends on numpy and scipy only."""

from __future__ import annotations

import ast
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LIBRARY = ROOT / "attnlib"
BOOK = ROOT / "attnbook"
#: Modules attnlib may import besides the standard library, and where (numba lazily, on the
#: kernel's first use: test_numba_is_imported_lazily).
OPTIONAL = {"sympy": {"symbolic"}, "mpmath": {"villani", "regularizers"}, "tqdm": {"_progress"},
            "threadpoolctl": {"_threads"}, "numba": {"_kernel"}}
FORBIDDEN = ("attnbook", "matplotlib", "dask", "distributed", "IPython", "ipywidgets")
#: Files of the library that are not Python modules (packaging only, no data).
PACKAGING = {"pyproject.toml", "py.typed", "README.md"}


def imported_roots(path: Path) -> set[str]:
    """The top-level names of every module ``path`` imports (absolute imports only)."""
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


def library_modules() -> list[Path]:
    return sorted(LIBRARY.glob("*.py"))


@pytest.mark.parametrize("path", library_modules(), ids=lambda p: p.stem)
def test_library_module_imports_only_numpy_scipy_and_the_standard_library(path: Path) -> None:
    roots = imported_roots(path) - {"__future__", "attnlib"}
    foreign = {root for root in roots if root not in sys.stdlib_module_names}
    allowed = {"numpy", "scipy"} | {name for name, users in OPTIONAL.items()
                                    if path.stem in users}
    assert not roots & set(FORBIDDEN), f"{path.name} imports {sorted(roots & set(FORBIDDEN))}"
    assert foreign <= allowed, f"{path.name} imports {sorted(foreign - allowed)}"


def test_numba_is_imported_lazily() -> None:
    # only inside functions of attnlib._kernel, so that importing attnlib never imports it
    tree = ast.parse((LIBRARY / "_kernel.py").read_text())
    top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
    assert "numba" not in {root for node in top_level
                           for root in imported_roots_of(node)}


def imported_roots_of(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {alias.name.split(".")[0] for alias in node.names}
    return {node.module.split(".")[0]} if node.level == 0 and node.module else set()


def test_the_checker_sees_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "leaky.py"
    module.write_text("import numpy as np\nfrom attnbook.plotting import figure\n")
    assert "attnbook" in imported_roots(module)


def test_importing_every_library_module_loads_no_book_code() -> None:
    names = [path.stem for path in library_modules() if path.stem != "__init__"]
    code = ("import sys\n"
            + "".join(f"import attnlib.{name}\n" for name in names)
            + f"print(sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r}))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True, cwd=ROOT / "tests").stdout.strip()
    assert loaded == "[]", f"importing attnlib loaded {loaded}"


def test_library_holds_no_data_files() -> None:
    tracked = subprocess.run(["git", "ls-files", "attnlib"], capture_output=True, text=True,
                             check=True, cwd=ROOT).stdout.split()
    if not tracked:
        pytest.skip("not a git checkout")
    extra = [name for name in tracked
             if not name.endswith(".py") and Path(name).name not in PACKAGING]
    assert extra == []


def test_library_wheel_depends_on_numpy_and_scipy_only() -> None:
    project = tomllib.loads((LIBRARY / "pyproject.toml").read_text())["project"]
    required = sorted(spec.split(">")[0].split("=")[0].split("[")[0]
                      for spec in project["dependencies"])
    assert required == ["numpy", "scipy"]
    assert project["optional-dependencies"]["symbolic"][0].startswith("sympy")


def test_no_book_module_is_imported_by_the_library_as_a_relative_import() -> None:
    book_modules = {path.stem for path in BOOK.glob("*.py")} | {
        path.name for path in BOOK.iterdir() if (path / "__init__.py").exists()}
    for path in library_modules():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                names = {(node.module or "").split(".")[0]} | {a.name for a in node.names}
                assert not names & book_modules, f"{path.name}: from . import {names & book_modules}"
