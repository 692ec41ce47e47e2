"""Tests of attnlib.bridge: Part I's objective as a batched Langevin potential (chapter 12)."""

import numpy as np
import pytest

from attnlib import algorithm, bridge, data, langevin, population, reference
from attnlib.regularizers import Regularizer

P_, D_ = 4, 3


@pytest.fixture(scope="module")
def loss() -> algorithm.DataLoss:
    problem = data.default_problem(rng=np.random.default_rng(0), d=D_, p=P_, kappa=10.0)
    x, y = problem.sample(30, rng=np.random.default_rng(1))
    return algorithm.empirical_loss(x, y)


def _point(seed: int) -> np.ndarray:
    a, b = algorithm.random_init(D_, P_, rng=np.random.default_rng(seed), scale=1.0)
    return bridge.flatten(a, b)


def test_flatten_round_trip_and_batches():
    theta = np.stack([_point(s) for s in range(3)])
    a, b = bridge.unflatten(theta, P_, D_)
    assert a.shape == (3, P_, D_) and b.shape == (3, D_, D_)
    for i in range(3):
        np.testing.assert_array_equal(bridge.flatten(a[i], b[i]), theta[i])
    with pytest.raises(ValueError, match="theta must have p d"):
        bridge.unflatten(theta[:, :-1], P_, D_)


def test_preconditioner_matrix_is_algorithm1s_transform(loss):
    """P = diag(I_p kron S^-1, S^-1 kron S^-1), SPD, and P g = the transform of g."""
    matrix = bridge.preconditioner_matrix(loss.Sigma_hat, P_)
    inverse = np.linalg.inv(loss.Sigma_hat)
    size = P_ * D_
    expected = np.zeros_like(matrix)
    expected[:size, :size] = np.kron(np.eye(P_), inverse)
    expected[size:, size:] = np.kron(inverse, inverse)
    np.testing.assert_allclose(matrix, expected, atol=1e-12)
    assert np.linalg.eigvalsh(matrix)[0] > 0
    g = _point(5)
    transform = algorithm.precondition(loss.Sigma_hat)
    grads = bridge.unflatten(g, P_, D_)
    (ga, gb), _ = transform.update(grads, transform.init(grads))
    np.testing.assert_allclose(matrix @ g, bridge.flatten(ga, gb), atol=1e-12)


@pytest.mark.parametrize("mild, coordinates", [
    (Regularizer("none"), "weights"), (Regularizer("log", 0.05), "weights"),
    (Regularizer("power", 0.05, eps=0.5), "weights"), (Regularizer("log", 0.05), "factor")])
def test_potential_gradient_against_finite_differences(loss, mild, coordinates):
    potential = bridge.Potential(loss, mild=mild, coordinates=coordinates)
    theta = np.stack([_point(7), _point(8)])
    values, grads = potential(theta)
    assert values.shape == (2,) and grads.shape == theta.shape
    h = 1e-6
    rng = np.random.default_rng(9)
    for i in range(2):
        for direction in rng.standard_normal((4, theta.shape[1])):
            plus = potential((theta[i] + h * direction)[None, :])[0][0]
            minus = potential((theta[i] - h * direction)[None, :])[0][0]
            assert (plus - minus) / (2 * h) == pytest.approx(grads[i] @ direction, rel=1e-6,
                                                             abs=1e-8)


def test_potential_is_q_hat_plus_the_mild_term(loss):
    mild = Regularizer("log", 0.05)
    potential = bridge.Potential(loss, mild=mild)
    theta = np.stack([_point(10), _point(11)])
    values, _ = potential(theta)
    for i in range(2):
        a, b = bridge.unflatten(theta[i], P_, D_)
        q_hat = loss.objective(1.0)(a, b)[0]
        assert values[i] == pytest.approx(q_hat + mild.value(a) + mild.value(b), rel=1e-12)
        assert potential.mild_value(theta)[i] == pytest.approx(mild.value(a) + mild.value(b))
    value, grad_a, grad_b = potential.reference_objective()(*bridge.unflatten(theta[0], P_, D_))
    assert value == pytest.approx(values[0], rel=1e-12)
    np.testing.assert_allclose(bridge.flatten(grad_a, grad_b), potential(theta[:1])[1][0])
    with pytest.raises(TypeError, match="mild"):
        bridge.Potential(loss, mild="log")
    with pytest.raises(ValueError, match="coordinates"):
        bridge.Potential(loss, coordinates="U")
    factor = bridge.Potential(loss, mild=mild, coordinates="factor")
    u, v = loss.manifold.factor(*bridge.unflatten(theta[0], P_, D_))
    assert factor.mild_value(theta)[0] == pytest.approx(mild.value(u) + mild.value(v))


def test_excess_risks_match_the_population_loss(loss):
    problem = data.default_problem(rng=np.random.default_rng(0), d=D_, p=P_, kappa=10.0)
    theta = np.stack([[_point(12), _point(13)], [_point(14), _point(15)]])
    risks = bridge.excess_risks(theta, P_, D_, problem.Sigma, problem.M)
    assert risks.shape == (2, 2)
    a, b = bridge.unflatten(theta[1, 0], P_, D_)
    assert risks[1, 0] == pytest.approx(population.population_loss(a, b, problem.Sigma,
                                                                   problem.M))


def test_preconditioned_langevin_at_small_temperature_sits_near_the_minimum(loss):
    """On the bridge potential, preconditioned Langevin started at the certified minimizer of f
    keeps its mean within a factor 3 of the Laplace offset s D / 4: a check of the wiring (the
    law itself is tested in tests/test_langevin.py). The same chains with the noise scaled as
    for 10 s miss the band."""
    potential = bridge.Potential(loss, mild=Regularizer("log", 1e-6))
    optimum = reference.reference_minimizer(potential.reference_objective(),
                                            loss.manifold.point(), loss.Sigma_hat,
                                            hessian=False)
    start = np.tile(bridge.flatten(optimum.A, optimum.B), (4, 1))
    step = algorithm.default_step(*loss.manifold.point(), loss.Sigma_hat, loss.M_hat, lam=1.0,
                                  precondition=True)
    matrix = bridge.preconditioner_matrix(loss.Sigma_hat, P_)
    s, dim = 1e-6, potential.dim
    offsets = []
    for temperature in (s, 10 * s):
        run = langevin.euler_maruyama(potential, start, step=step, temperature=temperature,
                                      n_steps=1500, rng=np.random.default_rng(1),
                                      preconditioner=matrix, record_every=50)
        offsets.append(run.loss[10:].mean() - optimum.value)
    assert s * dim / 4 / 3 < offsets[0] < 3 * s * dim / 4, (offsets, s * dim / 4)
    assert offsets[1] > 3 * s * dim / 4, offsets
