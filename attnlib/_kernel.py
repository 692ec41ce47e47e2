"""The fused kernel behind :func:`attnlib.attention.loss_and_grad` (private; optional: numba).

Installed with the ``fast`` extra (``pip install 'attnlib[fast]'``, numba); without numba, or
with the environment variable ``ATTNLIB_KERNEL=0`` (read at import), or with
``attnlib.attention.ENGINE = "numpy"``, :mod:`attnlib.attention` computes with numpy only, the
reference. numba is imported on the first use of the kernel, never by ``import attnlib``.

What the numpy path does in seven passes over each block's ``block x n`` entries (the logits
product, ``exp``, the row sums, ``E X``, ``(G / z) X^T``, ``T *= E``, ``T X``), four of them
products with an inner dimension of only d that run far below the BLAS's GEMM rate, the kernel
does in two passes over one query row's n entries, one row after another:

1. for every key i: the logit ``s_ji = (x_j^T B) . x_i``, ``e_ji = exp(s_ji - m_j)`` (0 for
   the query itself under the leave-one-out mask), stored in a row buffer of n entries, and
   the sums ``z_j = sum_i e_ji`` and ``sum_i e_ji x_i``; then, per row, ``h_j``, ``r_j``,
   ``g_j`` and ``c_j`` (the formulas of :mod:`attnlib.attention`);
2. for every key i: ``u_ji = e_ji (g_j . x_i) / z_j`` and the sum ``sum_i u_ji x_i``, whence
   ``(dS X)_j``.

The loops run over the keys with d held in registers: the source is generated for each d
(:func:`source`; d up to :data:`MAX_D`), so that the d coordinates of a key, the d
coefficients of the query and the d running sums are scalars that LLVM keeps in vector
registers, vectorizing the loop over keys (8 float64 or 16 float32 lanes with AVX-512). The
exponential is a vectorizable polynomial (:func:`_exp_source`: Cody-Waite reduction by
``ln 2``, Taylor polynomial, ``2^k`` from the exponent bits; within 2 ulp of ``numpy.exp``
where the result is normal, exactly 0 below ``exp(-708)`` (float64) or ``exp(-87)``
(float32), where numpy gives subnormal numbers), because numba calls the scalar libm ``exp``
in a loop unless Intel's SVML is present. The keys are padded with zero columns to a multiple
of :data:`PAD`, their entries masked to 0, so that the vector loop has no scalar remainder.

The shift ``m_j``: 0 when the Cauchy-Schwarz bound ``||x_j^T B|| max_i ||x_i||`` is within the
numpy path's safe range (``attention._SAFE_LOGIT``), else the row's largest logit, found by an
extra (scalar) pass, which also reports logits that overflow (status ``j + 1`` for the block's
row j: :mod:`attnlib.attention` raises its ``ValueError``). The rule is applied per row, so
each row's values depend on that row alone: not on the blocks or the threads, bit for bit.

The memory: a row buffer of n entries per thread (row 0 of the work array that
``attnlib._threads.run_blocks`` hands out: the rest of it is never written), the padded keys
(d x n) and the per-row outputs; no n x n temporary, no ``block x n`` one either.

Compilation: the first call for a given d and dtype compiles for this CPU (about 2 s) and
caches the machine code on disk through numba's cache (``__pycache__`` beside this file, or
numba's user-wide cache when that is not writable; ``NUMBA_CACHE_DIR`` moves it): the
generated functions are compiled as if they stood in this file, whose modification invalidates
the cache.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Callable

import numpy as np

from ._constants import documented

#: The environment variable that turns the kernel off: "0", "off", "false", "no" or "numpy"
#: (read once, at import).
ENV_VAR = documented("ATTNLIB_KERNEL", """\
The environment variable that turns the kernel off: "0", "off", "false", "no" or "numpy"
(read once, at import).""")
_OFF_VALUES = ("0", "off", "false", "no", "numpy")
_DISABLED = os.environ.get(ENV_VAR, "").strip().lower() in _OFF_VALUES


def disabled_by_environment() -> bool:
    """Whether the environment variable :data:`ENV_VAR` turned the kernel off (at import)."""
    return _DISABLED


#: Largest d the kernel is generated for: its loops hold the d key coordinates, the d query
#: coefficients and the d running sums in registers, and beyond about 16 they no longer fit
#: (AVX-512 has 32 vector registers); larger d go to numpy, whose products are less skinny.
MAX_D = documented(16, """\
Largest d the kernel is generated for: its loops hold the d key coordinates, the d query
coefficients and the d running sums in registers, and beyond about 16 they no longer fit
(AVX-512 has 32 vector registers); larger d go to numpy, whose products are less skinny.""")
#: The keys are padded with zero columns to a multiple of this many (4 vectors of 16 float32):
#: the vectorized loops then never run their scalar remainder.
PAD = documented(64, """\
The keys are padded with zero columns to a multiple of this many (4 vectors of 16 float32):
the vectorized loops then never run their scalar remainder.""")

_LOCK = threading.Lock()
_NUMBA: dict[str, Any] = {}           # "module": numba, or None when it does not import
_KERNELS: dict[int | str, Callable[..., Any]] = {}


def available() -> bool:
    """Whether numba imports (tried once per process)."""
    if "module" not in _NUMBA:
        with _LOCK:
            if "module" not in _NUMBA:
                try:
                    import numba
                except ImportError:
                    numba = None
                if numba is not None and numba.config.DISABLE_JIT:
                    numba = None              # NUMBA_DISABLE_JIT: the kernel would run in Python
                _NUMBA["module"] = numba
    return _NUMBA["module"] is not None


def padded_keys(keys: np.ndarray) -> np.ndarray:
    """The keys (n, d) as a C-contiguous (d, n_pad) array, zero beyond column n, with n_pad
    the multiple of :data:`PAD` at or above n."""
    n, d = keys.shape
    out = np.zeros((d, -(-n // PAD) * PAD), keys.dtype)
    out[:, :n] = keys.T
    return out


# ------------------------------------------------------------------- the exponential
# Cody-Waite reduction x = k ln2 + r, |r| <= ln2 / 2 (ln2 split in a high part exact in k ln2_hi
# and a low part), Taylor polynomial of exp(r) (degree 13 in float64: truncation below 1e-17;
# degree 7 in float32: below 6e-9), times 2^k built from the exponent bits. Inputs are clamped
# to the range where 2^k is normal; below it the result is 0.
_EXP_CONSTANTS = {
    "float64": dict(low=-708.0, high=709.0, log2e=1.4426950408889634,
                    ln2_hi=0.693147180369123816490, ln2_lo=1.90821492927058770002e-10,
                    degree=13, bias=1023, mantissa=52, int_type="int64"),
    "float32": dict(low=-87.0, high=88.0, log2e=1.44269504088896341,
                    ln2_hi=0.693359375, ln2_lo=-2.12194440e-4,
                    degree=7, bias=127, mantissa=23, int_type="int32"),
}


def _exp_source(kind: str) -> str:
    """The source of ``exp_<kind>(v)`` (numba, scalar code that LLVM vectorizes)."""
    c = _EXP_CONSTANTS[kind]
    f = f"np.{kind}"
    lines = [f"def exp_{kind}(v):",
             f"    w = min(max(v, {f}({c['low']!r})), {f}({c['high']!r}))",
             f"    k = np.floor(w * {f}({c['log2e']!r}) + {f}(0.5))",
             f"    r = w - k * {f}({c['ln2_hi']!r})",
             f"    r = r - k * {f}({c['ln2_lo']!r})",
             f"    p = {f}({1 / math.factorial(c['degree'])!r})"]
    for power in range(c["degree"] - 1, -1, -1):
        lines.append(f"    p = p * r + {f}({1 / math.factorial(power)!r})")
    lines += [f"    e = p * bits_to_float(np.{c['int_type']}("
              f"(np.int64(k) + {c['bias']}) << {c['mantissa']}))",
              f"    return e if v >= {f}({c['low']!r}) else {f}(0.0)"]
    return "\n".join(lines) + "\n"


def _build_exp(numba: Any) -> Callable[[Any], Any]:
    """The stub ``vexp`` with its numba overloads for float64 and float32 (compiled with
    floating-point contraction only: the reduction's split of ln 2 must not be reassociated)."""
    from numba.core import types
    from numba.extending import intrinsic, overload

    @intrinsic
    def bits_to_float(typingctx, bits):       # reinterpret an integer's bits as a float
        result = {types.int64: types.float64, types.int32: types.float32}.get(bits)
        if result is None:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(signature.return_type))
        return result(bits), codegen

    namespace = {"np": np, "bits_to_float": bits_to_float}
    for kind in _EXP_CONSTANTS:
        exec(compile(_exp_source(kind), __file__, "exec"), namespace)

    def vexp(v):
        raise NotImplementedError("vexp runs inside numba-compiled code only")

    @overload(vexp, jit_options={"fastmath": {"contract"}, "nogil": True})
    def _vexp(v):
        if v == types.float64:
            return namespace["exp_float64"]
        if v == types.float32:
            return namespace["exp_float32"]
        return None
    return vexp


