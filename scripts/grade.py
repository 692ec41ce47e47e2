"""Grade a folder of problem-set submissions: one sheet of automatic and written scores.

Usage (from the repository root, with the environment's Python)::

    .venv/bin/python scripts/grade.py AUTOGRADER SUBMISSIONS/ [--out scores.csv]
        [--written MARKS.csv] [--answers FOLDER] [--pdf] [--timeout 600] [--jobs 1]
        [--memory-mb 4096] [--engine sandbox|otter]
    .venv/bin/python scripts/grade.py AUTOGRADER --merge [--out scores.csv] [--written MARKS.csv]

``AUTOGRADER`` is the instructor's autograder zip of a problem set, in its folder (the instructor
edition's ``problem_sets/NAME/``, or ``otter assign``'s ``autograder/``), which also holds the
reference solutions.

**The sheet** (``--out``, a CSV) has one row per submission: ``status`` (``graded``,
``timeout``, ``error``), the ``automatic`` points and their maximum, the ``written`` points and
theirs, ``total`` and ``max`` (both kinds), ``unmarked`` (written questions still without a
mark), one column per automatically checked question and one per written question, the grading
time, the user id it ran as, ``flags`` (what a human should read before trusting a score) and
``message`` (why a question scored 0, or why the submission did). Rows are appended as the
submissions are graded, so a batch that is stopped keeps the rows graded so far; at the end the
whole sheet, sorted, is written beside it and moved over it in one step. Text that comes from a
submission (its file name, its error messages) is cut to a bounded length, has its control
characters replaced, and never starts a cell with a spreadsheet formula character.

**Written questions** are marked by hand: grading also writes one HTML page per submission
with its written answers beside each prompt and rubric (``--answers``, default
``SHEET-written/``; ``--pdf`` prints each to PDF with Chromium) and a marks file to fill in
(``--written``, default ``SHEET-written.csv``: a row per submission, a column per written
question; rows for new submissions are appended, marks already there are kept). ``--merge``
then copies the marks into the sheet without grading again (every run merges them too).

The default engine, ``sandbox``, is the trusted path (book/teaching_guide.md, "Grading"). Before anything else it starts one trivial sandbox and stops, with one line and a
nonzero exit, when that fails (``bwrap`` missing, or a host without unprivileged user
namespaces). The checks (public and hidden, read from the zip) never enter a submission's
sandbox: they are first run here, in the grader's process, with each answer function replaced by
a recorder around the reference solution, which notes every call's arguments. Each submission's
notebook then runs in a bubblewrap sandbox of its own (``bwrap``; Debian package
``bubblewrap``) per group of questions (``GROUPS`` in grading_checks.py): as an unprivileged user
id of its own (when the grader runs as root) in new user, mount, PID, network, IPC and UTS
namespaces, under a seccomp filter refusing the system calls Docker's default profile refuses
(``scripts/seccomp_filter.py``); it sees the system's ``/usr``, the Python environment
read-only, an ``attnlib`` in which every function the group's checks do not allow is withheld
(``scripts/library_wall.py``: the allowed ones, what the setup cells call and what those reach
keep their code, the rest only raise), its notebook and a private scratch folder, and nothing
else (no tests, no solutions, no other submission, no grader arguments, no network); it has
limits on time, memory, processes and file size, and every process it started is killed when
it ends (PID namespace, ``--die-with-parent``, and a sweep of its user id). In the sandbox each
recorded call is made on the submission's own function (which must be defined in a notebook
cell) and only the returned values come back, as JSON lines on a pipe. The notebook's code can
write to that pipe too: every line is checked against the records' schema (types, sizes,
nesting) and anything else is dropped and flagged. Finally the checks run again here with the
answers replaced by those values: a submission's code never runs in the process that judges
it. A notebook that is missing, not JSON, or that breaks scores 0 with the reason in the sheet,
and so does any failure of the grader on one submission: it never stops the batch.

``--engine otter`` is the previous path, ``otter run`` in a temporary folder per submission
(the checks run in the submission's own process): kept for comparison with Gradescope, it is not
safe against a student who games the checks.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import copy
import io
import json
import os
import pickle
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

if str(Path(__file__).resolve().parent) not in sys.path:     # the helper modules beside it
    sys.path.insert(0, str(Path(__file__).resolve().parent))
import library_wall  # noqa: E402
import written_answers  # noqa: E402
from grade_records import Records, parse_records  # noqa: E402
from grade_sheet import FLAG_LIMIT, Result, Sheet, cell_text, sheet_key  # noqa: E402
from grade_sheet import merged_rows, replace_rows  # noqa: E402
from grade_sandbox import Sandbox, SandboxUnavailable, check_sandbox  # noqa: E402
from grade_sandbox import make_sandbox, run_sandboxed  # noqa: E402

# Names whose use in a submission is flagged for a human to read (see the module docstring).
SUSPICIOUS_MODULES = {"builtins", "inspect", "importlib", "gc", "ctypes", "subprocess",
                      "socket", "shutil", "pathlib", "glob", "sys", "io", "pickle"}
SUSPICIOUS_CALLS = {"exec", "eval", "compile", "open", "__import__", "setattr", "globals",
                    "getattr", "vars"}
SUSPICIOUS_TEXT = ("../source", "tests/", "grading_checks", "results.json", "setprofile", "otter.test_files", "otter.execute", "GradingResults",
                   "settrace", "__builtins__", "__code__", "__globals__")

def code_cells(notebook: Path) -> list[str]:
    """The source of every code cell of ``notebook`` (IPython magics blanked out)."""
    cells = json.loads(notebook.read_text())["cells"]
    sources = ["".join(cell["source"]) for cell in cells if cell["cell_type"] == "code"]
    return ["\n".join("" if line.lstrip().startswith(("%", "!")) else line
                      for line in source.splitlines()) for source in sources]


def flags(notebook: Path) -> list[str]:
    """What in the submission's code a human should read before trusting its score."""
    found: set[str] = set()
    imported: set[str] = set()
    for source in code_cells(notebook):
        found.update(f"text {text!r}" for text in SUSPICIOUS_TEXT if text in source)
        try:
            tree = ast.parse(source)
        except SyntaxError:
            found.add("a code cell does not parse")
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = ([alias.name for alias in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""])
                for name in names:
                    if name.split(".")[0] in SUSPICIOUS_MODULES:
                        found.add(f"imports {name}")
                imported.update(alias.asname or alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                    node.func.id in SUSPICIOUS_CALLS):
                found.add(f"calls {node.func.id}()")
            elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Delete)):
                targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
                for target in targets:
                    for part in ast.walk(target):
                        if isinstance(part, ast.Attribute):
                            root = part
                            while isinstance(root, ast.Attribute):
                                root = root.value
                            if isinstance(root, ast.Name) and root.id in imported:
                                found.add(f"rebinds {ast.unparse(part)}")
    return sorted(found)


