"""Stored runs: atomic saves, manifests checked on load, plain names, the command line, and the
benchmark results shipped as package data."""

from __future__ import annotations

import errno
import fnmatch
import hashlib
import io
import json
import math
import os
import re
import signal
import subprocess
import sys
import textwrap
import zipfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import attnlib
from attnbook import experiments
from attnbook.experiments import __main__ as cli

OLD = {"loss": np.linspace(1.0, 0.1, 50), "weights": np.eye(4), "config": np.asarray('{"a": 1}')}
NEW = {f"new{i}": np.random.default_rng(i).random((300, 300)) for i in range(8)}


@pytest.fixture(autouse=True)
def task_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test keeps the task caches of the runs it starts in a folder of its own."""
    folder = tmp_path_factory.mktemp("task_cache")
    monkeypatch.setenv("ATTNBOOK_CACHE", str(folder))
    return folder


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(experiments, "STORED_DIR", tmp_path)
    return tmp_path


def _visible(store: Path) -> list[str]:
    """The files of the store a user sees (the lock file and temporaries are hidden)."""
    return sorted(path.name for path in store.iterdir() if not path.name.startswith("."))


def _same(loaded: dict, expected: dict) -> bool:
    return loaded.keys() == expected.keys() and all(
        np.array_equal(loaded[key], expected[key]) for key in expected)


def test_save_and_load_round_trip_with_manifest(store: Path) -> None:
    path = experiments.save("run_a", OLD)
    assert path == store / "run_a.npz" and _same(experiments.load("run_a"), OLD)
    with np.load(path) as raw:
        listed = json.loads(str(raw[experiments.MANIFEST_KEY]))
    assert listed["weights"] == {"shape": [4, 4], "dtype": "<f8", "sha256": hashlib.sha256(
        np.eye(4).tobytes()).hexdigest()}
    tracked = store / "run_a.manifest.json"                    # the copy kept apart
    assert _visible(store) == ["run_a.manifest.json", "run_a.npz"]
    assert [p.name for p in store.iterdir() if p.suffix == ".tmp"] == []   # none left behind
    assert json.loads(tracked.read_text()) == listed


@pytest.mark.parametrize("name", ["../../x", "a/b", "x.y", "", ".hidden", "9lives", None])
def test_store_names_must_be_plain_identifiers(store: Path, name: object) -> None:
    for call in (lambda: experiments.save(name, OLD), lambda: experiments.load(name),
                 lambda: experiments.register(name, settings=experiments.settings("scaling"))):
        with pytest.raises(ValueError, match="plain identifier"):
            call()
    assert list(store.iterdir()) == [] and not (store.parent.parent / "x.npz").exists()


def test_object_arrays_are_refused(store: Path) -> None:
    with pytest.raises(TypeError, match="history\\['bad'\\].*object"):
        experiments.save("run_a", {"bad": np.array([{}, 1], dtype=object)})


def _rewrite(path: Path, arrays: dict) -> None:
    """Write ``arrays`` to ``path`` as a plain npz (simulates an edited or partial file)."""
    with open(path, "wb") as handle:
        np.savez_compressed(handle, **arrays)


def test_load_names_file_and_key_of_a_partial_or_edited_file(store: Path) -> None:
    path = experiments.save("run_a", OLD)
    with np.load(path) as raw:
        contents = {key: raw[key] for key in raw.files}
    partial = {key: contents[key] for key in (experiments.MANIFEST_KEY, "loss")}
    _rewrite(path, partial)                      # what SIGINT did to the old in-place save
    with pytest.raises(ValueError, match=r"run_a\.npz is missing key 'weights'"):
        experiments.load("run_a")
    _rewrite(path, {**contents, "weights": np.eye(3)})
    with pytest.raises(ValueError, match=r"run_a\.npz: the \.npy header of key 'weights' "
                                         r"declares shape \(3, 3\).*not decompressed"):
        experiments.load("run_a")
    _rewrite(path, {**contents, "extra": np.zeros(2)})
    with pytest.raises(ValueError, match=r"not in its manifest: \['extra'\]"):
        experiments.load("run_a")
    path.write_bytes(path.read_bytes()[:100])    # what SIGKILL did to the old in-place save
    with pytest.raises(ValueError, match=r"run_a\.npz cannot be read as an npz archive: it is "
                                         r"a truncated or damaged zip archive"):
        experiments.load("run_a")


def test_files_without_manifest_are_refused_until_one_is_written_without_rerun(
        store: Path) -> None:
    _rewrite(store / "legacy.npz", OLD)
    with pytest.raises(ValueError, match=r"legacy\.npz has no manifest .* `python -m "
                                         r"attnbook\.experiments --add-manifest legacy`"):
        experiments.load("legacy")
    assert experiments.add_manifest("legacy") and not experiments.add_manifest("legacy")
    assert _same(experiments.load("legacy", expect=["loss"]), OLD)
    with pytest.raises(ValueError, match=r"legacy\.npz has no key 'missing'"):
        experiments.load("legacy", expect=["loss", "missing"])
    # a manifest of shapes and dtypes only (before hashes) is upgraded by the same command
    shapes = {key: {"shape": list(np.shape(v)), "dtype": np.asarray(v).dtype.str}
              for key, v in OLD.items()}
    _rewrite(store / "older.npz", {experiments.MANIFEST_KEY: np.asarray(json.dumps(shapes)),
                                   **OLD})
    with pytest.raises(ValueError, match="older.npz: the manifest entry of 'loss' must be"):
        experiments.load("older")
    assert cli.main(["--add-manifest"]) == 0
    assert _same(experiments.load("older"), OLD)


@pytest.mark.parametrize("change", ["doubled", "nan", "truncated"])
def test_hashes_detect_changed_values(store: Path, change: str) -> None:
    path = experiments.save("run_a", OLD)
    with np.load(path) as raw:
        contents = {key: raw[key] for key in raw.files}
    loss = contents["loss"]
    contents["loss"] = {"doubled": 2 * loss, "nan": np.full_like(loss, np.nan),
                        "truncated": np.where(np.arange(loss.size) < 25, loss, 0.0)}[change]
    _rewrite(path, contents)
    with pytest.raises(ValueError, match=r"run_a\.npz: the values of key 'loss' do not match "
                                         r"the SHA-256 of its manifest"):
        experiments.load("run_a")
    assert cli.main(["--add-manifest", "run_a"]) == 0          # a deliberate edit, blessed
    assert np.array_equal(experiments.load("run_a")["loss"], contents["loss"], equal_nan=True)


def test_values_edited_with_the_manifest_recomputed_inside_the_file_are_refused(
        store: Path) -> None:
    """The hashes kept apart (stored/manifests.json) catch what the file's own cannot: every
    value doubled and the file's manifest recomputed from the doubled values."""
    path = experiments.save("run_a", OLD)
    doubled = {"loss": 2 * OLD["loss"], "weights": 2 * OLD["weights"], "config": OLD["config"]}
    _rewrite(path, {experiments.MANIFEST_KEY: np.asarray(json.dumps(experiments.manifest(doubled))),
                    **doubled})
    with pytest.raises(ValueError, match=r"run_a\.npz: its manifest differs from the tracked "
                                         r"copy .*run_a\.manifest\.json for keys \['loss', "
                                         r"'weights'\].*--add-manifest run_a"):
        experiments.load("run_a")
    (store / "run_a.manifest.json").unlink()
    with pytest.raises(ValueError, match=r"run_a\.npz has no tracked manifest \(.*run_a\."
                                         r"manifest\.json does not exist\)"):
        experiments.load("run_a")
    assert cli.main(["--add-manifest", "run_a"]) == 0         # a deliberate edit, blessed
    assert _same(experiments.load("run_a"), doubled)


