"""Grading problem set 1 the way a lecturer does, and trying to game it.

With the batch grader scripts/grade.py: three ways of gaming the checks score 0 on every
question they touch (calling attnlib's own functions; rebinding ``np.allclose``, ``np.isclose``
and ``np.all`` to ``lambda *a, **k: True`` and returning zeros; reading the hidden tests from
``../source`` and calling the functions they name) while the reference solutions score full
marks, all written to one CSV; an answer that sleeps forever is stopped at the timeout. And the
autograder zip alone (the pip section of its environment.yml and its wheel) grades a correct
and a wrong submission in a fresh virtual environment (tests/fresh_venv.py).
"""

from __future__ import annotations

import csv
import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from fresh_venv import venv

ROOT = Path(__file__).resolve().parents[1]
MASTER = ROOT / "notebooks" / "problem_sets" / "ps1_part1_theory.ipynb"
WRONG_SOFTMAX = ("def softmax_rows(logits):\n"
                 "    weights = np.exp(logits)\n"
                 "    return weights / weights.sum(axis=1, keepdims=True)\n")


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


editions, grade = _load("editions"), _load("grade")


# Submissions to problem set 1 that game the checks: function -> code replacing its stub.
CHEATS = {
    "cheat_attnlib": {
        "softmax_rows": "softmax_rows = attention.row_softmax\n",
        "loo_weights": "def loo_weights(B, X):\n    return attention.attention_weights(B, X, mask='loo')\n",
        "population_loss": "def population_loss(A, B, Sigma, M, noise_std):\n"
                           "    return population.population_loss(A, B, Sigma, M, noise_std=noise_std)\n",
        "to_factor": "to_factor = population.to_factor\n",
        "balance_grad": "def balance_grad(U, V, lam):\n"
                        "    return population.factor_regularizer_and_grad(U, V, lam=lam)[1:]\n",
    },
    "cheat_allclose": {
        "softmax_rows": "np.allclose = np.isclose = np.all = lambda *a, **k: True\n"
                        "def softmax_rows(logits):\n    return np.zeros_like(logits)\n",
        "loo_weights": "def loo_weights(B, X):\n    return np.zeros((len(X), len(X)))\n",
        "population_loss": "def population_loss(A, B, Sigma, M, noise_std):\n    return 0.0\n",
        "to_factor": "def to_factor(A, B, Sigma):\n    return np.zeros_like(A), np.zeros_like(B)\n",
        "balance_grad": "def balance_grad(U, V, lam):\n    return np.zeros_like(U), np.zeros_like(V)\n",
    },
}
# Reads each hidden test from ../source/tests, finds the attnlib function its check compares
# with, and calls it; records what it read in FOUND (a path outside the grading directory).
SOURCE_CHEAT = """import importlib, json, re
from pathlib import Path
_read = {p.stem: p.read_text() for p in Path("../source/tests").glob("q*.py")}
def _named(question, module):
    name = re.findall(module + r"\\.(\\w+)\\(", _read[question])[-1]
    return getattr(importlib.import_module("attnlib." + module), name)
_found = {q: [_named(q, m).__name__ for m in ("attention", "population") if m + "." in _read[q]]
          for q in _read}
Path(FOUND).write_text(json.dumps(_found))
def softmax_rows(logits):
    return _named("q1_softmax", "attention")(logits)
def loo_weights(B, X):
    return _named("q2_loo_weights", "attention")(B, X, mask="loo")
def population_loss(A, B, Sigma, M, noise_std):
    return _named("q3_population_loss", "population")(A, B, Sigma, M, noise_std=noise_std)
def to_factor(A, B, Sigma):
    return _named("q4_factor", "population")(A, B, Sigma)
def balance_grad(U, V, lam):
    return _named("q5_balance_gradient", "population")(U, V, lam=lam)[1:]
"""


def _submission(student: Path, answers: dict[str, str]) -> dict:
    """The student notebook with the stub of each function in ``answers`` replaced."""
    notebook = json.loads(student.read_text())
    for function, code in answers.items():
        stubs = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"
                 and f"def {function}(" in "".join(cell["source"])]
        assert len(stubs) == 1, f"no single stub cell defining {function}"
        stubs[0]["source"] = code
    return notebook


@pytest.fixture(scope="session")
def ps1(tmp_path_factory) -> tuple[Path, Path]:
    """(autograder zip, output of editions.assign) of problem set 1."""
    wheel = editions.build_wheel(tmp_path_factory.mktemp("wheel"))
    dist = editions.assign(MASTER, tmp_path_factory.mktemp("ps1") / "dist", wheel=wheel)
    return next((dist / "autograder").glob("*.zip")), dist


