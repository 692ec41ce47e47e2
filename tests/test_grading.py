"""Grading the problem sets the way a lecturer does, and trying to game it.

With the trusted engine of scripts/grade.py (each notebook in a bubblewrap sandbox, the checks
in the grader's process on the values the notebook's functions returned): the reference
solutions score 5, a partly wrong submission 2, the student's empty notebook 0 (and on every
problem set the reference full marks, a partly wrong one the questions it got right, the empty
one 0, none of them flagged); and every way of gaming it we know scores 0 or is flagged with its
reason, all in one sheet:

* a library twin: an attnlib function, public or private, that computes a question's answer
  (``TWINS``: each is shown to pass its question's hidden checks with the full library, to be
  withheld in its question's sandbox, and, as a submission, to score 0 and be flagged, on all
  four problem sets); an answer-trusting shortcut (``SHORTCUTS``: a standard error of one's
  own, the prompt's formula, ``1/sqrt(n)``): scores 0, flagged; no other function the sandbox
  leaves callable computes an answer from the answer's own inputs;
* writing on the harness's pipe: malformed, oversized, deeply nested and formula-bearing
  records, and file names that are spreadsheet formulas: every row is in the sheet, flagged,
  and no cell starts with a formula character or exceeds its length (with one and two jobs);
* the grader failing on one notebook: that notebook's error row; the grader itself stopping
  (an exception, Ctrl-C): the rows graded so far stay in the sheet, and no stage folder or
  sandbox process is left behind;
* the system calls Docker refuses (io_uring, perf_event_open, keyrings, bpf, userfaultfd,
  kexec, mount, unshare, ptrace, ...): EPERM inside the sandbox (its seccomp filter);
* a machine where bwrap is missing or cannot create namespaces: one line and exit status 1
  before anything is graded;

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

The sheet has the written questions as columns with the automatic and written points apart;
the marks file the lecturer fills in merges into it, and each submission's written answers
become a page to read (and a PDF); the teaching guide's grading commands parse.

And the autograder zip alone (the pip section of its environment.yml and its wheel) grades a
correct and a wrong submission with ``otter run`` in a fresh virtual environment
(tests/fresh_venv.py): the untrusted path, kept for Gradescope.
"""

from __future__ import annotations

import csv
import dataclasses
import importlib.util
import json
import os
import pickle
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator
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
grade_sandbox, grade_records = sys.modules["grade_sandbox"], sys.modules["grade_records"]
library_wall, seccomp_filter = sys.modules["library_wall"], sys.modules["seccomp_filter"]
written_answers = sys.modules["written_answers"]
PROBLEM_SETS = sorted(path.stem for path in (ROOT / "notebooks" / "problem_sets").glob("ps*.ipynb"))


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
def assigned(tmp_path_factory):
    """``assigned(stem)``: (autograder zip, output of editions.assign) of a problem set, built
    once (``otter assign`` without running the references: the grader runs them, and
    tests/test_problem_sets.py grades them with otter run)."""
    built: dict[str, tuple[Path, Path]] = {}
    wheel: list[Path] = []

    def get(stem: str) -> tuple[Path, Path]:
        if stem not in built:
            if not wheel:
                wheel.append(editions.build_wheel(tmp_path_factory.mktemp("wheel")))
            dist = editions.assign(ROOT / "notebooks" / "problem_sets" / f"{stem}.ipynb",
                                   tmp_path_factory.mktemp(stem) / "dist", wheel=wheel[0],
                                   run_tests=False)
            built[stem] = next((dist / "autograder").glob("*.zip")), dist
        return built[stem]

    return get


@pytest.fixture(scope="session")
def ps1(assigned) -> tuple[Path, Path]:
    """(autograder zip, output of editions.assign) of problem set 1."""
    return assigned("ps1_part1_theory")


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


# A written answer that tries to run script in the lecturer's browser, with a pasted picture
# (a 1 x 1 PNG) as a student might include a photographed derivation.
ALICE = ("(a) $\\mathbb E[x e^{u \\cdot x}] = \\Sigma u\\, e^{u^\\top \\Sigma u / 2}$: "
         "ALICE'S DERIVATION.\n\n<script>alert('x')</script> <img src=x onerror=alert(1)>\n\n"
         "![photo](attachment:photo.png)\n")
PNG = ("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")


def _with_written_answer(notebook: dict, text: str) -> dict:
    """``notebook`` with ``text`` (and the picture ``photo.png``) in its written answer cell."""
    notebook = json.loads(json.dumps(notebook))
    [cell] = [c for c in notebook["cells"] if c["cell_type"] == "markdown"
              and "otter_answer_cell" in c.get("metadata", {}).get("tags", [])]
    cell["source"] = text
    cell["attachments"] = {"photo.png": {"image/png": PNG}}
    return notebook


@pytest.fixture(scope="module")
def attacked(ps1, tmp_path_factory) -> Iterator[dict]:
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
    (folder / "alice.ipynb").write_text(json.dumps(_with_written_answer(student, ALICE)))
    before = victim.read_text()
    start = time.monotonic()
    scratch = _scratch()
    with pytest.MonkeyPatch.context() as patch:     # the grader's stage folders land here
        patch.setattr(tempfile, "tempdir", str(scratch))
        results = grade.grade_folder(autograder, folder, base / "scores.csv", timeout=120,
                                     jobs=2)
    seconds = time.monotonic() - start
    time.sleep(12)  # the detached process would have written by now, had it survived
    with (base / "scores.csv").open() as handle:
        rows = {row["submission"].removesuffix(".ipynb"): row for row in csv.DictReader(handle)}
    yield {"results": {r.submission.removesuffix(".ipynb"): r for r in results}, "rows": rows,
           "victim_before": before, "victim": victim, "outside": outside, "seconds": seconds,
           "count": len(submissions) + 6, "base": base, "left": list(scratch.iterdir()),
           "autograder": autograder}
    shutil.rmtree(scratch, ignore_errors=True)


def _scratch() -> Path:
    """An empty folder for the grader's temporary files (its stage folders), under /tmp and
    readable by the sandboxes' own user ids, as the system's temporary folder is (pytest's
    folders are private to the user running the tests)."""
    folder = Path(tempfile.mkdtemp(prefix="grading-test-", dir="/tmp"))
    folder.chmod(0o755)
    return folder


