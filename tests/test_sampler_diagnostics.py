"""Sampler diagnostics of attnlib.langevin: preconditioned MALA, step-size adaptation, split R-hat,
the effective sample size, the short-chain warning of the autocorrelation time, and the
observables invariant under the models' symmetry (qk_attention, population)."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
import pytest
from scipy.signal import lfilter

from attnlib import langevin as L
from attnlib import population, potentials, qk_attention

#: An anisotropic quadratic ``f = theta^T H theta / 2`` (condition number 30, axes rotated by
#: 30 degrees): Gibbs law ``N(0, (s/2) H^{-1})``.
_ROTATION = np.array([[np.cos(np.pi / 6), -np.sin(np.pi / 6)],
                      [np.sin(np.pi / 6), np.cos(np.pi / 6)]])
HESSIAN = _ROTATION @ np.diag([1.0, 30.0]) @ _ROTATION.T


def anisotropic(theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    grad = theta @ HESSIAN
    return 0.5 * np.sum(grad * theta, axis=1), grad


def ar1(rho: float, steps: int, chains: int, rng: np.random.Generator) -> np.ndarray:
    """Stationary AR(1) chains ``x_{t+1} = rho x_t + sqrt(1 - rho^2) e_t`` (unit variance),
    shape (steps, chains)."""
    start = rng.standard_normal(chains)
    noise = rng.standard_normal((steps, chains)) * np.sqrt(1 - rho ** 2)
    return lfilter([1.0], [1.0, -rho], noise, axis=0, zi=rho * start[None, :])[0]


def _reference_mala(loss_and_grad, theta0, *, step, temperature, n_steps, rng, record_every):
    """The MALA loop as it was before preconditioning and adaptation were added (a verbatim
    copy of its arithmetic), for the bit-for-bit comparison."""
    theta, h, s = np.array(theta0, dtype=float), step, temperature
    chains, dim = theta.shape
    loss, grad = loss_and_grad(theta)
    losses, states, accepted = [loss.copy()], [theta.copy()], 0
    for k in range(1, n_steps + 1):
        proposal = theta - h * grad + np.sqrt(s * h) * rng.standard_normal((chains, dim))
        new_loss, new_grad = loss_and_grad(proposal)
        forward = np.sum((proposal - theta + h * grad) ** 2, axis=1)
        backward = np.sum((theta - proposal + h * new_grad) ** 2, axis=1)
        log_ratio = -2.0 * (new_loss - loss) / s - (backward - forward) / (2.0 * s * h)
        accept = np.log(rng.uniform(size=chains)) < log_ratio
        theta[accept], loss[accept], grad[accept] = (proposal[accept], new_loss[accept],
                                                     new_grad[accept])
        accepted += int(accept.sum())
        if k % record_every == 0:
            losses.append(loss.copy())
            states.append(theta.copy())
    return np.array(losses), np.array(states), theta, accepted / (n_steps * chains)


# ----------------------------------------------------------------------------- MALA
@pytest.mark.parametrize("potential, dim", [(partial(potentials.double_well_2d, tilt=0.2), 2),
                                            (potentials.quadratic, 3)])
def test_mala_without_the_new_options_is_bitwise_the_former_sampler(potential, dim):
    start = np.random.default_rng(1).standard_normal((7, dim))
    kwargs = dict(step=0.2, temperature=0.7, n_steps=300, record_every=3)
    losses, states, theta, acceptance = _reference_mala(potential, start,
                                                        rng=np.random.default_rng(2), **kwargs)
    for extra in ({}, {"preconditioner": None, "adapt_steps": 0, "target_acceptance": 0.3}):
        run = L.mala(potential, start, rng=np.random.default_rng(2), record_states=True,
                     **kwargs, **extra)
        assert np.array_equal(run.loss, losses) and np.array_equal(run.states, states)
        assert np.array_equal(run.theta, theta) and run.acceptance == acceptance
        assert run.step == 0.2 and np.array_equal(run.times, 0.2 * 3 * np.arange(101))


@pytest.mark.parametrize("potential, dim", [(partial(potentials.double_well_2d, tilt=0.2), 2),
                                            (potentials.quadratic, 3)])
def test_mala_with_the_identity_preconditioner_is_bitwise_the_plain_sampler(potential, dim):
    start = np.random.default_rng(1).standard_normal((7, dim))
    kwargs = dict(step=0.2, temperature=0.7, n_steps=300, record_every=3, record_states=True)
    plain = L.mala(potential, start, rng=np.random.default_rng(2), **kwargs)
    identity = L.mala(potential, start, rng=np.random.default_rng(2), preconditioner=np.eye(dim),
                      **kwargs)
    for name in ("times", "loss", "theta", "states"):
        assert np.array_equal(getattr(plain, name), getattr(identity, name)), name
    assert plain.acceptance == identity.acceptance and 0.3 < plain.acceptance < 1.0


def _z_scores(states: np.ndarray, exact: dict[str, float]) -> dict[str, float]:
    """(chain mean - exact) / (std / sqrt(ESS)) for the first and second moments of 2-D
    states (R, chains, 2), with the multi-chain ESS of each observable's series."""
    x, y = states[..., 0], states[..., 1]
    series = {"x": x, "y": y, "xx": x * x, "xy": x * y, "yy": y * y}
    return {name: float((values.mean() - exact[name])
                        / (values.std() / np.sqrt(L.effective_sample_size(values))))
            for name, values in series.items()}


