"""Grading problem set 1 the way a lecturer does, and trying to game it.

With the trusted engine of scripts/grade.py (each notebook in a bubblewrap sandbox, the checks
in the grader's process on the values the notebook's functions returned): the reference
solutions score 5, a partly wrong submission 2, the student's empty notebook 0; and every way of
gaming it we know scores 0 or is flagged with its reason, all in one CSV:

* calling attnlib's own functions: as the answer (``softmax_rows = attention.row_softmax``),
  behind a wrapper, or with the profiler switched off around the call (c3);
* patching numpy through ``np.__dict__`` and overwriting grading_checks.py through
  ``np.savetxt`` (c2); rebinding ``np.allclose``; rewriting every ``tests/*.py`` to pass (c4);
* reading the hidden tests (``../source``, the autograder folder), the reference solutions, other
  submissions or the grader's command line; writing outside its folder; a detached process that
  outlives its notebook and tries to replace the next student's notebook (f2); forking and
  allocating without bound;
* a notebook that is not JSON, has no cells, is empty, is a folder or a broken link: an error
  row with the reason, the batch goes on;
* an answer that sleeps forever: stopped at the timeout, nothing of it left running.

And the autograder zip alone (the pip section of its environment.yml and its wheel) grades a
correct and a wrong submission with ``otter run`` in a fresh virtual environment
(tests/fresh_venv.py): the untrusted path, kept for Gradescope.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
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
    assert not found.exists(), "the ../source cheat wrote outside its sandbox"
    assert any("is not a function defined in the notebook" in flag
               for flag in results["cheat_attnlib"].flags), results["cheat_attnlib"].flags
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


# --- the trusted engine against the attacks of issue 46 -------------------------------------

PARTLY_WRONG = {  # q1, q3 and q5 wrong (tests/test_problem_sets.py's mistakes): 2 of 5
    "softmax_rows": WRONG_SOFTMAX,
    "population_loss": "def population_loss(A, B, Sigma, M, noise_std):\n"
                       "    E = A @ Sigma @ B.T - M\n    return 0.5 * np.trace(E @ Sigma @ E.T)\n",
    "balance_grad": "def balance_grad(U, V, lam):\n    D = U.T @ U - V.T @ V\n"
                    "    return lam / 2 * U @ D, lam / 2 * V @ D\n",
}
REFERENCE_ANSWERS = {
    "softmax_rows": "def softmax_rows(logits):\n"
                    "    shifted = logits - logits.max(axis=1, keepdims=True)\n"
                    "    weights = np.exp(shifted)\n"
                    "    return weights / weights.sum(axis=1, keepdims=True)\n",
    "loo_weights": "def loo_weights(B, X):\n    logits = X @ B @ X.T\n"
                   "    np.fill_diagonal(logits, -np.inf)\n    return softmax_rows(logits)\n",
    "population_loss": "def population_loss(A, B, Sigma, M, noise_std):\n"
                       "    E = A @ Sigma @ B.T - M\n"
                       "    return 0.5 * np.trace(E @ Sigma @ E.T) + M.shape[0] * noise_std ** 2 / 2\n",
    "to_factor": "def to_factor(A, B, Sigma):\n    half, _ = population.spd_sqrt(Sigma)\n"
                 "    return A @ half, half @ B @ half\n",
    "balance_grad": "def balance_grad(U, V, lam):\n    D = U.T @ U - V.T @ V\n"
                    "    return lam / 2 * U @ D, -lam / 2 * V @ D\n",
}
# c2: numpy patched through np.__dict__, grading_checks.py overwritten through np.savetxt
C2 = ("_d = np.__dict__\n"
      "for _n in ('allclose', 'isclose', 'all', 'array_equal'):\n"
      "    _d[_n] = lambda *a, **k: True\n"
      "np.savetxt('grading_checks.py', ['def untampered(): pass', "
      "'def call(f, *a, **k): return f(*a)', 'def close(*a, **k): return True'], fmt='%s')\n")
# c3: attnlib's own functions, with the profiler switched off and restored around each call
C3 = {
    "softmax_rows": "import os\n_sp = os.sys.__dict__['setpro' + 'file']\n"
                    "def _quiet(f, *a, **k):\n    _prev = os.sys.getprofile(); _sp(None)\n"
                    "    try:\n        return f(*a, **k)\n    finally:\n        _sp(_prev)\n"
                    "def softmax_rows(logits):\n    return _quiet(attention.row_softmax, logits)\n",
    "loo_weights": "def loo_weights(B, X):\n"
                   "    return _quiet(attention.attention_weights, B, X, mask='loo')\n",
    "population_loss": "def population_loss(A, B, Sigma, M, noise_std):\n    return _quiet("
                       "population.population_loss, A, B, Sigma, M, noise_std=noise_std)\n",
    "to_factor": "def to_factor(A, B, Sigma):\n    return _quiet(population.to_factor, A, B, Sigma)\n",
    "balance_grad": "def balance_grad(U, V, lam):\n    return _quiet("
                    "population.factor_regularizer_and_grad, U, V, lam=lam)[1:]\n",
}
# c4: the empty notebook plus one cell that makes every tests/*.py pass
C4 = ("import glob\n"
      "for _path in glob.glob('tests/*.py') + glob.glob('../*/tests/*.py') + glob.glob('/*/*/tests/*.py'):\n"
      "    _name = os.path.basename(_path)[:-3]\n"
      "    open(_path, 'w').write('OK_FORMAT = True\\ntest = {\"name\": %r, \"points\": 1, '\n"
      "        '\"suites\": [{\"cases\": [{\"code\": \">>> True\", \"hidden\": False, '\n"
      "        '\"locked\": False}], \"scored\": True, \"setup\": \"\", \"teardown\": \"\", '\n"
      "        '\"type\": \"doctest\"}]}\\n' % _name)\n")


def _student(dist: Path) -> dict:
    return json.loads((dist / "student" / "ps1_part1_theory.ipynb").read_text())


def _with_cells(notebook: dict, *sources: str, answers: dict[str, str] | None = None) -> str:
    """``notebook`` with ``answers`` in its stubs and ``sources`` as code cells after its setup
    cell (as ``import os`` first, so the attacks need no import of their own)."""
    notebook = json.loads(json.dumps(notebook))
    for function, code in (answers or {}).items():
        notebook = _submission_from(notebook, function, code)
    setup = next(i for i, cell in enumerate(notebook["cells"]) if cell["cell_type"] == "code"
                 and "from attnlib import" in "".join(cell["source"]))
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
              "source": "import os\n" + source} for source in sources]
    notebook["cells"][setup + 1:setup + 1] = cells
    return json.dumps(notebook)


def _probe(paths: dict[str, str], label: str) -> str:
    """A cell that tries to read or write each path and raises from ``softmax_rows`` (or
    ``population_loss`` for writes) a message listing what worked, so the grader's CSV shows it."""
    return (f"import os\n_paths = {paths!r}\n_worked = []\n"
            "for _what, _path in _paths.items():\n"
            "    try:\n"
            + ("        open(_path, 'a').write('pwned')\n" if label == "WROTE" else
               "        _text = open(_path, 'rb').read()\n"
               "        if _what == 'proc cmdline' and b'autograder' not in _text and b'submissions' not in _text:\n"
               "            continue\n")
            + "        _worked.append(_what)\n"
            "    except Exception:\n        pass\n"
            + ("import glob\nfor _p in glob.glob('/proc/[0-9]*/cmdline'):\n"
               "    try:\n        _text = open(_p, 'rb').read()\n"
               "        if b'autograder' in _text or b'submissions' in _text: _worked.append(_p)\n"
               "    except Exception: pass\n" if label == "READ" else "")
            + ("def softmax_rows(logits):\n" if label == "READ" else
               "def population_loss(A, B, Sigma, M, noise_std):\n")
            + f"    raise RuntimeError('{label} ' + ','.join(_worked) + ' END')\n")


