"""Tests of attnlib.attention: gradients against finite differences, properties, blocking,
and the infinite-context (population) limit ``h(x) -> Sigma B^T x``."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from attnlib import _kernel, attention, data
from conftest import central_difference

MASKS = ("loo", "all")
#: loss_and_grad's engines (attention.ENGINE): numpy, the reference, and the fused kernel
#: (attnlib._kernel, skipped without numba)
ENGINES = ("numpy", pytest.param("kernel", marks=pytest.mark.skipif(
    not _kernel.available(), reason="numba is not installed")))


def _layer(n: int, d: int, p: int, seed: int, scale: float = 0.5):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d))
    y = rng.standard_normal((n, p))
    a = scale * rng.standard_normal((p, d))
    b = scale * rng.standard_normal((d, d))
    return a, b, x, y


def _reference_predict(a, b, x, mask):
    """One query at a time, straight from the definition (independent of the library)."""
    n = x.shape[0]
    out = np.empty((n, a.shape[0]))
    for j in range(n):
        context = [i for i in range(n) if mask == "all" or i != j]
        logits = np.array([x[j] @ b @ x[i] for i in context])
        weights = np.exp(logits - logits.max())
        weights /= weights.sum()
        out[j] = a @ (weights @ x[context])
    return out


def _relative_error(approx: np.ndarray, exact: np.ndarray) -> float:
    return float(np.abs(approx - exact).max() / max(np.abs(exact).max(), 1e-300))


# ------------------------------------------------------------------ gradients (float64)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("n,d,p", [(2, 1, 1), (3, 2, 3), (9, 4, 2), (25, 10, 20)])
@pytest.mark.parametrize("use_rows", [False, True])
@pytest.mark.parametrize("engine", ENGINES)
def test_gradient_matches_central_differences(mask: str, n: int, d: int, p: int,
                                              use_rows: bool, engine: str, monkeypatch) -> None:
    monkeypatch.setattr(attention, "ENGINE", engine)
    a, b, x, y = _layer(n, d, p, seed=n * 100 + d)
    rows = np.array([n - 1, 0, n - 1]) if use_rows else None

    def loss_at(a_, b_):
        return attention.loss_and_grad(a_, b_, x, y, mask=mask, rows=rows)[0]

    value, grad_a, grad_b = attention.loss_and_grad(a, b, x, y, mask=mask, rows=rows)
    fd_a = central_difference(lambda t: loss_at(t, b), a)
    fd_b = central_difference(lambda t: loss_at(a, t), b)
    # Central differences with h = 1e-6 have truncation error O(h^2) and rounding error
    # O(eps |L| / h) ~ 1e-10 relative: 1e-6 leaves a wide margin (observed: below 1e-8).
    assert _relative_error(fd_a, grad_a) < 1e-6
    if n == 2 and mask == "loo":
        # grad_B is exactly 0 in theory (one token in each context) and both sides are
        # round-off: judged against the gradient's overall scale.
        assert np.abs(fd_b - grad_b).max() < 1e-6 * np.abs(grad_a).max()
    else:
        assert _relative_error(fd_b, grad_b) < 1e-6
    if not use_rows:
        assert value == pytest.approx(attention.loss(a, b, x, y, mask=mask), rel=1e-13)


def test_rows_loss_is_average_over_selected_queries() -> None:
    a, b, x, y = _layer(8, 3, 2, seed=11)
    rows = np.array([1, 5, 5])
    value = attention.loss_and_grad(a, b, x, y, rows=rows)[0]
    residual = attention.predict(a, b, x) - y
    expected = np.sum(residual[rows] ** 2) / (2 * rows.size)
    assert value == pytest.approx(expected, rel=1e-13)


# ------------------------------------------------------------- the layer's definition
@pytest.mark.parametrize("mask", MASKS)
def test_predict_matches_definition_and_weights(mask: str) -> None:
    a, b, x, _ = _layer(7, 3, 2, seed=5)
    np.testing.assert_allclose(attention.predict(a, b, x, mask=mask),
                               _reference_predict(a, b, x, mask), rtol=1e-12, atol=1e-14)
    weights = attention.attention_weights(b, x, mask=mask)
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-14)
    assert np.all(weights >= 0)
    if mask == "loo":
        assert np.all(np.diag(weights) == 0.0)
    np.testing.assert_allclose(attention.attend(b, x, mask=mask), weights @ x, rtol=1e-12)


def test_predict_new_with_training_points_equals_all_mask() -> None:
    a, b, x, _ = _layer(6, 3, 4, seed=8)
    np.testing.assert_allclose(attention.predict_new(a, b, x, x),
                               attention.predict(a, b, x, mask="all"), rtol=1e-12)


def test_deployed_risk_is_half_mean_squared_error_of_predict_new() -> None:
    a, b, x, _ = _layer(9, 3, 2, seed=4)
    _, _, x_test, y_test = _layer(5, 3, 2, seed=6)
    expected = 0.5 * np.mean(np.sum((y_test - attention.predict_new(a, b, x, x_test)) ** 2,
                                    axis=1))
    assert attention.deployed_risk(a, b, x, x_test, y_test) == pytest.approx(expected, rel=1e-13)
    with pytest.raises(ValueError, match="Y_test must have shape"):
        attention.deployed_risk(a, b, x, x_test, y_test[:, :1])


# ------------------------------------------------------------------------- properties
shapes = st.tuples(st.integers(2, 12), st.integers(1, 5), st.integers(1, 4),
                   st.integers(0, 10_000))


@settings(deadline=None, max_examples=25)
@given(shape=shapes, mask=st.sampled_from(MASKS), data_=st.data())
def test_permuting_samples_permutes_predictions(shape, mask, data_) -> None:
    n, d, p, seed = shape
    a, b, x, y = _layer(n, d, p, seed)
    perm = np.array(data_.draw(st.permutations(range(n))))
    np.testing.assert_allclose(attention.predict(a, b, x[perm], mask=mask),
                               attention.predict(a, b, x, mask=mask)[perm],
                               rtol=1e-11, atol=1e-13)
    original = attention.loss_and_grad(a, b, x, y, mask=mask)
    permuted = attention.loss_and_grad(a, b, x[perm], y[perm], mask=mask)
    assert permuted[0] == pytest.approx(original[0], rel=1e-12)
    np.testing.assert_allclose(permuted[1], original[1], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(permuted[2], original[2], rtol=1e-10, atol=1e-13)


@settings(deadline=None, max_examples=20)
@given(shape=shapes, mask=st.sampled_from(MASKS))
def test_huge_logits_stay_finite(shape, mask) -> None:
    n, d, p, seed = shape
    a, b, x, y = _layer(n, d, p, seed)
    b = 1e6 * b
    weights = attention.attention_weights(b, x, mask=mask)
    assert np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, rtol=1e-12)
    value, grad_a, grad_b = attention.loss_and_grad(a, b, x, y, mask=mask)
    assert np.isfinite(value) and np.all(np.isfinite(grad_a)) and np.all(np.isfinite(grad_b))
    assert np.all(np.isfinite(attention.predict_new(a, b, x, x[:2] + 1.0)))


_HUGE_B = 1e305 * np.ones((2, 2))   # logits about 1e308-1e309: some overflow to +inf
OVERFLOWING_CALLS = {
    "loss_and_grad": lambda a, x, y: attention.loss_and_grad(a, _HUGE_B, x, y),
    "loss_and_grad float32": lambda a, x, y: attention.loss_and_grad(a, _HUGE_B, x, y,
                                                                     dtype=np.float32),
    "prompts_loss_and_grad": lambda a, x, y: attention.prompts_loss_and_grad(
        a, _HUGE_B, x[None], y[None]),
    "attend": lambda a, x, y: attention.attend(_HUGE_B, x),
    "predict_new": lambda a, x, y: attention.predict_new(a, _HUGE_B, x, x[:1]),
    "attention_weights": lambda a, x, y: attention.attention_weights(_HUGE_B, x),
    # 1e308 B: already x^T B overflows, before the logits
    "loss_and_grad, x^T B": lambda a, x, y: attention.loss_and_grad(a, 1e3 * _HUGE_B, x, y),
    "attention_weights, x^T B": lambda a, x, y: attention.attention_weights(1e3 * _HUGE_B, x),
}


@pytest.mark.filterwarnings("error")        # a RuntimeWarning before the error fails the test
@pytest.mark.parametrize("call", OVERFLOWING_CALLS)
def test_overflowing_logits_raise_one_error_and_no_warning(call: str) -> None:
    a, _, x, y = _layer(4, 2, 2, seed=1)
    with pytest.raises(ValueError, match="overflow"):
        OVERFLOWING_CALLS[call](a, 1e3 * x, y)


@pytest.mark.filterwarnings("error")
def test_logits_far_below_the_maximum_get_weight_zero_without_a_warning() -> None:
    # One query, keys 1e3 x: its logits are finite (up to 1.6e308), but the lowest minus
    # the highest is below -1.8e308 and overflows to -inf in the subtraction; exp gives
    # exactly 0, the limit, so every other key weighs 0 here and the prediction is the
    # value of the maximizing key.
    a, _, x, _ = _layer(4, 2, 2, seed=1)
    keys = 1e3 * x
    logits = (x[:1] @ _HUGE_B) @ keys.T
    assert np.all(np.isfinite(logits))
    assert logits.min() / 2 - logits.max() / 2 < -np.finfo(float).max / 2
    prediction = attention.predict_new(a, _HUGE_B, keys, x[:1])
    np.testing.assert_array_equal(prediction, keys[[np.argmax(logits)]] @ a.T)


BAD_INPUTS = [
    # (description, keyword overrides, error type, message fragment)
    ("A wrong d", dict(A=np.ones((3, 5))), ValueError, "A must have shape"),
    ("B not square", dict(B=np.ones((4, 3))), ValueError, "B must have shape"),
    ("Y wrong p", dict(Y=np.ones((6, 2))), ValueError, "Y must have shape"),
    ("Y wrong n", dict(Y=np.ones((5, 3))), ValueError, "Y must have shape"),
    ("X one sample", dict(X=np.ones((1, 4)), Y=np.ones((1, 3))), ValueError, "at least 2"),
    ("X 1-D", dict(X=np.ones(4)), ValueError, "X must have 2 axes"),
    ("X with NaN", dict(X=np.full((6, 4), np.nan)), ValueError, "NaN"),
    ("B with inf", dict(B=np.full((4, 4), np.inf)), ValueError, "NaN or infinite"),
    ("unknown mask", dict(mask="causal"), ValueError, "mask"),
    ("rows out of range", dict(rows=np.array([0, 6])), ValueError, "rows"),
    ("rows not integer", dict(rows=np.array([0.5])), TypeError, "rows"),
    ("block_size 0", dict(block_size=0), ValueError, "block_size"),
    ("dtype int", dict(dtype=np.int64), ValueError, "dtype"),
    ("workers 0", dict(workers=0), ValueError, "workers"),
]


@settings(deadline=None, max_examples=len(BAD_INPUTS))
@given(case=st.sampled_from(BAD_INPUTS))
def test_bad_input_raises_documented_error(case) -> None:
    _, overrides, error, fragment = case
    a, b, x, y = _layer(6, 4, 3, seed=0)
    kwargs = dict(A=a, B=b, X=x, Y=y) | overrides
    with pytest.raises(error, match=fragment):
        attention.loss_and_grad(kwargs.pop("A"), kwargs.pop("B"), kwargs.pop("X"),
                                kwargs.pop("Y"), **kwargs)


def test_predict_new_rejects_dimension_mismatch() -> None:
    a, b, x, _ = _layer(6, 4, 3, seed=0)
    with pytest.raises(ValueError, match="X_query must have shape"):
        attention.predict_new(a, b, x, np.ones((2, 3)))


# ------------------------------------------------------------- blocked == direct
@settings(deadline=None, max_examples=30)
@given(shape=shapes, mask=st.sampled_from(MASKS), block=st.integers(1, 13),
       use_rows=st.booleans(), workers=st.sampled_from([1, 2, None]))
def test_blocked_equals_direct(shape, mask, block, use_rows, workers) -> None:
    n, d, p, seed = shape
    a, b, x, y = _layer(n, d, p, seed)
    rows = np.random.default_rng(seed).integers(0, n, size=n + 3) if use_rows else None
    m = n + 3 if use_rows else n
    direct = attention.loss_and_grad(a, b, x, y, mask=mask, rows=rows, block_size=m)
    blocked = attention.loss_and_grad(a, b, x, y, mask=mask, rows=rows, block_size=block,
                                      workers=workers)
    assert blocked[0] == pytest.approx(direct[0], rel=1e-12)
    # Relative to the gradient's overall scale (grad_B is exactly 0 in theory for n = 2, "loo").
    scale = max(np.abs(direct[1]).max(), np.abs(direct[2]).max())
    for got, want in zip(blocked[1:], direct[1:]):
        assert np.abs(got - want).max() <= 1e-12 * scale
    for fn in (lambda bs: attention.predict(a, b, x, mask=mask, block_size=bs, workers=workers),
               lambda bs: attention.predict_new(a, b, x[: n // 2 + 1], x, block_size=bs,
                                                workers=workers)):
        want = fn(None if n * n <= attention.BLOCK_ELEMENTS else n)
        assert np.abs(fn(block) - want).max() <= 1e-12 * np.abs(want).max()


@pytest.mark.parametrize("mask", MASKS)
def test_split_blocks_match_the_direct_result_and_threads_change_no_bit(mask: str) -> None:
    # The automatic two halves at n = 500 (both cores) and 64-row blocks against one block:
    # the sums over rows are taken once, over all rows, so only the BLAS kernels' handling of
    # a block's leftover rows can move a row's values (bit for bit with OpenBLAS's Haswell
    # kernels; by up to 2 ulp, 1.7e-16 relative, with its SkylakeX ones): 1e-14 relative.
    # On one machine the thread count changes no bit.
    a, b, x, y = _layer(500, 10, 20, seed=5, scale=0.3)
    rows = np.random.default_rng(5).integers(0, 500, size=300)
    for chosen in (None, rows):
        direct = attention.loss_and_grad(a, b, x, y, mask=mask, rows=chosen, block_size=10 ** 6)
        for block in (None, 64):
            split = attention.loss_and_grad(a, b, x, y, mask=mask, rows=chosen,
                                            block_size=block, workers=1)
            assert abs(split[0] - direct[0]) <= 1e-14 * abs(direct[0])
            for got, want in zip(split[1:], direct[1:]):
                assert _relative_error(got, want) <= 1e-14
            threaded = attention.loss_and_grad(a, b, x, y, mask=mask, rows=chosen,
                                               block_size=block, workers=2)
            assert threaded[0] == split[0]
            for got, want in zip(threaded[1:], split[1:]):
                np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("n", [200, 256, 333, 700, 2100])
def test_automatic_blocks_and_threads_match_the_direct_computation(n: int) -> None:
    # From one block (n = 200) through the split into two halves (n = 256, 333) to many
    # blocks of BLOCK_ELEMENTS // n rows (700, 2100), on one thread and on two, against the
    # single-block direct computation (the reference): at most 1e-14 relative in float64.
    a, b, x, y = _layer(n, 10, 20, seed=n, scale=0.3)
    direct = attention.loss_and_grad(a, b, x, y, block_size=n, workers=1)
    for workers in (1, 2):
        got = attention.loss_and_grad(a, b, x, y, workers=workers)
        assert abs(got[0] - direct[0]) <= 1e-14 * abs(direct[0])
        for g, w in zip(got[1:], direct[1:]):
            assert _relative_error(g, w) <= 1e-14


@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("bad_row", [0, 7])
@pytest.mark.parametrize("engine", ENGINES)
def test_an_error_in_any_block_reaches_the_caller(bad_row: int, engine: str,
                                                  monkeypatch) -> None:
    monkeypatch.setattr(attention, "ENGINE", engine)
    # Four blocks on two threads (the caller and a pool thread): only the block holding
    # bad_row has overflowing logits (s_ji = 1e10 x_j[0] x_i[1]); its error is raised whichever
    # thread ran it, and the threads still work afterwards.
    n = 8
    x = np.zeros((n, 2))
    x[:, 1] = 1.0
    x[bad_row, 0] = 1e300
    b = np.array([[0.0, 1e10], [0.0, 0.0]])
    a, y = np.zeros((3, 2)), np.ones((n, 3))
    with pytest.raises(ValueError, match="logits"):
        attention.loss_and_grad(a, b, x, y, block_size=2, workers=2)
    fine = x.copy()
    fine[bad_row, 0] = 1.0
    two = attention.loss_and_grad(a, b, fine, y, block_size=2, workers=2)
    one = attention.loss_and_grad(a, b, fine, y, block_size=2, workers=1)
    assert two[0] == one[0]
    np.testing.assert_array_equal(two[1], one[1])


def _run_blocks_with_a_busy_pool(work) -> tuple[list, float]:
    """``_threads.run_blocks`` over 8 blocks on two threads while the pool's one thread is held
    by another task for up to 5 s (a pool thread that starts late); returns the results and
    the seconds the call took, then frees the pool thread."""
    import threading
    import time

    from attnlib import _threads

    release = threading.Event()
    _threads._pool(1).submit(release.wait, 5.0)
    start = time.perf_counter()
    try:
        results = _threads.run_blocks(work, 8, 1, 2, buffers=1, width=2 ** 18,
                                      dtype=np.dtype(np.float64))
    finally:
        elapsed = time.perf_counter() - start
        release.set()
    return results, elapsed


def test_the_caller_does_not_wait_for_a_pool_thread_that_starts_late() -> None:
    # Work of 16 MB, so two threads are used; the pool thread is busy elsewhere: the caller
    # computes every block itself and returns at once, not after the 5 s the pool is held.
    results, elapsed = _run_blocks_with_a_busy_pool(lambda start, stop, scratch: (start, stop))
    assert results == [(k, k + 1) for k in range(8)]
    assert elapsed < 2.0


def test_an_error_in_a_block_is_raised_once_the_started_blocks_finish() -> None:
    import threading

    def work(start: int, stop: int, scratch: list) -> int:
        if start == 3:
            raise ValueError(f"block {start} failed on {threading.current_thread().name}")
        return start

    with pytest.raises(ValueError, match="block 3 failed"):
        _run_blocks_with_a_busy_pool(work)


def test_a_pool_thread_that_leaves_the_callers_core_keeps_the_other_cores() -> None:
    import os
    from concurrent.futures import ThreadPoolExecutor

    from attnlib import _threads

    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        pytest.skip("needs sched_setaffinity and two cores")
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)

    def leave() -> set[int]:
        _threads._leave_cpu(cpu)
        return os.sched_getaffinity(0)

    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(leave).result() == allowed - {cpu}
    assert os.sched_getaffinity(0) == allowed          # the calling thread's own is untouched


def test_results_do_not_depend_on_workers() -> None:
    a, b, x, y = _layer(700, 10, 20, seed=21)
    one = attention.loss_and_grad(a, b, x, y, block_size=64, workers=1)
    two = attention.loss_and_grad(a, b, x, y, block_size=64, workers=2)
    assert one[0] == two[0]
    np.testing.assert_array_equal(one[1], two[1])
    np.testing.assert_array_equal(one[2], two[2])
    np.testing.assert_array_equal(attention.attend(b, x, block_size=64, workers=1),
                                  attention.attend(b, x, block_size=64, workers=2))


def test_blocked_loss_and_grad_never_allocates_an_n_by_n_array() -> None:
    import tracemalloc

    n = 3000
    a, b, x, y = _layer(n, 2, 1, seed=3)
    full_array_mb = n * n * 8 / 2 ** 20                      # 68.7 MB
    if attention._use_kernel(2, n * n):
        # the fused kernel (tests/test_kernel.py) compiles on its first call for d = 2:
        # compiled (or loaded from numba's cache) here, the compiler's memory is not the call's
        attention.loss_and_grad(a, b, x[:200], y[:200], rows=np.arange(100))
    tracemalloc.start()
    try:
        attention.loss_and_grad(a, b, x, y)
        attention.predict(a, b, x)
        peak_mb = tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()
    # Two work arrays of BLOCK_ELEMENTS float64 entries per thread, two threads: 8 MB.
    assert peak_mb < 4 * attention.BLOCK_ELEMENTS * 8 / 2 ** 20 + 2 < full_array_mb / 4


def test_auto_block_size_bounds_the_work_array() -> None:
    assert attention.auto_block_size(200, 200) == 200           # below SPLIT_ELEMENTS: direct
    assert attention.auto_block_size(500, 500) == 250           # two halves, one per core
    assert attention.auto_block_size(257, 256) == 129
    block = attention.auto_block_size(20_000, 20_000)
    assert block == attention.MIN_BLOCK_ROWS
    assert block * 20_000 <= attention.MAX_BLOCK_ELEMENTS
    assert attention.auto_block_size(3000, 3000) == attention.BLOCK_ELEMENTS // 3000
    huge = attention.auto_block_size(10 ** 7, 10 ** 7)
    assert huge == 1


def _extended_precision_loss_and_grad(a, b, x, y, mask):
    """Loss and gradient in long double from the textbook softmax backward pass, written
    independently of the library: ``dL/dW_ji = g_j . x_i``, ``dL/dS = W o (dL/dW - rowsum(W o
    dL/dW))``, ``dL/dB = X^T (dL/dS) X`` (numpy's long double is 80-bit extended on x86)."""
    a, b, x, y = (np.asarray(v, dtype=np.longdouble) for v in (a, b, x, y))
    n = x.shape[0]
    logits = x @ b @ x.T
    if mask == "loo":
        logits[np.arange(n), np.arange(n)] = -np.inf
    weights = np.exp(logits - logits.max(axis=1, keepdims=True))
    weights /= weights.sum(axis=1, keepdims=True)
    hidden = weights @ x
    residual = hidden @ a.T - y
    d_hidden = residual @ a / n
    d_weights = d_hidden @ x.T
    d_logits = weights * (d_weights - np.sum(weights * d_weights, axis=1, keepdims=True))
    return (np.sum(residual ** 2) / (2 * n), residual.T @ hidden / n, x.T @ d_logits @ x)


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("workers", [1, 2])
def test_float64_gradient_is_exact_to_round_off(mask: str, workers: int) -> None:
    # n = 700: several blocks of the automatic size, split over the threads.
    a, b, x, y = _layer(700, 10, 20, seed=29, scale=0.3)
    got = attention.loss_and_grad(a, b, x, y, mask=mask, workers=workers)
    want = _extended_precision_loss_and_grad(a, b, x, y, mask)
    errors = [abs(got[0] - want[0]) / abs(want[0])] + [
        float(np.abs(g - w).max() / np.abs(w).max()) for g, w in zip(got[1:], want[1:])]
    # float64 round-off summed over n = 700 terms: observed up to 2e-15 relative.
    assert max(errors) < 1e-14, errors


# ------------------------------------------------------------------ float32 option
@pytest.mark.parametrize("mask", MASKS)
def test_float32_is_close_to_float64(mask: str) -> None:
    problem = data.default_problem(rng=np.random.default_rng(7))
    x, y = problem.sample(300, rng=np.random.default_rng(8))
    rng = np.random.default_rng(9)
    a = 0.3 / np.sqrt(10) * rng.standard_normal((20, 10))
    b = 0.3 / np.sqrt(10) * rng.standard_normal((10, 10))
    exact = attention.loss_and_grad(a, b, x, y, mask=mask)
    single = attention.loss_and_grad(a, b, x, y, mask=mask, dtype=np.float32, block_size=64)
    assert all(part.dtype == np.float64 for part in single[1:])
    # float32 unit roundoff is 6e-8; sums over n = 300 terms lose a few digits (observed
    # ~1e-6 relative); 1e-4 is a loose bound that still catches a wrong formula.
    assert single[0] == pytest.approx(exact[0], rel=1e-4)
    assert _relative_error(single[1], exact[1]) < 1e-4
    assert _relative_error(single[2], exact[2]) < 1e-4


# ------------------------------------------------------------- population limit
def _tilted_mean_covariance(sigma: np.ndarray, u: np.ndarray, n: int) -> np.ndarray:
    """Asymptotic covariance of the self-normalised estimate of ``E_u[x] = Sigma u``.

    For ``w = exp(u.x)``, ``x ~ N(0, Sigma)``, the delta method gives
    ``Cov ~ E[w^2 (x - Sigma u)(x - Sigma u)^T] / (n E[w]^2)``; Gaussian tilting evaluates
    it to ``exp(u^T Sigma u) (Sigma + Sigma u u^T Sigma) / n``.
    """
    su = sigma @ u
    return np.exp(u @ su) * (sigma + np.outer(su, su)) / n


def test_tilted_standard_error_formula_matches_replicates() -> None:
    sigma = data.covariance(3, kappa=4.0, rng=np.random.default_rng(10))
    rng = np.random.default_rng(11)
    b = 0.4 * rng.standard_normal((3, 3))
    query = rng.standard_normal((1, 3))
    n, replicates = 2000, 400
    chol = np.linalg.cholesky(sigma)
    outputs = np.array([attention.predict_new(np.eye(3), b, rng.standard_normal((n, 3)) @ chol.T,
                                              query)[0] for _ in range(replicates)])
    predicted = np.diag(_tilted_mean_covariance(sigma, b.T @ query[0], n))
    observed = outputs.var(axis=0, ddof=1)
    # Sample variance of 400 replicates: relative standard error sqrt(2/399) ~ 0.07.
    np.testing.assert_allclose(observed, predicted, rtol=0.3)


def test_population_limit_sigma_b_transpose_x() -> None:
    """With n = 20,000 Gaussian context tokens, ``h(x)`` is within Monte Carlo error of
    ``Sigma B^T x``: the Mahalanobis distance in the asymptotic covariance above must lie
    below the chi^2_d quantile 1 - 1e-4 for each of five queries (bias is O(1/n), far below
    the O(n^{-1/2}) standard error)."""
    rng = np.random.default_rng(12)
    problem = data.default_problem(rng=rng)
    d, n = problem.d, 20_000
    context, _ = problem.sample(n, rng=rng)
    queries, _ = problem.sample(5, rng=rng)
    b = 0.3 / np.sqrt(d) * rng.standard_normal((d, d))
    outputs = attention.predict_new(np.eye(d), b, context, queries)
    threshold = stats.chi2.ppf(1 - 1e-4, d)
    for query, output in zip(queries, outputs):
        u = b.T @ query
        limit = problem.Sigma @ u
        covariance = _tilted_mean_covariance(problem.Sigma, u, n)
        error = output - limit
        assert error @ np.linalg.solve(covariance, error) < threshold
        # and the relative error is small in absolute terms (standard error ~ n^{-1/2})
        assert np.linalg.norm(error) < 0.05 * max(np.linalg.norm(limit), 1.0)


def test_memorising_escape_saturates_to_each_tokens_top_logit() -> None:
    rng = np.random.default_rng(7)
    n, d, p = 20, 10, 3  # n close to d: most tokens' own logit is their largest (chapter 1)
    X = rng.standard_normal((n, d))
    Y = X @ rng.standard_normal((d, p)) + 0.1 * rng.standard_normal((n, p))
    X_test = rng.standard_normal((50, d))
    Y_test = rng.standard_normal((50, p))
    curves = attention.memorising_escape(X, Y, X_test, Y_test, np.array([1e-3, 1.0, 1e6]))
    # Oracle: at a huge scale each token attends only to its largest logit x_j^T S^{-1} x_i.
    A_hat = np.linalg.lstsq(X, Y, rcond=None)[0].T
    top = np.argmax(X @ np.linalg.inv(X.T @ X / n) @ X.T, axis=1)
    limit = np.sum((Y - X[top] @ A_hat.T) ** 2) / (2 * n)
    assert curves.self_top_fraction == pytest.approx(np.mean(top == np.arange(n)))
    assert curves.self_top_fraction > 0.5
    assert curves.loss_all[-1] == pytest.approx(limit, rel=1e-6)
    assert curves.loss_all[-1] < curves.loss_all[0]
    assert curves.deployed[1] == pytest.approx(
        attention.deployed_risk(A_hat, np.linalg.inv(X.T @ X / n), X, X_test, Y_test))
    with pytest.raises(ValueError, match="more rows than columns"):
        attention.memorising_escape(X[:10], Y[:10], X_test, Y_test, np.ones(2))


def test_row_softmax_is_stable_and_matches_the_definition() -> None:
    logits = np.array([[1.0, 2.0, 3.0], [1e300, -1e300, 0.0]])
    weights = attention.row_softmax(logits)
    assert np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)
    np.testing.assert_allclose(weights[0], np.exp([1.0, 2.0, 3.0]) / np.exp([1.0, 2.0, 3.0]).sum())
    np.testing.assert_array_equal(weights[1], [1.0, 0.0, 0.0])


