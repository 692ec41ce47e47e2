"""Stored runs of chapter 12: Part I's problem trained by Algorithm 1, GD and Langevin.

Every run is a grid of independent seeded tasks (``*_tasks`` lists them, ``*_task`` runs one and
returns its slice of the history, ``assemble_*`` stacks them), run here with a plain loop; the
prefix replayed by the chapter is a short version of the first tasks.

The problem is seed 0's default problem of ``paper1_defaults``
(:func:`attnbook.experiments.ablations.defaults_data`: p = 20, d = 10, kappa = 10, sigma = 0.1,
n = 500 samples), the objective Q_hat = L_hat + R_hat with lambda = 1 (Algorithm 1's), and for
the Langevin chains the potential ``f = Q_hat + R_mild(A) + R_mild(B)`` with the log-amplified
regularizer of Part II at ``mild.lam`` (:class:`attnlib.bridge.Potential`) [choice]. The
temperature unit is the statistical floor: ``s_0 = 4 floor / D`` with ``floor`` the exact OLS
excess risk ``p sigma^2 d / (2 (n - d - 1))`` and D = p d + d^2 = 300, so the Gibbs-mean offset
``s_0 D / 4`` of the quadratic (Laplace) model equals the floor [choice]. Every step size is
chapter 4's rule (:func:`attnlib.algorithm.default_step`, c = 0.5) for the method's start and
preconditioning; a Langevin chain uses the step of its noise-free twin. Random starts are the
draw of ``default_rng(100 + seed)`` (as in ``paper1_defaults``); chain c's noise comes from
``default_rng([seed_base, method index, c])``.

Every setting of a run is a field of its frozen settings dataclass (:data:`SIDE_BY_SIDE`,
:data:`KAPPA`, :data:`FLOORS`; ``experiments.settings(NAME)``), read by the code from there; the
stored ``config`` is ``dataclasses.asdict`` of it plus ``full``. The prefix (``full=False``)
runs ``PREFIX`` iterations.

``bridge_side_by_side`` (n = 500): the methods of ``SIDE_BY_SIDE.methods`` for
``SIDE_BY_SIDE.iterations`` iterations; ``SIDE_BY_SIDE.chains`` chains for the Langevin ones.
Keys (K methods, C chains, G records every ``SIDE_BY_SIDE.every`` iterations; NaN for the
chains a deterministic method does not have):
``objective`` (K, C, G) (Q_hat, without R_mild), ``excess_risk`` (K, C, G), ``seconds`` (K, C)
(wall time, not reproducible), and per final iterate (full run only): ``end_dist_P_hat``,
``end_det`` and ``end_rotation`` (det O and ``||O - I||_F`` of the rotation of its projection
on S_hat, relative to the spectral point), ``end_min_value`` and ``end_min_excess_risk`` (the
certified minimum of Q_hat reached from it by :func:`attnlib.reference.reference_minimizer`: the
basin it ends in; ``end_min_min_eigenvalue`` its smallest Hessian eigenvalue). The reference
task adds ``ref_value``, ``ref_excess_risk``, ``ref_grad_norm``, ``ref_min_eigenvalue``,
``ref_max_eigenvalue`` for the minima reached from the spectral point and from the six points
of S_hat of :func:`attnbook.experiments.part1.reference_starts`, and ``mild_shift`` (Q_hat at
the minimizer of f minus Q_hat at the basin minimizer).

``bridge_kappa`` (n = ``KAPPA.n`` [choice: a smaller sample keeps the sweep in budget]): for
kappa in ``KAPPA.kappas`` (X* held fixed, :func:`attnbook.experiments.ablations.defaults_data`),
plain and preconditioned gradient descent on Q_hat and Langevin (``KAPPA.chains`` chains) at
``s_0(n)``, all from the random start, ``KAPPA.iterations`` iterations; the last method is
preconditioned Langevin with the mild term on (U, V) instead of (A, B). Keys: ``objective``
(kappas, methods, chains, G), ``diverged`` (kappas, methods, chains; 1 when the chain blew up,
its objective is then NaN) and ``basin_value`` (kappas,), the certified minimum reached from
the spectral start.

``bridge_floors``: for n in ``FLOORS.n_values`` and s in ``FLOORS.temperatures``, preconditioned
Langevin chains started at the certified minimizer of Q_hat reached from the spectral start. Keys:
``objective``, ``excess_risk`` (n, s, chains, G), ``basin_value``, ``basin_excess_risk`` (n,),
``hessian`` (n, D) (the spectrum at the minimizer, (U, V) coordinates), ``step`` (n,).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from functools import partial
from typing import Mapping, Sequence

import numpy as np

from attnbook.seeds import stream
from attnlib import algorithm, bridge, langevin, population, reference
from attnlib.regularizers import make_regularizer
from . import TaskGrid, register_grid
from .ablations import defaults_data
from .part1 import reference_starts

__all__ = ["SIDE_BY_SIDE", "KAPPA", "FLOORS", "SideSettings", "KappaSettings", "FloorSettings",
           "MethodSpec", "Mild", "Anneal", "side_tasks", "side_task", "assemble_side",
           "kappa_tasks", "kappa_task", "assemble_kappa", "floor_tasks", "floor_task",
           "assemble_floors", "base_temperature", "anneal_schedule", "run_method",
           "replayed_trajectories"]


@dataclass(frozen=True)
class Mild:
    """The mild Part II regularizer ``R_mild`` on the weights of the Langevin chains."""

    form: str = "log"
    lam: float = 1e-6


@dataclass(frozen=True)
class MethodSpec:
    """How a method of ``bridge_side_by_side`` runs: its start (``"spectral"`` or
    ``"random"``), whether it is preconditioned, and its noise (None: gradient descent;
    ``"fixed"``: Langevin at s_0; ``"annealed"``: Langevin on :func:`anneal_schedule`)."""

    start: str
    precondition: bool
    noise: str | None


@dataclass(frozen=True)
class Anneal:
    """The annealing schedule: ``stages`` equal stages, temperatures geometric from s_0 to
    ``factor * s_0``."""

    stages: int = 8
    factor: float = 1e-2


@dataclass(frozen=True)
class SideSettings:
    """Every setting of ``bridge_side_by_side`` (module docstring), each a [choice] of this
    book; the stored ``config`` is ``dataclasses.asdict`` of it plus ``full``. The strings
    describe what the code does (they are not read)."""

    seed: int                      # the problem of paper1_defaults' seed
    n: int                         # samples
    lam: float                     # lambda of the balancing regularizer in Q_hat (Algorithm 1)
    mild: Mild
    methods: dict[str, MethodSpec]
    iterations: int
    every: int                     # iterations between two records
    chains: int                    # chains per Langevin method
    anneal: Anneal
    seed_base: int                 # chain c of method k draws from default_rng([seed_base, k, c])
    temperature: str
    step: str
    reference_starts: tuple[str, ...]


@dataclass(frozen=True)
class KappaSettings:
    """Every setting of ``bridge_kappa`` (module docstring); ``methods`` are methods of
    ``bridge_side_by_side`` (:data:`SIDE_BY_SIDE`), the suffix ``" (mild on U, V)"`` moving
    the mild term to (U, V)."""

    seed: int
    n: int
    lam: float
    kappas: tuple[float, ...]
    methods: tuple[str, ...]
    iterations: int
    every: int
    chains: int
    mild: Mild
    seed_base: int                 # default_rng([seed_base, 100 + kappa index, method, chain])
    start: str
    temperature: str
    problem: str


@dataclass(frozen=True)
class FloorSettings:
    """Every setting of ``bridge_floors`` (module docstring)."""

    seed: int
    n_values: tuple[int, ...]
    lam: float
    temperatures: tuple[float, ...]
    iterations: int
    every: int
    chains: int
    mild: Mild
    seed_base: int                 # default_rng([seed_base, 200, n, temperature index])
    start: str
    method: str


#: the settings of ``bridge_side_by_side``
SIDE_BY_SIDE = SideSettings(
    seed=0, n=500, lam=1.0, mild=Mild(),
    methods={"algorithm1": MethodSpec("spectral", True, None),
             "random+precond+reg": MethodSpec("random", True, None),
             "gd (lambda = 1)": MethodSpec("random", False, None),
             "langevin": MethodSpec("random", False, "fixed"),
             "precond langevin": MethodSpec("random", True, "fixed"),
             "precond langevin (spectral)": MethodSpec("spectral", True, "fixed"),
             "annealed (spectral)": MethodSpec("spectral", True, "annealed"),
             "annealed (random)": MethodSpec("random", True, "annealed")},
    iterations=4000, every=10, chains=4, anneal=Anneal(), seed_base=14,
    temperature="s_0 = 4 p sigma^2 d / (2 (n - d - 1)) / (p d + d^2)",
    step="algorithm.default_step at the start, c = 0.5",
    reference_starts=("spectral",) + tuple(f"S_hat rotation {i}" for i in range(6)))
#: the settings of ``bridge_kappa`` [choice: n = 100, a smaller sample keeps the sweep in budget]
KAPPA = KappaSettings(
    seed=SIDE_BY_SIDE.seed, n=100, lam=SIDE_BY_SIDE.lam, kappas=(1.0, 10.0, 100.0, 1000.0),
    methods=("gd (lambda = 1)", "random+precond+reg", "langevin", "precond langevin",
             "precond langevin (mild on U, V)"),
    iterations=3000, every=SIDE_BY_SIDE.every, chains=SIDE_BY_SIDE.chains,
    mild=SIDE_BY_SIDE.mild, seed_base=SIDE_BY_SIDE.seed_base,
    start="random (default_rng(100 + seed))", temperature="s_0(n)",
    problem="X* fixed, Sigma eigenvalues geomspace(1, 1/kappa, d)")
#: the settings of ``bridge_floors``
FLOORS = FloorSettings(
    seed=SIDE_BY_SIDE.seed, n_values=(125, 250, 500), lam=SIDE_BY_SIDE.lam,
    temperatures=(1e-6, 1e-5, 1e-4), iterations=3000, every=SIDE_BY_SIDE.every,
    chains=SIDE_BY_SIDE.chains, mild=SIDE_BY_SIDE.mild, seed_base=SIDE_BY_SIDE.seed_base,
    start="certified minimizer from the spectral start",
    method="preconditioned Langevin, Algorithm 1's step at the spectral point")
#: iterations of every replayed prefix (``full=False``)
PREFIX = 20


def base_temperature(n: int, p: int, d: int, noise_std: float) -> float:
    """``s_0 = 4 floor / D``: the temperature whose Laplace Gibbs offset ``s D / 4`` equals the
    OLS excess risk ``floor = p sigma^2 d / (2 (n - d - 1))`` (D = p d + d^2)."""
    return 4.0 * population.ols_excess_risk(n, d, p, noise_std) / (p * d + d * d)


def anneal_schedule(s0: float, iterations: int, anneal: Anneal) -> list[tuple[float, int]]:
    """``anneal.stages`` stages of equal length, temperatures geometric from s_0 to
    ``anneal.factor * s_0``: a list of (temperature, iterations); the last stage takes the
    rest."""
    length = max(1, iterations // anneal.stages)
    stages, left = [], iterations
    for j, s in enumerate(s0 * np.geomspace(1.0, anneal.factor, anneal.stages)):
        count = left if j == anneal.stages - 1 else min(length, left)
        if count > 0:
            stages.append((float(s), count))
        left -= count
    return stages


def _setup(settings: SideSettings | KappaSettings | FloorSettings, n: int,
           kappa: float | None = None, coordinates: str = "weights"):
    problem, (x, y), _ = defaults_data(settings.seed, kappa=kappa, n=n)
    data = algorithm.empirical_loss(x, y)
    potential = bridge.Potential(data, lam=settings.lam,
                                 mild=make_regularizer(settings.mild.form, settings.mild.lam),
                                 coordinates=coordinates)
    return problem, data, potential


def _start(data: algorithm.DataLoss, start: str, seed: int) -> tuple[np.ndarray, np.ndarray]:
    if start == "spectral":
        return data.manifold.point()
    p, d = data.M_hat.shape
    return algorithm.random_init(d, p, rng=stream("start", seed))


def run_method(potential: bridge.Potential, start: tuple[np.ndarray, np.ndarray], *,
               precondition: bool, schedule: Sequence[tuple[float, int]] | None,
               iterations: int, every: int, rng: np.random.Generator
               ) -> tuple[np.ndarray, np.ndarray]:
    """One trajectory from ``start``: gradient descent on Q_hat (``schedule`` None; via
    :func:`attnlib.algorithm.train`) or Langevin on f with the piecewise-constant temperatures
    of ``schedule`` (a list of (s, iterations) stages; :func:`attnlib.langevin.euler_maruyama`,
    preconditioned with :func:`attnlib.bridge.preconditioner_matrix` if asked). The step is
    :func:`attnlib.algorithm.default_step` at the start in both cases. Returns the flat states
    every ``every`` iterations (G, D) and Q_hat there (G,)."""
    data = potential.data
    a0, b0 = start
    if schedule is None:
        method = algorithm.Method(init="random", lam=potential.lam, precondition=precondition)
        states = []

        def keep(k: int, a: np.ndarray, b: np.ndarray) -> None:
            if k % every == 0:
                states.append(bridge.flatten(a, b))

        result = algorithm.train(data, method, iterations=iterations, init=(a0, b0),
                                 callback=keep)
        if result.diverged:
            raise RuntimeError("gradient descent diverged")
        return np.asarray(states), result.history["objective"][::every]
    step = algorithm.default_step(a0, b0, data.Sigma_hat, data.M_hat, lam=potential.lam,
                                  precondition=precondition)
    matrix = bridge.preconditioner_matrix(data.Sigma_hat, potential.p) if precondition else None
    theta = bridge.flatten(a0, b0)[None, :]
    states, values = [], []
    for j, (s, count) in enumerate(schedule):
        run = langevin.euler_maruyama(potential, theta, step=step, temperature=s,
                                      n_steps=count, rng=rng, record_every=every,
                                      record_states=True, preconditioner=matrix)
        first = 0 if j == 0 else 1                 # a stage starts where the last one ended
        states.append(run.states[first:, 0])
        values.append(run.loss[first:, 0] - potential.mild_value(run.states[first:, 0]))
        theta = run.theta
    return np.concatenate(states), np.concatenate(values)


def _schedule(noise: str | None, s0: float, iterations: int
              ) -> list[tuple[float, int]] | None:
    if noise is None:
        return None
    return ([(s0, iterations)] if noise == "fixed"
            else anneal_schedule(s0, iterations, SIDE_BY_SIDE.anneal))


# ----------------------------------------------------------------------------------------
# Side by side at n = 500.
# ----------------------------------------------------------------------------------------

def side_tasks(full: bool = True) -> list[tuple[str, int, int]]:
    """(method, chain, iterations) cells of ``bridge_side_by_side`` plus ("reference", 0, 0);
    the prefix is Algorithm 1 and chain 0 of preconditioned Langevin, ``PREFIX`` iterations."""
    if not full:
        return [("algorithm1", 0, PREFIX), ("precond langevin", 0, PREFIX)]
    tasks = [(name, c, SIDE_BY_SIDE.iterations) for name, spec in SIDE_BY_SIDE.methods.items()
             for c in range(SIDE_BY_SIDE.chains if spec.noise else 1)]
    return tasks + [("reference", 0, 0)]


def _orbit(data: algorithm.DataLoss, problem, a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Where (a, b) sits: dist_P to S_hat, det and ||O - I||_F of its projection's rotation,
    and the certified minimum of Q_hat reached from it (value, excess risk, smallest Hessian
    eigenvalue)."""
    _, _, rotation = data.manifold.project(a, b)
    minimum = reference.reference_minimizer(data.reference_objective(SIDE_BY_SIDE.lam), (a, b),
                                            data.Sigma_hat)
    return dict(end_dist_P_hat=data.manifold.distance(a, b),
                end_min_min_eigenvalue=minimum.smallest_eigenvalue,
                end_det=float(np.linalg.det(rotation)),
                end_rotation=float(np.linalg.norm(rotation - np.eye(rotation.shape[0]))),
                end_min_value=minimum.value,
                end_min_excess_risk=population.population_loss(minimum.A, minimum.B,
                                                               problem.Sigma, problem.M))


