"""Named, seeded experiment configurations, their stored histories, and the command line.

Every long run in the book follows the pattern "stored run, replayed prefix" (book.md):

* a configuration is a function registered under a name with :func:`register`; called with
  ``full=True`` it runs the whole experiment, with ``full=False`` only the first stretch, and it
  returns a dict of numpy arrays (its history);
* ``python -m attnbook.experiments NAME`` runs the full configuration and saves its history
  in ``attnbook/experiments/stored/NAME.npz`` (see :func:`save`);
* a chapter calls :func:`replay`, which loads the stored run (checked against its manifest),
  reruns the prefix live and checks it against the start of the stored run
  (:func:`assert_prefix_matches`), so a stale or hand-edited result fails the tests; the
  run's settings (its JSON ``config`` entry) are read with :func:`config`.

An experiment made of independent seeded tasks (one per seed or grid point) is registered
with :func:`register_grid` as a :class:`TaskGrid` (its tasks, one pure task function, and how
to assemble the results): ``python -m attnbook.experiments NAME --workers K`` then runs its
tasks on K local Dask worker processes and ``--scheduler ADDRESS`` on an existing Dask
cluster, with results identical to the serial run task by task (``attnbook/experiments/_tasks.py``).
Any other registered experiment runs there as a single task.

Stored files are saved in one atomic step (:func:`save`). Each file carries a manifest (key
``__manifest__``: a JSON map from every key to its shape, dtype and SHA-256, written first);
the manifest is also kept apart from the file, in the tracked ``stored/NAME.manifest.json``
beside it (one file per run, so two branches that rerun different runs merge cleanly).
:func:`load` checks the file is an npz archive (else it says what the file is instead: a Git
LFS pointer, an HTML page, zeros, a truncated archive, and gives the command that restores or
regenerates it), that its own manifest is the tracked one (values edited and the manifest
recomputed inside the file are refused, and so is a file without a tracked manifest), each
array's declared size and ``.npy`` header before decompressing, then every key, shape, dtype
and hash, and names the file, the key and the command that regenerates it. A file without a
manifest (an older format, or a malformed one) is refused. ``python -m attnbook.experiments
--add-manifest [NAME ...]`` writes the manifest of stored files (in the file and in the
tracked copy) from their current contents, without rerunning anything: without names, of every
stored file that has no hashed manifest; with names, of those files (a deliberate edit,
blessed; the change to ``NAME.manifest.json`` shows in version control).

A save and a load never see each other half done, and no interruption loses a run: a save
holds an exclusive ``flock`` on ``stored/.lock`` (from before its first change until its last,
also across machines sharing the store over NFS) and a load a shared one; the new file is
written to a temporary file in ``stored/`` (fsynced), then the tracked manifest lists the new
and the previous manifest, the new file replaces the old with ``os.replace``, and the tracked
manifest lists the new one only. A load accepts a file matching either entry, so a kill at any
point leaves the old run or the new one, loadable (a tracked file left listing two is cut to
the right one by the next save or by ``--add-manifest NAME``). A tracked manifest with
merge-conflict markers is named with the conflict, and only its own run is refused. The older
single tracked file ``stored/manifests.json`` is still read for runs it lists, and
``--add-manifest`` without names splits it into one file per run.
Experiment names are plain identifiers
(``[A-Za-z_][A-Za-z0-9_]*``), so a name can never point outside ``stored/``.

Configurations live in the submodules of this package (one per part of the book); they are
discovered automatically, so adding a module needs no edit here. A submodule is named after the
stored runs it writes (``paper1_prompts`` writes ``paper1_prompts_*``, ``darcy_runs`` the
``darcy_*`` runs, ``bridge_runs`` the ``bridge_*`` runs) and never after a module of
``attnlib``, so a chapter imports both (``from attnlib import prompts`` and
``from attnbook.experiments import paper1_prompts``) without an alias; ``tests/test_experiments.py``
fails on a clash and on a chapter that imports an attnlib module under an alias.
"""

from __future__ import annotations

import dataclasses
import fcntl
import functools
import hashlib
import importlib
import json
import os
import pkgutil
import re
import signal
import tempfile
import threading
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterable, Iterator, Mapping, NamedTuple

import numpy as np

from attnlib._files import (atomic_write, commit, fsync_directory, not_an_archive, restore_hint,
                            write_temporary)
from attnlib._validation import check_int, check_positive
from ._tasks import TaskCache, TaskGrid, _active, checkpoint, one_task, run_grid

__all__ = [
    "register", "check_name", "registry", "run", "manifest", "save", "load", "add_manifest",
    "check_writable", "stored_files",
    "stored_names", "assert_prefix_matches", "replay", "Replay", "ReplayCheck",
    "KeyCheck", "ReplayMismatch", "measured_spread", "leading_block", "cell", "config",
    "describe", "format_deviation", "benchmark_path",
    "load_benchmark", "register_grid", "TaskGrid", "run_grid", "task_grid", "settings",
    "settings_config",
]

STORED_DIR = Path(__file__).resolve().parent / "stored"
MANIFEST_KEY = "__manifest__"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Experiment = Callable[..., dict[str, np.ndarray]]
_REGISTRY: dict[str, tuple[Experiment, str]] = {}
_GRIDS: dict[str, Callable[[bool], TaskGrid]] = {}
_SETTINGS: dict[str, object] = {}