@pytest.fixture
def scratch():
    folder = _scratch()
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


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
    assert any(flag.startswith("called withheld attnlib.attention.row_softmax") and "q1_softmax"
               in flag for flag in results["c3_profiler_off"].flags), results["c3_profiler_off"].flags
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
        for _, attnlib_copy, calls, _ in grader.groups:
            text = calls.decode("latin-1")
            for question in grader.assignment.questions.values():
                for case in question.cases:
                    for line in case.splitlines():
                        if "assert" in line:
                            assert line.strip() not in text
            source = next(attnlib_copy.rglob("attention.py")).read_text() + next(
                attnlib_copy.rglob("population.py")).read_text()
            for withheld in ("attention.row_softmax", "attention._softmax_rows",
                             "attention.attention_weights", "population.to_factor",
                             "population.linear_excess_risk"):
                assert f"def {withheld.split('.')[1]}(" in source
                assert f"_w.withheld('attnlib.{withheld}')" in source, withheld
            assert "_w.withheld('attnlib.population.spd_sqrt')" not in source  # q4 allows it
            assert "BEGIN SOLUTION" not in text and "shifted = logits" not in text
    finally:
        grader.close()


def test_bubblewrap_is_available() -> None:
    """The trusted engine needs bwrap; scripts/test.sh installs it (Debian package bubblewrap)."""
    assert shutil.which("bwrap"), ("bubblewrap is missing: apt-get install bubblewrap "
                                   "(scripts/test.sh installs it)")


def test_no_stage_folder_remains_after_a_batch(attacked) -> None:
    assert attacked["left"] == [], attacked["left"]


# --- the sheet: automatic and written points, the marks to fill in, the answers to read -------

def _sheet(path: Path) -> tuple[list[str], dict[str, dict[str, str]]]:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
        handle.seek(0)
        header = next(csv.reader(handle))
    return header, {row["submission"].removesuffix(".ipynb"): row for row in rows}


def test_the_sheet_shows_automatic_and_written_points(attacked) -> None:
    header, rows = _sheet(attacked["base"] / "scores.csv")
    assert header[:9] == ["submission", "status", "automatic", "automatic_max", "written",
                          "written_max", "total", "max", "unmarked"], header
    assert "q6_written_tilting" in header and "q5_balance_gradient" in header
    reference = rows["reference"]
    assert (reference["automatic"], reference["automatic_max"], reference["written_max"],
            reference["max"]) == ("5", "5", "3", "8"), reference
    assert reference["written"] == "" and reference["unmarked"] == "q6_written_tilting"
    assert reference["q6_written_tilting"] == "" and reference["total"] == "5"
    assert list(rows) == sorted(rows), "the finished sheet is sorted by submission"
    marks = attacked["base"] / "scores-written.csv"
    with marks.open(newline="") as handle:
        marked = list(csv.DictReader(handle))
    assert [m["submission"] for m in marked] == [r["submission"] for r in rows.values()]
    assert all(m["q6_written_tilting"] == "" for m in marked)


def test_written_marks_merge_into_the_sheet(attacked, tmp_path, capsys) -> None:
    sheet, marks = tmp_path / "scores.csv", tmp_path / "scores-written.csv"
    shutil.copy(attacked["base"] / "scores.csv", sheet)
    shutil.copy(attacked["base"] / "scores-written.csv", marks)
    text = marks.read_text()
    text = re.sub(r"^reference\.ipynb,,", "reference.ipynb,2.5,", text, flags=re.M)
    text = re.sub(r"^alice\.ipynb,,", "alice.ipynb,3,", text, flags=re.M)
    marks.write_text(text)
    assert grade.main([str(attacked["autograder"]), "--merge", "--out", str(sheet)]) == 0
    _, rows = _sheet(sheet)
    assert (rows["reference"]["written"], rows["reference"]["total"],
            rows["reference"]["unmarked"]) == ("2.5", "7.5", ""), rows["reference"]
    assert (rows["alice"]["written"], rows["alice"]["total"]) == ("3", "3"), rows["alice"]
    assert rows["empty"]["written"] == "" and rows["empty"]["unmarked"] == "q6_written_tilting"
    assert rows["partly_wrong"]["automatic"] == "2" and rows["partly_wrong"]["total"] == "2"
    # a mark above the question's points is refused with the file, line and column
    marks.write_text(text.replace("alice.ipynb,3,", "alice.ipynb,4,"))
    capsys.readouterr()
    assert grade.main([str(attacked["autograder"]), "--merge", "--out", str(sheet)]) == 1
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "scores-written.csv, line" in error, error
    assert "q6_written_tilting: expected a mark from 0 to 3" in error, error
    assert _sheet(sheet)[1]["alice"]["written"] == "3", "a refused merge leaves the sheet alone"


def test_grading_again_keeps_the_marks(attacked, tmp_path) -> None:
    """The marks file is never overwritten: a second run appends new submissions only."""
    marks = tmp_path / "marks.csv"
    marks.write_text("submission,q6_written_tilting,comment\nreference.ipynb,1.5,fine\n")
    written = {"q6_written_tilting": 3.0}
    found = written_answers.update_marks(marks, ["reference.ipynb", "new.ipynb"], written)
    assert found == {"reference.ipynb": {"q6_written_tilting": 1.5},
                     "new.ipynb": {"q6_written_tilting": None}}
    assert marks.read_text().startswith("submission,q6_written_tilting,comment\n"
                                        "reference.ipynb,1.5,fine\n")
    marks.write_text("submission,q7_other\nreference.ipynb,1\n")
    with pytest.raises(ValueError, match="must name the columns"):
        written_answers.read_marks(marks, written)


def test_written_answers_are_pages_to_read(attacked) -> None:
    pages = attacked["base"] / "scores-written"
    names = sorted(path.name for path in pages.iterdir())
    assert "alice.html" in names and "reference.html" in names and "bad_not_json.html" in names
    page = (pages / "alice.html").read_text()
    assert "ALICE'S DERIVATION" in page.replace("&#x27;", "'")
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert f"data:image/png;base64,{PNG}" in page
    assert "Content-Security-Policy" in page and "default-src 'none'" in page
    assert "6. Written: why the layer becomes linear" in page and "Rubric" in page
    assert "Not answered." in (pages / "empty.html").read_text()
    assert "could not be read" in (pages / "bad_not_json.html").read_text()