# ------------------------------------------------------------------ prompts (N contexts)
def _prompts(prompts: int, n: int, d: int, p: int, seed: int, scale: float = 0.5):
    rng = np.random.default_rng(seed)
    return (scale * rng.standard_normal((p, d)), scale * rng.standard_normal((d, d)),
            rng.standard_normal((prompts, n, d)), rng.standard_normal((prompts, n, p)))


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("block_elements", [attention.BLOCK_ELEMENTS, 100, 30])
def test_prompts_loss_is_the_average_of_per_prompt_losses(mask: str, block_elements: int,
                                                          monkeypatch) -> None:
    # 100 forces stacks of one prompt (n^2 = 64), 30 the per-prompt row-blocked path.
    monkeypatch.setattr(attention, "BLOCK_ELEMENTS", block_elements)
    a, b, x, y = _prompts(5, 8, 3, 4, seed=1)
    value, grad_a, grad_b = attention.prompts_loss_and_grad(a, b, x, y, mask=mask)
    parts = [attention.loss_and_grad(a, b, x[k], y[k], mask=mask) for k in range(5)]
    assert value == pytest.approx(np.mean([part[0] for part in parts]), rel=1e-13)
    np.testing.assert_allclose(grad_a, np.mean([part[1] for part in parts], axis=0), rtol=1e-12,
                               atol=1e-15)
    np.testing.assert_allclose(grad_b, np.mean([part[2] for part in parts], axis=0), rtol=1e-12,
                               atol=1e-15)