def register(name: str, *, settings: object) -> Callable[[Experiment], Experiment]:
    """Decorator registering ``fn(full: bool = True, progress: bool = False)`` under ``name``.

    ``settings`` is the run's frozen dataclass instance: every setting of the full run is one of
    its fields. The decorated function returns ``fn``'s history with its ``config`` entry,
    ``settings_config(settings, full=full)`` (:func:`settings_config`; ``fn`` does not write
    one), so a replayed prefix records the full run's settings and ``full = false``. The first
    line of the function's docstring is shown by ``python -m attnbook.experiments``.
    """

    check_name(name)
    _check_settings(name, settings)

    def decorate(fn: Experiment) -> Experiment:
        @functools.wraps(fn)
        def experiment(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
            return _with_config(fn(full=full, progress=progress), settings, full)

        _add(name, experiment, settings)
        return experiment

    return decorate


def _add(name: str, experiment: Experiment, settings: object) -> None:
    if name in _REGISTRY:
        raise ValueError(f"experiment name {name!r} is registered twice")
    doc = (experiment.__doc__ or "").strip()
    _REGISTRY[name] = (experiment, doc.splitlines()[0] if doc else "")
    _SETTINGS[name] = settings


def _with_config(history: Mapping[str, np.ndarray], settings: object,
                 full: bool) -> dict[str, np.ndarray]:
    if "config" in history:
        raise ValueError("an experiment does not write 'config': the registry writes it from "
                         "the experiment's settings")
    return {**history, "config": settings_config(settings, full=full)}


def _assemble_with_config(assemble: Callable[[list], Mapping[str, np.ndarray]],
                          settings: object, full: bool, results: list) -> dict[str, np.ndarray]:
    return _with_config(assemble(results), settings, full)


def register_grid(name: str, *, settings: object
                  ) -> Callable[[Callable[[bool], TaskGrid]], Experiment]:
    """Decorator registering ``grid(full: bool = True) -> TaskGrid`` under ``name``.

    ``full=False`` declares the replayed prefix (usually the first task, shortened). The
    decorated name becomes the usual ``fn(full=True, progress=False) -> history`` (serial);
    :func:`run` with ``workers`` or ``scheduler`` distributes the tasks instead. ``settings``
    as in :func:`register` (the grid's ``assemble`` does not write ``config``).
    """
    check_name(name)
    _check_settings(name, settings)

    def decorate(grid: Callable[[bool], TaskGrid]) -> Experiment:
        def experiment(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
            return run_grid(task_grid(name, full=full), progress=progress)

        experiment.__name__, experiment.__doc__ = grid.__name__, grid.__doc__
        experiment.__module__, experiment.__qualname__ = grid.__module__, grid.__qualname__
        _add(name, experiment, settings)
        _GRIDS[name] = grid
        return experiment

    return decorate


def _check_settings(name: str, settings: object) -> None:
    if not (dataclasses.is_dataclass(settings) and not isinstance(settings, type)
            and type(settings).__dataclass_params__.frozen):        # type: ignore[attr-defined]
        raise TypeError(f"settings of {name!r} must be a frozen dataclass instance, "
                        f"got {type(settings).__name__}")


def settings(name: str) -> object:
    """The frozen settings dataclass instance of the registered experiment ``name``: every
    setting of its full run, the fields its stored ``config`` is written from. Raises
    ``KeyError`` for a name that is not registered."""
    _known(name)
    return _SETTINGS[name]


def settings_config(settings: object, **run_time: object) -> np.ndarray:
    """The ``config`` entry of a history: ``dataclasses.asdict(settings)`` (nested dataclasses
    become dicts, tuples lists) plus ``run_time`` entries that are not settings (such as
    ``full``), as a JSON string in a 0-d array. Raises ``ValueError`` if a ``run_time`` key
    shadows a field."""
    _check_settings("settings_config", settings)
    fields = dataclasses.asdict(settings)                           # type: ignore[call-overload]
    clash = sorted(set(fields) & set(run_time))
    if clash:
        raise ValueError(f"run_time entries {clash} shadow settings fields")
    return np.asarray(json.dumps({**fields, **run_time}))


def check_name(name: object) -> str:
    """Return ``name`` if it is a plain identifier (``[A-Za-z_][A-Za-z0-9_]*``), else raise.

    Store names become file names under ``stored/``; a separator, ``..`` or a dot could
    otherwise write outside the store or clash with the temporary files of :func:`save`.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"experiment name must be a plain identifier ([A-Za-z_][A-Za-z0-9_]*), "
                         f"got {name!r}")
    return name


def _path(name: str) -> Path:
    return STORED_DIR / f"{check_name(name)}.npz"


def _discover() -> None:
    for module in pkgutil.iter_modules([str(Path(__file__).resolve().parent)]):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def registry() -> dict[str, tuple[Experiment, str]]:
    """All registered experiments: name -> (function, one-line description)."""
    _discover()
    return dict(_REGISTRY)


def run(name: str, *, full: bool = True, progress: bool = False, workers: int | None = None,
        scheduler: str | None = None, security: object | None = None, resume: bool = False
        ) -> dict[str, np.ndarray]:
    """Run the registered experiment ``name`` and return its history (nothing is saved).

    Parameters
    ----------
    name : str
        A registered experiment (:func:`registry`).
    full : bool
        The whole run (True) or its prefix, the first stretch a chapter replays (False).
    progress : bool
        Show a progress bar.
    workers : int, optional
        Run the tasks of a grid experiment (:func:`register_grid`) on a local Dask cluster of
        this many single-threaded processes; the history is the serial one (:func:`run_grid`).
        Other experiments then run as one task on one worker. Default: serial.
    scheduler : str, optional
        The address of an existing Dask cluster (such as ``"tcp://127.0.0.1:8786"``).
    security : object, optional
        A ``distributed.Security`` for a ``tls://`` scheduler.
    resume : bool
        Keep every finished task (and every finished phase, ``_tasks.checkpoint``) in the
        experiment's task cache (``task_cache``) and reuse what an interrupted run of the
        same code and settings left there (the command line does; a replay never does).

    Returns
    -------
    dict
        The history, name -> array.

    Raises
    ------
    KeyError
        For a name that is not registered.
    """
    check_name(name)
    cache = task_cache(name, full=full) if resume else None
    if name not in _GRIDS and workers in (None, 1) and scheduler is None and security is None:
        experiment = _known(name)
        if cache is None:
            return experiment(full=full, progress=progress)
        with _active(cache):
            return dict(checkpoint(("the whole run",),
                                   lambda: experiment(full=full, progress=progress)))
    return run_grid(task_grid(name, full=full), workers=workers, scheduler=scheduler,
                    security=security, progress=progress, cache=cache)


def task_cache(name: str, *, full: bool = True) -> TaskCache:
    """The task cache of the registered experiment ``name`` (``_tasks.TaskCache``, in
    ``$ATTNBOOK_CACHE/tasks/NAME``): what :func:`run` with ``resume=True`` keeps and reuses,
    keyed by the run's settings, ``full`` and the code's version."""
    _known(name)
    salt = json.dumps([name, full, str(settings_config(_SETTINGS[name]))])
    return TaskCache(name, salt)


def _known(name: str) -> Experiment:
    check_name(name)
    experiments = registry()
    if name not in experiments:
        raise KeyError(f"unknown experiment {name!r}; known: {sorted(experiments)}")
    return experiments[name][0]


def task_grid(name: str, *, full: bool = True) -> TaskGrid:
    """The tasks of experiment ``name``: its :class:`TaskGrid` if it was registered with
    :func:`register_grid` (its ``assemble`` adding the ``config`` entry), else a grid of one
    task (the whole experiment)."""
    experiment = _known(name)
    if name not in _GRIDS:
        return one_task(experiment, full)
    grid = _GRIDS[name](full)
    return dataclasses.replace(grid, assemble=functools.partial(
        _assemble_with_config, grid.assemble, _SETTINGS[name], full))


def _sha256(array: np.ndarray) -> str:
    """SHA-256 of the array's entries in C order (its shape and dtype are listed separately)."""
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def manifest(history: Mapping[str, np.ndarray]) -> dict[str, dict[str, object]]:
    """The manifest of a history: ``key -> {"shape": [...], "dtype": "<f8", "sha256": "..."}``
    for every key (the hash of the entries in C order: a changed, doubled, truncated or
    NaN-filled value no longer matches)."""
    out = {}
    for key, value in history.items():
        if key != MANIFEST_KEY:
            array = np.asarray(value)
            out[key] = {"shape": list(array.shape), "dtype": array.dtype.str,
                        "sha256": _sha256(array)}
    return out


#: The lock file of the store: a save holds an exclusive ``flock`` on it from before its first
#: change until its last, a load a shared one while it reads (module docstring).
LOCK_FILE = ".lock"
#: The tracked copy of a stored run's manifest sits beside its file: ``NAME.manifest.json``.
TRACKED_SUFFIX = ".manifest.json"
#: The one file that held every tracked manifest before they were kept one per run; still read
#: (for a run whose own tracked file does not match) and split by ``--add-manifest``.
LEGACY_MANIFESTS = "manifests.json"
#: A temporary file of a save: ``.NAME.npz.XXXXXXXX.tmp`` or ``.NAME.manifest.json.XXXX.tmp``.
_TEMPORARY = re.compile(r"\.[A-Za-z_][A-Za-z0-9_]*\..*\.tmp")


def _tracked_path(name: str) -> Path:
    return STORED_DIR / f"{name}{TRACKED_SUFFIX}"


@contextmanager
def _store_lock(*, exclusive: bool) -> Iterator[None]:
    """Hold the store's lock (:data:`LOCK_FILE`, ``fcntl.flock``; it works across machines on
    NFS too): exclusive for a save, shared for a load. A read-only store that has no lock file
    is read without one (no save can run there)."""
    path = STORED_DIR / LOCK_FILE
    try:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        if exclusive:
            raise
        descriptor = None
        if path.exists():
            descriptor = os.open(path, os.O_RDONLY)
    try:
        if descriptor is not None:
            fcntl.flock(descriptor, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        if descriptor is not None:
            os.close(descriptor)                 # closing the descriptor releases the lock


def _remove_stale_temporaries() -> None:
    """Delete the temporary files of saves that were killed (SIGKILL, power loss). Called with
    the exclusive lock held: every save writes its temporaries under that lock, so none of them
    is still being written, whichever machine wrote it (no process ids are compared)."""
    for path in STORED_DIR.glob(".*.tmp"):
        if _TEMPORARY.fullmatch(path.name):
            path.unlink(missing_ok=True)


def check_writable() -> Path:
    """Return the store directory after checking a file can be created in it (creating the
    directory if needed); ``PermissionError``/``OSError`` naming it otherwise. The command
    line calls this before running anything, so a read-only store fails at once."""
    try:
        STORED_DIR.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=STORED_DIR, prefix=".write-check.", suffix=".tmp"):
            pass
    except OSError as exc:
        raise type(exc)(exc.errno, f"the store {STORED_DIR} is not writable ({exc.strerror})"
                        ) from exc
    return STORED_DIR


def save(name: str, history: Mapping[str, np.ndarray]) -> Path:
    """Save ``history`` (a dict of arrays) as ``stored/NAME.npz`` in one atomic step; return
    the path.

    The file holds the arrays (object arrays are refused: files are loaded without pickle) and
    their manifest (:func:`manifest`: shape, dtype and SHA-256 of every array); the tracked
    copy of the manifest is ``stored/NAME.manifest.json``. Under the store's exclusive lock the
    save writes a temporary file ``.NAME.npz.XXXXXXXX.tmp`` in ``stored/`` (flushed, fsynced),
    then changes the store in three steps (:func:`_commit`): the tracked file lists the new
    manifest and the previous run's, the new file replaces the old (``os.replace``), the
    tracked file lists the new manifest only. :func:`load` accepts a file matching either
    entry, so a kill at any point leaves the old run or the new one, loadable; Ctrl-C and
    SIGTERM are held during the three steps and delivered after them. A failure that changed
    the store carries ``stored_state``, a sentence saying what is on disk and the command that
    settles it (None: nothing changed). The new files get the permissions of the umask, and
    temporaries left by killed saves are removed.
    """
    path = _path(name)
    arrays = {}
    for key, value in history.items():
        if not isinstance(key, str) or key == MANIFEST_KEY:
            raise ValueError(f"history keys must be strings other than {MANIFEST_KEY!r}, "
                             f"got {key!r}")
        array = np.asarray(value)
        if array.dtype.hasobject:
            raise TypeError(f"history[{key!r}] must be a numeric or string array, got dtype "
                            "object (stored runs are loaded without pickle)")
        arrays[key] = array
    listed = manifest(arrays)
    contents = {MANIFEST_KEY: np.asarray(json.dumps(listed)), **arrays}
    STORED_DIR.mkdir(parents=True, exist_ok=True)
    with _store_lock(exclusive=True):
        _remove_stale_temporaries()
        temporary = write_temporary(path, lambda stream: np.savez_compressed(stream, **contents))
        before = _snapshot(name)
        try:
            with _signals_held():
                _commit(name, temporary, listed)
        except BaseException as exc:
            temporary.unlink(missing_ok=True)
            exc.stored_state = _what_changed(name, listed, before)   # type: ignore[attr-defined]
            raise
    return path


def _commit(name: str, temporary: Path, listed: dict[str, dict[str, object]]) -> None:
    """The steps of :func:`save` that change the store (its exclusive lock held): the tracked
    file lists ``listed`` and, if the stored file is a loadable run, its manifest; the
    temporary file replaces the stored file; the tracked file lists ``listed`` only."""
    previous = _own_manifest(_path(name))
    try:
        accepted = _accepted(name)
    except ValueError:                           # a conflicted or damaged tracked file
        accepted = []
    both = previous is not None and previous in accepted and previous != listed
    _write_tracked(name, [listed, previous] if both else [listed])
    commit(temporary, _path(name))
    if both:
        _write_tracked(name, [listed])


@contextmanager
def _signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM during the block and deliver them to their handlers when it ends
    (main thread only: Python runs signal handlers there), so Ctrl-C never cuts a save's steps
    apart."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        if signal.getsignal(signum) is not None:         # None: a handler installed from C
            previous[signum] = signal.signal(signum, lambda number, frame: held.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in held:
            if callable(previous[signum]):
                previous[signum](signum, None)
            elif previous[signum] == signal.SIG_DFL:
                os.kill(os.getpid(), signum)


def _write_tracked(name: str, entries: list[dict[str, dict[str, object]]]) -> None:
    """Write the tracked manifest of ``name`` atomically: one manifest (a JSON object), or two
    (a JSON list, the new one first) while a save is between its steps; keys sorted."""
    text = json.dumps(entries[0] if len(entries) == 1 else entries, indent=1, sort_keys=True)
    atomic_write(_tracked_path(name), lambda stream: stream.write((text + "\n").encode()))


def _own_manifest(path: Path) -> dict[str, dict[str, object]] | None:
    """The manifest kept inside the stored file ``path`` (only that member is read), or None
    when the file is missing, unreadable or has no valid manifest."""
    try:
        with zipfile.ZipFile(path) as archive:
            if archive.getinfo(f"{MANIFEST_KEY}.npy").file_size > MAX_MANIFEST_BYTES:
                return None
            with archive.open(f"{MANIFEST_KEY}.npy") as member:
                text = str(np.lib.format.read_array(member, allow_pickle=False))
        return _checked_manifest(path, text)
    except (OSError, KeyError, ValueError, EOFError, zipfile.BadZipFile, zlib.error):
        return None


def _snapshot(name: str) -> tuple[object, bytes | None]:
    """What a save may change: the stored file's own manifest and the tracked file's bytes."""
    try:
        tracked = _tracked_path(name).read_bytes()
    except OSError:
        tracked = None
    return _own_manifest(_path(name)), tracked


def _what_changed(name: str, listed: dict, before: tuple[object, bytes | None]) -> str | None:
    """After a failed save: None if the store is as it was, else what is on disk now and the
    command that settles it."""
    if _snapshot(name) == before:
        return None
    path, tracked = _path(name), _tracked_path(name)
    try:
        accepted = _accepted(name)
    except ValueError:
        accepted = []
    if _own_manifest(path) == listed:
        if accepted == [listed]:
            return f"{name} was saved completely to {path} (the failure came after its last step)"
        return (f"{name} was saved to {path} and loads, but {tracked} still lists the previous "
                f"run too; `python -m attnbook.experiments --add-manifest {name}` drops that "
                "entry")
    return (f"{name} was not saved: {path} still holds the previous run and loads, and {tracked} "
            f"also lists the new run; rerun `python -m attnbook.experiments {name}` (or drop "
            f"that entry with `python -m attnbook.experiments --add-manifest {name}`)")


def _existing(name: str) -> Path:
    """The path of the stored run ``name``; ``FileNotFoundError`` with the command if absent."""
    path = _path(name)
    if not path.exists():
        raise FileNotFoundError(f"no stored run {path}; create it with "
                                f"`python -m attnbook.experiments {name}`")
    return path


def _regenerate(name: str) -> str:
    return (f"rerun `python -m attnbook.experiments {name}`, or, if its contents are known to "
            f"be right, write a manifest from them with "
            f"`python -m attnbook.experiments --add-manifest {name}`")


def _restore(path: Path) -> str:
    """The commands that bring back a damaged stored file: restore it, or regenerate it."""
    return (f"{restore_hint(path)}, or regenerate it with "
            f"`python -m attnbook.experiments {path.stem}`")


def _checked_manifest(path: Path, text: str, *, what: str = "") -> dict[str, dict[str, object]]:
    """Parse a manifest; ``ValueError`` naming the file and the problem if it is malformed.
    ``what`` names a tracked file (default: the manifest inside the stored file ``path``)."""
    fix = _regenerate(path.stem if not what else path.name[:-len(TRACKED_SUFFIX)])
    owner = what or f"stored run {path}"
    where = what or f"{owner}: its manifest"
    try:
        listed = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where} is not valid JSON ({exc}); {fix}") from exc
    if not isinstance(listed, dict):
        raise ValueError(f"{where} must be a JSON object, got {type(listed).__name__}; {fix}")
    for key, spec in listed.items():
        valid = (isinstance(spec, dict) and isinstance(spec.get("shape"), list)
                 and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0
                         for n in spec["shape"])
                 and isinstance(spec.get("dtype"), str) and isinstance(spec.get("sha256"), str))
        if valid:
            try:
                np.dtype(spec["dtype"])
            except TypeError:
                valid = False
        if not valid:
            raise ValueError(f"{owner}: the manifest entry of "
                             f'{key!r} must be {{"shape": [non-negative ints], "dtype": '
                             f'"<numpy dtype>", "sha256": "<hex>"}}, got {spec!r:.200}; {fix}')
    return listed


#: Lines that git writes into a file whose merge conflicted.
_CONFLICT = re.compile(r"^(<{7}|={7}|>{7})( |$)", re.MULTILINE)


def _accepted(name: str) -> list[dict[str, dict[str, object]]]:
    """The manifests the tracked file of ``name`` accepts: one, or two while a save is between
    its steps (the new one first); empty when there is no tracked file. ``ValueError`` naming
    the file when it has merge-conflict markers or is not a valid manifest."""
    path = _tracked_path(name)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"the tracked manifest {path} cannot be read ({exc}); "
                         f"{restore_hint(path)}") from exc
    if _CONFLICT.search(text):
        raise ValueError(
            f"the tracked manifest {path} has unresolved merge-conflict markers (<<<<<<< "
            f"======= >>>>>>>): two branches saved the run {name!r}. Keep one side of both of "
            f"its files, e.g. `git checkout --theirs -- {path} {_path(name)}` (or --ours), or "
            f"rerun `python -m attnbook.experiments {name}`; other stored runs are not affected")
    try:
        entries = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"the tracked manifest {path} is not valid JSON ({exc}); "
                         f"{restore_hint(path)}, or {_regenerate(name)}") from exc
    entries = entries if isinstance(entries, list) and 1 <= len(entries) <= 2 else [entries]
    return [_checked_manifest(path, json.dumps(entry), what=f"the tracked manifest {path}")
            for entry in entries]


