"""Runs a user can keep: save a result to a file of their choosing and load it back.

A saved run is one ``.npz`` file (a zip archive) holding the result's arrays as ``.npy``
members and one JSON member, ``run.json``, with everything else: the kind of result (its class
name), the format version, the attnlib version that wrote it, the scalar fields and the run's
configuration (``config``: the method, the step, the options). ``unzip -p run.npz run.json``
shows it; ``numpy.load`` reads the arrays.

The file is written to a temporary file in the same folder, flushed to disk, and then renamed
over the target in one step (``os.replace``), so a reader, or a crash, sees either the complete
old file or the complete new one, never a mixture; nothing else is written. The library never
writes into its own installed files: the only paths it writes are the ones a user names.

The results that can be saved are the dataclasses that derive from :class:`SavedRun`:
:class:`attnlib.algorithm.TrainResult`, :class:`attnlib.langevin.LangevinRun` and
:class:`attnlib.langevin.MalaRun`. Each also has a short ``repr`` (shapes and the last values,
not the arrays) and a dict form, ``to_dict()``.

Examples
--------
>>> import tempfile, pathlib
>>> import numpy as np
>>> from attnlib import algorithm, data, runs
>>> rng = np.random.default_rng(0)
>>> X, Y = data.default_problem(rng=rng, d=3, p=4).sample(50, rng=rng)
>>> result = algorithm.train(algorithm.empirical_loss(X, Y), iterations=5)
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> path = result.save(folder / "algorithm1")
>>> path.name
'algorithm1.npz'
>>> again = runs.load(path)
>>> bool(np.array_equal(again.history["objective"], result.history["objective"]))
True
"""

from __future__ import annotations

import dataclasses
import io
import json
import zipfile
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from ._constants import documented
from ._files import atomic_write, not_an_archive, npz_path, restore_hint

__all__ = ["SavedRun", "save", "load", "FORMAT_VERSION"]

#: Version of the saved-run format (``run.json``'s ``format``); ``load`` refuses files of another
#: version.
FORMAT_VERSION = documented(1, """Version of the saved-run format (``run.json``'s
``format``); ``load`` refuses files of another version.""")

_META = "run.json"
_KINDS: dict[str, type] = {}


def _attnlib_version() -> str:
    from importlib import metadata
    try:
        return metadata.version("attnlib")
    except metadata.PackageNotFoundError:       # a source tree on sys.path, not installed
        return "unknown"


