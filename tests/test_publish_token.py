"""scripts/publish.sh never writes a token to disk: the push authenticates with an HTTP header
in the environment of ghp-import (git's GIT_CONFIG_COUNT/KEY/VALUE), and a remote URL that
carries credentials has them taken out of .git/config before anything runs."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECRET = "ghs_not-a-real-token-123"

#: Stands in for ghp-import: records what git would see (its config file and the header in
#: its environment) and makes the gh-pages branch publish.sh reports.
FAKE_GHP_IMPORT = """#!/usr/bin/env bash
set -euo pipefail
{ echo "CONFIG_FILE:"; cat .git/config
  echo "ENV_KEY: ${GIT_CONFIG_KEY_0:-}"; echo "ENV_VALUE: ${GIT_CONFIG_VALUE_0:-}"
  echo "ARGS: $*"; } > "$RECORD"
git branch -f gh-pages HEAD
"""


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    """A repository with scripts/publish.sh, a built site and a fake ghp-import."""
    repo = tmp_path / "repo"
    (repo / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "publish.sh", repo / "scripts" / "publish.sh")
    (repo / "site").mkdir()
    (repo / "site" / "index.html").write_text("<p>book</p>")
    fake = repo / ".venv" / "bin" / "ghp-import"
    fake.parent.mkdir(parents=True)
    fake.write_text(FAKE_GHP_IMPORT)
    fake.chmod(0o755)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "test")
    _git(repo, "config", "user.email", "test@example.invalid")
    _git(repo, "add", "scripts")
    _git(repo, "commit", "-q", "-m", "source")
    return repo


def _publish(repo: Path, **env: str) -> dict[str, str]:
    record = repo.parent / "record.txt"
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("GIT_CONFIG") and key != "GITHUB_TOKEN"}
    done = subprocess.run(["bash", "scripts/publish.sh"], cwd=repo, capture_output=True,
                          text=True, env={**environment, "ATTNBOOK_HTML": "site",
                                          "RECORD": str(record), **env})
    assert done.returncode == 0, done.stdout + done.stderr
    text = record.read_text()
    return {"config": text.split("ENV_KEY:")[0], "key": text.split("ENV_KEY: ")[1].split("\n")[0],
            "value": text.split("ENV_VALUE: ")[1].split("\n")[0], "stderr": done.stderr,
            "args": text.split("ARGS: ")[1]}


def _header(credentials: str) -> str:
    return "AUTHORIZATION: basic " + base64.b64encode(credentials.encode()).decode()


def test_a_token_in_the_environment_never_reaches_git_config(repo: Path) -> None:
    url = "https://github.com/example-org/book.git"
    seen = _publish(repo, GITHUB_TOKEN=SECRET, ATTNBOOK_REMOTE=url)
    assert SECRET not in seen["config"] and SECRET not in (repo / ".git" / "config").read_text()
    assert seen["key"] == f"http.{url}.extraheader"
    assert seen["value"] == _header(f"x-access-token:{SECRET}")
    assert f"--remote {url}" in seen["args"]


def test_credentials_in_a_remote_url_are_taken_off_disk_before_the_push(repo: Path) -> None:
    _git(repo, "remote", "add", "publish",
         f"https://x-access-token:{SECRET}@github.com/example-org/book.git")
    seen = _publish(repo, ATTNBOOK_REMOTE="publish")
    assert SECRET not in seen["config"] and SECRET not in (repo / ".git" / "config").read_text()
    assert _git(repo, "remote", "get-url", "publish") == "https://github.com/example-org/book.git"
    assert seen["value"] == _header(f"x-access-token:{SECRET}")
    assert "held credentials" in seen["stderr"]


def test_a_remote_without_credentials_gets_no_header(repo: Path) -> None:
    _git(repo, "remote", "add", "origin", str(repo.parent / "remote.git"))
    seen = _publish(repo)
    assert seen["key"] == "" and seen["value"] == ""