def _legacy_entry(name: str) -> dict | None:
    """The entry of ``name`` in the older single tracked file (:data:`LEGACY_MANIFESTS`), if
    the store still has that file."""
    path = STORED_DIR / LEGACY_MANIFESTS
    if not path.exists():
        return None
    try:
        tracked = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the older tracked manifests {path} cannot be read ({exc}; merge-"
                         f"conflict markers?); resolve the conflict or {restore_hint(path)}, "
                         f"or delete it if every run has its own {TRACKED_SUFFIX}") from exc
    return tracked.get(name) if isinstance(tracked, dict) else None


def _against_tracked(path: Path, listed: dict[str, dict[str, object]]) -> None:
    """``ValueError`` unless the file's own manifest is one the tracked copy accepts."""
    name = path.stem
    accepted = _accepted(name)
    if listed in accepted:
        return
    if listed == _legacy_entry(name):
        return
    tracked = _tracked_path(name)
    if not accepted:
        raise ValueError(f"stored run {path} has no tracked manifest ({tracked} does not "
                         f"exist), so its manifest cannot be trusted; {_regenerate(name)}")
    differing = sorted(key for key in set(accepted[0]) | set(listed)
                       if accepted[0].get(key) != listed.get(key))
    raise ValueError(f"stored run {path}: its manifest differs from the tracked copy "
                     f"{tracked} for keys {differing} (the file was changed and its manifest "
                     f"rewritten); {_regenerate(name)}")


