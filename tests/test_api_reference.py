"""The API reference and the package docstring cover every public module: the library's on
its own page (book/api.md), the book's code on another (book/api_book.md)."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import attnbook
import attnlib

ROOT = Path(__file__).resolve().parents[1]


def _public_modules() -> list[str]:
    """Every importable module of attnlib and attnbook whose name has no part starting with
    ``_``."""
    names = ["attnlib", "attnbook"] + [
        info.name for package in (attnlib, attnbook)
        for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return [name for name in names if not any(part.startswith("_") for part in name.split("."))]


PAGES = {"attnlib": ROOT / "book" / "api.md", "attnbook": ROOT / "book" / "api_book.md"}


def test_each_packages_api_page_documents_its_public_modules_and_no_others() -> None:
    for package, path in PAGES.items():
        documented = set(re.findall(r"^\.\. automodule:: (\S+)$", path.read_text(), flags=re.M))
        modules = {name for name in _public_modules() if name.startswith(f"{package}.")}
        assert not modules - documented, f"{path.name} has no automodule for {sorted(modules - documented)}"
        assert documented <= modules, f"{path.name} documents {sorted(documented - modules)}"


def test_package_docstring_lists_every_top_level_module() -> None:
    top = {name.split(".")[1] for name in _public_modules()
           if name.count(".") >= 1 and name.startswith("attnlib.")}
    listed = set(re.findall(r"``(\w+)``", attnlib.__doc__))
    assert not top - listed, f"attnlib/__init__.py's docstring does not list {sorted(top - listed)}"


def test_both_api_pages_are_in_the_table_of_contents_library_first() -> None:
    toc = (ROOT / "_toc.yml").read_text()
    assert toc.index("file: book/api\n") < toc.index("file: book/api_book\n")