@pytest.mark.skipif(not (os.environ.get("ATTNBOOK_CHROMIUM") or shutil.which("chromium")),
                    reason="Chromium is not installed")
def test_written_answers_print_to_pdf(attacked, tmp_path) -> None:
    page = tmp_path / "alice.html"
    shutil.copy(attacked["base"] / "scores-written" / "alice.html", page)
    [pdf] = written_answers.print_pdfs([page])
    assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 1000


def test_the_guides_grading_commands_parse() -> None:
    """Every scripts/grade.py command of the teaching guide's grading section is a valid
    command line, and the section grades, merges the marks and points at the answers."""
    guide = (ROOT / "book" / "teaching_guide.md").read_text()
    section = guide.split("### Grading\n", 1)[1].split("\n### ", 1)[0]
    joined = re.findall(r"\.venv/bin/python scripts/grade\.py(?:\\\n|[^\n])*", section)
    assert len(joined) >= 2, "the guide's grading section shows no grade.py commands"
    modes = set()
    for command in joined:
        argv = shlex.split(command.replace("\\\n", " "))[2:]
        args = grade.parse_arguments(argv)
        modes.add("merge" if args.merge else "grade")
    assert modes == {"grade", "merge"}, modes
    for text in ("-written.csv", "-written/", "--pdf", "automatic", "written"):
        assert text in section, f"the grading section does not mention {text!r}"


# --- what the sandbox reports: every record checked ------------------------------------------

CALLS = {"q1_softmax/softmax_rows/1", "q2_loo_weights/loo_weights/1"}
GOOD = '{"id": "q1_softmax/softmax_rows/1", "value": 1.5}'
BAD_LINES = {
    "not json": "{this is not json",
    "a list": "[1, 2, 3]",
    "wrong type": '{"id": "q2_loo_weights/loo_weights/1", "error": 5}',
    "unknown keys": '{"id": "q2_loo_weights/loo_weights/1", "value": 1, "extra": 2}',
    "unknown call": '{"id": "q9/nothing/1", "value": 1}',
    "nested deeply": "[" * 200_000 + "]" * 200_000,
    "nested in a value": '{"id": "q2_loo_weights/loo_weights/1", "value": '
                         + '{"__tuple__": [' * 30 + "1" + "]}" * 30 + "}",
    "oversized string": '{"id": "q2_loo_weights/loo_weights/1", "value": "' + "x" * 20_000 + '"}',
    "oversized array": '{"id": "q2_loo_weights/loo_weights/1", "value": {"__nd__": "<f8", '
                       '"shape": [1000000, 1000000], "scalar": false, "data": "AAAAAAAAAAA="}}',
    "array of objects": '{"id": "q2_loo_weights/loo_weights/1", "value": {"__nd__": "|O", '
                        '"shape": [1], "scalar": false, "data": "AAAAAAAAAAA="}}',
    "short array data": '{"id": "q2_loo_weights/loo_weights/1", "value": {"__nd__": "<f8", '
                        '"shape": [2], "scalar": false, "data": "AAAAAAAAAAA="}}',
    "bad base64": '{"id": "q2_loo_weights/loo_weights/1", "value": {"__nd__": "<f8", '
                  '"shape": [1], "scalar": false, "data": "!!!!!!!!!!!="}}',
    "cells of the wrong type": '{"cells": "3", "cell_errors": []}',
    "formula in a blocked call": '{"blocked": ["=1+1"], "during": "x"}',
}


@pytest.mark.parametrize("label", BAD_LINES)
def test_a_malformed_record_is_dropped_and_described(label) -> None:
    raw = "\n".join([GOOD, BAD_LINES[label], '{"done": true}']).encode()
    records = grade_records.parse_records(raw, CALLS)
    assert len(records.problems) == 1, (label, records.problems)
    assert records.answers == {"q1_softmax/softmax_rows/1": {"value": 1.5}}, records.answers
    assert records.done


def test_a_second_result_for_one_call_fails_that_call() -> None:
    raw = "\n".join([GOOD, '{"id": "q1_softmax/softmax_rows/1", "value": 2.5}']).encode()
    records = grade_records.parse_records(raw, CALLS)
    assert "error" in records.answers["q1_softmax/softmax_rows/1"], records.answers
    assert records.problems == ["line 2: a second result for call q1_softmax/softmax_rows/1"]


def test_a_forged_unreadable_notebook_record_is_dropped() -> None:
    raw = b'{"notebook": "=HYPERLINK(1)"}\n{"cells": 3, "cell_errors": []}\n{"done": true}'
    records = grade_records.parse_records(raw, CALLS)
    assert records.notebook == "" and len(records.problems) == 1, records


def test_an_encoded_answer_round_trips() -> None:
    import numpy as np

    value = {"__tuple__": [{"__nd__": "<f8", "shape": [2], "scalar": False,
                            "data": "AAAAAAAA8D8AAAAAAAAAQA=="}, {"__dict__": [["k", [1, None]]]}]}
    decoded = grade_records.decode_value(value)
    assert isinstance(decoded, tuple) and decoded[1] == {"k": [1, None]}
    assert np.array_equal(decoded[0], [1.0, 2.0]) and decoded[0].dtype == np.float64


FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\uff1d", "\uff0b", "\uff0d", "\uff20")


@pytest.mark.parametrize("text", ["=1+1", "+SUM(A1)", "-2+3", "@cmd", "\t=x", "\r=x", " =x",
                                  "\uff1dx", "\u202e=x", "ok\n=x"])
def test_sheet_text_never_starts_a_formula(text) -> None:
    cell = grade.cell_text(text * 200, 100)
    assert not cell.startswith(FORMULA_START) and len(cell) <= 100, cell
    assert cell.isprintable(), cell


