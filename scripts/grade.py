"""Grade a folder of problem-set submissions with an autograder zip, one CSV of scores.

Usage (from the repository root, with the environment's Python)::

    .venv/bin/python scripts/grade.py AUTOGRADER.zip SUBMISSIONS/ [--out scores.csv]
        [--timeout 600] [--jobs 1] [--user nobody]

Each ``*.ipynb`` in ``SUBMISSIONS`` is graded by ``otter run`` (no container) in its own
temporary directory, with that directory as ``HOME`` and ``TMPDIR``, as the unprivileged
``--user`` when this script runs as root (otherwise as the calling user), and is stopped with
every process it started after ``--timeout`` seconds (a submission that sleeps or loops forever
scores 0 with status ``timeout``). The CSV has one row per submission: status (``graded``,
``timeout``, ``error``), total and maximum score, one column per question, the grading time,
and ``flags``: code a human should read before trusting the score, found by reading the
submission's source outside the grading process (rebinding a function of a module, touching
builtins, the profiler, the grader or the test files, reading files, exec/eval). What this
Docker-free path does not protect against is listed in book/teaching_guide.md; ``otter grade``
runs each submission in a Docker container instead.
"""

from __future__ import annotations

import argparse
import ast
import csv
import json
import os
import pwd
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
                 jobs: int = 1, user: str = "auto", otter: str | None = None
                 ) -> list[Result]:
    """Grade every ``*.ipynb`` of ``folder``; write ``out`` (CSV) and return the rows."""
    if not autograder.is_file():
        raise ValueError(f"autograder must be an autograder zip file, got {autograder}")
    submissions = sorted(folder.glob("*.ipynb"))
    if not submissions:
        raise ValueError(f"folder {folder} holds no .ipynb submission")
    if timeout <= 0 or jobs < 1:
        raise ValueError(f"timeout must be > 0 and jobs >= 1, got {timeout} and {jobs}")
    otter = otter or str(Path(sys.executable).with_name("otter"))
    account = grading_user(user, otter)
    with ThreadPoolExecutor(jobs) as pool:
        results = list(pool.map(lambda path: grade_one(autograder.resolve(), path, otter=otter,
                                                       timeout=timeout, user=account),
                                submissions))
    write_csv(results, out)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("autograder", type=Path, help="the problem set's autograder zip")
    parser.add_argument("submissions", type=Path, help="folder of submitted .ipynb files")
    parser.add_argument("--out", type=Path, default=Path("scores.csv"))
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per submission")
    parser.add_argument("--jobs", type=int, default=1, help="submissions graded at once")
    parser.add_argument("--user", default="auto",
                        help="account to grade as when run as root: auto (nobody if it can "
                             "run the environment), a name, or '' for root")
    args = parser.parse_args()
    results = grade_folder(args.autograder, args.submissions, args.out, timeout=args.timeout,
                           jobs=args.jobs, user=args.user)
    for r in results:
        print(f"{r.submission}: {r.status}, {sum(r.scores.values()):g} of "
              f"{sum(r.max_scores.values()):g} ({r.seconds:.0f} s)"
              + (f"; flags: {'; '.join(r.flags)}" if r.flags else ""))
    print(f"scores -> {args.out}")


if __name__ == "__main__":
    main()
