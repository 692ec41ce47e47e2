"""The attnlib a sandboxed answer sees: every function a question does not allow is withheld.

The trusted grader (``scripts/grade.py``) runs each group of a problem set's questions in a
sandbox whose ``attnlib`` is a copy of the installed one in which every function and method,
public and private (by qualified name, such as ``attnlib.attention._softmax_rows``), keeps its
signature and decorators but only raises, except those reachable (``Library.reachable``) from

* the functions the group's checks allow (``_guard["call"](answer, ..., allowed=(...))``),
* the functions the problem set's setup cells call (its notebook runs in the sandbox),
* what runs while attnlib is imported, and the shared input checks (``ALWAYS``).

An answer therefore cannot reach a function that computes it under another name (a private
helper, a wrapper, a method of a result object) unless the checks allow a function that needs
it: there is no list of answers to keep up to date (``tests/test_grading.py`` calls every
function a group leaves callable on each answer's inputs, and tries the library's twins of
every answer). What is reachable is read from the source, conservatively: a
function keeps every attnlib function, class and module-level value its code names (through
the module's own names, ``from . import`` aliases and ``module.attribute`` chains), and a kept
class keeps all its methods and bases (an allowed function's result is a whole object).
"""

from __future__ import annotations

import ast
import shutil
from dataclasses import dataclass, field
from pathlib import Path

#: Modules every attnlib function builds on (input checks, constants, progress bars, threads):
#: never withheld, and none of them computes an answer.
ALWAYS = ("attnlib._validation", "attnlib._constants", "attnlib._progress", "attnlib._threads")
#: What a withheld function raises (the sheet's message quotes it in the answer's error).
WITHHELD_MESSAGE = "withheld while grading: write it yourself"
#: The module added to the copy: every withheld function raises what ``withheld(name)`` returns,
#: after writing ``{"blocked": name, "during": ...}`` to the grader's channel (the harness sets
#: ``REPORT_FD`` and ``DURING``). A report the notebook could suppress: the flag is a courtesy,
#: the withholding is the defence (the function's code is not in the sandbox).
WITHHELD_MODULE = f'''"""Added by scripts/library_wall.py to the grading sandbox's attnlib."""
import json as _json
import os as _os

REPORT_FD = None
DURING = ""


def withheld(name):
    """The error a withheld function raises; reports the call first."""
    if REPORT_FD is not None:
        line = _json.dumps({{"blocked": name[:200], "during": str(DURING)[:200]}}) + "\\n"
        try:
            _os.write(REPORT_FD, line.encode())
        except OSError:
            pass
    return NotImplementedError(f"{{name}} is {WITHHELD_MESSAGE}")
'''


@dataclass
class Module:
    """The names one attnlib module defines at its top level, read from its source."""

    name: str                                    # "attnlib.attention"
    path: Path
    tree: ast.Module
    functions: dict[str, ast.AST] = field(default_factory=dict)   # "f", "C.m" -> def node
    classes: dict[str, ast.ClassDef] = field(default_factory=dict)  # "C", "C.Inner"
    aliases: dict[str, str] = field(default_factory=dict)   # local name -> "attnlib.x[.y]"
    values: dict[str, list[ast.AST]] = field(default_factory=dict)  # assigned name -> values


def _statements(body: list[ast.stmt]):
    """The statements of ``body``, those inside its ``if``, ``try``, ``with`` and loop blocks
    included (not those inside functions or classes)."""
    for node in body:
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody", "handlers"):
                inner = getattr(node, name, None)
                if isinstance(inner, list) and inner and isinstance(inner[0], (
                        ast.stmt, ast.excepthandler)):
                    yield from _statements(inner)