def test_preconditioned_adapted_mala_keeps_the_gibbs_law_of_an_anisotropic_gaussian():
    """Gibbs law N(0, (s/2) H^{-1}); P = an approximate inverse Hessian. Every moment lies within
    4.5 standard errors (autocorrelation-corrected by the ESS) of its exact value, with the
    step adapted in a warm-up (frozen afterwards, so the law is exact)."""
    s, chains = 0.8, 200
    covariance = 0.5 * s * np.linalg.inv(HESSIAN)
    start = np.random.default_rng(3).multivariate_normal(np.zeros(2), covariance, chains)
    P = np.linalg.inv(HESSIAN) * np.array([[1.2, 1.0], [1.0, 0.9]])        # roughly H^{-1}
    run = L.mala(anisotropic, start, step=0.01, temperature=s, n_steps=3000, record_every=5,
                 record_states=True, preconditioner=P, adapt_steps=500,
                 rng=np.random.default_rng(4))
    assert abs(run.acceptance - 0.574) < 0.1
    exact = {"x": 0.0, "y": 0.0, "xx": covariance[0, 0], "xy": covariance[0, 1],
             "yy": covariance[1, 1]}
    scores = _z_scores(run.states, exact)
    assert max(abs(z) for z in scores.values()) < 4.5, scores
    # the check has power: the same chains judged against the law at 1.2 s fail it
    wrong = _z_scores(run.states, {key: 1.2 * value for key, value in exact.items()})
    assert max(abs(z) for z in wrong.values()) > 10, wrong