# ---------------------------------------------------------------------- the kernel
def source(d: int) -> str:
    """The source of ``rows_d<d>``, the kernel for d coordinates (see the module docstring).

    ``rows_d<d>(qb, xt, n, self_columns, key_norm, safe, targets, at, residual, hidden, ds_x,
    erow, zero) -> status`` processes the query rows of ``qb`` (m, d) (their ``x_j^T B``)
    against the padded keys ``xt`` (d, n_pad) of which the first n are real;
    ``self_columns[j]`` is row j's own column (leave-one-out) or -1; ``key_norm`` is
    ``max_i ||x_i||`` and ``safe`` the bound on the logits below which no shift is taken;
    ``targets`` (m, p) and ``at`` (d, p), the transpose of A, give the residuals (the loops
    over the p outputs then run over contiguous rows of ``at`` and vectorize). Writes ``residual`` (m, p),
    ``hidden`` (m, d) and ``ds_x`` (m, d); ``erow`` is a buffer of n_pad entries, ``zero`` a 0
    of the arithmetic's dtype. Returns 0, or ``j + 1`` when row j's logits overflow.
    """
    if not 1 <= d <= MAX_D:
        raise ValueError(f"the kernel is generated for 1 <= d <= {MAX_D}, got d = {d}")
    ks = range(d)

    def each(template: str, sep: str = "; ") -> str:
        return sep.join(template.format(k=k) for k in ks)

    return f'''
def rows_d{d}(qb, xt, n, self_columns, key_norm, safe, targets, at, residual, hidden, ds_x,
              erow, zero):
    m = qb.shape[0]
    p = at.shape[1]
    n_pad = xt.shape[1]
    {each("x{k} = xt[{k}]")}
    {each("at{k} = at[{k}]")}
    for j in range(m):
        c = self_columns[j]
        {each("q{k} = qb[j, {k}]")}
        shift = zero
        if not math.sqrt({each("q{k} * q{k}", " + ")}) * key_norm <= safe:
            # the logits may be large: shift by the row maximum (the context's only)
            for t in range(n_pad):
                erow[t] = {each("q{k} * x{k}[t]", " + ")}
            top = erow[1] if c == 0 else erow[0]
            bad = False
            for t in range(n):
                if t != c:
                    s = erow[t]
                    if s > top:
                        top = s
                    elif s != s:
                        bad = True
            if bad or not (-math.inf < top < math.inf):
                return j + 1
            shift = top
        # pass 1: E (row buffer), z and the sum of e x over the keys
        z = zero
        {each("h{k} = zero")}
        for t in range(n_pad):
            {each("a{k} = x{k}[t]")}
            s = {each("q{k} * a{k}", " + ")}
            e = vexp(s - shift)
            e = e if (t < n) & (t != c) else zero
            erow[t] = e
            z += e
            {each("h{k} += e * a{k}")}
        {each("h{k} /= z")}
        {each("hidden[j, {k}] = h{k}")}
        # per row: the residual r, g = A^T r, c_j = g . h, then g / z
        {each("g{k} = zero")}
        for l in range(p):
            r = {each("at{k}[l] * h{k}", " + ")} - targets[j, l]
            residual[j, l] = r
            {each("g{k} += r * at{k}[l]")}
        cj = {each("g{k} * h{k}", " + ")}
        {each("g{k} /= z")}
        # pass 2: the sum of e (g . x) / z x over the keys
        {each("u{k} = zero")}
        for t in range(n_pad):
            {each("a{k} = x{k}[t]")}
            w = erow[t] * ({each("g{k} * a{k}", " + ")})
            {each("u{k} += w * a{k}")}
        {each("ds_x[j, {k}] = u{k} - cj * h{k}")}
    return 0
'''


