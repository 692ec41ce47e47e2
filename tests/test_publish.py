"""Publishing: the CI workflow (.github/workflows/book.yml) and scripts/publish.sh.

* the workflow validates against GitHub's workflow schema (check-jsonschema's vendored copy of
  the SchemaStore schema, offline), a broken workflow does not, and it builds with the README's
  build command and publishes only on pushes to main;
* only the deploy job, which runs on pushes to main, may write to the repository; the build
  job's token is read-only, and every action is pinned to a full commit SHA;
* a build with a sample repository URL shows repository, issue, edit, Binder and Colab
  buttons with the right targets (and a Colab copy with the install cell); a build without
  one shows none;
* the landing page's BibTeX entry parses (pybtex), prints no Python list, names the licences
  and has the repository as its ``url`` exactly when the build names one;
* scripts/publish.sh pushes a built site to the gh-pages branch of a remote (a throwaway bare
  repository here), with .nojekyll, replacing what was there.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from pybtex.database import parse_string

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


def test_only_the_deploy_job_writes_and_actions_are_pinned():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    writers = [name for name, job in jobs.items()
               if job.get("permissions", {}).get("contents") == "write"]
    assert writers == ["deploy"]
    assert jobs["deploy"]["if"] == "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert jobs["deploy"]["needs"] == "build"
    assert all(job.get("permissions", {}).get("contents") == "read"
               for name, job in jobs.items() if name != "deploy")
    for name, job in jobs.items():
        for step in job["steps"]:
            if "uses" in step:
                assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), \
                    f"{name}: {step['uses']} is not pinned to a commit SHA"
    lines = [line for line in WORKFLOW.read_text().splitlines() if "uses:" in line]
    assert all(re.search(r"@[0-9a-f]{40}  # v\d+\.\d+\.\d+$", line) for line in lines), \
        "each pinned action names its release tag in a comment"
    assert jobs["build"]["env"]["ATTNBOOK_REPOSITORY_URL"] == \
        "${{ github.server_url }}/${{ github.repository }}"
    # no job keeps a token on disk: every checkout drops its credentials, and in the deploy
    # job only the publish step (after pip has run) gets the token
    checkouts = [step for job in jobs.values() for step in job["steps"]
                 if step.get("uses", "").startswith("actions/checkout@")]
    assert checkouts and all(step.get("with", {}).get("persist-credentials") is False
                             for step in checkouts)
    steps = jobs["deploy"]["steps"]
    with_token = [i for i, step in enumerate(steps) if "secrets.GITHUB_TOKEN" in str(step)]
    installs = [i for i, step in enumerate(steps) if "pip install" in step.get("run", "")]
    assert len(with_token) == 1 and "publish.sh" in steps[with_token[0]]["run"]
    assert installs and max(installs) < with_token[0]


SAMPLE_URL = "https://github.com/example-org/attnbook-sample"
SMALL_TOC = """format: jb-book
root: book/intro
parts:
  - caption: Sample
    chapters:
      - file: notebooks/ch01_model
      - file: book/bibliography