def test_preconditioned_mala_keeps_the_gibbs_law_of_the_curved_double_well():
    """From exact (grid) Gibbs draws, the moments of preconditioned MALA at a step where
    Euler-Maruyama is visibly biased match quadrature within 5 standard errors
    (:func:`attnlib.langevin.gibbs_z_scores`)."""
    well = partial(potentials.double_well_2d, tilt=0.2)
    axes = [np.linspace(-2.6, 2.6, 261), np.linspace(-2.5, 4.5, 351)]
    moments = {"x": lambda z: z[..., 0], "y": lambda z: z[..., 1],
               "x^2": lambda z: z[..., 0] ** 2, "xy": lambda z: z[..., 0] * z[..., 1],
               "y^2": lambda z: z[..., 1] ** 2}
    s, P = 0.7, np.array([[1.0, 0.5], [0.5, 0.6]])
    start = L.gibbs_sample(well, axes, s, size=1000, rng=np.random.default_rng(5))
    run = L.mala(well, start, step=0.05, temperature=s, n_steps=1500, record_every=10,
                 record_states=True, preconditioner=P, rng=np.random.default_rng(6))
    assert 0.5 < run.acceptance < 1.0
    # the same proposals without the accept/reject step (preconditioned Euler-Maruyama)
    biased = L.euler_maruyama(well, start, step=0.05, temperature=s, n_steps=1500,
                              record_every=10, record_states=True, preconditioner=P,
                              rng=np.random.default_rng(6))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", L.AutocorrelationWarning)    # tau(x) is long
        scores = L.gibbs_z_scores(run.states[run.states.shape[0] // 2:], moments, well, axes, s)
        em_scores = L.gibbs_z_scores(biased.states[biased.states.shape[0] // 2:], moments, well,
                                     axes, s)
    assert max(abs(z) for z in scores.values()) < 5, scores
    assert max(abs(z) for z in em_scores.values()) > 8, em_scores       # the check has power


@pytest.mark.parametrize("target", [0.3, 0.574, 0.8])
def test_step_size_adaptation_reaches_the_target_acceptance(target):
    start = np.random.default_rng(7).standard_normal((100, 2)) * 0.1
    run = L.mala(partial(potentials.double_well_2d, tilt=0.2), start, step=0.001,
                 temperature=0.7, n_steps=400, record_every=4, adapt_steps=400,
                 target_acceptance=target, rng=np.random.default_rng(8))
    assert abs(run.acceptance - target) < 0.1
    assert run.step > 0.01                                 # moved far from the initial 0.001
    np.testing.assert_allclose(run.times, run.step * 4 * np.arange(101))


def test_adaptation_acts_in_the_preconditioned_metric():
    """With P = H^{-1} the target is isotropic in P's metric, so the adapted step is of order 1;
    without P it is limited by the stiff direction (curvature 30)."""
    start = np.zeros((100, 2))
    kwargs = dict(temperature=0.8, n_steps=200, adapt_steps=400, step=0.01)
    plain = L.mala(anisotropic, start, rng=np.random.default_rng(9), **kwargs)
    metric = L.mala(anisotropic, start, rng=np.random.default_rng(9),
                    preconditioner=np.linalg.inv(HESSIAN), **kwargs)
    assert abs(plain.acceptance - 0.574) < 0.1 and abs(metric.acceptance - 0.574) < 0.1
    assert metric.step > 10 * plain.step


def test_a_divergence_in_the_warm_up_is_named():
    def cliff(theta):
        loss, grad = potentials.quadratic(theta)
        return np.where(np.abs(theta).max(axis=1) > 5, np.nan, loss), grad

    with pytest.raises(L.LangevinDivergenceError, match="warm-up step 1 of 10") as caught:
        L.mala(cliff, np.full((3, 1), 4.9), step=50.0, temperature=1.0, n_steps=4,
               adapt_steps=10, rng=np.random.default_rng(0))
    assert caught.value.history["loss"].shape == (0, 3)


def test_mala_run_keeps_its_former_constructor():
    run = L.MalaRun(times=np.zeros(1), loss=np.zeros((1, 2)), theta=np.zeros((2, 1)),
                    acceptance=0.5)
    assert run.step is None and run.states is None


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(preconditioner=np.eye(3)), ValueError, r"preconditioner must have shape \(2, 2\)"),
    (dict(preconditioner=np.ones(2)), ValueError, "preconditioner must have 2 axes"),
    (dict(preconditioner=np.array([[1.0, 2.0], [2.0, 1.0]])), ValueError,
     "preconditioner must be positive definite"),
    (dict(preconditioner=np.array([[1.0, 0.5], [0.0, 1.0]])), ValueError,
     "preconditioner must be symmetric"),
    (dict(target_acceptance=0.0), ValueError, r"target_acceptance must lie in \(0, 1\)"),
    (dict(target_acceptance=1.0), ValueError, r"target_acceptance must lie in \(0, 1\)"),
    (dict(target_acceptance=1.5), ValueError, r"target_acceptance must lie in \(0, 1\)"),
    (dict(target_acceptance="high"), TypeError, "target_acceptance must be a real number"),
    (dict(adapt_steps=-1), ValueError, "adapt_steps must be at least 0"),
    (dict(adapt_steps=2.5), ValueError, "adapt_steps must be an integer"),
    (dict(adapt_steps=10 ** 9), ValueError, "adapt_steps must be at most"),
])
def test_mala_rejects_bad_new_arguments_by_name(kwargs, error, match):
    with pytest.raises(error, match=match):
        L.mala(anisotropic, np.zeros((3, 2)), step=0.1, temperature=1.0, n_steps=4,
               rng=np.random.default_rng(0), **kwargs)


# ----------------------------------------------------------------- autocorrelation time
def test_autocorrelation_time_warns_on_a_short_random_walk():
    walk = np.cumsum(np.random.default_rng(10).standard_normal((500, 4)), axis=0)
    with pytest.warns(L.AutocorrelationWarning, match=r"R = 500 records") as caught:
        tau = L.autocorrelation_time(walk)
    message = str(caught[0].message)
    assert "\n" not in message and f"tau = {tau:.3g}" in message
    assert f"at least {int(np.ceil(L.AUTOCORRELATION_TOLERANCE * tau))} records" in message
    assert caught[0].filename == __file__                  # points at the caller's line
    assert issubclass(L.AutocorrelationWarning, UserWarning)
    assert L.AUTOCORRELATION_TOLERANCE == 50