_EXP_ARRAY_SOURCE = """
def exp_array(values, out):
    for i in range(values.size):
        out[i] = vexp(values[i])
"""


def _compiled(key: int | str, make_text: Callable[[], str], name: str,
              fastmath: set[str]) -> Callable[..., Any]:
    """``name`` from the generated source ``make_text()``, compiled with numba on first use
    (numba must be installed: :func:`available`) and kept under ``key`` (a call that finds it
    there generates nothing)."""
    kernel = _KERNELS.get(key)
    if kernel is not None:
        return kernel
    if not available():
        raise ImportError("the attention kernel needs numba: pip install 'attnlib[fast]'")
    with _LOCK:
        if key not in _KERNELS:
            numba = _NUMBA["module"]
            if "vexp" not in _NUMBA:
                _NUMBA["vexp"] = _build_exp(numba)
            namespace = {"np": np, "math": math, "vexp": _NUMBA["vexp"],
                         "__name__": __name__}
            # compiled under this file's name, so that numba's cache can locate it (and is
            # invalidated when this file, which holds the template, changes)
            exec(compile(make_text(), __file__, "exec"), namespace)
            _KERNELS[key] = numba.njit(fastmath=fastmath, nogil=True,
                                       cache=True)(namespace[name])
    return _KERNELS[key]


def rows_kernel(d: int) -> Callable[..., int]:
    """The compiled kernel for d coordinates (:func:`source`; generated and compiled on first
    use; numba must be installed: :func:`available`)."""
    return _compiled(d, lambda: source(d), f"rows_d{d}", {"contract", "reassoc", "nsz"})


def kernel_exp(values: np.ndarray) -> np.ndarray:
    """The kernel's exponential of every entry of a float64 or float32 array (for the tests)."""
    values = np.ascontiguousarray(values)
    if values.dtype not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"values must be float64 or float32, got {values.dtype}")
    out = np.empty_like(values)
    exp_array = _compiled("exp", lambda: _EXP_ARRAY_SOURCE, "exp_array", {"contract"})
    exp_array(values.ravel(), out.ravel())
    return out
