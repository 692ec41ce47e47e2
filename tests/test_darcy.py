"""Tests of attnlib.darcy: the flux-form solver, its convergence, and the random coefficients."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from attnlib import darcy, vit


def _grid(size: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.linspace(0.0, 1.0, size)
    return np.meshgrid(x, x, indexing="ij")


def test_discrete_residual_is_round_off() -> None:
    data = darcy.generate(3, 24, seed=5)
    for a, u in zip(data.a, data.u):
        residual = darcy.flux_residual(a, u)
        # the equation's terms are of size a u / h^2 ~ 12 * 0.01 * 529 ~ 60
        assert np.abs(residual).max() < 1e-10
        assert np.all(u[0] == 0) and np.all(u[-1] == 0) and np.all(u[:, 0] == 0)
        assert np.all(u[:, -1] == 0)


def test_operator_is_symmetric_positive_definite() -> None:
    data = darcy.generate(1, 12, seed=1)
    matrix = darcy.assemble_operator(data.a[0]).toarray()
    np.testing.assert_allclose(matrix, matrix.T, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(matrix).min() > 0


def test_flux_form_differs_from_non_divergence_form() -> None:
    """-div(a grad u) is not -a Laplacian(u) for a discontinuous a: the solver uses the former."""
    data = darcy.generate(1, 32, seed=2)
    a, u = data.a[0], data.u[0]
    h2 = (1.0 / 31) ** 2
    laplacian = (u[2:, 1:-1] + u[:-2, 1:-1] + u[1:-1, 2:] + u[1:-1, :-2] - 4 * u[1:-1, 1:-1]) / h2
    wrong = -a[1:-1, 1:-1] * laplacian - 1.0
    assert np.abs(wrong).max() > 0.5


def _manufactured() -> tuple:
    x, y = sp.symbols("x y")
    u = sp.sin(sp.pi * x) * sp.sin(sp.pi * y) * (1 + x * y)
    a = 2 + sp.sin(2 * sp.pi * x) * sp.cos(sp.pi * y)
    f = -(sp.diff(a * sp.diff(u, x), x) + sp.diff(a * sp.diff(u, y), y))
    return tuple(sp.lambdify((x, y), expr, "numpy") for expr in (u, a, f))


def test_second_order_on_manufactured_solution() -> None:
    u_exact, a_fn, f_fn = _manufactured()
    errors = []
    for size in (17, 33, 65):
        xx, yy = _grid(size)
        u = darcy.solve(a_fn(xx, yy), f_fn(xx, yy))
        errors.append(np.abs(u - u_exact(xx, yy)).max())
    ratios = np.array(errors[:-1]) / np.array(errors[1:])
    assert np.all(ratios > 3.6) and np.all(ratios < 4.4), ratios


def test_constant_coefficient_matches_poisson_series() -> None:
    errors = []
    for size in (33, 65):
        xx, yy = _grid(size)
        u = darcy.solve(np.full((size, size), 2.0))
        errors.append(np.abs(u - darcy.poisson_series(xx, yy, a=2.0, terms=401)).max())
    assert errors[1] < 1e-5                      # max of u is about 0.037
    assert 3.6 < errors[0] / errors[1] < 4.4


def test_subsampled_solve_error_is_second_order_for_a_constant_coefficient() -> None:
    """With a = 3 the coarse error is C (h_c^2 - h_f^2): factor 4 against 2 on 129 nodes is 15/3."""
    a = np.full((129, 129), 3.0)
    ratio = darcy.subsampled_solve_error(a, 4) / darcy.subsampled_solve_error(a, 2)
    assert 4.0 < ratio < 6.0
    assert darcy.subsampled_solve_error(a, 1) == 0.0
    with pytest.raises(ValueError, match="factor = 3"):
        darcy.subsampled_solve_error(a, 3)
    with pytest.raises(ValueError, match="factor = 128"):
        darcy.subsampled_solve_error(a, 128)


def test_poisson_series_satisfies_the_equation_at_the_centre() -> None:
    # the classical value u(1/2, 1/2) = 0.0736713... for -Laplacian u = 1 on the unit square
    assert darcy.poisson_series(0.5, 0.5, terms=801) == pytest.approx(0.07367135, abs=1e-7)


def test_field_statistics_match_the_recipe() -> None:
    size, count = 32, 400
    g = darcy.sample_grf(size, count, rng=np.random.default_rng(11))
    # L[0, 0] = 0: every field has zero pixel mean exactly
    np.testing.assert_allclose(g.mean(axis=(1, 2)), 0.0, atol=1e-12)
    # Parseval: the pixel average of E[g^2] is sum_{k != 0} coef^2
    coef = darcy.grf_spectrum(size)
    expected = (coef**2).sum() - coef[0, 0] ** 2
    per_sample = (g**2).mean(axis=(1, 2))
    standard_error = per_sample.std(ddof=1) / np.sqrt(count)
    assert abs(per_sample.mean() - expected) < 5 * standard_error
    # g and -g have the same law: the fraction at 12 is about one half, the mean about 7.5
    a = darcy.threshold(g)
    fraction = (a == 12.0).mean(axis=(1, 2))
    fraction_error = fraction.std(ddof=1) / np.sqrt(count)
    assert abs(fraction.mean() - 0.5) < 5 * fraction_error
    assert abs(a.mean() - 7.5) < 9 * 5 * fraction_error
    assert set(np.unique(a)) == {3.0, 12.0}
    skew = (g**3).mean(axis=(1, 2)) / per_sample**1.5
    assert abs(skew.mean()) < 5 * skew.std(ddof=1) / np.sqrt(count)
    np.testing.assert_array_equal(coef, coef.T)


def test_generate_prefix_and_save_load(tmp_path) -> None:
    full = darcy.generate(6, 16, seed=3)
    prefix = darcy.generate(2, 16, seed=3)
    np.testing.assert_array_equal(full.a[:2], prefix.a)
    np.testing.assert_array_equal(full.u[:2], prefix.u)
    path = darcy.save(full, tmp_path / "darcy.npz")
    loaded = darcy.load(path)
    np.testing.assert_allclose(loaded.u, full.u, rtol=1e-6, atol=1e-9)
    np.testing.assert_array_equal(loaded.a, full.a)
    assert (loaded.seed, loaded.a_plus, loaded.a_minus, loaded.size) == (3, 12.0, 3.0, 16)


def test_save_is_atomic_and_returns_the_path_load_takes(tmp_path, monkeypatch) -> None:
    import errno
    import io

    dataset = darcy.generate(3, 9, seed=0)
    path = darcy.save(dataset, tmp_path / "mydata")           # .npz appended, and returned
    assert path == tmp_path / "mydata.npz" and darcy.load(path).seed == 0
    assert darcy.load(tmp_path / "mydata").seed == 0
    before = path.read_bytes()
    real = np.lib.format.write_array

    def full_disk(stream, array, *args, **kwargs):           # the disk fills up mid-file
        if array.ndim == 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(stream, array, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(np.lib.format, "write_array", full_disk)
        with pytest.raises(OSError, match="No space left"):
            darcy.save(dataset, path)
    assert path.read_bytes() == before                         # the old dataset is intact
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mydata.npz"]   # no temporary
    buffer = io.BytesIO()
    np.save(buffer, np.zeros(3))
    for content, looks in ((b"version https://git-lfs.github.com/spec/v1\noid x\n",
                            "Git LFS pointer"), (b"<html><body>404</body></html>", "HTML page"),
                           (bytes(500), "zeros"), (before[:300], "truncated"),
                           (buffer.getvalue(), "single .npy array")):
        path.write_bytes(content)
        with pytest.raises(ValueError, match=rf"Darcy dataset {path}.*{looks}") as error:
            darcy.load(path)
        assert "allow_pickle" not in str(error.value)
    with pytest.raises(FileNotFoundError, match="no Darcy dataset at .*missing.npz"):
        darcy.load(tmp_path / "missing")


def test_input_errors_name_the_argument() -> None:
    with pytest.raises(ValueError, match="a must be strictly positive"):
        darcy.solve(np.zeros((8, 8)))
    with pytest.raises(ValueError, match="a must have shape|a must be a square"):
        darcy.solve(np.ones((8, 9)))
    with pytest.raises(ValueError, match="f must have shape"):
        darcy.solve(np.ones((8, 8)), np.ones((7, 7)))
    with pytest.raises(TypeError, match="rng"):
        darcy.sample_grf(8, 2, rng=0)
    with pytest.raises(ValueError, match="size"):
        darcy.generate(2, 2, seed=0)


def test_experiment_prefix_replays_the_start_of_a_longer_run() -> None:
    from dataclasses import replace

    from attnbook import experiments
    from attnbook.experiments import darcy_runs

    setup = replace(darcy_runs.BOOK, size=8, n_train=12, n_test=4, patch=4, width=4, key_dim=4,
                    hidden=4, phase2_batch=4, seeds=(0, 1))
    task = darcy_runs.make_task(setup)
    long1 = darcy_runs.phase1_history(task, epochs=3)
    short1 = darcy_runs.phase1_history(task, epochs=1)
    experiments.assert_prefix_matches(long1, short1, rtol=0,
                                      keys=list(darcy_runs.phase1_curves(short1)))
    start = darcy_runs.phase1_weights(long1)
    assert set(start) == set(vit.init_params(darcy_runs.model_config(setup),
                                             rng=np.random.default_rng(0)))
    long2 = darcy_runs.phase2_history(task, start, optimizer="noisy", seeds=(0, 1), epochs=2)
    short2 = darcy_runs.phase2_history(task, start, optimizer="noisy", seeds=(0,), epochs=1)
    assert long2["train_loss"].shape == (3, 2, 3)            # (regularizer, seed, epoch)
    assert list(long2["regularizers"]) == list(darcy_runs.REGIMES)
    assert list(long2["seeds"]) == [0, 1]
    experiments.assert_prefix_matches(*experiments.leading_block(long2, short2), rtol=0)
    assert darcy_runs.seed_series(long2, "log", "norm_WQ").shape == (2, 3)
    # every regime starts from the same Phase-1 weights
    for regime in darcy_runs.REGIMES:
        np.testing.assert_allclose(long2["norm_WQ"][darcy_runs.REGIMES.index(regime), 1, 0],
                                   np.linalg.norm(start["W_Q"]), rtol=1e-6)
    summary = darcy_runs.summarize_phase2(long2, last=2)
    assert set(summary) == set(darcy_runs.REGIMES)
    assert np.isfinite(summary["power"]["rel_l2"])
    wq = darcy_runs.seed_series(long2, "log", "norm_WQ")
    assert summary["log"]["norm_WQ"] == pytest.approx(wq[:, -1].mean())
    assert summary["log"]["norm_WQ_sem"] == pytest.approx(wq[:, -1].std(ddof=1) / np.sqrt(2))
    early = darcy_runs.summarize_phase2(long2, last=1, epochs=1, labels=("log",))
    assert set(early) == {"log"}
    assert early["log"]["norm_WQ"] == pytest.approx(wq[:, 1].mean())
    # the same grid as independent tasks, merged: identical to the loop
    specs = darcy_runs.phase2_tasks("noisy", setup.lam, (0, 1), 2)
    parts = [darcy_runs.phase2_task(task, start, spec) for spec in specs]
    merged = darcy_runs.combine(specs, parts)
    assert set(merged) == set(long2)
    for key in long2:
        np.testing.assert_array_equal(merged[key], long2[key])
    with pytest.raises(ValueError, match="distinct grid cells"):
        darcy_runs.combine(specs + specs[:1], parts + parts[:1])


def test_log_slope_recovers_an_exponential_rate() -> None:
    from attnbook.experiments import darcy_runs

    values = 3.0 * np.exp(0.02 * np.arange(50))
    assert darcy_runs.log_slope(values, last=10) == pytest.approx(0.02, rel=1e-9)
    assert darcy_runs.log_slope(np.full(30, 4.0), last=10) == pytest.approx(0.0, abs=1e-12)


def test_gibbs_mode_norm_solves_the_stationarity_equation() -> None:
    from attnbook.experiments import darcy_runs
    from attnlib.regularizers import Regularizer

    # weight decay: t = s (m/2 - 1) / (2 lambda) in closed form
    decay = Regularizer("weight_decay", lam=0.01)
    assert darcy_runs.gibbs_mode_norm(decay, temperature=0.5, entries=10) ** 2 == pytest.approx(
        0.5 * 4 / 0.02, rel=1e-9)
    log = Regularizer("log", lam=1e-3)
    t = darcy_runs.gibbs_mode_norm(log, temperature=0.2, entries=64) ** 2
    assert t * (np.log1p(t) + t / (1 + t)) == pytest.approx(0.2 * 31 / 2e-3, rel=1e-9)
    with pytest.raises(ValueError, match="active"):
        darcy_runs.gibbs_mode_norm(Regularizer("none"), temperature=1.0, entries=10)


def test_orbit_min_norm_is_reached_by_the_balanced_factorisation() -> None:
    from attnbook.experiments import darcy_runs

    rng = np.random.default_rng(8)
    w_q, w_k = rng.standard_normal((6, 3)), 3.0 * rng.standard_normal((6, 3))
    target = darcy_runs.orbit_min_norm(w_q, w_k)
    u, sigma, vt = np.linalg.svd(w_q @ w_k.T, full_matrices=False)
    balanced_q, balanced_k = u * np.sqrt(sigma), vt.T * np.sqrt(sigma)
    np.testing.assert_allclose(balanced_q @ balanced_k.T, w_q @ w_k.T, atol=1e-10)
    total = np.sum(balanced_q**2) + np.sum(balanced_k**2)
    assert total == pytest.approx(2 * target**2, rel=1e-9)
    # any other point of the orbit has a larger total
    g = np.eye(3) + 0.3 * rng.standard_normal((3, 3))
    moved = np.sum((w_q @ g) ** 2) + np.sum((w_k @ np.linalg.inv(g).T) ** 2)
    assert moved >= 2 * target**2 - 1e-9
