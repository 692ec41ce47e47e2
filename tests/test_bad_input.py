"""Bad input to every public function of attnlib gets a clear error that names the argument.

The test enumerates ``__all__`` of every module of the package (every module must have one),
takes one valid call of each public function or validating class, and of each public method
of every public class (on an instance from :data:`INSTANCES`), from :data:`EXAMPLES`, and
replaces one argument at a time by a bad value chosen from the type of its valid value:

* arrays: a NaN, +inf, -inf or subnormal (5e-324) entry, all zeros, complex, object and
  string dtypes, an empty array, an extra axis and a missing axis, the array times 1e200;
  and the same values in another memory layout (:data:`LAYOUT_CASES`: Fortran order, a
  strided view, read-only; also for boolean arrays and the arrays in a tuple, list or dict),
  which must give the result of the C-contiguous copy (within :data:`LAYOUT_RTOL`);
* integers: NaN, +-infinity, a non-integer, a negative number, 0, a string, None, a complex
  number, and 10^9 ("huge": a size, count or amount of work no call can afford, which must
  fail at once with an error naming the argument, not hang or fail deep inside numpy; where
  10^9 is valid and cheap, :data:`ACCEPTED` says why);
* floats: NaN, +-infinity, a negative number, 0, 5e-324, a complex number, a string, None,
  and for positive ones 1e300 and 1e308 (the edge of float64);
* option strings: an unknown option; random generators: an int.

Each case must raise ``ValueError`` or ``TypeError`` whose message names the argument (as a
word followed by "must", "has", "contains", ..., or quoted). Where a bad-looking value is in
fact valid (a negative tilt, a zero seed), :data:`ACCEPTED` says so with the reason, and the
call must then return without NaN (or raise the named error). Extreme valid-looking values
(:data:`EXTREME_CASES`: 0, 5e-324, 1e300, 1e308, 10^9) must give a finite result or the named
error (or a documented infinite answer, :data:`NAN_PASSES_THROUGH`), and no input array is
ever changed in place. A public callable without an entry in :data:`EXAMPLES` fails the test,
so new public functions are covered as they are added. :data:`KNOWN_FAILURES` lists the cases
not fixed yet (reported as xfail, strict).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import inspect
import math
import pkgutil
import re
import signal
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterator

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import attnbook
import attnlib
from attnlib import (algorithm, analysis, attention, bridge, darcy, data, fitting, geometry,
                     landscape, langevin, lora, optim, orbit, population, potentials, qk_attention,
                     reference, regularizers, runs, symbolic, sweep, villani, vit)
from attnbook import plotting, schematics, tables, verdicts
from attnbook import claims, experiments
from attnlib._validation import _non_finite
from attnbook.experiments._tasks import merge_tasks

#: The modules of the book's own package (the rest are attnlib's).
BOOK_MODULES = {info.name for info in pkgutil.iter_modules(attnbook.__path__)}

# --------------------------------------------------------------------------- enumeration
#: Plain result containers (constructed by the package, never from user input) and protocols.
RESULT_TYPES = {
    "algorithm.TrainResult", "analysis.SeedSummary", "attention.EscapeCurves",
    "darcy.DarcyDataset", "fitting.PowerLawFit", "fitting.GeometricFit",
    "geometry.MinimizerManifold", "landscape.OnePointScan", "landscape.StationaryPoint",
    "langevin.LangevinRun", "villani.VillaniValue", "villani.OrbitConstants",
    "villani.FactorizedLoss", "symbolic.Identity", "symbolic.TiltingMonteCarlo",
    "optim.Transform", "optim.EmptyState", "optim.TraceState",
    "optim.ScaleByAdamState", "algorithm.UpdateRule", "reference.ReferenceOptimum", "verdicts.Verdict",
    "langevin.MalaRun", "villani.OrbitCrossovers", "villani.EveryDirectionCheck", "slider.Frame",
    "slider.FrameSlider",
    "prompts.FirstOrderMinimizer", "prompts.BiasEstimate", "experiments.Replay", "orbit.Trace",
    "orbit.OrbitTilt",
    "experiments.ReplayCheck", "experiments.KeyCheck", "verdicts.VerdictTable",
    "verdicts.Measurement", "sweep.Sweep", "runs.SavedRun", "reference.ObjectiveIdentity",
}


def _modules() -> list[str]:
    names = [info.name for package in (attnlib, attnbook)
             for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")
             if not info.name.rsplit(".", 1)[1].startswith("_")]
    # experiments', claims' and chapters' submodules take the book's own configurations and
    # measurements, and the ledger and claim commands read the book's own notebooks; their own
    # tests (test_experiments.py, test_claims_*.py, test_chapters_*.py, test_ledger.py,
    # test_claim_command.py) cover them
    return [name for name in names
            if not name.startswith(("attnbook.experiments.", "attnbook.claims.",
                                    "attnbook.chapters."))
            and name not in ("attnbook.ledger", "attnbook.claim")]


def public_callables() -> list[str]:
    """``module.name`` of every public function or class in the ``__all__`` of every module."""
    found = []
    for module_name in _modules():
        module = importlib.import_module(module_name)
        short = module_name.split(".", 1)[1]
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or (inspect.isclass(obj)
                                           and not issubclass(obj, BaseException)):
                found.append(f"{short}.{name}")
    return sorted(found)


def public_methods() -> list[str]:
    """``module.Class.method`` of every public method (plain, static or class method) defined
    by a public class in the ``__all__`` of every module, result containers included (an
    inherited method is listed under the class that defines it)."""
    found = []
    for qualname in public_callables():
        cls = _resolve(qualname)
        if inspect.isclass(cls) and not getattr(cls, "_is_protocol", False):  # no body to call
            found += [f"{qualname}.{name}" for name, member in vars(cls).items()
                      if not name.startswith("_") and (inspect.isfunction(member) or isinstance(
                          member, (staticmethod, classmethod)))]
    return sorted(found)


def test_every_module_declares_all() -> None:
    missing = [name for name in _modules() if not hasattr(importlib.import_module(name),
                                                          "__all__")]
    assert missing == []


def test_every_public_callable_has_an_example() -> None:
    names = (set(public_callables()) - RESULT_TYPES) | set(public_methods())
    assert sorted(names - set(EXAMPLES)) == [], "add a valid call to EXAMPLES"
    assert sorted(set(EXAMPLES) - names) == [], "EXAMPLES names a callable that is not public"


# ------------------------------------------------------------------------- valid calls
def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


@functools.cache
def ctx() -> dict[str, Any]:
    """Small valid objects shared by the examples (built once per process)."""
    problem = data.default_problem(rng=_rng(0), d=3, p=4)
    X, Y = problem.sample(12, rng=_rng(1))
    A, B = algorithm.random_init(3, 4, rng=_rng(2))
    manifold = geometry.minimizer_manifold(problem.Sigma, problem.M)
    dataset = darcy.generate(3, 8, seed=0)
    config = vit.ViTConfig(size=8, patch=4, width=4, key_dim=2)
    params = vit.init_params(config, rng=_rng(3))
    patches = vit.patchify(dataset.a, 4)
    targets = vit.patchify(dataset.u, 4)
    attention_problem = qk_attention.make_problem(rng=_rng(0))
    lora_problem = lora.make_problem(rng=_rng(0))
    theta_star, _ = villani.minimize_data_loss(attention_problem,
                                               attention_problem.theta_teacher)
    U, V = population.to_factor(A, B, problem.Sigma)
    objective = algorithm.closed_form_loss(problem.Sigma, problem.M).reference_objective(1.0)
    return dict(objective=objective, problem=problem, X=X, Y=Y, A=A, B=B, Sigma=problem.Sigma, M=problem.M,
                manifold=manifold, dataset=dataset, config=config, params=params,
                patches=patches, targets=targets, qa=attention_problem, lora=lora_problem,
                theta_star=theta_star, consts=villani.orbit_constants(attention_problem,
                                                                      theta_star),
                reg=regularizers.Regularizer("log", 0.1), U=U, V=V,
                Xstar=population.target(problem.M, problem.Sigma),
                curves=np.array([[1.0, 0.5, 0.2, 0.1], [1.0, 0.6, 0.3, 0.2]]))


def _grid() -> list[np.ndarray]:
    return [np.linspace(-2.0, 2.0, 9)]


def _stored(tmp: Path) -> str:
    """A tiny stored run in the store ``tmp`` (for experiments.load/describe)."""
    old, experiments.STORED_DIR = experiments.STORED_DIR, tmp
    try:
        experiments.save("fuzz_run", {"loss": np.arange(3.0), "config": np.asarray("{}")})
    finally:
        experiments.STORED_DIR = old
    return "fuzz_run"


def _benchmark(tmp: Path) -> str:
    """A tiny stored benchmark result in the store ``tmp`` (for experiments.load_benchmark)."""
    (tmp / "benchmark_fuzz.json").write_text('{"rows": []}')
    return "fuzz"


def _line_figure():
    """A small figure with two labelled series (for the figure checks of ``plotting``)."""
    fig, ax = plt.subplots(figsize=(3, 2))
    ax.plot([0, 1], [0, 1], label="a")
    ax.plot([0, 1], [1, 0], label="b")
    ax.legend()
    return fig


def _step_rule(step_scale: float) -> float:
    """A step-size rule for the update rules' ``eta`` (the scale times a fixed 0.1)."""
    return 0.1 * step_scale


def _grid_task(value: int) -> dict[str, np.ndarray]:
    return {f"v{value}": np.asarray(float(value))}


def _sweep_task(value: int) -> dict[str, np.ndarray]:
    return {"v": np.asarray(float(value)), "square": np.asarray(float(value) ** 2)}


def _tiny_experiment(full: bool = True, progress: bool = False) -> dict[str, np.ndarray]:
    return {"loss": np.arange(3.0 if full else 2.0)}


