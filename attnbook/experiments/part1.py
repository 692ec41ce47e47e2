"""Registered experiments of Part I (paper 1): stored runs replayed by chapters 4-6.

``paper1_defaults``: the design's default problem (d = 10, p = 20, n = 500, kappa = 10,
noise_std = 0.1) and the five methods of :data:`attnlib.algorithm.METHODS` (Algorithm 1;
random init + preconditioner + regularizer; plain GD; minibatch SGD; Adam), 2000 iterations
each, for three seeds. Seed s draws, from ``default_rng(s)``, the problem (Sigma, then M),
the n training samples and ``SETTINGS.n_test`` test samples, in that order; every random-init
method starts from the same draw of ``default_rng(100 + s)`` (A then B), and SGD then draws its
minibatches from the same generator. Every setting is a field of :data:`SETTINGS` (a frozen
:class:`DefaultsSettings`); the stored ``config`` is written from it.

Stored history (keys; S seeds, the seed axis first, listed in ``seeds`` (S,); G = grid of
recorded iterations, every iteration up to 100 then every 10th; methods along the last axis in
the order of ``config["methods"]``): ``iteration`` (G,), ``test_iteration`` (T,),
``excess_risk``, ``objective``, ``loss``, ``dist_P``, ``dist_P_hat``, ``grad_norm`` (S, G, 5);
``test_risk`` (S, T, 5) (deployed predictor, noise-free targets, every ``SETTINGS.test_every``
iterations); ``step`` (S, 5); ``ols_fit_excess_risk`` (S,) (the OLS fit on the same data) and
``ols_formula`` (``p sigma^2 d / (2 (n - d - 1))``); ``seconds`` (S, 5) wall time (not
reproducible; excluded by :func:`prefix_keys`).

Certified optima (:mod:`attnlib.reference`). ``basin_value`` and ``basin_grad_norm`` (S,): the
minimizer of Q_hat = L_hat + R_hat reached from the spectral start (the local minimum
Algorithm 1 heads to), ``basin_hessian`` (S, p d + d^2) its Hessian spectrum in (U, V)
coordinates; ``dist_ref`` (S, G, 5) the distance of the iterates to it (NaN for the lambda = 0
methods, which train another objective); ``ref_Q_*`` (S, 9) and ``ref_L_*`` (S, 2) the
multi-start table of :func:`reference_table` (one entry per start).
``full=False`` runs seed 0 only, for ``PREFIX_ITERATIONS`` iterations, and recomputes the
basin minimizer (without its Hessian).

The settings of the other Part I experiments (modules ``ablations``, ``optimum``,
``finite_sample``, ``paper1_prompts``) default to these (the default problem's d, p, n, kappa,
noise level and seeds).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np

from attnbook.seeds import stream
from attnlib import algorithm, data, population, reference
from . import load, register
from ._tasks import stack_tasks

#: iterations of the replayed prefix (``full=False``, seed 0 only)
PREFIX_ITERATIONS = 20
CURVES = ("excess_risk", "objective", "loss", "dist_P", "dist_P_hat", "grad_norm")


def reference_tag(method: algorithm.Method) -> str:
    """The objective a method trains, as the tag of its stored certified minima: ``"Q"`` for
    Q_hat = L_hat + R_hat (``lam = 1``, balancing regularizer), ``"L"`` for L_hat alone
    (``lam = 0``). A method's optimization gap is measured against the best minimum of that
    objective; for any other objective no minimum is stored, so this raises ``ValueError``
    instead of letting a gap be measured against the wrong objective."""
    if not isinstance(method, algorithm.Method):
        raise TypeError(f"method must be an attnlib.algorithm.Method, got {type(method).__name__}")
    if method.lam == 1.0 and method.regularizer == "balancing":
        return "Q"
    if method.lam == 0.0:
        return "L"
    raise ValueError(f"method trains lam = {method.lam} with the {method.regularizer!r} "
                     "regularizer: no certified minimum of that objective is stored (only "
                     "lam = 1 with 'balancing', and lam = 0)")


#: Chapter 5's methods by the objective they train (derived from the methods themselves).
LAM1_METHODS = tuple(name for name, m in algorithm.METHODS.items() if reference_tag(m) == "Q")
LAM0_METHODS = tuple(name for name, m in algorithm.METHODS.items() if reference_tag(m) == "L")
#: The lam = 0 methods whose final iterates start L_hat's multi-start search (SGD ends next to GD).
LAM0_REFERENCE_STARTS = ("gd", "adam")


def rotation_sign(i: int) -> int:
    """det O of the i-th start of :func:`reference_starts`: -1 for odd i, +1 for even i."""
    return -1 if i % 2 else 1


def method_options(names: Sequence[str]) -> dict[str, dict[str, object]]:
    """The pieces of each named method of :data:`attnlib.algorithm.METHODS`
    (:meth:`attnlib.algorithm.Method.describe`), as a stored run's ``method_options``."""
    return {name: algorithm.METHODS[name].describe() for name in names}


