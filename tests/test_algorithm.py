"""Tests of attnlib.algorithm: spectral init, preconditioning, contraction, baselines, errors."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from attnlib import algorithm, attention, data, geometry, population
from attnlib._validation import DivergenceError

import train_cases
from conftest import central_differences


@pytest.fixture(scope="module")
def small():
    rng = np.random.default_rng(0)
    problem = data.default_problem(rng=rng, d=4, p=6, kappa=5.0, noise_std=0.1)
    x, y = problem.sample(60, rng=rng)
    return problem, x, y


def test_empirical_objective_gradient_matches_finite_differences(small) -> None:
    problem, x, y = small
    sigma_hat, _ = population.empirical_moments(x, y)
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((6, 4)) / 2, rng.standard_normal((4, 4)) / 2
    value, loss, grad_a, grad_b = algorithm.empirical_objective_and_grad(a, b, x, y, sigma_hat,
                                                                         lam=0.8)
    assert value == pytest.approx(loss + population.regularizer(a, b, sigma_hat, lam=0.8))
    fd_a, fd_b = central_differences(
        lambda a_, b_: algorithm.empirical_objective_and_grad(a_, b_, x, y, sigma_hat, lam=0.8)[0],
        a, b)
    np.testing.assert_allclose(grad_a, fd_a, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_b, fd_b, rtol=1e-6, atol=1e-8)


def test_spectral_init_reproduces_m_hat_and_lies_on_s_hat(small) -> None:
    _, x, y = small
    sigma_hat, m_hat = population.empirical_moments(x, y)
    a0, b0 = algorithm.spectral_init(sigma_hat, m_hat)
    np.testing.assert_allclose(a0 @ sigma_hat @ b0.T, m_hat, atol=1e-10, rtol=0)
    manifold_hat = geometry.minimizer_manifold(sigma_hat, m_hat)
    assert manifold_hat.distance(a0, b0) < 1e-10
    assert np.linalg.det(manifold_hat.project(a0, b0)[2]) > 0          # det = +1 component
    result = algorithm.train(algorithm.empirical_loss(x, y), iterations=0)
    np.testing.assert_allclose(result.A, a0, atol=1e-14)


def _whitened_gd(u, v, z, y, *, lam, step, iterations, objective, xstar=None):
    """Plain gradient descent on (U, V), written independently of attnlib.algorithm."""
    path = [(u, v)]
    for _ in range(iterations):
        if objective == "empirical":     # L_hat(U S^-1/2, S^-1/2 V S^-1/2; X) = L_hat(U, V; Z)
            _, gu, gv = attention.loss_and_grad(u, v, z, y)
        else:
            _, gu, gv = population.factor_loss_and_grad(u, v, xstar)
        _, ru, rv = population.factor_regularizer_and_grad(u, v, lam=lam)
        u, v = u - step * (gu + ru), v - step * (gv + rv)
        path.append((u, v))
    return path


@pytest.mark.parametrize("objective", ["empirical", "closed_form"])
def test_preconditioned_gd_is_plain_gd_in_factor_coordinates(small, objective: str) -> None:
    _, x, y = small
    sigma_hat, m_hat = population.empirical_moments(x, y)
    half, inv_half = population.spd_sqrt(sigma_hat)
    a0, b0 = algorithm.random_init(4, 6, rng=np.random.default_rng(2))
    iterates = []
    loss = (algorithm.empirical_loss(x, y) if objective == "empirical"
            else algorithm.closed_form_loss(sigma_hat, m_hat))
    method = algorithm.Method(lam=0.7, update=algorithm.GD(step=0.05))
    algorithm.train(loss, method, init=(a0, b0), iterations=15,
                    callback=lambda k, a, b: iterates.append(population.to_factor(a, b, sigma_hat)))
    path = _whitened_gd(a0 @ half, half @ b0 @ half, x @ inv_half, y, lam=0.7, step=0.05,
                        iterations=15, objective=objective, xstar=m_hat @ half)
    assert len(iterates) == len(path) == 16
    for (u1, v1), (u2, v2) in zip(iterates, path):
        np.testing.assert_allclose(u1, u2, rtol=0, atol=1e-12)
        np.testing.assert_allclose(v1, v2, rtol=0, atol=1e-12)


def test_algorithm1_contracts_geometrically_on_the_population_objective() -> None:
    """Rate bound [derived in attnlib.geometry]: near S, one step of preconditioned GD maps the
    normal offset delta to (I - eta H) delta, H the Hessian at S with the closed-form spectrum
    of ``minimum_hessian_eigenvalues``; so dist_P contracts per step by at most
    mu = max_h |1 - eta h| over its nonzero eigenvalues (``gd_contraction_factor``).
    The fitted rate must not exceed mu (to first order in the distance) and mu must be < 1."""
    problem = data.default_problem(rng=np.random.default_rng(3), d=5, p=8, kappa=10.0)
    manifold = geometry.minimizer_manifold(problem.Sigma, problem.M)
    rng = np.random.default_rng(4)
    a_s, b_s = manifold.point(data.random_rotation(5, rng=rng))
    a0 = a_s + 0.05 * rng.standard_normal(a_s.shape)
    b0 = b_s + 0.05 * rng.standard_normal(b_s.shape)
    result = algorithm.train(algorithm.closed_form_loss(problem.Sigma, problem.M),
                             init=(a0, b0), iterations=3000, problem=problem)
    dist = result.history["dist_P"]
    mu = geometry.gd_contraction_factor(result.step, manifold.singular_values, problem.p, lam=1.0)
    assert mu < 1
    window = (dist < 1e-4) & (dist > 1e-11)          # linear regime, above rounding noise
    steps = np.flatnonzero(window)
    assert steps.size > 50
    rate = float(np.exp(np.polyfit(steps, np.log(dist[steps]), 1)[0]))
    assert rate <= mu * (1 + 1e-6)
    ratios = dist[steps[1:]] / dist[steps[:-1]]
    assert np.all(ratios <= mu * (1 + 1e-6))
    assert rate >= mu - 1e-4                 # a generic start excites the slowest mode: tight
    assert dist[-1] < 1e-6 * dist[0]
    assert result.history["excess_risk"][-1] < 1e-12 * result.history["excess_risk"][0]


def test_step_rule_curvature_bound_covers_random_points() -> None:
    """||H(U, V)|| <= s_max + 1.5 (1 + lam) N (the bound behind the step rule)."""
    rng = np.random.default_rng(5)
    for trial in range(20):
        xstar = rng.standard_normal((5, 3)) * rng.uniform(0.1, 3)
        u = rng.standard_normal((5, 3)) * rng.uniform(0.01, 2)
        v = rng.standard_normal((3, 3)) * rng.uniform(0.01, 2)
        lam = rng.uniform(0, 3)
        top = np.abs(np.linalg.eigvalsh(geometry.factor_hessian(u, v, xstar, lam=lam))).max()
        size = np.sum(u ** 2) + np.sum(v ** 2)
        assert top <= np.linalg.norm(xstar, 2) + 1.5 * (1 + lam) * size


def test_renormalize_keeps_the_product_and_bounds_the_logit_scale(small) -> None:
    _, x, y = small
    sigma_hat, m_hat = population.empirical_moments(x, y)
    half, _ = population.spd_sqrt(sigma_hat)
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal((6, 4)), 5 * rng.standard_normal((4, 4))
    a2, b2 = algorithm.renormalize(a, b, sigma_hat, 2.0)
    np.testing.assert_allclose(a2 @ sigma_hat @ b2.T, a @ sigma_hat @ b.T, atol=1e-12)
    assert np.linalg.norm(half @ b2 @ half) == pytest.approx(2.0, rel=1e-12)
    a3, b3 = algorithm.renormalize(a, b / 100, sigma_hat, 2.0)     # already inside: unchanged
    np.testing.assert_array_equal(b3, b / 100)
    scale = geometry.minimizer_manifold(sigma_hat, m_hat).balanced_scale
    method = algorithm.Method(init="random", tau=scale * 1.5)
    result = algorithm.train(algorithm.empirical_loss(x, y), method, rng=rng, iterations=5)
    for_b = population.to_factor(result.A, result.B, sigma_hat)[1]
    assert np.linalg.norm(for_b) <= scale * 1.5 * (1 + 1e-12)
    with pytest.raises(ValueError, match="balanced scale"):
        algorithm.train(algorithm.empirical_loss(x, y), algorithm.Method(tau=0.9 * scale),
                        iterations=1)


def test_sgd_with_the_full_batch_equals_gd(small) -> None:
    _, x, y = small
    loss = algorithm.empirical_loss(x, y)
    plain = algorithm.Method(init="random", precondition=False, lam=0.0,
                             update=algorithm.GD(step=0.1))
    gd = algorithm.train(loss, plain, rng=np.random.default_rng(7), iterations=5)
    sgd = algorithm.train(loss, replace(plain, batch_size=x.shape[0]),
                          rng=np.random.default_rng(7), iterations=5)
    np.testing.assert_allclose(sgd.A, gd.A, atol=1e-13)
    np.testing.assert_allclose(sgd.history["objective"], gd.history["objective"], rtol=1e-12)
    small_batch = algorithm.train(loss, replace(plain, batch_size=8),
                                  rng=np.random.default_rng(7), iterations=5)
    assert not np.allclose(small_batch.A, gd.A)


def test_adam_first_step_moves_each_entry_by_the_learning_rate(small) -> None:
    _, x, y = small
    a0, b0 = algorithm.random_init(4, 6, rng=np.random.default_rng(8))
    method = algorithm.Method(lam=0.0, precondition=False, update=algorithm.Adam(lr=1e-3))
    result = algorithm.train(algorithm.empirical_loss(x, y), method, init=(a0, b0),
                             iterations=1)
    _, grad_a, _ = attention.loss_and_grad(a0, b0, x, y)
    np.testing.assert_allclose(result.A - a0, -1e-3 * np.sign(grad_a), rtol=1e-4)


def test_history_contents_and_deployed_test_risk(small) -> None:
    problem, x, y = small
    x_test, y_test = problem.sample(40, rng=np.random.default_rng(9))
    result = algorithm.train(algorithm.empirical_loss(x, y), iterations=12, problem=problem,
                             test=(x_test, y_test), test_every=5)
    h = result.history
    for key in ("objective", "loss", "grad_norm", "dist_P_hat", "time", "excess_risk", "dist_P"):
        assert h[key].shape == (13,)
    np.testing.assert_array_equal(h["test_iteration"], [0, 5, 10, 12])
    assert h["dist_P_hat"][0] < 1e-10                          # spectral init is on S_hat
    expected = population.population_loss(result.A, result.B, problem.Sigma, problem.M)
    assert h["excess_risk"][-1] == pytest.approx(expected, rel=1e-12)
    prediction = attention.predict_new(result.A, result.B, x, x_test)
    risk = 0.5 * np.mean(np.sum((x_test @ problem.M.T - prediction) ** 2, axis=1))
    assert h["test_risk"][-1] == pytest.approx(risk, rel=1e-12)
    assert np.all(np.diff(h["time"]) >= 0)


def test_random_init_scale() -> None:
    a, b = algorithm.random_init(50, 400, rng=np.random.default_rng(10), scale=0.3)
    assert a.std() == pytest.approx(0.3 / np.sqrt(50), rel=0.02)
    assert b.std() == pytest.approx(0.3 / np.sqrt(50), rel=0.05)


def test_divergence_and_callback_stop_are_reported(small) -> None:
    _, x, y = small
    loss = algorithm.empirical_loss(x, y)
    with pytest.raises(DivergenceError, match="^algorithm.train, iteration [0-9]+: the run "
                                              "diverged") as error:
        algorithm.train(loss, algorithm.Method(update=algorithm.GD(step=1e3)), iterations=50)
    result = error.value.result                  # the history so far is attached
    assert result.diverged and result.history["objective"].size < 51
    assert error.value.history is result.history
    assert np.all(np.isfinite(result.history["objective"]))
    stopped = algorithm.train(loss, iterations=50, callback=lambda k, a, b: k == 3)
    assert stopped.stopped and stopped.history["objective"].size == 4


def test_clear_errors(small) -> None:
    problem, x, y = small
    loss = algorithm.empirical_loss(x, y)
    sigma_hat, m_hat = population.empirical_moments(x, y)
    with pytest.raises(ValueError, match="step must be"):
        algorithm.train(loss, algorithm.Method(update=algorithm.GD(step=-0.1)), iterations=1)
    with pytest.raises(ValueError, match="tau"):
        algorithm.train(loss, algorithm.Method(tau=0.0), iterations=1)
    with pytest.raises(ValueError, match="n >= d"):
        algorithm.empirical_loss(x[:3], y[:3])
    with pytest.raises(ValueError, match="p = 3 rows < d = 4"):
        algorithm.empirical_loss(x, y[:, :3])
    with pytest.raises(ValueError, match="singular"):
        algorithm.empirical_loss(np.column_stack([x[:, :3], x[:, 0]]), y)
    with pytest.raises(ValueError, match="mask"):
        algorithm.empirical_loss(x, y, mask="causal")
    with pytest.raises(ValueError, match="needs rng"):
        algorithm.train(loss, algorithm.Method(init="random"), iterations=1)
    with pytest.raises(ValueError, match="empirical loss"):
        algorithm.train(algorithm.closed_form_loss(sigma_hat, m_hat),
                        algorithm.Method(batch_size=4), rng=np.random.default_rng(0),
                        iterations=1)
    with pytest.raises(ValueError, match="batch_size must be at most"):
        algorithm.train(loss, algorithm.Method(batch_size=10 ** 6), rng=np.random.default_rng(0),
                        iterations=1)
    with pytest.raises(TypeError, match="DataLoss"):
        algorithm.train(x, iterations=1)
    with pytest.raises(ValueError, match="betas"):
        algorithm.train(loss, algorithm.Method(update=algorithm.Adam(betas=(1.0, 0.999))),
                        iterations=1)
    with pytest.raises(ValueError, match="eps"):
        algorithm.train(loss, algorithm.Method(update=algorithm.Adam(eps=-1.0)), iterations=1)
    with pytest.raises(ValueError, match="decay"):
        algorithm.train(loss, algorithm.Method(update=algorithm.Momentum(decay=1.0)),
                        iterations=1)


def test_methods_are_compositions_of_algorithm1_pieces() -> None:
    """Each baseline swaps or drops pieces of Algorithm 1 (the ablation table of chapter 5)."""
    alg1 = algorithm.METHODS["algorithm1"]
    assert (alg1.init, alg1.lam, alg1.precondition, alg1.batch_size) == ("spectral", 1.0, True,
                                                                         None)
    assert algorithm.METHODS["random+precond+reg"] == replace(alg1, init="random")
    assert algorithm.METHODS["gd"] == replace(alg1, init="random", lam=0.0, precondition=False)
    assert algorithm.METHODS["sgd"] == replace(algorithm.METHODS["gd"], batch_size=32)
    assert algorithm.METHODS["adam"] == replace(algorithm.METHODS["gd"],
                                                update=algorithm.Adam(lr=1e-2))


def test_reference_gap_and_distance_are_recorded(small) -> None:
    from attnlib import reference

    problem, x, y = small
    loss = algorithm.empirical_loss(x, y)
    optimum = reference.reference_minimizer(loss.reference_objective(1.0), loss.manifold.point(),
                                            loss.Sigma_hat, hessian=False)
    result = algorithm.train(loss, iterations=30, reference=optimum)
    gap = result.history["gap"]
    np.testing.assert_allclose(gap, result.history["objective"] - optimum.value, rtol=0,
                               atol=1e-15)
    assert np.all(gap >= -1e-12) and gap[-1] < gap[0]
    assert np.all(np.diff(result.history["dist_ref"]) < 0)
    polished = algorithm.train(loss, init=(optimum.A, optimum.B), iterations=0,
                               reference=optimum)
    assert polished.history["dist_ref"][0] < 1e-12


@pytest.mark.parametrize("regularizer", ["balancing", "normalized"])
def test_objective_with_either_regularizer_matchescentral_differences(small, regularizer) -> None:
    _, x, y = small
    loss = algorithm.empirical_loss(x, y)
    objective = loss.reference_objective(0.8, regularizer=regularizer)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((6, 4)) / 2, rng.standard_normal((4, 4)) / 2
    _, grad_a, grad_b = objective(a, b)
    fd_a, fd_b = central_differences(lambda a_, b_: objective(a_, b_)[0], a, b)
    np.testing.assert_allclose(grad_a, fd_a, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grad_b, fd_b, rtol=1e-6, atol=1e-8)


def test_normalized_regularizer_is_the_balancing_one_over_the_squared_norms() -> None:
    rng = np.random.default_rng(4)
    u, v = rng.standard_normal((6, 4)), rng.standard_normal((4, 4))
    plain = population.factor_regularizer_and_grad(u, v, lam=1.3)[0]
    normalized = population.factor_regularizer_and_grad(u, v, lam=1.3, normalized=True)[0]
    assert normalized == pytest.approx(plain / (np.sum(u ** 2) + np.sum(v ** 2)), rel=1e-14)
    for t in (0.5, 3.0):     # degree 4 in the scale of (U, V) against degree 2
        assert population.factor_regularizer_and_grad(t * u, t * v, lam=1.3)[0] == \
            pytest.approx(t ** 4 * plain, rel=1e-12)
        assert population.factor_regularizer_and_grad(t * u, t * v, lam=1.3, normalized=True)[0] \
            == pytest.approx(t ** 2 * normalized, rel=1e-12)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    balanced_u = np.vstack([q @ np.diag([2.0, 1.0, 0.5, 0.3]), np.zeros((2, 4))])
    balanced_v = np.diag([2.0, 1.0, 0.5, 0.3])          # U^T U = V^T V: both forms vanish
    for normalized in (False, True):
        value, gu, gv = population.factor_regularizer_and_grad(balanced_u, balanced_v,
                                                               normalized=normalized)
        assert value < 1e-28 and np.abs(gu).max() < 1e-14 and np.abs(gv).max() < 1e-14
    with pytest.raises(ValueError, match="normalized regularizer needs"):
        population.factor_regularizer_and_grad(0 * u, 0 * v, normalized=True)
    with pytest.raises(ValueError, match="regularizer must be"):
        algorithm.Method(regularizer="scaled")


@pytest.mark.parametrize("regularizer", ["balancing", "normalized"])
def test_objective_caches_sigma_hat_half_without_changing_a_bit(small, regularizer) -> None:
    _, x, y = small
    loss = algorithm.empirical_loss(x, y)
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((6, 4)) / 2, rng.standard_normal((4, 4)) / 2
    value, data_loss, grad_a, grad_b = loss.objective(0.7, regularizer=regularizer)(a, b)
    reg, reg_a, reg_b = population.regularizer_and_grad(
        a, b, loss.Sigma_hat, lam=0.7, normalized=regularizer == "normalized")
    attn, attn_a, attn_b = attention.loss_and_grad(a, b, x, y)
    assert (value, data_loss) == (attn + reg, attn)
    np.testing.assert_array_equal(grad_a, attn_a + reg_a)
    np.testing.assert_array_equal(grad_b, attn_b + reg_b)


def test_record_at_keeps_exactly_the_recorded_entries(small) -> None:
    problem, x, y = small
    loss = algorithm.empirical_loss(x, y)
    method = replace(algorithm.METHODS["algorithm1"], tau=2 * loss.manifold.balanced_scale)
    test = problem.sample(20, rng=np.random.default_rng(4))
    every = algorithm.train(loss, method, iterations=12, problem=problem, test=test, test_every=5)
    chosen = np.array([0, 1, 2, 7, 12])
    some = algorithm.train(loss, method, iterations=12, problem=problem, test=test, test_every=5,
                           record_at=chosen)
    np.testing.assert_array_equal(some.history["iteration"], chosen)
    for key, values in every.history.items():
        if key == "time":
            assert some.history[key].shape == chosen.shape
        elif key.startswith("test_"):
            np.testing.assert_array_equal(some.history[key], values)
        elif key != "iteration":
            np.testing.assert_array_equal(some.history[key], values[chosen])
    np.testing.assert_array_equal(some.A, every.A)
    for bad in ([], [3, 2], [0, 13], [0.5]):
        with pytest.raises(ValueError, match="record_at"):
            algorithm.train(loss, iterations=12, record_at=np.array(bad))


def test_train_is_the_chained_transformations_stepped_by_hand():
    """Chapter 4's claim: train's loop is chain(precondition(Sigma_hat), scale(-eta)) applied to
    the gradient of L_hat + lam R_hat, bit for bit."""
    from attnlib.optim import apply_updates, chain, scale

    problem = data.default_problem(rng=np.random.default_rng(5), d=3, p=4, noise_std=0.1)
    x, y = problem.sample(60, rng=np.random.default_rng(6))
    loss = algorithm.empirical_loss(x, y)
    run = algorithm.train(loss, iterations=15)
    a, b = loss.manifold.point()
    optimizer = chain(algorithm.precondition(loss.Sigma_hat), scale(-run.step))
    state = optimizer.init((a, b))
    objective = loss.objective(1.0)
    for _ in range(15):
        _, _, grad_a, grad_b = objective(a, b)
        updates, state = optimizer.update((grad_a, grad_b), state)
        a, b = apply_updates((a, b), updates)
    np.testing.assert_array_equal(a, run.A)
    np.testing.assert_array_equal(b, run.B)


#: How far a reference run may move on another machine, relative to the largest entry of each
#: stored array: other SIMD paths, BLAS kernels and thread counts change the last bits of each
#: step. Measured with scripts/cpu_env.py, over all the cases here: 0 with numpy's AVX2 paths and
#: OpenBLAS's Haswell kernels (as on the machine that stored them), 1.7e-14 with AVX-512 and
#: SkylakeX kernels, 2.5e-14 with baseline SIMD and Nehalem kernels on two threads; 1e-9 leaves
#: a margin of more than 10^4.
TRAIN_REFERENCE_RTOL = 1e-9


@pytest.mark.parametrize("name", sorted(train_cases.cases()))
def test_train_reproduces_the_stored_reference_runs(name: str) -> None:
    """Every option of the training loop (record_at, renormalization, prompts, SGD, Adam,
    momentum, callback, test risk, reference, truth) gives the numbers stored in
    ``tests/data/train_reference.npz`` (written by the loop before its recorders were factored
    out), within round-off of another machine: integers and flags exactly, real arrays to
    ``TRAIN_REFERENCE_RTOL`` of their largest entry."""
    stored = np.load(train_cases.REFERENCE_FILE)
    expected = {key: stored[key] for key in stored.files if key.startswith(f"{name}/")}
    result = train_cases.cases()[name]()
    assert "time" in result.history
    got = train_cases.flatten(name, result)
    assert sorted(got) == sorted(expected)
    for key, value in expected.items():
        assert got[key].shape == value.shape and got[key].dtype == value.dtype, key
        if value.dtype.kind != "f":
            np.testing.assert_array_equal(got[key], value, err_msg=key)
            continue
        assert np.array_equal(np.isnan(got[key]), np.isnan(value)), key
        scale = max(float(np.nanmax(np.abs(value), initial=0.0)), np.finfo(float).tiny)
        deviation = float(np.nanmax(np.abs(got[key] - value), initial=0.0))
        assert deviation <= TRAIN_REFERENCE_RTOL * scale, (key, deviation / scale)


@pytest.mark.parametrize("name", sorted(train_cases.cases()))
def test_train_is_deterministic_on_one_machine(name: str) -> None:
    """The same call twice on one machine gives the same numbers, bit for bit."""
    first, second = (train_cases.flatten(name, train_cases.cases()[name]()) for _ in range(2))
    for key, value in first.items():
        np.testing.assert_array_equal(second[key], value, err_msg=key, strict=True)
