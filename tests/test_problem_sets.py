"""The self-checking problem sets (notebooks/problem_sets, otter-grader master notebooks).

For each problem set: ``otter assign`` (through scripts/editions.py, so the autograder zip is
self-contained) builds the student and autograder versions (it also runs the reference
solutions against every check and stops on a failure); ``otter run`` grades the reference
solutions with all checks, public and hidden, and they must score full marks; the student
version, with some stubs replaced by plausible wrong answers and the rest left unanswered, must
fail every question, and each wrong answer must get the feedback that names its mistake; the
student version must contain no solution code and no hidden check. The same holds with the
trusted grader (scripts/grade.py: the notebook in a sandbox whose attnlib withholds every
function the checks do not allow, the checks in the grader's process), which also shows that no
reference solution needs a function its group withholds. What the grader reads from the master
notebooks holds: grading_checks.py's GROUPS lists every automatically checked question once and
WRITTEN every written one with its points, and every hidden check calls the answers through
``_guard["call"]`` with the attnlib functions it allows.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


_spec = importlib.util.spec_from_file_location("editions", ROOT / "scripts" / "editions.py")
editions = importlib.util.module_from_spec(_spec)
sys.modules["editions"] = editions  # dataclasses look their module up there
_spec.loader.exec_module(editions)
_spec = importlib.util.spec_from_file_location("grade", ROOT / "scripts" / "grade.py")
grade = importlib.util.module_from_spec(_spec)
sys.modules["grade"] = grade  # dataclasses look their module up there
_spec.loader.exec_module(grade)
PROBLEM_SETS = sorted((ROOT / "notebooks" / "problem_sets").glob("ps*.ipynb"))
OTTER = str(Path(sys.executable).with_name("otter"))

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
                                "dR/dV has the wrong sign"),
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
                            "stays within eps"),
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


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    return editions.build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="session", params=PROBLEM_SETS, ids=lambda path: path.stem)
def assigned(request, wheel, tmp_path_factory) -> tuple[Path, Path]:
    """(master notebook, otter assign output directory) for one problem set."""
    master = request.param
    return master, editions.assign(master, tmp_path_factory.mktemp(master.stem) / "dist",
                                   wheel=wheel)


def test_there_are_four_problem_sets() -> None:
    assert len(PROBLEM_SETS) >= 4, [path.name for path in PROBLEM_SETS]
    assert set(WRONG) == {path.stem for path in PROBLEM_SETS}


def _questions(master: Path) -> list[tuple[dict, list[dict]]]:
    """(configuration, cells) of each ``# BEGIN QUESTION`` ... ``# END QUESTION`` block."""
    import yaml

    blocks, current = [], None
    for cell in _cells(master):
        source = "".join(cell["source"])
        if cell["cell_type"] == "raw" and source.startswith("# BEGIN QUESTION"):
            current = (yaml.safe_load(source.removeprefix("# BEGIN QUESTION")), [])
        elif cell["cell_type"] == "raw" and source.startswith("# END QUESTION"):
            blocks.append(current)
            current = None
        elif current is not None:
            current[1].append(cell)
    return blocks


def test_question_count(assigned) -> None:
    master, _ = assigned
    coded = [config for config, _ in _questions(master) if not config.get("manual")]
    assert 4 <= len(coded) <= 6, f"{master.name}: {len(coded)} questions"


# Written questions (issue 46): chapters each problem set's written questions must cover.
WRITTEN_CHAPTERS = {"ps1_part1_theory": {"chapter 2"},
                    "ps2_part1_experiments": {"chapter 4", "chapter 5", "chapter 6b"},
                    "ps3_part2_langevin_villani": {"chapter 8"},
                    "ps4_part2_langevin_darcy_bridge": {"chapter 10", "chapter 12"}}


