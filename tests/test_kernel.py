"""The fused kernel of attnlib.attention.loss_and_grad (attnlib._kernel, optional: numba)
against the numpy path, the reference: random shapes, both dtypes, both masks, query rows,
blocks and threads, huge and overflowing logits, and the switch that turns it off (the
finite-difference and block-error checks run on both engines in test_attention.py). The
tests that need numba are skipped without it; the rest check that the library then falls
back to numpy."""

from __future__ import annotations

import os
import subprocess
import sys
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnlib import _kernel, attention

MASKS = ("loo", "all")
DTYPES = (np.float64, np.float32)
needs_numba = pytest.mark.skipif(not _kernel.available(), reason="numba is not installed")
#: The d the tests compile the kernel for (each d and dtype compiles once, about 2 s, then is
#: cached on disk): few, so that a fresh machine does not spend minutes compiling.
KERNEL_DS = (1, 2, 4, 10)


@pytest.fixture
def engine(monkeypatch):
    """``engine("kernel")`` or ``engine("numpy")`` sets attention.ENGINE for the test."""
    def use(name: str) -> None:
        monkeypatch.setattr(attention, "ENGINE", name)
    return use


def _layer(n: int, d: int, p: int, seed: int, scale: float = 0.5):
    rng = np.random.default_rng(seed)
    return (scale * rng.standard_normal((p, d)), scale * rng.standard_normal((d, d)),
            rng.standard_normal((n, d)), rng.standard_normal((n, p)))


def _both(*args, **kwargs):
    """loss_and_grad on the numpy path and through the kernel (attention.ENGINE restored)."""
    results, before = [], attention.ENGINE
    try:
        for setting in ("numpy", "kernel"):
            attention.ENGINE = setting
            results.append(attention.loss_and_grad(*args, **kwargs))
    finally:
        attention.ENGINE = before
    return results


def _assert_close(got, want, rtol: float) -> None:
    """Loss relative to itself, gradients relative to the gradients' overall scale (grad_B
    is exactly 0 in theory for n = 2 with the leave-one-out mask)."""
    assert got[0] == pytest.approx(want[0], rel=rtol, abs=1e-300)
    scale = max(np.abs(want[1]).max(), np.abs(want[2]).max(), 1e-300)
    for g, w in zip(got[1:], want[1:]):
        assert g.dtype == np.float64 and g.shape == w.shape
        assert np.abs(g - w).max() <= rtol * scale


#: Kernel against numpy, same dtype: float64 agrees to round-off (observed below 1e-15),
#: float32 to a few units of its round-off 6e-8 summed over n terms (observed ~1e-7).
RTOL = {np.float64: 1e-12, np.float32: 1e-4}


# ------------------------------------------------------------- kernel against numpy
@needs_numba
@settings(deadline=None, max_examples=40)
@given(n=st.integers(2, 150), d=st.sampled_from(KERNEL_DS), p=st.integers(1, 5),
       seed=st.integers(0, 10_000), mask=st.sampled_from(MASKS), dtype=st.sampled_from(DTYPES),
       use_rows=st.booleans(), block=st.sampled_from([None, 1, 7, 64]),
       workers=st.sampled_from([1, 2]))
