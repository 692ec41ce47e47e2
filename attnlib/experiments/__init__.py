"""Named, seeded experiment configurations, their stored histories, and the command line.

Every long run in the book follows the pattern "stored run, replayed prefix" (book.md):

* a configuration is a function registered under a name with :func:`register`; called with
  ``full=True`` it runs the whole experiment, with ``full=False`` only the first stretch, and it
  returns a dict of numpy arrays (its history);
* ``python -m attnlib.experiments NAME`` runs the full configuration and saves its history
  in ``attnlib/experiments/stored/NAME.npz`` (see :func:`save`);
* a chapter loads it with :func:`load`, plots it, reruns the prefix live and calls
  :func:`assert_prefix_matches`, so a stale or hand-edited result fails the tests.

Configurations live in the submodules of this package (one per part of the book); they are
discovered automatically, so adding a module needs no edit here.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

STORED_DIR = Path(__file__).resolve().parent / "stored"

Experiment = Callable[..., dict[str, np.ndarray]]
_REGISTRY: dict[str, tuple[Experiment, str]] = {}


def register(name: str) -> Callable[[Experiment], Experiment]:
    """Decorator registering ``fn(full: bool = True, progress: bool = False)`` under ``name``.

    The first line of the function's docstring is shown by ``python -m attnlib.experiments``.
    """

    def decorate(fn: Experiment) -> Experiment:
        if name in _REGISTRY:
            raise ValueError(f"experiment name {name!r} is registered twice")
        _REGISTRY[name] = (fn, (fn.__doc__ or "").strip().splitlines()[0] if fn.__doc__ else "")
        return fn

    return decorate


def _discover() -> None:
    for module in pkgutil.iter_modules([str(Path(__file__).resolve().parent)]):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


def registry() -> dict[str, tuple[Experiment, str]]:
    """All registered experiments: name -> (function, one-line description)."""
    _discover()
    return dict(_REGISTRY)


def run(name: str, *, full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Run the registered experiment ``name`` and return its history (nothing is saved)."""
    experiments = registry()
    if name not in experiments:
        raise KeyError(f"unknown experiment {name!r}; known: {sorted(experiments)}")
    return experiments[name][0](full=full, progress=progress)


def save(name: str, history: Mapping[str, np.ndarray]) -> Path:
    """Save ``history`` (a dict of arrays) as ``stored/NAME.npz`` and return the path."""
    STORED_DIR.mkdir(parents=True, exist_ok=True)
    path = STORED_DIR / f"{name}.npz"
    np.savez_compressed(path, **{key: np.asarray(value) for key, value in history.items()})
    return path


def load(name: str) -> dict[str, np.ndarray]:
    """Load the stored history of experiment ``name``.

    Raises ``FileNotFoundError`` with the command that creates it when it is missing.
    """
    path = STORED_DIR / f"{name}.npz"
    if not path.exists():
        raise FileNotFoundError(f"no stored run {path}; create it with "
                                f"`python -m attnlib.experiments {name}`")
    with np.load(path, allow_pickle=False) as stored:
        return {key: stored[key] for key in stored.files}


def benchmark_path(name: str) -> Path:
    """Where ``benchmarks/bench_NAME.py`` stores its results: ``stored/benchmark_NAME.json``.

    The results ship as package data, so a notebook that shows them runs from any directory.
    """
    return STORED_DIR / f"benchmark_{name}.json"


def load_benchmark(name: str) -> dict:
    """Load the stored results of ``benchmarks/bench_NAME.py`` (a JSON document).

    Raises ``FileNotFoundError`` with the command that creates them when they are missing.
    """
    path = benchmark_path(name)
    if not path.exists():
        raise FileNotFoundError(f"no stored benchmark {path}; create it with "
                                f"`python benchmarks/bench_{name}.py`")
    return json.loads(path.read_text())


def assert_prefix_matches(stored: Mapping[str, np.ndarray], replayed: Mapping[str, np.ndarray],
                          *, keys: list[str] | None = None, rtol: float = 1e-8,
                          atol: float = 0.0) -> dict[str, float]:
    """Check that a replayed prefix agrees with the start of the stored full run.

    For each key (default: every key of ``replayed``), the replayed array must equal the
    stored array's leading entries along axis 0 to the given tolerances
    (``|replayed - stored| <= atol + rtol |stored|``). Returns the largest relative deviation
    per key; raises ``AssertionError`` naming the key when a deviation exceeds the tolerance.
    """
    deviations: dict[str, float] = {}
    for key in keys if keys is not None else list(replayed):
        if key not in stored:
            raise AssertionError(f"stored run has no entry {key!r}; rerun the full experiment")
        new = np.asarray(replayed[key], dtype=float)
        old = np.asarray(stored[key], dtype=float)
        if new.ndim and old.ndim:
            old = old[: new.shape[0]]
        if old.shape != new.shape:
            raise AssertionError(f"{key}: stored shape {old.shape} vs replayed {new.shape}")
        if not np.allclose(new, old, rtol=rtol, atol=atol, equal_nan=True):
            raise AssertionError(f"{key}: replayed prefix differs from the stored run "
                                 f"(max abs deviation {np.nanmax(np.abs(new - old)):.3g})")
        scale = np.maximum(np.abs(old), np.finfo(float).tiny)
        deviations[key] = float(np.nanmax(np.abs(new - old) / scale)) if new.size else 0.0
    return deviations


def describe(name: str) -> str:
    """Return the stored run's metadata (the JSON string under key ``config``) if present."""
    stored = load(name)
    return json.dumps(json.loads(str(stored["config"])), indent=2) if "config" in stored else "{}"


def format_deviation(value: float, *, resolution: float = 1e-12) -> str:
    """Format a replay deviation (e.g. ``max`` of :func:`assert_prefix_matches`'s result).

    Deviations at round-off level differ between machines and BLAS builds, so a value below
    ``resolution`` prints as ``"< 1e-12"``; that keeps the stored notebook output reproducible.
    """
    return f"< {resolution:.0e}" if value < resolution else f"{value:.1g}"