def _check_header(path: Path, archive: zipfile.ZipFile, key: str,
                  spec: dict[str, object]) -> None:
    """Read only the ``.npy`` header of ``key`` and compare its shape and dtype with ``spec``."""
    try:
        with archive.open(f"{key}.npy") as member:
            version = np.lib.format.read_magic(member)
            readers = {(1, 0): np.lib.format.read_array_header_1_0,
                       (2, 0): np.lib.format.read_array_header_2_0}
            if version not in readers:
                raise ValueError(f"unsupported .npy format version {version}")
            shape, _, dtype = readers[version](member)
    except (ValueError, KeyError, OSError, zipfile.BadZipFile, EOFError, zlib.error) as exc:
        raise ValueError(f"stored run {path}: the .npy header of key {key!r} is unreadable "
                         f"({exc}); {_regenerate(path.stem)}") from exc
    if list(shape) != spec["shape"] or dtype.str != spec["dtype"]:
        raise ValueError(f"stored run {path}: the .npy header of key {key!r} declares shape "
                         f"{tuple(shape)} and dtype {dtype.str}, its manifest "
                         f"{tuple(spec['shape'])} and {spec['dtype']}; not decompressed; "
                         f"{_regenerate(path.stem)}")


#: Largest manifest (bytes, uncompressed) read before anything else.
MAX_MANIFEST_BYTES = 16 * 2 ** 20
#: Room for the .npy header of one array on top of its entries (numpy headers are < 64 KiB).
NPY_HEADER_BYTES = 2 ** 16
#: What reading a damaged zip member can raise (numpy's ValueError: a cut ``.npy`` header).
_DAMAGED = (zipfile.BadZipFile, EOFError, OSError, zlib.error, ValueError)


