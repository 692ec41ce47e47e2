"""Registered ablations of Algorithm 1 (chapters 4 and 5): stored runs beyond ``paper1_defaults``.

The default runs of the five methods live in :mod:`attnbook.experiments.part1`
(``paper1_defaults``); this module adds what chapters 4 and 5 need on top of them, with the same
data (seed s draws the problem, the training set and the test set from ``default_rng(s)``; every
random start and SGD's minibatches come from ``default_rng(100 + s)``):

``paper1_condition_sweep`` (chapter 5). For each seed, ``X* = M Sigma^{1/2}`` of the seed's default
problem is held fixed while the condition number of Sigma varies:
``Sigma_kappa = W diag(geomspace(1, 1/kappa, d)) W^T`` with W the eigenvectors of the default
Sigma, and ``M_kappa = X* Sigma_kappa^{-1/2}`` (:func:`fixed_target_problem`). kappa = 10 is the
default problem itself. The training samples use the same standard-normal draws for every kappa.
Each method of :data:`attnlib.algorithm.METHODS` runs for at most ``SWEEP_SETTINGS.iterations``
iterations and stops early once the excess risk is at most ``min(SWEEP_SETTINGS.thresholds)``.
Keys (S seeds, K kappas, 5 methods, G grid iterations; the seed axis first; NaN after a run
stopped): ``seeds`` (S,), ``kappas`` (K,), ``thresholds``, ``iteration`` (G,), ``excess_risk``
(S, G, K, 5), ``first_iteration`` (S, K, 5, len(thresholds)): the first iteration with excess
risk <= each threshold, ``inf`` if not reached within the cap; ``step`` (S, K, 5).

``ch4_defaults_ablations`` (chapter 4). Seed 0's default data, three runs of
``ABLATION_SETTINGS.iterations`` iterations from the spectral initialization with the
preconditioner: Algorithm 1 as is;
without the regularizer (lambda = 0); with renormalization at the tightest allowed bound
``tau = sqrt(trace Gamma_hat)``. Keys ``excess_risk``, ``objective``, ``loss``, ``dist_P_hat``,
``imbalance``, ``scale`` (G, 3), where imbalance and scale are :func:`attnlib.analysis.balance`
with Sigma_hat.

``ch4_small_n_renormalization`` (chapter 4). n = ``SMALL_N_SETTINGS.n`` (20) samples of the
seed's default problem, both masks, renormalization off and at ``tau = sqrt(trace Gamma_hat)``,
two methods: Algorithm 1 and Adam without regularizer (which moves the scale of B fastest).
Keys (S seeds, the seed axis first): ``seeds`` (S,), ``iteration`` (G,), ``test_iteration``
(T,), ``excess_risk``, ``loss``, ``scale``, ``self_weight`` (S, G, 2 methods, 2 masks, 2 taus):
self_weight is the mean attention of a token on itself under the all-tokens mask;
``test_risk`` (S, T, 2, 2, 2) the deployed risk on ``n_test`` fresh points (noise-free
targets); ``tau`` (S,) the renormalization bound of each seed.

Every setting of each run is a field of its frozen settings instance (``SWEEP_SETTINGS``,
``ABLATION_SETTINGS``, ``SMALL_N_SETTINGS``), whose defaults are those of ``paper1_defaults``
(:data:`attnbook.experiments.part1.SETTINGS`); the stored ``config`` is written from it.

:func:`explorer_run` is the short live experiment behind chapter 5's widget.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np

from attnbook.seeds import stream
from attnlib import algorithm, analysis, attention, data, geometry, population
from attnlib._validation import check_int, check_positive
from attnlib.data import RegressionProblem
from . import register
from ._tasks import stack_tasks
from .part1 import SETTINGS as DEFAULTS
from .part1 import derive, method_options, recorded_iterations

__all__ = [
    "SWEEP_SETTINGS",
    "ABLATION_SETTINGS",
    "SMALL_N_SETTINGS",
    "ConditionSweepSettings",
    "AblationSettings",
    "SmallNSettings",
    "fixed_target_problem",
    "defaults_data",
    "explorer_run",
    "start_excess_risks",
    "headline_comparison",
    "start_claims_grid",
    "spectral_start_distances",
    "regularizer_on_manifold",
]


@dataclass(frozen=True)
class ConditionSweepSettings:
    """Every setting of ``paper1_condition_sweep`` (module docstring), each a [choice] of this
    book; ``method_options`` is derived (the methods of :data:`attnlib.algorithm.METHODS` named
    in ``methods``). The stored ``config`` is ``dataclasses.asdict`` of it."""

    d: int = DEFAULTS.d
    p: int = DEFAULTS.p
    n: int = DEFAULTS.n
    noise_std: float = DEFAULTS.noise_std
    kappas: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)
    seeds: tuple[int, ...] = DEFAULTS.seeds[:2]
    iterations: int = DEFAULTS.iterations
    thresholds: tuple[float, ...] = (2e-2, 1e-2)
    methods: tuple[str, ...] = DEFAULTS.methods
    early_stop: str = "when the excess risk is <= min(thresholds)"
    target: str = "X* = M Sigma^{1/2} of the seed's default problem, fixed over kappa"
    method_options: dict[str, dict[str, object]] = field(init=False)

    def __post_init__(self) -> None:
        derive(self, method_options=method_options(self.methods))


@dataclass(frozen=True)
class AblationSettings:
    """Every setting of ``ch4_defaults_ablations`` (module docstring), each a [choice] of this
    book. ``common`` are the pieces every variant shares (``optimizer`` "gd": gradient descent
    with the step rule; ``mask`` of the data loss), ``options`` each variant's own (``tau``:
    the renormalization bound, the rule ``TAU_RULE``). The stored ``config`` is
    ``dataclasses.asdict`` of it."""

    seed: int = DEFAULTS.seeds[0]
    d: int = DEFAULTS.d
    p: int = DEFAULTS.p
    n: int = DEFAULTS.n
    kappa: float = DEFAULTS.kappa
    noise_std: float = DEFAULTS.noise_std
    iterations: int = DEFAULTS.iterations
    variants: tuple[str, ...] = ("algorithm1", "no_regularizer", "renormalized")
    options: dict[str, dict[str, object]] = field(default_factory=lambda: {
        "algorithm1": {"lam": 1.0}, "no_regularizer": {"lam": 0.0},
        "renormalized": {"lam": 1.0, "tau": TAU_RULE}})
    common: dict[str, object] = field(default_factory=lambda: {
        "init": "spectral", "precondition": True, "optimizer": "gd", "mask": "loo"})


@dataclass(frozen=True)
class SmallNSettings:
    """Every setting of ``ch4_small_n_renormalization`` (module docstring), each a [choice] of
    this book: ``methods`` by their pieces (``optimizer`` "gd": the step rule, "adam": Adam with
    ``adam_learning_rate``), ``taus`` the renormalization off and at ``TAU_RULE``. The stored
    ``config`` is ``dataclasses.asdict`` of it."""

    seeds: tuple[int, ...] = DEFAULTS.seeds
    n: int = 20
    d: int = DEFAULTS.d
    p: int = DEFAULTS.p
    kappa: float = DEFAULTS.kappa
    noise_std: float = DEFAULTS.noise_std
    iterations: int = 3000
    methods: dict[str, dict[str, object]] = field(default_factory=lambda: {
        "algorithm1": {"optimizer": "gd", "init": "spectral", "precondition": True, "lam": 1.0},
        "adam_no_reg": {"optimizer": "adam", "init": "spectral", "precondition": False,
                        "lam": 0.0}})
    masks: tuple[str, ...] = ("all", "loo")
    taus: tuple[str, ...] = ("off", "sqrt(trace D_hat)")
    n_test: int = DEFAULTS.n_test
    test_every: int = 100
    adam_learning_rate: float = 1e-2


#: the renormalization bound of chapter 4, ``tau = sqrt(trace Gamma_hat)`` (:func:`balanced_tau`)
TAU_RULE = "sqrt(trace Gamma_hat)"
#: the settings of the stored runs
SWEEP_SETTINGS = ConditionSweepSettings()
ABLATION_SETTINGS = AblationSettings()
SMALL_N_SETTINGS = SmallNSettings()
# iterations of the replayed prefixes (full=False, first seed)
SWEEP_PREFIX = 5
ABLATION_PREFIX = 10
SMALL_PREFIX = 30


def balanced_tau(x: np.ndarray, y: np.ndarray) -> float:
    """The renormalization bound ``tau = sqrt(trace Gamma_hat)`` (:data:`TAU_RULE`), the sum of
    the singular values of ``X_hat* = M_hat Sigma_hat^{1/2}`` under the square root."""
    sigma_hat, m_hat = population.empirical_moments(x, y)
    return float(np.sqrt(np.linalg.svd(population.target(m_hat, sigma_hat),
                                       compute_uv=False).sum()))


def _method(options: Mapping[str, object], *, adam_learning_rate: float | None = None,
            tau: float | None = None) -> algorithm.Method:
    """The :class:`attnlib.algorithm.Method` with ``init``, ``precondition``, ``lam`` of
    ``options`` and its ``optimizer`` ("gd": the step rule; "adam": Adam at
    ``adam_learning_rate``)."""
    optimizer = options["optimizer"]
    if optimizer == "gd":
        update: algorithm.UpdateRule = algorithm.GD()
    elif optimizer == "adam" and adam_learning_rate is not None:
        update = algorithm.Adam(lr=adam_learning_rate)
    else:
        raise ValueError(f"optimizer must be 'gd' or 'adam' (with adam_learning_rate), got "
                         f"{optimizer!r}")
    return algorithm.Method(init=options["init"], precondition=bool(options["precondition"]),
                            lam=float(options["lam"]), update=update,  # type: ignore[arg-type]
                            tau=tau)


def fixed_target_problem(Xstar: np.ndarray, Sigma: np.ndarray, noise_std: float
                         ) -> RegressionProblem:
    """The task with covariance ``Sigma`` and ``M = X* Sigma^{-1/2}``, so that the factorization
    target ``M Sigma^{1/2}`` is the given ``X*`` whatever the conditioning of Sigma."""
    _, inv_half = population.spd_sqrt(Sigma)
    return RegressionProblem(Sigma=Sigma, M=np.asarray(Xstar, dtype=float) @ inv_half,
                             noise_std=noise_std)


def defaults_data(seed: int, *, kappa: float | None = None, n: int = DEFAULTS.n
                  ) -> tuple[RegressionProblem, tuple[np.ndarray, np.ndarray],
                             tuple[np.ndarray, np.ndarray]]:
    """Return ``(problem, (X, Y), (X_test, Y_test))`` as ``paper1_defaults`` draws them for
    ``seed`` (problem, then n training and ``n_test`` test samples from ``default_rng(seed)``;
    the settings of :data:`attnbook.experiments.part1.SETTINGS`).

    With ``kappa`` the problem is replaced by :func:`fixed_target_problem` with the default
    problem's X*, the eigenvectors of its Sigma and eigenvalues ``geomspace(1, 1/kappa, d)``;
    the samples use the same generator state, hence the same standard-normal draws.
    """
    d = DEFAULTS.d
    rng = np.random.default_rng(seed)
    problem = data.default_problem(rng=rng, d=d, p=DEFAULTS.p, kappa=DEFAULTS.kappa,
                                   noise_std=DEFAULTS.noise_std)
    if kappa is not None:
        _, vectors = np.linalg.eigh(problem.Sigma)
        vectors = vectors[:, ::-1]                         # largest eigenvalue first
        sigma = data.covariance(d, spectrum=np.geomspace(1.0, 1.0 / kappa, d), rotate=False)
        sigma = vectors @ sigma @ vectors.T
        problem = fixed_target_problem(population.target(problem.M, problem.Sigma),
                                       0.5 * (sigma + sigma.T), DEFAULTS.noise_std)
    return problem, problem.sample(n, rng=rng), problem.sample(DEFAULTS.n_test, rng=rng)


def _stop_below(problem: RegressionProblem, threshold: float):
    def callback(_k: int, a: np.ndarray, b: np.ndarray) -> bool:
        return population.population_loss(a, b, problem.Sigma, problem.M) <= threshold
    return callback


@register("paper1_condition_sweep", settings=SWEEP_SETTINGS)
def paper1_condition_sweep(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Condition-number sweep (kappa 1..1000, X* fixed): iterations to a fixed excess risk."""
    run = SWEEP_SETTINGS if full else replace(SWEEP_SETTINGS, seeds=SWEEP_SETTINGS.seeds[:1],
                                              iterations=SWEEP_PREFIX)
    grid = recorded_iterations(run.iterations)
    history: dict[str, np.ndarray] = {"kappas": np.asarray(run.kappas),
                                      "thresholds": np.asarray(run.thresholds),
                                      "iteration": grid, "seeds": np.asarray(run.seeds)}
    per_seed = []
    for seed in run.seeds:
        curves = np.full((grid.size, len(run.kappas), len(run.methods)), np.nan)
        first = np.full((len(run.kappas), len(run.methods), len(run.thresholds)), np.inf)
        steps = np.zeros((len(run.kappas), len(run.methods)))
        for i, kappa in enumerate(run.kappas):
            problem, (x, y), _ = defaults_data(seed, kappa=kappa, n=run.n)
            for j, name in enumerate(run.methods):
                result = algorithm.train(algorithm.empirical_loss(x, y), algorithm.METHODS[name],
                                         iterations=run.iterations, problem=problem,
                                         rng=stream("start", seed),
                                         callback=_stop_below(problem, min(run.thresholds)),
                                         progress=progress)
                excess = result.history["excess_risk"]
                kept = grid[grid < excess.size]
                curves[: kept.size, i, j] = excess[kept]
                first[i, j] = [analysis.iterations_to_threshold(excess, t)
                               for t in run.thresholds]
                steps[i, j] = result.step
        per_seed.append(dict(excess_risk=curves, first_iteration=first, step=steps))
    history.update(stack_tasks(per_seed))
    return history


