"""attnbook.chapters.ch12: the sizes, the reference minimum, the chain means and the times to
target that Chapter 12 and its Reproduction report page share."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook import experiments
from attnbook.chapters import ch12
from attnlib import population


@pytest.fixture(scope="module")
def side() -> dict[str, np.ndarray]:
    return experiments.load("bridge_side_by_side")


@pytest.fixture(scope="module")
def sweep() -> dict[str, np.ndarray]:
    return experiments.load("bridge_kappa")


def stays_below_from(iteration: np.ndarray, curve: np.ndarray, target: float, when: float
                     ) -> bool:
    """True when ``when`` is the first recorded iteration from which ``|curve| <= target``
    holds to the end of the run."""
    k = int(np.flatnonzero(iteration == when)[0])
    return bool(np.all(np.abs(curve[k:]) <= target) and (k == 0 or abs(curve[k - 1]) > target))


@pytest.mark.parametrize("n", [100, 125, 500])
def test_the_base_temperature_puts_the_laplace_offset_at_the_ols_risk(n):
    assert ch12.DIM == 300
    offset = ch12.base_temperature(n) * ch12.DIM / 4
    assert offset == pytest.approx(population.ols_excess_risk(n, ch12.D_IN, ch12.P, ch12.SIGMA),
                                   rel=1e-12)
    assert ch12.kappa_target_gap(n) == pytest.approx(2 * offset, rel=1e-12)


def test_the_reference_is_the_lowest_certified_minimum(side):
    minima = ch12.certified_minima(side)
    starts = experiments.config(side)["reference_starts"]
    polished = int(np.isfinite(side["end_min_value"]).sum())
    assert len(minima.origins) == minima.values.size == len(starts) + polished
    assert minima.origins[:len(starts)] == tuple(starts)
    assert minima.q_star == minima.values.min() <= side["ref_value"].min()
    assert minima.r_star == minima.excess_risks[minima.lowest] > 0
    assert np.all(minima.min_eigenvalues > 0)          # strict local minima


def test_chain_means_count_the_chains_and_average_them(side):
    q_star = ch12.certified_minima(side).q_star
    chains, mean_gap, mean_risk = ch12.chain_means(side, q_star)
    methods = experiments.config(side)["methods"]
    assert chains.shape == (len(methods),) and set(chains) == {1, 4}
    assert mean_gap.shape == mean_risk.shape == (len(methods), side["iteration"].size)
    k = int(np.argmax(chains))
    first = side["objective"][k, :chains[k]] - q_star
    assert mean_gap[k] == pytest.approx(first.mean(axis=0), rel=1e-12)


def test_iterations_to_targets_are_where_the_curves_stay_below_them():
    iteration = np.arange(0, 100, 10)
    risk = np.array([[3.0, 2.0, 1.5, 1.05, 1.2, 1.08, 1.0, 1.0, 1.0, 1.0]])
    gap = np.array([[1.0, 0.1, 0.01, 2e-3, 1e-3, 5e-4, 1e-3, 2e-4, 1e-4, 1e-4]])
    reach_a, reach_b = ch12.iterations_to_targets(iteration, gap, risk, r_star=1.0)
    assert reach_a.tolist() == [50.0]              # 1.2 > 1.1 at iteration 40
    assert reach_b.tolist() == [40.0]              # 1e-3 of the initial gap 1.0
    never, _ = ch12.iterations_to_targets(iteration, gap, risk + 1.0, r_star=1.0)
    assert np.isnan(never).all()


def test_iterations_to_targets_on_the_stored_run(side):
    minima = ch12.certified_minima(side)
    _, mean_gap, mean_risk = ch12.chain_means(side, minima.q_star)
    iteration = side["iteration"]
    reach_a, reach_b = ch12.iterations_to_targets(iteration, mean_gap, mean_risk, minima.r_star)
    assert np.isfinite(reach_a).any()
    for risk, when in zip(mean_risk, reach_a):
        if np.isfinite(when):
            assert stays_below_from(iteration, risk, ch12.RISK_TARGET * minima.r_star, when)
    for gap, when in zip(mean_gap, reach_b):
        if np.isfinite(when):
            assert stays_below_from(iteration, gap, ch12.GAP_TARGET * gap[0], when)


def test_times_to_the_target_gap_across_kappa(sweep):
    times = ch12.iterations_to_target_gap(sweep)
    settings = experiments.config(sweep)
    assert times.shape == (len(sweep["kappas"]), len(settings["methods"]))
    diverged = np.nansum(sweep["diverged"], axis=-1) > 0
    assert np.array_equal(np.isinf(times), diverged)
    target = ch12.kappa_target_gap(settings["n"])
    for i, j in zip(*np.nonzero(np.isfinite(times))):
        curve = np.nanmean(sweep["objective"][i, j], axis=0) - sweep["basin_value"][i]
        assert stays_below_from(sweep["iteration"], np.maximum(curve, 0.0), target, times[i, j])


def test_theorem_33_inputs_are_the_final_gaps_and_gibbs_offsets_over_eps(side):
    q_star = ch12.certified_minima(side).q_star
    mean_gap = ch12.chain_means(side, q_star).mean_gap
    inputs = ch12.theorem_33_inputs(side, mean_gap)
    settings = experiments.config(side)
    methods = list(settings["methods"])
    s0 = ch12.base_temperature(settings["n"])
    assert tuple(inputs.eps) == ch12.THEOREM_33_METHODS
    for name, s_final in (("langevin", s0),
                          ("annealed (random)", s0 * settings["anneal"]["factor"])):
        k = methods.index(name)
        eps = 1e-3 * mean_gap[k, 0]
        assert inputs.eps[name] == pytest.approx(eps, rel=1e-12)
        assert inputs.gap_over_eps[name] == pytest.approx(mean_gap[k, -1] / eps, rel=1e-12)
        assert inputs.final_temperature[name] == pytest.approx(s_final, rel=1e-12)
        assert inputs.offset_over_eps[name] == pytest.approx(s_final * ch12.DIM / 4 / eps,
                                                             rel=1e-12)
    # at s_0 the Gibbs offset alone exceeds eps: plain Langevin cannot reach eps at s_0
    assert inputs.offset_over_eps["langevin"] > 1 > inputs.offset_over_eps["annealed (random)"]
    with pytest.raises(ValueError, match="without noise"):
        ch12.theorem_33_inputs(side, mean_gap, methods=("algorithm1",))


def test_the_tables_of_the_side_by_side_run(side, sweep):
    minima = ch12.certified_minima(side)
    means = ch12.chain_means(side, minima.q_star)
    reach_a, reach_b = ch12.iterations_to_targets(side["iteration"], means.mean_gap,
                                                  means.mean_risk, minima.r_star)
    methods = list(experiments.config(side)["methods"])
    cap = int(side["iteration"][-1])
    table = ch12.targets_table(methods, means, reach_a, reach_b, cap)
    assert [row[0] for row in table.rows] == methods
    assert all(row[4] == f">{cap}" for row in table.rows if not np.isfinite(
        reach_b[methods.index(row[0])]))
    times = ch12.iterations_to_target_gap(sweep)
    ends = ch12.kappa_ends(sweep, times)
    assert list(ends) == list(experiments.config(sweep)["methods"])
    slide = ch12.slide_table(side, minima.q_star, means, reach_a, reach_b, ends)
    langevin = slide.rows[methods.index("langevin")]
    assert langevin[1] == f"{reach_a[methods.index('langevin')] * 4:.0f}"   # four chains
    assert slide.rows[methods.index("algorithm1")][-1] == "-"                 # not in the sweep
    kappa = ch12.kappa_table(sweep, times)
    assert kappa.columns[1:] == tuple(f"kappa {k:.0f}" for k in sweep["kappas"])
    assert any(cell.startswith("diverged (") for row in kappa.rows for cell in row)


def test_the_floors_offsets_and_the_quadratic_model():
    floors = experiments.load("bridge_floors")
    offset, risk_offset = ch12.floor_offsets(floors)
    shape = (len(floors["n_values"]), len(floors["temperatures"]), 2)
    assert offset.shape == risk_offset.shape == shape and np.all(offset[..., 1] > 0)
    fills = [ch12.laplace_fill(floors, i) for i in range(shape[0])]
    assert all(0.9 * ch12.DIM < fill < 1.05 * ch12.DIM for fill in fills)   # about D
    temps = floors["temperatures"]
    d_eff = 4 * offset[..., 0] / temps                 # the Laplace count, within a few %
    assert np.all(np.abs(d_eff / ch12.DIM - 1) < 0.05)
    predicted = np.array([[s / 4 * fill for s in temps] for fill in fills])
    table = ch12.floor_table(floors, offset, risk_offset, predicted)
    assert len(table.rows) == shape[0] * shape[1]


def test_the_well_moments_are_the_five_of_the_live_check():
    z = np.array([[2.0, 3.0]])
    assert {name: float(f(z)[0]) for name, f in ch12.WELL_MOMENTS.items()} == {
        "x": 2.0, "y": 3.0, "x^2": 4.0, "xy": 6.0, "y^2": 9.0}
