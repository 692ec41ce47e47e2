"""The contracts a researcher relies on when building on ``attnlib.algorithm``: a reference
optimum certifies one objective and ``train`` refuses it for another; only the library's own
finiteness failures count as divergence; optimizer transformations take ``params`` like optax's
and a user's preconditioner or optax transformation runs in ``train``; float32 data is refused
rather than silently converted; a run saves to a file of the user's and loads back identical."""

from __future__ import annotations

import zipfile
from dataclasses import replace

import numpy as np
import pytest

from attnlib import algorithm, data, optim, runs
from attnlib._validation import DivergenceError
from attnlib.reference import BelowReferenceError, ReferenceOptimum


@pytest.fixture(scope="module")
def task():
    rng = np.random.default_rng(7)
    problem = data.default_problem(rng=rng, d=3, p=4)
    X, Y = problem.sample(60, rng=rng)
    return problem, algorithm.empirical_loss(X, Y)


GD = algorithm.Method(init="spectral", lam=0.0, precondition=False)


# ---------------------------------------------------------------------------------------------
# A reference certifies one objective.
# ---------------------------------------------------------------------------------------------

def test_a_reference_for_another_lambda_is_refused_naming_both_objectives(task):
    """The review's case: plain GD (lam = 0) measured against Algorithm 1's (lam = 1) optimum
    recorded negative gaps without a word; now train refuses it before the first step."""
    _, loss = task
    algorithm1_optimum = algorithm.reference_optimum(loss, hessian=False)
    with pytest.raises(ValueError, match=r"lam 1 .* but train trains .*lam 0") as error:
        algorithm.train(loss, GD, iterations=5, reference=algorithm1_optimum)
    assert "reference_optimum" in str(error.value)


def test_a_reference_for_other_data_or_another_regularizer_is_refused(task):
    problem, loss = task
    optimum = algorithm.reference_optimum(loss, hessian=False)
    other = algorithm.empirical_loss(*problem.sample(60, rng=np.random.default_rng(8)))
    with pytest.raises(ValueError, match="reference certifies"):
        algorithm.train(other, iterations=5, reference=optimum)
    normalized = algorithm.Method(regularizer="normalized")
    with pytest.raises(ValueError, match="normalized"):
        algorithm.train(loss, normalized, iterations=5, reference=optimum)


def test_a_hand_made_reference_is_checked_by_its_value(task):
    """A reference without an identity (a hand-written objective) must at least have the
    trained objective's value at its point."""
    _, loss = task
    optimum = algorithm.reference_optimum(loss, hessian=False)
    anonymous = replace(optimum, objective=None)
    run = algorithm.train(loss, iterations=3, reference=anonymous)
    assert run.history["gap"].shape == (4,)
    with pytest.raises(ValueError, match="at the reference's point"):
        algorithm.train(loss, iterations=3, reference=replace(anonymous, value=optimum.value + 1e-3))
    with pytest.raises(TypeError, match="ReferenceOptimum"):
        algorithm.train(loss, iterations=3, reference=(optimum.A, optimum.B))


def test_a_run_below_its_reference_is_an_error_with_the_run_attached(task):
    """A reference that is not a minimum (its value honest, its point not optimal): the run
    goes below it and train raises instead of recording a negative gap."""
    _, loss = task
    a, b = loss.manifold.point()
    objective = loss.reference_objective(1.0)
    value = objective(1.2 * a, 0.8 * b)[0]
    fake = ReferenceOptimum(A=1.2 * a, B=0.8 * b, value=value, grad_norm=1.0,
                            hessian_eigenvalues=np.zeros(0), evaluations=0,
                            objective=objective.identity)
    with pytest.raises(BelowReferenceError, match="not the lowest minimum") as error:
        algorithm.train(loss, iterations=50, reference=fake)
    assert isinstance(error.value.result, algorithm.TrainResult)
    assert np.all(error.value.result.history["gap"] >= 0)


def test_the_gap_against_the_methods_own_reference_is_never_negative(task):
    _, loss = task
    for method in (algorithm.METHODS["algorithm1"], GD):
        optimum = algorithm.reference_optimum(loss, method, hessian=False)
        run = algorithm.train(loss, method, iterations=200, reference=optimum)
        gap = run.history["gap"]
        assert gap.min() >= -algorithm.GAP_ROUNDOFF * max(1.0, abs(optimum.value))
        assert gap[-1] < gap[0]


# ---------------------------------------------------------------------------------------------
# Optimizers: optax's contract, and a user's exceptions are their own.
# ---------------------------------------------------------------------------------------------

def _raising(eta: float) -> optim.Transform:
    def update(updates, state, params=None):
        raise ValueError("my transform's own complaint")
    return optim.Transform(lambda params: (), update)