def _start_labels(rotations: int) -> dict[str, list[str]]:
    return dict(Q=["spectral (basin)"] + [f"S_hat rotation {i} (det {rotation_sign(i):+d})"
                                          for i in range(rotations)]
                + [f"final {name}" for name in LAM1_METHODS],
                L=[f"final {name}" for name in LAM0_REFERENCE_STARTS])


def derive(settings: object, **values: object) -> None:
    """Set the derived (``init=False``) fields of a frozen settings dataclass in its
    ``__post_init__``."""
    for name, value in values.items():
        object.__setattr__(settings, name, value)


@dataclass(frozen=True)
class DefaultsSettings:
    """Every setting of ``paper1_defaults`` (module docstring), each a [choice] of this book;
    the stored ``config`` is ``dataclasses.asdict`` of it. The fields after ``seeding`` are
    derived, not set: ``method_options`` describes the methods of
    :data:`attnlib.algorithm.METHODS` named in ``methods``, ``reference_starts`` names the
    starts of :func:`reference_table` (``reference_rotations`` rotations of S_hat), and
    ``init_scale``, ``batch_size``, ``adam_learning_rate``, ``step_scale`` repeat the random
    starts' scale, SGD's minibatch, Adam's learning rate and the step rule's scale of those
    methods."""

    d: int = 10
    p: int = 20
    n: int = 500
    kappa: float = 10.0
    noise_std: float = 0.1
    seeds: tuple[int, ...] = (0, 1, 2)
    iterations: int = 2000
    n_test: int = 500
    test_every: int = 10
    methods: tuple[str, ...] = tuple(algorithm.METHODS)
    reference_rotations: int = 6
    grid: str = "every iteration up to 100, then every 10th"
    seeding: str = ("problem, train, test from default_rng(s); init and SGD batches from "
                    "default_rng(100 + s)")
    method_options: dict[str, dict[str, object]] = field(init=False)
    reference_starts: dict[str, list[str]] = field(init=False)
    init_scale: float = field(init=False)
    batch_size: int = field(init=False)
    adam_learning_rate: float = field(init=False)
    step_scale: float = field(init=False)

    def __post_init__(self) -> None:
        methods = algorithm.METHODS
        derive(self, method_options=method_options(self.methods),
               reference_starts=_start_labels(self.reference_rotations),
               init_scale=methods["random+precond+reg"].init_scale,
               batch_size=methods["sgd"].batch_size,
               adam_learning_rate=methods["adam"].update.lr,           # type: ignore[attr-defined]
               step_scale=methods["algorithm1"].update.step_scale)     # type: ignore[attr-defined]


#: the settings of the stored run ``paper1_defaults``
SETTINGS = DefaultsSettings()


def recorded_iterations(iterations: int) -> np.ndarray:
    """Iterations at which Part I histories are recorded: every one up to 100, then every 10th."""
    return np.unique(np.concatenate([np.arange(min(iterations, 100) + 1),
                                     np.arange(0, iterations + 1, 10)]))


def prefix_keys(history: Mapping[str, np.ndarray]) -> list[str]:
    """Keys of a Part I history that a replayed prefix must reproduce: all but wall time, the
    JSON ``config`` and the reference's gradient norm (round-off; checked against its
    tolerance when computed)."""
    return [key for key in history if key != "config" and not key.startswith("seconds")
            and not key.startswith("basin_grad_norm")]


#: history keys that are zero up to round-off at the spectral start (it lies on S_hat), with
#: the absolute tolerance a replay compares them to (``experiments.replay(absolute=...)``)
ROUND_OFF = {"dist_P_hat": 1e-12, "imbalance": 1e-12}