@pytest.mark.parametrize("mask", MASKS)
def test_one_prompt_is_the_one_set_layer(mask: str) -> None:
    a, b, x, y = _prompts(1, 30, 4, 3, seed=2)
    single = attention.loss_and_grad(a, b, x[0], y[0], mask=mask)
    for got, want in zip(attention.prompts_loss_and_grad(a, b, x, y, mask=mask), single):
        np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("mask", MASKS)
def test_prompts_gradient_matches_central_differences(mask: str) -> None:
    a, b, x, y = _prompts(4, 6, 3, 2, seed=3)
    rows = np.array([0, 7, 7, 23])
    for use_rows in (None, rows):
        _, grad_a, grad_b = attention.prompts_loss_and_grad(a, b, x, y, mask=mask, rows=use_rows)
        fd_a = central_difference(
            lambda t: attention.prompts_loss_and_grad(t, b, x, y, mask=mask, rows=use_rows)[0], a)
        fd_b = central_difference(
            lambda t: attention.prompts_loss_and_grad(a, t, x, y, mask=mask, rows=use_rows)[0], b)
        assert _relative_error(grad_a, fd_a) < 1e-7
        assert _relative_error(grad_b, fd_b) < 1e-7


def test_prompts_rows_average_the_chosen_queries_within_their_prompts() -> None:
    a, b, x, y = _prompts(3, 5, 2, 2, seed=4)
    rows = np.array([14, 0, 6, 6])
    value, _, _ = attention.prompts_loss_and_grad(a, b, x, y, rows=rows)
    predictions = [_reference_predict(a, b, x[k], "loo") for k in range(3)]
    want = np.mean([0.5 * np.sum((y[r // 5, r % 5] - predictions[r // 5][r % 5]) ** 2)
                    for r in rows])
    assert value == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("case", [
    dict(X=np.zeros((4, 3)), Y=np.zeros((4, 3, 2)), match="3 axes"),
    dict(X=np.zeros((2, 4, 3)), Y=np.zeros((2, 4, 5)), match="Y must have shape"),
    dict(X=np.zeros((2, 1, 3)), Y=np.zeros((2, 1, 2)), match="at least 2 tokens"),
    dict(X=np.zeros((2, 4, 2)), Y=np.zeros((2, 4, 2)), match="to match B"),
])
def test_prompts_bad_input_raises(case) -> None:
    a, b = np.zeros((2, 3)), np.zeros((3, 3))
    with pytest.raises(ValueError, match=case["match"]):
        attention.prompts_loss_and_grad(a, b, case["X"], case["Y"])
    with pytest.raises(ValueError, match="rows must lie"):
        attention.prompts_loss_and_grad(a, b, np.zeros((2, 4, 3)), np.zeros((2, 4, 2)),
                                        rows=np.array([8]))