def test_an_npy_header_that_disagrees_with_the_manifest_is_read_before_decompressing(
        store: Path) -> None:
    """A header declaring 10^12 entries with 400 bytes of data: a named error, no allocation."""
    path = experiments.save("run_a", OLD)
    with np.load(path) as raw:
        contents = {key: raw[key] for key in raw.files}
    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False,
                                                  "shape": (10**12,)})
    _rewrite(path, {key: value for key, value in contents.items() if key != "weights"})
    with zipfile.ZipFile(path, "a") as archive:
        archive.writestr("weights.npy", b"\x93NUMPY\x01\x00" + header.getvalue()[8:] + bytes(400))
    with pytest.raises(ValueError, match=r"run_a\.npz: the \.npy header of key 'weights' "
                                         r"declares shape \(1000000000000,\)"):
        experiments.load("run_a")


def test_a_tracked_manifest_that_is_not_json_is_named(store: Path) -> None:
    experiments.save("run_a", OLD)
    (store / "run_a.manifest.json").write_text("{broken")
    with pytest.raises(ValueError, match=r"tracked manifest .*run_a\.manifest\.json is not "
                                         r"valid JSON .*git checkout --"):
        experiments.load("run_a")


def test_declared_sizes_are_checked_before_decompressing(store: Path) -> None:
    path = experiments.save("run_a", OLD)
    with np.load(path) as raw:
        contents = {key: raw[key] for key in raw.files}
    contents["loss"] = np.zeros(2_500_000)                # 20 MB that compress to ~20 kB
    _rewrite(path, contents)
    assert path.stat().st_size < 200_000
    with pytest.raises(ValueError, match=r"key 'loss' declares 20000128 bytes uncompressed, its "
                                         r"manifest's shape and dtype 400; not decompressed"):
        experiments.load("run_a")


@pytest.mark.parametrize("text, problem", [
    ("{not json", "its manifest is not valid JSON"),
    ("[1, 2]", "its manifest must be a JSON object, got list"),
    ('{"loss": 3}', "the manifest entry of 'loss' must be"),
    ('{"loss": {"shape": ["a"], "dtype": "<f8", "sha256": "0"}}', "manifest entry of 'loss'"),
    ('{"loss": {"shape": [50], "dtype": "no such dtype", "sha256": "0"}}',
     "manifest entry of 'loss'"),
])
def test_a_malformed_manifest_is_a_clear_error(store: Path, text: str, problem: str) -> None:
    path = experiments.save("run_a", OLD)
    with np.load(path) as raw:
        contents = {key: raw[key] for key in raw.files}
    _rewrite(path, {**contents, experiments.MANIFEST_KEY: np.asarray(text)})
    with pytest.raises(ValueError, match=re.escape(problem)) as error:
        experiments.load("run_a")
    assert "--add-manifest run_a" in str(error.value)


def test_saved_files_follow_the_umask_and_stale_temporaries_are_removed(store: Path) -> None:
    old_mask = os.umask(0o027)
    try:
        path = experiments.save("run_a", OLD)
        path = experiments.save("run_a", OLD)                 # re-saved over the old file
    finally:
        os.umask(old_mask)
    assert path.stat().st_mode & 0o777 == 0o640
    assert (store / "run_a.manifest.json").stat().st_mode & 0o777 == 0o640
    # temporaries a killed save left, of this run or another, whatever process (or machine)
    # wrote them: every save writes its own under the store's lock, so none is in progress
    stale = [store / ".run_a.npz.abc123.tmp", store / ".run_b.manifest.json.xyz.tmp",
             store / f".run_a.{os.getpid()}.def.tmp"]              # the older naming
    other = store / ".write-check.kept.tmp"                       # not a save's
    for stray in (*stale, other):
        stray.write_bytes(b"partial")
    experiments.save("run_a", OLD)
    assert not any(stray.exists() for stray in stale) and other.exists()


# A child holds the store's lock while it writes a temporary file, as a save on another machine
# sharing the store would; a save here must wait for it and leave its temporary alone.
HOLDER = textwrap.dedent("""
    import fcntl, os, sys, time
    from pathlib import Path
    store = Path(sys.argv[1])
    with open(store / ".lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        temporary = store / ".run_a.npz.inprogress.tmp"
        temporary.write_bytes(b"half written")
        print("holding", flush=True)
        time.sleep(1.5)
        print("intact" if temporary.exists() else "removed", flush=True)
        temporary.unlink()
""")


def test_a_temporary_being_written_under_the_lock_is_never_removed(store: Path) -> None:
    experiments.save("run_a", OLD)
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(store)], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        experiments.save("run_a", NEW)                       # waits for the lock
        assert holder.stdout.readline().strip() == "intact"
    finally:
        holder.wait(timeout=60)
    assert _same(experiments.load("run_a"), NEW)


def test_every_file_in_the_repository_store_loads() -> None:
    names = sorted(path.stem for path in experiments.STORED_DIR.glob("*.npz"))
    assert names, "the repository has stored runs"
    for name in names:
        assert experiments.load(name), name


