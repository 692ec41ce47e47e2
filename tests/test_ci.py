"""CI runs the README's commands on a clean clone and sets up nothing itself, so a green CI
cannot hide a step a newcomer's machine lacks: whatever the tests need from the system, the
scripts the README's commands call install (scripts/system_packages.sh)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Commands that change what a machine has installed.
INSTALLERS = re.compile(r"\b(apt-get|apt|dpkg|pip3?|uv|conda|npm|yum|dnf|apk|brew)\b"
                        r"(\s+-\S+)*\s+(install|add|i)\b|\bensurepip\b|\bget-pip\b")


def commands(text: str) -> list[str]:
    """The lines of a shell script that run something (comments and blank lines dropped)."""
    return [line.split("#", 1)[0].strip() for line in text.splitlines()
            if line.split("#", 1)[0].strip()]


def installs(text: str) -> list[str]:
    return [line for line in commands(text) if INSTALLERS.search(line)]


def test_ci_installs_nothing_itself() -> None:
    assert installs((ROOT / ".ci" / "run").read_text()) == []


def test_ci_runs_the_readme_test_command() -> None:
    ci = commands((ROOT / ".ci" / "run").read_text())
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/test.sh" in readme
    assert any(line.startswith("bash scripts/test.sh") for line in ci)


def test_the_checker_finds_an_install() -> None:
    assert installs("set -e\n# apt-get install x\nsudo apt-get install -y -qq bubblewrap\n")
    assert installs("python -m pip install --quiet numpy")
    assert not installs("bash scripts/test.sh || status=1")


def test_test_command_sets_up_the_sandbox_and_the_browser() -> None:
    """The packages the steps need come from the scripts the README's commands run."""
    test = (ROOT / "scripts" / "test.sh").read_text()
    assert "need_command bwrap bubblewrap" in test
    assert "need_command chromium chromium" in test
    assert "install_debian_packages python3-venv" in (
        ROOT / "scripts" / "test_portability.sh").read_text()


def test_a_missing_package_that_cannot_be_installed_is_named_in_one_line(tmp_path: Path) -> None:
    """Without the command and without apt-get (an empty PATH but for bash), need_command
    fails with one line naming the Debian package to install."""
    import shutil
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "bash").symlink_to(shutil.which("bash"))
    script = (f"source {ROOT / 'scripts' / 'system_packages.sh'}; "
              "need_command bwrap bubblewrap \"the sandboxed grader's tests\"")
    done = subprocess.run([str(bin_dir / "bash"), "-c", script], capture_output=True, text=True,
                          env={"PATH": str(bin_dir)})
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "error: the sandboxed grader's tests needs bwrap: install Debian's bubblewrap "
        "(sudo apt-get install bubblewrap)"]