# ---------------------------------------------------------------------------------------------
# The previous engine: otter run per submission (not safe against gaming; see the docstring).
# ---------------------------------------------------------------------------------------------

_OTTER_RUNNING: set[subprocess.Popen] = set()       # stopped on Ctrl-C (grade_folder)


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (read from /proc; empty where there is none)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, queue = [], [pid]
    while queue:
        for child in children.get(queue.pop(), []):
            found.append(child)
            queue.append(child)
    return found


def _stop(process: subprocess.Popen) -> None:
    """Kill ``process`` and every process it started (the kernel runs in a session of its own)."""
    for pid in [*_descendants(process.pid), process.pid]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def _can_run_as(account: pwd.struct_passwd, otter: str) -> bool:
    """Whether ``account`` can start ``otter`` (its interpreter may sit in a private folder)."""
    try:
        done = subprocess.run([otter, "--version"], capture_output=True, cwd="/",
                              user=account.pw_uid, group=account.pw_gid, extra_groups=[])
    except PermissionError:
        return False
    return done.returncode == 0


def grading_user(name: str, otter: str) -> pwd.struct_passwd | None:
    """The account to grade as, or None for the caller's own.

    ``"auto"``: ``nobody`` when running as root and ``nobody`` can start ``otter``, else the
    caller (with a warning). Any other name: that account, required to work when running as
    root. Without root no other account can be used.
    """
    if os.geteuid() != 0 or not name:
        return None
    account = pwd.getpwnam("nobody" if name == "auto" else name)
    if _can_run_as(account, otter):
        return account
    if name != "auto":
        raise ValueError(f"user {name!r} cannot run {otter}: install the grading environment "
                         "where that account can read it, or choose another --user")
    print(f"warning: nobody cannot run {otter} (its interpreter is in a private folder); "
          "grading as root: see the teaching guide's notes on the Docker-free path",
          file=sys.stderr)
    return None


