"""Fixed runs of :func:`attnlib.algorithm.train` whose results are stored in
``tests/data/train_reference.npz`` and must stay bit-for-bit identical (the stored experiment
runs are replayed by the chapters and compared exactly).

The reference file was written by the ``train`` before its recorders were factored out of the
loop, and rewritten once when the cases' stand-in reference (a point that was no optimum) became
each objective's certified optimum: only ``gap`` and ``dist_ref`` changed then, every other
array stayed bit for bit (``python tests/train_cases.py`` rewrites it from the current code:
only do that for an intended change of the numbers). ``test_algorithm.py`` replays every case and compares.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable

import numpy as np

from attnlib import algorithm, data
from attnlib.reference import ReferenceOptimum

REFERENCE_FILE = Path(__file__).parent / "data" / "train_reference.npz"


def _problem() -> tuple[data.RegressionProblem, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(20261204)
    problem = data.default_problem(rng=rng, d=3, p=5, kappa=4.0, noise_std=0.1)
    x, y = problem.sample(40, rng=rng)
    x_test, y_test = problem.sample(25, rng=rng)
    return problem, x, y, x_test, y_test


def _reference(loss: algorithm.DataLoss, method: algorithm.Method) -> ReferenceOptimum:
    """The certified optimum of the objective ``method`` trains on ``loss`` (``train`` refuses
    a reference of another objective, and one its run goes below)."""
    return algorithm.reference_optimum(loss, method, hessian=False)


def _stop_at(k_stop: int) -> Callable[[int, np.ndarray, np.ndarray], bool]:
    return lambda k, a, b: k == k_stop


def cases() -> dict[str, Callable[[], algorithm.TrainResult]]:
    """Name -> a zero-argument call of ``train`` (every option of the loop is exercised)."""
    problem, x, y, x_test, y_test = _problem()
    empirical = algorithm.empirical_loss(x, y)
    closed = algorithm.closed_form_loss(empirical.Sigma_hat, empirical.M_hat)
    prompts = algorithm.prompts_loss(x.reshape(8, 5, 3), y.reshape(8, 5, 5), mask="all")
    methods = algorithm.METHODS
    momentum = replace(methods["algorithm1"], update=algorithm.Momentum(decay=0.8),
                       tau=2.0 * closed.manifold.balanced_scale)
    normalized = replace(methods["random+precond+reg"], regularizer="normalized", lam=0.5)
    return {
        "algorithm1_everything": lambda: algorithm.train(
            empirical, methods["algorithm1"], iterations=30, problem=problem,
            reference=_reference(empirical, methods["algorithm1"]), test=(x_test, y_test), test_every=7),
        "gd_record_at": lambda: algorithm.train(
            empirical, methods["gd"], iterations=40, problem=problem,
            rng=np.random.default_rng(1), record_at=np.array([0, 3, 17, 40])),
        "sgd": lambda: algorithm.train(
            empirical, replace(methods["sgd"], batch_size=16), iterations=25,
            rng=np.random.default_rng(2), test=(x_test, y_test), test_every=5),
        "adam_prompts": lambda: algorithm.train(
            prompts, methods["adam"], iterations=25, problem=problem,
            rng=np.random.default_rng(3)),
        "momentum_renormalized": lambda: algorithm.train(
            closed, momentum, iterations=30,
            init=algorithm.random_init(3, 5, rng=np.random.default_rng(4)),
            reference=_reference(closed, momentum)),
        "callback_normalized": lambda: algorithm.train(
            empirical, normalized, iterations=30, rng=np.random.default_rng(5),
            callback=_stop_at(12), problem=problem, record_at=np.arange(0, 31, 4),
            reference=_reference(empirical, normalized)),
        "sgd_prompts_renormalized": lambda: algorithm.train(
            prompts, replace(methods["algorithm1"], batch_size=10,
                             tau=1.5 * prompts.manifold.balanced_scale),
            iterations=20, rng=np.random.default_rng(6), problem=problem),
    }


def flatten(name: str, result: algorithm.TrainResult) -> dict[str, np.ndarray]:
    """The deterministic outputs of one run as ``name/...`` arrays (``time`` is wall clock)."""
    out = {f"{name}/A": result.A, f"{name}/B": result.B,
           f"{name}/step": np.array(result.step), f"{name}/stopped": np.array(result.stopped)}
    out.update({f"{name}/history/{key}": values for key, values in result.history.items()
                if key != "time"})
    return out


def main() -> None:
    arrays: dict[str, np.ndarray] = {}
    for name, run in cases().items():
        arrays.update(flatten(name, run()))
    REFERENCE_FILE.parent.mkdir(exist_ok=True)
    np.savez_compressed(REFERENCE_FILE, **arrays)
    print(f"wrote {len(arrays)} arrays to {REFERENCE_FILE}")


if __name__ == "__main__":
    main()
