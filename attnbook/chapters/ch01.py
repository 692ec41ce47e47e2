"""Chapter 1 (the model): the tables the chapter prints, so that its open cells show the idea.

``notebooks/ch01_model.ipynb`` computes the layer's loss, gradient and deployed risk with
:mod:`attnlib.attention` in its open cells and hands the numbers to these functions, which
only arrange and print them (the chapter has no Reproduction report page).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from attnlib import attention
from attnbook.tables import ResultTable, result_table

__all__ = ["MASKS", "loss_and_gradient_line", "excess", "escape_table", "optima_table"]

#: The two masks of the chapter, leave-one-out and all tokens.
MASKS = ("loo", "all")
#: The scales of the escape table's last three columns: c = 0.01, 1 and 1000 on the chapter's
#: grid ``geomspace(1e-2, 1e3, 21)`` (index 8 is c = 1).
_COLUMNS = {"c = 0.01": 0, "c = 1": 8, "c = 1000": -1}


def loss_and_gradient_line(mask: str, value: float, grad_A: np.ndarray,
                           grad_B: np.ndarray) -> str:
    """One line: the empirical loss under ``mask`` and the Frobenius norms of its gradient."""
    return (f"mask={mask}: L_hat = {value:.4f}, |grad_A| = {np.linalg.norm(grad_A):.3g}, "
            f"|grad_B| = {np.linalg.norm(grad_B):.3g}")


def excess(curves: attention.EscapeCurves, L_star: float) -> dict[str, np.ndarray]:
    """The three curves of :func:`attnlib.attention.memorising_escape` as excess over ``L*``:
    keys ``"all"`` (all-tokens loss), ``"loo"`` (leave-one-out loss) and ``"deployed"``."""
    return {"all": curves.loss_all - L_star, "loo": curves.loss_loo - L_star,
            "deployed": curves.deployed - L_star}


def escape_table(results: Mapping[int, attention.EscapeCurves],
                 excesses: Mapping[int, Mapping[str, np.ndarray]]) -> ResultTable:
    """Print, per sample size, the fraction of tokens whose largest logit is their own, and
    return the table of each curve's minimum (and where) and its values at c = 0.01, 1, 1000.

    ``results`` and ``excesses`` are keyed by the sample size n (:func:`excess` of each)."""
    rows = []
    for size, curves in excesses.items():
        print(f"n = {size}: fraction of tokens whose largest logit is their own: "
              f"{results[size].self_top_fraction:.3f}")
        scales = results[size].scales
        for key, label in (("all", "L_hat all"), ("loo", "L_hat loo"),
                           ("deployed", "deployed")):
            best = int(np.argmin(curves[key]))
            rows.append((size, label, curves[key][best], f"{scales[best]:.3g}",
                         *(curves[key][i] for i in _COLUMNS.values())))
    return result_table(["n", "excess over L*", "min", "at c", *_COLUMNS], rows,
                        number_format="+.4f")


def optima_table(optima: Mapping[str, tuple[np.ndarray, np.ndarray]],
                 samples: Mapping[int, tuple[np.ndarray, np.ndarray]], X_test: np.ndarray,
                 Y_test: np.ndarray, L_star: float) -> ResultTable:
    """For each population optimum ``(A, B)`` and each training set ``(X, Y)`` (keyed by n):
    the mean weight of a token on itself (all tokens), both empirical losses and the deployed
    risk on ``(X_test, Y_test)``, the last three as excess over ``L*``."""
    rows = []
    for name, (A, B) in optima.items():
        for size, (X, Y) in samples.items():
            all_, loo = (attention.loss(A, B, X, Y, mask=m) - L_star for m in ("all", "loo"))
            deployed = attention.deployed_risk(A, B, X, X_test, Y_test) - L_star
            self_weight = np.diag(attention.attention_weights(B, X, mask="all")).mean()
            rows.append((name, size, f"{self_weight:.3f}", all_, loo, deployed))
    return result_table(["optimum", "n", "self-weight", "L_hat all - L*", "L_hat loo - L*",
                         "deployed - L*"], rows, number_format="+.4f")