def _references(problem, data: algorithm.DataLoss, potential: bridge.Potential
                ) -> dict[str, np.ndarray]:
    starts = [data.manifold.point()] + reference_starts(data, SIDE_BY_SIDE.seed)
    if len(starts) != len(SIDE_BY_SIDE.reference_starts):
        raise ValueError(f"SIDE_BY_SIDE.reference_starts must name the {len(starts)} starts")
    objective = data.reference_objective(SIDE_BY_SIDE.lam)
    optima = [reference.reference_minimizer(objective, start, data.Sigma_hat)
              for start in starts]
    mild = reference.reference_minimizer(potential.reference_objective(), starts[0],
                                         data.Sigma_hat, hessian=False)
    shift = objective(mild.A, mild.B)[0] - optima[0].value
    return dict(ref_value=np.array([o.value for o in optima]),
                ref_excess_risk=np.array([population.population_loss(o.A, o.B, problem.Sigma,
                                                                     problem.M) for o in optima]),
                ref_grad_norm=np.array([o.grad_norm for o in optima]),
                ref_min_eigenvalue=np.array([o.smallest_eigenvalue for o in optima]),
                ref_max_eigenvalue=np.array([o.largest_eigenvalue for o in optima]),
                mild_shift=np.asarray(shift))


def side_task(method: str, chain: int, iterations: int) -> dict[str, np.ndarray]:
    """One cell of ``bridge_side_by_side`` (module docstring)."""
    settings = SIDE_BY_SIDE
    problem, data, potential = _setup(settings, settings.n)
    if method == "reference":
        return _references(problem, data, potential)
    spec = settings.methods[method]
    p, d = data.M_hat.shape
    s0 = base_temperature(data.X.shape[0], p, d, problem.noise_std)
    index = list(settings.methods).index(method)
    clock = time.perf_counter()
    states, values = run_method(potential, _start(data, spec.start, settings.seed),
                                precondition=spec.precondition,
                                schedule=_schedule(spec.noise, s0, iterations),
                                iterations=iterations, every=settings.every,
                                rng=np.random.default_rng([settings.seed_base, index, chain]))
    out = dict(objective=values,
               excess_risk=bridge.excess_risks(states, p, d, problem.Sigma, problem.M),
               seconds=np.asarray(time.perf_counter() - clock))
    if iterations == settings.iterations:
        a, b = bridge.unflatten(states[-1], p, d)
        out.update({key: np.asarray(value) for key, value in
                    _orbit(data, problem, a, b).items()})
    return out


