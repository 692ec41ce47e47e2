"""The self-checking problem sets (notebooks/problem_sets, otter-grader master notebooks).

For each problem set: ``otter assign`` (through scripts/editions.py, so the autograder zip is
self-contained) builds the student and autograder versions (it also runs the reference
solutions against every check and stops on a failure); ``otter run`` grades the reference
solutions with all checks, public and hidden, and they must score full marks; the student
version, with some stubs replaced by plausible wrong answers and the rest left unanswered, must
fail every question, and each wrong answer must get the feedback that names its mistake; the
student version must contain no solution code and no hidden check.

For problem set 1, graded by the batch grader scripts/grade.py: three ways of gaming the checks
score 0 on every question they touch (calling attnlib's own functions; rebinding
``np.allclose``, ``np.isclose`` and ``np.all`` to ``lambda *a, **k: True`` and returning zeros;
reading the hidden tests from ``../source`` and calling the functions they name), an answer
that sleeps forever is stopped at the timeout, and the autograder zip alone (its requirements
and wheel) grades a correct and a wrong submission in a fresh virtual environment.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from fresh_venv import venv

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


editions, grade = _load("editions"), _load("grade")
PROBLEM_SETS = sorted((ROOT / "notebooks" / "problem_sets").glob("ps*.ipynb"))
OTTER = str(Path(sys.executable).with_name("otter"))
pytestmark = pytest.mark.xdist_group("problem_sets")  # one worker: each set is assigned once

# Plausible mistakes: problem set -> question -> (function name, wrong code, expected feedback).
WRONG = {
    "ps1_part1_theory": {
        "q1_softmax": ("softmax_rows",
                       "def softmax_rows(logits):\n"
                       "    weights = np.exp(logits)\n"
                       "    return weights / weights.sum(axis=1, keepdims=True)\n",
                       "subtract each row's maximum"),
        "q3_population_loss": ("population_loss",
                               "def population_loss(A, B, Sigma, M, noise_std):\n"
                               "    E = A @ Sigma @ B.T - M\n"
                               "    return 0.5 * np.trace(E @ Sigma @ E.T)\n",
                               "differs from the closed form"),
        "q5_balance_gradient": ("balance_grad",
                                "def balance_grad(U, V, lam):\n"
                                "    D = U.T @ U - V.T @ V\n"
                                "    return lam / 2 * U @ D, lam / 2 * V @ D\n",
                                "check its sign"),
    },
    "ps2_part1_experiments": {
        "q1_ols": ("ols_fit",
                   "def ols_fit(X, Y):\n    return np.linalg.solve(X.T @ X, X.T @ Y)\n",
                   "M_hat must be p x d"),
        "q3_gradient_descent": ("gd_losses",
                                "def gd_losses(A, B, X, Y, eta, steps):\n"
                                "    losses = [attention.loss(A, B, X, Y)]\n"
                                "    for _ in range(steps):\n"
                                "        _, grad_A, grad_B = attention.loss_and_grad(A, B, X, Y)\n"
                                "        A, B = A + eta * grad_A, B + eta * grad_B\n"
                                "        losses.append(attention.loss(A, B, X, Y))\n"
                                "    return np.array(losses)\n",
                                "is the sign of the step right?"),
    },
    "ps3_part2_langevin_villani": {
        "q1_euler_maruyama": ("em_step",
                              "def em_step(loss_and_grad, theta, h, s, xi):\n"
                              "    return theta - h * loss_and_grad(theta)[1] + np.sqrt(h) * xi\n",
                              "check the noise scale"),
        "q2_gibbs_density": ("gibbs_density_1d",
                             "def gibbs_density_1d(f_values, s, dx):\n"
                             "    weights = np.exp(-(f_values - f_values.min()) / s)\n"
                             "    return weights / (weights.sum() * dx)\n",
                             "is the exponent -2 f / s?"),
        "q5_lora_symmetry": ("rescale",
                             "def rescale(U, V, G):\n    return U @ G, G @ V\n",
                             "U V changed"),
    },
    "ps4_part2_langevin_darcy_bridge": {
        "q1_hitting_time": ("first_time_below",
                            "def first_time_below(times, gap, eps):\n"
                            "    below = np.nonzero(np.abs(gap) <= eps)[0]\n"
                            "    return float(times[below[0]]) if below.size else np.nan\n",
                            "must stay within eps"),
        "q2_patchify": ("patchify",
                        "def patchify(fields, patch):\n"
                        "    return fields.reshape(fields.shape[0], -1, patch * patch)\n",
                        "each token must be one P x P square"),
        "q3_darcy_residual": ("flux_residual",
                              "def flux_residual(a, u, f):\n"
                              "    h2 = (1.0 / (a.shape[0] - 1)) ** 2\n"
                              "    flux_x = a[1:, :] * (u[1:, :] - u[:-1, :])\n"
                              "    flux_y = a[:, 1:] * (u[:, 1:] - u[:, :-1])\n"
                              "    div = (flux_x[1:, 1:-1] - flux_x[:-1, 1:-1]) + (flux_y[1:-1, 1:] - flux_y[1:-1, :-1])\n"
                              "    return -div / h2 - f\n",
                              "averaged onto the faces"),
        "q4_preconditioner": ("precondition",
                              "def precondition(G_A, G_B, Sigma_hat):\n"
                              "    return np.linalg.solve(Sigma_hat, G_A.T).T, np.linalg.solve(Sigma_hat, G_B)\n",
                              "needs S^-1 on both sides"),
    },
}


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _grade(autograder_zip: Path, notebook: Path, out: Path) -> dict[str, dict]:
    """``otter run`` (no container) on ``notebook``; returns test name -> result entry."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run([OTTER, "run", "-a", str(autograder_zip), "-o", str(out), "--no-logo",
                    str(notebook)], check=True, capture_output=True, text=True)
    results = json.loads((out / "results.json").read_text())
    return {test["name"]: test for test in results["tests"]}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return editions.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module", params=PROBLEM_SETS, ids=lambda path: path.stem)