def _archive(path: Path) -> None:
    """``ValueError`` naming ``path``, what it is instead and the commands that restore or
    regenerate it, unless it is a zip archive (an ``.npz``)."""
    looks = not_an_archive(path)
    if looks is not None:
        raise ValueError(f"stored run {path} cannot be read as an npz archive: it is "
                         f"{looks}; {_restore(path)}")


def _member(path: Path, stored: np.lib.npyio.NpzFile, key: str) -> np.ndarray:
    """The array ``key`` of the open stored file ``path``; ``ValueError`` naming both when the
    member is truncated or damaged."""
    try:
        return stored[key]
    except _DAMAGED as exc:
        raise ValueError(f"stored run {path}: key {key!r} cannot be read ({exc}): the file is "
                         f"truncated or damaged; {_restore(path)}") from exc


def _read(path: Path) -> tuple[dict[str, np.ndarray], dict[str, dict[str, object]]]:
    """Every array of the npz file ``path`` and its manifest, each array's declared
    (uncompressed) size checked against the manifest before it is decompressed."""
    name = path.stem
    _archive(path)
    try:
        with np.load(path, allow_pickle=False) as stored:
            members = {info.filename: info.file_size for info in stored.zip.infolist()}
            if f"{MANIFEST_KEY}.npy" not in members:
                raise ValueError(f"stored run {path} has no manifest (key {MANIFEST_KEY!r}): "
                                 f"it was written in an older format, so its contents cannot "
                                 f"be checked; {_regenerate(name)}")
            if members[f"{MANIFEST_KEY}.npy"] > MAX_MANIFEST_BYTES:
                raise ValueError(f"stored run {path}: its manifest declares "
                                 f"{members[f'{MANIFEST_KEY}.npy']} bytes, more than "
                                 f"{MAX_MANIFEST_BYTES}; {_regenerate(name)}")
            listed = _checked_manifest(path, str(_member(path, stored, MANIFEST_KEY)))
            _against_tracked(path, listed)
            arrays = {}
            for key in stored.files:
                if key == MANIFEST_KEY:
                    continue
                if key not in listed:
                    extra = sorted(set(stored.files) - set(listed) - {MANIFEST_KEY})
                    raise ValueError(f"stored run {path} has keys not in its manifest: {extra}; "
                                     f"{_regenerate(name)}")
                spec = listed[key]
                expected = int(np.prod(spec["shape"], dtype=object)) * \
                    np.dtype(spec["dtype"]).itemsize
                declared = members.get(f"{key}.npy", 0)
                if declared > expected + NPY_HEADER_BYTES:
                    raise ValueError(f"stored run {path}: key {key!r} declares {declared} "
                                     f"bytes uncompressed, its manifest's shape and dtype "
                                     f"{expected}; not decompressed; {_regenerate(name)}")
                _check_header(path, stored.zip, key, spec)
                arrays[key] = _member(path, stored, key)
    except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as exc:
        raise ValueError(f"stored run {path} is not a readable npz file ({exc}): it is "
                         f"truncated or damaged; {_restore(path)}") from exc
    return arrays, listed


def load(name: str, *, expect: Iterable[str] = ()) -> dict[str, np.ndarray]:
    """Load the stored history of experiment ``name`` (without its manifest), checked.

    The store's shared lock is held while the file and its tracked manifest are read, so a
    concurrent :func:`save` is seen complete or not at all.

    Parameters
    ----------
    name : str
        The experiment's name (its file is ``stored/NAME.npz``).
    expect : iterable of str
        Keys the caller needs.

    Returns
    -------
    dict
        Every stored array (name -> array) except the manifest.

    Raises
    ------
    FileNotFoundError
        When the file is missing, with the command that creates it.
    ValueError
        Naming the file (and the key) with the command that restores or regenerates it, when
        the file is not an npz archive (saying what it is: a Git LFS pointer, an HTML page,
        zeros, a truncated archive), is unreadable, has no manifest (an older format) or a
        malformed one, declares an array larger than its manifest says (checked before
        decompressing), misses a key of its manifest, has a key not in it, or an array whose
        shape, dtype or SHA-256 differs (an edited, truncated, doubled or NaN-filled value),
        when its tracked manifest ``NAME.manifest.json`` is missing, differs or has
        merge-conflict markers, or when a key in ``expect`` is absent.
    """
    path = _existing(name)
    with _store_lock(exclusive=False):
        arrays, listed = _read(path)
    rerun = f"; {_regenerate(name)}"
    for key, spec in listed.items():
        if key not in arrays:
            raise ValueError(f"stored run {path} is missing key {key!r} listed in its "
                             f"manifest (an interrupted or edited save){rerun}")
        value = arrays[key]
        if list(value.shape) != spec["shape"] or value.dtype.str != spec["dtype"]:
            raise ValueError(f"stored run {path}: key {key!r} has shape {value.shape} and "
                             f"dtype {value.dtype.str}, its manifest says "
                             f"{tuple(spec['shape'])} and {spec['dtype']}{rerun}")
        if _sha256(value) != spec["sha256"]:
            raise ValueError(f"stored run {path}: the values of key {key!r} do not match the "
                             f"SHA-256 of its manifest (changed after saving){rerun}")
    missing = [key for key in expect if key not in arrays]
    if missing:
        raise ValueError(f"stored run {path} has no key {missing[0]!r} (missing: {missing})"
                         f"; rerun `python -m attnbook.experiments {name}`")
    return arrays


def _read_unchecked(path: Path, *, match_older: bool) -> dict[str, np.ndarray]:
    """Every array of ``path`` except the manifest, for :func:`add_manifest`; with
    ``match_older``, when the file has a manifest of shapes and dtypes (written before hashes
    existed), the arrays must match it."""
    _archive(path)
    try:
        with np.load(path, allow_pickle=False) as stored:
            arrays = {key: stored[key] for key in stored.files}
    except _DAMAGED as exc:
        raise ValueError(f"stored run {path} is not a readable npz file ({exc}); "
                         f"{_restore(path)}") from exc
    if MANIFEST_KEY in arrays and not match_older:
        arrays.pop(MANIFEST_KEY)
    elif MANIFEST_KEY in arrays:
        try:
            listed = json.loads(str(arrays.pop(MANIFEST_KEY)))
            actual = {key: {"shape": list(value.shape), "dtype": value.dtype.str}
                      for key, value in arrays.items()}
            older = {key: {"shape": spec["shape"], "dtype": spec["dtype"]}
                     for key, spec in listed.items()}
        except (json.JSONDecodeError, TypeError, KeyError, AttributeError):
            return arrays                       # a malformed manifest is replaced
        if older != actual:
            raise ValueError(f"stored run {path} does not match its own manifest (keys, shapes "
                             f"or dtypes); rerun `python -m attnbook.experiments {path.stem}`")
    return arrays


