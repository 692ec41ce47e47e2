"""Grade a folder of problem-set submissions, one CSV of scores.

Usage (from the repository root, with the environment's Python)::

    .venv/bin/python scripts/grade.py AUTOGRADER SUBMISSIONS/ [--out scores.csv]
        [--timeout 600] [--jobs 1] [--memory-mb 4096] [--engine sandbox|otter]

``AUTOGRADER`` is the instructor's autograder zip of a problem set, in its folder (the instructor
edition's ``problem_sets/NAME/``, or ``otter assign``'s ``autograder/``), which also holds the
reference solutions.

The default engine, ``sandbox``, is the trusted path (book/teaching_guide.md, "Grading
security"). The checks (public and hidden, read from the zip) never enter a submission's
sandbox: they are first run here, in the grader's process, with each answer function replaced by
a recorder around the reference solution, which notes every call's arguments. Each submission's
notebook then runs in a bubblewrap sandbox of its own (``bwrap``; Debian package
``bubblewrap``): as an unprivileged user id of its own (when the grader runs as root) in new
user, mount, PID, network, IPC and UTS namespaces; it sees the system's ``/usr``, the Python
environment read-only, an ``attnlib`` whose functions that answer a question are withheld
(``WITHHELD`` in grading_checks.py: their bodies raise), its notebook and a private scratch
folder, and nothing else (no tests, no solutions, no other submission, no grader arguments, no
network); it has limits on time, memory, processes and file size, and every process it started
is killed when it ends (PID namespace, ``--die-with-parent``, and a sweep of its user id). In
the sandbox each recorded call is made on the submission's own function (which must be defined
in a notebook cell) and only the returned values come back, as JSON. Finally the checks run
again here with the answers replaced by those values: a submission's code never runs in the
process that judges it. A notebook that is missing, not JSON, or that breaks scores 0 with the
reason in the CSV; it never stops the batch.

``--engine otter`` is the previous path, ``otter run`` in a temporary folder per submission
(the checks run in the submission's own process): kept for comparison with Gradescope, it is not
safe against a student who games the checks.

The CSV has one row per submission: status (``graded``, ``timeout``, ``error``), total and
maximum score, one column per question, the grading time, the user id it ran as, ``flags``
(what a human should read: an answer that is not the notebook's own function or that called a
withheld attnlib function, found in the sandbox; code that touches the grader, found by reading
the source) and ``message`` (why a question scored 0, or why the submission did).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import json
import os
import pwd
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

# Names whose use in a submission is flagged for a human to read (see the module docstring).
SUSPICIOUS_MODULES = {"builtins", "inspect", "importlib", "gc", "ctypes", "subprocess",
                      "socket", "shutil", "pathlib", "glob", "sys", "io", "pickle"}
SUSPICIOUS_CALLS = {"exec", "eval", "compile", "open", "__import__", "setattr", "globals",
                    "getattr", "vars"}
SUSPICIOUS_TEXT = ("../source", "tests/", "grading_checks", "results.json", "setprofile", "otter.test_files", "otter.execute", "GradingResults",
                   "settrace", "__builtins__", "__code__", "__globals__")


@dataclass
class Result:
    """One submission's row of the CSV."""

    submission: str
    status: str
    seconds: float
    user: str
    scores: dict[str, float] = field(default_factory=dict)
    max_scores: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)
    message: str = ""


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
        try:
            output, _ = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _stop(process)
            result.status, result.message = "timeout", f"stopped after {timeout:g} s"
            return result
        results = work / "out" / "results.json"
        if process.returncode or not results.exists():
            result.message = (output or "")[-500:].replace("\n", " ")
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
    if "otter.Notebook(" in text or text.strip().startswith(("grader.check", "grader.export")):
        continue                                     # otter's own cells: no checks are here
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
        report({"id": call_id, "error": f"{type(error).__name__}: {error}"[:300],
                "withheld": "withheld while grading" in str(error)})
