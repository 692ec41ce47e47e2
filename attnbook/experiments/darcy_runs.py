"""Chapter 11: the Darcy-flow experiment with a one-attention-layer ViT regressor.

Phase 1 trains every parameter of :mod:`attnlib.vit` on Darcy data from :mod:`attnlib.darcy`;
Phase 2 starts from the Phase-1 weights and trains only ``W_Q, W_K`` under three regimes
(``none``, ``log``, ``power`` regularization of :mod:`attnlib.regularizers`), several seeds,
with Adam, plain SGD, or SGD with injected Gaussian noise. Every size, optimiser setting,
epoch count and strength below is a [choice] of this book (the source gives none).

Registered configurations (``python -m attnbook.experiments NAME``):

* ``darcy_phase1``: book scale, Phase 1 (stores the per-epoch history and the final weights);
* ``darcy_phase2_adam``, ``darcy_phase2_sgd``, ``darcy_phase2_noisy``: book scale, Phase 2
  from the stored Phase-1 weights (run ``darcy_phase1`` first);
* ``darcy_phase2_noisy_strong``: as ``darcy_phase2_noisy`` with the larger lambda = 1e-3;
* ``darcy_phase2_lambda_sweep``: Adam, the log and power forms at three larger strengths;
* ``darcy_large``: a larger configuration (64 x 64 grid, more data, wider model, both phases).

Every setting of a run is a field of its frozen settings dataclass (``PHASE1``, ``PHASE2[NAME]``,
``SWEEP``, ``LARGE``; ``experiments.settings(NAME)``): the book-scale setup :data:`BOOK`
(:class:`DarcySetup`) plus what the run trains; the stored ``config`` is ``dataclasses.asdict``
of it plus ``full``.

Stored keys. ``darcy_phase1``: the per-epoch history of :func:`attnlib.vit.train`, ``epoch``,
``train_loss``, ``reg``, ``norm_WQ``, ``norm_WK``, ``test_loss``, ``test_rmse``,
``test_rel_l2`` (E + 1,) (:func:`phase1_curves`), and the final weights as
``weight_<parameter>`` (:func:`phase1_weights`). Phase-2 runs: the same quantities stacked with
the grid axes first, (R regularizers, S seeds, E + 1 epochs) with the coordinates
``regularizers`` (R,; the regimes) and ``seeds`` (S,); the lambda sweep adds a leading axis of
strengths, (L, R, S, E + 1) with ``lams`` (L,). Every Phase-2 task of a run trains the same
number of epochs, so no entry is padded. :func:`seed_series` reads one condition; a chapter
replays the first seed of every regime (``align=experiments.leading_block``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache, partial
from typing import Callable

import numpy as np

from attnbook.seeds import stream
from attnlib import darcy, vit
from attnlib.regularizers import Regularizer
from . import TaskGrid, load, register, register_grid, run_grid
from ._tasks import checkpoint, stack_tasks

REGIMES = ("none", "log", "power")
PHASE1_NAME = "darcy_phase1"
WEIGHT_PREFIX = "weight_"


@dataclass(frozen=True)
class DarcySetup:
    """Every [choice] of the Darcy experiment (sizes, optimisers, epochs, strengths, seeds)."""

    size: int = 32                 # grid nodes per side (boundary included)
    n_train: int = 500
    n_test: int = 200
    data_seed: int = 0
    patch: int = 4                 # 4 x 4 patches: 64 tokens
    width: int = 32                # token width D
    key_dim: int = 32              # d_k
    hidden: int = 64               # per-token decoder width
    init_seed: int = 1
    dtype: str = "float32"
    phase1_epochs: int = 100
    phase1_lr: float = 2e-3
    phase1_batch: int = 20
    phase1_seed: int = 2           # minibatch order of Phase 1
    phase2_epochs: int = 80
    phase2_batch: int = 10
    adam_lr: float = 3e-3
    sgd_lr: float = 0.05
    noise_std: float = 3e-3        # per-step Gaussian noise of the Langevin variant
    lam: float = 1e-5              # regularization strength lambda (log and power)
    eps: float = 0.5               # exponent of the power form, R = lam ((1 + t)^(1 + eps/2) - 1)
    seeds: tuple[int, ...] = (0, 1, 2)
    phase1_prefix: int = 2         # epochs a chapter replays live
    phase2_prefix: int = 1


@dataclass(frozen=True, kw_only=True)
class Phase1Settings(DarcySetup):
    """The settings of ``darcy_phase1``: its setup (every field of :class:`DarcySetup`, shared
    with the Phase-2 runs that start from its weights) and the epochs it trains."""

    epochs: int


@dataclass(frozen=True, kw_only=True)
class Phase2Settings(DarcySetup):
    """The settings of a stored Phase-2 run: its setup (``lam`` the strength of the log and
    power regimes, ``seeds`` its seeds), the optimizer (``"adam"``, ``"sgd"`` or ``"noisy"``,
    :func:`run_phase2`) and the epochs it trains."""

    optimizer: str
    epochs: int


@dataclass(frozen=True, kw_only=True)
class SweepSettings(Phase2Settings):
    """The settings of ``darcy_phase2_lambda_sweep``: a Phase-2 run of the log and power forms
    at every strength of ``lams`` (the setup's ``lam`` is not used)."""

    lams: tuple[float, ...]


#: the book-scale setup every stored run uses
BOOK = DarcySetup()
#: the settings of ``darcy_phase1``
PHASE1 = Phase1Settings(**vars(BOOK), epochs=BOOK.phase1_epochs)
#: the settings of the stored Phase-2 runs, by name; [choice] ``darcy_phase2_noisy_strong`` has a
#: strength large enough to confine the noisy-SGD chain within the run (not "low")
PHASE2 = {
    "darcy_phase2_adam": Phase2Settings(**vars(BOOK), optimizer="adam",
                                        epochs=BOOK.phase2_epochs),
    "darcy_phase2_sgd": Phase2Settings(**vars(BOOK), optimizer="sgd",
                                       epochs=BOOK.phase2_epochs),
    "darcy_phase2_noisy": Phase2Settings(**vars(BOOK), optimizer="noisy",
                                         epochs=BOOK.phase2_epochs),
    "darcy_phase2_noisy_strong": Phase2Settings(**vars(replace(BOOK, lam=1e-3)),
                                                optimizer="noisy", epochs=BOOK.phase2_epochs),
}
#: [choice] The lambda sweep that locates the "low-regularization regime" (Adam, log and power
#: forms, the setup's seeds), 40 epochs (half the other runs, to fit the CPU budget; the chapter
#: compares it with the first 40 epochs of the lambda = 1e-5 runs)
SWEEP = SweepSettings(**vars(BOOK), optimizer="adam", epochs=40, lams=(1e-4, 1e-3, 1e-2))
#: the settings of ``darcy_large`` (not stored)
LARGE = DarcySetup(size=64, n_train=1000, n_test=200, patch=8, width=64, key_dim=64,
                   hidden=128, phase1_epochs=150, phase2_epochs=300)


@dataclass(frozen=True)
class DarcyTask:
    """The dataset, its standardisers and the patch arrays used for training."""

    data: darcy.DarcyDataset
    a_scale: vit.Standardizer
    u_scale: vit.Standardizer
    train: tuple[np.ndarray, np.ndarray]
    test: tuple[np.ndarray, np.ndarray]
    setup: DarcySetup

    @property
    def test_fields(self) -> tuple[np.ndarray, np.ndarray]:
        """The test coefficients and solutions, ``(n_test, s, s)`` each."""
        n = self.setup.n_train
        return self.data.a[n:], self.data.u[n:]

    def predict(self, params: dict[str, np.ndarray], a: np.ndarray) -> np.ndarray:
        """Predicted solution fields (physical units) for coefficient fields ``a``."""
        return self.u_scale.decode(vit.predict_fields(params, self.a_scale.encode(a),
                                                      patch=self.setup.patch))

    def test_metrics(self, params: dict[str, np.ndarray]) -> dict[str, float]:
        """Test RMSE and relative L2 error in physical units (``test_rmse``, ``test_rel_l2``)."""
        a, u = self.test_fields
        return {f"test_{key}": value
                for key, value in vit.field_metrics(self.predict(params, a), u).items()}


def make_task(setup: DarcySetup, *, progress: bool = False) -> DarcyTask:
    """Generate the data of ``setup`` and standardise it with training-set statistics."""
    data = darcy.generate(setup.n_train + setup.n_test, setup.size, seed=setup.data_seed,
                          progress=progress)
    n = setup.n_train
    a_scale = vit.Standardizer.fit(data.a[:n])
    u_scale = vit.Standardizer.fit(data.u[:n])
    patches = vit.patchify(a_scale.encode(data.a), setup.patch)
    targets = vit.patchify(u_scale.encode(data.u), setup.patch)
    return DarcyTask(data=data, a_scale=a_scale, u_scale=u_scale,
                     train=(patches[:n], targets[:n]), test=(patches[n:], targets[n:]),
                     setup=setup)


def model_config(setup: DarcySetup) -> vit.ViTConfig:
    """The ViT sizes of ``setup``."""
    return vit.ViTConfig(size=setup.size, patch=setup.patch, width=setup.width,
                         key_dim=setup.key_dim, hidden=setup.hidden)


def run_phase1(task: DarcyTask, *, epochs: int, progress: bool = False
               ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Phase 1: Adam on every parameter from the seeded initialisation; (weights, history)."""
    s = task.setup
    params = vit.init_params(model_config(s), rng=np.random.default_rng(s.init_seed))
    return vit.train(params, *task.train, epochs=epochs, batch_size=s.phase1_batch,
                     lr=s.phase1_lr, rng=np.random.default_rng(s.phase1_seed), optimizer="adam",
                     test=task.test, callback=task.test_metrics, dtype=np.dtype(s.dtype).type,
                     progress=progress)


def regularizer_for(regime: str, setup: DarcySetup) -> Regularizer:
    """The regularizer of a regime: none, log-amplified or (smooth) power form, strength lam."""
    if regime not in REGIMES:
        raise ValueError(f"regime must be one of {REGIMES}, got {regime!r}")
    return Regularizer(name=regime, lam=0.0 if regime == "none" else setup.lam, eps=setup.eps)


def run_phase2(task: DarcyTask, start: dict[str, np.ndarray], *, regime: str, seed: int,
               optimizer: str, epochs: int, progress: bool = False
               ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Phase 2: train only ``W_Q, W_K`` from ``start`` under ``regime``; (weights, history).

    ``optimizer`` is ``"adam"``, ``"sgd"`` or ``"noisy"`` (SGD plus Gaussian noise of standard
    deviation ``setup.noise_std`` per step and entry).
    """
    s = task.setup
    kind = {"adam": "adam", "sgd": "sgd", "noisy": "sgd"}[optimizer]
    return vit.train(start, *task.train, epochs=epochs, batch_size=s.phase2_batch,
                     lr=s.adam_lr if kind == "adam" else s.sgd_lr,
                     rng=stream("training", seed), optimizer=kind,
                     trainable=("W_Q", "W_K"), regularizer=regularizer_for(regime, s),
                     noise_std=s.noise_std if optimizer == "noisy" else 0.0, test=task.test,
                     callback=task.test_metrics, dtype=np.dtype(s.dtype).type, progress=progress)


def phase1_weights(stored: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The Phase-1 weights saved in a stored ``darcy_phase1`` run."""
    return {key[len(WEIGHT_PREFIX):]: value for key, value in stored.items()
            if key.startswith(WEIGHT_PREFIX)}


def phase1_curves(stored: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The per-epoch history of a stored ``darcy_phase1`` run (every key but the weights and
    the config)."""
    return {key: value for key, value in stored.items()
            if not key.startswith(WEIGHT_PREFIX) and key != "config"}


def phase1_history(task: DarcyTask, *, epochs: int, progress: bool = False
                   ) -> dict[str, np.ndarray]:
    """Run Phase 1 for ``epochs`` epochs; the history (one key per quantity) and the weights
    (``weight_<parameter>``)."""
    params, history = run_phase1(task, epochs=epochs, progress=progress)
    out = dict(history)
    out.update({WEIGHT_PREFIX + key: value for key, value in params.items()})
    return out


@dataclass(frozen=True)
class Phase2Task:
    """One independent, seeded Phase-2 run: the unit a parallel runner can distribute.

    ``label`` names the condition (default: the regime); the λ sweep uses labels such as
    ``"log@1e-04"`` (:func:`sweep_label`).
    """

    optimizer: str
    regime: str
    lam: float
    seed: int
    epochs: int
    label: str = ""


def phase2_task(task: DarcyTask, start: dict[str, np.ndarray], spec: Phase2Task, *,
                progress: bool = False) -> dict[str, np.ndarray]:
    """Run one :class:`Phase2Task`; its per-epoch history (one key per quantity)."""
    setup_task = replace(task, setup=replace(task.setup, lam=spec.lam))
    _, history = run_phase2(setup_task, start, regime=spec.regime, seed=spec.seed,
                            optimizer=spec.optimizer, epochs=spec.epochs, progress=progress)
    return history


def combine(specs: list[Phase2Task], parts: list[dict[str, np.ndarray]], *,
            by_lam: bool = False) -> dict[str, np.ndarray]:
    """Stack the histories of the Phase-2 tasks ``specs`` (``parts[i]`` from ``specs[i]``)
    with the grid axes first (module docstring): (regularizer, seed, epoch), or with
    ``by_lam`` (lambda, regularizer, seed, epoch); coordinates in order of first appearance.
    ``ValueError`` when two tasks share a grid cell."""
    if len(specs) != len(parts):
        raise ValueError(f"parts must hold one history per task, got {len(parts)} for "
                         f"{len(specs)} tasks")
    axes = {"lams": [s.lam for s in specs]} if by_lam else {}
    axes.update(regularizers=[s.regime for s in specs], seeds=[s.seed for s in specs])
    coordinates = {name: list(dict.fromkeys(values)) for name, values in axes.items()}
    cells = [tuple(coordinates[name].index(values[i]) for name, values in axes.items())
             for i in range(len(specs))]
    try:
        out = stack_tasks(parts, shape=[len(c) for c in coordinates.values()], indices=cells)
    except ValueError as exc:
        raise ValueError(f"Phase-2 tasks must fill distinct grid cells: {exc}") from exc
    return {**{name: np.asarray(values) for name, values in coordinates.items()}, **out}


def phase2_tasks(optimizer: str, lam: float, seeds: tuple[int, ...], epochs: int
                 ) -> list[Phase2Task]:
    """The grid regime x seed of one stored Phase-2 run."""
    return [Phase2Task(optimizer, regime, 0.0 if regime == "none" else lam, seed, epochs)
            for regime in REGIMES for seed in seeds]


def phase2_history(task: DarcyTask, start: dict[str, np.ndarray], *, optimizer: str,
                   seeds: tuple[int, ...], epochs: int, progress: bool = False
                   ) -> dict[str, np.ndarray]:
    """Run Phase 2 for every regime and seed, stacked by :func:`combine`."""
    specs = phase2_tasks(optimizer, task.setup.lam, seeds, epochs)
    parts = [phase2_task(task, start, spec, progress=progress) for spec in specs]
    return combine(specs, parts)


def phase2_grid(name: str, *, full: bool,
                run_task: Callable[[Phase2Task], dict[str, np.ndarray]]) -> TaskGrid:
    """The stored Phase-2 configuration ``name`` (its settings :data:`PHASE2` ``[name]``) as a
    task grid, each task run by ``run_task(spec)``; ``full=False``: the first seed,
    ``phase2_prefix`` epochs (the replayed prefix)."""
    settings = PHASE2[name]
    seeds = settings.seeds if full else settings.seeds[:1]
    epochs = settings.epochs if full else settings.phase2_prefix
    specs = phase2_tasks(settings.optimizer, settings.lam, seeds, epochs)
    return TaskGrid([(spec,) for spec in specs], run_task, partial(combine, specs))


def phase2_run(name: str, task: DarcyTask, start: dict[str, np.ndarray], *,
               full: bool, progress: bool = False) -> dict[str, np.ndarray]:
    """Run the stored Phase-2 configuration ``name`` (:func:`phase2_grid`) on ``task`` from
    the weights ``start``, serially."""
    return run_grid(phase2_grid(name, full=full, run_task=partial(phase2_task, task, start)),
                    progress=progress)


def sweep_label(regime: str, lam: float) -> str:
    """History label of a sweep condition, e.g. ``"log@1e-04"``."""
    return f"{regime}@{lam:.0e}"


def sweep_tasks(lams: tuple[float, ...], seeds: tuple[int, ...], epochs: int, *,
                optimizer: str = "adam") -> list[Phase2Task]:
    """The grid lambda x form x seed of the sweep."""
    return [Phase2Task(optimizer, regime, lam, seed, epochs, label=sweep_label(regime, lam))
            for lam in lams for regime in ("log", "power") for seed in seeds]


def _phase1_experiment(setup: DarcySetup, epochs: int, full: bool, progress: bool
                       ) -> dict[str, np.ndarray]:
    return phase1_history(make_task(setup, progress=progress),
                          epochs=epochs if full else setup.phase1_prefix, progress=progress)


def _phase2_experiment(setup: DarcySetup, start: dict[str, np.ndarray], optimizer: str,
                       seeds: tuple[int, ...], full: bool, progress: bool) -> dict[str, np.ndarray]:
    """Phase 2 of every regime and seed (:func:`phase2_history`), each task kept as a finished
    step of the run (``_tasks.checkpoint``): a rerun after an interruption runs only the
    tasks that had not finished (the data are generated only if one is left)."""
    data = lru_cache(maxsize=1)(lambda: make_task(setup))
    seeds = seeds if full else seeds[:1]
    epochs = setup.phase2_epochs if full else setup.phase2_prefix
    specs = phase2_tasks(optimizer, setup.lam, seeds, epochs)
    parts = [checkpoint(("phase 2", setup, full, spec),      # computed here, in the loop
                        lambda: phase2_task(data(), start, spec, progress=progress))
             for spec in specs]
    return combine(specs, parts)


@register(PHASE1_NAME, settings=PHASE1)
def phase1(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Darcy 32x32, Phase 1: Adam on all ViT parameters (history and final weights)."""
    return _phase1_experiment(PHASE1, PHASE1.epochs, full, progress)


def _stored_start() -> dict[str, np.ndarray]:
    return phase1_weights(load(PHASE1_NAME))


@lru_cache(maxsize=1)
def _book_inputs() -> tuple[DarcyTask, dict[str, np.ndarray]]:
    """The book-scale data and the stored Phase-1 weights, built once per process."""
    return make_task(BOOK), _stored_start()


def book_phase2_task(spec: Phase2Task) -> dict[str, np.ndarray]:
    """One Phase-2 task at book scale from the stored Phase-1 weights (:func:`phase2_task`)."""
    return phase2_task(*_book_inputs(), spec)


@register_grid("darcy_phase2_adam", settings=PHASE2["darcy_phase2_adam"])
def phase2_adam(full: bool = True) -> TaskGrid:
    """Darcy 32x32, Phase 2 with Adam: only W_Q, W_K; none/log/power; three seeds."""
    return phase2_grid("darcy_phase2_adam", full=full, run_task=book_phase2_task)


@register_grid("darcy_phase2_sgd", settings=PHASE2["darcy_phase2_sgd"])
def phase2_sgd(full: bool = True) -> TaskGrid:
    """Darcy 32x32, Phase 2 with plain SGD: only W_Q, W_K; none/log/power; three seeds."""
    return phase2_grid("darcy_phase2_sgd", full=full, run_task=book_phase2_task)


@register_grid("darcy_phase2_noisy", settings=PHASE2["darcy_phase2_noisy"])
def phase2_noisy(full: bool = True) -> TaskGrid:
    """Darcy 32x32, Phase 2 with SGD plus Gaussian noise (Langevin): none/log/power; 3 seeds."""
    return phase2_grid("darcy_phase2_noisy", full=full, run_task=book_phase2_task)


@register_grid("darcy_phase2_noisy_strong", settings=PHASE2["darcy_phase2_noisy_strong"])
def phase2_noisy_strong(full: bool = True) -> TaskGrid:
    """Darcy 32x32, Phase 2 with noisy SGD and a strong lambda = 1e-3; three seeds."""
    return phase2_grid("darcy_phase2_noisy_strong", full=full, run_task=book_phase2_task)


@register_grid("darcy_phase2_lambda_sweep", settings=SWEEP)
def phase2_lambda_sweep(full: bool = True) -> TaskGrid:
    """Darcy 32x32, Phase 2 with Adam, log and power at lambda = 1e-4, 1e-3, 1e-2; 3 seeds.

    ``full=False`` (the replayed prefix) runs one epoch of the first seed at the first lambda.
    """
    seeds = SWEEP.seeds if full else SWEEP.seeds[:1]
    epochs = SWEEP.epochs if full else SWEEP.phase2_prefix
    lams = SWEEP.lams if full else SWEEP.lams[:1]
    specs = sweep_tasks(lams, seeds, epochs, optimizer=SWEEP.optimizer)
    return TaskGrid([(spec,) for spec in specs], book_phase2_task,
                    partial(combine, specs, by_lam=True))


@register("darcy_large", settings=LARGE)
def large(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Darcy 64x64, 1000 samples, width 64: Phase 1 then Phase 2 with Adam (long; not stored).

    Keys: the Phase-2 keys (module docstring), the Phase-1 curves as ``phase1_<quantity>`` and
    the Phase-1 weights. Run from the command line, Phase 1 and each Phase-2 task are kept as
    they finish (``_tasks.checkpoint``), so an interrupted run resumes after them.
    """
    setup = LARGE if full else replace(LARGE, n_train=40, n_test=10)
    phase1_run = checkpoint(("phase 1", setup, full), lambda: _phase1_experiment(
        setup, setup.phase1_epochs, full, progress))
    start = phase1_weights(phase1_run)
    out = {f"phase1_{key}": value for key, value in phase1_curves(phase1_run).items()}
    out.update({WEIGHT_PREFIX + key: value for key, value in start.items()})
    out.update(_phase2_experiment(setup, start, "adam", setup.seeds, full, progress))
    return out


def seed_series(stored: dict[str, np.ndarray], regime: str, quantity: str) -> np.ndarray:
    """``quantity`` of every stored seed of one condition: shape ``(seeds, epochs + 1)``.

    ``regime`` is a regularizer of a Phase-2 run (``"log"``) or, in the lambda sweep, a label
    of :func:`sweep_label` (``"log@1e-04"``).
    """
    regimes = [str(r) for r in stored["regularizers"]]
    if "lams" in stored:
        cells = {sweep_label(r, float(lam)): (i, j) for i, lam in enumerate(stored["lams"])
                 for j, r in enumerate(regimes)}
    else:
        cells = {r: (j,) for j, r in enumerate(regimes)}
    if regime not in cells or quantity not in stored:
        raise KeyError(f"stored run has no {quantity!r} for regime {regime!r} (conditions: "
                       f"{sorted(cells)})")
    return stored[quantity][cells[regime]]


def log_slope(values: np.ndarray, *, last: int) -> float:
    """Least-squares slope of ``log(values)`` per epoch over the last ``last`` epochs.

    A norm growing without bound at a steady rate has a positive slope that does not decay;
    a contained norm has a slope near 0 (or negative while it shrinks).
    """
    values = np.asarray(values, dtype=float)
    epochs = np.arange(values.shape[-1])[-last:]
    return float(np.polyfit(epochs, np.log(values[-last:]), 1)[0])


def summarize_phase2(stored: dict[str, np.ndarray], *, last: int = 20,
                     labels: tuple[str, ...] = REGIMES, epochs: int | None = None
                     ) -> dict[str, dict[str, float]]:
    """Per condition, the mean over seeds of the Phase-2 measurements the chapter reports.

    ``labels`` are the conditions (the regimes, or sweep labels such as ``"log@1e-04"``);
    ``epochs`` truncates every history to its first ``epochs`` epochs (to compare runs of
    different lengths). Keys: ``rmse``, ``rel_l2`` (final test errors, physical units),
    ``norm_WQ0``, ``norm_WK0``, ``norm_WQ``, ``norm_WK`` (start and end), ``slope_WQ``,
    ``slope_WK`` (:func:`log_slope` over the last ``last`` epochs), ``gap0`` and ``gap``
    (test minus train data loss at the start and averaged over the last ``last`` epochs),
    ``test_loss`` and ``train_loss`` (averaged over the last ``last`` epochs), ``gap_slope``
    (least-squares slope per epoch of the seed-mean gap over the second half) and
    ``growth_WQ``, ``growth_WK`` (end minus start norm). Each has a ``*_sem`` companion, the
    standard error over seeds (standard deviation / sqrt(seeds); 0 for one seed).
    """
    summary: dict[str, dict[str, float]] = {}
    cut = slice(None) if epochs is None else slice(0, epochs + 1)
    for label in labels:
        def series(quantity: str) -> np.ndarray:
            return seed_series(stored, label, quantity)[:, cut]

        wq, wk = series("norm_WQ"), series("norm_WK")
        train, test = series("train_loss"), series("test_loss")
        gap = test - train
        half = gap.shape[1] // 2
        per_seed = {
            "rmse": series("test_rmse")[:, -1], "rel_l2": series("test_rel_l2")[:, -1],
            "norm_WQ0": wq[:, 0], "norm_WK0": wk[:, 0], "norm_WQ": wq[:, -1],
            "norm_WK": wk[:, -1], "growth_WQ": wq[:, -1] - wq[:, 0],
            "growth_WK": wk[:, -1] - wk[:, 0],
            "slope_WQ": np.array([log_slope(row, last=last) for row in wq]),
            "slope_WK": np.array([log_slope(row, last=last) for row in wk]),
            "gap0": gap[:, 0], "gap": gap[:, -last:].mean(axis=1),
            "test_loss": test[:, -last:].mean(axis=1),
            "train_loss": train[:, -last:].mean(axis=1),
            "gap_slope": np.array([np.polyfit(np.arange(half, gap.shape[1]), row[half:], 1)[0]
                                   for row in gap]),
        }
        seeds = wq.shape[0]
        entry: dict[str, float] = {}
        for key, values in per_seed.items():
            entry[key] = float(values.mean())
            entry[f"{key}_sem"] = float(values.std(ddof=1) / np.sqrt(seeds)) if seeds > 1 else 0.0
        summary[label] = entry
    return summary


def gibbs_mode_norm(regularizer: Regularizer, *, temperature: float, entries: int) -> float:
    """Most likely ``||W||_F`` of one block under ``exp(-2 R(W) / s)`` (the flat-orbit picture).

    Along an orbit where the data loss is constant the Gibbs density ``exp(-2 f / s)`` of a block
    with ``m = entries`` coordinates is, in ``t = ||W||_F^2``, proportional to
    ``t^(m/2 - 1) exp(-2 lambda g(t) / s)``; its mode solves
    ``t g'(t) = s (m/2 - 1) / (2 lambda)`` (``s`` the temperature). Returns ``sqrt(t)``.
    """
    from scipy.optimize import brentq

    if not regularizer.active:
        raise ValueError("regularizer must be active (lam > 0): without it there is no mode")
    if temperature <= 0 or entries < 3:
        raise ValueError("temperature must be > 0 and entries >= 3")
    target = temperature * (entries / 2 - 1) / (2 * regularizer.lam)
    equation = lambda t: t * float(regularizer.dg(t)) - target  # noqa: E731
    high = 1.0
    while equation(high) < 0:
        high *= 2.0
    return float(np.sqrt(brentq(equation, 0.0, high, xtol=1e-12, rtol=1e-12)))


def orbit_min_norm(w_q: np.ndarray, w_k: np.ndarray) -> float:
    """Smallest balanced norm on the orbit ``(W_Q G, W_K G^{-T})``: ``sqrt(||W_Q W_K^T||_*)``.

    ``min_G (||W_Q G||_F^2 + ||W_K G^{-T}||_F^2) = 2 ||W_Q W_K^T||_*`` (nuclear norm; reached by
    the balanced SVD factorisation when ``W_Q, W_K`` have full column rank), so a regularizer can
    shrink both norms down to this value without changing the model's function.
    """
    w_q = np.asarray(w_q, dtype=float)
    w_k = np.asarray(w_k, dtype=float)
    return float(np.sqrt(np.linalg.svd(w_q @ w_k.T, compute_uv=False).sum()))