def grade_one(autograder: Path, submission: Path, *, otter: str, timeout: float,
              user: pwd.struct_passwd | None) -> Result:
    """Grade ``submission`` in a temporary directory of its own; never raises for a bad one."""
    start = time.monotonic()
    result = Result(submission.name, "error", 0.0, user.pw_name if user else
                    pwd.getpwuid(os.geteuid()).pw_name, flags=flags(submission))
    work = Path(tempfile.mkdtemp(prefix="grade-"))
    try:
        shutil.copy(autograder, work / "autograder.zip")
        shutil.copy(submission, work / submission.name)
        (work / "out").mkdir()
        env = {key: value for key, value in os.environ.items()
               if key in ("PATH", "LANG", "PYTHONPATH", "OMP_NUM_THREADS",
                          "OPENBLAS_NUM_THREADS")}
        env.update(HOME=str(work), TMPDIR=str(work), JUPYTER_RUNTIME_DIR=str(work / ".runtime"),
                   PYDEVD_DISABLE_FILE_VALIDATION="1")
        ids = {}
        if user is not None:
            for path in [work, *work.rglob("*")]:
                os.chown(path, user.pw_uid, user.pw_gid)
            ids = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
        process = subprocess.Popen(
            [otter, "run", "-a", "autograder.zip", "-o", "out", "--no-logo", submission.name],
            cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True, **ids)
        _OTTER_RUNNING.add(process)
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            result.status, result.message = "timeout", f"stopped after {timeout:g} s"
            return result
        finally:
            _OTTER_RUNNING.discard(process)
        results = work / "out" / "results.json"
        if process.returncode or not results.exists():
            result.message = (output or "")[-500:]
            return result
        for test in json.loads(results.read_text())["tests"]:
            if "max_score" in test:
                result.scores[test["name"]] = float(test["score"])
                result.max_scores[test["name"]] = float(test["max_score"])
        result.status = "graded"
        return result
    finally:
        result.seconds = time.monotonic() - start
        shutil.rmtree(work, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# The trusted engine: checks in the grader's process, each notebook in a bubblewrap sandbox.
# ---------------------------------------------------------------------------------------------

# The program run inside the sandbox (written into its read-only input folder). It executes the
# notebook's code cells, then makes each recorded call on the notebook's own answer function and
# prints one JSON line per call: the value, encoded as plain data, or the error.
HARNESS = r'''
import json, os, pickle, sys, types, base64
out = os.fdopen(os.dup(1), "w")                      # the grader reads this; cells print elsewhere
log = os.open("/submission/.output.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
os.dup2(log, 1); os.dup2(log, 2)
sys.stdout = os.fdopen(1, "w", buffering=1); sys.stderr = os.fdopen(2, "w", buffering=1)
notebook_name = sys.argv[1]
ns = {"__name__": "__main__", "__builtins__": __builtins__}
def report(record):
    out.write(json.dumps(record) + "\n"); out.flush()
try:                                                 # reports each call of a withheld function
    import attnlib._withheld as withheld
    withheld.REPORT_FD = out.fileno()
except ImportError:
    withheld = types.SimpleNamespace()
try:
    cells = json.load(open("/grader/" + notebook_name))["cells"]
    sources = ["".join(c["source"]) if isinstance(c["source"], list) else c["source"]
               for c in cells if c.get("cell_type") == "code"]
except Exception as error:
    report({"notebook": f"not a readable notebook: {type(error).__name__}: {error}"[:300]})
    sys.exit(0)
errors = []
for index, source in enumerate(sources):
    lines = ["" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()]
    text = "\n".join(lines)
    if ("import otter" in text or "otter.Notebook(" in text
            or text.strip().startswith(("grader.check", "grader.export"))):
        continue                                     # otter's own cells: no checks are here
    withheld.DURING = f"cell {index}"
    try:
        exec(compile(text, f"<cell {index}>", "exec"), ns)
    except BaseException as error:                  # a cell that fails does not stop the rest
        errors.append(f"cell {index}: {type(error).__name__}: {error}"[:200])
report({"cells": len(sources), "cell_errors": errors[:5]})
class _Unpickler(pickle.Unpickler):
    def persistent_load(self, pid):                  # a function of the notebook's setup cell
        return ns.get(pid[1])
calls = _Unpickler(open("/grader/calls.pkl", "rb")).load()
def encode(value, depth=0):
    import numpy as np
    if depth > 20:
        raise TypeError("the value is nested too deeply")
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.kind not in "biufc":
            raise TypeError(f"arrays of dtype {array.dtype} are not graded")
        return {"__nd__": array.dtype.str, "shape": list(array.shape), "scalar": array.ndim == 0
                and isinstance(value, np.generic),
                "data": base64.b64encode(np.ascontiguousarray(array).tobytes()).decode()}
    if isinstance(value, (list, tuple)):
        items = [encode(item, depth + 1) for item in value]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if isinstance(value, dict):
        return {"__dict__": [[str(k), encode(v, depth + 1)] for k, v in value.items()]}
    raise TypeError(f"answers of type {type(value).__name__} are not graded")
for call_id, name, args, kwargs in calls:
    withheld.DURING = call_id
    function = ns.get(name)
    own = isinstance(function, types.FunctionType)
    if not own or not function.__code__.co_filename.startswith("<cell "):
        where = getattr(function, "__module__", None) or type(function).__name__
        report({"id": call_id, "error": f"{name} is not a function defined in the notebook "
                f"({where}.{getattr(function, '__qualname__', '')})".replace("(None.", "("),
                "not_own": True})
        continue
    try:
        value = function(*args, **kwargs)
        report({"id": call_id, "value": encode(value)})
    except BaseException as error:
        report({"id": call_id, "error": f"{type(error).__name__}: {error}"[:300]})
report({"done": True})
'''

def _doctest_source(code: str) -> str:
    """The Python source of an OK-format doctest case (``>>> `` and ``... `` lines)."""
    lines = []
    for line in code.splitlines():
        if line.startswith((">>> ", "... ")):
            lines.append(line[4:])
        elif line.strip() in (">>>", "..."):
            lines.append("")
        elif line.strip():
            raise ValueError(f"expected output in a doctest is not supported: {line!r}")
    return "\n".join(lines)


@dataclass
class Question:
    name: str
    points: float
    all_or_nothing: bool
    cases: list[str]


@dataclass
class Assignment:
    """Everything the trusted grader needs, read once per problem set (nothing of it is ever
    placed in a sandbox except the checks' inputs and the walled attnlib)."""

    name: str
    questions: dict[str, Question]
    namespace: dict                     # setup cells and reference solutions, run here
    answers: set[str]                   # names of the answer functions
    setup_functions: dict[int, str]     # id -> name of functions the setup cells define
    guard_source: str                   # grading_checks.py with call/untampered made plain
    groups: list[tuple[tuple[str, ...], frozenset[str]]]   # questions, attnlib functions kept
    written: dict[str, float]           # written questions (marked by hand) and their points
    reference: Path                     # the notebook of reference solutions
    calls: dict[str, list[tuple[str, str, bytes, list]]] = field(default_factory=dict)
    draws: dict[str, bytes] = field(default_factory=dict)   # call id -> inputs but generators


def guard_settings(guard: str) -> dict:
    """``GROUPS`` and ``WRITTEN`` of grading_checks.py (read with ``ast.literal_eval``)."""
    settings = {}
    for node in ast.parse(guard).body:
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if getattr(target, "id", "") in ("GROUPS", "WRITTEN"):
                    settings[target.id] = ast.literal_eval(node.value)
    missing = {"GROUPS", "WRITTEN"} - set(settings)
    if missing:
        raise ValueError(f"grading_checks.py must define {sorted(missing)} (the autograder zip "
                         "is from an older edition: rebuild it with scripts/editions.py)")
    return settings


def read_autograder(autograder: Path) -> tuple[str, dict[str, str], str, Path]:
    """(assignment name, test files by question, grading_checks.py, reference notebook)."""
    try:
        with zipfile.ZipFile(autograder) as archive:
            names = archive.namelist()
            config = json.loads(archive.read("otter_config.json").decode())
            tests = {Path(n).stem: archive.read(n).decode() for n in names
                     if n.startswith("tests/") and n.endswith(".py")}
            guard = archive.read("files/grading_checks.py").decode()
    except (zipfile.BadZipFile, KeyError) as error:
        raise ValueError(f"{autograder} is not an autograder zip of this book "
                         f"(otter_config.json, tests/ and files/grading_checks.py): {error}")
    name = config.get("assignment_name") or autograder.stem.split("-autograder")[0]
    reference = autograder.parent / f"{name}.ipynb"
    if not reference.is_file():
        raise ValueError(f"the reference solutions {reference} must sit beside {autograder.name} "
                         "(the instructor edition's problem set folder, or otter assign's "
                         "autograder/ folder)")
    return name, tests, guard, reference


def written_questions(guard: str, name: str) -> dict[str, float]:
    """The problem set's written questions and their points (``WRITTEN``), checked."""
    written = guard_settings(guard)["WRITTEN"].get(name, {})
    if not (isinstance(written, dict) and all(
            isinstance(q, str) and isinstance(p, (int, float)) and p > 0
            for q, p in written.items())):
        raise ValueError(f"WRITTEN[{name!r}] in grading_checks.py must map each written question "
                         f"to its points (> 0), got {written!r}")
    return {q: float(p) for q, p in written.items()}


def declared_allowed(question: Question) -> set[str]:
    """The attnlib functions a question's checks let its answers call: the union of the
    ``allowed=`` lists of its ``_guard["call"](answer, ...)`` calls (none when a check calls
    the answer without the guard)."""
    allowed: set[str] = set()
    for case in question.cases:
        for node in ast.walk(ast.parse(case)):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Subscript)
                    and getattr(node.func.value, "id", "") == "_guard"
                    and getattr(node.func.slice, "value", "") == "call"):
                continue
            for keyword in node.keywords:
                if keyword.arg == "forbidden":
                    raise ValueError(f"{question.name}: the trusted grader withholds every "
                                     "attnlib function a check does not allow; declare "
                                     "allowed=(...) instead of forbidden=")
                if keyword.arg == "allowed":
                    names = ast.literal_eval(keyword.value)
                    if not (isinstance(names, tuple) and all(isinstance(n, str) for n in names)):
                        raise ValueError(f"{question.name}: allowed= must be a tuple of "
                                         "qualified attnlib names")
                    allowed |= set(names)
    return allowed