@pytest.fixture()
def sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A temporary store (stored runs and benchmark results) and a registry copy holding one
    tiny experiment."""
    monkeypatch.setattr(experiments, "STORED_DIR", tmp_path)
    monkeypatch.setattr(experiments, "BENCHMARK_DIR", tmp_path)
    registry = {**experiments.registry(), "fuzz_tiny": (_tiny_experiment, "tiny")}
    monkeypatch.setattr(experiments, "_REGISTRY", registry)
    return tmp_path


@functools.cache
def _scan() -> Any:
    return landscape.one_point_scan(ctx()["manifold"], np.array([0.1, 0.2]), kind="random",
                                    lam=1.0, n_samples=2, rng=_rng())


#: The instance each public method is called on (``module.Class`` -> builder).
def _verdict() -> Any:
    """A verdict with two measured values, one of them half-passing."""
    return verdicts.verdict("claim", [0.5, 1.5], 1.0, partial=2.0, labels=["a", "b"])


INSTANCES: dict[str, Callable[[], Any]] = {
    "algorithm.GD": lambda: algorithm.GD(step_scale=0.5),
    "algorithm.Momentum": lambda: algorithm.Momentum(decay=0.9),
    "algorithm.Adam": lambda: algorithm.Adam(lr=0.01),
    "algorithm.Method": lambda: algorithm.METHODS["algorithm1"],
    "algorithm.DataLoss": lambda: algorithm.closed_form_loss(ctx()["Sigma"], ctx()["M"]),
    "bridge.Potential": lambda: bridge.Potential(
        data=algorithm.empirical_loss(ctx()["X"], ctx()["Y"]), lam=1.0, mild=ctx()["reg"],
        coordinates="factor"),
    "data.RegressionProblem": lambda: ctx()["problem"],
    "geometry.MinimizerManifold": lambda: ctx()["manifold"],
    "landscape.OnePointScan": _scan,
    "landscape.StationaryPoint": lambda: landscape.stationary_point_table(
        ctx()["manifold"], lam=1.0)[0],
    "lora.LoRAProblem": lambda: ctx()["lora"],
    "qk_attention.AttentionProblem": lambda: ctx()["qa"],
    "reference.ReferenceOptimum": lambda: reference.reference_minimizer(
        ctx()["objective"], start=ctx()["manifold"].point(), Sigma=ctx()["Sigma"]),
    "regularizers.Regularizer": lambda: ctx()["reg"],
    "slider.FrameSlider": lambda: importlib.import_module("attnbook.slider").frame_slider(
        lambda a: plt.figure(figsize=(1, 1)), controls={"a": [1.0, 2.0]}, alt="a = {a:g}"),
    "symbolic.Identity": lambda: symbolic.Identity("x", symbolic.sp.Symbol("z"),
                                                   symbolic.sp.Symbol("z")),
    "symbolic.TiltingMonteCarlo": lambda: symbolic.tilting_monte_carlo(
        ctx()["Sigma"], np.array([0.1, 0.2, 0.3]), n_samples=100, rng=_rng()),
    "villani.FactorizedLoss": lambda: ctx()["qa"],
    "villani.OrbitConstants": lambda: ctx()["consts"],
    "vit.Standardizer": lambda: vit.Standardizer(mean=0.5, std=2.0),
    "verdicts.Verdict": lambda: _verdict(),
    "verdicts.Measurement": lambda: _verdict().measurements[0],
    "verdicts.VerdictTable": lambda: verdicts.verdict_table([("[summary]", _verdict())]),
    "sweep.Sweep": lambda: sweep.run_sweep(_sweep_task, {"value": [1, 2]}),
    "algorithm.Custom": lambda: algorithm.Custom(make=_scale_step),
    "runs.SavedRun": lambda: _small_run(),
    "reference.ObjectiveIdentity": lambda: algorithm.closed_form_loss(
        ctx()["Sigma"], ctx()["M"]).identity(1.0),
}


def _scale_step(eta: float) -> Any:
    return optim.scale(-eta)


class _OptaxLike:
    """optax's contract (init, update with params) without JAX."""

    def init(self, params: Any) -> tuple:
        return ()

    def update(self, updates: Any, state: Any, params: Any = None) -> tuple:
        return [-0.1 * u for u in updates], state


def _small_run() -> Any:
    return algorithm.train(algorithm.closed_form_loss(ctx()["Sigma"], ctx()["M"]), iterations=2)


def _saved_run(tmp: Path) -> Path:
    return _small_run().save(tmp / "run.npz")


def _darcy_file(tmp: Path) -> Path:
    return darcy.save(ctx()["dataset"], tmp / "set.npz")


