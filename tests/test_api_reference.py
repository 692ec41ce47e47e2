"""The API reference (book/api.md) and the package docstring cover every public module."""

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


def test_api_page_documents_every_public_module() -> None:
    page = (ROOT / "book" / "api.md").read_text()
    documented = set(re.findall(r"^\.\. automodule:: (\S+)$", page, flags=re.M))
    missing = sorted(set(_public_modules()) - documented - {"attnlib", "attnbook"})
    assert not missing, f"book/api.md has no automodule for {missing}"
    assert documented <= set(_public_modules()), sorted(documented - set(_public_modules()))


def test_package_docstring_lists_every_top_level_module() -> None:
    top = {name.split(".")[1] for name in _public_modules()
           if name.count(".") >= 1 and name.startswith("attnlib.")}
    listed = set(re.findall(r"``(\w+)``", attnlib.__doc__))
    assert not top - listed, f"attnlib/__init__.py's docstring does not list {sorted(top - listed)}"


def test_api_page_is_in_the_table_of_contents() -> None:
    assert "file: book/api" in (ROOT / "_toc.yml").read_text()


def test_api_page_has_the_algorithms_then_the_books_code() -> None:
    page = (ROOT / "book" / "api.md").read_text()
    algorithms = page.index("\n## The algorithms: `attnlib`")
    book = page.index("\n## The book's code: `attnbook`")
    assert algorithms < book
    assert "automodule:: attnbook." not in page[algorithms:book]
    assert "automodule:: attnlib." not in page[book:]