def test_autocorrelation_time_is_quiet_on_a_long_ar1_chain():
    series = ar1(0.5, 20_000, 4, np.random.default_rng(11))
    with warnings.catch_warnings():
        warnings.simplefilter("error", L.AutocorrelationWarning)
        tau = L.autocorrelation_time(series)
    assert tau == pytest.approx(3.0, rel=0.1)


# --------------------------------------------------------------------- R-hat and ESS
def _bda3_split_rhat(series: np.ndarray) -> float:
    """BDA3's split R-hat written out with loops, for comparison."""
    half = series.shape[0] // 2
    pieces = [series[:half, j] for j in range(series.shape[1])] \
        + [series[-half:, j] for j in range(series.shape[1])]
    m, n = len(pieces), half
    means = [sum(p) / n for p in pieces]
    grand = sum(means) / m
    within = sum(sum((v - mu) ** 2 for v in p) / (n - 1) for p, mu in zip(pieces, means)) / m
    between = n / (m - 1) * sum((mu - grand) ** 2 for mu in means)
    return float(np.sqrt(((n - 1) / n * within + between / n) / within))


@pytest.mark.parametrize("steps", [40, 41])
def test_split_rhat_is_the_bda3_formula(steps):
    series = np.random.default_rng(12).standard_normal((steps, 3)) + [0.0, 0.3, -0.2]
    assert L.split_rhat(series) == pytest.approx(_bda3_split_rhat(series), rel=1e-12)


def test_split_rhat_of_independent_chains_is_one():
    draws = np.random.default_rng(13).standard_normal((2000, 4))
    assert L.split_rhat(draws) == pytest.approx(1.0, abs=0.005)
    assert L.split_rhat(draws, rank_normalized=True) == pytest.approx(1.0, abs=0.005)
    # bulk rank normalisation ignores monotone maps: heavy tails do not matter
    assert L.split_rhat(np.exp(3 * draws), rank_normalized=True) == pytest.approx(1.0, abs=0.005)


def test_split_rhat_flags_chains_with_different_means_and_drifting_chains():
    rng = np.random.default_rng(14)
    apart = rng.standard_normal((1000, 4)) + np.array([0.0, 0.0, 0.0, 3.0])
    assert L.split_rhat(apart) > 1.3
    assert L.split_rhat(apart, rank_normalized=True) > 1.3
    # one chain with a trend: its two halves disagree (the point of splitting)
    drifting = np.linspace(0.0, 4.0, 1000)[:, None] + rng.standard_normal((1000, 1))
    assert L.split_rhat(drifting) > 1.3
    # equal means but different spreads: only the folded (tail) R-hat sees it
    spread = rng.standard_normal((1000, 4)) * np.array([1.0, 1.0, 1.0, 4.0])
    assert L.split_rhat(spread) < 1.01 < L.split_rhat(spread, rank_normalized=True)


@pytest.mark.parametrize("rho, steps, chains", [(0.5, 20_000, 8), (0.9, 40_000, 8),
                                                (-0.5, 20_000, 4)])
def test_effective_sample_size_of_ar1_chains(rho, steps, chains):
    """ESS / N -> (1 - rho) / (1 + rho) (above 1 for antithetic chains, rho < 0); the estimate
    scatters by about 2% between seeds at these lengths."""
    series = ar1(rho, steps, chains, np.random.default_rng(15))
    expected = (1 - rho) / (1 + rho)
    assert L.effective_sample_size(series) / series.size == pytest.approx(expected, rel=0.07)
    bulk = L.effective_sample_size(series, rank_normalized=True) / series.size
    assert bulk == pytest.approx(expected, rel=0.1)
    if rho > 0:               # Sokal's window estimates the same time
        tau = L.autocorrelation_time(series)
        assert series.size / L.effective_sample_size(series) == pytest.approx(tau, rel=0.07)


