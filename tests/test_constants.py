"""Every public constant of attnlib documents itself: ``help()`` on it prints what it is (not
the documentation of ``int``), it pickles with that documentation (Dask ships constants to its
workers), and it is the plain value in every other respect (``attnlib._constants``).

A constant is an UPPER_CASE attribute of an attnlib module, not starting with ``_``, that is
not callable, not a type variable, and that the module defines (assigns) itself: a constant
imported from another attnlib module is checked where it is defined, and names imported from
outside attnlib (``typing.TYPE_CHECKING``) are not attnlib's.
"""

from __future__ import annotations

import ast
import copy
import importlib
import json
import pickle
import pkgutil
import pydoc
import re
import reprlib
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import pytest

import attnlib
from attnlib._constants import (DocumentedDict, DocumentedFloat, DocumentedFrozenset,
                                DocumentedInt, DocumentedStr, DocumentedTuple, documented)

MODULES = sorted(info.name for info in pkgutil.walk_packages(attnlib.__path__, "attnlib."))
CONSTANT_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
#: The builtin types a constant may have (bool cannot be subclassed, so none is documented).
PLAIN_TYPES = (int, float, str, tuple, frozenset, dict)


def _assigned_names(path: Path) -> set[str]:
    """Names bound by an assignment at the top level of a module (inside ``if``/``try`` too)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                targets = [node.target]
            elif isinstance(node, (ast.If, ast.Try)):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)
                visit(getattr(node, "finalbody", []))
                continue
            else:
                continue
            for target in targets:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))

    visit(ast.parse(path.read_text(), filename=str(path)).body)
    return names


def constants(module_name: str) -> dict[str, Any]:
    """The public constants that ``module_name`` defines, by name."""
    module = importlib.import_module(module_name)
    assigned = _assigned_names(Path(module.__file__))
    return {name: value for name, value in vars(module).items()
            if CONSTANT_NAME.match(name) and name in assigned
            and not callable(value) and not isinstance(value, TypeVar)}


def _plain_type(value: object) -> type | None:
    """The builtin type of ``value`` among :data:`PLAIN_TYPES` (None for any other)."""
    if isinstance(value, bool):
        return None
    return next((base for base in PLAIN_TYPES if isinstance(value, base)), None)


def _first_line(text: str) -> str:
    return next(line.strip() for line in text.strip().splitlines() if line.strip())


def _help_text(value: object) -> str:
    """What ``help(value)`` prints. ``help()`` looks a str up as the name of an object or a
    topic, never documenting the str itself, so a str constant is rendered the way help()
    renders data (the value, then its doc)."""
    if isinstance(value, str):
        return pydoc.plaintext.document(value)
    return pydoc.render_doc(value, renderer=pydoc.plaintext)


def _undocumented(module_name: str) -> list[str]:
    problems = []
    for name, value in constants(module_name).items():
        base = _plain_type(value)
        own = vars(value).get("__doc__") if hasattr(value, "__dict__") else None
        if base is None:
            problems.append(f"{name} is a {type(value).__name__}, which cannot carry a doc "
                            "(make it an int, float, str, tuple, frozenset or dict)")
        elif not isinstance(own, str) or own == type(value).__doc__:
            problems.append(f"{name} = {reprlib.repr(value)} has no doc of its own: write "
                            f"{name} = documented(..., \"...\") (attnlib._constants)")
        elif len(own.split()) < 3:
            problems.append(f"{name}'s doc {own!r} is not a sentence")
        else:
            text = _help_text(value)
            if _first_line(own) not in text or _first_line(base.__doc__) in text:
                problems.append(f"help({name}) does not show its doc:\n{text}")
    return problems


@pytest.mark.parametrize("module_name", MODULES)
def test_help_on_every_public_constant_says_what_it_is(module_name: str) -> None:
    problems = _undocumented(module_name)
    assert not problems, f"{module_name}:\n" + "\n".join(problems)


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_constant_pickles_and_copies_with_its_doc(module_name: str) -> None:
    for name, value in constants(module_name).items():
        if not isinstance(vars(value).get("__doc__") if hasattr(value, "__dict__") else None,
                          str):
            continue                    # reported by the test above
        for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
            again = pickle.loads(pickle.dumps(value, protocol=protocol))
            assert type(again) is type(value), (name, protocol)
            assert again == value and again.__doc__ == value.__doc__, (name, protocol)
            assert again.__module__ == value.__module__, (name, protocol)
        for duplicate in (copy.copy(value), copy.deepcopy(value)):
            assert duplicate == value and duplicate.__doc__ == value.__doc__, name


@pytest.mark.parametrize("module_name", MODULES)
def test_every_public_constant_is_its_plain_value(module_name: str) -> None:
    for name, value in constants(module_name).items():
        base = _plain_type(value)
        if base is None:
            continue                    # reported by the first test
        plain = base(value)
        assert type(plain) is base
        assert value == plain and plain == value, name
        assert repr(value) == repr(plain) and str(value) == str(plain), name
        if base is not dict:
            assert hash(value) == hash(plain), name
        try:
            expected = json.dumps(plain)
        except TypeError:               # not JSON data (a frozenset, a dict of objects)
            continue
        assert json.dumps(value) == expected, name


def test_every_module_is_checked() -> None:
    # the walk sees every module file of the package, private ones included
    files = {path.stem for path in Path(attnlib.__file__).parent.glob("*.py")} - {"__init__"}
    assert {name.split(".")[1] for name in MODULES} >= files


def test_the_check_sees_an_undocumented_constant() -> None:
    text = pydoc.render_doc(2 ** 18, renderer=pydoc.plaintext)
    assert _first_line(int.__doc__) in text             # what help() showed before


# ------------------------------------------------------------------ the mechanism itself
@pytest.mark.parametrize("value, cls", [
    (2 ** 18, DocumentedInt), (1e12, DocumentedFloat), ("loo", DocumentedStr),
    (("W_Q", "W_K"), DocumentedTuple), (frozenset({1, 2}), DocumentedFrozenset),
    ({"a": 1, "b": (2, 3)}, DocumentedDict)])
def test_documented_values_behave_as_the_plain_value(value: object, cls: type) -> None:
    constant = documented(value, "What this constant is, in a sentence.", "attnlib.attention")
    assert type(constant) is cls and isinstance(constant, type(value))
    assert constant == value and repr(constant) == repr(value) and str(constant) == str(value)
    assert constant.__doc__ == "What this constant is, in a sentence."
    assert constant.__module__ == "attnlib.attention"
    assert "What this constant is, in a sentence." in _help_text(constant)
    again = pickle.loads(pickle.dumps(constant))
    assert type(again) is cls and again == value and again.__doc__ == constant.__doc__
    assert documented(constant, "Another doc.").__doc__ == "Another doc."


def test_documented_numbers_work_as_sizes_indices_and_in_formats() -> None:
    size = documented(2 ** 10, "A size.")
    rate = documented(0.125, "A rate.")
    assert np.zeros(size).shape == (1024,) and np.arange(2000)[size] == 1024
    assert list(range(documented(3, "A count."))) == [0, 1, 2]
    assert f"{size:,} {size} {rate:.3g} {rate} {rate:g}" == "1,024 1024 0.125 0.125 0.125"
    assert type(size + 1) is int and type(size // 3) is int and type(-size) is int
    assert type(rate * 2) is float and np.float64(rate) == 0.125
    assert size > 1000 and rate < 1 and {size: "x"}[1024] == "x"
    assert json.dumps({"size": size, "rate": rate}) == '{"size": 1024, "rate": 0.125}'


def test_documented_refuses_what_it_cannot_document() -> None:
    with pytest.raises(TypeError, match="bool"):
        documented(True, "A flag.")
    with pytest.raises(TypeError, match="list"):
        documented([1, 2], "A list.")
    with pytest.raises(ValueError, match="doc"):
        documented(1, "  ")
