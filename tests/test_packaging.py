"""A core install (no extras) imports every public module it ships (issue 28: honest packaging).

Builds a fresh virtual environment, installs attnlib from this checkout without extras (pinned
by constraints.txt, from pip's cache where it has the wheels), and imports every public module.
"""

from __future__ import annotations

import os
import pkgutil
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

import attnlib

ROOT = Path(__file__).resolve().parents[1]


def public_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages(attnlib.__path__, "attnlib.")
                  if not any(part.startswith("_") for part in info.name.split(".")[1:]))


def test_the_package_docstring_lists_every_public_top_level_module():
    top = {name.split(".")[1] for name in public_modules()}
    missing = [name for name in sorted(top) if f"``{name}``" not in attnlib.__doc__]
    assert missing == []


def test_a_core_install_imports_every_public_module(tmp_path):
    env_dir = tmp_path / "core"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    source = tmp_path / "source"            # a copy, so the build leaves no build/ here
    shutil.copytree(ROOT / "attnlib", source / "attnlib",
                    ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-c", str(ROOT / "constraints.txt"), str(source)],
        capture_output=True, text=True, env=environment, timeout=900)
    assert install.returncode == 0, install.stderr[-2000:]
    modules = public_modules()
    script = ("import importlib, sys\n"
              f"for name in {modules!r}:\n"
              "    importlib.import_module(name)\n"
              "import attnlib\n"
              "print(attnlib.__file__)\n"
              "print('distributed' in sys.modules)\n")
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                            env=environment, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    location, distributed_loaded = result.stdout.split()
    assert str(env_dir) in location              # the installed copy, not this checkout
    assert distributed_loaded == "False"         # the Dask runner stays an extra
    # extras really are absent, so the import above proved the core dependencies suffice
    probe = subprocess.run([str(python), "-c", "import distributed"], capture_output=True,
                           env=environment, cwd=tmp_path)
    assert probe.returncode != 0