@contextlib.contextmanager
def _entered_attnlib(found: set[str]):
    """Note in ``found`` every attnlib function (qualified name) entered meanwhile from outside
    attnlib (with no attnlib frame above it but its input checks' wrappers: not what attnlib's
    own functions call, nor what its modules run while they are imported)."""
    import attnlib

    home = str(Path(attnlib.__path__[0]).resolve())
    checks = os.path.join(home, "_validation.py")

    def inside(frame) -> bool:
        return frame.f_code.co_filename.startswith(home) and frame.f_code.co_filename != checks

    def profiler(frame, event, _arg):
        code = frame.f_code
        if event != "call" or not inside(frame) or "<" in code.co_qualname:
            return
        caller = frame.f_back
        while caller is not None:
            if inside(caller):
                return
            caller = caller.f_back
        module = code.co_filename[len(home):].lstrip("/").removesuffix(".py")
        module = "attnlib" if module == "__init__" else "attnlib." + module.replace("/", ".")
        found.add(f"{module}.{code.co_qualname}")

    previous = sys.getprofile()
    sys.setprofile(profiler)
    try:
        yield found
    finally:
        sys.setprofile(previous)


def load_assignment(autograder: Path) -> Assignment:
    """Read the checks from the autograder zip, the reference solutions from the notebook beside
    it, and run the checks against the references, recording each answer call's arguments; then
    decide, per group of questions, which attnlib functions its sandbox keeps."""
    import attnlib

    name, tests, guard, reference = read_autograder(autograder)
    questions = {}
    for stem, text in sorted(tests.items()):
        scope: dict = {}
        exec(text, scope)                            # the instructor's own test file
        test = scope["test"]
        cases = [_doctest_source(case["code"]) for suite in test["suites"]
                 for case in suite["cases"]]
        questions[test["name"]] = Question(test["name"], float(test.get("points") or 1),
                                           bool(test.get("all_or_nothing", True)), cases)
    groups = [tuple(group) for group in guard_settings(guard)["GROUPS"].get(name, [])]
    listed = [q for group in groups for q in group]
    if sorted(listed) != sorted(questions):
        raise ValueError(f"GROUPS[{name!r}] in grading_checks.py must list each question once: "
                         f"it lists {sorted(listed)}, the tests are {sorted(questions)}")
    written = written_questions(guard, name)
    # the reference notebook's cells, run here: setup and solutions (otter's cells left out)
    cells = json.loads(reference.read_text())["cells"]
    namespace: dict = {"__name__": "__reference__"}
    answers: set[str] = set()
    setup_functions: dict[int, str] = {}
    setup_calls: set[str] = set()
    import matplotlib
    matplotlib.use("Agg")
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if ("import otter" in source or "otter.Notebook(" in source      # otter's own cells
                or source.strip().startswith(("grader.check", "grader.export"))):
            continue
        source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                           for line in source.splitlines())
        before = set(namespace)
        solution = "otter_assign_solution_cell" in cell.get("metadata", {}).get("tags", [])
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet), (
                contextlib.nullcontext() if solution else _entered_attnlib(setup_calls)):
            exec(compile(source, f"<reference {name}>", "exec"), namespace)
        defined = {n for n in set(namespace) - before if isinstance(namespace[n], type(cell_text))}
        if solution:
            answers |= {node.name for node in ast.parse(source).body
                        if isinstance(node, ast.FunctionDef)}
        else:
            setup_functions.update({id(namespace[n]): n for n in defined})
    guard_source = guard + ("\n\ndef untampered():\n    pass\n\n"
                            "def call(function, *args, allowed=()):\n"
                            "    return function(*args)\n")
    library = library_wall.Library(Path(attnlib.__path__[0]).resolve())
    kept = []
    for group in groups:
        allowed = set().union(*(declared_allowed(questions[q]) for q in group))
        kept.append((group, frozenset(library.kept(allowed | setup_calls))))
    assignment = Assignment(name, questions, namespace, answers, setup_functions, guard_source,
                            kept, written, reference)
    for question in questions.values():
        calls: list = []
        failures = _run_checks(assignment, question, _Recorder(assignment, question.name, calls))
        if failures:
            raise ValueError(f"{name} {question.name}: the reference solution fails its own "
                             f"check: {failures[0]}")
        assignment.calls[question.name] = calls
    return assignment