def test_a_users_value_error_propagates_as_itself_not_as_divergence(task):
    _, loss = task
    method = replace(GD, update=algorithm.Custom(_raising))
    with pytest.raises(ValueError, match="my transform's own complaint") as error:
        algorithm.train(loss, method, iterations=3)
    assert not isinstance(error.value, DivergenceError)


def test_a_non_finite_update_from_a_user_transform_is_a_divergence(task):
    _, loss = task

    def nan_step(eta):
        return optim.Transform(lambda params: (),
                               lambda updates, state, params=None:
                               (tuple(np.full_like(u, np.nan) for u in updates), state))

    with pytest.raises(DivergenceError, match="iteration 1"):
        algorithm.train(loss, replace(GD, update=algorithm.Custom(nan_step)), iterations=3)


def test_custom_rules_receive_params_and_reproduce_the_built_in_ones(task):
    """``Custom(lambda eta: chain(add_decayed_weights(0), scale(-eta)))`` is GD bit for bit;
    a positive weight decay moves each step by ``-eta * wd * params`` more."""
    _, loss = task
    plain = algorithm.train(loss, GD, iterations=20)
    same = algorithm.train(loss, replace(GD, update=algorithm.Custom(
        lambda eta: optim.chain(optim.add_decayed_weights(0.0), optim.scale(-eta)))),
        iterations=20)
    np.testing.assert_array_equal(same.A, plain.A)
    np.testing.assert_array_equal(same.history["objective"], plain.history["objective"])
    decayed = algorithm.train(loss, replace(GD, update=algorithm.Custom(
        lambda eta: optim.chain(optim.add_decayed_weights(0.1), optim.scale(-eta)))),
        iterations=1)
    one = algorithm.train(loss, GD, iterations=1)
    a0, _ = loss.manifold.point()
    np.testing.assert_allclose(decayed.A, one.A - one.step * 0.1 * a0, rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="needs params"):
        decay = optim.add_decayed_weights(0.1)
        decay.update((np.ones(2),), decay.init((np.ones(2),)))


class _OptaxLikeSgd:
    """optax's contract without JAX: init(params), update(updates, state, params), updates
    returned as a list of memoryviews (not numpy arrays), a state of its own."""

    def __init__(self, learning_rate: float) -> None:
        self.learning_rate = learning_rate

    def init(self, params):
        return {"count": 0}

    def update(self, updates, state, params=None):
        return ([memoryview(np.ascontiguousarray(-self.learning_rate * u)) for u in updates],
                {"count": state["count"] + 1})


def test_an_optax_style_transformation_runs_in_train_through_from_optax(task):
    _, loss = task
    plain = algorithm.train(loss, GD, iterations=15)
    adapted = algorithm.train(loss, replace(GD, update=algorithm.Custom(
        lambda eta: optim.from_optax(_OptaxLikeSgd(eta)))), iterations=15)
    np.testing.assert_array_equal(adapted.A, plain.A)
    np.testing.assert_array_equal(adapted.B, plain.B)
    with pytest.raises(TypeError, match="optax.GradientTransformation"):
        optim.from_optax(object())


def test_real_optax_sgd_matches_gradient_descent(task):
    """With optax installed: ``optax.sgd(eta)`` through :func:`attnlib.optim.from_optax` takes
    the same steps as the built-in GD (to float32/float64 round-off of JAX's arithmetic)."""
    optax = pytest.importorskip("optax")
    _, loss = task
    plain = algorithm.train(loss, GD, iterations=15)
    adapted = algorithm.train(loss, replace(GD, update=algorithm.Custom(
        lambda eta: optim.from_optax(optax.sgd(eta)))), iterations=15)
    np.testing.assert_allclose(adapted.A, plain.A, rtol=1e-5)


def test_a_users_preconditioner_replaces_algorithm_1s(task):
    """An identity preconditioner is plain GD (the step rule without preconditioner, bit for
    bit); Algorithm 1's, passed as a function, is Algorithm 1's at the same step."""
    _, loss = task
    identity = replace(GD, precondition=lambda sigma: optim.scale(1.0))
    np.testing.assert_array_equal(algorithm.train(loss, identity, iterations=10).A,
                                  algorithm.train(loss, GD, iterations=10).A)
    algorithm1 = algorithm.METHODS["algorithm1"]
    built_in = algorithm.train(loss, algorithm1, iterations=10)
    as_function = algorithm.train(loss, replace(
        algorithm1, precondition=algorithm.precondition,
        update=algorithm.GD(step=built_in.step)), iterations=10)
    np.testing.assert_array_equal(as_function.A, built_in.A)
    with pytest.raises(TypeError, match="precondition must be"):
        algorithm.Method(precondition="yes")
    with pytest.raises(TypeError, match="must return an attnlib.optim.Transform"):
        algorithm.train(loss, replace(GD, precondition=lambda sigma: sigma), iterations=2)