def examples(tmp: Path) -> dict[str, Callable[[], dict[str, Any]]]:
    """name -> a function returning the keyword arguments of one valid call."""
    c = ctx()
    X, Y, A, B, S, M = c["X"], c["Y"], c["A"], c["B"], c["Sigma"], c["M"]
    qa, lp, mf = c["qa"], c["lora"], c["manifold"]
    axes = _grid()
    well = potentials.double_well
    sv = mf.singular_values
    fp, z = orbit.factor_problem(c["objective"], (A, B), S)
    return {
        # Part I
        "algorithm.random_init": lambda: dict(d=3, p=2, rng=_rng(), scale=0.3),
        "algorithm.spectral_init": lambda: dict(Sigma_hat=S, M_hat=M),
        "algorithm.renormalize": lambda: dict(A=A, B=B, Sigma_hat=S, tau=2.0),
        "algorithm.default_step": lambda: dict(A0=A, B0=B, Sigma_hat=S, M_hat=M, lam=1.0,
                                               precondition=True, step_scale=0.5),
        "algorithm.empirical_objective_and_grad": lambda: dict(A=A, B=B, X=X, Y=Y, Sigma_hat=S,
                                                               lam=1.0, mask="loo"),
        "algorithm.train": lambda: dict(data=algorithm.empirical_loss(X, Y),
                                        method=algorithm.METHODS["algorithm1"], iterations=3,
                                        test_every=2, rng=_rng()),
        "algorithm.GD": lambda: dict(step_scale=0.5, step=0.1),
        "algorithm.Momentum": lambda: dict(decay=0.9, nesterov=True, step_scale=0.5),
        "algorithm.Adam": lambda: dict(lr=0.01, eps=1e-8),
        "algorithm.Method": lambda: dict(init="spectral", lam=1.0, precondition=True,
                                         batch_size=4, tau=2.0, init_scale=0.3),
        "algorithm.DataLoss": lambda: dict(kind="closed_form", manifold=mf),
        "algorithm.empirical_loss": lambda: dict(X=X, Y=Y, mask="loo"),
        "algorithm.closed_form_loss": lambda: dict(Sigma_hat=S, M_hat=M),
        "optim.chain": lambda: dict(),
        "optim.scale": lambda: dict(factor=-0.1),
        "algorithm.precondition": lambda: dict(Sigma_hat=S),
        "optim.trace": lambda: dict(decay=0.9, nesterov=False),
        "optim.scale_by_adam": lambda: dict(eps=1e-8),
        "bridge.flatten": lambda: dict(A=A, B=B),
        "bridge.unflatten": lambda: dict(theta=bridge.flatten(A, B), p=4, d=3),
        "bridge.preconditioner_matrix": lambda: dict(Sigma_hat=S, p=4),
        "bridge.Potential": lambda: dict(data=algorithm.empirical_loss(X, Y), lam=1.0,
                                         mild=c["reg"], coordinates="factor"),
        "bridge.excess_risks": lambda: dict(theta=bridge.flatten(A, B)[None, :], p=4, d=3,
                                            Sigma=S, M=M),
        "fitting.spectrum_gap_rate": lambda: dict(step=0.1, eigenvalues=np.array([1.0, 2.0])),
        "reference.factor_gradient": lambda: dict(grad_a=A, grad_b=B, inv_half=mf.inv_half),
        "reference.largest_curvature": lambda: dict(objective=c["objective"], point=(A, B),
                                                    Sigma=S, rng=_rng(), iterations=5),
        "reference.reference_minimizer": lambda: dict(objective=c["objective"],
                                                      start=mf.point(), Sigma=S, gtol=1e-6),
        "orbit.factor_problem": lambda: dict(objective=c["objective"], point=(A, B), Sigma=S),
        "orbit.orbit_tangent": lambda: dict(problem=fp, z=z, Sigma=S),
        "orbit.restricted_hessian": lambda: dict(problem=fp, z=z,
                                                 directions=orbit.orbit_tangent(fp, z),
                                                 fd_step=1e-5),
        "orbit.lbfgs": lambda: dict(problem=fp, z0=z, target=0.0, max_evaluations=4, memory=5,
                                    spent=0),
        "orbit.newton_polish": lambda: dict(problem=fp, z0=z, target=0.0, max_evaluations=4,
                                            fd_step=1e-5, spent=0),
        "orbit.orbit_nesterov": lambda: dict(problem=fp, z0=z, step=0.1, target=0.0,
                                             max_evaluations=4, decay=0.9, warmup=1, refresh=2,
                                             floor=1e-3, radius=0.1, fd_step=1e-5, spent=0),
        "orbit.orbit_tilt": lambda: dict(A=A, B=B, Sigma=S, M=M, n=6, draws=2, noise_std=0.1,
                                         rng=_rng(), keys="independent"),
        "symbolic.tilting_monte_carlo": lambda: dict(Sigma=S, u=np.array([0.1, 0.2, 0.3]),
                                                     n_samples=100, rng=_rng(), block_size=50),
        "verdicts.verdict": lambda: dict(claim="claim", value=0.5, threshold=1.0,
                                         direction="<=", quantity="q", fmt=".3g"),
        "verdicts.not_testable": lambda: dict(claim="claim", reason="why"),
        "verdicts.interval_verdict": lambda: dict(claim="claim", interval=(-1.5, -1.3),
                                                  threshold=-1.2, quantity="exponent"),
        "verdicts.combine": lambda: dict(claim="claim",
                                         parts=[verdicts.not_testable("a", "b")]),
        "verdicts.verdict_table": lambda: dict(
            rows=[("[summary]", verdicts.not_testable("a", "b"))]),
        "verdicts.status_of_levels": lambda: dict(levels=[2, 1, 0]),
        "verdicts.Verdict.record": lambda: dict(),
        "verdicts.Verdict.from_record": lambda: dict(data=_verdict().record()),
        "verdicts.Measurement.record": lambda: dict(),
        "verdicts.Measurement.earned_level": lambda: dict(),
        "verdicts.Measurement.from_record": lambda: dict(
            data=_verdict().measurements[0].record()),
        "verdicts.VerdictTable.record": lambda: dict(),
        "seeds.stream": lambda: dict(name="start", seed=0),
        "analysis.pad_histories": lambda: dict(curves=[np.ones(3), np.ones(2)], length=4),
        "analysis.seed_summary": lambda: dict(curves=c["curves"], lower=0.25, upper=0.75),
        "analysis.iterations_to_threshold": lambda: dict(curves=c["curves"], threshold=0.25),
        "analysis.format_iterations": lambda: dict(value=12.0, cap=2000),
        "analysis.settling_iteration": lambda: dict(curve=c["curves"][0], rtol=0.1),
        "analysis.balance": lambda: dict(A=A, B=B, Sigma=S),
        "attention.auto_block_size": lambda: dict(n_queries=10, n_keys=10),
        "attention.attention_weights": lambda: dict(B=B, X=X, mask="loo"),
        "attention.attend": lambda: dict(B=B, X=X, mask="loo", block_size=4, workers=1),
        "attention.predict": lambda: dict(A=A, B=B, X=X, mask="all", block_size=4),
        "attention.predict_new": lambda: dict(A=A, B=B, X_context=X, X_query=X[:3],
                                              block_size=2),
        "attention.loss": lambda: dict(A=A, B=B, X=X, Y=Y, mask="loo"),
        "attention.loss_and_grad": lambda: dict(A=A, B=B, X=X, Y=Y, mask="loo",
                                                rows=np.array([0, 3, 5])),
        "attention.deployed_risk": lambda: dict(A=A, B=B, X_context=X, X_test=X[:4],
                                                Y_test=Y[:4]),
        "attention.row_softmax": lambda: dict(logits=X),
        "attention.memorising_escape": lambda: dict(X=X, Y=Y, X_test=X[:4], Y_test=Y[:4],
                                                    scales=np.array([0.1, 1.0])),
        "data.random_rotation": lambda: dict(d=3, rng=_rng()),
        "data.covariance": lambda: dict(d=3, kappa=10.0, rng=_rng()),
        "data.sample_regression": lambda: dict(n=5, Sigma=S, M=M, noise_std=0.1, rng=_rng()),
        "data.RegressionProblem": lambda: dict(Sigma=S, M=M, noise_std=0.1),
        "data.default_problem": lambda: dict(rng=_rng(), d=3, p=2, kappa=10.0, noise_std=0.1),
        "fitting.fit_power_law": lambda: dict(x=np.array([10.0, 20, 40, 80]),
                                              y=np.array([1.0, 0.52, 0.24, 0.13]), level=0.9),
        "fitting.fit_power_law_weighted": lambda: dict(
            x=np.array([10.0, 20, 40, 80]), y=np.array([1.0, 0.52, 0.24, 0.13]),
            stderr=np.array([0.1, 0.05, 0.03, 0.02]), level=0.9),
        "fitting.fit_geometric_rate": lambda: dict(iterations=np.arange(10.0),
                                                   values=0.5 ** np.arange(10.0),
                                                   band=(1e-3, 0.6)),
        "fitting.local_gd_rate": lambda: dict(step=0.1, Sigma=S, M=M, lam=1.0),
        "geometry.minimizer_manifold": lambda: dict(Sigma=S, M=M, rtol=1e-10),
        "geometry.p_inner": lambda: dict(first=(A, B), second=(A, B), Sigma=S),
        "geometry.p_norm": lambda: dict(A=A, B=B, Sigma=S),
        "geometry.one_point_ratios": lambda: dict(A=A, B=B, manifold=mf, lam=1.0,
                                                  geometry="P"),
        "geometry.factor_hessian": lambda: dict(U=c["U"], V=c["V"], Xstar=c["Xstar"], lam=1.0),
        "geometry.minimum_hessian_eigenvalues": lambda: dict(singular_values=sv, p=4, lam=1.0),
        "plotting.use_book_style": lambda: dict(),
        "plotting.figure": lambda: dict(nrows=1, ncols=2, width=3.0, aspect=0.6, height=2.0),
        "plotting.series_style": lambda: dict(name="gd"),
        "plotting.figure_png": lambda: dict(fig=_line_figure()),
        "plotting.png_records": lambda: dict(png=plotting.figure_png(_line_figure())),
        "plotting.smallest_text_px": lambda: dict(fig=_line_figure()),
        "plotting.tilted_orbit_schematic": lambda: dict(
            curves=plotting.TILTED_ORBIT_CURVES[:2], height=4.0, legend_loc="lower right"),
        "schematics.gibbs_schematic": lambda: dict(s=2.0, lam=0.15),
        "schematics.vit_schematic": lambda: dict(
            a_field=c["dataset"].a[0], u_field=c["dataset"].u[0], patch=4, width=4, key_dim=2),
        "schematics.spectral_ball_schematic": lambda: dict(s_min=0.5, r_start=0.2, lam=1.0),
        "schematics.villani_chain_schematic": lambda: dict(),
        "plotting.orbit_schematic": lambda: dict(
            constants=villani.OrbitConstants(a=1.0, b=1.0, q=2.0, k=0.5, dim1=2, dim2=2),
            crossing=villani.OrbitCrossovers(up=3.0, down=2.0),
            regularizer=regularizers.make_regularizer("log", 0.01),
            blocks=("U", "V"), title="t"),
        "plotting.confusable_series": lambda: dict(fig=_line_figure()),
        "plotting.narrow_figure": lambda: dict(fig=_line_figure()),
        "plotting.delta_e": lambda: dict(colour_a="#1f77b4", colour_b="#ff7f0e",
                                         vision="normal vision"),
        "tables.result_table": lambda: dict(columns=["n", "rate"], rows=[[1, 0.5], [2, 0.25]]),
        "tables.ResultTable": lambda: dict(columns=("n",), rows=(("1",),), numeric=(True,)),
        "slider.frame_slider": lambda: dict(draw=lambda a: plt.figure(figsize=(1, 1)),
                                            controls={"a": [1.0, 2.0]}, alt="a = {a:g}"),
        "geometry.gd_contraction_factor": lambda: dict(step=0.1, singular_values=sv, p=4,
                                                       lam=1.0),
        "landscape.normal_direction": lambda: dict(manifold=mf, kind="random", rng=_rng()),
        "landscape.one_point_scan": lambda: dict(manifold=mf, radii=np.array([0.1, 0.2]),
                                                 kind="random", lam=1.0, n_samples=2,
                                                 rng=_rng()),
        "landscape.stationary_point_table": lambda: dict(manifold=mf, lam=1.0, c=2.0,
                                                         zero_tol=1e-9),
        "landscape.condition_sweep": lambda: dict(Xstar=c["Xstar"], kappas=np.array([1.0, 10.0]),
                                                  radius=1e-3, lam=1.0, n_samples=2,
                                                  rng=_rng()),
        "population.spd_sqrt": lambda: dict(Sigma=S),
        "population.to_factor": lambda: dict(A=A, B=B, Sigma=S),
        "population.from_factor": lambda: dict(U=c["U"], V=c["V"], Sigma=S),
        "population.target": lambda: dict(M=M, Sigma=S),
        "population.factor_loss_and_grad": lambda: dict(U=c["U"], V=c["V"], Xstar=c["Xstar"]),
        "population.factor_regularizer_and_grad": lambda: dict(U=c["U"], V=c["V"], lam=1.0),
        "population.population_loss": lambda: dict(A=A, B=B, Sigma=S, M=M, noise_std=0.1),
        "population.population_loss_and_grad": lambda: dict(A=A, B=B, Sigma=S, M=M,
                                                            noise_std=0.1),
        "population.regularizer": lambda: dict(A=A, B=B, Sigma=S, lam=1.0),
        "population.regularizer_and_grad": lambda: dict(A=A, B=B, Sigma=S, lam=1.0),
        "population.objective_and_grad": lambda: dict(A=A, B=B, Sigma=S, M=M, lam=1.0,
                                                      noise_std=0.1),
        "population.empirical_moments": lambda: dict(X=X, Y=Y),
        "population.linear_excess_risk": lambda: dict(M_fit=M, Sigma=S, M=M),
        "population.ols_excess_risk": lambda: dict(n=50, d=3, p=2, noise_std=0.1),
        "algorithm.prompts_loss": lambda: dict(X=X.reshape(2, 6, 3), Y=Y.reshape(2, 6, 4),
                                               mask="loo"),
        "attention.prompts_loss_and_grad": lambda: dict(A=A, B=B, X=X.reshape(2, 6, 3),
                                                        Y=Y.reshape(2, 6, 4), mask="loo"),
        "prompts.sample_prompts": lambda: dict(problem=c["problem"], prompts=2, n=6, rng=_rng(),
                                               whiten=True),
        "prompts.deployed_risk": lambda: dict(A=A, B=B, problem=c["problem"], n=5, rng=_rng(),
                                              prompts=3, queries=4),
        "prompts.context_correction": lambda: dict(U=c["U"], V=c["V"], Xstar=c["Xstar"]),
        "prompts.first_order_minimizer": lambda: dict(Xstar=0.3 * c["Xstar"], m=100.0, lam=1.0,
                                                      gtol=1e-8),
        "prompts.first_order_curve": lambda: dict(Xstar=0.3 * c["Xstar"],
                                                  m_values=np.array([100.0, 1000.0]), lam=1.0),
        "prompts.asymptotic_bias_coefficient": lambda: dict(Xstar=0.3 * c["Xstar"], lam=1.0),
        "prompts.bias_statistic": lambda: dict(deltas=np.arange(12.0).reshape(3, 2, 2)),
        "prompts.local_slopes": lambda: dict(n=np.array([10.0, 100.0]), values=np.array([1.0, 0.1]),
                                             stderr=np.array([0.1, 0.01])),
        "symbolic.ratio_estimator_moments": lambda: dict(d=1),
        "symbolic.matrix_symbols": lambda: dict(name="A", rows=2, cols=2),
        "symbolic.symmetric_symbols": lambda: dict(name="S", d=2),
        "symbolic.lower_triangular_symbols": lambda: dict(name="L", d=2),
        "symbolic.standard_normal_mgf": lambda: dict(),
        "symbolic.gaussian_moment": lambda: dict(k=4),
        "symbolic.gaussian_mgf": lambda: dict(L=symbolic.lower_triangular_symbols("L", 2),
                                              u=symbolic.matrix_symbols("u", 2, 1)),
        "symbolic.mgf_identity": lambda: dict(d=1),
        "symbolic.tilting_ratio": lambda: dict(L=symbolic.lower_triangular_symbols("L", 1),
                                               u=symbolic.matrix_symbols("u", 1, 1)),
        "symbolic.tilting_identity": lambda: dict(d=1),
        "symbolic.tilting_identity_general_d": lambda: dict(),
        "symbolic.gaussian_expectation": lambda: dict(expr=symbolic.sp.Symbol("z0") ** 2,
                                                      variables=[symbolic.sp.Symbol("z0")]),
        "symbolic.attention_limit": lambda: dict(L=symbolic.lower_triangular_symbols("L", 1),
                                                 B=symbolic.matrix_symbols("B", 1, 1),
                                                 x=symbolic.matrix_symbols("x", 1, 1)),
        "symbolic.population_loss_identity": lambda: dict(p=1, d=1),
        "symbolic.factorization_identities": lambda: dict(p=1, d=1),
        "symbolic.symmetry_identities": lambda: dict(p=1, d=1),
        "symbolic.regularizer_identities": lambda: dict(p=1),
        "symbolic.gradient_identities": lambda: dict(p=1, d=1),
        "symbolic.evaluate": lambda: dict(expr=symbolic.sp.Symbol("z") ** 2,
                                          values=[(symbolic.sp.Symbol("z"), 3.0)]),
        "symbolic.finite_context_errors": lambda: dict(problem=c["problem"], A=A, B=B,
                                                       ns=[4, 8], reps=2, n_queries=3,
                                                       rng=_rng()),
        # Part II
        "potentials.quadratic": lambda: dict(theta=np.ones((2, 3)), curvature=1.0),
        "potentials.double_well": lambda: dict(theta=np.ones((2, 1)), tilt=0.2),
        "potentials.double_well_2d": lambda: dict(theta=np.ones((2, 2)), tilt=0.1,
                                                  stiffness=2.0, bend=0.5),
        "potentials.bounded_well": lambda: dict(theta=np.ones((2, 3))),
        "potentials.log_well": lambda: dict(theta=np.ones((2, 3)), alpha=1.0),
        "langevin.euler_maruyama": lambda: dict(loss_and_grad=well, theta0=np.zeros((3, 1)),
                                                step=0.01, temperature=0.5, n_steps=4,
                                                rng=_rng(), record_every=2),
        "langevin.gibbs_z_scores": lambda: dict(
            states=np.random.default_rng(0).standard_normal((12, 20, 1)),
            observables={"x": lambda z: z[..., 0]}, loss_and_grad=well, axes=axes,
            temperature=0.5),
        "langevin.chain_mean": lambda: dict(values=np.arange(6.0).reshape(2, 3)),
        "langevin.tail_mean": lambda: dict(loss=np.arange(12.0).reshape(4, 3), fraction=0.5),
        "langevin.hitting_times": lambda: dict(times=np.arange(5.0),
                                               gap=np.array([1.0, 0.5, 0.2, 0.1, 0.05]),
                                               epsilons=[0.3, 0.06]),
        "langevin.gibbs_density": lambda: dict(loss_and_grad=well, axes=axes, temperature=0.5),
        "langevin.gibbs_bin_probabilities": lambda: dict(loss_and_grad=well, edges=axes,
                                                         temperature=0.5, refine=2),
        "langevin.gibbs_expectation": lambda: dict(loss_and_grad=well, axes=axes,
                                                   temperature=0.5, values=np.ones(9)),
        "langevin.histogram_tv": lambda: dict(samples=np.zeros((4, 1)), edges=axes,
                                              probabilities=np.full(8, 0.125)),
        "langevin.spectral_gap": lambda: dict(loss_and_grad=well, axes=axes, temperature=0.5,
                                              n_eigenvalues=2),
        "langevin.mala": lambda: dict(loss_and_grad=well, theta0=np.zeros((3, 1)), step=0.05,
                                      temperature=0.5, n_steps=4, rng=_rng(), record_every=2,
                                      preconditioner=np.eye(1), adapt_steps=2,
                                      target_acceptance=0.5),
        "langevin.autocorrelation_time": lambda: dict(
            series=np.random.default_rng(0).standard_normal((100, 2)), window_factor=5.0),
        "langevin.gibbs_sample": lambda: dict(loss_and_grad=well, axes=axes, temperature=0.5,
                                              size=5, rng=_rng()),
        "qk_attention.softmax_directional_derivatives": lambda: dict(z=np.array([0.1, 0.5, -0.2]),
                                                                     u=np.array([1.0, 0.0, 2.0])),
        "villani.villani_lower_bound": lambda: dict(t=np.array([1.0, 10.0]), regularizer=c["reg"],
                                                    s=0.5, grad_constant=3.0,
                                                    laplacian_constant=2.0, block_dim=4),
        "villani.lower_bound_log_radius": lambda: dict(regularizer=c["reg"], s=0.5,
                                                       grad_constant=3.0, laplacian_constant=2.0,
                                                       block_dim=4, max_log_t=100.0, precision=20),
        "villani.orbit_crossovers": lambda: dict(consts=c["consts"], regularizer=c["reg"], s=0.1),
        "villani.every_direction_check": lambda: dict(
            problem=c["lora"], points=np.ones((2, c["lora"].dim)),
            regularizers=[("log", c["reg"])], temperatures=[1.0], grad_constant=3.0,
            laplacian_constant=2.0),
        "villani.orbit_villani_scaled": lambda: dict(consts=c["consts"], regularizer=c["reg"],
                                                     s=0.1, log_rho=np.array([0.0, 5.0]),
                                                     precision=20),
        "regularizers.Regularizer": lambda: dict(name="log", lam=0.1, eps=0.5),
        "regularizers.make_regularizer": lambda: dict(name="power", lam=0.1, eps=0.5),
        "qk_attention.AttentionProblem": lambda: dict(X=qa.X, Y=qa.Y, W_V=qa.W_V, d_k=qa.d_k),
        "qk_attention.make_problem": lambda: dict(rng=_rng(), n=4, N=3, d=2, d_k=2,
                                                  noise_std=0.5, teacher_scale=1.0),
        "lora.LoRAProblem": lambda: dict(x=lp.x, y=lp.y, a=lp.a, W_pre=lp.W_pre, rank=lp.rank),
        "lora.make_problem": lambda: dict(rng=_rng(), n=6, d=2, width=4, rank=1, noise_std=0.1,
                                          update_scale=1.0),
        "villani.villani_quantity": lambda: dict(problem=qa, theta=c["theta_star"], s=0.1),
        "villani.minimize_data_loss": lambda: dict(problem=qa, theta0=qa.theta_teacher,
                                                   gtol=1e-8, max_iter=200),
        "villani.orbit_constants": lambda: dict(problem=qa, theta_star=c["theta_star"]),
        "villani.orbit_points": lambda: dict(problem=qa, theta_star=c["theta_star"],
                                             log_rho=np.array([-1.0, 0.0, 1.0])),
        "villani.orbit_villani_over_rho2": lambda: dict(consts=c["consts"], regularizer=c["reg"],
                                                        s=0.1, log_rho=np.array([0.0, 5.0]),
                                                        precision=20),
        "villani.crossover_log_radius": lambda: dict(consts=c["consts"], regularizer=c["reg"],
                                                     s=0.1, max_log_rho=100.0, precision=20),
        "villani.asymptotic_crossover_log_radius": lambda: dict(consts=c["consts"],
                                                                regularizer=c["reg"], s=0.1),
        "villani.weight_decay_threshold": lambda: dict(consts=c["consts"], lam=0.1),
        "villani.radial_log_partition": lambda: dict(problem=qa, s=0.5,
                                                     radii=np.array([0.0, 1.0, 2.0]),
                                                     n_directions=2, rng=_rng()),
        "darcy.grf_spectrum": lambda: dict(size=4, alpha=2.0, tau=3.0),
        "darcy.sample_grf": lambda: dict(size=4, count=2, rng=_rng(), alpha=2.0, tau=3.0),
        "darcy.threshold": lambda: dict(g=c["dataset"].a - 5.0, a_plus=12.0, a_minus=3.0),
        "darcy.assemble_operator": lambda: dict(a=c["dataset"].a[0]),
        "darcy.flux_residual": lambda: dict(a=c["dataset"].a[0], u=c["dataset"].u[0], f=1.0),
        "darcy.solve": lambda: dict(a=c["dataset"].a[0], f=1.0),
        "darcy.poisson_series": lambda: dict(x=np.array([0.3, 0.5]), y=np.array([0.5, 0.5]),
                                             a=1.0, terms=21),
        "darcy.generate": lambda: dict(count=1, size=5, seed=0, alpha=2.0, tau=3.0,
                                       a_plus=12.0, a_minus=3.0),
        "darcy.save": lambda: dict(dataset=c["dataset"], path=tmp / "out.npz"),
        "darcy.load": lambda: dict(path=_darcy_file(tmp)),
        "vit.ViTConfig": lambda: dict(size=8, patch=4, width=4, key_dim=2, hidden=0),
        "vit.Standardizer": lambda: dict(mean=0.5, std=2.0),
        "vit.patchify": lambda: dict(fields=c["dataset"].a, patch=4),
        "vit.unpatchify": lambda: dict(patches=c["patches"], patch=4),
        "vit.init_params": lambda: dict(config=c["config"], rng=_rng()),
        "vit.forward": lambda: dict(params=c["params"], patches=c["patches"]),
        "vit.loss_and_gradients": lambda: dict(params=c["params"], patches=c["patches"],
                                               targets=c["targets"]),
        "vit.predict_fields": lambda: dict(params=c["params"], fields=c["dataset"].a, patch=4,
                                           batch_size=2),
        "vit.field_metrics": lambda: dict(predicted=c["dataset"].u, true=c["dataset"].u + 0.1),
        "vit.train": lambda: dict(params=c["params"], patches=c["patches"],
                                  targets=c["targets"], epochs=1, batch_size=2, lr=1e-3,
                                  rng=_rng(), optimizer="adam", adam_eps=1e-8),
        "optim.check_betas": lambda: dict(betas=(0.9, 0.999)),
        "optim.apply_updates": lambda: dict(params=(np.ones(3),), updates=(np.ones(3),)),
        "claims.chapter_modules": lambda: dict(),
        "claims.registry": lambda: dict(),
        "claims.text": lambda: dict(claim_id=next(iter(claims.registry()), "none")),
        # stored runs
        "experiments.register": lambda: dict(name="fuzz_registered",
                                             settings=experiments.settings("scaling")),
        "experiments.settings": lambda: dict(name="scaling"),
        "experiments.settings_config": lambda: dict(settings=experiments.settings("scaling")),
        "experiments.check_name": lambda: dict(name="fuzz_run"),
        "experiments.run": lambda: dict(name="fuzz_tiny", full=False),
        "experiments.manifest": lambda: dict(history={"loss": np.arange(3.0)}),
        "experiments.save": lambda: dict(name=_stored(tmp), history={"loss": np.arange(3.0)}),
        "experiments.load": lambda: dict(name=_stored(tmp)),
        "experiments.add_manifest": lambda: dict(name=_stored(tmp)),
        "experiments.stored_names": lambda: dict(),
        "experiments.stored_files": lambda: dict(),
        "experiments.check_writable": lambda: dict(),
        "experiments.registry": lambda: dict(),
        "experiments.assert_prefix_matches": lambda: dict(
            stored={"loss": np.arange(5.0)}, replayed={"loss": np.arange(3.0)}, rtol=1e-8,
            atol=0.0),
        "experiments.describe": lambda: dict(name=_stored(tmp)),
        "experiments.replay": lambda: dict(name=_stored(tmp), keys=["loss"], rtol=1e-8, atol=0.0,
                                           absolute={"loss": 1e-12}, prefix={"loss": np.arange(2.0)}),
        "experiments.leading_block": lambda: dict(stored={"loss": np.arange(3.0)},
                                                  prefix={"loss": np.arange(2.0)}),
        "experiments.cell": lambda: dict(),
        "experiments.config": lambda: dict(source=_stored(tmp)),
        "experiments.format_deviation": lambda: dict(value=1e-3, resolution=1e-12),
        "experiments.measured_spread": lambda: dict(name="paper1_defaults"),
        "experiments.benchmark_path": lambda: dict(name="attention"),
        "experiments.load_benchmark": lambda: dict(name=_benchmark(tmp)),
        "experiments.register_grid": lambda: dict(name="fuzz_grid_registered",
                                                  settings=experiments.settings("scaling")),
        "experiments.task_grid": lambda: dict(name="fuzz_tiny", full=False),
        "experiments.TaskGrid": lambda: dict(tasks=[(1,), (2,)], task=_grid_task,
                                             assemble=merge_tasks),
        "experiments.run_grid": lambda: dict(
            grid=experiments.TaskGrid([(1,), (2,)], _grid_task, merge_tasks), workers=1),
        "attention.limit_blas_threads": lambda: dict(threads=1),
        "sweep.run_sweep": lambda: dict(task=_sweep_task, axes={"value": [1, 2]}, workers=1),
        "sweep.run_tasks": lambda: dict(task=_grid_task, arguments=[(1,), (2,)], workers=1),
        "sweep.check_workers": lambda: dict(workers=2),
        "sweep.require_distributed": lambda: dict(),
        "sweep.Sweep.records": lambda: dict(),
        "algorithm.Custom": lambda: dict(make=_scale_step, step_scale=0.5, step=0.1),
        "algorithm.Custom.eta": lambda: dict(default_step=_step_rule),
        "algorithm.Custom.transform": lambda: dict(eta=0.1),
        "algorithm.DataLoss.identity": lambda: dict(lam=1.0, regularizer="balancing"),
        "algorithm.reference_optimum": lambda: dict(
            data=algorithm.closed_form_loss(S, M), method=algorithm.METHODS["algorithm1"],
            start=mf.point(), gtol=1e-8, hessian=False),
        "optim.add_decayed_weights": lambda: dict(weight_decay=0.1),
        "optim.from_optax": lambda: dict(transformation=_OptaxLike()),
        "reference.ObjectiveIdentity.describe": lambda: dict(),
        "reference.ObjectiveIdentity.to_dict": lambda: dict(),
        "runs.save": lambda: dict(run=_small_run(), path=tmp / "saved.npz"),
        "runs.load": lambda: dict(path=_saved_run(tmp)),
        "runs.SavedRun.save": lambda: dict(path=tmp / "method.npz"),
        "runs.SavedRun.load": lambda: dict(path=_saved_run(tmp)),
        "runs.SavedRun.to_dict": lambda: dict(),
        "langevin.split_rhat": lambda: dict(
            series=np.random.default_rng(0).standard_normal((40, 2)), rank_normalized=False),
        "langevin.effective_sample_size": lambda: dict(
            series=np.random.default_rng(0).standard_normal((40, 2)), rank_normalized=False),
        "population.effective_map": lambda: dict(A=A, B=B, Sigma=S),
        "qk_attention.AttentionProblem.query_key_product": lambda: dict(theta=c["theta_star"]),
        "sweep.Sweep.to_frame": lambda: dict(),
        "sweep.Sweep.array": lambda: dict(key="square"),
        # public methods (called on INSTANCES[module.Class])
        "algorithm.GD.transform": lambda: dict(eta=0.1),
        "algorithm.GD.eta": lambda: dict(default_step=_step_rule),
        "algorithm.Momentum.eta": lambda: dict(default_step=_step_rule),
        "algorithm.Adam.eta": lambda: dict(default_step=_step_rule),
        "algorithm.Momentum.transform": lambda: dict(eta=0.1),
        "algorithm.Adam.transform": lambda: dict(eta=0.1),
        "algorithm.Method.describe": lambda: dict(),
        "algorithm.DataLoss.objective": lambda: dict(lam=1.0),
        "algorithm.DataLoss.reference_objective": lambda: dict(lam=1.0),
        "bridge.Potential.mild_value": lambda: dict(theta=bridge.flatten(A, B)),
        "bridge.Potential.reference_objective": lambda: dict(),
        "data.RegressionProblem.sample": lambda: dict(n=5, rng=_rng()),
        "geometry.MinimizerManifold.factor": lambda: dict(A=A, B=B),
        "geometry.MinimizerManifold.unfactor": lambda: dict(U=c["U"], V=c["V"]),
        "geometry.MinimizerManifold.point": lambda: dict(O=np.eye(3)),
        "geometry.MinimizerManifold.project": lambda: dict(A=A, B=B),
        "geometry.MinimizerManifold.distance": lambda: dict(A=A, B=B),
        "geometry.MinimizerManifold.symmetry_normal_direction": lambda: dict(K=np.eye(3)),
        "geometry.MinimizerManifold.balanced_svd_point": lambda: dict(
            keep=np.array([True, False, True])),
        "landscape.OnePointScan.alpha": lambda: dict(geometry="P"),
        "landscape.OnePointScan.beta": lambda: dict(geometry="P"),
        "landscape.OnePointScan.failure_radius": lambda: dict(geometry="P", threshold=0.0),
        "landscape.StationaryPoint.n_negative": lambda: dict(which="Q"),
        "landscape.StationaryPoint.n_zero": lambda: dict(which="Q"),
        "lora.LoRAProblem.predict": lambda: dict(theta=np.zeros(lp.dim)),
        "lora.LoRAProblem.derivative_constants": lambda: dict(),
        "lora.LoRAProblem.svd_factorization": lambda: dict(
            theta=np.random.default_rng(0).standard_normal(lp.dim), alpha=0.5),
        "lora.LoRAProblem.act": lambda: dict(theta=np.zeros(lp.dim), G=np.eye(lp.rank)),
        "qk_attention.AttentionProblem.predict": lambda: dict(theta=c["theta_star"]),
        "qk_attention.AttentionProblem.derivative_constants": lambda: dict(),
        "qk_attention.AttentionProblem.act": lambda: dict(theta=c["theta_star"],
                                                          G=np.eye(qa.d_k)),
        "reference.ReferenceOptimum.gap": lambda: dict(values=np.array([1.0, 2.0])),
        "regularizers.Regularizer.g": lambda: dict(t=np.array([0.5, 2.0])),
        "regularizers.Regularizer.dg": lambda: dict(t=np.array([0.5, 2.0])),
        "regularizers.Regularizer.d2g": lambda: dict(t=np.array([0.5, 2.0])),
        "regularizers.Regularizer.t_d2g": lambda: dict(t=np.array([0.5, 2.0])),
        "regularizers.Regularizer.value_t": lambda: dict(t=np.array([0.5, 2.0])),
        "regularizers.Regularizer.grad_sq_t": lambda: dict(t=np.array([0.5, 2.0])),
        "regularizers.Regularizer.laplacian_t": lambda: dict(t=np.array([0.5, 2.0]), dim=4),
        "regularizers.Regularizer.value": lambda: dict(W=A, batch_ndim=0),
        "regularizers.Regularizer.gradient": lambda: dict(W=A, batch_ndim=0),
        "regularizers.Regularizer.laplacian": lambda: dict(W=A, batch_ndim=0),
        "slider.FrameSlider.frame": lambda: dict(a=1.0),
        "slider.FrameSlider.to_html": lambda: dict(),
        "slider.FrameSlider.widget": lambda: dict(),
        "symbolic.Identity.difference": lambda: dict(),
        "symbolic.Identity.holds": lambda: dict(),
        "symbolic.Identity.assert_holds": lambda: dict(),
        "symbolic.TiltingMonteCarlo.z_scores": lambda: dict(mgf=1.5,
                                                            tilted_mean=np.array([0.1, 0.2, 0.3])),
        "villani.FactorizedLoss.act": lambda: dict(theta=c["theta_star"], G=np.eye(qa.d_k)),
        "villani.FactorizedLoss.pack": lambda: dict(W1=qa.unpack(c["theta_star"])[0],
                                                    W2=qa.unpack(c["theta_star"])[1]),
        "villani.FactorizedLoss.unpack": lambda: dict(theta=c["theta_star"]),
        "villani.FactorizedLoss.with_regularizer": lambda: dict(regularizer=c["reg"]),
        "villani.FactorizedLoss.loss_and_grad_flat": lambda: dict(theta=c["theta_star"][None]),
        "villani.FactorizedLoss.loss": lambda: dict(theta=c["theta_star"]),
        "villani.FactorizedLoss.gradient": lambda: dict(theta=c["theta_star"]),
        "villani.FactorizedLoss.data_loss": lambda: dict(theta=c["theta_star"]),
        "villani.FactorizedLoss.second_derivative": lambda: dict(
            theta=c["theta_star"], directions=np.eye(qa.dim)[:2]),
        "villani.FactorizedLoss.data_laplacian_blocks": lambda: dict(theta=c["theta_star"],
                                                                     chunk=8),
        "villani.FactorizedLoss.regularizer_laplacian": lambda: dict(theta=c["theta_star"]),
        "villani.FactorizedLoss.laplacian": lambda: dict(theta=c["theta_star"]),
        "villani.FactorizedLoss.hutchinson_laplacian": lambda: dict(theta=c["theta_star"],
                                                                    rng=_rng(), n_probes=4),
        "villani.OrbitConstants.swapped": lambda: dict(),
        "vit.Standardizer.fit": lambda: dict(data=c["dataset"].a),
        "vit.Standardizer.encode": lambda: dict(x=c["dataset"].a),
        "vit.Standardizer.decode": lambda: dict(z=c["dataset"].a),
    }