def _pickle_args(assignment: Assignment, payload) -> bytes:
    """Pickle check inputs for the sandbox; the setup cells' functions go by name."""

    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            if callable(obj) and id(obj) in assignment.setup_functions:
                return ("setup", assignment.setup_functions[id(obj)])
            return None

    buffer = io.BytesIO()
    Pickler(buffer, protocol=4).dump(payload)
    return buffer.getvalue()


class _Recorder:
    """Answer functions for the first pass: call the reference solution, note the arguments."""

    def __init__(self, assignment: Assignment, question: str, calls: list):
        self.assignment, self.question, self.calls = assignment, question, calls
        self.counts: dict[str, int] = {}

    def function(self, name: str):
        def answer(*args, **kwargs):
            k = self.counts[name] = self.counts.get(name, 0) + 1
            pickled = _pickle_args(self.assignment, (args, kwargs))
            value = self.assignment.namespace[name](*args, **kwargs)
            # random generators the reference advanced: the replay advances them alike, so the
            # check's next inputs are the same (the submission gets each call's starting state)
            states = [getattr(getattr(a, "bit_generator", None), "state", None)
                      for a in (*args, *kwargs.values())]
            call_id = f"{self.question}/{name}/{k}"
            self.calls.append((call_id, name, pickled, states))
            if any(state is not None for state in states):     # a Monte Carlo answer
                self.assignment.draws[call_id] = _pickle_args(self.assignment, (name, *(
                    None if state is not None else a for a, state in zip((*args, *kwargs.values()),
                                                                          states))))
            return value
        answer.__name__ = name
        return answer


class _Replayer:
    """Answer functions for the second pass: return what the submission's function returned on
    the same inputs in its sandbox (or raise what it raised)."""

    def __init__(self, assignment: Assignment, question: str, returned: dict):
        self.assignment, self.question, self.returned = assignment, question, returned
        self.counts: dict[str, int] = {}
        self.planned = {call_id: (pickled, states) for call_id, _, pickled, states
                        in assignment.calls[question]}
        self.by_inputs = {(name, pickled): call_id for call_id, name, pickled, _
                          in reversed(assignment.calls[question])}

    def function(self, name: str):
        def answer(*args, **kwargs):
            k = self.counts[name] = self.counts.get(name, 0) + 1
            call_id = f"{self.question}/{name}/{k}"
            pickled, states = self.planned.get(call_id, (None, []))
            actual = _pickle_args(self.assignment, (args, kwargs))
            if pickled != actual:
                # a call the reference did not make at this point (a failing assertion's message
                # calling the answer again): the recorded call with the same inputs, if any
                call_id = self.by_inputs.get((name, actual))
                if call_id is None:
                    raise AssertionError(f"{name}: the check's inputs differ from the recorded "
                                         "ones")
                states = self.planned[call_id][1]
            for argument, state in zip((*args, *kwargs.values()), states):
                if state is not None:
                    argument.bit_generator.state = state
            record = self.returned.get(call_id)
            if record is None:
                raise AssertionError(f"{name} returned nothing (the notebook did not finish)")
            if "error" in record:
                raise AssertionError(f"{name} raised {record['error']}")
            return copy.deepcopy(record["value"])
        answer.__name__ = name
        return answer