@pytest.fixture(scope="module")
def attacked(ps1, tmp_path_factory) -> dict:
    """Problem set 1 graded by the trusted engine: references, plain submissions and attacks."""
    autograder, dist = ps1
    base = tmp_path_factory.mktemp("attacks")
    folder = base / "submissions"
    folder.mkdir()
    student = _student(dist)
    outside = base / "outside"
    outside.mkdir()
    secret = outside / "secret.txt"
    secret.write_text("not for students")
    victim = folder / "zz_victim.ipynb"     # graded after every attack (sorted names)
    submissions = {
        "reference": (dist / "autograder" / "ps1_part1_theory.ipynb").read_text(),
        "own_reference": _with_cells(student, answers=REFERENCE_ANSWERS),
        "partly_wrong": _with_cells(student, answers={**REFERENCE_ANSWERS, **PARTLY_WRONG}),
        "empty": json.dumps(student),
        "c2_numpy_dict": _with_cells(student, C2, answers={
            f: f"def {f}(*args, **kwargs):\n    return np.zeros(3)\n" for f in REFERENCE_ANSWERS}),
        "c3_profiler_off": _with_cells(student, answers=C3),
        "c3_attnlib_alias": json.dumps(_submission(dist / "student" / "ps1_part1_theory.ipynb",
                                                   CHEATS["cheat_attnlib"])),
        "c3_code_copy": _with_cells(student, answers={
            "softmax_rows": "import types\nsoftmax_rows = types.FunctionType("
                            "attention.row_softmax.__code__, attention.__dict__)\n"}),
        "c4_rewrite_tests": _with_cells(student, C4),
        "read_secrets": _with_cells(student, answers={"softmax_rows": _probe({
            "hidden tests": str(dist / "autograder" / "tests" / "q1_softmax.py"),
            "autograder zip": str(autograder),
            "reference solutions": str(dist / "autograder" / "ps1_part1_theory.ipynb"),
            "master notebook": str(MASTER),
            "other submission": str(victim),
            "other submission relative": "../zz_victim.ipynb",
            "source tests": "../source/tests/q1_softmax.py",
            "outside file": str(secret),
            "root home": "/root/.bash_history",
            "proc cmdline": "/proc/1/cmdline",
        }, "READ")}),
        "write_outside": _with_cells(student, answers={**REFERENCE_ANSWERS, "population_loss": _probe({
            "other submission": str(victim),
            "outside folder": str(outside / "written.txt"),
            "repository": str(ROOT / "tests" / "written_by_a_submission.txt"),
            "tmp": "/tmp/written_by_a_submission.txt",
            "usr": "/usr/written_by_a_submission.txt",
        }, "WROTE")}),
        # f2: a double-forked, detached process that waits for the grader to move on, then
        # tries to replace the next student's notebook with the reference solutions
        "f2_detached": _with_cells(student, (
            f"_target, _marker = {str(victim)!r}, {str(outside / 'detached_alive')!r}\n"
            f"_good = {str(dist / 'autograder' / 'ps1_part1_theory.ipynb')!r}\n"
            "if os.fork() == 0:\n    os.setsid()\n    if os.fork() == 0:\n"
            "        import time\n        for _ in range(40):\n            time.sleep(0.25)\n"
            "            for _path in (_marker, '/tmp/detached_alive'):\n"
            "                try:\n                    open(_path, 'w').write(str(os.getpid()))\n"
            "                except Exception:\n                    pass\n"
            "            try:\n                open(_target, 'w').write(open(_good).read())\n"
            "            except Exception:\n                pass\n"
            "    os._exit(0)\n")),
        "resources": _with_cells(student, answers={"softmax_rows": (
            "import os\n_children = 0\nfor _ in range(200):\n    try:\n        _pid = os.fork()\n"
            "    except OSError:\n        break\n    if _pid == 0:\n"
            "        import time\n        time.sleep(30)\n        os._exit(0)\n"
            "    _children += 1\n"
            "try:\n    _big = np.ones(6 * 2 ** 30 // 8)\n    _allocated = True\n"
            "except MemoryError:\n    _allocated = False\n"
            "def softmax_rows(logits):\n"
            "    raise RuntimeError(f'FORKED {_children} ALLOCATED {_allocated} END')\n")}),
        "zz_victim": json.dumps(student),
    }
    for name, text in submissions.items():
        (folder / f"{name}.ipynb").write_text(text)
    (folder / "bad_not_json.ipynb").write_text("{this is not a notebook")
    (folder / "bad_no_cells.ipynb").write_text(json.dumps({"nbformat": 4}))
    (folder / "bad_empty_file.ipynb").write_text("")
    (folder / "bad_folder.ipynb").mkdir()
    (folder / "bad_missing.ipynb").symlink_to(base / "nowhere.ipynb")
    before = victim.read_text()
    start = time.monotonic()
    results = grade.grade_folder(autograder, folder, base / "scores.csv", timeout=120, jobs=2)
    seconds = time.monotonic() - start
    time.sleep(12)  # the detached process would have written by now, had it survived
    with (base / "scores.csv").open() as handle:
        rows = {row["submission"].removesuffix(".ipynb"): row for row in csv.DictReader(handle)}
    return {"results": {r.submission.removesuffix(".ipynb"): r for r in results}, "rows": rows,
            "victim_before": before, "victim": victim, "outside": outside, "seconds": seconds,
            "count": len(submissions) + 5}