def run_defaults_seed(seed: int, *, iterations: int, full: bool = True, progress: bool = False
                      ) -> dict[str, np.ndarray]:
    """One seed of ``paper1_defaults`` (see the module docstring; the settings of
    :data:`SETTINGS` but ``iterations``): its keys without the seed axis."""
    rng = np.random.default_rng(seed)
    problem = data.default_problem(rng=rng, d=SETTINGS.d, p=SETTINGS.p, kappa=SETTINGS.kappa,
                                   noise_std=SETTINGS.noise_std)
    x, y = problem.sample(SETTINGS.n, rng=rng)
    test = problem.sample(SETTINGS.n_test, rng=rng)
    grid = recorded_iterations(iterations)
    loss = algorithm.empirical_loss(x, y)
    basin = reference.reference_minimizer(loss.reference_objective(1.0), loss.manifold.point(),
                                          loss.Sigma_hat, hessian=full)
    out: dict[str, list] = {key: [] for key in CURVES + ("dist_ref", "test_risk", "step",
                                                         "seconds")}
    finals = {}
    for name in SETTINGS.methods:
        method = algorithm.METHODS[name]
        result = algorithm.train(loss, method, iterations=iterations, problem=problem,
                                 reference=basin if method.lam == 1.0 else None,
                                 test=test, test_every=SETTINGS.test_every,
                                 rng=stream("start", seed), progress=progress,
                                 record_at=grid)
        if result.diverged:
            raise RuntimeError(f"seed {seed}, method {name}: training diverged")
        finals[name] = (result.A, result.B)
        for key in CURVES:
            out[key].append(result.history[key])
        out["dist_ref"].append(result.history["dist_ref"] if method.lam == 1.0
                               else np.full(grid.size, np.nan))
        out["test_risk"].append(result.history["test_risk"])
        out["step"].append(result.step)
        out["seconds"].append(result.history["time"][-1])
    sigma_hat, m_hat = population.empirical_moments(x, y)
    history = {key: np.column_stack(values)
               if key in CURVES + ("dist_ref", "test_risk") else np.asarray(values)
               for key, values in out.items()}
    history["ols_fit_excess_risk"] = np.asarray(
        population.linear_excess_risk(m_hat, problem.Sigma, problem.M))
    history["basin_value"] = np.asarray(basin.value)
    history["basin_grad_norm"] = np.asarray(basin.grad_norm)
    if full:
        history["basin_hessian"] = basin.hessian_eigenvalues
        history.update(reference_table(loss, problem, basin, finals, seed))
    return history


def reference_start_labels() -> dict[str, list[str]]:
    """Names of the multi-start search's starts, in the order of :func:`reference_table`:
    ``Q`` (Q_hat = L_hat + R_hat) and ``L`` (L_hat alone) (``SETTINGS.reference_starts``)."""
    return {tag: list(labels) for tag, labels in SETTINGS.reference_starts.items()}