def assemble_side(tasks: Sequence[tuple[str, int, int]],
                  results: Sequence[dict[str, np.ndarray]]
                  ) -> dict[str, np.ndarray]:
    """Stack the cells of ``bridge_side_by_side`` into (methods, chains, ...) arrays."""
    methods = list(SIDE_BY_SIDE.methods)
    history: dict[str, np.ndarray] = {}
    for (method, chain, _), result in zip(tasks, results):
        for key, value in result.items():
            if method == "reference":
                history[key] = value
                continue
            if key not in history:
                history[key] = np.full((len(methods), SIDE_BY_SIDE.chains) + np.shape(value),
                                       np.nan)
            history[key][methods.index(method), chain] = value
    iterations = max(t[2] for t in tasks)
    history["iteration"] = np.arange(0, iterations + 1, SIDE_BY_SIDE.every)
    return history


@register_grid("bridge_side_by_side", settings=SIDE_BY_SIDE)
def bridge_side_by_side(full: bool = True) -> TaskGrid:
    """Algorithm 1, GD and four Langevin variants on Part I's problem (n = 500, seed 0)."""
    tasks = side_tasks(full)
    return TaskGrid(tasks, side_task, partial(assemble_side, tasks))


# ----------------------------------------------------------------------------------------
# Condition number sweep (n = KAPPA.n).
# ----------------------------------------------------------------------------------------

