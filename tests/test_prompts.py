"""Tests of the prompts reconstruction: attnlib.prompts, algorithm.prompts_loss, the delta method."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from attnlib import algorithm, attention, data, population, prompts, symbolic
from conftest import central_difference


@pytest.fixture(scope="module")
def task():
    return data.default_problem(rng=np.random.default_rng(5), d=3, p=4, kappa=4.0, noise_std=0.2)


def test_whitened_prompts_have_exact_pooled_moments(task) -> None:
    x, y = prompts.sample_prompts(task, 6, 7, rng=np.random.default_rng(0), whiten=True)
    assert x.shape == (6, 7, 3) and y.shape == (6, 7, 4)
    sigma_hat, m_hat = population.empirical_moments(x.reshape(-1, 3), y.reshape(-1, 4))
    np.testing.assert_allclose(sigma_hat, task.Sigma, atol=1e-12)
    np.testing.assert_allclose(m_hat, task.M, atol=1e-12)
    raw, _ = prompts.sample_prompts(task, 6, 7, rng=np.random.default_rng(0))
    assert np.abs(population.empirical_moments(raw.reshape(-1, 3), y.reshape(-1, 4))[0]
                  - task.Sigma).max() > 1e-3
    with pytest.raises(ValueError, match="more than d"):
        prompts.sample_prompts(task, 1, 3, rng=np.random.default_rng(0), whiten=True)


def test_prompts_loss_uses_pooled_moments_and_plugs_into_train(task) -> None:
    x, y = prompts.sample_prompts(task, 5, 12, rng=np.random.default_rng(1))
    loss = algorithm.prompts_loss(x, y)
    sigma_hat, m_hat = population.empirical_moments(x.reshape(-1, 3), y.reshape(-1, 4))
    np.testing.assert_allclose(loss.Sigma_hat, sigma_hat)
    np.testing.assert_allclose(loss.M_hat, m_hat)
    assert loss.n_queries == 60
    a, b = loss.manifold.point()
    value, grad_a, grad_b = loss(a, b)
    want = attention.prompts_loss_and_grad(a, b, x, y)
    assert value == want[0]
    result = algorithm.train(loss, algorithm.METHODS["sgd"], iterations=5, problem=task,
                             rng=np.random.default_rng(2))
    assert result.history["objective"].size == 6 and not result.diverged
    with pytest.raises(ValueError, match="at most the number of query rows 60"):
        algorithm.train(loss, algorithm.Method(batch_size=61), rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="attnlib.prompts.deployed_risk"):
        algorithm.train(loss, test=(x[0], y[0]))


def test_one_prompt_trains_exactly_like_the_one_set_reconstruction(task) -> None:
    x, y = task.sample(40, rng=np.random.default_rng(3))
    one_set = algorithm.train(algorithm.empirical_loss(x, y), iterations=8)
    one_prompt = algorithm.train(algorithm.prompts_loss(x[None], y[None]), iterations=8)
    np.testing.assert_allclose(one_prompt.history["objective"], one_set.history["objective"],
                               rtol=1e-12)
    np.testing.assert_allclose(one_prompt.A, one_set.A, rtol=1e-11, atol=1e-14)


def test_prompts_objective_gradient_matches_finite_differences(task) -> None:
    x, y = prompts.sample_prompts(task, 3, 6, rng=np.random.default_rng(4))
    objective = algorithm.prompts_loss(x, y, mask="all").objective(0.7)
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((4, 3)) / 2, rng.standard_normal((3, 3)) / 2
    _, _, grad_a, grad_b = objective(a, b)
    np.testing.assert_allclose(grad_a, central_difference(lambda t: objective(t, b)[0], a), rtol=1e-6,
                               atol=1e-9)
    np.testing.assert_allclose(grad_b, central_difference(lambda t: objective(a, t)[0], b), rtol=1e-6,
                               atol=1e-9)


def test_prompts_loss_rejects_bad_input(task) -> None:
    x, y = prompts.sample_prompts(task, 2, 5, rng=np.random.default_rng(6))
    with pytest.raises(ValueError, match="3 axes"):
        algorithm.prompts_loss(x[0], y[0])
    with pytest.raises(ValueError, match="mask"):
        algorithm.prompts_loss(x, y, mask="none")
    with pytest.raises(ValueError, match="moments imply"):
        algorithm.prompts_loss(x, y, moments=(np.eye(3), np.eye(5)[:, :3]))


def test_context_correction_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(7)
    xstar = 0.3 * rng.standard_normal((5, 3))
    u, v = 0.4 * rng.standard_normal((5, 3)), 0.3 * rng.standard_normal((3, 3))
    _, grad_u, grad_v = prompts.context_correction(u, v, xstar)
    np.testing.assert_allclose(grad_u, central_difference(
        lambda t: prompts.context_correction(t, v, xstar)[0], u), rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(grad_v, central_difference(
        lambda t: prompts.context_correction(u, t, xstar)[0], v), rtol=1e-6, atol=1e-9)
    rotation = data.random_rotation(3, rng=rng)
    assert prompts.context_correction(u @ rotation, v @ rotation, xstar)[0] == pytest.approx(
        prompts.context_correction(u, v, xstar)[0], rel=1e-12)
    with pytest.raises(ValueError, match="1/2"):
        prompts.context_correction(u, np.eye(3), xstar)


def test_symbolic_ratio_estimator_moments_match_the_closed_forms() -> None:
    for identity in symbolic.ratio_estimator_moments():
        assert identity.holds(), identity.name


def test_prompt_averaged_loss_approaches_the_closed_form_like_g_over_m() -> None:
    """Monte Carlo with error bars: E L_hat_n(theta) - L(theta) = G / (n - 1) + O(n^-2) at a
    point with ||V||^2 well below 1/4 (where the next term of the expansion is finite)."""
    rng = np.random.default_rng(8)
    sigma = data.covariance(3, kappa=3.0, rng=rng)
    problem = data.RegressionProblem(Sigma=sigma, M=0.3 * rng.standard_normal((4, 3)),
                                     noise_std=0.0)
    _, inv_half = population.spd_sqrt(sigma)
    u, v = 0.4 * rng.standard_normal((4, 3)), 0.12 * rng.standard_normal((3, 3))
    assert np.linalg.norm(v, 2) ** 2 < 0.25
    a, b = u @ inv_half, inv_half @ v @ inv_half
    xstar = population.target(problem.M, sigma)
    limit = population.population_loss(a, b, sigma, problem.M)
    g = prompts.context_correction(u, v, xstar)[0]
    gaps, errors = [], []
    for n in (6, 24, 96):
        values = [attention.prompts_loss_and_grad(a, b, *prompts.sample_prompts(
            problem, 4000 // n, n, rng=rng))[0] for _ in range(30)]
        gaps.append(np.mean(values) - limit)
        errors.append(np.std(values, ddof=1) / np.sqrt(len(values)))
        assert abs(gaps[-1] - g / (n - 1)) <= 4 * errors[-1] + 2.0 * g / (n - 1) ** 2
    assert gaps[0] > gaps[1] > gaps[2] - 3 * errors[2]          # approaches the closed form


def test_first_order_minimizer_excess_decays_like_one_over_m_squared() -> None:
    rng = np.random.default_rng(9)
    xstar = 0.1 * rng.standard_normal((5, 3))
    big, bigger = (prompts.first_order_minimizer(xstar, m) for m in (1e5, 1e6))
    assert bigger.grad_norm < 1e-7
    assert bigger.excess_risk * 1e12 == pytest.approx(big.excess_risk * 1e10, rel=0.05)
    curve = prompts.first_order_curve(xstar, np.array([1e6, 50.0, 1e5]))
    assert curve[0] == pytest.approx(bigger.excess_risk, rel=1e-4)
    assert curve[2] == pytest.approx(big.excess_risk, rel=1e-4)
    assert curve[1] == pytest.approx(prompts.first_order_minimizer(xstar, 50.0).excess_risk,
                                     rel=1e-4)
    assert prompts.asymptotic_bias_coefficient(xstar) == pytest.approx(
        bigger.excess_risk * 1e12, rel=0.01)
    with pytest.raises(ValueError, match="gamma_1 < 1/2"):
        prompts.first_order_minimizer(10 * xstar, 1e3)


def test_bias_statistic_is_unbiased_for_the_squared_mean() -> None:
    rng = np.random.default_rng(10)
    mean = np.array([[0.3, -0.1], [0.2, 0.0]])
    estimates = [prompts.bias_statistic(mean + 0.5 * rng.standard_normal((4, 2, 2)))
                 for _ in range(1500)]
    truth = 0.5 * np.sum(mean ** 2)
    values = np.array([e.bias for e in estimates])
    assert abs(values.mean() - truth) < 4 * values.std() / np.sqrt(values.size)
    assert np.mean([e.mean_excess for e in estimates]) > truth + 0.4   # adds 1/2 E||noise||^2
    assert np.median([e.stderr for e in estimates]) == pytest.approx(values.std(), rel=0.35)
    pair = prompts.bias_statistic(np.array([[1.0, 2.0], [3.0, 0.0]]))
    assert pair.bias == pytest.approx(1.5) and np.isnan(pair.stderr)
    with pytest.raises(ValueError, match="S >= 2"):
        prompts.bias_statistic(np.zeros((1, 3)))


def test_local_slopes_of_a_power_law_are_exact() -> None:
    n = np.array([10.0, 100.0, 1000.0])
    mid, slopes, errors = prompts.local_slopes(n, 3.0 * n ** -1.5, 0.1 * 3.0 * n ** -1.5)
    np.testing.assert_allclose(slopes, -1.5)
    np.testing.assert_allclose(mid, [np.sqrt(1000.0), np.sqrt(1e5)])
    np.testing.assert_allclose(errors, np.sqrt(2) * 0.1 / np.log(10.0))


def test_deployed_risk_of_the_zero_map_is_half_the_signal(task) -> None:
    value, stderr = prompts.deployed_risk(np.zeros((4, 3)), np.zeros((3, 3)), task, 5,
                                          rng=np.random.default_rng(11), prompts=50, queries=40)
    truth = 0.5 * np.trace(task.M @ task.Sigma @ task.M.T)
    assert abs(value - truth) < 4 * stderr


def test_map_claims_judge_the_values_of_the_history() -> None:
    import json

    from attnbook.experiments import paper1_prompts

    methods = list(algorithm.METHODS)
    objective = np.ones((3, 5))
    objective[:, 0] = [1.0, 0.5, 0.5004]                 # Algorithm 1: gap 1.0 -> 4e-4 (basin 0.5)
    loss = np.ones((3, 5))
    loss[:, 3] = [2.0, 1.0, 0.9]                          # SGD: bound (0.9 - 0.8) / 2 = 0.05
    history = {"config": np.asarray(json.dumps({"methods": methods})),
               "iteration": np.array([0, 1, 2]), "seeds": np.array([0]),
               "objective": objective[None, None], "loss": loss[None, None],   # (noise, seed, ...)
               "start_excess": np.array([[[0.01, 10.0]]]), "L_star": np.array([[0.1]]),
               "basin_value": np.array([[0.5]]), "best_loss": np.array([[0.8]])}
    from attnbook.claims import ch05

    claims = ch05.map_claims(paper1_prompts.claim_values(history, 0), 2)
    assert claims["start"].status == "reproduced"             # 0.01 / 0.1 <= 0.1
    assert claims["orders"].status == "partly reproduced"     # log10(10.1 / 0.11) = 1.96
    assert claims["alg1"].status == "reproduced"
    assert claims["sgd"].status == "reproduced"
    objective[-1, 0] = 0.6
    verdicts = ch05.map_claims(paper1_prompts.claim_values(history, 0), 2)
    assert verdicts["alg1"].status == "not reproduced"
    loss[-1, 3] = 0.8                                     # bound 0: it cannot show convergence
    verdicts = ch05.map_claims(paper1_prompts.claim_values(history, 0), 2)
    assert verdicts["sgd"].status == "not testable here"


def test_a_claims_map_cell_is_judged_like_an_experiment_cell() -> None:
    from attnbook import experiments
    from attnbook.claims import ch05
    from attnbook.experiments import paper1_prompts

    rng = np.random.default_rng(5)
    tasks = paper1_prompts.claims_map_tasks()
    results = []
    for _ in tasks:             # per cell: Algorithm 1 and SGD, three recorded iterations
        objective = 1.0 + rng.random((3, 2))
        results.append(dict(objective=objective, loss=objective - 0.1 * rng.random((3, 2)),
                            start_excess=rng.random(2), L_star=np.asarray(0.1),
                            basin_value=np.asarray(objective.min() - 0.01),
                            best_loss=np.asarray(0.5)))
    settings = replace(paper1_prompts.MAP_SETTINGS, iterations=2)
    history = paper1_prompts.assemble_claims_map(tasks, results, settings=settings)
    history["config"] = experiments.settings_config(settings)      # as the registry writes it
    assert list(history["iteration"]) == [0, 1, 2]
    for (i, j), result in zip(tasks, results):
        cell = paper1_prompts.claims_map_cell(history, i, j)
        values = paper1_prompts.claim_values(cell, 0)
        gap = result["objective"][:, 0] - float(result["basin_value"])
        assert values["alg1"] == pytest.approx(gap[-1] / gap[0], rel=1e-12)
        assert values["start"] == pytest.approx(result["start_excess"][0] / 0.1, rel=1e-12)
        assert values["sgd"] == pytest.approx((result["loss"][-1, 1] - 0.5) / result["loss"][0, 1],
                                              rel=1e-12)
        claims = ch05.map_claims(values, 2)
        assert claims["alg1"].status == ("reproduced" if values["alg1"] <= 1e-3
                                         else "not reproduced")