def reference_starts(loss: algorithm.DataLoss, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``SETTINGS.reference_rotations`` points of S_hat at random rotations O
    (``default_rng(200 + s)``), with
    det O = :func:`rotation_sign` (half of them -1): the other starts of the multi-start search
    for Q_hat*."""
    rng = stream("rotations", seed)
    starts = []
    for i in range(SETTINGS.reference_rotations):
        rotation = data.random_rotation(SETTINGS.d, rng=rng)
        if np.sign(np.linalg.det(rotation)) != rotation_sign(i):
            rotation[:, 0] *= -1.0
        starts.append(loss.manifold.point(rotation))
    return starts


def reference_table(loss: algorithm.DataLoss, problem: data.RegressionProblem,
                    basin: reference.ReferenceOptimum, finals: Mapping[str, tuple],
                    seed: int) -> dict[str, np.ndarray]:
    """Multi-start certified minima of both objectives trained in ``paper1_defaults``.

    Q_hat = L_hat + R_hat (lambda = 1; Algorithm 1 and random+precond+reg): starts ``basin``
    (already minimized from the spectral point), :func:`reference_starts`, and the final iterates
    of the two lambda = 1 methods. L_hat alone (lambda = 0; GD, SGD, Adam): the final iterates of
    GD and Adam (L_hat is badly conditioned, Hessian eigenvalues from about 3e-5 to 5, so each
    of these minimizations costs about a minute; SGD ends next to GD). For every start: the value, the gradient norm, the extreme Hessian
    eigenvalues and the excess population risk of the minimizer (keys ``ref_Q_*`` and
    ``ref_L_*``, start order in ``config["reference_starts"]``).
    """
    objectives = {"Q": (loss.reference_objective(1.0),
                        reference_starts(loss, seed) + [finals[name] for name in LAM1_METHODS]),
                  "L": (loss.reference_objective(0.0),
                        [finals[name] for name in LAM0_REFERENCE_STARTS])}
    table: dict[str, np.ndarray] = {}
    for tag, (objective, starts) in objectives.items():
        optima = [basin] if tag == "Q" else []
        optima += [reference.reference_minimizer(objective, start, loss.Sigma_hat)
                   for start in starts]
        table[f"ref_{tag}_value"] = np.array([o.value for o in optima])
        table[f"ref_{tag}_grad_norm"] = np.array([o.grad_norm for o in optima])
        table[f"ref_{tag}_min_eigenvalue"] = np.array([o.smallest_eigenvalue for o in optima])
        table[f"ref_{tag}_max_eigenvalue"] = np.array([o.largest_eigenvalue for o in optima])
        table[f"ref_{tag}_excess_risk"] = np.array([
            population.population_loss(o.A, o.B, problem.Sigma, problem.M) for o in optima])
    return table


@register("paper1_defaults", settings=SETTINGS)
def paper1_defaults(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Part I defaults (d=10, p=20, n=500): Algorithm 1 vs random+precond+reg, GD, SGD, Adam."""
    run = SETTINGS if full else replace(SETTINGS, seeds=SETTINGS.seeds[:1],
                                        iterations=PREFIX_ITERATIONS)
    history: dict[str, np.ndarray] = {
        "iteration": recorded_iterations(run.iterations),
        "test_iteration": np.unique(np.r_[np.arange(0, run.iterations + 1, run.test_every),
                                          run.iterations]),
        "ols_formula": np.asarray(population.ols_excess_risk(run.n, run.d, run.p,
                                                             run.noise_std)),
        "seeds": np.asarray(run.seeds),
    }
    history.update(stack_tasks([run_defaults_seed(seed, iterations=run.iterations, full=full,
                                                  progress=progress) for seed in run.seeds]))
    return history


@dataclass(frozen=True)
class LowestMinimaSettings:
    """Every setting of ``paper1_lowest_minima``: the stored runs it reads and what counts."""

    objective: str = "Q_hat = L_hat + R_hat, lambda = 1, n = 500, each seed of paper1_defaults"
    sources: tuple[str, ...] = ("paper1_defaults", "bridge_side_by_side")
    certified: str = "gradient norm <= 1e-8, positive definite Hessian (reference.py)"


#: the settings of the stored run ``paper1_lowest_minima``
LOWEST_MINIMA = LowestMinimaSettings()


@register("paper1_lowest_minima", settings=LOWEST_MINIMA)
def paper1_lowest_minima(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """The lowest certified local minimum of Q_hat known for each seed of paper1_defaults.

    Among the certified local minima of the stored runs it names (``sources``): the
    multi-start table of ``paper1_defaults`` (chapter 5) and, for its seed, the minima reached
    from the final iterates of ``bridge_side_by_side`` (chapter 12). ``full`` and ``progress``
    change nothing (it only reads stored runs). The objective is nonconvex: the best local
    minimum found, not a certified global one.
    """
    defaults, bridge = (load(name) for name in LOWEST_MINIMA.sources)
    bridge_config = json.loads(str(bridge["config"]))
    bridge_seed, bridge_methods = int(bridge_config["seed"]), list(bridge_config["methods"])
    seeds = [int(s) for s in defaults["seeds"]]
    value, excess_risk, source = [], [], []
    for i, seed in enumerate(seeds):
        values = defaults["ref_Q_value"][i]
        best = int(np.argmin(values))
        row = (float(values[best]), float(defaults["ref_Q_excess_risk"][i, best]),
               "chapter 5's multi-start search: " + reference_start_labels()["Q"][best])
        if seed == bridge_seed:
            ends = bridge["end_min_value"]
            k = np.unravel_index(np.nanargmin(ends), ends.shape)
            if ends[k] < row[0]:
                row = (float(ends[k]), float(bridge["end_min_excess_risk"][k]),
                       f"chapter 12: from the final iterate of {bridge_methods[k[0]]} "
                       f"(chain {k[1]})")
        value.append(row[0])
        excess_risk.append(row[1])
        source.append(row[2])
    return {"seeds": np.asarray(seeds), "value": np.asarray(value),
            "excess_risk": np.asarray(excess_risk), "source": np.asarray(source)}


def lowest_known_minima() -> dict[int, dict[str, object]]:
    """The stored run ``paper1_lowest_minima`` as ``{seed: {"value", "excess_risk",
    "source"}}``: one table for chapters 5, 6 and 12."""
    stored = load("paper1_lowest_minima")
    return {int(seed): dict(value=float(value), excess_risk=float(risk), source=str(source))
            for seed, value, risk, source in zip(stored["seeds"], stored["value"],
                                                 stored["excess_risk"], stored["source"])}
