"""The shared input checks, the divergence rule, and the bad inputs listed in issue 17.

Each test below failed before the fix it names (the report of the fuzzing run lists them);
tests/test_bad_input.py covers the same ground systematically for every public function.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnlib import (attention, darcy, data, geometry, landscape, langevin, optim, potentials,
                     qk_attention, regularizers, symbolic, villani, vit)
from attnlib._validation import (DivergenceError, as_matrix, check_finite, check_in_range,
                                 check_int, check_not_diverged, check_positive)


# ----------------------------------------------------------------------- shared checks
@pytest.mark.parametrize("value, error", [
    (np.ones(2) + 1j, "real numeric array, got dtype complex128"),
    (np.array(["1.0", "2.0"]), "real numeric array, got dtype <U3"),
    (np.array([1.0, None], dtype=object), "real numeric array, got dtype object"),
    ([[1.0], [1.0, 2.0]], "real numeric array, got list"),
    (np.zeros(0), "must not be empty"),
])
def test_as_matrix_refuses_non_real_and_empty_arrays(value: object, error: str) -> None:
    with pytest.raises((TypeError, ValueError), match=r"^X ") as info:
        as_matrix("X", value, ndim=1)
    assert error in str(info.value)


@pytest.mark.parametrize("value", ["0.1", None, 1 + 2j, np.ones(2)])
def test_scalar_checks_refuse_strings_none_complex_and_arrays(value: object) -> None:
    for check in (lambda v: check_positive("step", v), lambda v: check_finite("step", v),
                  lambda v: check_int("step", v, minimum=0)):
        with pytest.raises(TypeError, match="^step must be"):
            check(value)


def test_scalar_checks_name_nan_and_infinity() -> None:
    with pytest.raises(ValueError, match="^d must be an integer, got nan"):
        check_int("d", float("nan"), minimum=1)
    with pytest.raises(ValueError, match="^d must be an integer, got inf"):
        check_int("d", float("inf"), minimum=1)
    with pytest.raises(ValueError, match=r"^fraction must lie in \(0, 1\]"):
        check_in_range("fraction", 0.0, 0.0, 1.0, closed=(False, True))
    assert check_int("d", 3.0, minimum=1) == 3 and check_finite("tilt", -2) == -2.0


def test_divergence_rule() -> None:
    check_not_diverged("loop", 1.0, np.ones(3))
    with pytest.raises(DivergenceError, match="^loop, step 3: the run diverged"):
        check_not_diverged("loop, step 3", 1.0, np.array([0.0, np.inf]))
    assert issubclass(langevin.LangevinDivergenceError, DivergenceError)


# --------------------------------------------------------------------- issue 17 items
def test_complex_input_is_refused_not_cut_to_its_real_part() -> None:
    rng = np.random.default_rng(0)
    X, B = rng.standard_normal((6, 3)), 0.1 * np.eye(3)
    with pytest.raises(TypeError, match="^B must be a real numeric array"):
        attention.attend(B + 5j, X)


def test_row_softmax_limits_for_infinite_and_huge_logits() -> None:
    np.testing.assert_array_equal(attention.row_softmax(np.array([np.inf, 0.0])), [1.0, 0.0])
    np.testing.assert_array_equal(attention.row_softmax(np.array([np.inf, 1.0, np.inf])),
                                  [0.5, 0.0, 0.5])
    np.testing.assert_array_equal(attention.row_softmax(np.array([-np.inf, 0.0])), [0.0, 1.0])
    np.testing.assert_allclose(attention.row_softmax(np.array([1e308, -1e308, 1e308])),
                               [0.5, 0.0, 0.5])
    huge = attention.row_softmax(np.array([[1e6, 1e6 - 1.0], [2.0, 1.0]]))
    np.testing.assert_allclose(huge[0], huge[1], rtol=1e-12)
    single = attention.row_softmax(np.array([[1.0, 2.0]], dtype=np.float32))
    assert single.dtype == np.float32
    with pytest.raises(ValueError, match="all -inf"):
        attention.row_softmax(np.array([[-np.inf, -np.inf], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="^logits contains NaN"):
        attention.row_softmax(np.array([np.nan, 0.0]))


def test_vit_train_reports_divergence_and_checks_optimizer_settings() -> None:
    dataset = darcy.generate(4, 8, seed=0)
    config = vit.ViTConfig(size=8, patch=4, width=4, key_dim=2)
    params = vit.init_params(config, rng=np.random.default_rng(0))
    patches, targets = vit.patchify(dataset.a, 4), vit.patchify(dataset.u, 4)
    common = dict(epochs=5, batch_size=2, rng=np.random.default_rng(1))
    with np.errstate(all="ignore"), pytest.raises(DivergenceError,
                                                  match=r"vit\.train, epoch \d+, step \d+"):
        vit.train(params, patches, targets, lr=10.0, optimizer="sgd", **common)
    for bad, error in [(dict(betas=(1.0, 0.999)), r"betas\[0\] must lie in \[0, 1\)"),
                       (dict(adam_eps=-1.0), "adam_eps must be a finite number >= 0"),
                       (dict(dtype=np.complex128), "dtype must be float32 or float64"),
                       (dict(lr="0.1"), "lr must be a real number")]:
        kwargs = {**common, "lr": 1e-3, **bad}
        with pytest.raises((ValueError, TypeError), match=error):
            vit.train(params, patches, targets, **kwargs)


def test_minimize_data_loss_refuses_a_saturated_plateau_and_an_overflowing_start() -> None:
    problem = qk_attention.make_problem(rng=np.random.default_rng(0))
    start = 1000.0 * np.random.default_rng(1).standard_normal(problem.dim)
    assert float(np.linalg.norm(problem.gradient(start))) == 0.0       # the false stationary point
    with pytest.raises(RuntimeError, match="numerically flat"):
        villani.minimize_data_loss(problem, start)
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="theta0: the loss"):
        villani.minimize_data_loss(problem, 1e200 * np.ones(problem.dim))
    theta, grad_norm = villani.minimize_data_loss(problem, problem.theta_teacher)
    assert grad_norm < 1e-7 and problem.loss(theta) < problem.loss(start)


def test_gibbs_and_histogram_helpers_check_their_input() -> None:
    axes = [np.linspace(-2.0, 2.0, 9)]
    with pytest.raises(ValueError, match="finite real loss"):
        langevin.gibbs_expectation(lambda t: (np.full(t.shape[0], np.nan), t), axes, 0.5)
    with pytest.raises(ValueError, match="finite real loss"):
        langevin.gibbs_expectation(lambda t: (np.zeros(3), t), axes, 0.5)
    with pytest.raises(ValueError, match=r"^values must have shape \(9, \*\)|^values must have"):
        langevin.gibbs_expectation(potentials.double_well, axes, 0.5, values=np.ones(8))
    with pytest.raises(ValueError, match="^samples must not be empty"):
        langevin.histogram_tv(np.zeros((0, 1)), axes, np.full(8, 0.125))
    with pytest.raises(ValueError, match="^probabilities must be >= 0 and sum to 1"):
        langevin.histogram_tv(np.zeros((4, 1)), axes, np.full(8, 0.5))
    with pytest.raises(ValueError, match="^loss must not be empty"):
        langevin.tail_mean(np.zeros((0, 3)))


def test_darcy_checks_its_input_and_names_missing_keys(tmp_path) -> None:
    with pytest.raises(TypeError, match="^g must be a real numeric array"):
        darcy.threshold(None)
    field = darcy.generate(1, 5, seed=0)
    with pytest.raises(ValueError, match="^f must be a finite number"):
        darcy.flux_residual(field.a[0], field.u[0], f=np.nan)
    path = darcy.save(field, tmp_path / "set.npz")
    with np.load(path) as stored:
        partial = {key: stored[key] for key in stored.files if key != "u"}
    np.savez(tmp_path / "partial.npz", **partial)
    with pytest.raises(ValueError, match=r"partial\.npz has no key 'u'"):
        darcy.load(tmp_path / "partial.npz")
    np.testing.assert_array_equal(darcy.load(path).a, field.a)


def test_range_checks_listed_in_the_issue() -> None:
    rng = np.random.default_rng(0)
    problem = data.default_problem(rng=rng, d=3, p=4)
    for rtol in (np.nan, -1.0):
        with pytest.raises(ValueError, match="^rtol must be a finite number > 0"):
            geometry.minimizer_manifold(problem.Sigma, problem.M, rtol=rtol)
    with pytest.raises(ValueError, match="^p must be an integer, got 3.5"):
        geometry.minimum_hessian_eigenvalues(np.ones(3), 3.5)
    manifold = geometry.minimizer_manifold(problem.Sigma, problem.M)
    with pytest.raises(ValueError, match="^zero_tol must be a finite number > 0"):
        landscape.stationary_point_table(manifold, zero_tol=-1.0)
    with pytest.raises(ValueError, match=r"^decay must lie in \[0, 1\)"):
        optim.trace(decay=1.5)
    with pytest.raises(ValueError, match="^n_queries must be at least 1"):
        attention.auto_block_size(-5, 10)
    with pytest.raises(ValueError, match="^d must be an integer, got nan"):
        data.random_rotation(float("nan"), rng=rng)


def test_euler_maruyama_names_a_bad_step() -> None:
    kwargs = dict(temperature=0.5, n_steps=2, rng=np.random.default_rng(0))
    for step in (None, "0.1"):
        with pytest.raises(TypeError, match="^step must be a real number"):
            langevin.euler_maruyama(potentials.double_well, np.zeros((2, 1)), step=step,
                                    **kwargs)


def test_symbolic_evaluate_never_parses_strings(tmp_path) -> None:
    marker = tmp_path / "executed"
    attack = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    with pytest.raises(TypeError, match="^expr must be a sympy expression"):
        symbolic.evaluate(attack, [])
    assert not marker.exists()
    z = symbolic.sp.Symbol("z")
    assert symbolic.evaluate(z ** 2 + 1, [(z, 3.0)]) == 10.0
    with pytest.raises(ValueError, match="free symbols left: \\['z'\\]"):
        symbolic.evaluate(z ** 2, [])


# ------------------------------------------------- issue 27: public methods are validated
def test_public_methods_listed_in_issue_27_check_their_input() -> None:
    problem = data.default_problem(rng=np.random.default_rng(0), d=3, p=4)
    manifold = geometry.minimizer_manifold(problem.Sigma, problem.M)
    U, V = manifold.U_star, manifold.V_star
    for bad, error in [(U + 0j, TypeError), (U.astype(object), TypeError),
                       (np.where(U == U[0, 0], np.nan, U), ValueError)]:
        with pytest.raises(error, match="^U "):
            manifold.unfactor(bad, V)
    regularizer = regularizers.Regularizer("log", 0.1)
    for method in (regularizer.g, regularizer.dg):
        with pytest.raises(ValueError, match="^t contains NaN"):
            method(np.array([np.nan, 1.0]))
    # booleans are promoted to float64, not float16: g(1) = log 2
    assert regularizer.g(np.array([True, False]))[0] == pytest.approx(np.log(2.0), rel=1e-12)
    scaler = vit.Standardizer(mean=0.5, std=2.0)
    with pytest.raises(ValueError, match="^x contains NaN"):
        scaler.encode(np.array([np.nan, 1.0]))
    with pytest.raises(ValueError, match="^z contains NaN"):
        scaler.decode(np.array([np.nan, 1.0]))


def test_regularizer_overflow_names_t() -> None:
    power = regularizers.Regularizer("power", 0.1, eps=4.0)
    with pytest.raises(ValueError, match="^t = 1e\\+300 gives a non-finite g\\(t\\)"):
        power.g(np.array([1.0, 1e300]))
    with pytest.raises(ValueError, match="^W is too large"):
        power.value(np.full((2, 2), 1e200))
    assert np.isfinite(power.g(np.array([1.0, 1e10]))).all()


# ------------------------------------------------------- issue 27: bounded sizes, up front
_HUGE = 2 ** 63


def test_huge_iteration_counts_and_sizes_fail_up_front() -> None:
    # issue 48: counts have a documented bound (MAX_SIZE = 10^8), whatever the machine
    from attnlib import algorithm

    rng = np.random.default_rng(0)
    problem = data.default_problem(rng=rng, d=2, p=2)
    X, Y = problem.sample(8, rng=rng)
    too_many = r" must be at most 100000000, got 9223372036854775808$"
    with pytest.raises(ValueError, match="^iterations" + too_many):
        algorithm.train(algorithm.empirical_loss(X, Y), iterations=_HUGE)
    config = vit.ViTConfig(size=8, patch=4, width=4, key_dim=2)
    fields = np.random.default_rng(1).standard_normal((2, 8, 8))
    patches = vit.patchify(fields, 4)
    with pytest.raises(ValueError, match="^epochs" + too_many):
        vit.train(vit.init_params(config, rng=rng), patches, patches, epochs=_HUGE,
                  batch_size=2, lr=1e-3, rng=rng)
    with pytest.raises(ValueError, match="^n" + too_many):
        data.sample_regression(_HUGE, problem.Sigma, problem.M, 0.1, rng=rng)
    with pytest.raises(ValueError, match="^d = 9223372036854775808 needs about"):
        data.random_rotation(_HUGE, rng=rng)
    with pytest.raises(ValueError, match="^count" + too_many):
        darcy.generate(_HUGE, 8, seed=0)
    with pytest.raises(ValueError, match="^n_steps" + too_many):
        langevin.euler_maruyama(potentials.double_well, np.zeros((3, 1)), step=0.01,
                                temperature=0.5, n_steps=_HUGE, rng=rng)


def test_sizes_within_the_bound_are_checked_against_the_memory_available(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from attnlib import _validation, algorithm, analysis

    rng = np.random.default_rng(0)
    problem = data.default_problem(rng=rng, d=2, p=2)
    X, Y = problem.sample(8, rng=rng)
    monkeypatch.setattr(_validation, "available_memory", lambda: 2 ** 20)
    with pytest.raises(ValueError, match=r"^iterations = 1000000 needs about .* GiB for the "
                                         r"history, more than the"):
        algorithm.train(algorithm.empirical_loss(X, Y), iterations=10 ** 6)
    with pytest.raises(ValueError, match="^n_steps = 1000000 needs about"):
        langevin.euler_maruyama(potentials.double_well, np.zeros((3, 1)), step=0.01,
                                temperature=0.5, n_steps=10 ** 6, rng=rng)
    with pytest.raises(ValueError, match="^length = 1000000 needs about"):
        analysis.pad_histories([np.ones(3)], 10 ** 6)


def test_the_memory_available_respects_an_address_space_limit() -> None:
    # ulimit -v: a check against MemAvailable alone let numpy fail with a raw MemoryError
    import subprocess
    import sys

    code = ("import resource; hard = resource.getrlimit(resource.RLIMIT_AS)[1]; "
            "soft = 2 ** 32 if hard == resource.RLIM_INFINITY else min(2 ** 32, hard); "
            "resource.setrlimit(resource.RLIMIT_AS, (soft, hard)); "
            "from attnlib._validation import available_memory; print(available_memory())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert int(out) < 2 ** 32


def test_overflow_cases_listed_in_issue_27_raise_naming_the_argument() -> None:
    from attnlib import algorithm, population

    problem = data.default_problem(rng=np.random.default_rng(0), d=3, p=4)
    A, B = algorithm.random_init(3, 4, rng=np.random.default_rng(1))
    with pytest.raises(ValueError, match="^tau has entries as small as 4.94e-324"):
        algorithm.renormalize(A, B, problem.Sigma, tau=5e-324)
    with pytest.raises(ValueError, match="^tau has entries as small as 4.94e-324"):
        darcy.grf_spectrum(4, tau=5e-324)
    with pytest.raises(ValueError, match="^A has entries up to .*e\\+\\d+: the result of "
                                         "population_loss is not finite"):
        population.population_loss(A * 1e200, B, problem.Sigma, problem.M)
    assert np.isfinite(population.population_loss(A, B, problem.Sigma, problem.M))


# ----------------------------------------------------- issue 27: one divergence rule
def test_vit_sgd_blow_up_is_a_divergence_error_with_the_history_so_far() -> None:
    rng = np.random.default_rng(0)
    config = vit.ViTConfig(size=8, patch=4, width=4, key_dim=2)
    dataset = darcy.generate(4, 8, seed=0)
    patches, targets = vit.patchify(dataset.a, 4), vit.patchify(dataset.u, 4)
    with pytest.raises(DivergenceError, match="^vit.train, epoch [0-9]+") as error:
        vit.train(vit.init_params(config, rng=rng), patches, targets, epochs=5, batch_size=2,
                  lr=1e4, rng=rng, optimizer="sgd")
    history = error.value.history
    assert history is not None and history["epoch"][0] == 0
    assert np.all(np.isfinite(history["train_loss"]))


def test_divergence_error_keeps_its_history_through_pickling() -> None:
    import pickle

    error = DivergenceError("where: diverged", history={"loss": np.arange(3.0)})
    copy = pickle.loads(pickle.dumps(error))
    assert str(copy) == "where: diverged" and np.array_equal(copy.history["loss"], np.arange(3.0))


def test_langevin_divergence_carries_the_records_so_far() -> None:
    def explodes(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return -np.sum(theta ** 4, axis=1), -4 * theta ** 3       # not confining

    with pytest.raises(langevin.LangevinDivergenceError) as error:
        langevin.euler_maruyama(explodes, np.ones((2, 1)), step=0.5, temperature=0.01,
                                n_steps=200, rng=np.random.default_rng(0), record_every=1)
    history = error.value.history
    assert set(history) == {"times", "loss"} and history["loss"].shape[1] == 2
    assert 1 <= history["times"].size < 201 and np.all(np.isfinite(history["loss"]))