PIPE = "import sys, atexit\n_out = sys.modules['__main__'].out\n"
PIPE_ATTACKS = {   # a cell writing on the grader's pipe (at the end, after the harness)
    "pipe_wrong_type": PIPE + "atexit.register(lambda: (_out.write('{\"id\": "
                       "\"q1_softmax/softmax_rows/1\", \"error\": 5, \"withheld\": true}\\n'), "
                       "_out.flush()))\n",
    "pipe_nested": PIPE + "atexit.register(lambda: (_out.write('[' * 200000 + ']' * 200000 + "
                   "'\\n'), _out.flush()))\n",
    "pipe_oversized": PIPE + "atexit.register(lambda: (_out.write('x' * 3000000 + '\\n' + "
                      "'{\"id\": \"q2_loo_weights/loo_weights/1\", \"value\": {\"__nd__\": \"<f8\", "
                      "\"shape\": [1000000000000], \"scalar\": false, \"data\": \"\"}}\\n'), "
                      "_out.flush()))\n",
    "pipe_formula": PIPE + "_out.write('{\"notebook\": \"=HYPERLINK(\\\\\"http://x\\\\\","
                    "\\\\\"y\\\\\")\"}\\n'); _out.flush()\n"
                    "raise RuntimeError('=cmd|\\' /C calc\\'!A0 ' + 'x' * 5000)\n",
}
FORMULA_NAMES = ("=HYPERLINK(1,2)", "+1", "-1", "@SUM(1)", "\tx")


def _cells_are_safe(path: Path) -> list[str]:
    """The cells of the sheet at ``path`` that start with a formula character or are too long."""
    with path.open(newline="") as handle:
        return [cell for row in csv.reader(handle) for cell in row
                if cell.startswith(FORMULA_START) or len(cell) > 1000]


@pytest.mark.parametrize("jobs", [1, 2])
def test_records_on_the_pipe_never_stop_the_batch(ps1, tmp_path, scratch, jobs) -> None:
    autograder, dist = ps1
    student = _student(dist)
    folder = tmp_path / "submissions"
    folder.mkdir()
    for name, source in PIPE_ATTACKS.items():
        (folder / f"{name}.ipynb").write_text(_with_cells(student, source))
    for name in FORMULA_NAMES:
        (folder / f"{name}.ipynb").write_text(json.dumps(student))
    (folder / "reference.ipynb").write_text(
        (dist / "autograder" / "ps1_part1_theory.ipynb").read_text())
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "grade.py"), str(autograder),
                           str(folder), "--out", str(tmp_path / "scores.csv"), "--timeout", "120",
                           "--jobs", str(jobs)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "TMPDIR": str(scratch)})
    assert done.returncode == 0, done.stderr[-3000:]
    _, rows = _sheet(tmp_path / "scores.csv")
    assert len(rows) == len(PIPE_ATTACKS) + len(FORMULA_NAMES) + 1, sorted(rows)
    assert rows["reference"]["total"] == "5", rows["reference"]
    for name in ("pipe_wrong_type", "pipe_nested", "pipe_oversized", "pipe_formula"):
        assert rows[name]["status"] == "graded", rows[name]
        assert "malformed or unexpected record" in rows[name]["flags"], rows[name]
    assert _cells_are_safe(tmp_path / "scores.csv") == []
    assert list(scratch.iterdir()) == []


# --- the grader failing, or stopped, keeps what it graded -----------------------------------

def _three_empty(dist: Path, folder: Path) -> None:
    folder.mkdir()
    for name in ("a_first", "b_second", "c_third"):
        (folder / f"{name}.ipynb").write_text(json.dumps(_student(dist)))


def test_a_failure_of_the_grader_is_that_notebooks_row(ps1, tmp_path, monkeypatch) -> None:
    autograder, dist = ps1
    _three_empty(dist, tmp_path / "submissions")
    original = grade.Grader._grade

    def failing(self, submission, start):
        if submission.name == "b_second.ipynb":
            raise RuntimeError("the grader broke here")
        return original(self, submission, start)

    monkeypatch.setattr(grade.Grader, "_grade", failing)
    results = {r.submission: r for r in grade.grade_folder(
        autograder, tmp_path / "submissions", tmp_path / "scores.csv", timeout=120, jobs=2)}
    broken = results["b_second.ipynb"]
    assert broken.status == "error" and "b_second.ipynb" in broken.message, broken
    assert "RuntimeError: the grader broke here" in broken.message, broken
    assert {results[n].status for n in ("a_first.ipynb", "c_third.ipynb")} == {"graded"}
    assert len(_sheet(tmp_path / "scores.csv")[1]) == 3


def test_a_crash_keeps_the_rows_graded_so_far(ps1, tmp_path, scratch, monkeypatch) -> None:
    autograder, dist = ps1
    _three_empty(dist, tmp_path / "submissions")
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    original = grade.Grader._grade

    def crashing(self, submission, start):
        if submission.name == "c_third.ipynb":
            raise KeyboardInterrupt   # not an error of one notebook: the grader itself stops
        return original(self, submission, start)

    monkeypatch.setattr(grade.Grader, "_grade", crashing)
    with pytest.raises(KeyboardInterrupt):
        grade.grade_folder(autograder, tmp_path / "submissions", tmp_path / "scores.csv",
                           timeout=120, jobs=1)
    header, rows = _sheet(tmp_path / "scores.csv")
    assert sorted(rows) == ["a_first", "b_second"] and header[0] == "submission", rows
    assert list(scratch.iterdir()) == [], "a stage folder was left behind"


