"""Paper 1's softmax self-attention layer (chapter 1): predictions, loss, exact gradient.

Parameters ``A`` (p x d, value/output map) and ``B`` (d x d, merged key-query matrix). The n
samples attend to each other: with logits ``s_ji = x_j^T B x_i``,

::

    w_ji = exp(s_ji) / sum_{k in C(j)} exp(s_jk)   for i in C(j),  w_ji = 0 otherwise,
    h_j  = sum_i w_ji x_i ,        y_hat_j = A h_j ,

where the context ``C(j)`` is every sample except j (``mask="loo"``, leave-one-out, the
book's default [choice]) or every sample (``mask="all"``). The empirical loss is

    L_hat(A, B) = 1/(2n) sum_j || y_j - A h_j ||^2 .

Exact gradient (reverse mode, derived in chapter 1): with residuals ``r_j = A h_j - y_j``,
``g_j = A^T r_j / n`` and ``c_j = g_j . h_j``,

    dL/dA = (1/n) sum_j r_j h_j^T ,
    dL/dB = sum_j x_j [ sum_i w_ji (g_j . x_i - c_j) x_i ]^T = X^T (W o (G X^T - c 1^T)) X .

Memory (chapter 1 and the benchmarks appendix): query rows are processed in blocks of
``block_size`` rows; each thread holds two ``block_size x n`` work arrays, reused from block to
block, and nothing else of size n x n, so the peak memory is O(n * block_size + n (d + p)).
One block (``block_size >= n``) is the direct computation, kept as the tested reference of
the blocked one; the block size is chosen automatically from n
(:func:`auto_block_size`: two blocks from n = 256 on, so that both cores work) unless given.
The blocks compute per-row quantities only (``r_j``, ``h_j``, ``(dS X)_j``); the sums over
rows that make the loss and the gradients are taken once, over all rows, after the blocks.
Every path computes the softmax in :func:`_softmax_rows` (exponentials unshifted where a
Cauchy-Schwarz bound on the logits rules out overflow, else shifted by the row maximum),
float64 by default; ``dtype=np.float32`` runs the block arithmetic in single precision (results
returned in float64).

Threads: when there are several blocks, ``workers`` threads (the calling thread and
``workers - 1`` pool threads; default: up to 2, the number of cores; at most
``MAX_WORKERS`` = 256; one below ``attnlib._threads.PARALLEL_BYTES`` of work, and the kernel
one below ``KERNEL_PARALLEL_BYTES``) process them concurrently, numpy releasing the GIL in
``exp`` and in BLAS, the kernel throughout. The products
here have an inner dimension of only d, too skinny for a multithreaded BLAS to pay, and a
threaded BLAS inside threaded blocks oversubscribes the cores; so every block runs with a
single BLAS thread: ``attnlib._threads.run_blocks`` limits the BLAS libraries loaded with numpy
(OpenBLAS, MKL, BLIS, ... through ``threadpoolctl``) to one thread while the blocks run and
restores the previous count afterwards. The blocks depend on the sizes (and ``block_size``)
only and the sums over rows are taken once, so results do not depend on ``workers``, bit for
bit. Nor, up to round-off, on the block size: with one BLAS thread a row's values are mostly
the same in whichever block it is computed (bit for bit with the book's OpenBLAS for the
automatic halves at n = 500 and for 64-row blocks, as tested), but some block lengths (odd
ones, for instance) move them by about 1e-16 relative, because the BLAS kernels treat
leftover rows separately; the automatic blocks are tested against the direct computation to
1e-14. :func:`limit_blas_threads` sets the count for the rest of a process (each Dask worker
process of :mod:`attnbook.experiments` uses one).

The fused kernel (optional): with numba installed (``pip install 'attnlib[fast]'``),
:func:`loss_and_grad` runs its blocks through ``attnlib._kernel``, which makes the logits, their
exponential, the row sums and the gradient's contractions in two passes over each query row
instead of the seven numpy passes over each block (the numpy path stays the reference, and
the one used for every other function here). It is chosen automatically (:data:`ENGINE`) when
numba imports, d <= ``attnlib._kernel.MAX_D`` and the problem has at least
:data:`KERNEL_MIN_ENTRIES` query-key pairs; ``ENGINE = "numpy"``, or the environment variable
``ATTNLIB_KERNEL=0`` at import, forces numpy. Both paths compute the same formulas with the
same softmax shift rule and agree to round-off (float64: about 1e-15 relative), not bit for
bit: the kernel has its own exponential and sums in its own order. Its rows do not depend on
the blocks or the threads, bit for bit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import DTypeLike
from . import _kernel
from ._constants import documented
from ._threads import MAX_WORKERS, limit_blas_threads, one_blas_thread, run_blocks
from ._validation import as_matrix, check_int, finite_result

__all__ = [
    "Mask",
    "BLOCK_ELEMENTS",
    "limit_blas_threads",
    "auto_block_size",
    "attention_weights",
    "attend",
    "predict",
    "predict_new",
    "loss",
    "loss_and_grad",
    "prompts_loss_and_grad",
    "deployed_risk",
    "row_softmax",
    "EscapeCurves",
    "memorising_escape",
    "MAX_WORKERS",
    "ENGINE",
    "KERNEL_MIN_ENTRIES",
    "KERNEL_PARALLEL_BYTES",
]

Mask = Literal["loo", "all"]

#: Target entries of one ``block_size x n`` work array (2**18 float64 entries = 2 MB), but
#: blocks keep at least ``MIN_BLOCK_ROWS`` query rows (see :func:`auto_block_size`).
BLOCK_ELEMENTS = documented(2 ** 18, """\
Target entries of one ``block_size x n`` work array (2**18 float64 entries = 2 MB), but
blocks keep at least ``MIN_BLOCK_ROWS`` query rows (see ``auto_block_size``).""")
#: Fewest query rows per block (beyond the ``BLOCK_ELEMENTS`` target), as long as a work array
#: stays within ``MAX_BLOCK_ELEMENTS`` (16 MB): blocks of fewer rows run the skinny products
#: below their speed (measured in ``benchmarks/bench_attention.py``: at n = 8000, 64 to 128
#: rows took 0.22 to 0.27 s against 0.34 to 0.45 s for 32 rows; at n = 20,000, 52 rows 1.9 s
#: against 2.6 s for 26).
MIN_BLOCK_ROWS = documented(64, """\
Fewest query rows per block (beyond the ``BLOCK_ELEMENTS`` target), as long as a work array
stays within ``MAX_BLOCK_ELEMENTS`` (16 MB): blocks of fewer rows run the skinny products
below their speed (measured in ``benchmarks/bench_attention.py``: at n = 8000, 64 to 128
rows took 0.22 to 0.27 s against 0.34 to 0.45 s for 32 rows; at n = 20,000, 52 rows 1.9 s
against 2.6 s for 26).""")
#: Largest entries of one work array that ``MIN_BLOCK_ROWS`` may raise a block to (2**21
#: float64 entries = 16 MB); beyond it blocks have fewer rows.
MAX_BLOCK_ELEMENTS = documented(2 ** 21, """\
Largest entries of one work array that ``MIN_BLOCK_ROWS`` may raise a block to (2**21
float64 entries = 16 MB); beyond it blocks have fewer rows.""")
#: Which engine computes :func:`loss_and_grad`'s blocks: "auto" (the fused kernel of
#: ``attnlib._kernel`` when numba is installed, the environment variable ``ATTNLIB_KERNEL`` did
#: not turn it off at import, ``d <= attnlib._kernel.MAX_D`` and the problem has at least
#: ``KERNEL_MIN_ENTRIES`` query-key pairs; numpy otherwise), "numpy" (the reference) or
#: "kernel" (the kernel whenever ``d <= attnlib._kernel.MAX_D``, whatever the size and the
#: environment; ``ImportError`` without numba). A module setting, read at every call:
#: ``attention.ENGINE = "numpy"``.
ENGINE = documented("auto", """\
Which engine computes loss_and_grad's blocks: "auto" (the fused kernel of attnlib._kernel
when numba is installed, the environment variable ATTNLIB_KERNEL did not turn it off at
import, d <= attnlib._kernel.MAX_D and the problem has at least KERNEL_MIN_ENTRIES query-key
pairs; numpy otherwise), "numpy" (the reference) or "kernel" (the kernel whenever
d <= attnlib._kernel.MAX_D, whatever the size and the environment; ImportError without
numba). A module setting, read at every call: attention.ENGINE = "numpy".""")
#: Fewest query-key pairs (``len(rows) * n``) for which the automatic choice takes the kernel:
#: below, a call costs little whichever engine runs it, and the kernel's first call for a
#: given d compiles for about two seconds (cached on disk afterwards).
KERNEL_MIN_ENTRIES = documented(2 ** 14, """\
Fewest query-key pairs (``len(rows) * n``) for which the automatic choice takes the kernel:
below, a call costs little whichever engine runs it, and the kernel's first call for a
given d compiles for about two seconds (cached on disk afterwards).""")
#: Smallest work, in bytes of query-key pairs (``len(rows) * n * itemsize``), for which the
#: kernel runs its blocks on more than one thread: 4 MiB, float64 from n = 725 and float32 from
#: n = 1024. Chosen from ``benchmarks/bench_two_threads.py`` on the book's machine, which times
#: two threads against one back to back, after 0.15 s idle and right after a two-thread BLAS
#: product. Above 4 MB of pairs two threads were faster in all three settings, in the stored
#: run (0.54 to 0.82 of one thread's time) and in an earlier one (a third read 1.04 after
#: idle, float32 at n = 1414, where the null row reads up to 1.02); from 2 to 4 MB the
#: after-idle median crossed 1 between the runs (float32, n = 710: 0.98 and 1.04; n = 1000:
#: 0.79 and 1.02), and at 2 MB (float64, n = 500) it was above 1 in both (1.08, 1.09): the
#: second core joins late after idle. Back to back, two threads are faster there too (0.58
#: to 0.74): the threshold gives that up for "never slower than one thread".
KERNEL_PARALLEL_BYTES = documented(2 ** 22, """\
Smallest work, in bytes of query-key pairs (len(rows) * n * itemsize), for which the
kernel runs its blocks on more than one thread: 4 MiB, float64 from n = 725 and float32 from
n = 1024. Chosen from benchmarks/bench_two_threads.py on the book's machine, which times
two threads against one back to back, after 0.15 s idle and right after a two-thread BLAS
product. Above 4 MB of pairs two threads were faster in all three settings, in the stored
run (0.54 to 0.82 of one thread's time) and in an earlier one (a third read 1.04 after
idle, float32 at n = 1414, where the null row reads up to 1.02); from 2 to 4 MB the
after-idle median crossed 1 between the runs (float32, n = 710: 0.98 and 1.04; n = 1000:
0.79 and 1.02), and at 2 MB (float64, n = 500) it was above 1 in both (1.08, 1.09): the
second core joins late after idle. Back to back, two threads are faster there too (0.58
to 0.74): the threshold gives that up for "never slower than one thread".""")
#: From this many entries (n = 256 for n x n) on, a problem that fits in one block is split
#: into two halves so that both cores work (one block would run on one thread).
SPLIT_ELEMENTS = documented(2 ** 16, """\
From this many entries (n = 256 for n x n) on, a problem that fits in one block is split
into two halves so that both cores work (one block would run on one thread).""")


# ----------------------------------------------------------------------------- checks
def _check_mask(mask: str) -> None:
    if mask not in ("loo", "all"):
        raise ValueError(f"mask must be 'loo' (leave-one-out) or 'all', got {mask!r}")


def _check_dtype(dtype: DTypeLike) -> np.dtype:
    kind = np.dtype(dtype)
    if kind not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"dtype must be float64 or float32, got {kind}")
    return kind


def _check_tokens(name: str, X: object, *, d: int | None = None, minimum: int = 2) -> np.ndarray:
    array = as_matrix(name, X, shape=(None, d))
    if array.shape[0] < minimum:
        raise ValueError(f"{name} must have at least {minimum} rows (samples), "
                         f"got shape {array.shape}")
    return array


def _check_layer(A: object | None, B: object, d: int) -> tuple[np.ndarray | None, np.ndarray]:
    b = as_matrix("B", B, shape=(d, d))
    a = None if A is None else as_matrix("A", A, shape=(None, d))
    return a, b


def _check_rows(rows: object | None, n: int) -> np.ndarray | None:
    if rows is None:
        return None
    index = np.asarray(rows)
    if index.ndim != 1 or index.size == 0:
        raise ValueError(f"rows must be a non-empty 1-D array of row indices, got shape "
                         f"{index.shape}")
    if index.dtype.kind not in "iu":
        raise TypeError(f"rows must hold integers, got dtype {index.dtype}")
    if index.min() < 0 or index.max() >= n:
        raise ValueError(f"rows must lie in [0, {n}), got range [{index.min()}, {index.max()}]")
    return index.astype(np.intp, copy=False)


def auto_block_size(n_queries: int, n_keys: int) -> int:
    """Rows per block: all ``n_queries`` (the direct computation) when
    ``n_queries * n_keys < SPLIT_ELEMENTS``; half of them, rounded up, up to
    ``BLOCK_ELEMENTS`` (two blocks, one per core); else ``BLOCK_ELEMENTS // n_keys`` raised to
    ``MIN_BLOCK_ROWS`` where a work array then stays within ``MAX_BLOCK_ELEMENTS`` (at least
    one row). The blocks depend on the sizes only, never on the number of threads."""
    n_queries = check_int("n_queries", n_queries, minimum=1)
    n_keys = check_int("n_keys", n_keys, minimum=1)
    if n_queries * n_keys < SPLIT_ELEMENTS:
        return n_queries
    if n_queries * n_keys <= BLOCK_ELEMENTS:
        return -(-n_queries // 2)
    rows = max(1, BLOCK_ELEMENTS // n_keys, min(MIN_BLOCK_ROWS, MAX_BLOCK_ELEMENTS // n_keys))
    return min(rows, n_queries)


def _resolve_block(block_size: int | None, n_queries: int, n_keys: int) -> int:
    if block_size is None:
        return auto_block_size(n_queries, n_keys)
    return min(check_int("block_size", block_size, minimum=1), n_queries)


# ---------------------------------------------------------------------------- softmax
def row_softmax(logits: np.ndarray) -> np.ndarray:
    """``softmax`` along the last axis, ``exp(z_i - max z) / sum_k exp(z_k - max z)``.

    The book's one home for the stable softmax of any number of axes, used by Part II's
    models (``qk_attention``, ``vit``); the blocked layer below uses an in-place, masked
    variant of the same formula. Subtracting the row maximum first keeps every exponent
    <= 0, so huge logits cannot overflow. Infinite logits take their limits: an entry of
    ``-inf`` gets weight exactly 0, and a row containing ``+inf`` splits its weight equally
    among its ``+inf`` entries. float32 input stays float32.

    Raises ``TypeError`` for non-real input and ``ValueError`` for an empty last axis, a NaN
    logit, or a row whose entries are all ``-inf`` (nothing to attend to).
    """
    z = np.asarray(logits)
    if z.dtype.kind not in "biuf":
        raise TypeError(f"logits must be a real numeric array, got dtype {z.dtype}")
    if z.dtype.kind != "f":
        z = z.astype(np.float64)
    if z.ndim < 1 or z.size == 0:
        raise ValueError(f"logits must have at least one axis and no empty axis, "
                         f"got shape {z.shape}")
    top = z.max(axis=-1, keepdims=True)               # NaN propagates into the maximum
    if np.isnan(top).any():
        raise ValueError("logits contains NaN entries")
    if np.isneginf(top).any():
        raise ValueError("logits has a row whose entries are all -inf (nothing to attend to)")
    infinite = np.isposinf(top)
    with np.errstate(over="ignore", invalid="ignore"):
        if infinite.any():
            weights = np.where(infinite, np.isposinf(z), np.exp(z - np.where(infinite, 0, top)))
        else:
            weights = np.exp(z - top)
    return weights / weights.sum(axis=-1, keepdims=True)


def _queries_b(queries: np.ndarray, b: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``x_j^T B`` for every query (the left factor of the logits) in the block precision.

    A product or cast that overflows gives infinite entries; their logits are infinite or NaN
    and :func:`_softmax_rows` reports them as its ``ValueError``, so the overflow warning here
    is silenced.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        return (queries @ b).astype(dtype, copy=False)


#: Logits within +-this bound are exponentiated as they are, with no maximum subtracted: a
#: quarter of the log of the largest float, so that e^bound (4e9 in float32, 2e77 in float64)
#: times 10^9 terms leaves at least a factor 10^19 of room below overflow, and e^-bound stays
#: far above the smallest normal number.
_SAFE_LOGIT = {np.dtype(np.float64): np.log(np.finfo(np.float64).max) / 4,
               np.dtype(np.float32): np.log(np.finfo(np.float32).max) / 4}


def _largest_norm(tokens: np.ndarray) -> float:
    """``max_i ||x_i||`` over the last axis of ``tokens`` (any leading axes), in float64."""
    return float(np.sqrt(np.einsum("...i,...i->...", tokens, tokens, dtype=np.float64).max()))


def _softmax_rows(queries_b: np.ndarray, keys_t: np.ndarray, out: np.ndarray,
                  self_columns: np.ndarray | None,
                  key_norm: float) -> tuple[np.ndarray, np.ndarray]:
    """Write the logits ``s_ji = (x_j^T B) x_i = queries_b @ keys_t`` into ``out`` (b, n), or a
    stack (g, b, n) of prompts, overwrite them with ``E_ji = exp(s_ji - m_j)`` and return that
    with the row sums ``z_j = sum_i E_ji`` (a product with a vector of ones), so that
    ``w_ji = E_ji / z_j`` for any shift ``m_j``.

    The shift: by Cauchy-Schwarz ``|s_ji| <= ||x_j^T B|| max_i ||x_i||`` (``key_norm`` is the
    latter). When that bound is within ``_SAFE_LOGIT`` for every row of the block, ``m_j = 0``
    and the exponential is taken directly, the one pass over the block besides the products;
    otherwise ``m_j = max_i s_ji`` (two more passes: the maximum and the subtraction), which
    keeps every exponent <= 0. ``self_columns[k]`` is the column of query row k's own token (in
    every prompt of a stack), excluded from its context (leave-one-out): its ``E`` is exactly 0.
    Raises ``ValueError`` when a row maximum is not finite (logits overflowing); the product's
    own overflow warning is silenced, so the caller gets that one error and no
    ``RuntimeWarning`` first.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        logits = np.matmul(queries_b, keys_t, out=out)
        bound = np.sqrt(np.einsum("...i,...i->...", queries_b, queries_b,
                                  dtype=np.float64).max()) * key_norm
    rows = np.arange(logits.shape[-2])
    if bound <= _SAFE_LOGIT[logits.dtype]:            # NaN or inf compare False
        np.exp(logits, out=logits)
        if self_columns is not None:
            logits[..., rows, self_columns] = 0.0
    else:
        if self_columns is not None:
            logits[..., rows, self_columns] = -np.inf
        row_max = logits.max(axis=-1, keepdims=True)
        if not np.all(np.isfinite(row_max)):
            raise ValueError(_OVERFLOW_MESSAGE)
        with np.errstate(over="ignore"):  # s - max below -1.8e308: -inf, exp gives 0, its limit
            np.subtract(logits, row_max, out=logits)
        np.exp(logits, out=logits)
    return logits, logits @ np.ones(logits.shape[-1], logits.dtype)


