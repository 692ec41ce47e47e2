"""The problem every speed and memory benchmark measures, one home for all of them.

``problem(n)``: the book's default regression problem (d = 10, p = 20, seed 8) with n samples
and a random layer (A, B) of entries N(0, 0.3^2 / d); ``relative`` the largest entry of a
difference relative to the largest entry of the exact value; ``status_kb`` a field of
``/proc/self/status`` in kB (the resident set size, VmRSS, and its peak, VmHWM).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

D, P = 10, 20
SEED = 8


def status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"{field} not found in /proc/self/status")



def problem(n: int):
    from attnlib import data

    rng = np.random.default_rng(SEED)
    problem = data.default_problem(rng=rng, d=D, p=P)
    x, y = problem.sample(n, rng=rng)
    a = 0.3 / np.sqrt(D) * rng.standard_normal((P, D))
    b = 0.3 / np.sqrt(D) * rng.standard_normal((D, D))
    return a, b, x, y


def relative(approx: np.ndarray, exact: np.ndarray) -> float:
    return float(np.abs(np.asarray(approx) - exact).max() / np.abs(exact).max())