def _balance_recorder(sigma_hat: np.ndarray, grid: np.ndarray, out: dict[str, list[float]]):
    wanted = set(int(k) for k in grid)

    def callback(k: int, a: np.ndarray, b: np.ndarray) -> None:
        if k in wanted:
            gap, scale = analysis.balance(a, b, sigma_hat)
            out["imbalance"].append(gap)
            out["scale"].append(scale)
    return callback


@register("ch4_defaults_ablations", settings=ABLATION_SETTINGS)
def ch4_defaults_ablations(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    """Chapter 4 at the defaults: Algorithm 1, without regularizer, with renormalization."""
    run = ABLATION_SETTINGS if full else replace(ABLATION_SETTINGS, iterations=ABLATION_PREFIX)
    grid = recorded_iterations(run.iterations)
    problem, (x, y), _ = defaults_data(run.seed, n=run.n)
    sigma_hat, _ = population.empirical_moments(x, y)
    tau = balanced_tau(x, y)
    variants = {name: _method({**run.common, **run.options[name]},
                              tau=tau if "tau" in run.options[name] else None)
                for name in run.variants}
    keys = ("excess_risk", "objective", "loss", "dist_P_hat")
    columns: dict[str, list[np.ndarray]] = {key: [] for key in keys + ("imbalance", "scale")}
    mask: attention.Mask = run.common["mask"]                        # type: ignore[assignment]
    steps = []
    for method in variants.values():
        recorded: dict[str, list[float]] = {"imbalance": [], "scale": []}
        result = algorithm.train(algorithm.empirical_loss(x, y, mask=mask),
                                 method, iterations=run.iterations, problem=problem,
                                 callback=_balance_recorder(sigma_hat, grid, recorded),
                                 progress=progress, record_at=grid)
        if result.diverged:
            raise RuntimeError(f"ch4_defaults_ablations: {method} diverged")
        for key in keys:
            columns[key].append(result.history[key])
        for key, values in recorded.items():
            columns[key].append(np.asarray(values))
        steps.append(result.step)
    history = {key: np.column_stack(values) for key, values in columns.items()}
    history.update(iteration=grid, step=np.asarray(steps), tau=np.asarray(tau))
    return history


@register("ch4_small_n_renormalization", settings=SMALL_N_SETTINGS)
def ch4_small_n_renormalization(full: bool = True, progress: bool = False
                                ) -> dict[str, np.ndarray]:
    """Chapter 4 at n = 20: both masks, renormalization off/on, Algorithm 1 and Adam (lam=0)."""
    run = SMALL_N_SETTINGS if full else replace(SMALL_N_SETTINGS, seeds=SMALL_N_SETTINGS.seeds[:1],
                                                iterations=SMALL_PREFIX)
    grid = recorded_iterations(run.iterations)
    methods = {name: _method(options, adam_learning_rate=run.adam_learning_rate)
               for name, options in run.methods.items()}
    masks = run.masks
    history: dict[str, np.ndarray] = {"iteration": grid, "seeds": np.asarray(run.seeds)}
    per_seed = []
    for seed in run.seeds:
        problem, (x, y), test = defaults_data(seed, n=run.n)
        sigma_hat, _ = population.empirical_moments(x, y)
        tau = balanced_tau(x, y)
        shape = (grid.size, len(methods), len(masks), len(run.taus))
        out = {key: np.full(shape, np.nan)
               for key in ("excess_risk", "loss", "scale", "self_weight")}
        tests = []
        for i, method in enumerate(methods.values()):
            for j, mask in enumerate(masks):
                for t, bound in enumerate((None, tau)):         # run.taus
                    recorded: dict[str, list[float]] = {"imbalance": [], "scale": [],
                                                        "self_weight": []}
                    balance = _balance_recorder(sigma_hat, grid, recorded)

                    def callback(k: int, a: np.ndarray, b: np.ndarray) -> None:
                        balance(k, a, b)
                        if len(recorded["self_weight"]) < len(recorded["scale"]):
                            weights = attention.attention_weights(b, x, mask="all")
                            recorded["self_weight"].append(float(np.mean(np.diag(weights))))

                    result = algorithm.train(algorithm.empirical_loss(x, y, mask=mask),
                                             replace(method, tau=bound),
                                             iterations=run.iterations, problem=problem,
                                             test=test, test_every=run.test_every,
                                             callback=callback, progress=progress,
                                             record_at=grid)
                    if result.diverged:
                        raise RuntimeError(f"small-n run {method}, {mask}, tau={bound} diverged")
                    for key in ("excess_risk", "loss"):
                        out[key][:, i, j, t] = result.history[key]
                    out["scale"][:, i, j, t] = recorded["scale"]
                    out["self_weight"][:, i, j, t] = recorded["self_weight"]
                    tests.append(result.history["test_risk"])
        per_seed.append(dict(out, test_risk=np.stack(tests, axis=1).reshape(
            -1, len(methods), len(masks), 2), tau=np.asarray(tau)))
    history.update(stack_tasks(per_seed))
    history["test_iteration"] = np.unique(np.r_[np.arange(0, run.iterations + 1, run.test_every),
                                                run.iterations])
    return history


def explorer_run(*, kappa: float = 10.0, n: int = 200, step_scale: float = 0.5,
                 regularize: bool = True, iterations: int = 150, seed: int = 0
                 ) -> dict[str, np.ndarray]:
    """Short live experiment behind chapter 5's widget.

    Draws the seed's default problem with condition number ``kappa`` and X* fixed
    (:func:`defaults_data`), n training samples, and trains from the same random start
    (``default_rng(100 + seed)``) with the preconditioner and with plain gradient descent, both
    with step rule scale ``step_scale`` and regularizer weight 1 if ``regularize`` else 0.
    Returns the excess-risk histories (``preconditioned``, ``plain``; shorter if a run
    diverged), the steps used (``step_preconditioned``, ``step_plain``) and ``ols`` (the excess
    risk of the least-squares fit on the same samples).
    """
    problem, (x, y), _ = defaults_data(seed, kappa=kappa, n=n)
    lam = 1.0 if regularize else 0.0
    out: dict[str, np.ndarray] = {}
    for name, precondition in (("preconditioned", True), ("plain", False)):
        method = algorithm.Method(init="random", lam=lam, precondition=precondition,
                                  update=algorithm.GD(step_scale=step_scale))
        result = algorithm.train(algorithm.empirical_loss(x, y), method, iterations=iterations,
                                 problem=problem, rng=stream("start", seed))
        out[name] = result.history["excess_risk"]
        out[f"step_{name}"] = np.asarray(result.step)
    _, m_hat = population.empirical_moments(x, y)
    out["ols"] = np.asarray(population.linear_excess_risk(m_hat, problem.Sigma, problem.M))
    return out


def start_excess_risks(seed: int, *, noise_std: float, n: int = DEFAULTS.n,
                       init_scale: float = 0.3) -> dict[str, float]:
    """Excess risks at the start of training for ``paper1_defaults``'s seed at another noise level.

    Draws the seed's default problem with ``noise_std`` and n samples from ``default_rng(seed)``
    (the same standard-normal draws for every noise level) and returns the excess risk of the
    spectral start (``spectral``), of the random start of ``default_rng(100 + seed)`` with
    entries N(0, init_scale^2 / d) (``random``, independent of the noise), of the OLS fit on the same samples (``ols_fit``) and
    the exact expected OLS excess risk ``p sigma^2 d / (2 (n - d - 1))`` (``ols_formula``).
    """
    d, p = DEFAULTS.d, DEFAULTS.p
    rng = np.random.default_rng(seed)
    problem = data.default_problem(rng=rng, d=d, p=p, kappa=DEFAULTS.kappa, noise_std=noise_std)
    x, y = problem.sample(n, rng=rng)
    sigma_hat, m_hat = population.empirical_moments(x, y)
    spectral = algorithm.spectral_init(sigma_hat, m_hat)
    random = algorithm.random_init(d, p, rng=stream("start", seed), scale=init_scale)
    return dict(
        spectral=population.population_loss(*spectral, problem.Sigma, problem.M),
        random=population.population_loss(*random, problem.Sigma, problem.M),
        ols_fit=population.linear_excess_risk(m_hat, problem.Sigma, problem.M),
        ols_formula=population.ols_excess_risk(n, d, p, noise_std))


def headline_comparison(seed: int = 0, *, iterations: int = DEFAULTS.iterations
                        ) -> dict[str, np.ndarray]:
    """Where the headline rate holds: Algorithm 1's optimization gap on the two infinite-data
    objectives of seed ``seed`` of ``paper1_defaults`` (chapter 5).

    ``population``: Q = L + R with the true (Sigma, M), from the spectral start of
    (Sigma_hat, M_hat) (the start Algorithm 1 uses on the finite objective); ``closed_form``: the
    same objective with (Sigma_hat, M_hat) plugged in, from the random start of
    ``default_rng(100 + seed)`` (the spectral start lies on S_hat, where this gap is 0), with the
    preconditioner and the regularizer (method ``random+precond+reg``). Both minima are known in
    closed form (the points of S and S_hat, value 0 up to round-off), so ``gap_*`` is the
    objective minus its value at the manifold point. Returns every iteration ``iteration``, the
    gaps ``gap_population`` and ``gap_closed_form``, the steps ``step_*`` of the step rule and
    ``s_d_*``, the smallest singular value of ``X* = M Sigma^{1/2}`` of each objective, for the
    predicted rate ``(1 - eta s_d)^2``.
    """
    seed = check_int("seed", seed, minimum=0)
    iterations = check_int("iterations", iterations, minimum=1)
    problem, (x, y), _ = defaults_data(seed)
    sigma_hat, m_hat = population.empirical_moments(x, y)
    runs = {"population": (algorithm.closed_form_loss(problem.Sigma, problem.M),
                           algorithm.METHODS["algorithm1"],
                           algorithm.spectral_init(sigma_hat, m_hat)),
            "closed_form": (algorithm.closed_form_loss(sigma_hat, m_hat),
                            algorithm.METHODS["random+precond+reg"], None)}
    out: dict[str, np.ndarray] = {"iteration": np.arange(iterations + 1)}
    for name, (loss, method, start) in runs.items():
        result = algorithm.train(loss, method, iterations=iterations, init=start,
                                 rng=stream("start", seed))
        minimum, _ = loss.objective(method.lam)(*loss.manifold.point())[:2]
        out[f"gap_{name}"] = result.history["objective"] - minimum
        out[f"step_{name}"] = np.asarray(result.step)
        out[f"s_d_{name}"] = np.asarray(loss.manifold.singular_values[-1])
    return out


def start_claims_grid(scales: tuple[float, ...], noise_levels: tuple[float, ...], *,
                      seeds: tuple[int, ...] = DEFAULTS.seeds) -> dict[str, np.ndarray]:
    """Observation 1 of chapter 5 over the random start's scale c (entries N(0, c^2/d)) and the
    noise level, from :func:`start_excess_risks` (no training).

    Returns ``start`` (noise, seed): ``(L(theta_0) - L*)/L*`` of the spectral start, with
    ``L* = p sigma^2 / 2``; ``log10_ratio`` (scale, noise): log10 of the median over ``seeds`` of
    the population-loss ratio random / spectral start. Needs every noise level positive.
    """
    scales = tuple(check_positive("scales", c) for c in scales)
    noise_levels = tuple(check_positive("noise_levels", s) for s in noise_levels)
    if not scales or not noise_levels or not seeds:
        raise ValueError("scales, noise_levels and seeds must each be non-empty")
    start = np.zeros((len(noise_levels), len(seeds)))
    ratio = np.zeros((len(scales), len(noise_levels), len(seeds)))
    for j, sigma in enumerate(noise_levels):
        l_star = DEFAULTS.p * sigma ** 2 / 2
        for k, seed in enumerate(seeds):
            for i, scale in enumerate(scales):
                risks = start_excess_risks(seed, noise_std=sigma, init_scale=scale)
                ratio[i, j, k] = (risks["random"] + l_star) / (risks["spectral"] + l_star)
            start[j, k] = risks["spectral"] / l_star
    return dict(start=start, log10_ratio=np.log10(np.median(ratio, axis=-1)))


def spectral_start_distances(seeds: tuple[int, ...]) -> dict[str, np.ndarray]:
    """For each seed's default problem and n samples (:func:`defaults_data`): the P-distance
    ``distance`` of the spectral start (from (Sigma_hat, M_hat)) to the true manifold S, and the
    radius ``sqrt(2 s_min(X*))`` of the one-point-convexity ball around S (``radius``), with
    ``X* = M Sigma^{1/2}``. Chapter 4 checks that the start lands inside with high probability."""
    seeds = tuple(check_int("seeds", s, minimum=0) for s in seeds)
    if not seeds:
        raise ValueError("seeds must contain at least one seed")
    distance, radius = [], []
    for seed in seeds:
        problem, (x, y), _ = defaults_data(seed)
        manifold = geometry.minimizer_manifold(problem.Sigma, problem.M)
        distance.append(manifold.distance(*algorithm.spectral_init(
            *population.empirical_moments(x, y))))
        radius.append(np.sqrt(2 * manifold.singular_values[-1]))
    return dict(distance=np.array(distance), radius=np.array(radius))


def regularizer_on_manifold(seed: int = 0, *, rotations: int = 8) -> dict[str, float]:
    """Does the balancing regularizer keep the manifold S of global minima of L (chapter 3)?

    At ``rotations`` points U* O, V* O of S for the seed's default (Sigma, M), O random
    orthogonal from ``default_rng(300 + seed)`` (half with det O = -1): the largest value of
    R (``largest_regularizer``), of ``L - L*`` (``largest_excess``) and of the gradient norm of
    Q = L + R with lambda = 1 (``largest_gradient``), all in factor coordinates (U, V).
    """
    seed = check_int("seed", seed, minimum=0)
    rotations = check_int("rotations", rotations, minimum=1)
    problem, _, _ = defaults_data(seed)
    manifold = geometry.minimizer_manifold(problem.Sigma, problem.M)
    rng = stream("probe", seed)
    regularizer, excess, gradient = [], [], []
    for i in range(rotations):
        rotation = data.random_rotation(DEFAULTS.d, rng=rng)
        if (np.linalg.det(rotation) > 0) == (i % 2 == 1):
            rotation[:, 0] *= -1.0
        u, v = manifold.U_star @ rotation, manifold.V_star @ rotation
        loss, loss_u, loss_v = population.factor_loss_and_grad(u, v, manifold.Xstar)
        reg, reg_u, reg_v = population.factor_regularizer_and_grad(u, v, lam=1.0)
        regularizer.append(reg)
        excess.append(loss)
        gradient.append(np.sqrt(np.sum((loss_u + reg_u) ** 2) + np.sum((loss_v + reg_v) ** 2)))
    return dict(largest_regularizer=float(max(regularizer)), largest_excess=float(max(excess)),
                largest_gradient=float(max(gradient)))