def ignores_its_generator(assignment: Assignment, returned: dict) -> set[str]:
    """The answer functions that returned one value for calls differing only in the state of
    their random generator (a formula where the question asks for draws)."""
    groups: dict[bytes, list[str]] = {}
    for call_id, key in assignment.draws.items():
        groups.setdefault(key, []).append(call_id)
    states = {call_id: pickle.dumps(states) for calls in assignment.calls.values()
              for call_id, _, _, states in calls}
    found = set()
    for call_ids in groups.values():
        values = [returned.get(call_id, {}) for call_id in call_ids]
        if (len({states[c] for c in call_ids}) > 1 and all("value" in v for v in values)
                and values[0]["value"] is not None        # an unanswered stub returns None
                and len({pickle.dumps(v["value"]) for v in values}) == 1):
            found.add(call_ids[0].split("/")[1])
    return found


def _run_checks(assignment: Assignment, question: Question, answers) -> list[str]:
    """Run a question's check cases here with ``answers`` standing in for the answer functions;
    returns the failure message of each failing case."""
    namespace = dict(assignment.namespace)
    namespace.update({name: answers.function(name) for name in assignment.answers})
    guard_source = assignment.guard_source

    class _Checks:
        def read(self):
            return guard_source

    def checks_open(path, *args, **kwargs):
        if str(path) == "grading_checks.py":
            return _Checks()
        raise PermissionError(f"a check may not open {path}")

    namespace["open"] = checks_open
    failures = []
    for case in question.cases:
        try:
            exec(compile(case, f"<check {question.name}>", "exec"), namespace)
        except AssertionError as error:
            failures.append(str(error) or "a check failed")
        except Exception as error:
            failures.append(f"{type(error).__name__}: {error}")
    return failures


def _score(question: Question, failures: list[str]) -> float:
    if question.all_or_nothing:
        return question.points if not failures else 0.0
    return question.points * (len(question.cases) - len(failures)) / len(question.cases)


def _run_notebook(box: Sandbox, attnlib_copy: Path, notebook_text: str, calls: bytes,
                  call_ids: set[str], timeout: float) -> tuple[str, Records, str, int]:
    """Run one notebook's recorded calls in a fresh sandbox: (status, its checked records, why it
    failed, its user id)."""
    inputs = Path(tempfile.mkdtemp(prefix="in-", dir=box.stage))
    try:
        (inputs / "submission.ipynb").write_text(notebook_text)
        (inputs / "harness.py").write_text(HARNESS)
        (inputs / "calls.pkl").write_bytes(calls)
        for path in (inputs, *inputs.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)
        status, out, stderr, code, uid = run_sandboxed(
            box, [(str(attnlib_copy), box.attnlib_home), (str(inputs), "/grader")],
            [box.python, "/grader/harness.py", "submission.ipynb"], timeout)
    finally:
        shutil.rmtree(inputs, ignore_errors=True)
    records = parse_records(out, call_ids)
    if status == "timeout":
        return "timeout", records, "", uid
    if not records.done and not records.notebook:
        return "error", records, (f"the sandbox stopped early (exit {code}): "
                                  + stderr.strip()[-300:]), uid
    return "graded", records, "", uid


def _record_flags(records: Records) -> set[str]:
    """What a human should read in one sandbox's records."""
    found = set()
    if records.problems:
        found.add(f"wrote {len(records.problems)} malformed or unexpected record(s) to the "
                  f"grader's channel (first: {records.problems[0]})")
    where: dict[str, dict[str, None]] = {}        # function -> questions or cells, in order
    for function, during in records.blocked:
        where.setdefault(function, {})[during.split("/")[0] or "unknown place"] = None
    found |= {f"called withheld {function} ({', '.join(list(places)[:5])})"
              for function, places in where.items()}
    found |= {answer["error"] for answer in records.answers.values() if answer.get("not_own")}
    found |= {f"notebook {error}" for error in records.cell_errors[:3]}
    return {cell_text(flag, FLAG_LIMIT) for flag in found}