# A child process saves OLD, then starts saving NEW and is interrupted at a chosen point: in
# the middle of writing the new file, before its fsync, or just before or just after one of the
# renames of the save (1: the tracked manifest lists both runs, 2: the new file replaces the
# old, 3: the tracked manifest lists the new run only).
CHILD = textwrap.dedent("""
    import os, signal, sys
    from pathlib import Path
    import numpy as np
    import numpy.lib.format
    from attnbook import experiments
    experiments.STORED_DIR = Path(sys.argv[1])
    signum, point = int(sys.argv[2]), sys.argv[3]
    experiments.save("victim", {{"loss": np.linspace(1.0, 0.1, 50), "weights": np.eye(4),
                                "config": np.asarray('{{"a": 1}}')}})
    interrupt = lambda *args, **kwargs: os.kill(os.getpid(), signum)
    if point == "mid-write":                    # after the manifest and two arrays
        original, calls = numpy.lib.format.write_array, []
        def write_array(*args, **kwargs):
            calls.append(1)
            if len(calls) == 4:
                interrupt()
            return original(*args, **kwargs)
        numpy.lib.format.write_array = write_array
    elif point == "before-fsync":
        os.fsync = interrupt
    else:                                       # "before-2": just before the second rename
        when, number = point.split("-")
        real, renames = os.replace, []
        def replace(source, target):
            renames.append(target)
            if when == "before" and len(renames) == int(number):
                interrupt()
            real(source, target)
            if when == "after" and len(renames) == int(number):
                interrupt()
        os.replace = replace
    experiments.save("victim", {{f"new{{i}}": np.random.default_rng(i).random((300, 300))
                                for i in range(8)}})
    print("save finished")
""")


def _interruptible() -> None:
    """In the child, before exec: SIGINT back to its default (a run started in the background
    by a non-interactive shell inherits it ignored, and Python then never raises
    KeyboardInterrupt)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: point -> (the run a load finds after SIGKILL there, the temporary files it leaves)
KILLED_AT = {"mid-write": ("old", 1), "before-fsync": ("old", 1), "before-1": ("old", 2),
             "after-1": ("old", 1), "before-2": ("old", 1), "after-2": ("new", 0),
             "before-3": ("new", 1), "after-3": ("new", 0)}


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
@pytest.mark.parametrize("point", list(KILLED_AT))
def test_an_interrupted_save_leaves_the_old_run_or_the_new_one(store: Path, signum: int,
                                                                point: str) -> None:
    """Killed anywhere (at the rename itself too), the store holds the old run or the new one,
    complete and loadable; Ctrl-C during the renames is held until they are done."""
    done = subprocess.run([sys.executable, "-c", CHILD.format(), str(store), str(int(signum)),
                           point], capture_output=True, text=True, timeout=120,
                          preexec_fn=_interruptible)
    assert done.returncode != 0 and "save finished" not in done.stdout, done.stderr
    writing = point in ("mid-write", "before-fsync")
    if signum == signal.SIGINT:
        assert "KeyboardInterrupt" in done.stderr
        expected, stale = ("old" if writing else "new"), 0     # the renames are not cut apart
    else:
        expected, stale = KILLED_AT[point]
    assert _same(experiments.load("victim"), {"old": OLD, "new": NEW}[expected])
    left = [path.name for path in store.iterdir() if path.suffix == ".tmp"]
    assert len(left) == stale and all(name.startswith(".victim.") for name in left), left
    experiments.save("other", {"x": np.ones(2)})          # the next save removes them
    assert [path.name for path in store.iterdir() if path.suffix == ".tmp"] == []
    assert _same(experiments.load("victim"), {"old": OLD, "new": NEW}[expected])


# A child saves the run "shared" over and over for a few seconds while the test loads it.
WRITER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    from attnbook import experiments
    experiments.STORED_DIR = Path(sys.argv[1])
    print("writing", flush=True)
    end, i = time.monotonic() + float(sys.argv[2]), 0
    while time.monotonic() < end:
        i += 1
        experiments.save("shared", {"loss": np.arange(2000.0) + i, "step": np.asarray(i)})
""")


def test_a_load_during_saves_never_refuses_a_complete_run(store: Path) -> None:
    experiments.save("shared", {"loss": np.arange(2000.0), "step": np.asarray(0)})
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(store), "4"],
                              stdout=subprocess.PIPE, text=True)
    loads, steps = 0, set()
    try:
        assert writer.stdout.readline().strip() == "writing"
        while writer.poll() is None:
            run = experiments.load("shared")                # raises if ever refused
            assert np.array_equal(run["loss"], np.arange(2000.0) + run["step"])
            loads, steps = loads + 1, steps | {int(run["step"])}
    finally:
        writer.wait(timeout=60)
    assert loads > 50 and len(steps) > 5, (loads, len(steps))


# ------------------------------------------------------------------------- command line
def test_cli_checks_every_name_before_running_any(monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture) -> None:
    ran: list[str] = []
    monkeypatch.setattr(cli, "run", lambda name, **kwargs: ran.append(name) or {})
    monkeypatch.setattr(cli, "save", lambda name, history: Path(name))
    assert cli.main(["paper1_defaults", "no_such_run", "../x"]) == 2
    err = capsys.readouterr().err
    assert ran == [] and "usage:" in err and "'no_such_run', '../x'" in err
    assert "paper1_defaults" in err and "nothing was run" in err
    assert cli.main(["--all", "paper1_defaults"]) == 2 and ran == []


def test_cli_all_runs_only_stored_experiments(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture) -> None:
    ran: list[str] = []
    monkeypatch.setattr(cli, "run", lambda name, **kwargs: ran.append(name) or {})
    monkeypatch.setattr(cli, "save", lambda name, history: Path(name))
    assert cli.main(["--all"]) == 0
    stored = sorted(path.stem for path in experiments.STORED_DIR.glob("*.npz"))
    assert ran == [name for name in stored if name in experiments.registry()]
    assert "darcy_large" in experiments.registry() and "darcy_large" not in ran
    capsys.readouterr()
    assert cli.main([]) == 0
    listing = capsys.readouterr().out
    assert "* paper1_defaults" in listing and "  darcy_large" in listing