def test_ctrl_c_stops_the_batch_and_keeps_its_rows(ps1, tmp_path, scratch) -> None:
    autograder, dist = ps1
    folder = tmp_path / "submissions"
    _three_empty(dist, folder)
    (folder / "c_third.ipynb").write_text(_with_cells(_student(dist), "import time\n"
                                                                     "time.sleep(3600)\n"))
    sheet = tmp_path / "scores.csv"
    process = subprocess.Popen(
        [sys.executable, str(ROOT / "scripts" / "grade.py"), str(autograder), str(folder),
         "--out", str(sheet), "--timeout", "900"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env={**os.environ, "TMPDIR": str(scratch)},
        start_new_session=True,
        # SIGINT back to its default: a test run started in the background ignores it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and process.poll() is None and (
                not sheet.exists() or len(sheet.read_text().splitlines()) < 3):
            time.sleep(0.2)
        time.sleep(1.0)                               # the hanging notebook is running now
        process.send_signal(signal.SIGINT)
        _, error = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, error
    assert error.strip().count("\n") == 0 and "rows graded so far" in error, error
    assert sorted(_sheet(sheet)[1]) == ["a_first", "b_second"]
    assert list(scratch.iterdir()) == [], "a stage folder was left behind"
    leftover = subprocess.run(["pgrep", "-f", str(scratch)], capture_output=True, text=True)
    assert not leftover.stdout.strip(), "a sandbox outlived the stopped grader"


# --- the start-up check ------------------------------------------------------------------------

FAKE_BWRAP = ("#!/bin/sh\necho 'bwrap: No permissions to create new namespace, likely because "
              "the kernel does not allow non-privileged user namespaces.' >&2\nexit 1\n")


@pytest.mark.parametrize("host", ["no user namespaces", "no bubblewrap"])
def test_a_host_without_the_sandbox_stops_at_once_with_one_line(ps1, tmp_path, scratch,
                                                                 host) -> None:
    autograder, dist = ps1
    folder = tmp_path / "submissions"
    _three_empty(dist, folder)
    tools = tmp_path / "bin"
    tools.mkdir()
    if host == "no user namespaces":           # bwrap is there but refused by the kernel
        (tools / "bwrap").write_text(FAKE_BWRAP)
        (tools / "bwrap").chmod(0o755)
        path = f"{tools}:{os.environ['PATH']}"
    else:                                      # only what the grader needs besides bwrap
        for tool in ("prlimit", "unshare", "setpriv", "sh"):
            if shutil.which(tool):
                (tools / tool).symlink_to(shutil.which(tool))
        path = str(tools)
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "grade.py"), str(autograder),
                           str(folder), "--out", str(tmp_path / "scores.csv")],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": path, "TMPDIR": str(scratch)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("grade.py: error: "), done.stderr
    assert ("cannot start on this machine" if host == "no user namespaces" else
            "needs bubblewrap") in done.stderr, done.stderr
    assert not (tmp_path / "scores.csv").exists() and done.stdout == ""
    assert list(scratch.iterdir()) == [], "a failed start left a stage folder"


# --- the seccomp filter -----------------------------------------------------------------------

def _header_numbers(path: Path, prefix: str) -> dict[str, int]:
    return {name: int(number) for name, number in
            re.findall(rf"#define {prefix}(\w+)\s+(\d+)\b", path.read_text())}