class Grader:
    """The trusted engine for one problem set: check the sandbox, load once, then
    :meth:`grade` each notebook; :meth:`close` (always) removes everything it made."""

    def __init__(self, autograder: Path, *, timeout: float = 600, memory_mb: int = 4096):
        self.timeout = timeout
        self.stage = Path(tempfile.mkdtemp(prefix="grade-stage-"))
        self.box: Sandbox | None = None
        try:
            self.stage.chmod(0o755)
            self.box = make_sandbox(self.stage, memory_mb)
            check_sandbox(self.box)
            self.assignment = load_assignment(autograder)
            import attnlib
            library = library_wall.Library(Path(attnlib.__path__[0]).resolve())
            self.groups = []
            for index, (questions, kept) in enumerate(self.assignment.groups):
                copy_ = library.stub(set(kept), self.stage / f"attnlib-{index}")
                for path in (copy_.parent, copy_, *copy_.rglob("*")):
                    path.chmod(0o755 if path.is_dir() else 0o644)
                calls = [(call_id, name) for q in questions
                         for call_id, name, _, _ in self.assignment.calls[q]]
                pickled = {call_id: p for q in questions
                           for call_id, _, p, _ in self.assignment.calls[q]}
                self.groups.append((questions, copy_, self._calls_file(calls, pickled),
                                    {call_id for call_id, _ in calls}))
        except BaseException:
            self.close()
            raise

    def _calls_file(self, calls, pickled) -> bytes:
        """The calls' inputs as one pickle of (id, function name, args, kwargs)."""

        class Unpickler(pickle.Unpickler):
            def persistent_load(self, pid):
                return _Setup(pid[1])

        class Pickler(pickle.Pickler):
            def persistent_id(self, obj):
                return ("setup", obj.name) if isinstance(obj, _Setup) else None

        entries = [(call_id, name, *Unpickler(io.BytesIO(pickled[call_id])).load())
                   for call_id, name in calls]
        buffer = io.BytesIO()
        Pickler(buffer, protocol=4).dump(entries)
        return buffer.getvalue()

    def stop(self) -> None:
        """Kill every running sandbox and start no new one (Ctrl-C, an error)."""
        if self.box is None:
            return
        with self.box.lock:
            self.box.stopping = True
            running = list(self.box.running.values())
        for process in running:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.stage, ignore_errors=True)

    def grade(self, submission: Path) -> Result:
        """Grade one notebook; never raises for a bad one, nor for a failure of the grader on
        it (that is the row's error, naming the notebook and the reason)."""
        start = time.monotonic()
        try:
            return self._grade(submission, start)
        except Exception as error:
            return Result(submission.name, "error", time.monotonic() - start, "sandbox",
                          message=f"the grader failed on {submission.name}: "
                                  f"{type(error).__name__}: {error}")

    def _grade(self, submission: Path, start: float) -> Result:
        result = Result(submission.name, "error", 0.0, "sandbox")
        try:
            text = submission.read_text()
            json.loads(text)["cells"]
        except Exception as error:
            result.message = f"not a readable notebook: {type(error).__name__}: {error}"[:300]
            result.seconds = time.monotonic() - start
            return result
        try:
            result.flags = flags(submission)
        except Exception:
            result.flags = []
        statuses, reasons, flagged = [], [], set()
        returned: dict = {}
        for questions, copy_, calls, call_ids in self.groups:
            status, records, message, uid = _run_notebook(self.box, copy_, text, calls, call_ids,
                                                          self.timeout)
            statuses.append(status)
            result.user = (f"uid {uid}" if self.box.as_root else
                           f"uid {os.geteuid()} (user namespace)")
            if message:
                reasons.append(message)
            if records.notebook:
                reasons.append(records.notebook)
            flagged |= _record_flags(records)
            returned.update(records.answers)
        if "timeout" in statuses:
            result.status = "timeout"
            result.message = f"stopped after {self.timeout:g} s"
        elif "error" in statuses:
            result.message = "; ".join(reasons)
        else:
            for name, question in self.assignment.questions.items():
                failures = _run_checks(self.assignment, question,
                                       _Replayer(self.assignment, name, returned))
                result.scores[name] = _score(question, failures)
                result.max_scores[name] = question.points
                if failures:
                    reasons.append(f"{name}: {failures[0][:160]}")
            flagged |= {f"{name} returned the same value for different random generators "
                        "(a formula instead of draws?)"
                        for name in ignores_its_generator(self.assignment, returned)}
            result.status = "graded"
            result.message = "; ".join(reasons)
        result.flags = sorted(set(result.flags) | flagged)
        result.seconds = time.monotonic() - start
        return result


@dataclass(frozen=True)
class _Setup:
    name: str


# ---------------------------------------------------------------------------------------------
# A folder of submissions.
# ---------------------------------------------------------------------------------------------

def _question_points(tests: dict[str, str]) -> dict[str, float]:
    """The automatically checked questions and their points, from the zip's test files."""
    points = {}
    for text in tests.values():
        scope: dict = {}
        exec(text, scope)                            # the instructor's own test file
        points[scope["test"]["name"]] = float(scope["test"].get("points") or 1)
    return dict(sorted(points.items()))


def merge_marks(autograder: Path, sheet: Path, marks_path: Path) -> int:
    """Copy the written marks of ``marks_path`` into ``sheet`` (written by :func:`grade_folder`
    for ``autograder``) and recompute its written points and totals, without grading again;
    returns the number of rows."""
    name, tests, guard, _ = read_autograder(autograder)
    written = written_questions(guard, name)
    rows = merged_rows(sheet, _question_points(tests), written,
                       written_answers.read_marks(marks_path, written))
    replace_rows(sheet, rows)
    return len(rows) - 1


def _grade_all(submissions: list[Path], grade, jobs: int, sheet: Sheet, stop) -> list[Result]:
    """``grade`` each submission on ``jobs`` threads, appending each row to ``sheet`` as it is
    done; on any exit before the end (Ctrl-C, an error) ``stop`` the running ones first."""
    pool = ThreadPoolExecutor(jobs)
    results = []
    try:
        futures = [pool.submit(grade, path) for path in submissions]
        for future in as_completed(futures):
            results.append(future.result())
            sheet.append(results[-1])
    except BaseException:
        stop()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return results