def _has_hashed_manifest(path: Path) -> bool:
    try:
        with _store_lock(exclusive=False):
            _read(path)
    except ValueError:
        return False
    return True


def _settle(name: str) -> bool:
    """Rewrite a tracked manifest that accepts two manifests (a save stopped between its steps)
    with the one of the stored file; True if it did."""
    with _store_lock(exclusive=True):
        own = _own_manifest(_path(name))
        try:
            accepted = _accepted(name)
        except ValueError:
            return False
        if len(accepted) < 2 or own not in accepted:
            return False
        _write_tracked(name, [own])
    return True


def add_manifest(name: str, *, rewrite: bool = False) -> bool:
    """Write the manifest of the stored file ``name`` from its current contents (no rerun).

    A tracked manifest left listing two runs by a stopped save is first cut to the one of the
    stored file (the file is not rewritten). Otherwise the arrays are rewritten unchanged, with
    a manifest of their shapes, dtypes and SHA-256 (atomically, by :func:`save`): by default
    only when the file's manifest is missing, malformed or without hashes (written before
    hashes existed; its arrays must still match its shapes and dtypes), with ``rewrite=True``
    always (after a deliberate edit: the hashes then bless its current contents). Returns
    whether anything was written.
    """
    path = _existing(name)
    if _settle(name):
        return True
    if not rewrite and _has_hashed_manifest(path):
        return False
    save(name, _read_unchecked(path, match_older=not rewrite))
    return True


def _split_legacy_manifests() -> list[str]:
    """Move the entries of the older single tracked file ``stored/manifests.json`` into one
    tracked file per run (an entry replaces a run's own tracked file only when that file does
    not match the stored run and the entry does) and delete it; returns the runs whose tracked
    file was written. ``ValueError`` naming the file when it cannot be read."""
    legacy = STORED_DIR / LEGACY_MANIFESTS
    written = []
    with _store_lock(exclusive=True):
        if not legacy.exists():
            return []
        for name in sorted(path.stem for path in STORED_DIR.glob("*.npz")):
            entry = _legacy_entry(name)
            if entry is None:
                continue
            own = _own_manifest(_path(name))
            try:
                current = _accepted(name)
            except ValueError:
                current = []
            if (own not in current and own == entry) or not current:
                _write_tracked(name, [entry])
                written.append(name)
        legacy.unlink()
        fsync_directory(STORED_DIR)
    return written


def stored_files() -> list[str]:
    """Names of every ``NAME.npz`` in the store, registered or not."""
    return sorted(path.stem for path in STORED_DIR.glob("*.npz"))


def stored_names() -> list[str]:
    """Names of the registered experiments that have a stored file (what ``--all`` reruns)."""
    return sorted(name for name in registry() if _path(name).exists())


#: Where the benchmarks (``benchmarks/bench_NAME.py``) write their results by default.
BENCHMARK_DIR = Path(__file__).resolve().parents[2] / "benchmarks" / "results"


def benchmark_path(name: str) -> Path:
    """Where ``benchmarks/bench_NAME.py`` stores its results by default:
    ``benchmarks/results/benchmark_NAME.json`` in the book's repository (a benchmark's
    ``--output PATH`` writes elsewhere). ``name`` must be a plain identifier
    (:func:`check_name`).
    """
    return BENCHMARK_DIR / f"benchmark_{check_name(name)}.json"


def load_benchmark(name: str) -> dict:
    """Load the stored results of ``benchmarks/bench_NAME.py`` (a JSON document).

    Raises ``FileNotFoundError`` with the command that creates them when they are missing.
    """
    path = benchmark_path(name)
    if not path.exists():
        raise FileNotFoundError(f"no stored benchmark {path}; create it with "
                                f"`python benchmarks/bench_{name}.py`")
    return json.loads(path.read_text())


#: The environment variable that sets what a replay outside its tolerance does: ``strict``
#: raises (the test command; ``tests/conftest.py`` sets it), ``warn`` (the default: a reader's
#: build or a chapter run in Jupyter) shows a warning box in the page and goes on.
REPLAY_MODE_VARIABLE = "ATTNBOOK_REPLAY"
#: If set, every replay appends one JSON line (its name, tolerances and the fraction of its
#: tolerance each key used) to this file: ``scripts/replay_spread.py`` measures the spread of
#: the replays across CPU and BLAS configurations that way.
REPLAY_LOG_VARIABLE = "ATTNBOOK_REPLAY_LOG"
#: Where ``scripts/replay_spread.py`` stores the spread it measured.
REPLAY_SPREAD_FILE = STORED_DIR / "replay_spread.json"


class ReplayMismatch(AssertionError):
    """A replayed prefix outside its tolerance (raised in ``strict`` mode)."""


def _replay_mode() -> str:
    mode = os.environ.get(REPLAY_MODE_VARIABLE, "warn")
    if mode not in ("strict", "warn"):
        raise ValueError(f"{REPLAY_MODE_VARIABLE} must be 'strict' or 'warn', got {mode!r}")
    return mode


@dataclasses.dataclass(frozen=True)
class KeyCheck:
    """One compared key: ``used = max |new - old| / (atol + rtol |old|)`` over its entries (the
    fraction of its tolerance the deviation uses; above 1 it fails), and its largest absolute
    and relative deviations."""

    key: str
    rtol: float
    atol: float
    used: float
    abs_deviation: float
    rel_deviation: float
    absolute: bool = False
    """Whether the key has its own absolute tolerance (``replay(absolute=...)``)."""


def _compare_prefix(stored: Mapping[str, np.ndarray], replayed: Mapping[str, np.ndarray],
                   *, keys: Iterable[str], rtol: float, atol: float) -> list[KeyCheck]:
    """Compare each key of a replayed prefix with the start of the stored run.

    An entry passes when ``|new - old| <= atol + rtol |old|`` (NaN passes only against NaN);
    each replayed array is compared with the stored array's leading entries along axis 0.
    Raises :class:`ReplayMismatch` when a key is missing or its shape differs (a structural
    change, not round-off).
    """
    checks = []
    for key in keys:
        if key not in stored:
            raise ReplayMismatch(f"stored run has no entry {key!r}; rerun the full experiment")
        new = np.asarray(replayed[key], dtype=float)
        old = np.asarray(stored[key], dtype=float)
        if new.ndim and old.ndim:
            old = old[: new.shape[0]]
        if old.shape != new.shape:
            raise ReplayMismatch(f"{key}: stored shape {old.shape} vs replayed {new.shape}")
        both_nan = np.isnan(new) & np.isnan(old)
        with np.errstate(invalid="ignore", over="ignore"):
            difference = np.where(both_nan, 0.0, np.abs(new - old))
            difference = np.where(np.isnan(difference), np.inf, difference)
            allowed = atol + rtol * np.abs(np.where(np.isnan(old), 0.0, old))
            used = np.where(difference == 0, 0.0,
                            difference / np.where(allowed > 0, allowed, np.finfo(float).tiny))
            scale = np.maximum(np.abs(old), np.finfo(float).tiny)
            relative = np.where(both_nan, 0.0, difference / scale)
        checks.append(KeyCheck(key, rtol, atol, float(used.max(initial=0.0)),
                               float(difference.max(initial=0.0)),
                               float(relative.max(initial=0.0))))
    return checks