def _jsonable(value: Any) -> Any:
    """``value`` with tuples as lists, numpy scalars as Python numbers and callables by name."""
    if isinstance(value, dict):
        return {str(key): _jsonable(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(item) for item in value]
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if callable(value):
        return getattr(value, "__qualname__", type(value).__name__)
    raise TypeError(f"config entry {value!r} of type {type(value).__name__} cannot be saved as "
                    "JSON")


class SavedRun:
    """Mixin for result dataclasses: :meth:`save`, :meth:`load`, :meth:`to_dict` and a short
    repr. Fields holding arrays are stored as arrays, a field holding a dict of arrays (a
    history) as one array per key, and the other fields in ``run.json``."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _KINDS[cls.__name__] = cls

    def to_dict(self) -> dict[str, Any]:
        """The result's fields as a dict (arrays and dicts of arrays as they are, not copied)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def save(self, path: str | Path) -> Path:
        """Save the run to ``path`` (``.npz`` appended when missing) atomically; returns the
        path written. See :func:`save`."""
        return save(self, path)

    @classmethod
    def load(cls, path: str | Path) -> "SavedRun":
        """Load a run of this kind saved by :meth:`save` (``ValueError`` for another kind)."""
        run = load(path)
        if not isinstance(run, cls):
            raise ValueError(f"{path} holds a {type(run).__name__}, not a {cls.__name__}")
        return run

    def __repr__(self) -> str:
        parts = []
        for key, value in self.to_dict().items():
            if isinstance(value, np.ndarray):
                parts.append(f"{key}: array{value.shape}")
            elif isinstance(value, dict) and value and all(
                    isinstance(v, np.ndarray) for v in value.values()):
                lengths = sorted({v.shape[0] if v.ndim else 1 for v in value.values()})
                parts.append(f"{key}: {len(value)} arrays ({', '.join(list(value)[:6])}"
                             f"{', ...' if len(value) > 6 else ''}) of length "
                             f"{'/'.join(map(str, lengths))}")
            elif isinstance(value, dict):
                parts.append(f"{key}: {len(value)} entries")
            elif value is None:
                continue
            elif isinstance(value, float):
                parts.append(f"{key}={value:.4g}")
            else:
                parts.append(f"{key}={value!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


def save(run: SavedRun, path: str | Path) -> Path:
    """Save ``run`` to one ``.npz`` file at ``path`` (``.npz`` appended when missing), in one
    atomic step (module docstring). The folder must exist.

    Parameters
    ----------
    run : SavedRun
        A :class:`attnlib.algorithm.TrainResult`, :class:`attnlib.langevin.LangevinRun` or
        :class:`attnlib.langevin.MalaRun`.
    path : str or Path
        Where to write, in a folder the user names.

    Returns
    -------
    Path
        The file written (with its ``.npz`` suffix), the argument :func:`load` takes.

    Raises
    ------
    TypeError
        When ``run`` is not a saved-run dataclass or a field cannot be stored.
    FileNotFoundError
        When the folder does not exist.
    """
    if not (isinstance(run, SavedRun) and dataclasses.is_dataclass(run)):
        raise TypeError(f"run must be a TrainResult, LangevinRun or MalaRun, got "
                        f"{type(run).__name__}")
    target = npz_path(path, writing=True)
    arrays: dict[str, np.ndarray] = {}
    fields: dict[str, Any] = {}
    for key, value in run.to_dict().items():
        if isinstance(value, np.ndarray):
            arrays[key] = value
        elif isinstance(value, dict) and value and all(
                isinstance(v, np.ndarray) for v in value.values()):
            arrays.update({f"{key}/{name}": array for name, array in value.items()})
            fields[key] = {"arrays": list(value)}
        else:
            fields[key] = {"value": _jsonable(value)}
    meta = dict(kind=type(run).__name__, format=FORMAT_VERSION, attnlib=_attnlib_version(),
                fields=fields, arrays=list(arrays))
    def write(stream: BinaryIO) -> None:
        with zipfile.ZipFile(stream, "w", compression=zipfile.ZIP_STORED) as archive:
            archive.writestr(_META, json.dumps(meta, indent=1, allow_nan=True))
            for name, array in arrays.items():
                buffer = io.BytesIO()
                np.lib.format.write_array(buffer, np.asarray(array), allow_pickle=False)
                archive.writestr(f"{name}.npy", buffer.getvalue())

    atomic_write(target, write)
    return target


def load(path: str | Path) -> SavedRun:
    """Load a run saved by :func:`save`.

    Parameters
    ----------
    path : str or Path
        The file :func:`save` returned (``.npz`` appended when missing).

    Returns
    -------
    SavedRun
        A result of the kind saved, equal field by field to the one saved.

    Raises
    ------
    FileNotFoundError
        When the file does not exist.
    ValueError
        When the file is not a saved run, is damaged, or was written in another format
        version; the message names the file.
    """
    source = npz_path(path)
    if not source.is_file():
        raise FileNotFoundError(f"no saved run at {str(source)!r}")
    looks = not_an_archive(source)
    if looks is not None:
        raise ValueError(f"{str(source)!r} is not a saved run: it is {looks}; "
                         f"{restore_hint(source)} if it is tracked, or save the run again")
    try:
        with zipfile.ZipFile(source) as archive:
            meta = json.loads(archive.read(_META))
            if meta.get("format") != FORMAT_VERSION:
                raise ValueError(f"format {meta.get('format')!r}, this attnlib reads format "
                                 f"{FORMAT_VERSION}")
            arrays = {name: np.lib.format.read_array(io.BytesIO(archive.read(f"{name}.npy")),
                                                     allow_pickle=False)
                      for name in meta["arrays"]}
        kind = _KINDS.get(meta["kind"]) or _known_kinds().get(meta["kind"])
        if kind is None:
            raise ValueError(f"unknown kind of run {meta['kind']!r}")
        values = {}
        for key, stored in meta["fields"].items():
            if "arrays" in stored:
                values[key] = {name: arrays[f"{key}/{name}"] for name in stored["arrays"]}
            else:
                values[key] = stored["value"]
        values.update({key: array for key, array in arrays.items() if "/" not in key})
        return kind(**values)
    except (zipfile.BadZipFile, EOFError, KeyError, json.JSONDecodeError, TypeError, OSError,
            ValueError) as error:
        raise ValueError(f"{str(source)!r} is not a readable saved run ({error}); it may be "
                         "truncated or not written by attnlib.runs.save") from error


def _known_kinds() -> dict[str, type]:
    """The saved-run classes, importing their modules (which register them)."""
    from . import algorithm, langevin  # noqa: F401  (registration on import)
    return _KINDS