def test_kernel_matches_numpy_on_random_shapes(n, d, p, seed, mask, dtype,
                                               use_rows, block, workers) -> None:
    a, b, x, y = _layer(n, d, p, seed)
    rows = np.random.default_rng(seed).integers(0, n, size=n // 2 + 1) if use_rows else None
    numpy_result, kernel_result = _both(a, b, x, y, mask=mask, rows=rows,
                                        block_size=block, dtype=dtype, workers=workers)
    _assert_close(kernel_result, numpy_result, RTOL[dtype])


@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("n", [257, 700, 2100])
def test_kernel_matches_numpy_at_the_sizes_it_is_chosen_for(n, mask, dtype) -> None:
    # the book's d = 10, p = 20, with keys not a multiple of the padding (kernel._PAD)
    a, b, x, y = _layer(n, 10, 20, seed=n, scale=0.3)
    numpy_result, kernel_result = _both(a, b, x, y, mask=mask, dtype=dtype)
    _assert_close(kernel_result, numpy_result, {np.float64: 1e-13, np.float32: 1e-4}[dtype])


@needs_numba
def test_the_automatic_choice_takes_the_kernel_from_its_size_on(monkeypatch) -> None:
    monkeypatch.setattr(attention, "ENGINE", "auto")
    monkeypatch.setattr(_kernel, "_DISABLED", False)
    assert attention._use_kernel(10, attention.KERNEL_MIN_ENTRIES)
    assert not attention._use_kernel(10, attention.KERNEL_MIN_ENTRIES - 1)
    assert not attention._use_kernel(_kernel.MAX_D + 1, 10 ** 8)
    monkeypatch.setattr(_kernel, "_DISABLED", True)
    assert not attention._use_kernel(10, 10 ** 8)
    monkeypatch.setattr(attention, "ENGINE", "kernel")
    assert attention._use_kernel(10, 4) and not attention._use_kernel(_kernel.MAX_D + 1, 4)
    monkeypatch.setattr(attention, "ENGINE", "fast")
    with pytest.raises(ValueError, match="ENGINE"):
        attention._use_kernel(10, 4)


# ------------------------------------------------ round-off (finite differences: test_attention)
@needs_numba
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("workers", [1, 2])
def test_kernel_float64_gradient_is_exact_to_round_off(engine, mask, workers) -> None:
    from test_attention import _extended_precision_loss_and_grad

    engine("kernel")
    a, b, x, y = _layer(700, 10, 20, seed=29, scale=0.3)
    got = attention.loss_and_grad(a, b, x, y, mask=mask, workers=workers)
    want = _extended_precision_loss_and_grad(a, b, x, y, mask)
    errors = [abs(got[0] - want[0]) / abs(want[0])] + [
        float(np.abs(g - w).max() / np.abs(w).max()) for g, w in zip(got[1:], want[1:])]
    assert max(errors) < 1e-14, errors


@needs_numba
@pytest.mark.parametrize("mask", MASKS)
def test_kernel_float32_is_close_to_float64(engine, mask) -> None:
    engine("kernel")
    a, b, x, y = _layer(300, 10, 20, seed=7, scale=0.3)
    exact = attention.loss_and_grad(a, b, x, y, mask=mask)
    single = attention.loss_and_grad(a, b, x, y, mask=mask, dtype=np.float32)
    _assert_close(single, exact, 1e-4)


# ------------------------------------------------------------ blocks and threads
@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_rows_do_not_depend_on_blocks_or_threads(engine, dtype) -> None:
    # each row is computed from that row alone: blocks and threads change no bit
    engine("kernel")
    a, b, x, y = _layer(700, 10, 20, seed=21, scale=0.3)
    rows = np.random.default_rng(3).integers(0, 700, size=300)
    for chosen in (None, rows):
        first = attention.loss_and_grad(a, b, x, y, rows=chosen, block_size=700, workers=1,
                                        dtype=dtype)
        for block, workers in ((None, 2), (64, 1), (64, 2), (13, 2)):
            other = attention.loss_and_grad(a, b, x, y, rows=chosen, block_size=block,
                                            workers=workers, dtype=dtype)
            assert other[0] == first[0]
            np.testing.assert_array_equal(other[1], first[1])
            np.testing.assert_array_equal(other[2], first[2])


@needs_numba
def test_kernel_never_allocates_an_n_by_n_array(engine) -> None:
    engine("kernel")
    n = 3000
    a, b, x, y = _layer(n, 2, 1, seed=3)
    attention.loss_and_grad(a, b, x[:100], y[:100])     # compiled (or loaded) before
    tracemalloc.start()
    try:
        attention.loss_and_grad(a, b, x, y)
        peak_mb = tracemalloc.get_traced_memory()[1] / 2 ** 20
    finally:
        tracemalloc.stop()
    # one work array of BLOCK_ELEMENTS float64 entries per thread (only its first row is
    # written), two threads: 4 MB; an n x n array is 68.7 MB
    assert peak_mb < 2 * attention.BLOCK_ELEMENTS * 8 / 2 ** 20 + 2


# ------------------------------------------------------ the softmax's shift and overflow
@needs_numba
@settings(deadline=None, max_examples=20)
@given(n=st.integers(2, 12), d=st.sampled_from(KERNEL_DS), seed=st.integers(0, 10_000),
       mask=st.sampled_from(MASKS), case=st.sampled_from([(np.float64, 1e2), (np.float64, 1e6),
                                                          (np.float32, 1e2)]))
def test_kernel_huge_logits_take_the_row_maximum(n, d, seed, mask, case) -> None:
    # logits far beyond the unshifted range (about 20 in float32, 177 in float64): the rows
    # are shifted by their maximum, as on the numpy path; both stay finite and agree up to the
    # logits' round-off, which the weights amplify: |s| eps, about 1e-9 in float64 at
    # |s| ~ 1e7, 1e-4 in float32 at |s| ~ 1e3
    dtype, scale = case
    a, b, x, y = _layer(n, d, 2, seed)
    numpy_result, kernel_result = _both(a, scale * b, x, y, mask=mask,
                                        dtype=dtype)
    assert np.isfinite(kernel_result[0])
    assert np.all(np.isfinite(kernel_result[1])) and np.all(np.isfinite(kernel_result[2]))
    _assert_close(kernel_result, numpy_result, {np.float64: 1e-7, np.float32: 1e-2}[dtype])


@needs_numba
@pytest.mark.filterwarnings("error")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("factor", [1.0, 1e3])      # 1e3: already x^T B overflows
def test_kernel_overflowing_logits_raise_one_error_and_no_warning(engine, dtype,
                                                                  factor) -> None:
    engine("kernel")
    a, _, x, y = _layer(4, 2, 2, seed=1)
    with pytest.raises(ValueError, match="overflow"):
        attention.loss_and_grad(a, factor * 1e305 * np.ones((2, 2)), 1e3 * x, y, dtype=dtype)


@needs_numba
@pytest.mark.parametrize("dtype", DTYPES)
def test_kernel_exponential_is_within_two_ulp_of_numpy(dtype) -> None:
    low, high = (-708.0, 709.0) if dtype == np.float64 else (-87.0, 88.0)
    values = np.concatenate([np.linspace(low, high, 200_001),
                             np.random.default_rng(0).uniform(-1, 1, 100_000)]).astype(dtype)
    exact = np.exp(values)
    ulps = np.abs(_kernel.kernel_exp(values) - exact) / np.spacing(exact)
    assert ulps.max() <= 2
    # below the normal range: exactly 0 (numpy gives subnormal numbers), as for -inf
    np.testing.assert_array_equal(
        _kernel.kernel_exp(np.array([low - 1, -1e4, -np.inf], dtype)), 0.0)


def test_generated_source_holds_every_coordinate() -> None:
    text = _kernel.source(3)
    assert "def rows_d3(" in text and "h2 += e * a2" in text and "h3" not in text
    with pytest.raises(ValueError, match="1 <= d"):
        _kernel.source(_kernel.MAX_D + 1)


def test_padded_keys_are_zero_beyond_the_keys() -> None:
    keys = np.arange(12.0).reshape(6, 2)
    padded = _kernel.padded_keys(keys)
    assert padded.shape == (2, _kernel.PAD) and padded.flags.c_contiguous
    np.testing.assert_array_equal(padded[:, :6], keys.T)
    assert not padded[:, 6:].any()


# --------------------------------------------------------- the switch and no numba
def test_without_numba_the_automatic_choice_is_numpy_and_forcing_the_kernel_fails(
        monkeypatch) -> None:
    monkeypatch.setitem(_kernel._NUMBA, "module", None)
    monkeypatch.setattr(_kernel, "_KERNELS", {})
    monkeypatch.setattr(attention, "ENGINE", "auto")
    a, b, x, y = _layer(300, 10, 20, seed=2, scale=0.3)
    assert not attention._use_kernel(10, 300 * 300)
    reference = attention.loss_and_grad(a, b, x, y)
    monkeypatch.setattr(attention, "ENGINE", "numpy")
    assert attention.loss_and_grad(a, b, x, y)[0] == reference[0]
    monkeypatch.setattr(attention, "ENGINE", "kernel")
    with pytest.raises(ImportError, match=r"attnlib\[fast\]"):
        attention.loss_and_grad(a, b, x, y)


def test_the_environment_variable_turns_the_kernel_off() -> None:
    code = ("from attnlib import _kernel, attention\n"
            "print(_kernel.disabled_by_environment(), attention._use_kernel(10, 10 ** 6))")
    for value, expected in (("0", "True False"), ("numpy", "True False")):
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              check=True, env={**os.environ, _kernel.ENV_VAR: value})
        assert done.stdout.split() == expected.split()


def test_importing_attnlib_does_not_import_numba() -> None:
    code = ("import sys\nfrom attnlib import attention, algorithm\n"
            "print('numba' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "False"