def kappa_tasks(full: bool = True) -> list[tuple[float, str, int, int]]:
    """(kappa, method, chain, iterations) cells of ``bridge_kappa`` plus (kappa, "reference",
    0, 0) per kappa; the prefix is kappa = 1, preconditioned Langevin chain 0, ``PREFIX``
    iterations."""
    if not full:
        return [(KAPPA.kappas[0], "precond langevin", 0, PREFIX)]
    tasks = []
    for kappa in KAPPA.kappas:
        tasks.append((kappa, "reference", 0, 0))
        for name in KAPPA.methods:
            noise = _kappa_method(name).noise
            tasks += [(kappa, name, c, KAPPA.iterations)
                      for c in range(KAPPA.chains if noise else 1)]
    return tasks


def _kappa_method(name: str) -> MethodSpec:
    """The side-by-side method a method of ``bridge_kappa`` runs."""
    return SIDE_BY_SIDE.methods[name.removesuffix(" (mild on U, V)")]


def kappa_task(kappa: float, method: str, chain: int, iterations: int) -> dict[str, np.ndarray]:
    """One cell of ``bridge_kappa``: the certified minimum from the spectral start
    ("reference") or the Q_hat values of one trajectory from the random start (all NaN and
    ``diverged = 1`` when the chain blew up). The last method puts the mild term on (U, V)."""
    settings = KAPPA
    factor = method.endswith("(mild on U, V)")
    problem, data, potential = _setup(settings, settings.n, kappa,
                                      "factor" if factor else "weights")
    if method == "reference":
        basin = reference.reference_minimizer(data.reference_objective(settings.lam),
                                              data.manifold.point(), data.Sigma_hat,
                                              hessian=False)
        return dict(basin_value=np.asarray(basin.value))
    spec = _kappa_method(method)
    p, d = data.M_hat.shape
    s0 = base_temperature(settings.n, p, d, problem.noise_std)
    try:
        _, values = run_method(potential, _start(data, spec.start, settings.seed),
                               precondition=spec.precondition,
                               schedule=_schedule(spec.noise, s0, iterations),
                               iterations=iterations, every=settings.every,
                               rng=np.random.default_rng(
                                   [settings.seed_base, 100 + settings.kappas.index(kappa),
                                    settings.methods.index(method), chain]))
    except langevin.LangevinDivergenceError:
        return dict(objective=np.full(iterations // settings.every + 1, np.nan),
                    diverged=np.asarray(1.0))
    return dict(objective=values, diverged=np.asarray(0.0))


def assemble_kappa(tasks: Sequence[tuple[float, str, int, int]],
                   results: Sequence[dict[str, np.ndarray]]
                   ) -> dict[str, np.ndarray]:
    """Stack the cells of ``bridge_kappa``: ``objective`` (kappas, methods, chains, G),
    ``basin_value`` (kappas,); NaN where a cell was not run."""
    iterations = max(t[3] for t in tasks)
    grid = np.arange(0, iterations + 1, KAPPA.every)
    cells = (len(KAPPA.kappas), len(KAPPA.methods), KAPPA.chains)
    history = {"objective": np.full(cells + (grid.size,), np.nan),
               "basin_value": np.full(len(KAPPA.kappas), np.nan),
               "diverged": np.full(cells, np.nan)}
    for (kappa, method, chain, _), result in zip(tasks, results):
        i = KAPPA.kappas.index(kappa)
        if method == "reference":
            history["basin_value"][i] = result["basin_value"]
            continue
        j = KAPPA.methods.index(method)
        history["objective"][i, j, chain] = result["objective"]
        history["diverged"][i, j, chain] = result["diverged"]
    history.update(iteration=grid, kappas=np.asarray(KAPPA.kappas))
    return history


@register_grid("bridge_kappa", settings=KAPPA)
def bridge_kappa(full: bool = True) -> TaskGrid:
    """Plain and preconditioned GD and Langevin against kappa(Sigma) = 1..1000 (n = 100)."""
    tasks = kappa_tasks(full)
    return TaskGrid(tasks, kappa_task, partial(assemble_kappa, tasks))


# ----------------------------------------------------------------------------------------
# The floors: Gibbs offset against the statistical floor, in s and n.
# ----------------------------------------------------------------------------------------

def floor_tasks(full: bool = True) -> list[tuple[int, float, int]]:
    """(n, s, iterations) cells of ``bridge_floors``; the prefix is the first cell, ``PREFIX``
    iterations."""
    cells = [(n, s, FLOORS.iterations) for n in FLOORS.n_values for s in FLOORS.temperatures]
    return cells if full else [(FLOORS.n_values[0], FLOORS.temperatures[0], PREFIX)]


def floor_task(n: int, s: float, iterations: int) -> dict[str, np.ndarray]:
    """One (n, s) cell of ``bridge_floors``: ``FLOORS.chains`` preconditioned Langevin chains
    from the basin minimizer of Q_hat (spectral start), Algorithm 1's step there."""
    settings = FLOORS
    problem, data, potential = _setup(settings, n)
    p, d = data.M_hat.shape
    basin = reference.reference_minimizer(data.reference_objective(settings.lam),
                                          data.manifold.point(), data.Sigma_hat,
                                          hessian=iterations == settings.iterations)
    step = algorithm.default_step(*data.manifold.point(), data.Sigma_hat, data.M_hat,
                                  lam=settings.lam, precondition=True)
    start = np.tile(bridge.flatten(basin.A, basin.B), (settings.chains, 1))
    run = langevin.euler_maruyama(potential, start, step=step, temperature=s,
                                  n_steps=iterations, record_every=settings.every,
                                  record_states=True,
                                  preconditioner=bridge.preconditioner_matrix(data.Sigma_hat, p),
                                  rng=np.random.default_rng([settings.seed_base, 200, n,
                                                             settings.temperatures.index(s)]))
    objective = run.loss - potential.mild_value(run.states)
    return dict(objective=objective.T,
                excess_risk=bridge.excess_risks(run.states, p, d, problem.Sigma, problem.M).T,
                basin_value=np.asarray(basin.value),
                basin_excess_risk=np.asarray(population.population_loss(
                    basin.A, basin.B, problem.Sigma, problem.M)),
                hessian=basin.hessian_eigenvalues, step=np.asarray(step))


def assemble_floors(tasks: Sequence[tuple[int, float, int]],
                    results: Sequence[dict[str, np.ndarray]]
                    ) -> dict[str, np.ndarray]:
    """Stack the cells of ``bridge_floors``: (n, s, chains, G) curves, per-n basin data."""
    n_values = sorted({t[0] for t in tasks})
    temperatures = sorted({t[1] for t in tasks})
    history: dict[str, np.ndarray] = {}
    for (n, s, _), result in zip(tasks, results):
        i, j = n_values.index(n), temperatures.index(s)
        for key in ("objective", "excess_risk"):
            history.setdefault(key, np.full((len(n_values), len(temperatures))
                                            + result[key].shape, np.nan))[i, j] = result[key]
        for key in ("basin_value", "basin_excess_risk", "hessian", "step"):
            history.setdefault(key, np.full((len(n_values),) + np.shape(result[key]),
                                            np.nan))[i] = result[key]
    iterations = max(t[2] for t in tasks)
    history.update(iteration=np.arange(0, iterations + 1, FLOORS.every),
                   n_values=np.asarray(n_values), temperatures=np.asarray(temperatures))
    return history


@register_grid("bridge_floors", settings=FLOORS)
def bridge_floors(full: bool = True) -> TaskGrid:
    """Gibbs-mean offset of Q_hat and of the excess risk against the statistical floor (s, n)."""
    tasks = floor_tasks(full)
    return TaskGrid(tasks, floor_task, partial(assemble_floors, tasks))


def replayed_trajectories(stored: Mapping[str, np.ndarray], prefix: Mapping[str, np.ndarray]
                          ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """An ``align`` for :func:`attnbook.experiments.replay` on the three grids above: the
    trajectories (last axis: recorded iterations) that the prefix ran (finite first record),
    against the same trajectories' leading records in the stored run."""
    stored_view, prefix_view = {}, {}
    for key in ("objective", "excess_risk"):
        if key in prefix:
            replayed = np.asarray(prefix[key])
            block = np.asarray(stored[key])[tuple(slice(0, m) for m in replayed.shape)]
            ran = np.isfinite(replayed[..., 0])
            stored_view[key], prefix_view[key] = block[ran], replayed[ran]
    return stored_view, prefix_view