def _total(result) -> float:
    return sum(result.scores.values())


def test_sandbox_scores_plain_submissions_as_before(attacked) -> None:
    results = attacked["results"]
    for name in ("reference", "own_reference"):
        assert results[name].status == "graded" and _total(results[name]) == 5, results[name]
        assert not results[name].flags, results[name].flags
    assert _total(results["partly_wrong"]) == 2, results["partly_wrong"]
    assert "subtract each row's maximum" in results["partly_wrong"].message
    assert _total(results["empty"]) == 0 and results["empty"].status == "graded"
    assert attacked["rows"]["reference"]["total"] == "5"
    assert attacked["rows"]["partly_wrong"]["total"] == "2"
    if os.geteuid() == 0:  # an unprivileged user id of its own, never root
        uids = {results[name].user for name in ("reference", "empty", "partly_wrong")}
        assert len(uids) == 3 and all(u.startswith("uid ") and u != "uid 0" for u in uids), uids


@pytest.mark.parametrize("attack", ["c2_numpy_dict", "c3_profiler_off", "c3_attnlib_alias",
                                    "c3_code_copy", "c4_rewrite_tests"])
def test_gaming_attacks_score_zero(attacked, attack) -> None:
    result = attacked["results"][attack]
    assert result.status == "graded" and result.scores, result
    assert _total(result) == 0, f"{attack}: {result.scores} ({result.message})"


