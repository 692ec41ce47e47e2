"""Task grids (attnbook/experiments/_tasks.py): serial, LocalCluster and an external Dask
cluster give identical stored histories; Ctrl-C leaves the stored file untouched."""

from __future__ import annotations

import json
import os
import shutil
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
from attnbook import experiments
from attnbook.experiments import TaskGrid, run_grid
from attnbook.experiments._tasks import merge_tasks
from conftest import stop_process

TESTS = Path(__file__).resolve().parent
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(TESTS)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])}


@pytest.fixture(autouse=True)
def task_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The task caches of the runs a test starts, here or in a child process, in a folder of
    its own (never the user's ~/.cache)."""
    folder = tmp_path_factory.mktemp("task_cache")
    monkeypatch.setenv("ATTNBOOK_CACHE", str(folder))
    monkeypatch.setitem(ENV, "ATTNBOOK_CACHE", str(folder))
    return folder


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(experiments, "STORED_DIR", tmp_path)
    return tmp_path


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
            stop_process(process)


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


def test_a_parallel_run_keeps_each_task_as_it_finishes(
        task_cache: Path, capsys: pytest.CaptureFixture) -> None:
    """With workers too, every finished task is kept at once (a rerun reuses them all) and
    the history is the serial one."""
    from attnbook.experiments._tasks import TaskCache

    grid = experiments.task_grid("tiny_grid")
    cache = TaskCache("tiny_grid", "a parallel run")
    parallel = run_grid(grid, workers=2, cache=cache)
    assert all(cache.get(cache.key("task", grid.task, args)) is not None for args in grid.tasks)
    again = run_grid(grid, cache=cache)
    assert f"tiny_grid: reused {len(grid.tasks)} of {len(grid.tasks)} tasks" in \
        capsys.readouterr().err
    serial = run_grid(grid)
    assert all(np.array_equal(parallel[key], serial[key]) and
               np.array_equal(again[key], serial[key]) for key in serial)


def test_non_grid_experiments_are_one_task() -> None:
    grid = experiments.task_grid("langevin_temperatures_lora", full=False)
    assert grid.tasks == [(False,)]


CLI = textwrap.dedent("""
    import sys
    from pathlib import Path
    import grid_fixture
    from attnbook import experiments
    from attnbook.experiments.__main__ import main
    experiments.STORED_DIR = Path(sys.argv[1])
    sys.exit(main(sys.argv[2:]))
""")


@pytest.mark.parametrize("stop, options, status, word", [
    (signal.SIGINT, [], 130, "interrupted"), (signal.SIGINT, ["--workers", "2"], 130, "interrupted"),
    (signal.SIGTERM, [], 143, "terminated")], ids=["ctrl-c", "ctrl-c-2-workers", "sigterm"])
def test_a_stopped_run_leaves_the_stored_file_untouched(store: Path, tmp_path: Path, stop: int,
                                                        options: list[str], status: int,
                                                        word: str) -> None:
    """Ctrl-C or SIGTERM while a task runs: a clear message, no traceback, no save."""
    experiments.save("slow_grid", {"old": np.arange(4.0)})
    before = (store / "slow_grid.npz").read_bytes()
    markers = tmp_path / "markers"
    markers.mkdir()
    child = subprocess.Popen([sys.executable, "-c", CLI, str(store), "slow_grid", *options],
                             env={**ENV, "ATTNLIB_TEST_MARKERS": str(markers)},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True,
                             # SIGINT back to its default: a background shell may ignore it
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 90
        while not any(markers.iterdir()) and time.monotonic() < deadline:
            assert child.poll() is None, child.communicate()
            time.sleep(0.2)
        assert any(markers.iterdir()), "no task started"
        child.send_signal(stop)
        out, err = child.communicate(timeout=60)
    finally:
        stop_process(child)
    assert child.returncode == status, err
    assert f"{word}: slow_grid was not saved" in err
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


# ----------------------------------------------- issue 27: Dask failures fail fast
@pytest.fixture()
def worker_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Worker processes import grid_fixture and find the marker folder."""
    monkeypatch.setenv("PYTHONPATH", ENV["PYTHONPATH"])
    markers = tmp_path / "markers"
    markers.mkdir()
    monkeypatch.setenv("ATTNLIB_TEST_MARKERS", str(markers))
    return markers


def test_a_lost_worker_is_retried_and_the_results_are_unchanged(worker_env: Path) -> None:
    grid = TaskGrid([(0,), (1,)], grid_fixture.flaky_task, merge_tasks)
    history = run_grid(grid, workers=2)
    assert (worker_env / "killed").exists()                   # the worker was killed once
    assert history == {"task0": 0.0, "task1": 1.0}


def test_a_task_that_keeps_killing_its_worker_fails_fast(worker_env: Path) -> None:
    from distributed.scheduler import KilledWorker

    grid = TaskGrid([(0,), (1,)], grid_fixture.killer_task, merge_tasks)
    start = time.monotonic()
    with pytest.raises(KilledWorker) as error:
        run_grid(grid, workers=2)
    assert "task 1 of 2, arguments (1,)" in "".join(error.value.__notes__)
    assert time.monotonic() - start < 55      # well before the other task's 60 s sleep ends


def test_the_cli_exits_at_once_with_a_clear_message_when_a_task_fails(
        store: Path, tmp_path: Path) -> None:
    start = time.monotonic()
    done = subprocess.run([sys.executable, "-c", CLI, str(store), "broken_grid", "--workers",
                           "2"], env=ENV, capture_output=True, text=True, timeout=55)
    assert done.returncode == 1, done.stderr
    assert "error: broken_grid failed (ValueError: task 1 is broken)" in done.stderr
    assert "task 1 of 3, arguments (1,)" in done.stderr and "Traceback" not in done.stderr
    assert time.monotonic() - start < 55 and not (store / "broken_grid.npz").exists()


def test_a_cluster_start_that_loses_a_worker_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    from attnlib import sweep          # the runner's one home (attnbook's _tasks re-exports it)

    calls: list[int] = []

    def flaky_start(workers: int) -> object:
        calls.append(workers)
        if len(calls) == 1:
            raise RuntimeError("Nanny failed to start")
        return "cluster"

    monkeypatch.setattr(sweep, "local_cluster", flaky_start)
    assert sweep._start_local_cluster(2) == "cluster" and calls == [2, 2]
    monkeypatch.setattr(sweep, "local_cluster", lambda workers: 1 / 0)
    with pytest.raises(RuntimeError, match="did not start in 3 attempts"):
        sweep._start_local_cluster(2)


# ------------------------------------------ issue 27: local services on 127.0.0.1 only
def test_every_local_cluster_service_listens_on_loopback_only() -> None:
    import psutil
    from distributed import Client

    from attnbook.experiments._tasks import local_cluster

    with local_cluster(2) as cluster, Client(cluster) as client:
        client.wait_for_workers(2, timeout=60)
        me = psutil.Process()
        processes = [me] + me.children(recursive=True)
        listening = [conn.laddr for process in processes
                     for conn in process.net_connections(kind="inet")
                     if conn.status == psutil.CONN_LISTEN]
    assert len(listening) >= 5              # scheduler, its HTTP server, workers, nannies
    assert {address.ip for address in listening} == {"127.0.0.1"}, listening


def _self_signed(folder: Path) -> tuple[str, str]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return str(cert), str(key)


def test_a_tls_scheduler_runs_the_grid_with_a_security_configuration(tmp_path: Path) -> None:
    if not shutil.which("openssl"):
        pytest.skip("openssl is needed to make a test certificate")
    from distributed import LocalCluster, Security

    cert, key = _self_signed(tmp_path)
    security = Security(tls_ca_file=cert, tls_scheduler_cert=cert, tls_scheduler_key=key,
                        tls_worker_cert=cert, tls_worker_key=key, tls_client_cert=cert,
                        tls_client_key=key, require_encryption=True)
    grid = TaskGrid([(v,) for v in (5, 3)], _sum_task, merge_tasks)
    with LocalCluster(n_workers=1, processes=False, protocol="tls://", host="127.0.0.1",
                      security=security, dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tls://127.0.0.1:")
        history = run_grid(grid, scheduler=cluster.scheduler_address, security=security)
    assert history == run_grid(grid)
    with pytest.raises(TypeError, match="^security must be a distributed.Security"):
        run_grid(grid, scheduler="tls://127.0.0.1:1", security="cert.pem")


def test_a_missing_distributed_extra_is_a_clear_error(monkeypatch):
    """Serial grids need only the core install; workers need attnlib[sweep] (Dask)."""
    from attnbook.experiments import _tasks

    grid = _tasks.TaskGrid([(1,), (2,)], _square_task, _tasks.merge_tasks)
    monkeypatch.setitem(sys.modules, "distributed", None)      # as if not installed
    assert _tasks.run_grid(grid, workers=1)["square_2"].tolist() == [4.0]
    with pytest.raises(ImportError, match=r"pip install 'attnlib\[sweep\]'"):
        _tasks.run_grid(grid, workers=2)


def _square_task(x: int) -> dict:
    return {f"square_{x}": np.array([float(x * x)])}



def test_a_server_that_is_not_a_dask_scheduler_gives_a_clear_error() -> None:
    import socket
    import threading

    from attnlib.sweep import _connect

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()

    def answer_garbage() -> None:             # a huge "frame length", as another server might
        try:
            connection, _ = server.accept()
            connection.sendall(b"\xff" * 64)
            time.sleep(2)
            connection.close()
        except OSError:
            pass

    threading.Thread(target=answer_garbage, daemon=True).start()
    try:
        with pytest.raises(ConnectionError, match=r"scheduler: no Dask scheduler answered at "
                                                  r"'tcp://127\.0\.0\.1:\d+'"):
            _connect(f"tcp://127.0.0.1:{server.getsockname()[1]}", None)
    finally:
        server.close()
    with pytest.raises(ValueError, match="scheduler must be an address such as"):
        _connect("127.0.0.1", None)