def test_effective_sample_size_of_independent_and_of_separated_chains():
    draws = np.random.default_rng(16).standard_normal((2000, 4))
    assert L.effective_sample_size(draws) / draws.size == pytest.approx(1.0, abs=0.1)
    # chains stuck at different means: their disagreement counts as correlation
    apart = draws + np.array([0.0, 0.0, 0.0, 3.0])
    assert L.effective_sample_size(apart) < 0.1 * draws.size


def test_rhat_and_ess_match_arviz():
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(17)
    series = ar1(0.7, 2000, 4, rng) + np.array([0.0, 0.1, 0.0, -0.1])
    chains_first = series.T                                  # arviz: (chain, draw)
    assert L.split_rhat(series) == pytest.approx(
        float(az.rhat(chains_first, method="split")), rel=1e-10)
    assert L.split_rhat(series, rank_normalized=True) == pytest.approx(
        float(az.rhat(chains_first, method="rank")), rel=1e-10)
    assert L.effective_sample_size(series) == pytest.approx(
        float(az.ess(chains_first, method="mean")), rel=1e-8)
    assert L.effective_sample_size(series, rank_normalized=True) == pytest.approx(
        float(az.ess(chains_first, method="bulk")), rel=1e-8)


@pytest.mark.parametrize("function", [L.split_rhat, L.effective_sample_size])
def test_rhat_and_ess_reject_bad_series_by_name(function):
    with pytest.raises(ValueError, match="series needs at least 8 records"):
        function(np.ones((7, 2)))
    with pytest.raises(ValueError, match="series must have 2 axes"):
        function(np.ones(100))
    with pytest.raises(ValueError, match="series contains NaN"):
        function(np.full((10, 2), np.nan))
    with pytest.raises(ValueError, match="series has no variation within its chains"):
        function(np.tile([1.0, 2.0], (10, 1)))
    with pytest.raises(TypeError, match="rank_normalized must be True or False"):
        function(np.random.default_rng(0).standard_normal((10, 2)), rank_normalized="yes")


# --------------------------------------------------------------- invariant observables
def test_query_key_product_is_invariant_under_the_gl_dk_action():
    problem = qk_attention.make_problem(rng=np.random.default_rng(18), d=3, d_k=2)
    theta = np.random.default_rng(19).standard_normal((5, problem.dim))
    G = np.array([[3.0, 1.0], [-0.5, 0.4]])
    product = problem.query_key_product(theta)
    W_Q, W_K = problem.unpack(theta)
    np.testing.assert_allclose(product, W_Q @ np.swapaxes(W_K, 1, 2), rtol=1e-14)
    np.testing.assert_allclose(problem.query_key_product(problem.act(theta, G)), product,
                               rtol=1e-10, atol=1e-12)
    # a sampler's states (R, chains, D) give one product per record and chain
    states = np.stack([theta, problem.act(theta, G)])
    assert problem.query_key_product(states).shape == (2, 5, 3, 3)
    assert problem.query_key_product(theta[0]).shape == (3, 3)
    with pytest.raises(ValueError, match=rf"theta must have shape \(\.\.\., {problem.dim}\)"):
        problem.query_key_product(theta[:, :-1])


def test_effective_map_is_invariant_and_determines_the_population_loss():
    rng = np.random.default_rng(20)
    p, d = 2, 3
    A, B, M = rng.standard_normal((p, d)), rng.standard_normal((d, d)), rng.standard_normal((p, d))
    Sigma = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])
    K = rng.standard_normal((d, d)) + 2 * np.eye(d)
    moved = (A @ K, B @ Sigma @ np.linalg.inv(K).T @ np.linalg.inv(Sigma))
    np.testing.assert_allclose(population.effective_map(*moved, Sigma),
                               population.effective_map(A, B, Sigma), rtol=1e-10, atol=1e-12)
    assert population.population_loss(*moved, Sigma, M) == pytest.approx(
        population.population_loss(A, B, Sigma, M), rel=1e-10)
    batched = population.effective_map(np.stack([A, moved[0]]), np.stack([B, moved[1]]), Sigma)
    assert batched.shape == (2, p, d)
    np.testing.assert_allclose(batched[0], A @ Sigma @ B.T, rtol=1e-14)
    with pytest.raises(ValueError, match="leading"):
        population.effective_map(np.stack([A, A]), B, Sigma)
    with pytest.raises(ValueError, match="B must have shape"):
        population.effective_map(A, B[:2], Sigma)
    with pytest.raises(ValueError, match="Sigma must be positive definite"):
        population.effective_map(A, B, -Sigma)