def test_cli_module_exit_status_on_unknown_name() -> None:
    done = subprocess.run([sys.executable, "-m", "attnbook.experiments", "no_such_run"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "unknown experiment(s) 'no_such_run'" in done.stderr


ROOT = Path(__file__).resolve().parents[1]


def test_benchmark_results_load_from_the_package() -> None:
    results = experiments.load_benchmark("attention")
    assert {"meta", "rows", "notes", "langevin"} <= set(results)
    assert results["rows"] and all("impl" in row and "n" in row for row in results["rows"])


def test_benchmark_results_live_with_the_benchmarks() -> None:
    """The benchmarks write beside themselves (benchmarks/results/), not into a package."""
    path = experiments.benchmark_path("attention")
    assert path.parent == ROOT / "benchmarks" / "results" and path.exists()


def test_missing_benchmark_names_the_command() -> None:
    with pytest.raises(FileNotFoundError, match="benchmarks/bench_nothing.py"):
        experiments.load_benchmark("nothing")


def _tiny_run(name: str, **kwargs: object) -> dict:
    return {"loss": np.arange(3.0)}


def test_cli_interrupt_during_a_save_is_reported_not_raised(
        store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    experiments.save("paper1_defaults", OLD)
    before = (store / "paper1_defaults.npz").read_bytes()
    monkeypatch.setattr(cli, "run", _tiny_run)

    def interrupted(descriptor: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    assert cli.main(["paper1_defaults"]) == 130
    assert "interrupted: paper1_defaults was not saved" in capsys.readouterr().err
    assert (store / "paper1_defaults.npz").read_bytes() == before
    assert _visible(store) == ["paper1_defaults.manifest.json", "paper1_defaults.npz"]


def test_cli_full_disk_is_a_clear_error(store: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture) -> None:
    experiments.save("paper1_defaults", OLD)
    before = (store / "paper1_defaults.npz").read_bytes()
    monkeypatch.setattr(cli, "run", _tiny_run)

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", full_disk)
    assert cli.main(["paper1_defaults"]) == 1
    err = capsys.readouterr().err
    assert ("error: saving paper1_defaults failed ([Errno 28] No space left on device): "
            "paper1_defaults was not saved (its stored file, if any, is untouched)") in err
    assert (store / "paper1_defaults.npz").read_bytes() == before
    assert _visible(store) == ["paper1_defaults.manifest.json", "paper1_defaults.npz"]


def _full_disk_after(limit: int):
    """A file ``write`` that raises ENOSPC once ``limit`` bytes were written through it (a
    disk that fills up in the middle of the file)."""
    written = [0]

    def write(stream, data):                 # the stream's own write, wrapped
        written[0] += len(data)
        if written[0] > limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        return stream._real_write(data)
    return write


def test_a_disk_that_fills_up_mid_file_leaves_the_old_run_and_says_untouched(
        store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    experiments.save("paper1_defaults", OLD)
    before = {path.name: path.read_bytes() for path in store.iterdir()}
    monkeypatch.setattr(cli, "run", lambda name, **kwargs: NEW)
    real_fdopen = os.fdopen

    def fdopen(*args, **kwargs):             # the temporary files of attnlib._files
        stream = real_fdopen(*args, **kwargs)
        full = _full_disk_after(100_000)
        stream._real_write = stream.write
        stream.write = lambda data: full(stream, data)
        return stream

    with monkeypatch.context() as patched:
        patched.setattr(os, "fdopen", fdopen)
        assert cli.main(["paper1_defaults"]) == 1
    err = capsys.readouterr().err
    assert ("saving paper1_defaults failed ([Errno 28] No space left on device): "
            "paper1_defaults was not saved (its stored file, if any, is untouched)") in err, err
    assert {path.name: path.read_bytes() for path in store.iterdir()} == before
    assert _same(experiments.load("paper1_defaults"), OLD)


@pytest.mark.parametrize("step, loads, says", [
    (1, "old", "paper1_defaults was not saved (its stored file, if any, is untouched)"),
    (2, "old", "paper1_defaults was not saved: {npz} still holds the previous run and loads, "
               "and {tracked} also lists the new run; rerun `python -m attnbook.experiments "
               "paper1_defaults`"),
    (3, "new", "paper1_defaults was saved to {npz} and loads, but {tracked} still lists the "
               "previous run too; `python -m attnbook.experiments --add-manifest "
               "paper1_defaults` drops that entry"),
], ids=["tracked-both", "rename", "tracked-new"])
def test_a_failure_between_the_steps_of_a_save_says_what_is_on_disk(
        store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, step: int,
        loads: str, says: str) -> None:
    """A full disk (or any error) at one of the three renames of a save: the store holds a
    loadable run, and the command line says which, with the command that settles it."""
    experiments.save("paper1_defaults", OLD)
    monkeypatch.setattr(cli, "run", lambda name, **kwargs: NEW)
    real, renames = os.replace, []

    def replace(source, target):
        renames.append(target)
        if len(renames) == step:
            raise OSError(errno.ENOSPC, "No space left on device")
        real(source, target)

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", replace)
        assert cli.main(["paper1_defaults"]) == 1
    err = capsys.readouterr().err
    npz, tracked = store / "paper1_defaults.npz", store / "paper1_defaults.manifest.json"
    assert says.format(npz=npz, tracked=tracked) in err, err
    assert _same(experiments.load("paper1_defaults"), {"old": OLD, "new": NEW}[loads])
    assert [path.name for path in store.iterdir() if path.suffix == ".tmp"] == []
    before = npz.read_bytes()
    assert cli.main(["--add-manifest", "paper1_defaults"]) == 0          # settles the entry
    assert isinstance(json.loads(tracked.read_text()), dict)           # one manifest again
    assert npz.read_bytes() == before or step == 1
    assert _same(experiments.load("paper1_defaults"), {"old": OLD, "new": NEW}[loads])


@pytest.fixture
def python_sigint_handler() -> Iterator[None]:
    """SIGINT handled by Python's own handler (KeyboardInterrupt) during the test, as in a
    terminal: a test run earlier in the same worker process may have left it ignored."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.usefixtures("python_sigint_handler")
def test_ctrl_c_during_the_steps_of_a_save_is_delivered_after_them(
        store: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    experiments.save("paper1_defaults", OLD)
    monkeypatch.setattr(cli, "run", lambda name, **kwargs: NEW)
    real = experiments._write_tracked

    def write_tracked(name, entries):       # Ctrl-C as the first step begins
        os.kill(os.getpid(), signal.SIGINT)
        return real(name, entries)

    monkeypatch.setattr(experiments, "_write_tracked", write_tracked)
    assert cli.main(["paper1_defaults"]) == 130
    err = capsys.readouterr().err
    assert (f"interrupted: paper1_defaults was saved completely to {store / 'paper1_defaults.npz'}"
            in err), err
    assert _same(experiments.load("paper1_defaults"), NEW)


def test_a_conflicted_tracked_manifest_is_named_and_other_runs_still_load(
        store: Path) -> None:
    experiments.save("run_a", OLD)
    experiments.save("run_b", {"x": np.ones(3)})
    tracked = store / "run_a.manifest.json"
    text = tracked.read_text()
    tracked.write_text(f"<<<<<<< HEAD\n{text}=======\n{text}>>>>>>> other-branch\n")
    with pytest.raises(ValueError, match=r"tracked manifest .*run_a\.manifest\.json has "
                                         r"unresolved merge-conflict markers .*git checkout "
                                         r"--theirs -- .*run_a\.npz.*other stored runs are not "
                                         r"affected"):
        experiments.load("run_a")
    assert _same(experiments.load("run_b"), {"x": np.ones(3)})
    experiments.save("run_a", OLD)                     # a rerun resolves it
    assert _same(experiments.load("run_a"), OLD)


def test_the_older_single_manifests_file_is_read_and_split(store: Path) -> None:
    """A store from before the tracked manifests were split (a branch merged from then)."""
    experiments.save("run_a", OLD)
    experiments.save("run_b", {"x": np.ones(3)})
    legacy = {name: json.loads((store / f"{name}.manifest.json").read_text())
              for name in ("run_a", "run_b")}
    for name in legacy:
        (store / f"{name}.manifest.json").unlink()
    (store / "manifests.json").write_text(json.dumps(legacy))
    assert _same(experiments.load("run_a"), OLD)
    assert cli.main(["--add-manifest"]) == 0
    assert not (store / "manifests.json").exists()
    assert {name: json.loads((store / f"{name}.manifest.json").read_text())
            for name in legacy} == legacy
    (store / "manifests.json").write_text("<<<<<<< HEAD\n{}\n=======\n{}\n>>>>>>> b\n")
    assert _same(experiments.load("run_b"), {"x": np.ones(3)})       # its own file matches


def _npy_bytes() -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, np.arange(3.0))
    return buffer.getvalue()


@pytest.mark.parametrize("content, looks, fix", [
    (lambda good: b"version https://git-lfs.github.com/spec/v1\noid sha256:4d7a21\nsize 9\n",
     "a Git LFS pointer", "git lfs pull --include"),
    (lambda good: b"<!DOCTYPE html><html><body>404 Not Found</body></html>\n", "an HTML page",
     "git checkout --"),
    (lambda good: bytes(len(good)), "bytes of zeros", "git checkout --"),
    (lambda good: good[: len(good) // 2], "a truncated or damaged zip archive", "git checkout --"),
    (lambda good: _npy_bytes(), "a single .npy array", "git checkout --"),
    (lambda good: b"", "an empty file", "git checkout --"),
], ids=["lfs-pointer", "html", "zeros", "truncated", "bare-npy", "empty"])
def test_a_file_that_is_not_a_stored_run_gets_one_clear_message(store: Path, content, looks: str,
                                                                  fix: str) -> None:
    path = experiments.save("run_a", OLD)
    path.write_bytes(content(path.read_bytes()))
    with pytest.raises(ValueError) as error:
        experiments.load("run_a")
    message = str(error.value)
    assert str(path) in message and looks in message and fix in message, message
    assert "python -m attnbook.experiments run_a" in message
    assert "allow_pickle" not in message and "pickle" not in message


def test_a_damaged_member_names_the_file_and_the_key(store: Path) -> None:
    """A zip whose directory survives but one array's data was cut (numpy's "EOF: reading
    array header" or a zlib error)."""
    path = experiments.save("run_a", OLD)
    with zipfile.ZipFile(path) as archive:
        members = {info.filename: archive.read(info.filename) for info in archive.infolist()}
    with zipfile.ZipFile(path, "w") as archive:               # stored, not compressed
        for member, data in members.items():
            archive.writestr(member, data[:40] if member == "loss.npy" else data)
    with pytest.raises(ValueError, match=r"run_a\.npz: .*key 'loss'.*python -m "
                                         r"attnbook\.experiments run_a"):
        experiments.load("run_a")


def test_cli_checks_the_store_is_writable_before_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(experiments, "STORED_DIR", blocker / "stored")   # cannot be created
    ran: list[str] = []
    monkeypatch.setattr(cli, "run", lambda name, **kwargs: ran.append(name) or {})
    assert cli.main(["paper1_defaults"]) == 1
    assert ran == [] and "is not writable" in capsys.readouterr().err

def test_first_passage_times_per_chain():
    from attnbook.experiments.part2 import first_passage_times

    times = np.arange(5.0)
    excess = np.array([[1.0, 1.0], [0.4, 1.0], [0.6, 0.9], [0.05, 0.8], [0.3, 0.7]])
    out = first_passage_times(times, excess, (0.5, 0.1))
    np.testing.assert_array_equal(out, [[1.0, np.inf], [3.0, np.inf]])


def test_fixed_temperature_readings_stay_above_the_offset():
    from attnbook.experiments.part2 import expected_hitting_times, reach_times

    times = np.linspace(0.0, 10.0, 101)
    excess = 0.1 + 2.0 * np.exp(-times)              # offset 0.1, start 2.1
    eps, t_eps = reach_times(times, excess, 0.1)
    assert eps[0] == pytest.approx(1.05) and eps[-1] == pytest.approx(0.2) and eps.size == 8
    np.testing.assert_allclose(t_eps, np.log(2.0 / (eps - 0.1)), atol=0.1)   # record spacing
    assert reach_times(times, excess, 2.0)[0].size == 0
    passages = np.array([[1.0, 2.0], [3.0, np.inf], [5.0, 6.0]])
    eps, means = expected_hitting_times(passages, (0.4, 0.2, 0.1), 0.06)
    np.testing.assert_array_equal(eps, [0.4, 0.2])
    np.testing.assert_array_equal(means, [1.5, np.nan])


def test_attention_instances_and_their_villani_evidence():
    from attnbook.experiments import part2
    from attnlib.regularizers import Regularizer

    for law in ("gaussian", "student-t3", "uniform"):
        problem = part2.attention_instance(n=200, N=5, d=3, d_k=2, law=law)
        assert problem.X.var() == pytest.approx(1.0, rel=0.25)   # heavy tails: t3 is noisy
    with pytest.raises(ValueError, match="law"):
        part2.attention_instance(n=6, N=5, d=3, d_k=2, law="cauchy")
    evidence = part2.attention_villani_evidence(
        part2.attention_instance(**part2.INSTANCE_GRID[0]),
        {"log": Regularizer("log", 0.01), "weight_decay": Regularizer("weight_decay", 0.01)}, 1.0)
    assert evidence["log"][0] == pytest.approx(18.04, abs=0.01)    # chapter 8's orbit at s = 1
    assert np.isfinite(evidence["log"][1]) and np.isinf(evidence["weight_decay"][1])


def test_lora_instances_stationary_points_and_grid_evidence():
    from attnbook.experiments import part2
    from attnlib.regularizers import Regularizer

    for law in ("gaussian", "student-t3", "uniform"):
        problem = part2.lora_instance(n=400, d=3, width=8, rank=2, law=law)
        assert problem.x.var() == pytest.approx(1.0, rel=0.25)
        teacher_fit = problem.data_loss(problem.theta_teacher)
        assert teacher_fit == pytest.approx(part2.LORA_NOISE ** 2 / 2, rel=0.3)
    with pytest.raises(ValueError, match="law"):
        part2.lora_instance(n=20, d=3, width=8, rank=2, law="cauchy")
    base = part2.lora_instance(**part2.LORA_INSTANCE_GRID[0])
    theta_star, grad_norm = part2.lora_stationary_point(base)
    assert grad_norm < 1e-7 and np.linalg.norm(base.gradient(theta_star)) < 1e-7
    regularizers = {"log": Regularizer("log", 0.01)}
    evidence, grad_norms, untested = part2.lora_grid_evidence(
        regularizers, 1.0, grid=part2.LORA_INSTANCE_GRID[:1] + (dict(n=20, d=5, width=8, rank=2,
                                                                      law="gaussian"),))
    label = "n=20 d=3 m=8 r=2 gaussian"
    assert grad_norms[label] == grad_norm
    assert evidence[label] == part2.villani_evidence(base, theta_star, regularizers, 1.0)
    # chapter 9's orbit, through the balanced point (where the polish stops along the flat orbit
    # depends on round-off; the balanced point does not: 13.42 on every CPU setting tried)
    assert evidence[label]["log"][0] == pytest.approx(13.42, abs=0.01)
    u_star, v_star = base.unpack(theta_star)
    np.testing.assert_allclose(u_star.T @ u_star, v_star @ v_star.T, atol=1e-10)
    # d = 5: 2 (8 + 5 - 2) = 22 degrees of freedom > n = 20, an interpolating global minimum
    # (BFGS alone stalls there; the least-squares fit from the teacher reaches it)
    interpolating = "n=20 d=5 m=8 r=2 gaussian (interpolates)"
    assert untested == {} and list(evidence) == [label, interpolating]
    assert grad_norms[interpolating] < 1e-7
    assert 0 < evidence[interpolating]["log"][0] < 300


def test_lora_interpolation_counts_the_degrees_of_freedom_of_a_rank_r_update():
    from attnbook.experiments import part2

    def interpolates(**change) -> bool:
        return part2.lora_interpolates(part2.lora_instance(
            **dict(dict(n=20, d=3, width=8, rank=2, law="gaussian"), **change)))
    # r (m + d - r) against n: 18, 20 (equal: no), 22, 34, 24 and 18 < 40
    assert [interpolates(), interpolates(d=4), interpolates(d=5), interpolates(width=16),
            interpolates(rank=3), interpolates(n=40)] == [False, False, True, True, True, False]


def test_lora_stationary_point_names_every_solver_path_when_none_finds_one(monkeypatch):
    from attnbook.experiments import part2

    def stall(problem, theta0, **kwargs):
        if problem.regularizer.name != "none":
            return theta0, 0.0                 # the warm start
        raise RuntimeError("no stationary point found")
    monkeypatch.setattr(part2, "minimize_data_loss", stall)
    with pytest.raises(RuntimeError, match="least squares from the warm start.*BFGS from the "
                                           "warm start.*least squares from the teacher"):
        part2.lora_stationary_point(part2.lora_instance(**part2.LORA_INSTANCE_GRID[0]))


def _toy_run(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """A registered experiment for the replay tests: 50 records, or its first 10."""
    steps = np.arange(50 if full else 10)
    return {"loss": 0.9 ** steps, "at_round_off": 1e-15 * steps,
            "grid": np.where(np.arange(3)[:, None] == 0, 1.0 + steps[:3], np.nan)
            if not full else 1.0 + np.arange(3)[:, None] + np.arange(3),
            "config": np.asarray('{"noise": 0.1}')}


@pytest.fixture()
def toy(store: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(experiments._REGISTRY, "toy_run", (_toy_run, "toy"))
    experiments.save("toy_run", _toy_run(full=True))
    return "toy_run"


def _tamper(toy: str, relative: float) -> dict[str, np.ndarray]:
    """Store the toy run with ``loss[3]`` changed by ``relative``; return what was stored."""
    changed = _toy_run(full=True)
    changed["loss"][3] *= 1 + relative
    experiments.save(toy, changed)
    return changed


def test_replay_returns_the_stored_run_the_prefix_and_the_check(toy: str) -> None:
    stored, prefix, check = experiments.replay(toy, keys=["loss", "at_round_off"])
    assert stored["loss"].shape == (50,) and prefix["loss"].shape == (10,)
    assert check.passed and check.used == 0.0 and check.deviation == 0.0
    assert [key.key for key in check.keys] == ["loss", "at_round_off"]
    # the printed line names the run, the arrays and the tolerance, never a raw deviation
    assert str(check).startswith("toy_run: 2 arrays replayed, within rtol 1e-08 of the stored run")
    assert experiments.config(toy) == {"noise": 0.1} == experiments.config(stored)


def test_strict_replay_fails_naming_the_run_the_key_and_the_command(
        toy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNBOOK_REPLAY", "strict")
    changed = _tamper(toy, 1e-6)
    with pytest.raises(experiments.ReplayMismatch,
                       match=r"'toy_run' differs from it in key 'loss'.*"
                             r"python -m attnbook\.experiments toy_run"):
        experiments.replay(toy, keys=["loss"])
    # within a looser tolerance it passes and reports the deviation it measured
    check = experiments.replay(toy, keys=["loss"], rtol=1e-5).check
    assert check.deviation == pytest.approx(1e-6, rel=1e-5)
    assert check.used == pytest.approx(0.1, rel=1e-4)


def test_reader_replay_warns_in_the_page_and_goes_on(
        toy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNBOOK_REPLAY", "warn")
    changed = _tamper(toy, 1e-6)
    with pytest.warns(RuntimeWarning, match=r"'toy_run' differs from it in key 'loss'.*"
                                            r"python -m attnbook\.experiments toy_run"):
        stored, _, check = experiments.replay(toy, keys=["loss"])
    assert not check.passed and check.used == pytest.approx(100, rel=1e-4)
    assert stored["loss"][3] == changed["loss"][3]          # the page goes on with the stored run
    assert "DIFFERS" in str(check)
    monkeypatch.setenv("ATTNBOOK_REPLAY", "loose")
    with pytest.raises(ValueError, match="ATTNBOOK_REPLAY must be 'strict' or 'warn'"):
        experiments.replay(toy, keys=["loss"])


def test_reader_replay_shows_a_warning_box_in_a_notebook(
        toy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # In IPython the warning is a box in the cell's output (HTML, with a plain-text fallback).
    import IPython
    import IPython.display
    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())      # as inside a kernel
    monkeypatch.setattr(IPython.display, "display", lambda data, raw: shown.append(data))
    monkeypatch.setenv("ATTNBOOK_REPLAY", "warn")
    changed = _tamper(toy, 1e-6)
    experiments.replay(toy, keys=["loss"])
    assert len(shown) == 1 and 'class="admonition warning"' in shown[0]["text/html"]
    assert "python -m attnbook.experiments toy_run" in shown[0]["text/plain"]


def test_replay_log_records_the_fraction_of_the_tolerance_used(
        toy: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    log = tmp_path / "replays.jsonl"
    monkeypatch.setenv("ATTNBOOK_REPLAY_LOG", str(log))
    _tamper(toy, 1e-9)
    experiments.replay(toy, keys=["loss", "at_round_off"], absolute={"at_": 1e-12})
    entry = json.loads(log.read_text())
    assert entry["name"] == "toy_run"
    assert entry["keys"][0]["used"] == pytest.approx(0.1, rel=1e-4)
    assert entry["keys"][1]["absolute"] and entry["keys"][1]["used"] == 0.0


def test_replay_compares_round_off_keys_to_their_own_absolute_tolerance(
        toy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATTNBOOK_REPLAY", "strict")
    changed = _toy_run(full=True)
    changed["at_round_off"][1:] += 5e-13         # relative change ~500: only atol can pass it
    experiments.save(toy, changed)
    with pytest.raises(AssertionError, match="at_round_off"):
        experiments.replay(toy, keys=["loss", "at_round_off"])
    check = experiments.replay(toy, keys=["loss", "at_round_off"],
                               absolute={"at_": 1e-12}).check
    assert check.deviation == 0.0                 # the absolute key is not in the deviation
    assert "atol 1e-12" in check.tolerance
    with pytest.raises(AssertionError, match="at_round_off"):
        experiments.replay(toy, keys=["at_round_off"], absolute={"at_": 1e-13})


def test_replay_default_keys_are_the_numeric_ones_and_cells_align_grids(toy: str) -> None:
    with pytest.raises(AssertionError, match="grid"):   # unrun cells are NaN in the prefix
        experiments.replay(toy)
    _, prefix, _ = experiments.replay(toy, keys=["grid"], align=experiments.cell(0))
    assert np.isnan(prefix["grid"][1:]).all()
    with pytest.raises(AssertionError, match="compares no key"):
        experiments.replay(toy, keys=[])


def test_leading_block_cuts_every_axis_and_checks_the_rank() -> None:
    stored = {"a": np.arange(12.0).reshape(3, 4), "config": np.asarray("{}")}
    cut, prefix = experiments.leading_block(stored, {"a": np.zeros((2, 2)), "config": "{}"})
    assert cut.keys() == prefix.keys() == {"a"}
    assert np.array_equal(cut["a"], [[0.0, 1.0], [4.0, 5.0]])
    with pytest.raises(AssertionError, match="a: stored has 2 axes, replayed 1"):
        experiments.leading_block(stored, {"a": np.zeros(2)})


def test_config_names_a_run_without_settings(store: Path) -> None:
    experiments.save("bare", {"loss": np.ones(3)})
    with pytest.raises(KeyError, match="'bare' has no 'config' entry"):
        experiments.config("bare")


def test_stack_tasks_puts_the_grid_axes_first_and_pads_ragged_keys_with_nan() -> None:
    from attnbook.experiments._tasks import stack_tasks

    results = [{"curve": np.arange(3) + 10 * i, "tau": np.asarray(float(i))} for i in range(6)]
    history = stack_tasks(results, shape=(2, 3))
    assert history["curve"].shape == (2, 3, 3) and history["curve"].dtype == np.arange(3).dtype
    assert np.array_equal(history["curve"][1, 2], results[5]["curve"])
    assert np.array_equal(history["tau"], np.arange(6.0).reshape(2, 3))
    ragged = stack_tasks([{"a": np.ones(2), "b": np.ones(1)}, {"a": np.ones(3)}])
    assert np.array_equal(ragged["a"], [[1, 1, np.nan], [1, 1, 1]], equal_nan=True)
    assert np.array_equal(ragged["b"], [[1.0], [np.nan]], equal_nan=True)
    with pytest.raises(ValueError, match="shape"):
        stack_tasks(results, shape=(4, 2))
    with pytest.raises(ValueError, match="numbers of axes"):
        stack_tasks([{"a": np.ones(2)}, {"a": np.ones((2, 2))}])


def test_stack_tasks_places_results_at_their_cells_and_leaves_the_rest_nan() -> None:
    from attnbook.experiments._tasks import stack_tasks

    history = stack_tasks([{"a": np.ones(2)}, {"a": 2 * np.ones(2)}], shape=(2, 2),
                          indices=[(1, 0), (0, 1)])
    assert np.array_equal(history["a"], [[[np.nan] * 2, [2, 2]], [[1, 1], [np.nan] * 2]],
                          equal_nan=True)
    with pytest.raises(ValueError, match="same grid cell"):
        stack_tasks([{"a": np.ones(2)}] * 2, shape=(2,), indices=[(0,), (0,)])


def _module_names(package) -> set[str]:
    """The names of the modules directly inside ``package`` (private ones included)."""
    import pkgutil

    return {info.name for info in pkgutil.iter_modules(package.__path__)}


def test_no_experiment_module_is_named_like_a_library_module() -> None:
    # an experiment module is named after the stored runs it writes (paper1_prompts, darcy_runs):
    # a chapter imports attnlib.prompts and attnbook.experiments.paper1_prompts without an alias
    library, runs = _module_names(attnlib), _module_names(experiments)
    assert {"prompts", "darcy"} <= library and {"paper1_prompts", "part1"} <= runs
    clashes = sorted(library & runs)
    assert not clashes, (f"attnbook.experiments has modules named like modules of attnlib: "
                         f"{clashes}; name each after the stored runs it writes")


def attnlib_aliases(source: str) -> list[str]:
    """Every import in ``source`` (a code cell; IPython magics left out) that binds a module or
    name of ``attnlib`` or ``attnbook`` under another name, as ``ast.unparse`` writes it.

    The one alias allowed is the chapter's verdict module, ``from attnbook.claims import chNN as
    judge`` (every chapter calls its rules ``judge``); third-party aliases (``np``, ``plt``) are
    not attnlib's."""
    import ast

    code = "\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!")))
    found = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.ImportFrom):
            ours = node.level == 0 and (node.module or "").split(".")[0] in ("attnlib", "attnbook")
            renamed = [alias for alias in node.names if alias.asname is not None
                       and not (node.module == "attnbook.claims" and alias.asname == "judge")]
        elif isinstance(node, ast.Import):
            ours = True
            renamed = [alias for alias in node.names if alias.asname is not None
                       and alias.name.split(".")[0] in ("attnlib", "attnbook")]
        else:
            continue
        if ours and renamed:
            found.append(ast.unparse(node))
    return found


def test_the_alias_check_catches_aliases_of_attnlib_modules_only() -> None:
    assert attnlib_aliases("from attnbook.experiments import darcy as dx\nx = dx.BOOK") == [
        "from attnbook.experiments import darcy as dx"]
    assert attnlib_aliases("import numpy as np\nfrom attnlib import prompts as p, vit") == [
        "from attnlib import prompts as p, vit"]
    assert attnlib_aliases("%matplotlib inline\nimport attnlib.prompts as ap") == [
        "import attnlib.prompts as ap"]
    assert attnlib_aliases("def f():\n    from attnlib import symbolic as S\n") == [
        "from attnlib import symbolic as S"]
    allowed = ("import numpy as np\nimport matplotlib.pyplot as plt\nimport sympy as sp\n"
               "from attnlib import prompts\nfrom attnbook.experiments import paper1_prompts\n"
               "from attnbook.claims import ch05 as judge\nfrom scipy import linalg as la")
    assert attnlib_aliases(allowed) == []


def test_chapters_import_attnlib_modules_under_their_own_names() -> None:
    import nbformat

    notebooks = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))
    assert len(notebooks) >= 12
    found = [f"{path.name}: {line}" for path in notebooks
             for cell in nbformat.read(path, as_version=4).cells if cell.cell_type == "code"
             for line in attnlib_aliases(cell.source)]
    assert not found, ("chapters import attnlib modules under an alias (import them under their "
                       "own names; attnbook/experiments/__init__.py):\n" + "\n".join(found))


def _same_settings(stored: object, written: object) -> bool:
    """Equal settings, floats to 1e-12 relative: a setting computed with numpy (a geomspace of
    tolerances, say) differs in its last bit between SIMD paths, and that is the same run."""
    if isinstance(stored, dict) and isinstance(written, dict):
        return stored.keys() == written.keys() and all(
            _same_settings(stored[key], written[key]) for key in stored)
    if isinstance(stored, list) and isinstance(written, list):
        return len(stored) == len(written) and all(map(_same_settings, stored, written))
    if isinstance(stored, float) and isinstance(written, float):
        return math.isclose(stored, written, rel_tol=1e-12)
    return type(stored) is type(written) and stored == written


def test_same_settings_allows_only_round_off_in_floats() -> None:
    assert _same_settings({"eps": [0.2, 1]}, {"eps": [0.20000000000000004, 1]})
    assert not _same_settings({"eps": [0.2]}, {"eps": [0.2000001]})
    assert not _same_settings({"n": 1}, {"n": 1.0}) and not _same_settings({"a": 1}, {"b": 1})


@pytest.mark.parametrize("name", sorted(
    name for name, (function, _) in experiments.registry().items()
    if function.__module__.startswith("attnbook.experiments.")))      # not the tests' fixtures
def test_every_experiment_writes_its_config_from_frozen_settings(name: str) -> None:
    """One frozen settings dataclass per experiment (issue 28), and the stored ``config`` holds
    exactly its fields, plus run-time entries that are not settings (``full``)."""
    import dataclasses

    settings = experiments.settings(name)
    field = dataclasses.fields(settings)[0].name                    # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(settings, field, None)
    if name not in experiments.stored_names():
        pytest.skip(f"{name} has no stored run")
    written = json.loads(str(experiments.settings_config(settings)))
    stored = experiments.config(name)
    assert _same_settings({key: stored.get(key) for key in written}, written), (
        f"rerun `python -m attnbook.experiments {name}`")
    assert set(stored) - set(written) <= {"full"}, "the stored config has entries no field holds"


def test_register_refuses_settings_that_are_not_a_frozen_dataclass_instance() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Mutable:
        seeds: int = 1

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        seeds: int = 1

    for bad in (Mutable(), Frozen, {"seeds": 1}, None):
        with pytest.raises(TypeError, match="frozen dataclass instance"):
            experiments.register("never_registered", settings=bad)
    assert "never_registered" not in experiments.registry()
    with pytest.raises(ValueError, match="shadow"):
        experiments.settings_config(Frozen(), seeds=2)
    assert json.loads(str(experiments.settings_config(Frozen(), full=False))) == {
        "seeds": 1, "full": False}


def test_the_registry_writes_the_config_and_refuses_an_experiment_that_writes_its_own() -> None:
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Settings:
        seeds: int = 2

    def plain(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
        return {"loss": np.arange(3.0)}

    def own_config(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
        return {"loss": np.arange(3.0), "config": np.asarray("{}")}

    try:
        written = experiments.register("registry_writes", settings=Settings())(plain)(full=False)
        assert json.loads(str(written["config"])) == {"seeds": 2, "full": False}
        refused = experiments.register("experiment_writes", settings=Settings())(own_config)
        with pytest.raises(ValueError, match="does not write 'config'"):
            refused()
    finally:
        for name in ("registry_writes", "experiment_writes"):
            experiments._REGISTRY.pop(name, None)
            experiments._SETTINGS.pop(name, None)