def assigned(request, wheel, tmp_path_factory) -> tuple[Path, Path]:
    """(master notebook, otter assign output directory) for one problem set."""
    master = request.param
    return master, editions.assign(master, tmp_path_factory.mktemp(master.stem) / "dist",
                                   wheel=wheel)


def test_there_are_four_problem_sets() -> None:
    assert len(PROBLEM_SETS) >= 4, [path.name for path in PROBLEM_SETS]
    assert set(WRONG) == {path.stem for path in PROBLEM_SETS}


def test_question_count(assigned) -> None:
    master, _ = assigned
    questions = [c for c in _cells(master)
                 if c["cell_type"] == "raw" and "".join(c["source"]).startswith("# BEGIN QUESTION")]
    assert 4 <= len(questions) <= 6, f"{master.name}: {len(questions)} questions"


def test_reference_solutions_score_full_marks(assigned, tmp_path) -> None:
    master, dist = assigned
    autograder = dist / "autograder"
    results = _grade(next(autograder.glob("*.zip")), autograder / master.name, tmp_path)
    questions = {name: test for name, test in results.items() if name != "Public Tests"}
    assert len(questions) >= 4
    for name, test in questions.items():
        assert test["score"] == test["max_score"] > 0, f"{name}: {test['output'][-2000:]}"


def test_stubs_and_wrong_answers_fail_with_feedback(assigned, tmp_path) -> None:
    master, dist = assigned
    student = dist / "student" / master.name
    notebook = json.loads(student.read_text())
    wrong = WRONG[master.stem]
    for question, (function, code, _) in wrong.items():
        stub = [cell for cell in notebook["cells"] if cell["cell_type"] == "code"
                and f"def {function}(" in "".join(cell["source"])]
        assert len(stub) == 1, f"{question}: no single stub cell defining {function}"
        assert "..." in "".join(stub[0]["source"]), f"{question}: the stub is not empty"
        stub[0]["source"] = code
    submission = tmp_path / master.name
    submission.write_text(json.dumps(notebook))
    results = _grade(next((dist / "autograder").glob("*.zip")), submission, tmp_path / "out")
    questions = {name: test for name, test in results.items() if name != "Public Tests"}
    assert len(questions) >= 4
    for name, test in questions.items():
        assert test["score"] < test["max_score"], f"{name}: a stub or wrong answer passed"
    for question, (_, _, feedback) in wrong.items():
        assert feedback in questions[question]["output"], (
            f"{question}: the feedback does not say {feedback!r}:\n"
            f"{questions[question]['output'][-2000:]}")


def test_student_version_has_no_solutions_or_hidden_checks(assigned) -> None:
    master, dist = assigned
    student_dir = dist / "student"
    student_text = (student_dir / master.name).read_text()
    public_tests = "".join(path.read_text() for path in (student_dir / "tests").glob("*.py"))
    solution_lines = []
    for cell in _cells(master):
        source = "".join(cell["source"])
        if cell["cell_type"] == "code" and "# BEGIN SOLUTION" in source:
            body = source.split("# BEGIN SOLUTION", 1)[1].split("# END SOLUTION", 1)[0]
            solution_lines += [line.strip() for line in body.splitlines() if line.strip()]
    assert solution_lines, "no solution code found in the master notebook"
    for line in solution_lines:
        assert json.dumps(line)[1:-1] not in student_text, f"solution line left: {line!r}"
    hidden = re.findall(r"hidden: true\n\"\"\" # END TEST CONFIG\n(.+)",
                        "".join("".join(c["source"]) for c in _cells(master)))
    assert hidden
    for first_line in hidden:
        assert first_line not in public_tests and first_line not in student_text, (
            f"hidden check visible to students: {first_line!r}")


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


@pytest.fixture(scope="module")
def ps1(wheel, tmp_path_factory) -> tuple[Path, Path]:
    """(autograder zip, output of editions.assign) of problem set 1."""
    master = next(path for path in PROBLEM_SETS if path.stem == "ps1_part1_theory")
    dist = editions.assign(master, tmp_path_factory.mktemp("ps1") / "dist", wheel=wheel)
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
    [result] = grade.grade_folder(autograder, folder, tmp_path / "scores.csv", timeout=30)
    assert result.status == "timeout" and not result.scores, result
    assert result.seconds < 60, result.seconds
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
    wrong = _submission(dist / "student" / name, {"softmax_rows": WRONG["ps1_part1_theory"]
                                                  ["q1_softmax"][1]})
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