# ---------------------------------------------------------------------------------------------
# dtype: float64 only, said and enforced.
# ---------------------------------------------------------------------------------------------

def test_float32_data_or_start_is_refused_not_silently_upcast(task):
    problem, loss = task
    X, Y = problem.sample(40, rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match=r"X is float32: attnlib.algorithm trains in float64"):
        algorithm.empirical_loss(X.astype(np.float32), Y)
    with pytest.raises(ValueError, match="Y is float32"):
        algorithm.prompts_loss(X.reshape(4, 10, 3), Y.reshape(4, 10, 4).astype(np.float32))
    with pytest.raises(ValueError, match="Sigma_hat is float32"):
        algorithm.closed_form_loss(loss.Sigma_hat.astype(np.float32), loss.M_hat)
    a, b = loss.manifold.point()
    with pytest.raises(ValueError, match=r"init\[0\] \(A0\) is float32"):
        algorithm.train(loss, iterations=1, init=(a.astype(np.float32), b))
    integers = np.round(100 * X).astype(int)                 # exact: converted, not refused
    assert algorithm.empirical_loss(integers, Y).X.dtype == np.float64


# ---------------------------------------------------------------------------------------------
# Runs a user keeps.
# ---------------------------------------------------------------------------------------------

def test_a_run_saves_to_a_users_folder_and_loads_back_identical(task, tmp_path):
    problem, loss = task
    optimum = algorithm.reference_optimum(loss, hessian=False)
    run = algorithm.train(loss, iterations=30, reference=optimum, problem=problem,
                          test=problem.sample(20, rng=np.random.default_rng(3)), test_every=7)
    path = run.save(tmp_path / "my run")
    assert path == tmp_path / "my run.npz" and sorted(p.name for p in tmp_path.iterdir()) == [
        "my run.npz"]
    again = algorithm.TrainResult.load(path)
    assert again.step == run.step and again.config == run.config
    assert again.stopped is False and again.diverged is False
    np.testing.assert_array_equal(again.A, run.A)
    assert sorted(again.history) == sorted(run.history)
    for key, values in run.history.items():
        np.testing.assert_array_equal(again.history[key], values, strict=True)
    with zipfile.ZipFile(path) as archive:
        assert "run.json" in archive.namelist()
    assert runs.load(str(tmp_path / "my run")).step == run.step     # suffix optional
    assert set(run.to_dict()) == {"A", "B", "history", "step", "config", "diverged", "stopped"}


def test_a_runs_repr_is_short_and_names_its_contents(task):
    _, loss = task
    run = algorithm.train(loss, iterations=400)
    text = repr(run)
    assert len(text) < 400 and "history: " in text and "length 401" in text, text


def test_saving_replaces_a_run_in_one_step_and_damaged_files_are_named(task, tmp_path):
    _, loss = task
    first = algorithm.train(loss, iterations=3)
    second = algorithm.train(loss, iterations=6)
    path = first.save(tmp_path / "run.npz")
    second.save(path)
    assert runs.load(path).history["objective"].size == 7
    assert [p.name for p in tmp_path.iterdir()] == ["run.npz"]     # no temporary left behind
    damaged = tmp_path / "damaged.npz"
    damaged.write_bytes(path.read_bytes()[:200])
    with pytest.raises(ValueError, match="damaged.npz"):
        runs.load(damaged)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        first.save(tmp_path / "no such folder" / "run")
    with pytest.raises(FileNotFoundError, match="no saved run"):
        runs.load(tmp_path / "missing")
    with pytest.raises(TypeError, match="TrainResult, LangevinRun or MalaRun"):
        runs.save({"A": 1}, tmp_path / "x")


def test_sampler_runs_save_and_load_back_identical(tmp_path):
    from attnlib import langevin, potentials
    rng = np.random.default_rng(0)
    chain = langevin.euler_maruyama(potentials.double_well, np.zeros((4, 1)), step=0.01,
                                    temperature=0.5, n_steps=50, rng=rng, record_states=True)
    mala = langevin.mala(potentials.double_well, np.zeros((4, 1)), step=0.05, temperature=0.5,
                         n_steps=50, rng=rng, adapt_steps=20)
    for run in (chain, mala):
        again = type(run).load(run.save(tmp_path / type(run).__name__))
        for key, value in run.to_dict().items():
            if isinstance(value, np.ndarray):
                np.testing.assert_array_equal(getattr(again, key), value, strict=True)
            else:
                assert getattr(again, key) == value, key
        assert len(repr(run)) < 300
    with pytest.raises(ValueError, match="holds a LangevinRun, not a MalaRun"):
        langevin.MalaRun.load(tmp_path / "LangevinRun.npz")