def assert_prefix_matches(stored: Mapping[str, np.ndarray], replayed: Mapping[str, np.ndarray],
                          *, keys: list[str] | None = None, rtol: float = 1e-8,
                          atol: float = 0.0) -> dict[str, float]:
    """Check that a replayed prefix agrees with the start of the stored full run:
    ``|replayed - stored[:len(replayed)]| <= atol + rtol |stored|`` for every key
    (:func:`_compare_prefix`), always strictly (a test's check).

    Returns the largest relative deviation per key; raises :class:`ReplayMismatch` (an
    ``AssertionError``) naming the key when a deviation exceeds the tolerance.
    """
    rtol = check_positive("rtol", rtol, allow_zero=True)
    atol = check_positive("atol", atol, allow_zero=True)
    checks = _compare_prefix(stored, replayed, keys=keys if keys is not None else list(replayed),
                            rtol=rtol, atol=atol)
    for check in checks:
        if check.used > 1:
            raise ReplayMismatch(f"{check.key}: replayed prefix differs from the stored run "
                                 f"(max abs deviation {check.abs_deviation:.3g})")
    return {check.key: check.rel_deviation for check in checks}


def measured_spread(name: str) -> dict | None:
    """The spread ``scripts/replay_spread.py`` measured for the replay of ``name`` (the largest
    fraction of its tolerance used across CPU/BLAS configurations, and those configurations),
    or None when it was not measured."""
    check_name(name)
    if name not in _REGISTRY:
        raise ValueError(f"name must be a registered experiment, got {name!r}")
    if not REPLAY_SPREAD_FILE.exists():
        return None
    spread = json.loads(REPLAY_SPREAD_FILE.read_text())
    entry = spread.get("replays", {}).get(name)
    return None if entry is None else {**entry, "configurations": spread["configurations"]}


@dataclasses.dataclass(frozen=True)
class ReplayCheck:
    """The outcome of one :func:`replay`: what was compared, to which tolerance, and the
    fraction of it used. ``str()`` is the line a chapter prints: it names the run, the number
    of arrays compared, the tolerance and the spread measured across CPUs (all independent of
    this machine's round-off), never the raw deviation."""

    name: str
    keys: tuple[KeyCheck, ...]

    @property
    def used(self) -> float:
        """The largest fraction of its tolerance that any key used; a replay above 1 is outside."""
        return max((check.used for check in self.keys), default=0.0)

    @property
    def passed(self) -> bool:
        return self.used <= 1.0

    @property
    def deviation(self) -> float:
        """The largest relative deviation of the keys compared without their own ``atol``."""
        return max((check.rel_deviation for check in self.keys if not check.absolute),
                   default=0.0)

    @property
    def worst(self) -> KeyCheck:
        return max(self.keys, key=lambda check: check.used)

    @property
    def tolerance(self) -> str:
        """``rtol 1e-08`` (and the absolute tolerances where keys have one)."""
        rtols = sorted({check.rtol for check in self.keys})
        atols = sorted({check.atol for check in self.keys if check.atol > 0})
        text = "rtol " + "/".join(f"{value:.0e}" for value in rtols)
        return text + ("" if not atols else ", atol " + "/".join(f"{v:.0e}" for v in atols))

    @property
    def mismatch(self) -> str:
        worst = self.worst
        return (f"the replay of the stored run {self.name!r} differs from it in key "
                f"{worst.key!r}: max abs deviation {worst.abs_deviation:.3g}, "
                f"{worst.used:.3g} times its tolerance (rtol {worst.rtol:.0e}, atol "
                f"{worst.atol:.0e}). To regenerate the stored run on this machine: "
                f"python -m attnbook.experiments {self.name}")

    def __str__(self) -> str:
        if not self.passed:
            return f"{self.name}: DIFFERS from the stored run (see the warning above)"
        spread = measured_spread(self.name)
        line = (f"{self.name}: {len(self.keys)} arrays replayed, within {self.tolerance} "
                f"of the stored run")
        if spread is not None:
            line += (f"; spread over {len(spread['configurations'])} CPU/BLAS setups: "
                     f"{_percent(spread['used'])} of the tolerance")
        return line


def _percent(fraction: float) -> str:
    """A fraction of a tolerance, as a reader reads it: '< 1%' below one percent."""
    return "< 1%" if fraction < 0.01 else f"{100 * fraction:.0f}%"


def _report_mismatch(check: ReplayCheck) -> None:
    """Strict mode: raise. Warn mode: a warning box in the page (or a Python warning outside
    IPython), and go on with the stored run."""
    if _replay_mode() == "strict":
        raise ReplayMismatch(check.mismatch)
    text = (f"Warning: {check.mismatch}. This page shows the stored run; the test command "
            f"(bash scripts/test.sh) fails on this.")
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:                                    # plain Python
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        import html
        display({"text/plain": text,
                 "text/html": '<div class="admonition warning"><p class="admonition-title">'
                              f'Replay outside its tolerance</p><p>{html.escape(text)}</p></div>'},
                raw=True)
    else:
        import warnings
        warnings.warn(text, RuntimeWarning, stacklevel=3)