def test_calling_attnlib_is_flagged_with_its_reason(attacked) -> None:
    results = attacked["results"]
    assert any("calls a withheld attnlib function" in flag and "row_softmax" in flag
               for flag in results["c3_profiler_off"].flags), results["c3_profiler_off"].flags
    for attack in ("c3_attnlib_alias", "c3_code_copy"):
        assert any("softmax_rows is not a function defined in the notebook" in flag
                   for flag in results[attack].flags), (attack, results[attack].flags)


def _reported(result, label: str) -> list[str]:
    """What an attack's probe reported from inside its sandbox (its error message)."""
    text = result.message
    assert f"{label} " in text, f"the probe did not report: {text}"
    return [item for item in text.split(f"{label} ", 1)[1].split(" END", 1)[0].split(",")
            if item]


def test_a_submission_reads_no_tests_solutions_or_other_submissions(attacked) -> None:
    read = _reported(attacked["results"]["read_secrets"], "READ")
    assert read == [], f"a sandboxed notebook could read: {read}"
    assert _total(attacked["results"]["read_secrets"]) == 0


def test_a_submission_writes_nowhere_outside_its_sandbox(attacked) -> None:
    result = attacked["results"]["write_outside"]
    wrote = [item for item in _reported(result, "WROTE") if item != "tmp"]  # its own /tmp
    assert wrote == [], f"a sandboxed notebook could write to: {wrote}"
    assert _total(result) == 4, result.scores     # population_loss is the probe
    assert not (attacked["outside"] / "written.txt").exists()
    assert not (ROOT / "tests" / "written_by_a_submission.txt").exists()
    assert not Path("/tmp/written_by_a_submission.txt").exists()


