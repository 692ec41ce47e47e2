"""Tests of attnlib.langevin (Euler-Maruyama chains, Gibbs helpers) and attnlib.potentials."""

import warnings
from functools import partial

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from attnlib import langevin as L
from attnlib import potentials as P

A, S, T, M0 = 1.0, 1.0, 1.0, 2.0
OU = partial(P.quadratic, curvature=A)


def _ou_moments(t: float) -> tuple[float, float]:
    """Closed-form mean and variance of d x = -a x dt + sqrt(s) dB from x_0 = m0."""
    return M0 * np.exp(-A * t), S / (2 * A) * (1 - np.exp(-2 * A * t))


def _em_moments(h: float, n: int) -> tuple[float, float]:
    """Exact mean and variance of the EM chain x_{k+1} = (1 - a h) x_k + sqrt(s h) xi."""
    rho = 1 - A * h
    return M0 * rho**n, S * h * (1 - rho ** (2 * n)) / (1 - rho**2)


def _ou_final(h: float, chains: int, seed: int) -> np.ndarray:
    n = int(round(T / h))
    run = L.euler_maruyama(OU, np.full((chains, 1), M0), step=h, temperature=S, n_steps=n,
                           rng=np.random.default_rng(seed), record_every=n)
    return run.theta[:, 0]


def test_weak_order_one_on_ornstein_uhlenbeck():
    """Errors of mean and variance at time T against the closed form shrink linearly in h."""
    steps = np.array([0.25, 0.125, 0.0625, 0.03125])
    chains = 400_000
    mean_err, var_err = [], []
    for h in steps:
        x = _ou_final(h, chains, seed=1)
        m, v = _ou_moments(T)
        mean_err.append(abs(x.mean() - m))
        var_err.append(abs(x.var() - v))
        # the Monte Carlo estimate agrees with the exact moments of the discrete chain
        m_h, v_h = _em_moments(h, int(round(T / h)))
        assert abs(x.mean() - m_h) < 5 * np.sqrt(v_h / chains)
        assert abs(x.var() - v_h) < 5 * v_h * np.sqrt(2 / chains)
    for err in (mean_err, var_err):
        slope = np.polyfit(np.log(steps), np.log(err), 1)[0]
        assert 0.8 < slope < 1.2, (slope, err)


def test_stationary_law_matches_gibbs_measure():
    """A long OU run is N(0, s / (2a - a^2 h)) (the EM stationary law), close to exp(-2f/s)."""
    h, chains = 0.01, 20_000
    run = L.euler_maruyama(OU, np.zeros((chains, 1)), step=h, temperature=S, n_steps=1000,
                           rng=np.random.default_rng(2), record_every=1000)
    var_em = S / (2 * A - A * A * h)
    assert abs(run.theta.var() - var_em) < 5 * var_em * np.sqrt(2 / chains)
    edges = [np.linspace(-4, 4, 41)]
    probs = L.gibbs_bin_probabilities(OU, edges, S)
    tv = L.histogram_tv(run.theta, edges, probs)
    # an exact sample of the same size from the Gibbs law sets the noise level
    exact = np.random.default_rng(3).normal(0, np.sqrt(S / (2 * A)), (chains, 1))
    tv_exact = L.histogram_tv(exact, edges, probs)
    assert tv < 3 * tv_exact + 0.01
    far = L.histogram_tv(np.full((chains, 1), 1.0), edges, probs)
    assert far > 0.5