report({"done": True})
'''

WITHHELD_MESSAGE = "withheld while grading: write it yourself"
RESULT_LIMIT = 64 * 2 ** 20        # bytes of results read back from one sandbox


def _decode(value):
    """A value the sandbox sent (plain JSON data), as numpy arrays, tuples and dicts."""
    import base64

    import numpy as np

    if isinstance(value, list):
        return [_decode(item) for item in value]
    if isinstance(value, dict):
        if "__tuple__" in value:
            return tuple(_decode(item) for item in value["__tuple__"])
        if "__dict__" in value:
            return {str(k): _decode(v) for k, v in value["__dict__"]}
        if "__nd__" in value:
            dtype = np.dtype(value["__nd__"])
            if dtype.kind not in "biufc":
                raise ValueError(f"dtype {dtype} is not graded")
            shape = tuple(int(n) for n in value["shape"])
            array = np.frombuffer(base64.b64decode(value["data"]), dtype=dtype).reshape(shape)
            array = array.copy()
            return array[()] if value.get("scalar") else array
        raise ValueError("unknown encoded value")
    return value


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
    placed in a sandbox except the checks' inputs and the stubbed attnlib)."""

    name: str
    questions: dict[str, Question]
    namespace: dict                     # setup cells and reference solutions, run here
    answers: set[str]                   # names of the answer functions
    setup_functions: dict[int, str]     # id -> name of functions the setup cells define
    guard_source: str                   # grading_checks.py with call/untampered made plain
    groups: list[tuple[tuple[str, ...], tuple[str, ...]]]
    calls: dict[str, list[tuple[str, str, bytes, list]]] = field(default_factory=dict)


def _read_zip_text(archive, name: str) -> str:
    return archive.read(name).decode()


def load_assignment(autograder: Path) -> Assignment:
    """Read the checks from the autograder zip, the reference solutions from the notebook beside
    it, and run the checks against the references, recording each answer call's arguments."""
    import zipfile

    with zipfile.ZipFile(autograder) as archive:
        names = archive.namelist()
        config = json.loads(_read_zip_text(archive, "otter_config.json"))
        tests = {Path(n).stem: _read_zip_text(archive, n) for n in names
                 if n.startswith("tests/") and n.endswith(".py")}
        guard = _read_zip_text(archive, "files/grading_checks.py")
    name = config.get("assignment_name") or autograder.stem.split("-autograder")[0]
    reference = autograder.parent / f"{name}.ipynb"
    if not reference.is_file():
        raise ValueError(f"the reference solutions {reference} must sit beside {autograder.name} "
                         "(the instructor edition's problem set folder, or otter assign's "
                         "autograder/ folder)")
    questions = {}
    for stem, text in sorted(tests.items()):
        scope: dict = {}
        exec(text, scope)                            # the instructor's own test file
        test = scope["test"]
        cases = [_doctest_source(case["code"]) for suite in test["suites"]
                 for case in suite["cases"]]
        questions[test["name"]] = Question(test["name"], float(test.get("points") or 1),
                                           bool(test.get("all_or_nothing", True)), cases)
    import ast as _ast
    withheld = _ast.literal_eval(next(
        node.value for node in _ast.parse(guard).body if isinstance(node, _ast.Assign)
        and any(getattr(t, "id", "") == "WITHHELD" for t in node.targets)))
    groups = [(tuple(q), tuple(w)) for q, w in withheld.get(name, [])]
    listed = [q for group, _ in groups for q in group]
    if sorted(listed) != sorted(questions):
        raise ValueError(f"WITHHELD[{name!r}] in grading_checks.py must list each question once: "
                         f"it lists {sorted(listed)}, the tests are {sorted(questions)}")
    # the reference notebook's cells, run here: setup and solutions (otter's cells left out)
    cells = json.loads(reference.read_text())["cells"]
    namespace: dict = {"__name__": "__reference__"}
    answers: set[str] = set()
    setup_functions: dict[int, str] = {}
    import matplotlib
    matplotlib.use("Agg")
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if "otter.Notebook(" in source or source.strip().startswith(("grader.check",
                                                                     "grader.export")):
            continue
        source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line
                           for line in source.splitlines())
        before = set(namespace)
        with open(os.devnull, "w") as quiet, contextlib.redirect_stdout(quiet):
            exec(compile(source, f"<reference {name}>", "exec"), namespace)
        defined = {n for n in set(namespace) - before if isinstance(namespace[n], type(_decode))}
        if "otter_assign_solution_cell" in cell.get("metadata", {}).get("tags", []):
            answers |= {node.name for node in _ast.parse(source).body
                        if isinstance(node, _ast.FunctionDef)}
        else:
            setup_functions.update({id(namespace[n]): n for n in defined})
    guard_source = guard + ("\n\ndef untampered():\n    pass\n\n"
                            "def call(function, *args, allowed=(), forbidden=None):\n"
                            "    return function(*args)\n")
    assignment = Assignment(name, questions, namespace, answers, setup_functions, guard_source,
                            groups)
    for question in questions.values():
        calls: list = []
        failures = _run_checks(assignment, question, _Recorder(assignment, question.name, calls))
        if failures:
            raise RuntimeError(f"{name} {question.name}: the reference solution fails its own "
                               f"check: {failures[0]}")
        assignment.calls[question.name] = calls
    return assignment


def _pickle_args(assignment: Assignment, payload) -> bytes:
    """Pickle check inputs for the sandbox; the setup cells' functions go by name."""
    import io
    import pickle

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
            self.calls.append((f"{self.question}/{name}/{k}", name, pickled, states))
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
            return _decode(record["value"])
        answer.__name__ = name
        return answer


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


def stub_attnlib(withheld: tuple[str, ...], dest: Path) -> Path:
    """A copy of the installed attnlib in ``dest/attnlib`` whose ``withheld`` functions (by
    qualified name) keep their signature and decorators but only raise."""
    import attnlib

    source = Path(attnlib.__path__[0])
    target = dest / "attnlib"
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    by_file: dict[Path, list[str]] = {}
    for qualname in withheld:
        parts = qualname.split(".")
        for split in range(len(parts) - 1, 0, -1):
            module = target.joinpath(*parts[1:split])
            path = module.with_suffix(".py") if split > 1 else target / "__init__.py"
            if path.is_file():
                by_file.setdefault(path, []).append(".".join(parts[split:]))
                break
            if (module / "__init__.py").is_file():
                by_file.setdefault(module / "__init__.py", []).append(".".join(parts[split:]))
                break
        else:
            raise ValueError(f"withheld function {qualname} not found in attnlib")
    for path, names in by_file.items():
        tree = ast.parse(path.read_text())
        found = set()

        def visit(body, prefix=""):
            for node in body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    qual = prefix + node.name
                    if qual in names:
                        message = f"attnlib {qual} is {WITHHELD_MESSAGE}"
                        node.body = ast.parse(f"raise NotImplementedError({message!r})").body
                        found.add(qual)
                elif isinstance(node, ast.ClassDef):
                    visit(node.body, prefix + node.name + ".")

        visit(tree.body)
        missing = set(names) - found
        if missing:
            raise ValueError(f"withheld functions {sorted(missing)} not found in {path.name}")
        path.write_text(ast.unparse(ast.fix_missing_locations(tree)) + "\n")
    return target


@dataclass
class Sandbox:
    """How a notebook is run: bwrap, the bound folders, limits."""

    bwrap: str
    python: str
    stage: Path                          # grader-private, never bound whole
    binds: list[tuple[str, str]]         # (source, destination) read-only
    attnlib_home: str                    # where attnlib is imported from in the environment
    memory_mb: int
    as_root: bool


def make_sandbox(stage: Path, memory_mb: int) -> Sandbox:
    """Find bwrap and the folders the environment's Python needs; raise with the fix if bwrap
    is missing or cannot create namespaces here."""
    import attnlib

    bwrap = shutil.which("bwrap")
    if not bwrap:
        raise RuntimeError("the trusted grader needs bubblewrap: apt-get install bubblewrap "
                           "(or pass --engine otter for the unsafe otter run path)")
    binds = []
    for path in {os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), sys.prefix}:
        if not path.startswith("/usr/") and path != "/usr":
            binds.append((path, path))
    return Sandbox(bwrap, sys.executable, stage, sorted(set(binds)),
                   str(Path(attnlib.__path__[0]).resolve()), memory_mb, os.geteuid() == 0)


def _sandbox_command(box: Sandbox, attnlib_copy: Path, inputs: Path, uid: int,
                     timeout: float, args_fd: int) -> tuple[list[str], list[str]]:
    """The command running the harness on ``inputs`` (notebook, harness, calls), and bwrap's
    arguments, which it reads from ``args_fd`` (so the sandbox's /proc/1/cmdline shows none)."""
    binds = [*box.binds, (str(attnlib_copy), box.attnlib_home), (str(inputs), "/grader")]
    bwrap = ["--unshare-all", "--unshare-user", "--disable-userns",
             "--die-with-parent", "--new-session", "--cap-drop", "ALL",
             "--ro-bind", "/usr", "/usr", "--symlink", "usr/lib", "/lib",
             "--symlink", "usr/lib64", "/lib64", "--symlink", "usr/bin", "/bin",
             "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache",
             "--ro-bind-try", "/etc/fonts", "/etc/fonts",
             "--proc", "/proc", "--dev", "/dev",
             "--size", str(256 * 2 ** 20), "--tmpfs", "/tmp",
             "--size", str(256 * 2 ** 20), "--tmpfs", "/submission",
             "--chdir", "/submission", "--uid", "1000", "--gid", "1000", "--clearenv",
             "--setenv", "HOME", "/submission", "--setenv", "TMPDIR", "/tmp",
             "--setenv", "PATH", "/usr/bin:/bin", "--setenv", "MPLBACKEND", "Agg",
             "--setenv", "OMP_NUM_THREADS", "1", "--setenv", "OPENBLAS_NUM_THREADS", "1",
             "--setenv", "PYTHONDONTWRITEBYTECODE", "1", "--setenv", "LANG", "C.UTF-8"]
    mounts = []
    if box.as_root:
        # The sandbox runs as an unprivileged user id of its own. The environment may sit where
        # that id cannot reach (a Python under /root): root binds each folder in a private mount
        # namespace to a place it can, and bwrap, started as that id, binds it from there.
        for index, (source, dest) in enumerate(binds):
            staged = box.stage / "mnt" / str(index)
            staged.mkdir(parents=True, exist_ok=True)
            mounts.append(f"mount --bind {shlex.quote(source)} {shlex.quote(str(staged))} && "
                          f"mount -o remount,bind,ro {shlex.quote(str(staged))}")
            bwrap += ["--ro-bind", str(staged), dest]
    else:
        for source, dest in binds:
            bwrap += ["--ro-bind", source, dest]
    start = [box.bwrap, "--args", str(args_fd), box.python, "/grader/harness.py",
             "submission.ipynb"]
    limits = ["prlimit", f"--as={box.memory_mb * 2 ** 20}", f"--cpu={int(timeout) + 5}",
              f"--fsize={256 * 2 ** 20}", "--nofile=256", "--core=0"]
    if box.as_root:
        limits.append("--nproc=64")        # counts this submission's own user id only
        drop = ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
                "--no-new-privs", "--inh-caps=-all", "--bounding-set=-all"]
        script = " && ".join(mounts + ['exec "$@"'])
        return ["unshare", "--mount", "--propagation", "private", "--", "/bin/sh", "-c", script,
                "sh", *limits, "--", *drop, *start], bwrap
    # without root the sandbox shares the caller's user id: allow what it already runs + 64
    own = sum(1 for status in Path("/proc").glob("[0-9]*/status") if _real_uid(status) ==
              os.getuid())
    return [*limits, f"--nproc={own + 64}", "--", *start], bwrap


def _real_uid(status: Path) -> int | None:
    try:
        return int(next(line for line in status.read_text().splitlines()
                        if line.startswith("Uid:")).split()[1])
    except (OSError, StopIteration, ValueError):
        return None


def _kill_user(uid: int) -> None:
    """Kill every process whose real user id is ``uid`` (a sandbox's own id: all of them were
    started by that sandbox)."""
    for status in Path("/proc").glob("[0-9]*/status"):
        if _real_uid(status) == uid:
            try:
                os.kill(int(status.parent.name), signal.SIGKILL)
            except OSError:
                continue


_uids = iter(range(2_000_000_000 + (os.getpid() % 1000) * 100_000, 4_000_000_000))
_uid_lock = __import__("threading").Lock()


def _next_uid() -> int:
    with _uid_lock:
        return next(_uids)


def _run_sandboxed(box: Sandbox, attnlib_copy: Path, notebook_text: str, calls: list,
                   timeout: float) -> tuple[str, dict, str, int]:
    """Run one notebook's recorded calls in a fresh sandbox: (status, records by id, message)."""
    inputs = Path(tempfile.mkdtemp(prefix="in-", dir=box.stage))
    uid = _next_uid()
    try:
        (inputs / "submission.ipynb").write_text(notebook_text)
        (inputs / "harness.py").write_text(HARNESS)
        (inputs / "calls.pkl").write_bytes(calls)
        for path in (inputs, *inputs.iterdir()):
            path.chmod(0o755 if path.is_dir() else 0o644)
        args_read, args_write = os.pipe()
        command, bwrap_args = _sandbox_command(box, attnlib_copy, inputs, uid, timeout,
                                               args_read)
        os.write(args_write, b"".join(arg.encode() + b"\0" for arg in bwrap_args))
        os.close(args_write)
        try:
            process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                       stdin=subprocess.DEVNULL, start_new_session=True,
                                       pass_fds=(args_read,))
        finally:
            os.close(args_read)
        chunks: list[bytes] = []
        size = 0

        def read() -> None:
            nonlocal size
            while chunk := process.stdout.read1(65536):
                if size < RESULT_LIMIT:
                    chunks.append(chunk)
                size += len(chunk)

        reader = __import__("threading").Thread(target=read, daemon=True)
        reader.start()
        try:
            process.wait(timeout=timeout)
            status = "graded"
        except subprocess.TimeoutExpired:
            status = "timeout"
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if box.as_root:
            _kill_user(uid)
        process.wait()
        reader.join(timeout=5)
        stderr = process.stderr.read()[-2000:].decode(errors="replace")
        records: dict = {"": {}}
        for line in b"".join(chunks).decode(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("id"), str):
                records[record["id"]] = record
            elif isinstance(record, dict):
                records[""].update(record)
        if status == "graded" and not records[""].get("done") and "notebook" not in records[""]:
            status = "error"
            return status, records, (f"the sandbox stopped early (exit {process.returncode}): "
                                     + stderr.strip().replace("\n", " ")[-300:]), uid
        return status, records, "", uid
    finally:
        shutil.rmtree(inputs, ignore_errors=True)


class Grader:
    """The trusted engine for one problem set: load once, then :meth:`grade` each notebook."""

    def __init__(self, autograder: Path, *, timeout: float = 600, memory_mb: int = 4096):
        self.assignment = load_assignment(autograder)
        self.timeout = timeout
        self.stage = Path(tempfile.mkdtemp(prefix="grade-stage-"))
        self.stage.chmod(0o755)
        self.box = make_sandbox(self.stage, memory_mb)
        self.groups = []
        for index, (questions, withheld) in enumerate(self.assignment.groups):
            copy = stub_attnlib(withheld, self.stage / f"attnlib-{index}")
            for path in (copy.parent, copy, *copy.rglob("*")):
                path.chmod(0o755 if path.is_dir() else 0o644)
            calls = [(call_id, name, None, None) for q in questions
                     for call_id, name, _, _ in self.assignment.calls[q]]
            pickled = {call_id: p for q in questions
                       for call_id, _, p, _ in self.assignment.calls[q]}
            self.groups.append((questions, copy, self._calls_file(calls, pickled)))

    def _calls_file(self, calls, pickled) -> bytes:
        """The calls' inputs as one pickle of (id, function name, args, kwargs)."""
        import pickle

        class Unpickler(pickle.Unpickler):
            def persistent_load(self, pid):
                return _Setup(pid[1])

        entries = []
        for call_id, name, _, _ in calls:
            import io
            args, kwargs = Unpickler(io.BytesIO(pickled[call_id])).load()
            entries.append((call_id, name, args, kwargs))

        import io

        class Pickler(pickle.Pickler):
            def persistent_id(self, obj):
                return ("setup", obj.name) if isinstance(obj, _Setup) else None

        buffer = io.BytesIO()
        Pickler(buffer, protocol=4).dump(entries)
        return buffer.getvalue()

    def close(self) -> None:
        shutil.rmtree(self.stage, ignore_errors=True)

    def grade(self, submission: Path) -> Result:
        """Grade one notebook; never raises for a bad one."""
        start = time.monotonic()
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
        for questions, copy, calls in self.groups:
            status, records, message, uid = _run_sandboxed(self.box, copy, text, calls,
                                                           self.timeout)
            statuses.append(status)
            result.user = (f"uid {uid}" if self.box.as_root else
                           f"uid {os.geteuid()} (user namespace)")
            if message:
                reasons.append(message)
            meta = records.pop("")
            if meta.get("notebook"):
                reasons.append(meta["notebook"])
            for error in meta.get("cell_errors", [])[:3]:
                flagged.add(f"notebook {error}"[:160])
            for record in records.values():
                if record.get("withheld"):
                    flagged.add(f"calls a withheld attnlib function ({record['error'][:120]})")
                if record.get("not_own"):
                    flagged.add(record["error"][:160])
            returned.update(records)
        if "timeout" in statuses:
            result.status = "timeout"
            result.message = f"stopped after {self.timeout:g} s"
        elif "error" in statuses:
            result.message = "; ".join(reasons)[:500]
        else:
            for name, question in self.assignment.questions.items():
                failures = _run_checks(self.assignment, question,
                                       _Replayer(self.assignment, name, returned))
                result.scores[name] = _score(question, failures)
                result.max_scores[name] = question.points
                if failures:
                    reasons.append(f"{name}: {failures[0][:160]}")
            result.status = "graded"
            result.message = "; ".join(reasons)[:1000]
        result.flags = sorted(set(result.flags) | flagged)
        result.seconds = time.monotonic() - start
        return result


@dataclass(frozen=True)
class _Setup:
    name: str


def write_csv(results: list[Result], path: Path) -> Path:
    """One row per submission; a column per question seen in any graded submission."""
    questions = sorted({name for result in results for name in result.max_scores})
    maximum = {name: max(r.max_scores.get(name, 0.0) for r in results) for name in questions}
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", "status", "total", "max", *questions, "seconds", "user",
                         "flags", "message"])
        for r in results:
            writer.writerow([r.submission, r.status, f"{sum(r.scores.values()):g}",
                             f"{sum(maximum.values()):g}",
                             *(f"{r.scores.get(name, 0.0):g}" for name in questions),
                             f"{r.seconds:.1f}", r.user, "; ".join(r.flags), r.message])
    return path


def grade_folder(autograder: Path, folder: Path, out: Path, *, timeout: float = 600,
                 jobs: int = 1, user: str = "auto", otter: str | None = None,
                 engine: str = "sandbox", memory_mb: int = 4096) -> list[Result]:
    """Grade every ``*.ipynb`` of ``folder``; write ``out`` (CSV) and return the rows.

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
    if engine == "sandbox":
        grader = Grader(autograder.resolve(), timeout=timeout, memory_mb=memory_mb)
        try:
            with ThreadPoolExecutor(jobs) as pool:
                results = list(pool.map(grader.grade, submissions))
        finally:
            grader.close()
    elif engine == "otter":
        otter = otter or str(Path(sys.executable).with_name("otter"))
        account = grading_user(user, otter)

        def one(path: Path) -> Result:
            try:
                return grade_one(autograder.resolve(), path, otter=otter, timeout=timeout,
                                 user=account)
            except Exception as error:   # a bad notebook is a row, never a stopped batch
                return Result(path.name, "error", 0.0, "", message=f"{type(error).__name__}: "
                              f"{error}"[:300])

        with ThreadPoolExecutor(jobs) as pool:
            results = list(pool.map(one, submissions))
    else:
        raise ValueError(f"engine must be 'sandbox' or 'otter', got {engine!r}")
    write_csv(results, out)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("autograder", type=Path, help="the problem set's autograder zip")
    parser.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    parser.add_argument("--out", type=Path, default=Path("scores.csv"))
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
    args = parser.parse_args()
    results = grade_folder(args.autograder, args.submissions, args.out, timeout=args.timeout,
                           jobs=args.jobs, user=args.user, engine=args.engine,
                           memory_mb=args.memory_mb)
    for r in results:
        print(f"{r.submission}: {r.status}, {sum(r.scores.values()):g} of "
              f"{sum(r.max_scores.values()):g} ({r.seconds:.0f} s)"
              + (f"; flags: {'; '.join(r.flags)}" if r.flags else ""))
    print(f"scores -> {args.out}")


if __name__ == "__main__":
    main()