def _log_replay(check: ReplayCheck) -> None:
    path = os.environ.get(REPLAY_LOG_VARIABLE)
    if not path:
        return
    entry = {"name": check.name, "keys": [dataclasses.asdict(key) for key in check.keys]}
    with open(path, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")


class Replay(NamedTuple):
    """What :func:`replay` returns; unpacks as ``stored, prefix, check``."""

    stored: dict[str, np.ndarray]
    """The full stored run, checked against its manifest (:func:`load`)."""
    prefix: dict[str, np.ndarray]
    """The prefix rerun live (:func:`run` with ``full=False``)."""
    check: ReplayCheck
    """What was compared and how closely; ``print(check)`` is the chapter's line."""


Aligner = Callable[[Mapping[str, np.ndarray], Mapping[str, np.ndarray]],
                   tuple[Mapping[str, np.ndarray], Mapping[str, np.ndarray]]]


def _numeric_keys(history: Mapping[str, np.ndarray]) -> list[str]:
    """Every key whose value holds numbers (not the JSON ``config`` string)."""
    return [key for key, value in history.items() if np.asarray(value).dtype.kind in "biufc"]


def replay(name: str, *, keys: Iterable[str] | Callable[[Mapping[str, np.ndarray]], Iterable[str]]
           | None = None, rtol: float = 1e-8, atol: float = 0.0,
           absolute: Mapping[str, float] | None = None, align: Aligner | None = None,
           prefix: Mapping[str, np.ndarray] | None = None) -> Replay:
    """Load the stored run ``name``, rerun its prefix live and check the two agree.

    Every compared key must satisfy ``|prefix - stored[:len(prefix)]| <= atol + rtol |stored|``
    (:func:`_compare_prefix`); a key that starts with a key of ``absolute`` uses that value as
    ``atol`` instead (curves that start at round-off) and is left out of the relative
    deviation. The tolerance must hold on any IEEE-754 machine: ``scripts/replay_spread.py``
    measures how much of it the replay uses under other CPU and BLAS configurations
    (:func:`measured_spread`), and ``print(check)`` says so.

    Outside its tolerance, the replay raises :class:`ReplayMismatch` naming the run, the key
    and the command that regenerates the run when ``ATTNBOOK_REPLAY=strict`` (the test
    command), and otherwise (a reader's build, a chapter run in Jupyter) shows a warning box
    in the page saying the same and goes on with the stored run.

    Parameters
    ----------
    name : str
        A registered experiment with a stored file.
    keys : iterable of str, or callable, optional
        The keys to compare, or a function of the prefix returning them (default: every key of
        the prefix that holds numbers).
    rtol, atol : float
        The tolerances.
    absolute : mapping, optional
        Key prefixes (str) mapped to their own absolute tolerance (float).
    align : callable, optional
        ``align(stored, prefix) -> (stored_view, prefix_view)``: what to compare when the prefix
        is not the leading records of every array (for example :func:`leading_block`).
    prefix : mapping, optional
        An already computed prefix (default: ``run(name, full=False)``).

    Returns
    -------
    Replay
        ``(stored, prefix, check)``: the :class:`ReplayCheck` last.

    Raises
    ------
    ReplayMismatch
        (an ``AssertionError``) In strict mode, naming the run and the key when the prefix
        differs from the stored run; in any mode when nothing is compared or a shape differs.
    FileNotFoundError
        With the command that creates the stored run when it is missing.
    """
    rtol = check_positive("rtol", rtol, allow_zero=True)
    atol = check_positive("atol", atol, allow_zero=True)
    absolute = {str(key): check_positive(f"absolute[{key!r}]", value, allow_zero=True)
                for key, value in dict(absolute or {}).items()}
    if isinstance(keys, str) or not (keys is None or callable(keys) or isinstance(keys, Iterable)):
        raise TypeError(f"keys must be a list of key names or a function of the prefix, got "
                        f"{keys!r}")
    if not (align is None or callable(align)):
        raise TypeError(f"align must be a function (stored, prefix) -> views, got {align!r}")
    if not (prefix is None or isinstance(prefix, Mapping)):
        raise TypeError(f"prefix must be a mapping of key names to arrays, got "
                        f"{type(prefix).__name__}")
    stored = load(name)
    prefix = dict(run(name, full=False) if prefix is None else prefix)
    stored_view, prefix_view = (stored, prefix) if align is None else align(stored, prefix)
    chosen = list(_numeric_keys(prefix_view) if keys is None
                  else keys(prefix_view) if callable(keys) else keys)
    own_atol = {key: next((absolute[a] for a in absolute if key.startswith(a)), None)
                for key in chosen}
    if not chosen:
        raise AssertionError(f"replay of {name!r} compares no key; pass keys=")
    checks = [dataclasses.replace(check, absolute=own_atol[key] is not None)
              for key in chosen for check in _compare_prefix(
                  stored_view, prefix_view, keys=[key], rtol=rtol,
                  atol=atol if own_atol[key] is None else own_atol[key])]
    check = ReplayCheck(name, tuple(checks))
    _log_replay(check)
    if not check.passed:
        _report_mismatch(check)
    return Replay(stored, prefix, check)


def leading_block(stored: Mapping[str, np.ndarray], prefix: Mapping[str, np.ndarray]
                  ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """An ``align`` for :func:`replay`: a prefix that reruns the first entries along every axis
    (first noise levels, smallest n, first seeds, first iterations) is compared with
    ``stored[key][:a, :b, ...]``, the stored block of the prefix's shape (numeric keys only)."""
    cut = {}
    for key in _numeric_keys(prefix):
        array, shape = np.asarray(stored[key]), np.shape(prefix[key])
        if array.ndim != len(shape):
            raise AssertionError(f"{key}: stored has {array.ndim} axes, replayed {len(shape)}")
        cut[key] = array[tuple(slice(0, size) for size in shape)]
    return cut, {key: prefix[key] for key in cut}


def cell(*index: int) -> Aligner:
    """An ``align`` for :func:`replay` that compares one cell of a grid, ``stored[key][index]``
    with ``prefix[key][index]`` for every numeric key with at least ``len(index)`` axes (the
    grid's arrays; coordinate arrays are left out): for a prefix that runs the grid's first
    cell and leaves the others NaN."""
    index = tuple(check_int(f"index[{i}]", value, minimum=0) for i, value in enumerate(index))

    def align(stored: Mapping[str, np.ndarray], prefix: Mapping[str, np.ndarray]
              ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        keys = [key for key in _numeric_keys(prefix) if np.ndim(prefix[key]) >= len(index)]
        return ({key: np.asarray(stored[key])[index] for key in keys},
                {key: np.asarray(prefix[key])[index] for key in keys})
    return align


def config(source: str | Mapping[str, np.ndarray]) -> dict:
    """The settings a stored run was made with: its ``config`` entry (a JSON string) parsed.

    ``source`` is an experiment name (its stored file is loaded) or an already loaded run.
    Raises ``KeyError`` naming the run when it has no ``config`` entry.
    """
    if not isinstance(source, (str, Mapping)):
        raise TypeError(f"source must be an experiment name or a loaded run, got "
                        f"{type(source).__name__}")
    history = load(source) if isinstance(source, str) else source
    if "config" not in history:
        named = f" {source!r}" if isinstance(source, str) else ""
        raise KeyError(f"the stored run{named} has no 'config' entry")
    return json.loads(str(np.asarray(history["config"])))


def describe(name: str) -> str:
    """Return the stored run's metadata (the JSON string under key ``config``) if present."""
    stored = load(name)
    return json.dumps(config(stored), indent=2) if "config" in stored else "{}"


def format_deviation(value: float, *, resolution: float = 1e-12) -> str:
    """Format a round-off-sized quantity (a residual, a gradient norm, a deviation) against its
    bound: ``"< 1e-12"`` when ``value < resolution``.

    Such a quantity differs between machines (CPUs, SIMD levels, BLAS kernels and thread
    counts), so a chapter never prints its raw magnitude: it picks a ``resolution`` that holds on
    any IEEE-754 machine, and the stored output is then the same everywhere. A value at or above
    the bound prints as ``"3e-09 (not below 1e-12)"``, which a test comparing the stored outputs
    flags.
    """
    value = check_positive("value", value, allow_zero=True)
    resolution = check_positive("resolution", resolution)
    return (f"< {resolution:.0e}" if value < resolution
            else f"{value:.1g} (not below {resolution:.0e})")