@pytest.mark.parametrize("arch,header", [
    ("x86_64", "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
    ("aarch64", "/usr/include/asm-generic/unistd.h")])
def test_the_filters_system_call_numbers_are_the_kernels(arch, header) -> None:
    if not Path(header).exists():
        pytest.skip(f"{header} is not installed (linux-libc-dev)")
    numbers = _header_numbers(Path(header), "__NR_" if arch == "x86_64" else "__NR(?:3264)?_")
    column = 0 if arch == "x86_64" else 1
    table = {**seccomp_filter.DENIED, "clone": seccomp_filter.CLONE,
             "clone3": seccomp_filter.CLONE3}
    for name, pair in table.items():
        if pair[column] is None:
            assert name not in numbers, f"{name} exists on {arch}: {numbers[name]}"
        else:
            assert numbers.get(name) == pair[column], (arch, name, numbers.get(name), pair)
    program = seccomp_filter.program(arch)
    assert len(program) % 8 == 0 and 60 < len(program) // 8 < 256


SYSCALL_PROBE = r'''
import ctypes, errno, json, os, sys
import numpy
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(number, *args):
    ctypes.set_errno(0)
    result = libc.syscall(ctypes.c_long(number), *[ctypes.c_long(a) for a in args])
    return errno.errorcode.get(ctypes.get_errno(), "OK") if result == -1 else "OK"
numbers, clone = json.loads(sys.argv[1]), int(sys.argv[2])
buffer = ctypes.create_string_buffer(256)
report = {name: call(number, 0, ctypes.addressof(buffer), 0, 0, 0)
          for name, number in numbers.items()}
report["clone(CLONE_NEWUSER)"] = call(clone, 0x10000000 | 17, 0, 0, 0, 0)  # | SIGCHLD
pid = os.fork()
if pid == 0:
    os._exit(7)
report["fork"] = os.waitpid(pid, 0)[1] >> 8
report["numpy"] = float(numpy.arange(4.0).sum())
print(json.dumps(report))
'''
BLOCKED = ("io_uring_setup", "io_uring_enter", "io_uring_register", "perf_event_open", "keyctl",
           "add_key", "request_key", "bpf", "userfaultfd", "kexec_load", "kexec_file_load",
           "mount", "umount2", "unshare", "setns", "ptrace", "process_vm_readv",
           "init_module", "finit_module", "swapon", "reboot", "acct", "pivot_root")


def test_blocked_system_calls_fail_inside_the_sandbox() -> None:
    arch = seccomp_filter.machine()
    column = 0 if arch == "x86_64" else 1
    numbers = {name: seccomp_filter.DENIED[name][column] for name in BLOCKED}
    numbers["clone3"] = seccomp_filter.CLONE3[column]
    stage = Path(tempfile.mkdtemp(prefix="grade-stage-", dir="/tmp"))   # where the grader's go
    try:
        stage.chmod(0o755)
        box = grade_sandbox.make_sandbox(stage, 4096)
        status, out, err, code, _ = grade_sandbox.run_sandboxed(
            box, [], [box.python, "-c", SYSCALL_PROBE, json.dumps(numbers),
                      str(seccomp_filter.CLONE[column])], 120)
    finally:
        shutil.rmtree(stage)
    assert status == "done" and code == 0, err
    report = json.loads(out)
    assert {name: report[name] for name in BLOCKED} == dict.fromkeys(BLOCKED, "EPERM"), report
    assert report["clone3"] == "ENOSYS" and report["clone(CLONE_NEWUSER)"] == "EPERM", report
    assert report["fork"] == 7 and report["numpy"] == 6.0, report


# --- library twins and answer-trusting shortcuts, on every problem set ----------------------

# problem set -> (question, answer function, attnlib function computing the answer, code of a
# submission answering with it). Each passes its question's checks with the full library
# (test_twins_compute_the_answers): the sandbox must withhold it.
TWINS = {
    "ps1_part1_theory": [
        ("q1_softmax", "softmax_rows", "attnlib.attention.row_softmax",
         "softmax_rows = attention.row_softmax\n"),
        ("q1_softmax", "softmax_rows", "attnlib.attention._softmax_rows",
         "def softmax_rows(logits):\n    logits = np.asarray(logits, dtype=float)\n"
         "    e, z = attention._softmax_rows(logits, np.eye(logits.shape[1]),\n"
         "                                   np.empty_like(logits), None, 1e300)\n"
         "    return e / z[:, None]\n"),
        ("q1_softmax", "softmax_rows", "attnlib.attention.attention_weights",
         "def softmax_rows(logits):\n    n, m = logits.shape\n    k = max(n, m)\n"
         "    square = np.full((k, k), -1e6)\n    square[:n, :m] = logits\n"
         "    return attention.attention_weights(square, np.eye(k), mask='all')[:n, :m] / 1.0\n"),
        ("q2_loo_weights", "loo_weights", "attnlib.attention.attention_weights",
         "def loo_weights(B, X):\n    return attention.attention_weights(B, X, mask='loo')\n"),
        ("q2_loo_weights", "loo_weights", "attnlib.attention._softmax_rows",
         "def loo_weights(B, X):\n    n = len(X)\n"
         "    e, z = attention._softmax_rows(X @ B, X.T.copy(), np.empty((n, n)), np.arange(n),\n"
         "                                   1e300)\n    return e / z[:, None]\n"),
        ("q3_population_loss", "population_loss", "attnlib.population.population_loss",
         "def population_loss(A, B, Sigma, M, noise_std):\n"
         "    return population.population_loss(A, B, Sigma, M, noise_std=noise_std)\n"),
        ("q3_population_loss", "population_loss", "attnlib.population.population_loss_and_grad",
         "def population_loss(A, B, Sigma, M, noise_std):\n    return population."
         "population_loss_and_grad(A, B, Sigma, M, noise_std=noise_std)[0]\n"),
        ("q3_population_loss", "population_loss", "attnlib.population.objective_and_grad",
         "def population_loss(A, B, Sigma, M, noise_std):\n    return population."
         "objective_and_grad(A, B, Sigma, M, lam=0.0, noise_std=noise_std)[0]\n"),
        ("q3_population_loss", "population_loss", "attnlib.population._fit_and_weighted_error",
         "def population_loss(A, B, Sigma, M, noise_std):\n    return population."
         "_fit_and_weighted_error(A, B, Sigma, M)[0] + M.shape[0] * noise_std ** 2 / 2\n"),
        ("q3_population_loss", "population_loss", "attnlib.population.linear_excess_risk",
         "def population_loss(A, B, Sigma, M, noise_std):\n    return population."
         "linear_excess_risk(A @ Sigma @ B.T, Sigma, M) + M.shape[0] * noise_std ** 2 / 2\n"),
        ("q3_population_loss", "population_loss", "attnlib.population.factor_loss_and_grad",
         "def population_loss(A, B, Sigma, M, noise_std):\n"
         "    half = population.spd_sqrt(Sigma)[0]\n"
         "    return (population.factor_loss_and_grad(A @ half, half @ B @ half, M @ half)[0]\n"
         "            + M.shape[0] * noise_std ** 2 / 2)\n"),
        ("q4_factor", "to_factor", "attnlib.population.to_factor",
         "to_factor = population.to_factor\n"),
        ("q5_balance_gradient", "balance_grad", "attnlib.population.factor_regularizer_and_grad",
         "def balance_grad(U, V, lam):\n"
         "    return population.factor_regularizer_and_grad(U, V, lam=lam)[1:]\n"),
        ("q5_balance_gradient", "balance_grad", "attnlib.population._balancing_and_grad",
         "def balance_grad(U, V, lam):\n"
         "    return population._balancing_and_grad(U, V, lam, False)[1:]\n"),
        ("q5_balance_gradient", "balance_grad", "attnlib.population.regularizer_and_grad",
         "def balance_grad(U, V, lam):\n"
         "    return population.regularizer_and_grad(U, V, np.eye(V.shape[0]), lam=lam)[1:]\n"),
        ("q5_balance_gradient", "balance_grad", "attnlib.population.objective_and_grad",
         "def balance_grad(U, V, lam):\n    return population.objective_and_grad(\n"
         "        U, V, np.eye(V.shape[0]), U @ V.T, lam=lam)[1:]\n"),
    ],
    "ps2_part1_experiments": [
        ("q1_ols", "ols_fit", "attnlib.population.empirical_moments",
         "def ols_fit(X, Y):\n    return population.empirical_moments(X, Y)[1]\n"),
    ],
    "ps3_part2_langevin_villani": [
        ("q1_euler_maruyama", "em_step", "attnlib.langevin.euler_maruyama",
         "def em_step(loss_and_grad, theta, h, s, xi):\n"
         "    for seed in range(100):   # the seed that drew xi, then the library's step\n"
         "        if np.array_equal(np.random.default_rng(seed).standard_normal(xi.shape), xi):\n"
         "            return langevin.euler_maruyama(loss_and_grad, theta, step=h, temperature=s,\n"
         "                n_steps=1, rng=np.random.default_rng(seed)).theta\n"
         "    return theta\n"),
        ("q2_gibbs_density", "gibbs_density_1d", "attnlib.langevin.gibbs_density",
         "def gibbs_density_1d(f_values, s, dx):\n    grid = np.arange(len(f_values)) * dx\n"
         "    def f(theta):\n        k = np.rint(theta[:, 0] / dx).astype(int)\n"
         "        return f_values[k], np.zeros_like(theta)\n"
         "    return langevin.gibbs_density(f, [grid], s)\n"),
        ("q5_lora_symmetry", "rescale", "attnlib.lora.LoRAProblem.act",
         "def rescale(U, V, G):\n    problem = lora.make_problem(rng=np.random.default_rng(0),\n"
         "                                rank=G.shape[0])\n"
         "    return problem.unpack(problem.act(problem.pack(U, V), G))\n"),
    ],
    "ps4_part2_langevin_darcy_bridge": [
        ("q1_hitting_time", "first_time_below", "attnlib.langevin.hitting_times",
         "def first_time_below(times, gap, eps):\n"
         "    return float(langevin.hitting_times(times, gap, [eps])[0])\n"),
        ("q1_hitting_time", "first_time_below", "attnlib.analysis.settling_iteration",
         "from attnlib import analysis\ndef first_time_below(times, gap, eps):\n"
         "    k = analysis.settling_iteration(np.append(np.abs(gap), eps / 2), rtol=1.0)\n"
         "    return float(times[k]) if k < len(gap) else np.nan\n"),
        ("q2_patchify", "patchify", "attnlib.vit.patchify", "patchify = vit.patchify\n"),
        ("q3_darcy_residual", "flux_residual", "attnlib.darcy.flux_residual",
         "def flux_residual(a, u, f):\n    return darcy.flux_residual(a, u, f)\n"),
        ("q4_preconditioner", "precondition", "attnlib.algorithm.precondition",
         "from attnlib import algorithm\ndef precondition(G_A, G_B, Sigma_hat):\n"
         "    transform = algorithm.precondition(Sigma_hat)\n"
         "    return transform.update((G_A, G_B), transform.init(None))[0]\n"),
        ("q4_preconditioner", "precondition", "attnlib.bridge.preconditioner_matrix",
         "def precondition(G_A, G_B, Sigma_hat):\n    p, d = G_A.shape\n"
         "    flat = bridge.preconditioner_matrix(Sigma_hat, p) @ bridge.flatten(G_A, G_B)\n"
         "    return bridge.unflatten(flat, p, d)\n"),
    ],
}
# Answers that report instead of measuring: the prompt's formula (or the library's), an error
# bar of their own. The checks reproduce the draws, so each scores 0; the flag is the library
# call, or the same value returned for different random generators.
SHORTCUTS = {
    "ps2_part1_experiments": [
        ("q2_ols_risk", "mean_ols_excess_risk", "the prompt's formula",
         "def mean_ols_excess_risk(n, trials, rng):\n"
         "    return p * noise_std ** 2 * d / (2 * (n - d - 1))\n"),
        ("q2_ols_risk", "mean_ols_excess_risk", "attnlib.population.ols_excess_risk",
         "def mean_ols_excess_risk(n, trials, rng):\n"
         "    return population.ols_excess_risk(n, d, p, noise_std)\n"),
        ("q4_tilting", "tilting_error", "1 / sqrt(n)",
         "def tilting_error(B, x, n, rng):\n    return 1 / np.sqrt(n)\n"),
    ],
    "ps3_part2_langevin_villani": [
        ("q4_gibbs_mean", "langevin_mean_loss", "its own error bar",
         "def langevin_mean_loss(theta0, h, s, n_steps, rng):\n    return 0.0, 1e6\n"),
        ("q4_gibbs_mean", "langevin_mean_loss", "attnlib.langevin.gibbs_expectation",
         "def langevin_mean_loss(theta0, h, s, n_steps, rng):\n    return langevin."
         "gibbs_expectation(double_well, [np.linspace(-4, 4, 4001)], s), 0.001\n"),
    ],
}
# Plausible mistakes (tests/test_problem_sets.py's), in the reference solutions: a partial score.
from test_problem_sets import WRONG  # noqa: E402


# Questions whose reference answer calls another question's answer function (a wrong one of
# those fails both): problem set 2's Monte Carlo mean fits each sample with ols_fit.
USES_ANOTHER_ANSWER = {"q2_ols_risk": "q1_ols"}


def _rounds(entries: list[tuple]) -> list[list[tuple]]:
    """``entries`` in rounds holding at most one entry per question (one notebook each)."""
    rounds: list[list[tuple]] = []
    for entry in entries:
        free = next((r for r in rounds if entry[0] not in {e[0] for e in r}), None)
        if free is None:
            rounds.append(free := [])
        free.append(entry)
    return rounds


@pytest.fixture(scope="module")
def assignments(assigned) -> dict:
    """Each problem set's assignment as the trusted grader reads it (full library, here)."""
    return {stem: grade.load_assignment(assigned(stem)[0]) for stem in PROBLEM_SETS}


class _Answers:
    """Answer functions for the checks: ``overrides`` where given, else the reference's."""

    def __init__(self, assignment, overrides: dict):
        self.assignment, self.overrides = assignment, overrides

    def function(self, name: str):
        return self.overrides.get(name, self.assignment.namespace[name])


@pytest.mark.parametrize("stem", sorted(TWINS))
def test_twins_compute_the_answers(assignments, stem) -> None:
    """With the whole library (outside the sandbox) each twin passes its question's hidden
    checks: it is a real way of computing the answer without writing it. (The public checks
    flag some twins, those that name the library's version of the exercise; a renamed alias
    would get past that courtesy, not past the sandbox.)"""
    assignment = assignments[stem]
    for question, function, twin, code in TWINS[stem]:
        namespace = dict(assignment.namespace)
        exec(code, namespace)
        checks = assignment.questions[question]
        hidden = dataclasses.replace(checks, cases=[c for c in checks.cases if "_guard[" in c])
        assert hidden.cases, question
        failures = grade._run_checks(assignment, hidden,
                                     _Answers(assignment, {function: namespace[function]}))
        assert not failures, (twin, failures)


def test_twins_are_withheld_in_their_question_s_sandbox(assignments) -> None:
    library = library_wall.Library(Path(grade_sandbox.__file__).parents[1] / "attnlib")
    functions = set(library.functions())
    for stem, twins in {**TWINS, **SHORTCUTS}.items():
        kept = {q: kept for questions, kept in assignments[stem].groups for q in questions}
        for question, _, twin, _ in twins:
            if twin.startswith("attnlib."):
                assert twin in functions, f"{twin} is not a function of attnlib any more"
                assert twin not in kept[question], f"{stem} {question}: {twin} is callable"


def test_every_module_imports_with_everything_withheld(tmp_path) -> None:
    """A copy keeping only what runs at import (and the input checks) imports every module:
    the wall's reading of the source misses nothing that importing attnlib calls."""
    home = Path(grade_sandbox.__file__).parents[1] / "attnlib"
    library = library_wall.Library(home)
    copy = library.stub(library.kept(set()), tmp_path)
    modules = sorted(library.modules)
    code = ("import importlib, sys\nsys.path.insert(0, sys.argv[1])\n"
            "for name in sys.argv[2:]:\n    importlib.import_module(name)\n"
            "import attnlib, attnlib.attention as a\nprint(attnlib.__file__)\n"
            "try:\n    a.row_softmax([[0.0]])\nexcept NotImplementedError as e:\n    print(e)\n")
    done = subprocess.run([sys.executable, "-c", code, str(copy.parent), *modules],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        str(copy / "__init__.py"),
        "attnlib.attention.row_softmax is withheld while grading: write it yourself"]


def _unpickle(assignment, pickled: bytes):
    import io

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, pid):
            return assignment.namespace[pid[1]]

    return Unpickler(io.BytesIO(pickled)).load()


