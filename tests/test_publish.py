"""Publishing: the CI workflow (.github/workflows/book.yml) and scripts/publish.sh.

* the workflow validates against GitHub's workflow schema (check-jsonschema's vendored copy of
  the SchemaStore schema, offline), a broken workflow does not, and it builds with the README's
  build command and publishes only on pushes to main;
* scripts/publish.sh pushes a built site to the gh-pages branch of a remote (a throwaway bare
  repository here), with .nojekyll, replacing what was there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "book.yml"
BIN = Path(sys.executable).parent                 # the .venv running the tests


def _lint(path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema",
                           "vendor.github-workflows", str(path)],
                          capture_output=True, text=True, check=False)


def test_workflow_is_valid_and_a_broken_one_is_not(tmp_path):
    result = _lint(WORKFLOW)
    assert result.returncode == 0, result.stdout + result.stderr
    broken = WORKFLOW.read_text().replace("runs-on: ubuntu-24.04", "runs_on: ubuntu-24.04")
    (tmp_path / "broken.yml").write_text(broken)
    assert _lint(tmp_path / "broken.yml").returncode != 0


def test_workflow_builds_with_the_readme_command_and_deploys_from_main_only():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    triggers = workflow.get("on", workflow.get(True))          # YAML 1.1 reads `on` as True
    assert triggers["push"]["branches"] == ["main"]
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    runs = [step.get("run", "") for step in steps]
    readme = (ROOT / "README.md").read_text()
    assert "bash scripts/build_book.sh" in readme
    assert any(run.strip() == "bash scripts/build_book.sh" for run in runs)
    publish = [step for step in steps if "bash scripts/publish.sh" in step.get("run", "")]
    assert len(publish) == 1
    assert publish[0]["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert runs.index(publish[0]["run"]) > runs.index("bash scripts/build_book.sh")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def test_publish_pushes_the_site_to_gh_pages(tmp_path):
    remote, repo = tmp_path / "remote.git", tmp_path / "repo"
    _git(tmp_path, "init", "--bare", "-q", str(remote))
    (repo / "scripts").mkdir(parents=True)
    for name in ("scripts/publish.sh", "scripts/setup.sh", "pyproject.toml", "constraints.txt"):
        shutil.copy(ROOT / name, repo / name)
    (repo / ".venv").symlink_to(BIN.parent)        # setup.sh finds the installed stack
    site = repo / "site"
    (site / "_static").mkdir(parents=True)
    (site / "index.html").write_text("<a href='book/intro.html'>book</a>")
    (site / "_static" / "style.css").write_text("body {}")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "config", "user.name", "test")
    _git(repo, "config", "user.email", "test@example.invalid")
    _git(repo, "add", "scripts", "pyproject.toml", "constraints.txt")
    _git(repo, "commit", "-q", "-m", "source")
    _git(repo, "remote", "add", "origin", str(remote))
    env = {**os.environ, "ATTNBOOK_HTML": "site"}
    for _ in range(2):                              # a second publish replaces the first
        result = subprocess.run(["bash", "scripts/publish.sh"], cwd=repo, env=env,
                                capture_output=True, text=True, check=False)
        assert result.returncode == 0, result.stdout + result.stderr
    files = _git(remote, "ls-tree", "-r", "--name-only", "gh-pages").split()
    assert sorted(files) == [".nojekyll", "_static/style.css", "index.html"]
    assert _git(remote, "rev-list", "--count", "gh-pages") == "1"
    assert _git(remote, "log", "-1", "--format=%s", "gh-pages").startswith("Book built from ")


def test_citation_file_is_valid_and_names_both_papers():
    result = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema",
                             "vendor.citation-file-format", str(ROOT / "CITATION.cff")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    bib = (ROOT / "book" / "references.bib").read_text()
    for reference in citation["references"]:
        arxiv = reference["identifiers"][0]["value"].removeprefix("arXiv:")
        assert f"eprint = {{{arxiv}}}" in bib
        for author in reference["authors"]:     # full names, as in the bibliography
            assert f"{author['family-names']}, {author['given-names']}" in bib