@pytest.mark.parametrize("master", PROBLEM_SETS, ids=lambda path: path.stem)
def test_written_questions_have_a_rubric(master: Path) -> None:
    """One or two manually graded questions (otter's ``manual: true``), each a derivation or
    explanation whose solution block holds a model answer and a rubric adding up to its points,
    and whose prompt says what a full answer addresses (issue 67: the rubric's points, not its
    answers); problem set 2 asks what Algorithm 1's ingredients buy."""
    written = [(config, cells) for config, cells in _questions(master) if config.get("manual")]
    assert 1 <= len(written) <= 2, f"{master.name}: {len(written)} written questions"
    prompts = ""
    for config, cells in written:
        kinds = [c["cell_type"] for c in cells]
        sources = ["".join(c["source"]) for c in cells]
        assert kinds[0] == "markdown" and sources[0].startswith("## "), f"{config['name']}: prompt"
        assert sources[1] == "# BEGIN SOLUTION" and sources[-1] == "# END SOLUTION", config["name"]
        solution = "".join(sources[2:-1])
        assert "**Model answer.**" in solution, f"{config['name']}: no model answer"
        rubric = solution.split("**Rubric", 1)
        assert len(rubric) == 2, f"{config['name']}: no rubric"
        items = re.findall(r"^- (\d+) points?", rubric[1], re.M)
        assert sum(map(int, items)) == config["points"], (
            f"{config['name']}: the rubric's points {items} do not add up to {config['points']}")
        assert "*A full answer" in sources[0], f"{config['name']}: no rubric points for students"
        prompts += sources[0]
    for chapter in WRITTEN_CHAPTERS[master.stem]:
        assert re.search(rf"\b{chapter}\b|\bchapters? [^.]*\b{chapter.split()[1]}\b", prompts, re.I), (
            f"{master.name}: no written question on {chapter}")
    if master.stem == "ps2_part1_experiments":
        for ingredient in ("spectral start", "preconditioner", "regularizer", "measured"):
            assert ingredient in prompts, f"problem set 2 does not ask about the {ingredient}"


def _optional_sections() -> list[str]:
    """The section titles the teaching guide's table marks optional on a first reading."""
    guide = (ROOT / "book" / "teaching_guide.md").read_text()
    table = guide.split("## Core path and optional sections", 1)[1].split("\n\n**", 1)[0]
    rows = [line for line in table.splitlines() if re.match(r"\| \d+b?\. ", line)]
    return [title for row in rows for title in re.findall(r"\*([^*]+)\*", row.split("|")[2])]


@pytest.mark.parametrize("master", PROBLEM_SETS, ids=lambda path: path.stem)
def test_written_questions_cite_no_optional_section(master: Path) -> None:
    """Issue 67: a written question is answerable from the core path, so its prompt sends the
    student to no section the teaching guide marks optional (by its title, or the title's part
    before a colon, such as chapter 2's "Monte Carlo")."""
    titles = _optional_sections()
    assert len(titles) >= 15, titles
    for config, cells in _questions(master):
        if not config.get("manual"):
            continue
        prompt = "".join(cells[0]["source"])
        cited = [key for title in titles for key in {title, title.split(":")[0]} if key in prompt]
        assert not cited, f"{config['name']} cites the optional {cited}"


# A public check's message when an answer calls the library's version of the exercise.
LIBRARY_VERSION = re.compile(r"calls (\w+\.\w+), which the grader withholds")


@pytest.mark.parametrize("master", PROBLEM_SETS, ids=lambda path: path.stem)
def test_opening_cell_names_what_answers_may_call(master: Path) -> None:
    """Issue 67: the opening cell names the attnlib functions answers may call (the hidden
    checks' ``allowed=`` lists: the trusted grader withholds every other one) and the library's
    versions of the exercises that the public checks flag, and says what calling a withheld
    function costs."""
    opening = "".join(_cells(master)[1]["source"])
    allowed: set[str] = set()
    flagged: set[str] = set()
    for config, cells in _questions(master):
        sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        hidden = [source for source in sources if "hidden: true" in source]
        allowed |= grade.declared_allowed(grade.Question(config["name"], 1.0, True, hidden))
        flagged.update(name for source in sources if source not in hidden
                       for name in LIBRARY_VERSION.findall(source))
    assert "withholds every" in opening and "scores 0 for its question" in opening
    assert flagged, f"{master.name}: no public check flags a call of the library's version"
    for name in sorted(allowed | flagged):
        assert f"`{name.removeprefix('attnlib.')}`" in opening, f"{master.name}: {name}"


def test_written_answers_reach_the_instructor_only(assigned) -> None:
    """The student notebook gets the prompt and an answer cell; the model answer and the rubric
    are only in the autograder (instructor edition) notebook."""
    master, dist = assigned
    student = (dist / "student" / master.name).read_text()
    instructor = (dist / "autograder" / master.name).read_text()
    for config, cells in _questions(master):
        if not config.get("manual"):
            continue
        title = "".join(cells[0]["source"]).splitlines()[0]
        assert json.dumps(title)[1:-1] in student, f"{config['name']}: prompt not handed out"
    assert "otter_answer_cell" in student
    assert "**Model answer.**" not in student and "Rubric (" not in student
    assert "**Model answer.**" in instructor and "Rubric (" in instructor


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