def test_no_process_outlives_its_notebook(attacked) -> None:
    """f2: the detached process is killed with its sandbox; the next notebook is untouched and
    scores as an empty notebook."""
    assert attacked["victim"].read_text() == attacked["victim_before"]
    assert _total(attacked["results"]["zz_victim"]) == 0, attacked["results"]["zz_victim"]
    assert not (attacked["outside"] / "detached_alive").exists()
    assert not Path("/tmp/detached_alive").exists()
    if os.geteuid() == 0:
        sandbox_ids = {int(r.user.split()[1]) for r in attacked["results"].values()
                       if r.user.startswith("uid ")}
        alive = []
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                uid = int(next(line for line in status.read_text().splitlines()
                               if line.startswith("Uid:")).split()[1])
            except (OSError, StopIteration):
                continue
            if uid in sandbox_ids:
                alive.append(status.parent.name)
        assert not alive, f"processes of graded notebooks still run: {alive}"


def test_processes_and_memory_are_limited(attacked) -> None:
    report = attacked["results"]["resources"].message
    forked = int(report.split("FORKED ", 1)[1].split()[0])
    assert forked < 100, f"a notebook started {forked} processes"
    assert "ALLOCATED False" in report, report


def test_bad_notebooks_get_zero_with_a_reason(attacked) -> None:
    rows = attacked["rows"]
    for name in ("bad_not_json", "bad_no_cells", "bad_empty_file", "bad_folder", "bad_missing"):
        assert rows[name]["status"] == "error" and rows[name]["total"] == "0", rows[name]
        assert "not a readable notebook" in rows[name]["message"], rows[name]
    assert len(rows) == attacked["count"] and rows["reference"]["total"] == "5"  # batch went on


def test_the_checks_never_enter_the_sandbox(ps1, tmp_path) -> None:
    """What a sandbox is given: the notebook, the harness and the checks' inputs; no check code,
    no expected value, no reference solution."""
    autograder, _ = ps1
    grader = grade.Grader(autograder)
    try:
        for _, attnlib_copy, calls in grader.groups:
            text = calls.decode("latin-1")
            for question in grader.assignment.questions.values():
                for case in question.cases:
                    for line in case.splitlines():
                        if "assert" in line:
                            assert line.strip() not in text
            for withheld in ("row_softmax", "attention_weights", "to_factor"):
                source = next(attnlib_copy.rglob("attention.py")).read_text() + next(
                    attnlib_copy.rglob("population.py")).read_text()
                assert f"def {withheld}(" in source and "withheld while grading" in source
            assert "BEGIN SOLUTION" not in text and "shifted = logits" not in text
    finally:
        grader.close()


def test_bubblewrap_is_available() -> None:
    """The trusted engine needs bwrap; scripts/test.sh installs it (Debian package bubblewrap)."""
    assert shutil.which("bwrap"), ("bubblewrap is missing: apt-get install bubblewrap "
                                   "(scripts/test.sh installs it)")
