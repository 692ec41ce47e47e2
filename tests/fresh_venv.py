"""Virtual environments made only from a requirements file and the book's own wheels (attnlib,
and attnbook for the student bundle; for the tests of the student bundle and the autograder zip).

The third-party wheels a requirements file pins are downloaded from the package index once,
into ``$ATTNBOOK_CACHE/wheels`` (default ``~/.cache/attnbook``); the environment is then built
with ``pip install --no-index`` from that folder, so nothing comes from the repository or the
development environment. Building one takes minutes on 2 cores, so the environment of a given
set of pins is kept (``$ATTNBOOK_CACHE/venvs/<hash of the pins>``) and reused when ``pip freeze``
still shows exactly those pins; the wheels under test are installed into it afresh every time.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

CACHE = Path(os.environ.get("ATTNBOOK_CACHE", Path.home() / ".cache" / "attnbook"))
PIP = ["-m", "pip", "--disable-pip-version-check", "--quiet"]
#: The book's own packages: installed from the wheels under test, never from the index.
OWN = ("attnlib", "attnbook")


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(requirements: Path) -> list[str]:
    """The ``name==version`` lines of ``requirements`` other than the book's own packages',
    canonical names."""
    found = []
    for line in requirements.read_text().splitlines():
        if "==" in line and not line.startswith(("#", "-")):
            name, version = line.split("==", 1)
            if _canonical(name) not in OWN:
                found.append(f"{_canonical(name)}=={version.strip()}")
    return sorted(found)


def _have_wheel(folder: Path, pin: str) -> bool:
    name, version = pin.split("==")
    stem = f"{name.replace('-', '_')}-{version}-"
    return any(path.name.lower().startswith(stem) for path in folder.glob("*.whl"))


def wheelhouse(requirements: Path) -> Path:
    """The cache folder holding a wheel of every pin of ``requirements`` (downloads missing ones)."""
    folder = CACHE / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    missing = [pin for pin in pins(requirements) if not _have_wheel(folder, pin)]
    if missing:
        subprocess.run(["nice", "-n", "10", sys.executable, *PIP, "download", "--no-deps",
                        "--only-binary=:all:", "--dest", str(folder), *missing], check=True)
    return folder


def venv(requirements: Path, *wheels: Path) -> Path:
    """A virtual environment with exactly the pins of ``requirements`` and ``wheels`` (the
    book's own); returns its ``bin`` folder. Fails when ``pip freeze`` shows any other package."""
    wanted = pins(requirements)
    key = hashlib.sha256("\n".join(wanted).encode()).hexdigest()[:16]
    home = CACHE / "venvs" / key
    python = home / "bin" / "python"
    if not (python.exists() and _frozen(python, without_own=True) == wanted):
        shutil.rmtree(home, ignore_errors=True)
        subprocess.run(["nice", "-n", "10", sys.executable, "-m", "venv", str(home)], check=True)
        subprocess.run(["nice", "-n", "10", str(python), *PIP, "install", "--no-compile",
                        "--no-index", "--find-links", str(wheelhouse(requirements)),
                        "-r", str(requirements)], check=True, cwd=requirements.parent)
    subprocess.run([str(python), *PIP, "install", "--no-compile", "--no-index", "--no-deps",
                    "--force-reinstall", *map(str, wheels)], check=True)
    frozen = _frozen(python, without_own=False)
    own = [f"{_canonical(wheel.name.split('-')[0])}=={_wheel_version(wheel)}" for wheel in wheels]
    assert frozen == sorted([*wanted, *own]), (
        "the environment holds packages the requirements file does not pin: "
        f"{sorted(set(frozen) - set(wanted))}")
    return home / "bin"


def _wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def _frozen(python: Path, *, without_own: bool) -> list[str]:
    listed = subprocess.run([str(python), *PIP, "freeze", "--all", "--exclude", "pip",
                             "--exclude", "setuptools"], capture_output=True, text=True)
    result = []
    for line in listed.stdout.splitlines():
        if " @ " in line:  # a wheel installed from a file: name @ file:///...
            name = line.split(" @ ")[0]
            version = subprocess.run([str(python), "-c", f"import importlib.metadata as m; "
                                      f"print(m.version('{name}'))"],
                                     capture_output=True, text=True).stdout.strip()
            line = f"{name}=={version}"
        name, _, version = line.partition("==")
        if without_own and _canonical(name) in OWN:
            continue
        result.append(f"{_canonical(name)}=={version}")
    return sorted(result)