_COLLECTION_STORE = Path(tempfile.mkdtemp(prefix="attnlib-fuzz-"))
EXAMPLES = examples(_COLLECTION_STORE)   # each test rebuilds its call in its own tmp_path

# ------------------------------------------------------------------------- bad values
#: Valid-looking extreme values (1e300, 1e308, 5e-324, 0, an array times 1e200 or with a
#: subnormal entry, all zeros): the call must raise an error naming the argument or return
#: finite numbers, never a silent inf or NaN.
EXTREME_CASES = {"huge", "edge", "tiny", "zero", "subnormal", "zeros"}
#: The valid value in another memory layout: the call must return what it returns for the
#: C-contiguous copy (or raise an error naming the argument), and never write into it.
LAYOUT_CASES = {"fortran", "strided", "read_only"}
#: The "huge" integer: a size, count, number of steps or digits that would allocate or run
#: for hours; it must give an error naming the argument at once (or be in ACCEPTED).
HUGE_COUNT = 10 ** 9
SUBNORMAL = 5e-324


def _strided(value: np.ndarray) -> np.ndarray:
    """``value`` as a view with every other element of a twice larger array on each axis."""
    every_other = tuple(slice(None, None, 2) for _ in range(value.ndim))
    backing = np.zeros(tuple(2 * n for n in value.shape), dtype=value.dtype)
    backing[every_other] = value
    return backing[every_other]