def test_gaming_the_checks_scores_zero(ps1, tmp_path) -> None:
    autograder, dist = ps1
    name = "ps1_part1_theory.ipynb"
    student = dist / "student" / name
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "reference.ipynb").write_text((dist / "autograder" / name).read_text())
    for cheat, answers in CHEATS.items():
        (folder / f"{cheat}.ipynb").write_text(json.dumps(_submission(student, answers)))
    found = tmp_path / "found.json"
    source_cheat = json.loads(student.read_text())
    for function in ("loo_weights", "population_loss", "to_factor", "balance_grad"):
        source_cheat = _submission_from(source_cheat, function, "")  # defined by the cheat
    source_cheat = _submission_from(source_cheat, "softmax_rows",
                                    f"FOUND = {str(found)!r}\n" + SOURCE_CHEAT)
    (folder / "cheat_source.ipynb").write_text(json.dumps(source_cheat))
    results = {r.submission.removesuffix(".ipynb"): r for r in grade.grade_folder(
        autograder, folder, tmp_path / "scores.csv", timeout=900, jobs=2)}
    reference = results["reference"]
    assert reference.status == "graded" and len(reference.scores) == 5, reference
    assert reference.scores == reference.max_scores, reference.scores
    for cheat in ("cheat_attnlib", "cheat_allclose", "cheat_source"):
        assert results[cheat].status == "graded", results[cheat]
        assert results[cheat].scores == dict.fromkeys(reference.scores, 0.0), (
            f"{cheat}: {results[cheat].scores}")
    read = json.loads(found.read_text())
    assert read["q1_softmax"] == ["row_softmax"], f"the ../source cheat did not read the tests: {read}"
    assert "rebinds np.allclose" in results["cheat_allclose"].flags
    assert "text '../source'" in results["cheat_source"].flags
    with (tmp_path / "scores.csv").open() as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert rows["reference.ipynb"]["total"] == "5" and rows["cheat_attnlib.ipynb"]["total"] == "0"


def _submission_from(notebook: dict, function: str, code: str) -> dict:
    """``notebook`` with the cell defining ``function`` replaced by ``code``."""
    for cell in notebook["cells"]:
        if cell["cell_type"] == "code" and f"def {function}(" in "".join(cell["source"]):
            cell["source"] = code
    return notebook


def test_a_hanging_answer_is_stopped(ps1, tmp_path) -> None:
    autograder, dist = ps1
    folder = tmp_path / "submissions"
    folder.mkdir()
    hang = "import time\ndef softmax_rows(logits):\n    time.sleep(10**6)\n"
    (folder / "hang.ipynb").write_text(json.dumps(
        _submission(dist / "student" / "ps1_part1_theory.ipynb", {"softmax_rows": hang})))
    [result] = grade.grade_folder(autograder, folder, tmp_path / "scores.csv", timeout=15)
    assert result.status == "timeout" and not result.scores, result
    assert result.seconds < 45, result.seconds
    leftover = subprocess.run(["pgrep", "-f", "hang.ipynb"], capture_output=True, text=True)
    assert not leftover.stdout.strip(), "a grading process outlived the timeout"


def test_autograder_zip_grades_in_a_fresh_venv(ps1, tmp_path) -> None:
    """The zip's own requirements and wheel are enough: a correct submission scores 5 of 5, a
    wrong one less, with nothing from the repository or the development environment."""
    autograder, dist = ps1
    unpacked = tmp_path / "zip"
    with zipfile.ZipFile(autograder) as archive:
        archive.extractall(unpacked)
    # the pip section of the zip's environment.yml, as a grader's conda runs it (pip resolves
    # '--find-links files' next to the requirements file, as conda writes it in the zip's folder)
    environment = yaml.safe_load((unpacked / "environment.yml").read_text())
    [pip_section] = [item["pip"] for item in environment["dependencies"] if isinstance(item, dict)]
    assert "--find-links files" in pip_section
    assert any(line.startswith("otter-grader==") for line in pip_section), pip_section
    assert any(line.startswith("attnlib==") for line in pip_section), pip_section
    requirements = unpacked / "requirements.txt"
    requirements.write_text("\n".join(pip_section) + "\n")
    bin_dir = venv(requirements, next((unpacked / "files").glob("attnlib-*.whl")))
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "OMP_NUM_THREADS": "1",
           "OPENBLAS_NUM_THREADS": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    name = "ps1_part1_theory.ipynb"
    wrong = _submission(dist / "student" / name, {"softmax_rows": WRONG_SOFTMAX})
    scores = {}
    for label, text in (("correct", (dist / "autograder" / name).read_text()),
                        ("wrong", json.dumps(wrong))):
        folder = tmp_path / label
        (folder / "out").mkdir(parents=True)
        (folder / name).write_text(text)
        done = subprocess.run([str(bin_dir / "otter"), "run", "-a", str(autograder), "-o", "out",
                               "--no-logo", name], cwd=folder, env=env, capture_output=True,
                              text=True)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        tests = json.loads((folder / "out" / "results.json").read_text())["tests"]
        scores[label] = sum(test["score"] for test in tests if "score" in test)
    assert scores == {"correct": 5.0, "wrong": 0.0}, scores