def grade_folder(autograder: Path, folder: Path, out: Path, *, timeout: float = 600,
                 jobs: int = 1, user: str = "auto", otter: str | None = None,
                 engine: str = "sandbox", memory_mb: int = 4096, written: Path | None = None,
                 answers: Path | None = None, pdf: bool = False) -> list[Result]:
    """Grade every ``*.ipynb`` of ``folder``; write the sheet ``out``, the marks file
    ``written`` and the written answers' pages in ``answers`` (defaults beside ``out``, see the
    module docstring); return the automatic results, sorted by submission.

    ``engine="sandbox"`` (the trusted path, see the module docstring) or ``"otter"`` (``otter
    run`` per submission, as ``user``: the checks run in the submission's process).
    """
    if not autograder.is_file():
        raise ValueError(f"autograder must be an autograder zip file, got {autograder}")
    if not folder.is_dir():
        raise ValueError(f"{folder} is not a folder of submissions")
    submissions = sorted(folder.glob("*.ipynb"))
    if not submissions:
        raise ValueError(f"folder {folder} holds no .ipynb submission")
    if timeout <= 0 or jobs < 1:
        raise ValueError(f"timeout must be > 0 and jobs >= 1, got {timeout} and {jobs}")
    if engine not in ("sandbox", "otter"):
        raise ValueError(f"engine must be 'sandbox' or 'otter', got {engine!r}")
    marks_path = written or written_answers.default_marks(out)
    answers_dir = answers or written_answers.default_answers(out)
    name, tests, guard, reference = read_autograder(autograder.resolve())
    written_points = written_questions(guard, name)
    written_answers.questions(reference, written_points)      # what fails after grading, first
    if marks_path.exists():
        written_answers.read_marks(marks_path, written_points)
    if pdf:
        written_answers.chromium()
    if engine == "sandbox":
        grader = Grader(autograder.resolve(), timeout=timeout, memory_mb=memory_mb)
        questions = {q: v.points for q, v in grader.assignment.questions.items()}
        grade, stop, close = grader.grade, grader.stop, grader.close
    else:
        otter = otter or str(Path(sys.executable).with_name("otter"))
        account = grading_user(user, otter)
        questions = _question_points(tests)

        def grade(path: Path) -> Result:
            try:
                return grade_one(autograder.resolve(), path, otter=otter, timeout=timeout,
                                 user=account)
            except Exception as error:   # a bad notebook is a row, never a stopped batch
                return Result(path.name, "error", 0.0, "", message=f"the grader failed on "
                              f"{path.name}: {type(error).__name__}: {error}")

        def stop() -> None:
            for process in list(_OTTER_RUNNING):
                with contextlib.suppress(OSError):
                    _stop(process)

        close = stop
    try:
        sheet = Sheet(out, questions, written_points)
        results = sorted(_grade_all(submissions, grade, jobs, sheet, stop),
                         key=lambda r: r.submission)
        marks = written_answers.update_marks(marks_path, [sheet_key(r.submission)
                                                          for r in results], written_points)
        written_answers.export(reference, written_points, submissions, answers_dir, pdf=pdf)
        sheet.finish(results, marks)
    finally:
        close()
    return results


def _interrupted(signum, frame) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def parse_arguments(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (see the module docstring); exits with the usage on a bad one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("autograder", type=Path, help="the problem set's autograder zip")
    parser.add_argument("submissions", type=Path, nargs="?",
                        help="folder of submitted .ipynb files (not with --merge)")
    parser.add_argument("--out", type=Path, default=Path("scores.csv"), help="the sheet (CSV)")
    parser.add_argument("--written", type=Path, default=None,
                        help="the written questions' marks to fill in (CSV; default: the "
                             "sheet's name with -written.csv)")
    parser.add_argument("--answers", type=Path, default=None,
                        help="folder of the written answers' pages, one per submission "
                             "(default: the sheet's name with -written/)")
    parser.add_argument("--pdf", action="store_true",
                        help="also print each written answers' page to PDF (needs Chromium)")
    parser.add_argument("--merge", action="store_true",
                        help="do not grade: copy the marks of --written into the sheet --out")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per submission")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once")
    parser.add_argument("--engine", choices=("sandbox", "otter"), default="sandbox",
                        help="sandbox (trusted: bubblewrap, checks outside the submission) or "
                             "otter (otter run per submission, not safe against gaming)")
    parser.add_argument("--memory-mb", type=int, default=4096,
                        help="address-space limit of a sandboxed notebook (MB)")
    parser.add_argument("--user", default="auto",
                        help="--engine otter only: account to grade as when run as root: auto "
                             "(nobody if it can run the environment), a name, or '' for root")
    args = parser.parse_args(argv)
    if args.merge == (args.submissions is not None):
        parser.error("give a folder of submissions to grade, or --merge without one")
    return args


def main(argv: list[str] | None = None) -> int:
    """Grade (or merge the written marks) as the command line says; 0 on success, 1 with one
    line on standard error for bad input or a machine where the sandbox cannot run, 130 when
    stopped (Ctrl-C, SIGTERM) with the rows graded so far in the sheet."""
    args = parse_arguments(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _interrupted)
    marks = args.written or written_answers.default_marks(args.out)
    try:
        if args.merge:
            count = merge_marks(args.autograder, args.out, marks)
            print(f"marks of {marks} merged into {args.out} ({count} rows)")
            return 0
        results = grade_folder(args.autograder, args.submissions, args.out,
                               timeout=args.timeout, jobs=args.jobs, user=args.user,
                               engine=args.engine, memory_mb=args.memory_mb, written=marks,
                               answers=args.answers, pdf=args.pdf)
    except (ValueError, OSError, SandboxUnavailable) as error:
        print(f"grade.py: error: {cell_text(error, 500)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("grade.py: stopped; " + (f"the rows graded so far are in {args.out}" if
              args.out.exists() and not args.merge else "nothing was written"), file=sys.stderr)
        return 130
    for r in results:
        print(cell_text(f"{r.submission}: {r.status}, {sum(r.scores.values()):g} of "
                        f"{sum(r.max_scores.values()):g} automatic ({r.seconds:.0f} s)"
                        + (f"; flags: {'; '.join(r.flags)}" if r.flags else ""), 400))
    answers = args.answers or written_answers.default_answers(args.out)
    print(f"sheet -> {args.out}; written answers to read -> {answers}/; "
          f"their marks -> {marks}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
