"""Sweeps as tables (attnlib/sweep.py): a function over a grid of named axes, serially or on
Dask workers, with each result next to its grid point; the main guard of scripts."""

from __future__ import annotations

import doctest
import functools
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from attnlib import sweep

TESTS = Path(__file__).resolve().parent
SEEDS, SIZES = [0, 1, 2], [100, 200, 400]


def noisy_mean(seed: int, n: int) -> dict:
    """A seeded task with a scalar, an integer and an array result."""
    draws = np.random.default_rng(seed).standard_normal(n)
    return {"mean": draws.mean(), "negative": int((draws < 0).sum()), "head": draws[:3]}


def _script() -> str:
    """The complete script of run_sweep's Examples, as a user would copy it."""
    doc = sweep.run_sweep.__doc__
    block = doc.split("::\n", 1)[1].split("\n    The same sweep")[0]
    return textwrap.dedent(block).strip() + "\n"


def _run_script(tmp_path: Path, source: str, timeout: float) -> tuple[subprocess.CompletedProcess,
                                                                       float]:
    path = tmp_path / "sweep_loss.py"
    path.write_text(source)
    start = time.monotonic()
    done = subprocess.run([sys.executable, str(path)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=timeout)
    return done, time.monotonic() - start


# ------------------------------------------------------------------------- the table
def test_a_3x3_sweep_is_a_table_with_the_grid_coordinates() -> None:
    result = sweep.run_sweep(noisy_mean, {"seed": SEEDS, "n": SIZES})
    assert repr(result) == "Sweep(seed: 3 values, n: 3 values; 9 results)"
    assert len(result) == 9 and result.shape == (3, 3)
    frame = result.to_frame()
    assert list(frame.columns) == ["seed", "n", "mean", "negative", "head"]
    assert len(frame) == 9
    assert frame["seed"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    assert frame["n"].tolist() == SIZES * 3
    direct = [noisy_mean(seed=seed, n=n) for seed in SEEDS for n in SIZES]
    assert frame["mean"].dtype == np.float64 and frame["negative"].dtype == np.int64
    assert np.array_equal(frame["mean"].to_numpy(), [d["mean"] for d in direct])
    assert frame["negative"].tolist() == [d["negative"] for d in direct]
    assert frame["head"].dtype == object          # arrays are kept whole, one per cell
    assert all(np.array_equal(cell, d["head"]) for cell, d in zip(frame["head"], direct))
    # the same numbers as arrays with one axis per grid axis
    assert np.array_equal(result.array("mean"),
                          [[noisy_mean(s, n)["mean"] for n in SIZES] for s in SEEDS])
    assert result.array("head").shape == (3, 3, 3)
    assert [point for point, _ in result][:2] == [{"seed": 0, "n": 100}, {"seed": 0, "n": 200}]


def test_scalar_results_make_one_column_and_keys_may_not_clash_with_axes() -> None:
    frame = sweep.run_sweep(lambda x, y=1: x * y, {"x": range(3), "y": (2.0,)}).to_frame()
    assert list(frame.columns) == ["x", "y", "result"] and frame["result"].tolist() == [0, 2, 4]
    clash = sweep.run_sweep(lambda seed: {"seed": seed}, {"seed": [1]})
    with pytest.raises(ValueError, match="result key 'seed' is also an axis name"):
        clash.to_frame()
    ragged = sweep.run_sweep(lambda n: np.zeros(n), {"n": [1, 2]})
    with pytest.raises(ValueError, match="different shapes"):
        ragged.array()
    with pytest.raises(TypeError, match="name one of their keys"):
        sweep.run_sweep(noisy_mean, {"seed": [0], "n": [5]}).array()


def test_fixed_options_are_bound_with_partial_and_kwargs_tasks_take_any_axis() -> None:
    result = sweep.run_sweep(functools.partial(noisy_mean, n=10), {"seed": [4, 5]})
    assert result.array("negative").tolist() == [noisy_mean(s, 10)["negative"] for s in (4, 5)]
    assert sweep.run_sweep(lambda **kw: sum(kw.values()), {"a": [1], "b": [2, 3]}).results == (3, 4)


def test_to_frame_without_pandas_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    result = sweep.run_sweep(noisy_mean, {"seed": [0], "n": [5]})
    monkeypatch.setitem(sys.modules, "pandas", None)          # as if not installed
    with pytest.raises(ImportError, match=r"pip install 'attnlib\[sweep\]'"):
        result.to_frame()
    monkeypatch.setitem(sys.modules, "distributed", None)
    assert len(sweep.run_sweep(noisy_mean, {"seed": [0], "n": [5]}, workers=1)) == 1
    with pytest.raises(ImportError, match=r"pip install 'attnlib\[sweep\]'"):
        sweep.run_sweep(noisy_mean, {"seed": [0], "n": [5]}, workers=2)


def test_the_docstring_examples_run_as_doctests() -> None:
    results = doctest.testmod(sweep, verbose=False)
    assert results.attempted >= 8 and results.failed == 0


# ----------------------------------------------------------------------- bad axes
@pytest.mark.parametrize("axes, error, message", [
    ({}, ValueError, r"^axes must name at least one parameter"),
    ([("seed", [0])], TypeError, r"^axes must be a mapping"),
    ({"seed": [], "n": [1]}, ValueError, r"^axes\['seed'\] is empty"),
    ({"seed": 3, "n": [1]}, TypeError, r"^axes\['seed'\] must be a collection of values .*"
                                       r"got int 3 \(for a single value use \[3\]\)"),
    ({"seed": "012", "n": [1]}, TypeError, r"^axes\['seed'\] must be a collection of values, "
                                           r"got the string '012'"),
    ({"seed": {0, 1}, "n": [1]}, TypeError, r"^axes\['seed'\] is a set, whose order is not"),
    ({"seed": [0], "n": [1], "m": [2]}, TypeError,
     r"^axes: noisy_mean\(\) takes no keyword argument 'm' \(its keyword parameters: seed, n\)"),
    ({"seed": [0]}, TypeError, r"^axes: noisy_mean\(\) needs 'n', which is not an axis"),
    ({1: [0]}, TypeError, r"^axes: 1 is not a parameter name"),
])
def test_bad_axes_name_themselves(axes: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        sweep.run_sweep(noisy_mean, axes)


def test_bad_tasks_and_workers_name_themselves() -> None:
    with pytest.raises(TypeError, match="^task must be callable"):
        sweep.run_sweep("noisy_mean", {"seed": [0]})
    with pytest.raises(ValueError, match="^workers must be at least 1"):
        sweep.run_sweep(noisy_mean, {"seed": [0], "n": [1]}, workers=0)
    with pytest.raises(ValueError, match="more than"):
        sweep.run_sweep(lambda a, b: 0, {"a": range(10 ** 5), "b": range(10 ** 4)})
    with pytest.raises(TypeError, match="^arguments must be a sequence of tuples"):
        sweep.run_tasks(noisy_mean, [1, 2])


# ----------------------------------------------------------- serial against workers
def test_serial_and_two_workers_give_the_same_numbers(monkeypatch: pytest.MonkeyPatch) -> None:
    """One small local cluster (a few seconds): the worker processes import this module."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        [str(TESTS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    serial = sweep.run_sweep(noisy_mean, {"seed": SEEDS, "n": SIZES}).to_frame()
    parallel = sweep.run_sweep(noisy_mean, {"seed": SEEDS, "n": SIZES}, workers=2).to_frame()
    assert parallel[["seed", "n", "mean", "negative"]].equals(
        serial[["seed", "n", "mean", "negative"]])          # same values, same dtypes
    assert np.array_equal(parallel["mean"].to_numpy(), serial["mean"].to_numpy())
    assert all(np.array_equal(a, b) for a, b in zip(parallel["head"], serial["head"]))


# ------------------------------------------------------------------ the main guard
def test_the_documented_script_runs_with_its_guard(tmp_path: Path) -> None:
    script = _script()
    assert 'if __name__ == "__main__":' in script and "workers=2" in script
    done, _ = _run_script(tmp_path, script, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = done.stdout.strip().splitlines()
    assert rows[0].split() == ["seed", "n", "loss"] and len(rows) == 10


def test_a_script_without_the_main_guard_fails_at_once_with_one_clear_line(
        tmp_path: Path) -> None:
    head, guarded = _script().split('if __name__ == "__main__":\n')
    done, seconds = _run_script(tmp_path, head + textwrap.dedent(guarded), timeout=120)
    assert done.returncode == 1 and seconds < 30, (seconds, done.stderr[-3000:])
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("attnlib.sweep.MainGuardError: sweep_loss.py calls "
                                "run_sweep(workers=2) from its top-level code (line 14) "
                                "without a main guard")
    assert 'wrap the call in if __name__ == "__main__":' in lines[-1]
    assert done.stderr.count("Traceback") == 1 and len(lines) < 15, done.stderr
    assert done.stdout == ""


def test_a_function_called_at_top_level_without_the_guard_is_caught(tmp_path: Path) -> None:
    head, guarded = _script().split('if __name__ == "__main__":\n')
    source = head + "def main():\n" + guarded + "\nmain()\n"
    done, seconds = _run_script(tmp_path, source, timeout=120)
    assert done.returncode == 1 and seconds < 30, done.stderr[-3000:]
    assert "MainGuardError" in done.stderr.strip().splitlines()[-1]


def test_a_re_imported_script_is_stopped_in_the_child_too(tmp_path: Path) -> None:
    """Where the parent could not decide, the worker process, which imports the script as
    ``__mp_main__``, stops at the call with the same fix."""
    path = tmp_path / "child.py"
    path.write_text("from attnlib import sweep\n"
                    "sweep.run_sweep(lambda seed: seed, {'seed': [0]}, workers=2)\n")
    done = subprocess.run([sys.executable, "-c", "import runpy, sys; "
                           "runpy.run_path(sys.argv[1], run_name='__mp_main__')", str(path)],
                          capture_output=True, text=True, timeout=120)
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode == 1 and last.startswith("attnlib.sweep.MainGuardError: run_sweep("
                                                    "workers=2) was called in a process")
    assert 'wrap the call in if __name__ == "__main__":' in last


@pytest.mark.parametrize("command", [
    [sys.executable, "-c"],
    [str(Path(sys.executable).parent / "ipython"), "--quick", "--no-banner", "-c"],
], ids=["python-c", "ipython"])
def test_interactive_sessions_need_no_guard(command: list[str]) -> None:
    if not Path(command[0]).exists():
        pytest.skip("IPython is not installed")
    code = ("from attnlib import sweep\n"
            "sweep._check_main_guard(2, 'run_sweep')\n"
            "print('no guard needed')\n")
    done = subprocess.run([*command, code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "no guard needed" in done.stdout, done.stderr[-2000:]


@pytest.mark.parametrize("source, line, guarded", [
    ("import x\nx.run()\n", 2, False),
    ('if __name__ == "__main__":\n    x.run()\n', 2, True),
    ("if '__main__' == __name__:\n    x.run()\n", 2, True),
    ('if __name__ == "__main__":\n    pass\nelse:\n    x.run()\n', 4, False),
    ('if __name__ != "__main__":\n    x.run()\n', 2, False),
    ('if __name__ != "__main__":\n    pass\nelse:\n    x.run()\n', 4, True),
    ('import sys\nif __name__ != "__main__":\n    sys.exit()\nx.run()\n', 4, True),
    ("def main():\n    x.run()\n\nmain()\n", 4, False),
    ('def main():\n    x.run()\n\nif __name__ == "__main__":\n    main()\n', 5, True),
    ("for n in (1, 2):\n    try:\n        x.run(n)\n    finally:\n        pass\n", 3, False),
    ('import logging\nlog = logging.getLogger(__name__)\nx.run()\n', 3, False),
    ('IS_MAIN = __name__ == "__main__"\nif IS_MAIN:\n    x.run()\n', 3, None),
    ("import multiprocessing as mp\nif mp.parent_process() is None:\n    x.run()\n", 3, None),
    ("x.run(\n    1,\n    2)\n", 2, False),
    ("not python (\n", 1, None),
])
def test_the_guard_is_read_from_the_script(source: str, line: int, guarded: bool | None
                                           ) -> None:
    assert sweep._statement_guarded(source, line) is guarded