def test_determinism_and_records():
    kwargs = dict(step=0.05, temperature=0.5, n_steps=20, record_every=5,
                  blocks={"first": slice(0, 2), "last": slice(2, 3)}, record_states=True)
    theta0 = np.ones((7, 3))
    run1 = L.euler_maruyama(OU, theta0, rng=np.random.default_rng(4), **kwargs)
    run2 = L.euler_maruyama(OU, theta0, rng=np.random.default_rng(4), **kwargs)
    run3 = L.euler_maruyama(OU, theta0, rng=np.random.default_rng(5), **kwargs)
    np.testing.assert_array_equal(run1.loss, run2.loss)
    np.testing.assert_array_equal(run1.theta, run2.theta)
    assert not np.allclose(run1.theta, run3.theta)
    assert run1.loss.shape == (5, 7) and run1.block_norms.shape == (5, 7, 2)
    np.testing.assert_allclose(run1.times, [0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(run1.states[-1], run1.theta)
    np.testing.assert_allclose(run1.loss[-1], OU(run1.theta)[0])
    np.testing.assert_allclose(run1.block_norms[2, :, 0],
                               np.linalg.norm(run1.states[2][:, :2], axis=1))
    np.testing.assert_array_equal(theta0, 1.0)  # the input is not modified


def test_one_step_is_the_euler_maruyama_formula():
    theta0 = np.array([[0.3, -1.2], [2.0, 0.5]])
    h, s = 0.1, 0.7
    run = L.euler_maruyama(P.double_well_2d, theta0, step=h, temperature=s, n_steps=1,
                           rng=np.random.default_rng(6))
    xi = np.random.default_rng(6).standard_normal((2, 2))
    expected = theta0 - h * P.double_well_2d(theta0)[1] + np.sqrt(s * h) * xi
    np.testing.assert_allclose(run.theta, expected, rtol=1e-14)


@pytest.mark.parametrize("kwargs, message", [
    (dict(step=0.0), "step"),
    (dict(step=-1.0), "step"),
    (dict(temperature=0.0), "temperature"),
    (dict(temperature=np.inf), "temperature"),
    (dict(n_steps=0), "n_steps"),
    (dict(n_steps=10, record_every=3), "multiple of record_every"),
    (dict(blocks={"b": slice(5, 9)}), "blocks"),
])
def test_bad_arguments(kwargs, message):
    base = dict(step=0.1, temperature=1.0, n_steps=4, rng=np.random.default_rng(0))
    base.update(kwargs)
    with pytest.raises(ValueError, match=message):
        L.euler_maruyama(OU, np.zeros((3, 2)), **base)


def test_bad_shapes_and_rng():
    with pytest.raises(ValueError, match="theta0"):
        L.euler_maruyama(OU, np.zeros(3), step=0.1, temperature=1.0, n_steps=1,
                         rng=np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        L.euler_maruyama(OU, np.zeros((3, 1)), step=0.1, temperature=1.0, n_steps=1, rng=0)
    with pytest.raises(ValueError, match="gradient of shape"):
        L.euler_maruyama(lambda t: (t[:, 0], t[:, :1]), np.zeros((3, 2)), step=0.1,
                         temperature=1.0, n_steps=1, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="loss of shape"):
        L.euler_maruyama(lambda t: (t, t), np.zeros((3, 2)), step=0.1,
                         temperature=1.0, n_steps=1, rng=np.random.default_rng(0))


def test_blow_up_stops_with_clear_error():
    """f = x^4 with a large step: the explicit scheme diverges and the run stops."""
    def quartic(t):
        return np.sum(t**4, axis=1), 4 * t**3
    with np.errstate(over="ignore", invalid="ignore"), \
            pytest.raises(L.LangevinDivergenceError, match="step"):
        L.euler_maruyama(quartic, np.full((4, 1), 3.0), step=0.5, temperature=0.1,
                         n_steps=50, rng=np.random.default_rng(0))


@pytest.mark.parametrize("potential, dim", [
    (P.double_well, 1), (partial(P.double_well, tilt=0.3), 1), (P.double_well_2d, 2),
    (partial(P.double_well_2d, tilt=-0.2, stiffness=3.0, bend=0.8), 2),
    (P.bounded_well, 3), (partial(P.log_well, alpha=0.7), 2), (OU, 4),
])
def test_potential_gradients_against_finite_differences(potential, dim):
    theta = np.random.default_rng(7).normal(size=(5, dim))
    loss, grad = potential(theta)
    eps = 1e-6
    for j in range(dim):
        e = np.zeros(dim)
        e[j] = eps
        fd = (potential(theta + e)[0] - potential(theta - e)[0]) / (2 * eps)
        np.testing.assert_allclose(grad[:, j], fd, rtol=1e-7, atol=1e-8)


def test_spectral_gap_of_ornstein_uhlenbeck():
    """-L for f = (a/2) x^2 has eigenvalues 0, a, 2a, ... in 1-D (and a twice in 2-D)."""
    a = 3.0
    f = partial(P.quadratic, curvature=a)
    eig = L.spectral_gap(f, [np.linspace(-4, 4, 401)], 1.0, n_eigenvalues=3)
    np.testing.assert_allclose(eig, [0, a, 2 * a], atol=2e-3 * a)
    axis = np.linspace(-4, 4, 121)
    eig2 = L.spectral_gap(f, [axis, axis], 1.0, n_eigenvalues=3)
    np.testing.assert_allclose(eig2, [0, a, a], atol=1e-2 * a)


def test_gibbs_helpers_on_a_gaussian():
    s = 0.5
    axis = np.linspace(-5, 5, 2001)
    density = L.gibbs_density(OU, [axis], s)
    np.testing.assert_allclose(density, np.exp(-axis**2 / s) / np.sqrt(np.pi * s), atol=1e-10)
    # E f = s D / 4 exactly for a quadratic (equipartition)
    assert L.gibbs_expectation(OU, [axis], s) == pytest.approx(s / 4, rel=1e-8)
    grid2 = [np.linspace(-4, 4, 201), np.linspace(-4, 4, 201)]
    assert L.gibbs_expectation(OU, grid2, s) == pytest.approx(s / 2, rel=1e-8)
    from scipy.stats import norm
    cdf = norm(scale=np.sqrt(s / 2)).cdf
    expected_x = np.diff(cdf(np.linspace(-4, 4, 9)))
    expected_x /= expected_x.sum()
    errors = []
    for refine in (16, 64):  # midpoint rule: error O(refine^-2)
        probs = L.gibbs_bin_probabilities(
            OU, [np.linspace(-4, 4, 9), np.linspace(-4, 4, 5)], s, refine=refine)
        assert probs.shape == (8, 4) and probs.sum() == pytest.approx(1.0)
        errors.append(np.abs(probs.sum(axis=1) - expected_x).max())
    assert errors[1] < 1e-5 and 10 < errors[0] / errors[1] < 20


@settings(deadline=None, max_examples=20)
@given(st.lists(st.floats(-3, 3), min_size=2, max_size=30))
def test_tv_is_a_distance_in_unit_interval(values):
    x = np.array(values)[:, None]
    edges = [np.linspace(-2, 2, 9)]
    probs = L.gibbs_bin_probabilities(OU, edges, 1.0)
    tv = L.histogram_tv(x, edges, probs)
    assert 0.0 <= tv <= 1.0
    inside = x[(x[:, 0] >= -2) & (x[:, 0] <= 2)]
    if inside.shape[0]:
        counts, _ = np.histogram(inside[:, 0], bins=edges[0])
        assert L.histogram_tv(inside, edges, counts / counts.sum()) == pytest.approx(0.0)


def test_summaries():
    values = np.array([[1.0, 3.0], [2.0, 2.0]])
    mean, err = L.chain_mean(values)
    np.testing.assert_allclose(mean, [2.0, 2.0])
    np.testing.assert_allclose(err, [1.0, 0.0])
    loss = np.vstack([np.full((2, 3), 5.0), np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])])
    assert L.tail_mean(loss, fraction=0.5) == pytest.approx((2.0, 1 / np.sqrt(3)))
    times = np.arange(6.0)
    gap = np.array([1.0, 0.5, 0.05, 0.2, 0.01, 0.005])
    np.testing.assert_allclose(L.hitting_times(times, gap, [0.6, 0.1, 0.001]), [1, 4, np.nan])
    with pytest.raises(ValueError, match="fraction"):
        L.tail_mean(loss, fraction=0)
    with pytest.raises(ValueError, match="two chains"):
        L.chain_mean(np.ones((3, 1)))


def test_mala_removes_the_step_size_bias_on_ornstein_uhlenbeck():
    """At h = 0.5 the EM chain's stationary variance is s / (2a - a^2 h) = 2/3; MALA's is s/(2a)."""
    h, chains = 0.5, 20_000
    start = np.random.default_rng(4).normal(0, np.sqrt(S / (2 * A)), (chains, 1))
    run = L.mala(OU, start, step=h, temperature=S, n_steps=200, rng=np.random.default_rng(5),
                 record_every=200)
    var = run.theta.var()
    assert abs(var - S / (2 * A)) < 5 * S / (2 * A) * np.sqrt(2 / chains)
    assert abs(var - S / (2 * A - A * A * h)) > 0.1           # far from the EM law
    assert 0.5 < run.acceptance < 1.0


def test_mala_stationary_law_matches_double_well_gibbs_density():
    """From a point mass, MALA's histogram converges to exp(-2f/s) bins; E f matches the grid."""
    s, chains = 0.7, 4_000
    well = partial(P.double_well, tilt=0.2)
    run = L.mala(well, np.full((chains, 1), 1.0), step=0.1, temperature=s, n_steps=3000,
                 rng=np.random.default_rng(6), record_every=10, record_states=True)
    edges = [np.linspace(-2.5, 2.5, 26)]
    probs = L.gibbs_bin_probabilities(well, edges, s)
    pooled = run.states[150:].reshape(-1, 1)                  # t >= 150: well past relaxation
    assert L.histogram_tv(pooled, edges, probs) < 0.02
    mean, err = L.tail_mean(run.loss, fraction=0.5)
    exact = L.gibbs_expectation(well, [np.linspace(-3, 3, 6001)], s)
    assert abs(mean - exact) < 4 * err + 1e-3
    em = L.euler_maruyama(well, np.full((chains, 1), 1.0), step=0.1, temperature=s,
                          n_steps=3000, rng=np.random.default_rng(6), record_every=10)
    em_mean, em_err = L.tail_mean(em.loss, fraction=0.5)
    assert em_mean - exact > 4 * em_err                        # EM at h = 0.1 is biased


def test_mala_is_deterministic_and_checks_arguments():
    kwargs = dict(step=0.1, temperature=1.0, n_steps=4, record_every=2)
    a = L.mala(OU, np.ones((3, 1)), rng=np.random.default_rng(0), **kwargs)
    b = L.mala(OU, np.ones((3, 1)), rng=np.random.default_rng(0), **kwargs)
    np.testing.assert_array_equal(a.loss, b.loss)
    assert a.loss.shape == (3, 3) and a.times.tolist() == [0.0, 0.2, 0.4]
    with pytest.raises(ValueError, match="multiple of record_every"):
        L.mala(OU, np.ones((3, 1)), step=0.1, temperature=1.0, n_steps=3, record_every=2,
               rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="step"):
        L.mala(OU, np.ones((3, 1)), step=0.0, temperature=1.0, n_steps=3,
               rng=np.random.default_rng(0))


def _ar1(tau: float, steps: int, chains: int, rng: np.random.Generator) -> np.ndarray:
    """Stationary AR(1) chains ``x_{k+1} = phi x_k + noise`` with integrated autocorrelation
    time ``tau = (1 + phi) / (1 - phi)``."""
    phi = (tau - 1) / (tau + 1)
    x = np.empty((steps, chains))
    x[0] = rng.standard_normal(chains) / np.sqrt(1 - phi**2)
    for k in range(1, steps):
        x[k] = phi * x[k - 1] + rng.standard_normal(chains)
    return x


def test_autocorrelation_time_of_an_ar1_process():
    rng = np.random.default_rng(7)
    for phi in (0.0, 0.8):
        tau = L.autocorrelation_time(_ar1((1 + phi) / (1 - phi), 4000, 100, rng))
        assert tau == pytest.approx((1 + phi) / (1 - phi), rel=0.1)
    with pytest.raises(ValueError, match="constant"):
        L.autocorrelation_time(np.ones((10, 2)))
    with pytest.raises(ValueError, match="at least 8"):
        L.autocorrelation_time(np.ones((5, 2)))


@pytest.mark.parametrize("tau", [5.0, 10.0, 20.0])
def test_autocorrelation_time_is_unbiased_at_the_chapters_run_length(tau):
    """64 chains x 640 records (chapter 10's shape): the mean estimate over 32 independent
    sets is within 5% of the known time (one set scatters by about 8% at tau = 20, so the
    mean over sets tests the bias; removing each chain's own mean fails this at tau >= 10)."""
    rng = np.random.default_rng(int(tau))
    short = 640 < L.AUTOCORRELATION_TOLERANCE * tau      # at tau = 20: each chain is 32 tau long
    with pytest.warns(L.AutocorrelationWarning) if short else warnings.catch_warnings():
        if not short:
            warnings.simplefilter("error", L.AutocorrelationWarning)
        estimates = [L.autocorrelation_time(_ar1(tau, 640, 64, rng)) for _ in range(32)]
    assert np.mean(estimates) == pytest.approx(tau, rel=0.05)


def test_gibbs_sample_has_the_gibbs_moments():
    x = L.gibbs_sample(OU, [np.linspace(-5, 5, 1001)], S, size=50_000,
                       rng=np.random.default_rng(8))
    assert x.shape == (50_000, 1)
    var = S / (2 * A)
    assert abs(x.mean()) < 5 * np.sqrt(var / x.shape[0])
    assert abs(x.var() - var) < 5 * var * np.sqrt(2 / x.shape[0])
    well = partial(P.double_well_2d, tilt=0.2)
    axes = [np.linspace(-2.5, 2.5, 201), np.linspace(-2.0, 4.0, 241)]
    y = L.gibbs_sample(well, axes, 0.7, size=40_000, rng=np.random.default_rng(9))
    f = well(y)[0]
    assert abs(f.mean() - L.gibbs_expectation(well, axes, 0.7)) < 5 * f.std() / 200
    with pytest.raises(ValueError, match="size"):
        L.gibbs_sample(OU, [np.linspace(-5, 5, 11)], S, size=0, rng=np.random.default_rng(0))


# ---------------------------------------------------------------- preconditioned Langevin

WELL_2D = partial(P.double_well_2d, tilt=0.2)
WELL_AXES = [np.linspace(-2.6, 2.6, 261), np.linspace(-2.5, 4.5, 351)]
PRECONDITIONER = np.array([[1.0, 0.5], [0.5, 0.6]])        # SPD, not diagonal


MOMENTS = {"x": lambda z: z[..., 0], "y": lambda z: z[..., 1],
           "x^2": lambda z: z[..., 0] ** 2, "xy": lambda z: z[..., 0] * z[..., 1],
           "y^2": lambda z: z[..., 1] ** 2}


def _z_scores(run_temperature: float, *, preconditioner: np.ndarray | None, step: float = 0.01,
              n_steps: int = 4000, chains: int = 2000, s: float = 0.7) -> dict[str, float]:
    """Chains started from the Gibbs law exp(-2f/s) of the 2-D curved double well, run at
    ``run_temperature``; z-scores of five moments over the second half against quadrature
    (:func:`attnlib.langevin.gibbs_z_scores`)."""
    start = L.gibbs_sample(WELL_2D, WELL_AXES, s, size=chains, rng=np.random.default_rng(10))
    run = L.euler_maruyama(WELL_2D, start, step=step, temperature=run_temperature,
                           n_steps=n_steps, rng=np.random.default_rng(11), record_every=20,
                           record_states=True, preconditioner=preconditioner)
    return L.gibbs_z_scores(run.states[run.states.shape[0] // 2:], MOMENTS, WELL_2D, WELL_AXES,
                            s)


def test_gibbs_z_scores_of_exact_samples_are_standard():
    """Independent exact draws (tau = 1) give z-scores of order one; a shifted sample does not."""
    draws = L.gibbs_sample(WELL_2D, WELL_AXES, 0.7, size=40_000, rng=np.random.default_rng(20))
    states = draws.reshape(200, 200, 2)
    scores = L.gibbs_z_scores(states, MOMENTS, WELL_2D, WELL_AXES, 0.7)
    assert max(abs(z) for z in scores.values()) < 4.5, scores
    shifted = L.gibbs_z_scores(states + 0.05, MOMENTS, WELL_2D, WELL_AXES, 0.7)
    assert abs(shifted["x"]) > 6 and abs(shifted["y"]) > 6, shifted
    with pytest.raises(ValueError, match="observables"):
        L.gibbs_z_scores(states, {}, WELL_2D, WELL_AXES, 0.7)
    with pytest.raises(ValueError, match="states"):
        L.gibbs_z_scores(states[..., :1], MOMENTS, WELL_2D, WELL_AXES, 0.7)


def test_preconditioned_stationary_law_is_the_gibbs_density():
    """With a non-diagonal constant P, exp(-2f/s) stays the stationary law: five moments agree
    with quadrature within 4.5 standard errors (autocorrelation-corrected); the same check
    fails for noise scaled as if the temperature were 10% or 25% higher, and for a step whose
    O(h) bias is visible (h = 0.05). The 10% case needs 8000 chains: with standard errors from
    the autocorrelation time pooled over chains (not biased low) 2000 chains reach only about
    4.5 standard errors there."""
    correct = _z_scores(0.7, preconditioner=PRECONDITIONER)
    assert max(abs(z) for z in correct.values()) < 4.5, correct
    plain = _z_scores(0.7, preconditioner=None)
    assert max(abs(z) for z in plain.values()) < 4.5, plain
    for factor, chains in ((1.1, 8000), (1.25, 2000)):
        wrong = _z_scores(0.7 * factor, preconditioner=PRECONDITIONER, chains=chains)
        assert max(abs(z) for z in wrong.values()) > 6, (factor, wrong)
    coarse = _z_scores(0.7, preconditioner=PRECONDITIONER, step=0.05, n_steps=800)
    assert max(abs(z) for z in coarse.values()) > 6, coarse


def test_one_preconditioned_step_is_the_formula():
    """theta_1 = theta_0 - h P grad f + sqrt(s h) P^{1/2} xi with the symmetric square root."""
    theta0 = np.array([[0.3, -0.2], [1.1, 0.4], [-0.7, 0.9]])
    h, s = 0.05, 0.3
    run = L.euler_maruyama(P.double_well_2d, theta0, step=h, temperature=s, n_steps=1,
                           rng=np.random.default_rng(12), preconditioner=PRECONDITIONER)
    xi = np.random.default_rng(12).standard_normal(theta0.shape)
    values, vectors = np.linalg.eigh(PRECONDITIONER)
    root = vectors @ np.diag(np.sqrt(values)) @ vectors.T
    np.testing.assert_allclose(root @ root, PRECONDITIONER, atol=1e-14)
    grad = P.double_well_2d(theta0)[1]
    expected = theta0 - h * grad @ PRECONDITIONER.T + np.sqrt(s * h) * xi @ root.T
    np.testing.assert_allclose(run.theta, expected, rtol=1e-13, atol=1e-15)
    same = L.euler_maruyama(P.double_well_2d, theta0, step=h, temperature=s, n_steps=3,
                            rng=np.random.default_rng(13), preconditioner=np.eye(2))
    plain = L.euler_maruyama(P.double_well_2d, theta0, step=h, temperature=s, n_steps=3,
                             rng=np.random.default_rng(13))
    np.testing.assert_allclose(same.theta, plain.theta, rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("matrix, message", [
    (np.array([[1.0, 2.0], [2.0, 1.0]]), "positive definite"),
    (np.array([[1.0, 0.5], [0.0, 1.0]]), "symmetric"),
    (np.eye(3), r"shape \(2, 2\)"),
])
def test_bad_preconditioner(matrix, message):
    with pytest.raises(ValueError, match=message):
        L.euler_maruyama(P.double_well_2d, np.zeros((3, 2)), step=0.1, temperature=1.0,
                         n_steps=1, rng=np.random.default_rng(0), preconditioner=matrix)