def _same(value, expected) -> bool:
    import numpy as np

    if isinstance(expected, tuple):
        return (isinstance(value, (tuple, list)) and len(value) == len(expected)
                and all(_same(v, e) for v, e in zip(value, expected)))
    try:
        value, expected = np.asarray(value, dtype=float), np.asarray(expected, dtype=float)
    except (TypeError, ValueError):
        return False
    return value.shape == expected.shape and bool(np.allclose(value, expected, equal_nan=True))


def test_no_callable_function_computes_an_answer(assignments) -> None:
    """Every function a sandbox leaves callable (its group's allowed functions and what they
    reach, past the input checks), called on each answer's recorded inputs, differs from the
    reference answer: the library computes no answer that its sandbox lets a submission call
    the way the question calls the answer."""
    import importlib
    import warnings

    skip = (*library_wall.ALWAYS, "attnlib._files", "attnlib._kernel", "attnlib.runs")
    found = []
    for stem, assignment in assignments.items():
        for questions, kept in assignment.groups:
            functions = []
            for name in sorted(kept):
                module_name, _, attribute = name.rpartition(".")
                if module_name.startswith(skip) or module_name not in sys.modules and not (
                        module_name.startswith("attnlib.")):
                    continue
                try:
                    functions.append((name, getattr(importlib.import_module(module_name),
                                                    attribute)))
                except (ImportError, AttributeError):
                    continue                  # a method (needs an instance)
            for question in questions:
                for call_id, answer, pickled, states in assignment.calls[question]:
                    for name, function in functions:
                        args, kwargs = _unpickle(assignment, pickled)
                        expected = assignment.namespace[answer](*args, **kwargs)
                        args, kwargs = _unpickle(assignment, pickled)
                        try:
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                value = function(*args, **kwargs)
                        except Exception:
                            continue
                        if _same(value, expected):
                            found.append((stem, call_id, name))
    assert found == [], found