def _collect(module: Module, body: list[ast.stmt], prefix: str = "") -> None:
    for node in _statements(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            module.functions[prefix + node.name] = node
        elif isinstance(node, ast.ClassDef):
            module.classes[prefix + node.name] = node
            _collect(module, node.body, prefix + node.name + ".")


def read_library(home: Path) -> dict[str, Module]:
    """Every module of the attnlib source tree at ``home`` (its ``__init__.py`` folder)."""
    modules = {}
    for path in sorted(home.rglob("*.py")):
        parts = path.relative_to(home).with_suffix("").parts
        name = ".".join(("attnlib", *parts)).removesuffix(".__init__")
        tree = ast.parse(path.read_text(), str(path))
        module = Module(name, path, tree)
        _collect(module, tree.body)
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = (".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                   + ([node.module] if node.module else []))
                          if node.level else node.module or "")
                if source.split(".")[0] != "attnlib":
                    continue
                for alias in node.names:
                    module.aliases[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "attnlib":
                        module.aliases[alias.asname or alias.name.split(".")[0]] = (
                            alias.name if alias.asname else "attnlib")
        for node in _statements(tree.body):
            targets = (node.targets if isinstance(node, ast.Assign) else
                       [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
            for target in targets:
                for part in ast.walk(target):
                    if isinstance(part, ast.Name) and getattr(node, "value", None) is not None:
                        module.values.setdefault(part.id, []).append(node.value)
        modules[name] = module
    return modules


def _references(nodes: list[ast.AST]) -> list[list[str]]:
    """The dotted name chains (``["population", "spd_sqrt"]``, ``["row_softmax"]``) that
    ``nodes`` load, outermost chain only."""
    chains = []
    for root in nodes:
        inner = set()
        for node in ast.walk(root):
            if isinstance(node, ast.Attribute) and id(node) not in inner:
                parts, value = [node.attr], node.value
                while isinstance(value, ast.Attribute):
                    inner.add(id(value))
                    parts.append(value.attr)
                    value = value.value
                if isinstance(value, ast.Name):
                    chains.append([value.id, *reversed(parts)])
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                chains.append([node.id])
    return chains


def _definition_parts(node: ast.AST) -> list[ast.AST]:
    """What a def or class statement evaluates when it runs: decorators, defaults, bases."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return [*node.decorator_list, *node.args.defaults,
                *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    return [node]


def _top_level(body: list[ast.stmt]) -> list[ast.AST]:
    """What a module's (or class body's) statements evaluate when it is imported: everything
    but the bodies of its functions."""
    nodes: list[ast.AST] = []
    for node in body:
        if isinstance(node, ast.ClassDef):
            nodes += _definition_parts(node) + _top_level(node.body)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            nodes += _definition_parts(node)
        else:
            nodes.append(node)
    return nodes


def _calls(nodes: list[ast.AST]) -> list[list[str]]:
    """The name chains that ``nodes`` call (``f(...)``, ``module.f(...)``) or apply as
    decorators."""
    called = []
    for root in nodes:
        for node in ast.walk(root):
            if isinstance(node, ast.Call):
                called.append(node.func)
        if isinstance(root, (ast.Name, ast.Attribute)):    # a decorator without arguments
            called.append(root)
    return [chain for chain in _references(called) if chain]


class Library:
    """attnlib's functions and what each reaches (see the module docstring)."""

    def __init__(self, home: Path):
        self.home = home
        self.modules = read_library(home)

    def functions(self) -> list[str]:
        """Every function and method of attnlib, by qualified name."""
        return sorted(f"{m.name}.{q}" for m in self.modules.values() for q in m.functions)

    def _resolve(self, module: Module, chain: list[str], depth: int = 0) -> str | None:
        """The attnlib symbol (module, function, class or value) a name chain denotes."""
        if depth > 20:
            return None
        head, rest = chain[0], chain[1:]
        if head in module.aliases:
            target = module.aliases[head]
        elif head in module.functions or head in module.classes or head in module.values:
            target = f"{module.name}.{head}"
        else:
            return None
        return self._follow(target, rest, depth)

    def _follow(self, target: str, rest: list[str], depth: int) -> str | None:
        """``target`` (a dotted attnlib name) followed by the attributes ``rest``."""
        if target in self.modules:
            if not rest:
                return target
            return self._resolve(self.modules[target], rest, depth + 1) or target
        owner, _, name = target.rpartition(".")
        while owner and owner not in self.modules:
            owner, _, outer = owner.rpartition(".")
            name = f"{outer}.{name}"
        if not owner:
            return None
        module = self.modules[owner]
        head = name.split(".")[0]
        if head in module.aliases and "." not in name:
            return self._follow(module.aliases[head], rest, depth + 1)
        if name in module.classes and rest and f"{name}.{rest[0]}" in module.functions:
            return f"{owner}.{name}.{rest[0]}"
        if name in module.classes and rest and f"{name}.{rest[0]}" in module.classes:
            return self._follow(f"{owner}.{name}.{rest[0]}", rest[1:], depth + 1)
        return f"{owner}.{name}"

    def _kind(self, symbol: str) -> tuple[str, Module | None, str]:
        """("module" | "function" | "class" | "value" | "", module, local name)."""
        if symbol in self.modules:
            return "module", self.modules[symbol], ""
        owner, _, name = symbol.rpartition(".")
        while owner and owner not in self.modules:
            owner, _, outer = owner.rpartition(".")
            name = f"{outer}.{name}"
        module = self.modules.get(owner)
        if module is None:
            return "", None, name
        if name in module.functions:
            return "function", module, name
        if name in module.classes:
            return "class", module, name
        if name in module.values:
            return "value", module, name
        return "", module, name

    def reachable(self, roots: set[str]) -> set[str]:
        """The functions (qualified names) that ``roots`` (functions, classes, values or
        modules) reach, themselves included."""
        seen: set[str] = set()
        queue = list(roots)
        functions: set[str] = set()
        while queue:
            symbol = queue.pop()
            if symbol in seen:
                continue
            seen.add(symbol)
            kind, module, name = self._kind(symbol)
            if kind == "function":
                functions.add(symbol)
                nodes = [module.functions[name]]
            elif kind == "class":
                node = module.classes[name]
                queue += [f"{module.name}.{q}" for q in module.functions
                          if q.rsplit(".", 1)[0] == name]
                queue += [f"{module.name}.{q}" for q in module.classes
                          if q.rsplit(".", 1)[0] == name]
                nodes = [*_definition_parts(node),
                         *(s for s in node.body if not isinstance(
                             s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))]
            elif kind == "value":
                nodes = module.values[name]
            else:
                continue
            for chain in _references(nodes):
                target = self._resolve(module, chain)
                if target:
                    queue.append(target)
        return functions

    def import_time(self) -> set[str]:
        """What runs while every module is imported (what its top-level statements, class
        bodies, decorators and default values call, and what that reaches)."""
        roots: set[str] = set()
        for module in self.modules.values():
            for chain in _calls(_top_level(module.tree.body)):
                target = self._resolve(module, chain)
                kind = self._kind(target)[0] if target else ""
                if kind == "function":
                    roots.add(target)
                elif kind == "class":
                    roots |= self._construction(target)
            for node in ast.walk(module.tree):
                if isinstance(node, ast.ClassDef):     # a base's __init_subclass__ runs
                    for chain in _references(node.bases):
                        base = self._resolve(module, chain)
                        if base and self._kind(base)[0] == "class":
                            roots |= self._construction(base)
        return self.reachable(roots)

    def _construction(self, cls: str) -> set[str]:
        """The methods that building an instance of ``cls`` runs (its dunders, and its bases')."""
        _, module, name = self._kind(cls)
        found = {f"{module.name}.{q}" for q in module.functions
                 if q.rsplit(".", 1)[0] == name and q.rsplit(".", 1)[1].startswith("__")}
        for chain in _references(module.classes[name].bases):
            base = self._resolve(module, chain)
            if base and self._kind(base)[0] == "class":
                found |= self._construction(base)
        return found

    def kept(self, allowed: set[str]) -> set[str]:
        """The functions a sandbox keeps when ``allowed`` may be called."""
        unknown = sorted(name for name in allowed
                         if self._kind(name)[0] not in ("function", "class", "module"))
        if unknown:
            raise ValueError(f"allowed attnlib names {unknown} are not functions, classes or "
                             "modules of attnlib (expected qualified names such as "
                             "'attnlib.population.spd_sqrt')")
        always = {f"{name}.{q}" for name in ALWAYS if name in self.modules
                  for q in self.modules[name].functions}
        return self.reachable(set(allowed)) | self.import_time() | always

    def stub(self, kept: set[str], dest: Path) -> Path:
        """A copy of attnlib in ``dest/attnlib`` whose functions outside ``kept`` only raise
        (:data:`WITHHELD_MESSAGE`, naming the function) through ``attnlib._withheld``, the
        copy's one added module, which also reports the call to the grader."""
        target = dest / "attnlib"
        shutil.copytree(self.home, target, ignore=shutil.ignore_patterns(
            "__pycache__", "*.pyc", "*.egg-info", "pyproject.toml", "README.md", "py.typed"))
        for module in self.modules.values():
            withheld = {q for q in module.functions if f"{module.name}.{q}" not in kept}
            if not withheld:
                continue
            tree = ast.parse(module.path.read_text())
            self._replace(tree.body, "", module.name, withheld)
            path = target / module.path.relative_to(self.home)
            path.write_text(ast.unparse(ast.fix_missing_locations(tree)) + "\n")
        (target / "_withheld.py").write_text(WITHHELD_MODULE)
        return target

    def _replace(self, body: list[ast.stmt], prefix: str, module: str, withheld: set[str]):
        for node in _statements(body):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = prefix + node.name
                if name in withheld:
                    qualified = f"{module}.{name}"
                    node.body = ast.parse(
                        f"import attnlib._withheld as _w\n"
                        f"raise _w.withheld({qualified!r})").body
            elif isinstance(node, ast.ClassDef):
                self._replace(node.body, prefix + node.name + ".", module, withheld)
