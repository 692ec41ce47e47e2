"""Task grids (attnlib/experiments/_tasks.py): serial, LocalCluster and an external Dask
cluster give identical stored histories; Ctrl-C leaves the stored file untouched."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

import grid_fixture  # noqa: F401  (registers tiny_grid and slow_grid)
from attnlib import experiments
from attnlib.experiments import TaskGrid, run_grid

TESTS = Path(__file__).resolve().parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(TESTS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(experiments, "STORED_DIR", tmp_path)
    return tmp_path


def _stop(process: subprocess.Popen) -> None:
    """Stop a process this test started, with the processes it started (its session)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture()
def external_cluster(tmp_path: Path) -> Iterator[str]:
    """A ``dask scheduler`` and one ``dask worker`` on 127.0.0.1, as separate processes."""
    dask = str(Path(sys.executable).parent / "dask")
    scheduler_file = tmp_path / "scheduler.json"
    started = []
    try:
        started.append(subprocess.Popen(
            [dask, "scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(scheduler_file)], env=ENV, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        deadline = time.monotonic() + 60
        while not scheduler_file.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        address = json.loads(scheduler_file.read_text())["address"]
        started.append(subprocess.Popen(
            [dask, "worker", address, "--nthreads", "1", "--nworkers", "1", "--host",
             "127.0.0.1", "--no-dashboard"], env=ENV, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(1, timeout=60)
        yield address
    finally:
        for process in reversed(started):
            _stop(process)


def _stored_same(first: str, second: str) -> bool:
    a, b = experiments.load(first), experiments.load(second)
    return set(a) == set(b) and all(a[k].dtype == b[k].dtype and np.array_equal(a[k], b[k])
                                    for k in a)


def test_serial_local_cluster_and_external_scheduler_store_identical_histories(
        store: Path, external_cluster: str) -> None:
    serial = experiments.run("tiny_grid")
    assert len([key for key in serial if key.endswith("/loss")]) == len(grid_fixture.SEEDS)
    experiments.save("serial", serial)
    experiments.save("local", experiments.run("tiny_grid", workers=2))
    experiments.save("external", experiments.run("tiny_grid", scheduler=external_cluster))
    assert _stored_same("serial", "local") and _stored_same("serial", "external")
    # the serial run is the plain loop over the tasks
    grid = experiments.task_grid("tiny_grid")
    loop = grid.assemble([grid.task(*args) for args in grid.tasks])
    assert all(np.array_equal(loop[key], serial[key]) for key in loop)


def _sum_task(value: int) -> dict[str, np.ndarray]:
    return {f"v{value}": np.asarray(value)}


def test_results_reach_assemble_in_task_order() -> None:
    order = []

    def assemble(results: list) -> dict:
        order.extend(int(next(iter(r.values()))) for r in results)
        return {}

    run_grid(TaskGrid([(v,) for v in (5, 3, 9)], _sum_task, assemble))
    assert order == [5, 3, 9]


def test_bad_arguments_name_themselves() -> None:
    grid = TaskGrid([(1,)], _sum_task, dict)
    with pytest.raises(ValueError, match="workers"):
        run_grid(grid, workers=0)
    with pytest.raises(ValueError, match="not both"):
        run_grid(grid, workers=2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(TypeError, match="scheduler"):
        run_grid(grid, scheduler=8786)
    with pytest.raises(TypeError, match="tuples"):
        TaskGrid([1, 2], _sum_task, dict)
    with pytest.raises(ValueError, match="at least one"):
        TaskGrid([], _sum_task, dict)


def test_non_grid_experiments_are_one_task() -> None:
    grid = experiments.task_grid("langevin_temperatures_lora", full=False)
    assert grid.tasks == [(False,)]


CLI = textwrap.dedent("""
    import sys
    from pathlib import Path
    import grid_fixture
    from attnlib import experiments
    from attnlib.experiments.__main__ import main
    experiments.STORED_DIR = Path(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
""")


@pytest.mark.parametrize("options", [[], ["--workers", "2"]], ids=["serial", "2-workers"])
def test_ctrl_c_leaves_the_stored_file_untouched(store: Path, tmp_path: Path,
                                                 options: list[str]) -> None:
    experiments.save("slow_grid", {"old": np.arange(4.0)})
    before = (store / "slow_grid.npz").read_bytes()
    markers = tmp_path / "markers"
    markers.mkdir()
    child = subprocess.Popen([sys.executable, "-c", CLI, str(store), "slow_grid", *options],
                             env={**ENV, "ATTNLIB_TEST_MARKERS": str(markers)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
    try:
        deadline = time.monotonic() + 90
        while not any(markers.iterdir()) and time.monotonic() < deadline:
            assert child.poll() is None, child.communicate()
            time.sleep(0.2)
        assert any(markers.iterdir()), "no task started"
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        _stop(child)
    assert child.returncode == 130, err
    assert "interrupted: slow_grid was not saved" in err
    assert "Traceback" not in err, err
    assert (store / "slow_grid.npz").read_bytes() == before
    assert [path.name for path in store.iterdir() if path.suffix == ".tmp"] == []


def test_a_huge_local_cluster_is_refused_before_starting(store: Path) -> None:
    grid = TaskGrid([(1,)], _sum_task, dict)
    limit = 4 * (os.cpu_count() or 1)
    with pytest.raises(ValueError, match=rf"^workers must be at most {limit}, got 1000000000"):
        run_grid(grid, workers=10 ** 9)
    result = subprocess.run([sys.executable, "-c", CLI, str(store), "tiny_grid", "--workers",
                             str(10 ** 9)], env=ENV, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2, result.stderr
    assert f"error: --workers must be at most {limit}, got 1000000000" in result.stderr
    assert not (store / "tiny_grid.npz").exists()