"""


def _build_small_book(tmp_path: Path, url: str | None) -> Path:
    """The landing page, chapter 1 and the bibliography, from stored outputs."""
    config = yaml.safe_load((ROOT / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"
    # the config file's folder is not the book's: name the local extension's folder absolutely
    config["sphinx"]["local_extensions"] = {"book_html": str(ROOT / "book" / "_ext")}
    (tmp_path / "config.yml").write_text(yaml.safe_dump(config, sort_keys=False))
    (tmp_path / "toc.yml").write_text(SMALL_TOC)
    env = {key: value for key, value in os.environ.items()
           if key not in ("ATTNBOOK_REPOSITORY_URL", "ATTNBOOK_PDF")}
    if url:
        env["ATTNBOOK_REPOSITORY_URL"] = url
    out = tmp_path / ("with_url" if url else "without_url")
    result = subprocess.run(
        [str(BIN / "jupyter-book"), "build", str(ROOT), "--config", str(tmp_path / "config.yml"),
         "--toc", str(tmp_path / "toc.yml"), "--path-output", str(out)],
        capture_output=True, text=True, check=False, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out / "_build" / "html"


def _links(html: str) -> dict[str, str]:
    """Header buttons by kind: their href."""
    kinds = {"repository": r'href="([^"]+)"[^>]*title="Source repository"',
             "issue": r'href="([^"]+)"[^>]*title="Open an issue"',
             "edit": r'href="([^"]+)"[^>]*title="Suggest edit"',
             "binder": r'href="([^"]+)"[^>]*title="Launch on Binder"',
             "colab": r'href="([^"]+)"[^>]*title="Launch on Colab"'}
    found = {}
    for kind, pattern in kinds.items():
        match = re.search(pattern, html)
        if match:
            found[kind] = match[1].replace("&amp;", "&")
    return found


@pytest.fixture(scope="module")
def small_books(tmp_path_factory) -> dict[str | None, Path]:
    """The small book built with :data:`SAMPLE_URL` as its repository and with none."""
    folder = tmp_path_factory.mktemp("small_books")
    return {url: _build_small_book(folder, url) for url in (SAMPLE_URL, None)}


def test_repository_and_launch_buttons_follow_the_build_url(small_books):
    site = small_books[SAMPLE_URL]
    chapter = (site / "notebooks" / "ch01_model.html").read_text()
    links = _links(chapter)
    assert links == {
        "repository": SAMPLE_URL,
        "issue": links.get("issue", "") if links.get("issue", "").startswith(
            f"{SAMPLE_URL}/issues/new?title=") else "wrong",
        "edit": f"{SAMPLE_URL}/edit/main/notebooks/ch01_model.ipynb",
        "binder": "https://mybinder.org/v2/gh/example-org/attnbook-sample/main"
                  "?urlpath=lab/tree/notebooks/ch01_model.ipynb",
        "colab": "https://colab.research.google.com/github/example-org/attnbook-sample/"
                 "blob/gh-pages/_colab/notebooks/ch01_model.ipynb",
    }
    copy = json.loads((site / "_colab" / "notebooks" / "ch01_model.ipynb").read_text())
    first = "".join(copy["cells"][0]["source"])
    assert 'find_spec("attnlib") is None' in first
    assert f'%pip install --quiet "attnlib @ git+{SAMPLE_URL}"' in first
    original = json.loads((ROOT / "notebooks" / "ch01_model.ipynb").read_text())
    assert copy["cells"][1:] == original["cells"]
    # the prose pages have the repository buttons but nothing to launch
    intro = _links((site / "book" / "intro.html").read_text())
    assert intro["repository"] == SAMPLE_URL and "binder" not in intro and "colab" not in intro
    assert f"{SAMPLE_URL}/blob/main/LICENSE" in chapter
    assert (ROOT / "binder" / "postBuild").is_file() and (ROOT / "binder" / "runtime.txt").is_file()

    local = small_books[None]
    assert _links((local / "notebooks" / "ch01_model.html").read_text()) == {}
    assert not (local / "_colab").exists()


#: A Python list's repr in a BibTeX field (``['MIT', 'CC-BY-4.0']``).
LIST_REPR = re.compile(r"\[\s*['\"]")


def bibtex_fields(page: str) -> dict[str, str]:
    """The fields (authors included) of the one BibTeX entry that ``page`` shows, as pybtex
    parses it; a syntax error, a repeated field or a second entry fails."""
    block = re.search(r'<div class="highlight-bibtex[^"]*"><div class="highlight"><pre>(.*?)</pre>',
                      page, re.S)
    assert block, "the page shows no BibTeX block"
    entries = parse_string(html.unescape(re.sub(r"<[^>]+>", "", block[1])), "bibtex").entries
    assert len(entries) == 1, f"{len(entries)} BibTeX entries"
    (entry,) = entries.values()
    people = {role: " and ".join(map(str, persons)) for role, persons in entry.persons.items()}
    return {key.lower(): value for key, value in {**entry.fields, **people}.items()}


def test_the_citation_parses_and_carries_the_build_url(small_books):
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    for url, site in small_books.items():
        fields = bibtex_fields((site / "book" / "intro.html").read_text())
        printed_lists = {key: value for key, value in fields.items() if LIST_REPR.search(value)}
        assert not printed_lists, f"a Python list printed in BibTeX fields: {printed_lists}"
        assert fields["title"].strip("{}") == citation["title"]
        assert fields["version"] == citation["version"]
        assert "MIT" in fields["note"] and "CC BY 4.0" in fields["note"], fields["note"]
        assert fields.get("url") == url, f"built with repository {url}: url {fields.get('url')}"