def test_trusted_grader_scores_references_and_wrong_answers(assigned, tmp_path) -> None:
    master, dist = assigned
    notebook = json.loads((dist / "student" / master.name).read_text())
    for question, (function, code, _) in WRONG[master.stem].items():
        for cell in notebook["cells"]:
            if cell["cell_type"] == "code" and f"def {function}(" in "".join(cell["source"]):
                cell["source"] = code
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "reference.ipynb").write_text((dist / "autograder" / master.name).read_text())
    (folder / "wrong.ipynb").write_text(json.dumps(notebook))
    results = {r.submission: r for r in grade.grade_folder(
        next((dist / "autograder").glob("*.zip")), folder, tmp_path / "scores.csv", timeout=600)}
    reference, wrong = results["reference.ipynb"], results["wrong.ipynb"]
    assert reference.status == "graded" and len(reference.scores) >= 4, reference
    assert reference.scores == reference.max_scores, reference.message
    assert not reference.flags, reference.flags
    assert wrong.status == "graded" and not any(wrong.scores.values()), wrong.scores
    for question, (_, _, feedback) in WRONG[master.stem].items():
        assert f"{question}: " in wrong.message and feedback in wrong.message.split(
            f"{question}: ", 1)[1].split("; q", 1)[0], (question, wrong.message)


GRADING_CHECKS = ROOT / "notebooks" / "problem_sets" / "grading_checks.py"


@pytest.mark.parametrize("master", PROBLEM_SETS, ids=lambda path: path.stem)
def test_the_grader_knows_every_question(master: Path) -> None:
    """GROUPS lists each automatically checked question once; WRITTEN lists the written
    questions, in notebook order, with their points (the sheet's columns)."""
    settings = grade.guard_settings(GRADING_CHECKS.read_text())
    blocks = _questions(master)
    coded = [config["name"] for config, _ in blocks if not config.get("manual")]
    written = [(config["name"], config["points"]) for config, _ in blocks if config.get("manual")]
    listed = [q for group in settings["GROUPS"][master.stem] for q in group]
    assert sorted(listed) == sorted(coded), (listed, coded)
    assert list(settings["WRITTEN"][master.stem].items()) == written


@pytest.mark.parametrize("master", PROBLEM_SETS, ids=lambda path: path.stem)
def test_hidden_checks_call_every_answer_through_the_guard(master: Path) -> None:
    """A hidden check calls an answer function only as ``_guard["call"](answer, ...,
    allowed=(...))``: the profiler under otter, and the list of attnlib functions the trusted
    grader's sandbox keeps (scripts/library_wall.py withholds every other one)."""
    import ast

    for config, cells in _questions(master):
        if config.get("manual"):
            continue
        answers = {node.name for cell in cells if cell["cell_type"] == "code"
                   and "# BEGIN SOLUTION" in "".join(cell["source"])
                   for node in ast.parse("".join(cell["source"])).body
                   if isinstance(node, ast.FunctionDef)}
        hidden = [ast.parse("".join(c["source"])) for c in cells if c["cell_type"] == "code"
                  and "hidden: true" in "".join(c["source"])]
        assert answers and hidden, config["name"]
        for tree in hidden:
            guarded = set()
            for node in ast.walk(tree):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                        and getattr(node.func.slice, "value", "") == "call"):
                    guarded.add(id(node.args[0]))
                    keywords = {k.arg for k in node.keywords}
                    assert "forbidden" not in keywords, f"{config['name']}: use allowed="
            direct = [node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call)
                      and isinstance(node.func, ast.Name) and node.func.id in answers]
            assert not direct, f"{config['name']}: a hidden check calls {direct} directly"
            passed = [node.id for node in ast.walk(tree) if isinstance(node, ast.Name)
                      and node.id in answers]
            assert passed, f"{config['name']}: no hidden check calls an answer"
            assert all(any(id(n) in guarded for n in ast.walk(tree) if isinstance(n, ast.Name)
                           and n.id == name) for name in passed), config["name"]
