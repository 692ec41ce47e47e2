"""The library installs as a library: a wheel of attnlib alone, in a fresh virtual environment
(pinned by constraints.txt, from pip's cache where it has the wheels), needs numpy and scipy
only, imports every public module and passes the library's own unit tests; the README's
install line and quickstart then run there as written and print what the README says."""

from __future__ import annotations

import os
import pkgutil
import re
import shlex
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

import attnlib

ROOT = Path(__file__).resolve().parents[1]


def public_modules() -> list[str]:
    return sorted(info.name for info in pkgutil.walk_packages(attnlib.__path__, "attnlib.")
                  if not any(part.startswith("_") for part in info.name.split(".")[1:]))


def readme_quickstart() -> tuple[list[str], str, list[str]]:
    """From the README's section "Use attnlib in your own research": the install line from a
    clone (as pip arguments), the quickstart's code and the lines the README says it prints."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Use attnlib in your own research", 1)[1].split("\n## ", 1)[0]
    bash, python = re.findall(r"```(?:bash|python)\n(.*?)```", section, flags=re.S)[:2]
    [install] = [line.split("#")[0] for line in bash.splitlines()
                 if line.startswith("pip install ./attnlib")]
    printed = re.findall(r"`((?:algorithm1|gd): gap [^`]*)`", section)
    return shlex.split(install)[2:], python, printed


def test_the_package_docstring_lists_every_public_top_level_module():
    top = {name.split(".")[1] for name in public_modules()}
    missing = [name for name in sorted(top) if f"``{name}``" not in attnlib.__doc__]
    assert missing == []


#: attnlib's own unit tests that need nothing beyond the library, numpy, scipy and pytest: the
#: wheel runs them in its fresh environment.
LIBRARY_ONLY_TESTS = ("test_data.py", "test_optim.py", "test_reference.py", "test_lora.py",
                      "test_qk_attention.py", "test_landscape.py")


def test_the_library_wheel_installs_with_numpy_and_scipy_only_and_passes_its_tests(tmp_path):
    """A wheel of attnlib alone (attnlib/pyproject.toml) in a fresh venv: it brings numpy and
    scipy and nothing else, ships no data files, imports every public module but the sympy one
    (which names its extra), and runs the library's own unit tests there."""
    env_dir = tmp_path / "core"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    python = env_dir / "bin" / "python"
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    source = tmp_path / "source" / "attnlib"   # a copy, so the build leaves no build/ here
    shutil.copytree(ROOT / "attnlib", source,
                    ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "build"))
    pip = [str(python), "-m", "pip", "--disable-pip-version-check"]
    wheel = subprocess.run([*pip, "wheel", "--quiet", "--no-deps", str(source), "-w",
                            str(tmp_path / "dist")], capture_output=True, text=True,
                           env=environment, timeout=600)
    assert wheel.returncode == 0, wheel.stderr[-2000:]
    [built] = (tmp_path / "dist").glob("attnlib-*.whl")
    with zipfile.ZipFile(built) as archive:
        shipped = [name for name in archive.namelist() if not name.startswith("attnlib-")]
    assert all(name.endswith(".py") or name == "attnlib/py.typed" for name in shipped), shipped
    install = subprocess.run([*pip, "install", "--quiet", "-c", str(ROOT / "constraints.txt"),
                              str(built)], capture_output=True, text=True, env=environment,
                             timeout=900)
    assert install.returncode == 0, install.stderr[-2000:]
    listed = subprocess.run([*pip, "list", "--format=freeze"], capture_output=True, text=True,
                            env=environment, check=True).stdout
    installed = {line.split("==")[0].lower() for line in listed.split()} - {"pip", "setuptools"}
    assert installed == {"attnlib", "numpy", "scipy"}
    modules = [name for name in public_modules() if name != "attnlib.symbolic"]
    script = ("import importlib, sys\n"
              f"for name in {modules!r}:\n"
              "    importlib.import_module(name)\n"
              "import attnlib\n"
              "print(attnlib.__file__)\n"
              "try:\n    import attnlib.symbolic\nexcept ImportError as e:\n    print('sympy' in str(e))\n")
    result = subprocess.run([str(python), "-c", script], capture_output=True, text=True,
                            env=environment, cwd=tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    location, names_sympy = result.stdout.split()
    assert str(env_dir) in location              # the installed copy, not this checkout
    assert names_sympy == "True"
    # the library's own tests, run against the installed wheel with pytest added
    tests = tmp_path / "tests"
    tests.mkdir()
    for name in LIBRARY_ONLY_TESTS:
        shutil.copy(ROOT / "tests" / name, tests / name)
    runner = subprocess.run([*pip, "install", "--quiet", "-c", str(ROOT / "constraints.txt"),
                             "pytest"], capture_output=True, text=True, env=environment,
                            timeout=900)
    assert runner.returncode == 0, runner.stderr[-2000:]
    run = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(tests)], capture_output=True, text=True, env=environment,
                         cwd=tmp_path, timeout=900)
    assert run.returncode == 0, run.stdout[-3000:]
    assert " passed" in run.stdout
    # the README's install line (from a clone: run in the copy's parent) and its quickstart
    arguments, quickstart, printed = readme_quickstart()
    readme_install = subprocess.run([*pip, "install", "--quiet", "-c",
                                     str(ROOT / "constraints.txt"), *arguments],
                                    capture_output=True, text=True, env=environment,
                                    cwd=source.parent, timeout=900)
    assert readme_install.returncode == 0, readme_install.stderr[-2000:]
    work = tmp_path / "quickstart"
    work.mkdir()
    (work / "quickstart.py").write_text(quickstart)
    ran = subprocess.run([str(python), "quickstart.py"], capture_output=True, text=True,
                         env={**environment, "MPLBACKEND": "Agg"}, cwd=work, timeout=600)
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert len(printed) == 2 and ran.stdout.splitlines() == printed, (ran.stdout, printed)
    assert (work / "gap.png").stat().st_size > 10_000