def _c_copy(value: np.ndarray) -> np.ndarray:
    return np.array(value, order="C")


def _read_only(value: np.ndarray) -> np.ndarray:
    frozen = value.copy()
    frozen.flags.writeable = False
    return frozen


#: case -> the same numbers in another memory layout (:data:`LAYOUT_CASES`).
_LAYOUTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "fortran": np.asfortranarray, "strided": _strided, "read_only": _read_only}


def _is_numeric_array(item: Any) -> bool:
    return isinstance(item, np.ndarray) and item.dtype.kind in "biuf"


def _numeric_arrays(value: Any) -> list[np.ndarray]:
    """The numeric arrays that ``value`` is or holds (one level of tuple, list or dict)."""
    items = (value.values() if isinstance(value, dict) else
             value if isinstance(value, (tuple, list)) else [value])
    return [item for item in items if _is_numeric_array(item)]


def _map_arrays(convert: Callable[[np.ndarray], np.ndarray], value: Any) -> Any:
    """``value`` with ``convert`` applied to each numeric array it is or holds (one level of
    tuple, list or dict)."""
    def apply(item: Any) -> Any:
        return convert(item) if _is_numeric_array(item) else item

    if isinstance(value, dict):
        return {key: apply(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return type(value)(apply(item) for item in value)
    return apply(value)


def layouts(value: Any) -> Iterator[tuple[str, Any]]:
    """The arrays of ``value`` (an array, or a tuple, list or dict of them) in Fortran order and
    as strided views (where these differ from C order) and read-only: the same numbers in the
    memory layouts a caller may pass."""
    for case, convert in _LAYOUTS.items():
        converted = _map_arrays(convert, value)
        if case == "read_only" or not all(array.flags.c_contiguous
                                          for array in _numeric_arrays(converted)):
            yield case, converted


def bad_values(value: Any, default: Any) -> Iterator[tuple[str, Any]]:
    """(case, bad value) pairs for one argument, by the type of its valid ``value``."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        floating = value.astype(float)
        if value.size:
            for case, entry in (("nan", np.nan), ("inf", np.inf), ("neg_inf", -np.inf),
                                ("subnormal", SUBNORMAL)):
                bad = floating.copy()
                bad.flat[0] = entry
                yield case, bad
            obj = value.astype(object)
            obj.flat[0] = None
            yield "object", obj
        if value.size and np.any(value):
            yield "zeros", np.zeros_like(value)
            if value.dtype.kind == "f":
                yield "huge", value * 1e200
        yield from layouts(value)
        yield "complex", value + 1j
        yield "string", value.astype(str)
        yield "empty", np.zeros((0,) + value.shape[1:])
        yield "extra_axis", value[None]
        yield "missing_axis", value.ravel()[0] if value.ndim == 1 else value.ravel()
    elif isinstance(value, (np.ndarray, tuple, list, dict)):
        if _numeric_arrays(value):
            yield from layouts(value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, (int, np.integer)):
        yield from (("nan", math.nan), ("inf", math.inf), ("neg_inf", -math.inf),
                    ("not_integer", value + 0.5), ("negative", -3), ("string", str(value)),
                    ("complex", complex(value, 1)), ("huge", HUGE_COUNT))
        if value != 0:
            yield "zero", 0
        if default is not None:
            yield "none", None
    elif isinstance(value, (float, np.floating)):
        yield from (("nan", math.nan), ("inf", math.inf), ("neg_inf", -math.inf),
                    ("negative", -1.0), ("tiny", SUBNORMAL), ("complex", complex(value, 1)),
                    ("string", str(value)))
        if value != 0:
            yield "zero", 0.0
        if value > 0:
            yield from (("huge", 1e300), ("edge", 1e308))
        if default is not None:
            yield "none", None
    elif isinstance(value, str):
        yield "unknown_option", "no_such_option"
    elif isinstance(value, np.random.Generator):
        yield "not_generator", 0


_ANY_AXES = "any number of axes is valid"
_CAPPED = "a block larger than the data is the whole data: no more work or memory"
_IN_FORMULA = "only a number in a closed form: 10^9 costs nothing"
_OFFSET = "an offset added to the recorded evaluation counts: no work"
_NEW_NAME = "any new name is valid"
_BATCH_AXES = "leading axes index a batch (chains)"
#: (callable, argument, case) -> why the value is valid (the call must then not return NaN).
ACCEPTED: dict[tuple[str, str, str], str] = {
    ("qk_attention.AttentionProblem.query_key_product", "theta", "extra_axis"): _BATCH_AXES,
    ("seeds.stream", "seed", "huge"): "any non-negative integer seeds a stream: no work",
    # 10^9 as a size that costs nothing (case "huge" of an integer)
    ("algorithm.Method", "batch_size", "huge"): "checked against the data's query rows by "
                                                "train (an error naming method.batch_size)",
    ("algorithm.train", "test_every", "huge"): "an interval beyond the run tests at the last "
                                               "iteration only",
    ("analysis.format_iterations", "cap", "huge"): "a display cap: no work",
    ("attention.attend", "block_size", "huge"): _CAPPED,
    ("attention.predict", "block_size", "huge"): _CAPPED,
    ("attention.predict_new", "block_size", "huge"): _CAPPED,
    ("attention.auto_block_size", "n_queries", "huge"): "arithmetic on the sizes: no work",
    ("attention.auto_block_size", "n_keys", "huge"): "arithmetic on the sizes: no work",
    ("darcy.generate", "seed", "huge"): "any seed is valid",
    ("orbit.lbfgs", "spent", "huge"): _OFFSET,
    ("orbit.newton_polish", "spent", "huge"): _OFFSET,
    ("orbit.orbit_nesterov", "spent", "huge"): _OFFSET,
    ("orbit.orbit_nesterov", "warmup", "huge"): "counts iterations: max_evaluations bounds them",
    ("orbit.orbit_nesterov", "refresh", "huge"): "counts iterations: max_evaluations bounds them",
    ("population.ols_excess_risk", "n", "huge"): _IN_FORMULA,
    ("population.ols_excess_risk", "p", "huge"): _IN_FORMULA,
    ("regularizers.Regularizer.laplacian_t", "dim", "huge"): _IN_FORMULA,
    ("villani.lower_bound_log_radius", "block_dim", "huge"): _IN_FORMULA,
    ("villani.villani_lower_bound", "block_dim", "huge"): _IN_FORMULA,
    ("symbolic.tilting_monte_carlo", "block_size", "huge"): _CAPPED,
    ("villani.FactorizedLoss.data_laplacian_blocks", "chunk", "huge"): _CAPPED,
    ("vit.predict_fields", "batch_size", "huge"): _CAPPED,
    ("vit.train", "batch_size", "huge"): _CAPPED,
    **{(f"orbit.{fn}", "target", case): why for fn in ("lbfgs", "newton_polish", "orbit_nesterov")
       for case, why in (("negative", "any value of the objective is a target"),
                         ("inf", "+inf: stop at the first iterate"),
                         ("neg_inf", "-inf: never reached, max_evaluations stops the run"))},
    ("plotting.orbit_schematic", "title", "unknown_option"): "any text is a title",
    ("attention.row_softmax", "logits", "inf"): "+inf logits share the weight (the limit)",
    ("attention.row_softmax", "logits", "neg_inf"): "a -inf logit gets weight 0 (documented)",
    ("attention.row_softmax", "logits", "extra_axis"): _ANY_AXES,
    ("bridge.excess_risks", "theta", "extra_axis"): "one or two leading (batch) axes",
    ("bridge.excess_risks", "theta", "missing_axis"): "a single parameter vector",
    ("bridge.unflatten", "theta", "extra_axis"): "one or two leading (batch) axes",
    ("attention.row_softmax", "logits", "missing_axis"): _ANY_AXES,
    ("darcy.threshold", "g", "extra_axis"): _ANY_AXES,
    ("darcy.threshold", "g", "missing_axis"): _ANY_AXES,
    ("darcy.poisson_series", "x", "extra_axis"): "x and y broadcast",
    ("darcy.poisson_series", "x", "missing_axis"): "a scalar point is valid",
    ("darcy.poisson_series", "y", "extra_axis"): "x and y broadcast",
    ("darcy.poisson_series", "y", "missing_axis"): "a scalar point is valid",
    ("darcy.flux_residual", "f", "negative"): "any real source term",
    ("darcy.solve", "f", "negative"): "any real source term",
    ("langevin.chain_mean", "values", "extra_axis"): "leading axes are free",
    ("langevin.chain_mean", "values", "missing_axis"): "one value per chain is valid",
    ("analysis.format_iterations", "value", "inf"): "inf means 'not reached' (documented)",
    ("optim.scale", "factor", "negative"): "scale(-lr) is the descent step",
    ("verdicts.verdict", "value", "nan"): "NaN gives 'not testable' (documented)",
    ("verdicts.verdict", "value", "inf"): "an infinite measurement compares with the threshold",
    ("verdicts.verdict", "value", "neg_inf"): "an infinite measurement compares with the "
                                              "threshold",
    ("verdicts.verdict", "value", "negative"): "measurements have either sign",
    ("verdicts.verdict", "threshold", "negative"): "thresholds have either sign",
    ("verdicts.verdict", "claim", "unknown_option"): "free text",
    ("verdicts.verdict", "quantity", "unknown_option"): "free text",
    ("verdicts.not_testable", "claim", "unknown_option"): "free text",
    ("verdicts.not_testable", "reason", "unknown_option"): "free text",
    ("verdicts.combine", "claim", "unknown_option"): "free text",
    ("verdicts.interval_verdict", "threshold", "negative"): "thresholds have either sign",
    ("verdicts.interval_verdict", "claim", "unknown_option"): "free text",
    ("verdicts.interval_verdict", "quantity", "unknown_option"): "free text",
    ("slider.frame_slider", "alt", "unknown_option"): "free text (a format template)",
    ("analysis.seed_summary", "curves", "nan"): "NaN marks a diverged run: ignored",
    ("analysis.seed_summary", "curves", "inf"): "non-finite entries are ignored",
    ("analysis.seed_summary", "curves", "neg_inf"): "non-finite entries are ignored",
    ("analysis.iterations_to_threshold", "curves", "nan"): "NaN never counts as reached",
    ("analysis.iterations_to_threshold", "curves", "inf"): "inf never counts as reached",
    ("analysis.iterations_to_threshold", "curves", "neg_inf"): "-inf never counts as reached",
    ("analysis.iterations_to_threshold", "curves", "extra_axis"): _ANY_AXES,
    ("analysis.iterations_to_threshold", "curves", "missing_axis"): "one history is valid",
    ("potentials.double_well", "tilt", "negative"): "the tilt has either sign",
    ("potentials.double_well_2d", "tilt", "negative"): "the tilt has either sign",
    ("potentials.double_well_2d", "bend", "negative"): "the valley bends either way",
    ("vit.Standardizer", "mean", "negative"): "a mean has either sign",
    ("vit.field_metrics", "predicted", "extra_axis"): "fields of any number of axes",
    ("vit.field_metrics", "true", "extra_axis"): "fields of any number of axes",
    ("villani.orbit_points", "log_rho", "missing_axis"): "a single log rho is valid",
    ("villani.orbit_villani_over_rho2", "log_rho", "missing_axis"): "a single log rho is valid",
    ("villani.orbit_villani_scaled", "log_rho", "missing_axis"): "a single log rho is valid",
    ("villani.villani_lower_bound", "t", "extra_axis"): _ANY_AXES,
    ("villani.villani_lower_bound", "t", "missing_axis"): "a single t is valid",
    ("symbolic.matrix_symbols", "name", "unknown_option"): _NEW_NAME,
    ("symbolic.symmetric_symbols", "name", "unknown_option"): _NEW_NAME,
    ("symbolic.lower_triangular_symbols", "name", "unknown_option"): _NEW_NAME,
    ("experiments.register", "name", "unknown_option"): _NEW_NAME,
    ("experiments.register_grid", "name", "unknown_option"): _NEW_NAME,
    ("experiments.check_name", "name", "unknown_option"): _NEW_NAME,
    ("experiments.save", "name", "unknown_option"): _NEW_NAME,
    ("experiments.benchmark_path", "name", "unknown_option"): _NEW_NAME,
    **{("reference.ReferenceOptimum.gap", "values", case): _ANY_AXES
       for case in ("extra_axis", "missing_axis")},
    **{(f"regularizers.Regularizer.{method}", arg, case): _ANY_AXES
       for method, arg in [("g", "t"), ("dg", "t"), ("d2g", "t"), ("t_d2g", "t"),
                           ("value_t", "t"), ("grad_sq_t", "t"), ("laplacian_t", "t"),
                           ("value", "W"), ("gradient", "W"), ("laplacian", "W")]
       for case in ("extra_axis", "missing_axis")},
    **{(f"vit.Standardizer.{method}", arg, case): _ANY_AXES
       for method, arg in [("fit", "data"), ("encode", "x"), ("decode", "z")]
       for case in ("extra_axis", "missing_axis")},
    **{(qualname, "theta", "extra_axis"): _BATCH_AXES
       for qualname in ["bridge.Potential.mild_value", "lora.LoRAProblem.act",
                        "lora.LoRAProblem.predict", "qk_attention.AttentionProblem.act",
                        "qk_attention.AttentionProblem.predict", "villani.FactorizedLoss.act",
                        "villani.FactorizedLoss.data_loss", "villani.FactorizedLoss.gradient",
                        "villani.FactorizedLoss.loss", "villani.FactorizedLoss.unpack"]},
}

#: Arguments for which NaN passes through by design (checked by the caller, documented).
_NEVER = "inf or NaN is the documented answer 'never reached' (the extreme value makes it so)"
_NO_ROOT = ("+-inf is the documented answer: the quantity never turns positive, or is positive on "
            "the whole scan (the extreme value makes it so)")
_LOG_Z0 = "log Z_R = -inf at R = 0 is part of every answer (documented)"
NAN_PASSES_THROUGH = {
    ("analysis.iterations_to_threshold", "curves", "huge"): _NEVER,
    ("analysis.iterations_to_threshold", "threshold", "tiny"): _NEVER,
    ("analysis.iterations_to_threshold", "threshold", "zero"): _NEVER,
    ("langevin.hitting_times", "gap", "huge"): _NEVER,
    ("villani.crossover_log_radius", "s", "huge"): _NO_ROOT,
    ("villani.crossover_log_radius", "s", "edge"): _NO_ROOT,
    ("villani.crossover_log_radius", "s", "tiny"): _NO_ROOT,
    ("villani.crossover_log_radius", "max_log_rho", "tiny"): _NO_ROOT,
    ("villani.orbit_crossovers", "s", "huge"): _NO_ROOT,
    ("villani.orbit_crossovers", "s", "edge"): _NO_ROOT,
    ("villani.orbit_crossovers", "s", "tiny"): _NO_ROOT,
    ("villani.lower_bound_log_radius", "s", "huge"): _NO_ROOT,
    ("villani.lower_bound_log_radius", "grad_constant", "huge"): _NO_ROOT,
    ("villani.lower_bound_log_radius", "laplacian_constant", "huge"): _NO_ROOT,
    ("villani.lower_bound_log_radius", "s", "edge"): _NO_ROOT,
    ("villani.lower_bound_log_radius", "grad_constant", "edge"): _NO_ROOT,
    ("villani.lower_bound_log_radius", "laplacian_constant", "edge"): _NO_ROOT,
    ("villani.lower_bound_log_radius", "max_log_t", "tiny"): _NO_ROOT,
    ("villani.radial_log_partition", "s", "huge"): _LOG_Z0,
    ("villani.radial_log_partition", "s", "edge"): _LOG_Z0,
    ("villani.radial_log_partition", "s", "tiny"): _LOG_Z0,
    **{("landscape.OnePointScan.failure_radius", "threshold", case):
       "alpha ratios have either sign; NaN means no radius failed (documented)"
       for case in ("negative", "tiny")},
    ("reference.ReferenceOptimum.gap", "values", "nan"): "NaN in a history means 'no value "
                                                         "here' (documented)",
    ("reference.ReferenceOptimum.gap", "values", "inf"): "the gap of an infinite value is "
                                                         "infinite (documented)",
}

#: (callable, argument, case) -> the documented exception (other than ValueError/TypeError).
DOCUMENTED_ERRORS: dict[tuple[str, str, str], type[BaseException]] = {
    ("experiments.run", "name", "unknown_option"): KeyError,
    ("experiments.task_grid", "name", "unknown_option"): KeyError,
    ("experiments.settings", "name", "unknown_option"): KeyError,
    ("experiments.load", "name", "unknown_option"): FileNotFoundError,
    ("experiments.load_benchmark", "name", "unknown_option"): FileNotFoundError,
    ("experiments.describe", "name", "unknown_option"): FileNotFoundError,
    ("experiments.replay", "name", "unknown_option"): FileNotFoundError,
    ("experiments.config", "source", "unknown_option"): FileNotFoundError,
    ("experiments.add_manifest", "name", "unknown_option"): FileNotFoundError,
}

#: (callable, argument, case) -> what goes wrong today (xfail, strict: remove when fixed).
#: Empty: every extreme valid-looking value (0, 1e300, 5e-324, input times 1e200) gives a
#: finite result, an error naming it, or a documented infinite answer (NAN_PASSES_THROUGH),
#: and every memory layout gives the C-contiguous result.
KNOWN_FAILURES: dict[tuple[str, str, str], str] = {}


def _signature_defaults(fn: Callable) -> dict[str, Any]:
    target = fn.__init__ if inspect.isclass(fn) and not dataclasses.is_dataclass(fn) else fn
    return {name: (None if p.default is inspect.Parameter.empty else p.default)
            for name, p in inspect.signature(target).parameters.items()}


def _resolve(qualname: str) -> Callable:
    """The function or class ``module.name``, or the bound method ``module.Class.method`` of
    a fresh instance from :data:`INSTANCES`."""
    module, name, *method = qualname.split(".")
    if method:
        return getattr(INSTANCES[f"{module}.{name}"](), method[0])
    package = "attnbook" if module.split(".")[0] in BOOK_MODULES else "attnlib"
    return getattr(importlib.import_module(f"{package}.{module}"), name)


def cases() -> list[Any]:
    params = []
    for qualname, build in sorted(EXAMPLES.items()):
        defaults = _signature_defaults(_resolve(qualname))
        for arg, value in build().items():
            for case, _ in bad_values(value, defaults.get(arg, value)):
                key = (qualname, arg, case)
                marks = ([pytest.mark.xfail(reason=KNOWN_FAILURES[key], strict=True)]
                         if key in KNOWN_FAILURES else [])
                params.append(pytest.param(*key, id="-".join(key), marks=marks))
    return params


def names_argument(message: str, arg: str) -> bool:
    """True when ``message`` names ``arg`` as the subject of a complaint or quotes it."""
    word = re.escape(arg)
    pattern = (rf"(?<![\w.]){word}(\[[^\]]*\])?(\s*\([^)]*\))?"
               rf"(\s+(must|has|have|contains|is|needs|should|got)\b|\s*[=:])"
               rf"|['`\"]{word}['`\"]")
    return re.search(pattern, message) is not None


def _has_nan(result: Any) -> bool:
    if dataclasses.is_dataclass(result) and not isinstance(result, type):
        return any(_has_nan(getattr(result, f.name)) for f in dataclasses.fields(result))
    if isinstance(result, dict):
        return any(_has_nan(v) for v in result.values())
    if isinstance(result, (tuple, list)):
        return any(_has_nan(v) for v in result)
    if isinstance(result, (float, np.floating, np.ndarray)):
        array = np.asarray(result)
        return array.dtype.kind in "fc" and bool(np.isnan(array).any())
    return False


@pytest.fixture()
def time_limit() -> Iterator[None]:
    def hang(*_: Any) -> None:
        raise TimeoutError("the call ran for more than 60 s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)
    plt.close("all")


#: Relative difference allowed between the results for two memory layouts of the same input
#: (the BLAS may sum in another order: round-off, amplified a little by short iterations).
LAYOUT_RTOL = 1e-9


def _differences(first: Any, second: Any, where: str = "result") -> list[str]:
    """Where the numbers of two results differ beyond :data:`LAYOUT_RTOL` (arrays and numbers,
    and tuples, lists, dicts and dataclasses of them; leaves of other types are not compared)."""
    if dataclasses.is_dataclass(first) and not isinstance(first, type):
        return [found for field in dataclasses.fields(first)
                for found in _differences(getattr(first, field.name),
                                          getattr(second, field.name), f"{where}.{field.name}")]
    if isinstance(first, dict):
        if first.keys() != second.keys():
            return [f"{where} has keys {sorted(first)} and {sorted(second)}"]
        return [found for key in first
                for found in _differences(first[key], second[key], f"{where}[{key!r}]")]
    if isinstance(first, (tuple, list)):
        if len(first) != len(second):
            return [f"{where} has lengths {len(first)} and {len(second)}"]
        return [found for index, (a, b) in enumerate(zip(first, second))
                for found in _differences(a, b, f"{where}[{index}]")]
    if not isinstance(first, (int, float, complex, np.number, np.bool_, np.ndarray)):
        return []
    a, b = np.asarray(first), np.asarray(second)
    if a.shape != b.shape:
        return [f"{where} has shapes {a.shape} and {b.shape}"]
    if a.dtype.kind not in "iufc" or b.dtype.kind not in "iufc":
        return [] if np.array_equal(a, b) else [f"{where} differs"]
    finite = np.abs(a[np.isfinite(a)])
    scale = float(finite.max()) if finite.size else 1.0
    if np.allclose(a, b, rtol=LAYOUT_RTOL, atol=LAYOUT_RTOL * scale, equal_nan=True):
        return []
    return [f"{where} differs by up to {np.nanmax(np.abs(a - b)):.3g} (scale {scale:.3g})"]


def _call(qualname: str, kwargs: dict[str, Any]) -> Any:
    """``qualname(**kwargs)`` on a fresh instance, with numpy's warnings silenced (the test
    judges the outcome, not the warnings)."""
    with np.errstate(all="ignore"):
        return _resolve(qualname)(**kwargs)


@pytest.mark.parametrize("qualname, arg, case", cases())
def test_bad_input_is_rejected_by_name(qualname: str, arg: str, case: str, sandbox: Path,
                                       time_limit: None) -> None:
    kwargs = examples(sandbox)[qualname]()
    valid = kwargs[arg]
    defaults = _signature_defaults(_resolve(qualname))
    kwargs[arg] = dict(bad_values(valid, defaults.get(arg, valid)))[case]
    passed = _map_arrays(np.copy, kwargs[arg])
    key = (qualname, arg, case)
    reference = (_call(qualname, {**examples(sandbox)[qualname](),
                                  arg: _map_arrays(_c_copy, valid)})
                 if case in LAYOUT_CASES else None)
    try:
        result = _call(qualname, kwargs)
    except (ValueError, TypeError) as exc:
        assert names_argument(str(exc), arg), (
            f"{type(exc).__name__} does not name {arg!r}: {exc}")
        return
    except Exception as exc:   # noqa: BLE001 - any other error is the finding
        if isinstance(exc, DOCUMENTED_ERRORS.get(key, ())):
            return
        pytest.fail(f"unnamed {type(exc).__name__} for {arg}={case}: {exc}")
    finally:
        assert all(np.array_equal(now, before, equal_nan=True) for now, before in zip(
            _numeric_arrays(kwargs[arg]), _numeric_arrays(passed))), (
            f"{qualname} changed its argument {arg} ({case}) in place")
    if case in LAYOUT_CASES:
        assert _differences(reference, result) == [], (
            f"{arg} in {case} layout gives another result than its C-contiguous copy")
        return
    if key in NAN_PASSES_THROUGH:
        return
    if case == "huge" and isinstance(kwargs[arg], int):
        assert key in ACCEPTED, (f"{arg}={HUGE_COUNT} was accepted silently (a size or amount "
                                 f"of work needs a documented bound); returned {result!r:.200}")
        assert not _non_finite(result), f"{arg}={HUGE_COUNT} is valid but gave inf or NaN"
        return
    if case in EXTREME_CASES:
        assert not _non_finite(result), (
            f"{arg}={case} returned inf or NaN without an error naming {arg}")
        return
    accepted = ACCEPTED.get(key)
    assert accepted is not None, f"{arg}={case} was accepted silently (returned {result!r:.200})"
    assert not _has_nan(result), f"{arg}={case} is valid ({accepted}) but gave NaN"


def test_examples_are_valid_calls(sandbox: Path) -> None:
    """Every example runs as given (else its mutations would test nothing)."""
    failures = {}
    for qualname, build in examples(sandbox).items():
        try:
            _resolve(qualname)(**build())
        except Exception as exc:  # noqa: BLE001
            failures[qualname] = repr(exc)
    assert failures == {}


def _tilting_estimate() -> symbolic.TiltingMonteCarlo:
    return symbolic.tilting_monte_carlo(np.eye(2), np.array([0.1, 0.2]), n_samples=200,
                                        rng=_rng(), block_size=100)


@pytest.mark.parametrize("call, arg", [
    (lambda: darcy.solve(np.ones((8, 8)), f=1e308), "f"),
    (lambda: geometry.minimum_hessian_eigenvalues(np.array([1.0, 0.5]), 4, lam=1e308), "lam"),
    (lambda: _tilting_estimate().z_scores(mgf=1e308, tilted_mean=np.zeros(2)), "mgf"),
    (lambda: villani.asymptotic_crossover_log_radius(
        villani.OrbitConstants(a=2.0, b=1.0, q=1.0, k=1.0, dim1=2, dim2=2),
        regularizers.Regularizer("log", 0.01), s=1e308), "s"),
    (lambda: villani.villani_lower_bound(np.array([1.0, 10.0]), regularizers.Regularizer(
        "log", 0.1), 0.5, grad_constant=3.0, laplacian_constant=1e308, block_dim=4),
     "laplacian_constant"),
])
def test_the_edge_of_float64_gives_a_named_error_not_inf(call, arg) -> None:
    # 1e300 was handled before; 1e308 overflowed to inf or -inf without a word
    with np.errstate(all="ignore"), pytest.raises(ValueError, match=rf"^{arg} has entries up to"):
        call()


def test_overflow_errors_come_without_numpy_runtime_warnings() -> None:
    # issue 48: the named error replaces numpy's overflow warnings, which came first
    import warnings

    problem = ctx()["problem"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="^A has entries up to"):
            population.population_loss(ctx()["A"] * 1e200, ctx()["B"], problem.Sigma, problem.M)
        with pytest.raises(ValueError, match="^X has entries up to"):
            population.empirical_moments(ctx()["X"] * 1e200, ctx()["Y"])
        # scipy's OptimizeWarning (a covariance that cannot be estimated) likewise
        with pytest.raises(ValueError, match="^stderr has entries as small as"):
            fitting.fit_power_law_weighted(np.array([10.0, 20, 40, 80]),
                                           np.array([1.0, 0.52, 0.24, 0.13]),
                                           np.array([5e-324, 0.05, 0.03, 0.02]))


#: Calls that once failed with a raw message (issue: "20 raw error messages"): an integral
#: float where an int is meant must give the int's result, and a pair one entry short (or
#: empty, or of one), a template that does not fit the parameters, or targets one column short
#: must give an error naming the argument.
RAW_MESSAGE_CASES = [
    *[(qualname, arg, "integral_float") for qualname, arg in (
        ("bridge.excess_risks", "p"), ("bridge.excess_risks", "d"),
        ("symbolic.gradient_identities", "p"), ("symbolic.gradient_identities", "d"),
        ("regularizers.Regularizer.gradient", "batch_ndim"))],
    *[(qualname, arg, case) for qualname, arg in (
        ("geometry.p_inner", "first"), ("geometry.p_inner", "second"),
        ("orbit.factor_problem", "point"), ("reference.largest_curvature", "point"),
        ("reference.reference_minimizer", "start"), ("algorithm.reference_optimum", "start"),
        ("fitting.fit_geometric_rate", "band")) for case in ("short_pair", "empty", "long")],
    ("slider.frame_slider", "alt", "{unknown}"), ("slider.frame_slider", "alt", "{a:d}"),
    ("slider.frame_slider", "alt", "{"), ("vit.train", "targets", "column_short"),
]


@pytest.mark.parametrize("qualname, arg, case", RAW_MESSAGE_CASES)
def test_formerly_raw_messages_name_their_argument(qualname: str, arg: str, case: str,
                                                   sandbox: Path) -> None:
    kwargs = examples(sandbox)[qualname]()
    valid = kwargs[arg]
    if qualname == "algorithm.reference_optimum" and valid is None:
        valid = ctx()["manifold"].point()
    bad = {"integral_float": lambda: float(valid), "short_pair": lambda: tuple(valid)[:1],
           "empty": lambda: (), "long": lambda: tuple(valid) + (tuple(valid)[-1],),
           "column_short": lambda: valid[..., :-1]}.get(case, lambda: case)()
    try:
        result = _call(qualname, {**kwargs, arg: bad})
    except (ValueError, TypeError) as exc:
        assert names_argument(str(exc), arg), f"{type(exc).__name__} does not name {arg}: {exc}"
        return
    assert case == "integral_float", f"{arg}={bad!r} was accepted silently"
    assert _differences(_call(qualname, examples(sandbox)[qualname]()), result) == []