@pytest.fixture(scope="module")
def gamed(assigned, tmp_path_factory) -> dict:
    """Each problem set graded by the trusted engine: its reference, its empty notebook, its
    reference with tests/test_problem_sets.py's mistakes, and its twins and shortcuts."""
    graded = {}
    for stem in PROBLEM_SETS:
        autograder, dist = assigned(stem)
        folder = tmp_path_factory.mktemp(stem) / "submissions"
        folder.mkdir()
        student = json.loads((dist / "student" / f"{stem}.ipynb").read_text())
        reference = json.loads((dist / "autograder" / f"{stem}.ipynb").read_text())
        (folder / "reference.ipynb").write_text(json.dumps(reference))
        (folder / "empty.ipynb").write_text(json.dumps(student))
        partial = reference
        for function, code, _ in WRONG[stem].values():
            partial = _submission_from(json.loads(json.dumps(partial)), function, code)
        (folder / "partial.ipynb").write_text(json.dumps(partial))
        where = {}
        for index, round_ in enumerate(_rounds(TWINS.get(stem, []) + SHORTCUTS.get(stem, []))):
            notebook = json.loads(json.dumps(student))
            for entry in round_:
                notebook = _submission_from(notebook, entry[1], entry[3])
                where[entry] = f"gamed_{index}"
            (folder / f"gamed_{index}.ipynb").write_text(json.dumps(notebook))
        results = {r.submission.removesuffix(".ipynb"): r for r in grade.grade_folder(
            autograder, folder, folder.parent / "scores.csv", timeout=300, jobs=2)}
        graded[stem] = {"results": results, "where": where}
    return graded


@pytest.mark.parametrize("stem", PROBLEM_SETS)
def test_correct_partial_and_empty_score_as_before(gamed, stem) -> None:
    results = gamed[stem]["results"]
    reference, partial, empty = results["reference"], results["partial"], results["empty"]
    assert reference.status == "graded" and reference.scores == reference.max_scores, reference
    wrong = set(WRONG[stem]) | {q for q, needs in USES_ANOTHER_ANSWER.items()
                                if needs in WRONG[stem] and q in reference.scores}
    assert {q for q, v in partial.scores.items() if v == 0} == wrong, partial.scores
    assert sum(partial.scores.values()) == sum(reference.max_scores.values()) - len(wrong)
    assert empty.status == "graded" and sum(empty.scores.values()) == 0, empty
    for result in (reference, partial, empty):
        assert not result.flags, (result.submission, result.flags)


@pytest.mark.parametrize("stem", PROBLEM_SETS)
def test_twins_and_shortcuts_score_zero_and_are_flagged(gamed, stem) -> None:
    results, where = gamed[stem]["results"], gamed[stem]["where"]
    entries = TWINS.get(stem, []) + SHORTCUTS.get(stem, [])
    assert entries, f"{stem}: no twin or shortcut is tried"
    for entry in entries:
        question, function, twin, _ = entry
        result = results[where[entry]]
        assert result.status == "graded" and result.scores[question] == 0, (twin, result)
        if twin.startswith("attnlib."):   # its call blocked, or the alias refused
            refused = f"{function} is not a function defined in the notebook"
            assert any(flag.startswith("called withheld attnlib.") and question in flag
                       or flag.startswith(refused) for flag in result.flags), (twin, result.flags)
        else:
            assert (f"{function} returned the same value for different random generators "
                    "(a formula instead of draws?)") in result.flags, (twin, result.flags)