def _block_rows(e: np.ndarray, z: np.ndarray, keys: np.ndarray, keys_t: np.ndarray,
                targets: np.ndarray, a_t: np.ndarray, t_out: np.ndarray,
                out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """Per query row of one block: write the residuals ``r_j``, the outputs ``h_j`` and
    ``(dS X)_j = sum_i w_ji (g_j . x_i - c_j) x_i`` (formulas of the module docstring) into
    ``out = (residual, hidden, ds_x)``, from ``E`` and ``z`` (the output of
    :func:`_softmax_rows`).

    Works on one block of query rows (``e`` of shape (b, n), ``keys`` (n, d), ``keys_t`` (d, n),
    ``out`` (b, p), (b, d), (b, d)) and on a stack of g prompts (``e`` (g, n, n), ``keys``
    (g, n, d), ``keys_t`` (g, d, n), ``out`` (g, n, p), (g, n, d), (g, n, d)); ``t_out`` is a
    work array shaped like ``e``. The products write into ``out`` and ``t_out`` and the
    divisions and differences are taken in place, so a block allocates only arrays of one row
    per query. Each row's values are computed from that row alone (with one BLAS thread they
    depend on how the rows are split into blocks at most by round-off: module docstring).
    """
    residual, hidden, ds_x = out
    norm = z[..., None]
    np.matmul(e, keys, out=hidden)
    hidden /= norm                                                        # h_j
    np.matmul(hidden, a_t.T, out=residual)
    residual -= targets                                                   # r_j
    g = residual @ a_t                                                    # A^T r_j
    c = np.einsum("...j,...j->...", g, hidden)                            # g_j . h_j
    g /= norm
    t = np.matmul(g, keys_t, out=t_out)                                   # (g_j . x_i) / z_j
    t *= e                                                                # w_ji g_j . x_i
    np.matmul(t, keys, out=ds_x)
    ds_x -= c[..., None] * hidden


def _row_sums(residual: np.ndarray, hidden: np.ndarray, queries: np.ndarray,
              ds_x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """``(sum_j ||r_j||^2, sum_j r_j h_j^T, sum_j x_j (dS X)_j^T)`` in float64, over the rows of
    (possibly stacked) per-row arrays: m times ``(2 L_hat, dL/dA, dL/dB)``."""
    p, d = residual.shape[-1], hidden.shape[-1]
    residual, hidden = residual.reshape(-1, p), hidden.reshape(-1, d)
    return (float(np.einsum("ij,ij->", residual, residual, dtype=np.float64)),
            residual.T.astype(np.float64) @ hidden.astype(np.float64),
            queries.reshape(-1, d).T @ ds_x.reshape(-1, d).astype(np.float64))


def _use_kernel(d: int, entries: int) -> bool:
    """Whether :func:`loss_and_grad` takes the fused kernel (see :data:`ENGINE`)."""
    if ENGINE not in ("auto", "numpy", "kernel"):
        raise ValueError(f"attention.ENGINE must be 'auto', 'numpy' or 'kernel', got {ENGINE!r}")
    if ENGINE == "numpy" or d > _kernel.MAX_D:
        return False
    if ENGINE == "auto":
        return (entries >= KERNEL_MIN_ENTRIES and not _kernel.disabled_by_environment()
                and _kernel.available())
    return True


_OVERFLOW_MESSAGE = ("attention logits x_j^T B x_i overflow (not finite); B or X is too large "
                     "in magnitude")


def _self_columns(rows: np.ndarray | None, start: int, stop: int,
                  loo: bool) -> np.ndarray | None:
    """For leave-one-out, the columns of one block's query rows themselves (else None)."""
    if not loo:
        return None
    return np.arange(start, stop) if rows is None else rows[start:stop]


# ------------------------------------------------------------------------------ public
def attention_weights(B: np.ndarray, X: np.ndarray, *, mask: Mask = "loo") -> np.ndarray:
    """Return the (n, n) row-stochastic matrix ``W`` with ``w_ji`` as in the module docstring.

    Row j holds the weights query j puts on the tokens; masked entries (the diagonal for
    ``mask="loo"``) are exactly 0. Builds the whole n x n matrix: meant for inspection at
    small n.
    """
    _check_mask(mask)
    x = _check_tokens("X", X)
    _, b = _check_layer(None, B, x.shape[1])
    n = x.shape[0]
    weights, z = _softmax_rows(_queries_b(x, b, np.dtype(np.float64)), x.T, np.empty((n, n)),
                               np.arange(n) if mask == "loo" else None, _largest_norm(x))
    weights /= z[:, None]
    return weights


def _hidden(b: np.ndarray, keys: np.ndarray, queries: np.ndarray, loo: bool,
            block_size: int | None, dtype: np.dtype, workers: int | None) -> np.ndarray:
    """``h`` for each query row (m, d): softmax-weighted averages of ``keys``, in blocks."""
    m = queries.shape[0]
    block = _resolve_block(block_size, m, keys.shape[0])
    keys_t = keys.astype(dtype, copy=False)
    keys_tt = np.ascontiguousarray(keys_t.T)
    key_norm = _largest_norm(keys)
    with one_blas_thread():
        queries_b = _queries_b(queries, b, dtype)
    hidden = np.empty((m, keys.shape[1]))

    def work(start: int, stop: int, scratch: list[np.ndarray]) -> None:
        self_columns = _self_columns(None, start, stop, loo)
        e, z = _softmax_rows(queries_b[start:stop], keys_tt, scratch[0], self_columns,
                             key_norm)
        hidden[start:stop] = (e @ keys_t) / z[:, None]

    run_blocks(work, m, block, workers, buffers=1, width=keys.shape[0], dtype=dtype)
    return hidden


def attend(B: np.ndarray, X: np.ndarray, *, mask: Mask = "loo", block_size: int | None = None,
           dtype: DTypeLike = np.float64, workers: int | None = None) -> np.ndarray:
    """Return the (n, d) attention outputs ``h_j = sum_i w_ji x_i`` of the n samples.

    Computed in blocks of query rows (``block_size``; automatic when None), never building an
    n x n array; ``dtype`` sets the precision of the block arithmetic, ``workers`` the number
    of threads over blocks (module docstring).

    Examples
    --------
    With ``B = 0`` every weight in a context is the same, so with ``mask="loo"`` each output
    is the mean of the other n - 1 tokens; in general ``H = W X`` with ``W`` the weights of
    :func:`attention_weights`:

    >>> import numpy as np
    >>> from attnlib import attention
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((6, 3))
    >>> H = attention.attend(np.zeros((3, 3)), X)
    >>> H.shape, bool(np.allclose(H, (X.sum(axis=0) - X) / 5))
    ((6, 3), True)
    >>> B = rng.standard_normal((3, 3))
    >>> W = attention.attention_weights(B, X)
    >>> bool(np.allclose(W.sum(axis=1), 1.0)), bool(np.all(W.diagonal() == 0))
    (True, True)
    >>> bool(np.allclose(attention.attend(B, X), W @ X))
    True
    """
    _check_mask(mask)
    x = _check_tokens("X", X)
    _, b = _check_layer(None, B, x.shape[1])
    return _hidden(b, x, x, mask == "loo", block_size, _check_dtype(dtype), workers)


def predict(A: np.ndarray, B: np.ndarray, X: np.ndarray, *, mask: Mask = "loo",
            block_size: int | None = None, dtype: DTypeLike = np.float64,
            workers: int | None = None) -> np.ndarray:
    """Return the (n, p) in-sample predictions ``y_hat_j = A h_j`` (see :func:`attend`).

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib import attention
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((6, 3))
    >>> A, B = rng.standard_normal((2, 3)), rng.standard_normal((3, 3))
    >>> Y_hat = attention.predict(A, B, X)
    >>> Y_hat.shape, bool(np.allclose(Y_hat, attention.attend(B, X) @ A.T))
    ((6, 2), True)

    Blocks of query rows change nothing but the memory (up to round-off):

    >>> bool(np.allclose(attention.predict(A, B, X, block_size=2), Y_hat))
    True
    """
    _check_mask(mask)
    x = _check_tokens("X", X)
    a, b = _check_layer(A, B, x.shape[1])
    return _hidden(b, x, x, mask == "loo", block_size, _check_dtype(dtype), workers) @ a.T


def predict_new(A: np.ndarray, B: np.ndarray, X_context: np.ndarray, X_query: np.ndarray, *,
                block_size: int | None = None, dtype: DTypeLike = np.float64,
                workers: int | None = None) -> np.ndarray:
    """Predict at new points: ``A sum_i softmax_i(x^T B x_i) x_i`` over all context tokens.

    ``X_context`` (n, d) holds the context samples (n >= 1), ``X_query`` (m, d) the new
    points; returns (m, p). This is the deployed in-context predictor. With ``A = I_d`` it
    returns the attention outputs themselves, whose infinite-context limit is
    ``Sigma B^T x`` for Gaussian context ``N(0, Sigma)`` (exponential tilting, chapter 2).
    """
    context = _check_tokens("X_context", X_context, minimum=1)
    d = context.shape[1]
    query = _check_tokens("X_query", X_query, d=d, minimum=1)
    a, b = _check_layer(A, B, d)
    return _hidden(b, context, query, False, block_size, _check_dtype(dtype), workers) @ a.T


@finite_result
def loss_and_grad(A: np.ndarray, B: np.ndarray, X: np.ndarray, Y: np.ndarray, *,
                  mask: Mask = "loo", rows: np.ndarray | None = None,
                  block_size: int | None = None, dtype: DTypeLike = np.float64,
                  workers: int | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """Return ``(L_hat, dL_hat/dA, dL_hat/dB)`` (formulas in the module docstring).

    Parameters
    ----------
    A, B : ndarray
        The parameters, shapes (p, d) and (d, d).
    X, Y : ndarray
        The n samples, shapes (n, d) and (n, p).
    mask : str
        ``"loo"`` leaves the query out of its own context; ``"all"`` keeps it.
    rows : ndarray of int, optional
        Restricts the loss to those query rows (repeats allowed), each still attending over
        all n tokens (minus itself for ``"loo"``):
        ``L = 1/(2|rows|) sum_{j in rows} ||y_j - A h_j||^2`` (a minibatch of queries for SGD).
    block_size : int, optional
        Query rows per block (automatic when None); peak memory is two ``block_size x n``
        arrays plus O(n (d + p)).
    dtype : dtype
        ``np.float32`` runs the block arithmetic in single precision; the loss and gradients
        are accumulated and returned in float64.
    workers : int, optional
        Threads that process the blocks (module docstring).

    Returns
    -------
    tuple
        ``(loss, grad_A, grad_B)``: a float and arrays shaped like ``A`` and ``B``.

    Raises
    ------
    ValueError
        For bad shapes, non-finite inputs or arguments out of range (the message names the
        argument), or when the attention logits overflow.

    Examples
    --------
    The loss is half the mean squared residual of :func:`predict`, and the gradients are
    exact: a central difference of the loss along any direction ``(dA, dB)`` matches
    ``<grad_A, dA> + <grad_B, dB>`` to about ``h^2``:

    >>> import numpy as np
    >>> from attnlib import attention
    >>> rng = np.random.default_rng(0)
    >>> X, Y = rng.standard_normal((8, 3)), rng.standard_normal((8, 2))
    >>> A, B = rng.standard_normal((2, 3)), 0.5 * rng.standard_normal((3, 3))
    >>> loss, grad_A, grad_B = attention.loss_and_grad(A, B, X, Y)
    >>> grad_A.shape, grad_B.shape
    ((2, 3), (3, 3))
    >>> residual = attention.predict(A, B, X) - Y
    >>> bool(np.isclose(loss, np.sum(residual ** 2) / (2 * 8)))
    True
    >>> dA, dB = rng.standard_normal(A.shape), rng.standard_normal(B.shape)
    >>> h = 1e-5
    >>> plus = attention.loss_and_grad(A + h * dA, B + h * dB, X, Y)[0]
    >>> minus = attention.loss_and_grad(A - h * dA, B - h * dB, X, Y)[0]
    >>> directional = np.sum(grad_A * dA) + np.sum(grad_B * dB)
    >>> bool(np.isclose((plus - minus) / (2 * h), directional, rtol=1e-7))
    True
    """
    _check_mask(mask)
    x = _check_tokens("X", X)
    n, d = x.shape
    a, b = _check_layer(A, B, d)
    p = a.shape[0]
    y = as_matrix("Y", Y, shape=(n, p))
    index = _check_rows(rows, n)
    kind = _check_dtype(dtype)
    loo = mask == "loo"

    m = n if index is None else index.size
    block = _resolve_block(block_size, m, n)
    with one_blas_thread():          # every product of the call (see one_blas_thread)
        keys = x.astype(kind, copy=False)
        keys_t = np.ascontiguousarray(keys.T)
        a_t = a.astype(kind, copy=False)
        y_t = y.astype(kind, copy=False)
        xb = _queries_b(x, b, kind)
        key_norm = _largest_norm(x)

        residual, hidden, ds_x = (np.empty((m, p), kind), np.empty((m, d), kind),
                                  np.empty((m, d), kind))              # per query row
        if _use_kernel(d, m * n):
            _kernel_blocks(a_t, keys, xb, y_t, index, loo, key_norm, block, workers,
                           (residual, hidden, ds_x))
            queries = x if index is None else x[index]
            total, grad_a, grad_b = _row_sums(residual, hidden, queries, ds_x)
            return total / (2 * m), grad_a / m, grad_b / m

        def work(start: int, stop: int, scratch: list[np.ndarray]) -> None:
            self_columns = _self_columns(index, start, stop, loo)
            targets = y_t[start:stop] if index is None else y_t[index[start:stop]]
            queries_b = xb[start:stop] if index is None else xb[index[start:stop]]
            e, z = _softmax_rows(queries_b, keys_t, scratch[0], self_columns,   # E = z W
                                 key_norm)
            _block_rows(e, z, keys, keys_t, targets, a_t, scratch[1],
                        (residual[start:stop], hidden[start:stop], ds_x[start:stop]))

        run_blocks(work, m, block, workers, buffers=2, width=n, dtype=kind)
        queries = x if index is None else x[index]
        total, grad_a, grad_b = _row_sums(residual, hidden, queries, ds_x)
    return total / (2 * m), grad_a / m, grad_b / m


def _kernel_blocks(a: np.ndarray, keys: np.ndarray, xb: np.ndarray, y: np.ndarray,
                   index: np.ndarray | None, loo: bool, key_norm: float, block: int,
                   workers: int | None, out: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
    """:func:`loss_and_grad`'s blocks through the fused kernel (``attnlib._kernel``): writes the
    per-row ``(residual, hidden, ds_x)`` of ``out``, as the numpy path's blocks do. The inputs
    are in the block precision; ``index`` the query rows (None: all)."""
    m, n, d = out[0].shape[0], keys.shape[0], keys.shape[1]
    kind = keys.dtype
    kernel = _kernel.rows_kernel(d)
    keys_t = _kernel.padded_keys(keys)
    a_t, xb, y = np.ascontiguousarray(a.T), np.ascontiguousarray(xb), np.ascontiguousarray(y)
    zero, safe = kind.type(0), float(_SAFE_LOGIT[kind])
    residual, hidden, ds_x = out

    def work(start: int, stop: int, scratch: list[np.ndarray]) -> None:
        rows = slice(start, stop) if index is None else index[start:stop]
        if not loo:
            columns = np.full(stop - start, -1, np.intp)
        else:
            columns = np.arange(start, stop) if index is None else index[start:stop]
        status = kernel(xb[rows], keys_t, n, columns, key_norm, safe, y[rows], a_t,
                        residual[start:stop], hidden[start:stop], ds_x[start:stop],
                        scratch[0][0], zero)
        if status:
            raise ValueError(_OVERFLOW_MESSAGE)

    if workers is not None:
        check_int("workers", workers, minimum=1, maximum=MAX_WORKERS)
    threads = workers if m * n * kind.itemsize >= KERNEL_PARALLEL_BYTES else 1
    run_blocks(work, m, block, threads, buffers=1, width=keys_t.shape[1], dtype=kind)


def _check_prompts(X: object, Y: object, p: int) -> tuple[np.ndarray, np.ndarray]:
    x = as_matrix("X", X, ndim=3)
    if x.shape[1] < 2:
        raise ValueError(f"X must hold prompts of at least 2 tokens, shape (N, n, d), got {x.shape}")
    y = as_matrix("Y", Y, shape=(x.shape[0], x.shape[1], p), ndim=3)
    return x, y


@finite_result
def prompts_loss_and_grad(A: np.ndarray, B: np.ndarray, X: np.ndarray, Y: np.ndarray, *,
                          mask: Mask = "loo", rows: np.ndarray | None = None,
                          workers: int | None = None) -> tuple[float, np.ndarray, np.ndarray]:
    """Loss and gradient of the layer over N prompts of context length n (chapters 5 and 6).

    ``X`` (N, n, d), ``Y`` (N, n, p): prompt k is its own context; query j of prompt k attends
    over that prompt's tokens only (minus itself for ``mask="loo"``), giving ``h_kj`` as in
    the module docstring, and

        L_hat(A, B) = 1/(2 N n) sum_k sum_j || y_kj - A h_kj ||^2 ,

    the average of :func:`loss_and_grad` over the prompts (N = 1 is that function). ``rows``
    (flat query indices ``k n + j``, repeats allowed) restricts the average to those queries,
    each still attending over its whole prompt (SGD minibatches). Memory: stacks of
    ``BLOCK_ELEMENTS // n^2`` prompts share two work arrays of ``BLOCK_ELEMENTS`` entries when
    ``n^2 <= BLOCK_ELEMENTS``; longer prompts go one by one through :func:`loss_and_grad`,
    blocked over query rows. Cost O(N n^2 (d + p)).
    """
    _check_mask(mask)
    b = as_matrix("B", B)
    d = b.shape[0]
    a, b = _check_layer(A, b, d)
    x, y = _check_prompts(X, Y, a.shape[0])
    if x.shape[2] != d:
        raise ValueError(f"X must have shape (N, n, {d}) to match B, got {x.shape}")
    prompts, n = x.shape[:2]
    if rows is not None:
        index = _check_rows(rows, prompts * n)
        owner, local = np.divmod(index, n)
        total, grad_a, grad_b = 0.0, np.zeros_like(a), np.zeros_like(b)
        for k in np.unique(owner):
            chosen = local[owner == k]
            value, g_a, g_b = loss_and_grad(a, b, x[k], y[k], mask=mask, rows=chosen,
                                            workers=workers)
            total, grad_a, grad_b = (total + value * chosen.size, grad_a + g_a * chosen.size,
                                     grad_b + g_b * chosen.size)
        return total / index.size, grad_a / index.size, grad_b / index.size
    if n * n > BLOCK_ELEMENTS:
        parts = [loss_and_grad(a, b, x[k], y[k], mask=mask, workers=workers)
                 for k in range(prompts)]
        return (sum(part[0] for part in parts) / prompts,
                np.sum([part[1] for part in parts], axis=0) / prompts,
                np.sum([part[2] for part in parts], axis=0) / prompts)
    keys_t = np.ascontiguousarray(x.transpose(0, 2, 1))
    with one_blas_thread():
        xb = _queries_b(x, b, np.dtype(np.float64))
    self_columns = np.arange(n) if mask == "loo" else None
    key_norm = _largest_norm(x)

    def work(start: int, stop: int,
             scratch: list[np.ndarray]) -> tuple[float, np.ndarray, np.ndarray]:
        stack = [array.reshape(stop - start, n, n) for array in scratch]
        e, z = _softmax_rows(xb[start:stop], keys_t[start:stop], stack[0], self_columns,
                             key_norm)
        residual = np.empty((stop - start, n, a.shape[0]))
        hidden, ds_x = np.empty((stop - start, n, d)), np.empty((stop - start, n, d))
        _block_rows(e, z, x[start:stop], keys_t[start:stop], y[start:stop], a, stack[1],
                    (residual, hidden, ds_x))
        return _row_sums(residual, hidden, x[start:stop], ds_x)

    group = max(1, BLOCK_ELEMENTS // (n * n))
    parts = run_blocks(work, prompts, group, workers, buffers=2, width=n * n,
                        dtype=np.dtype(np.float64))
    count = prompts * n
    return (sum(part[0] for part in parts) / (2 * count),
            np.sum([part[1] for part in parts], axis=0) / count,
            np.sum([part[2] for part in parts], axis=0) / count)


@finite_result
def loss(A: np.ndarray, B: np.ndarray, X: np.ndarray, Y: np.ndarray, *, mask: Mask = "loo",
         block_size: int | None = None, dtype: DTypeLike = np.float64,
         workers: int | None = None) -> float:
    """Return the empirical loss ``L_hat = 1/(2n) sum_j ||y_j - A h_j||^2``."""
    x = _check_tokens("X", X)
    a, _ = _check_layer(A, B, x.shape[1])
    y = as_matrix("Y", Y, shape=(x.shape[0], a.shape[0]))
    residual = predict(a, B, x, mask=mask, block_size=block_size, dtype=dtype,
                       workers=workers) - y
    return float(np.einsum("ij,ij->", residual, residual)) / (2 * x.shape[0])


@finite_result
def deployed_risk(A: np.ndarray, B: np.ndarray, X_context: np.ndarray, X_test: np.ndarray,
                  Y_test: np.ndarray, *, block_size: int | None = None,
                  workers: int | None = None) -> float:
    """Deployed test risk ``1/(2m) sum_k ||y_k - y_hat(x_k)||^2`` of the in-context predictor.

    ``y_hat(x) = A sum_i softmax_i(x^T B x_i) x_i`` attends over the n context samples
    ``X_context`` (:func:`predict_new`); ``(X_test, Y_test)`` are m fresh test pairs. Its
    expectation over the test pairs is the population risk of the deployed predictor, whose
    excess over ``L* = p noise_std^2 / 2`` the book reports beside the infinite-context
    excess risk.

    Parameters
    ----------
    A, B : ndarray
        The parameters, shapes (p, d) and (d, d).
    X_context : ndarray
        The n context samples, (n, d).
    X_test, Y_test : ndarray
        The m test pairs, (m, d) and (m, p).
    block_size, workers : int, optional
        As for :func:`loss_and_grad`.

    Returns
    -------
    float
        The deployed test risk.

    Raises
    ------
    ValueError
        For bad shapes or non-finite inputs (the message names the argument).
    """
    x_test = _check_tokens("X_test", X_test, minimum=1)
    prediction = predict_new(A, B, X_context, x_test, block_size=block_size, workers=workers)
    y = as_matrix("Y_test", Y_test, shape=prediction.shape)
    residual = y - prediction
    return float(np.einsum("ij,ij->", residual, residual)) / (2 * y.shape[0])


@dataclass(frozen=True)
class EscapeCurves:
    """Result of :func:`memorising_escape`: one value per scale ``c`` (losses, not excesses)."""

    scales: np.ndarray
    loss_all: np.ndarray
    loss_loo: np.ndarray
    deployed: np.ndarray
    self_top_fraction: float


@finite_result
def memorising_escape(X: np.ndarray, Y: np.ndarray, X_test: np.ndarray, Y_test: np.ndarray,
                      scales: np.ndarray) -> EscapeCurves:
    """The losses along chapter 1's memorising ray ``B = c Sigma_hat^{-1}``, ``A = A_hat``.

    ``A_hat = Y^T X (X^T X)^{-1}`` is the least-squares fit (what a layer that attends only to
    itself would need) and ``Sigma_hat = X^T X / n``. For each ``c`` in ``scales`` this returns
    the empirical loss with both masks and the deployed risk (:func:`deployed_risk`) on the
    fresh pairs ``(X_test, Y_test)``, plus the fraction of tokens whose largest logit
    ``x_j^T Sigma_hat^{-1} x_i`` is their own (``i = j``). When that fraction is 1, as
    ``c -> infinity`` every token attends only to itself under the all-tokens mask and its
    loss tends to the least-squares residual ``1/(2n) ||Y - X A_hat^T||_F^2``: the escape.
    """
    x = as_matrix("X", X)
    n, d = x.shape
    if n < d + 1:
        raise ValueError(f"X must have more rows than columns for the least-squares fit, "
                         f"got shape {x.shape}")
    y = as_matrix("Y", Y, shape=(n, None))
    grid = as_matrix("scales", scales, ndim=1)
    a_hat = np.linalg.lstsq(x, y, rcond=None)[0].T
    try:
        direction = np.linalg.inv(x.T @ x / n)
    except np.linalg.LinAlgError as exc:
        raise ValueError("X must have linearly independent columns (X^T X / n is singular) "
                         "for the least-squares fit") from exc
    losses = {mask: np.array([loss(a_hat, c * direction, x, y, mask=mask) for c in grid])
              for mask in ("all", "loo")}
    deployed = np.array([deployed_risk(a_hat, c * direction, x, X_test, Y_test) for c in grid])
    self_top = float(np.mean(np.argmax(x @ direction @ x.T, axis=1) == np.arange(n)))
    return EscapeCurves(grid, losses["all"], losses["loo"], deployed, self_top)
