"""Chapter 7 (Gibbs measures, Poincare inequalities, Villani): the wells, their gaps and chains.

The chapter measures, on two Villani potentials at the temperature ``s = 0.7``, the spectral
gap ``lambda_1`` of the Langevin generator ``L g = (s/2) Laplacian g - grad f . grad g`` and the
exponential decay of the total variation distance between many Euler-Maruyama chains and the
Gibbs measure ``mu_s ~ exp(-2 f / s)``. Its page in the Reproduction report compares the fitted
decay rates with the gaps. Every function here builds its random generator from a fixed seed
of :data:`SEEDS` (or takes it as an argument), so the chapter and the report get the same
numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Sequence

import numpy as np

from attnlib import langevin, potentials

__all__ = ["SEEDS", "TEMPERATURE", "Relaxation", "tilted_well", "curved_well", "well_gap",
           "curved_well_gap", "relaxation", "relaxation_1d", "relaxation_2d", "noise_floor",
           "decay_rate", "weak_order_errors", "BIAS_RUNS", "stationary_biases",
           "describe_biases", "describe_spreading", "describe_box_gaps"]

#: The chapter's random seeds, one per experiment.
SEEDS = {"weak_order": 1, "one_d": 7, "two_d": 8, "floor": 9, "bounded": 10, "bias": 11}
#: The temperature ``s`` of the two worked examples.
TEMPERATURE = 0.7
#: Grid step of the 1-D spectral-gap computation.
GAP_SPACING_1D = 0.005


def tilted_well() -> langevin.LossAndGrad:
    """The 1-D tilted double well ``f(x) = (x^2 - 1)^2 + 0.2 x`` (section "A worked example in
    one dimension"): a Villani function, with ``f'^2 / s - f'' ~ 16 x^6 / s``."""
    return partial(potentials.double_well, tilt=0.2)


def curved_well() -> langevin.LossAndGrad:
    """The 2-D curved double well ``f(x, y) = (x^2 - 1)^2 + 0.2 x + (y - x^2 / 2)^2`` (section
    "A worked example in two dimensions"): its valley ``y = x^2 / 2`` bends the path between
    the wells at ``(+-1, 0.5)``, so the Gibbs density does not factorise."""
    return partial(potentials.double_well_2d, tilt=0.2, stiffness=2.0, bend=0.5)


def well_gap(s: float = TEMPERATURE, *, half_width: float = 3.0) -> float:
    """The spectral gap ``lambda_1`` of ``-L`` for :func:`tilted_well` at temperature ``s``,
    on the box ``[-L, L]`` (``L = half_width``, reflecting walls, grid step 0.005;
    :func:`attnlib.langevin.spectral_gap`). The best Poincare constant is
    ``C_P = s / (2 lambda_1)``. The chapter uses ``L = 3``; ``L = 3.5`` shows that the gap no
    longer depends on the box (section "Potentials that fail the Villani condition")."""
    points = int(round(2 * half_width / GAP_SPACING_1D)) + 1
    return langevin.spectral_gap(tilted_well(), [np.linspace(-half_width, half_width, points)],
                                 s)[1]


def curved_well_gap(s: float = TEMPERATURE) -> float:
    """The spectral gap ``lambda_1`` of ``-L`` for :func:`curved_well` at temperature ``s``, on
    the box ``[-2.5, 2.5] x [-2.5, 4]`` (101 x 131 grid points)."""
    return langevin.spectral_gap(curved_well(), [np.linspace(-2.5, 2.5, 101),
                                                 np.linspace(-2.5, 4.0, 131)], s)[1]


@dataclass(frozen=True)
class Relaxation:
    """Chains started away from the Gibbs measure and their distance to it over time: the
    Euler-Maruyama ``run`` (states recorded), the histogram ``edges`` (one array per
    coordinate), the Gibbs ``probabilities`` of those bins, and ``tv`` (one entry per recorded
    time), the total variation distance between the chains' histogram and those
    probabilities."""

    run: langevin.LangevinRun
    edges: list[np.ndarray]
    probabilities: np.ndarray
    tv: np.ndarray


def relaxation(potential: langevin.LossAndGrad, start: Sequence[float],
               edges: list[np.ndarray], *, s: float, step: float, n_steps: int,
               record_every: int, chains: int, seed: int) -> Relaxation:
    """Run ``chains`` Euler-Maruyama chains ``theta_{k+1} = theta_k - h grad f(theta_k) +
    sqrt(s h) xi_k`` from the point ``start`` (generator ``default_rng(seed)``) and measure,
    at every recorded time, the total variation distance
    ``TV = 1/2 sum_bins |p_hist - p|`` (plus half the mass outside the box) between their
    histogram on ``edges`` and the Gibbs bin probabilities ``p`` of ``exp(-2 f / s)``."""
    probabilities = langevin.gibbs_bin_probabilities(potential, edges, s)
    run = langevin.euler_maruyama(potential, np.tile(np.asarray(start, dtype=float), (chains, 1)),
                                  step=step, temperature=s, n_steps=n_steps,
                                  record_every=record_every, record_states=True,
                                  rng=np.random.default_rng(seed))
    tv = np.array([langevin.histogram_tv(x, edges, probabilities) for x in run.states])
    return Relaxation(run=run, edges=edges, probabilities=probabilities, tv=tv)


def relaxation_1d(s: float = TEMPERATURE, *, chains: int = 10_000,
                  seed: int = SEEDS["one_d"]) -> Relaxation:
    """The chapter's 1-D run: :func:`tilted_well`, all chains at ``x = 1`` (the higher well),
    step ``h = 0.01`` to ``t = 40`` (recorded every 0.2), histogram of 50 bins on
    ``[-2.5, 2.5]``."""
    return relaxation(tilted_well(), [1.0], [np.linspace(-2.5, 2.5, 51)], s=s, step=0.01,
                      n_steps=4000, record_every=20, chains=chains, seed=seed)


def relaxation_2d(s: float = TEMPERATURE, *, chains: int = 10_000,
                  seed: int = SEEDS["two_d"]) -> Relaxation:
    """The chapter's 2-D run: :func:`curved_well`, all chains at ``(1, 0.5)``, step
    ``h = 0.02`` to ``t = 40`` (recorded every 0.2), histogram of 16 x 16 bins on
    ``[-2, 2] x [-1.5, 2.5]``."""
    return relaxation(curved_well(), [1.0, 0.5],
                      [np.linspace(-2.0, 2.0, 17), np.linspace(-1.5, 2.5, 17)], s=s, step=0.02,
                      n_steps=2000, record_every=10, chains=chains, seed=seed)


def noise_floor(relaxed: Relaxation, rng: np.random.Generator, *, repeats: int = 20) -> float:
    """The distance an exact sample would have: the mean, over ``repeats`` draws from ``rng``,
    of the total variation distance between the histogram of as many bin centres as there are
    chains, drawn with the Gibbs bin probabilities, and those probabilities. The chapter draws
    the 1-D floor and then the 2-D floor from one generator, in that order."""
    centres = [0.5 * (e[1:] + e[:-1]) for e in relaxed.edges]
    cells = np.stack([m.ravel() for m in np.meshgrid(*centres, indexing="ij")], axis=1)
    chains = relaxed.run.theta.shape[0]
    p = relaxed.probabilities.ravel()
    return float(np.mean([langevin.histogram_tv(cells[rng.choice(len(cells), size=chains, p=p)],
                                                relaxed.edges, relaxed.probabilities)
                          for _ in range(repeats)]))


def decay_rate(relaxed: Relaxation, floor: float) -> tuple[float, np.ndarray]:
    """The fitted exponential decay rate of the distance, ``-d log TV / dt`` by least squares,
    over the window where the chains have left their start and the distance is well above the
    noise floor (``t >= 2`` and ``TV >= 3 floor``). Returns the rate and the window (a mask
    over the recorded times). A Poincare inequality predicts a rate close to ``lambda_1``."""
    window = (relaxed.run.times >= 2) & (relaxed.tv >= 3 * floor)
    rate = -np.polyfit(relaxed.run.times[window], np.log(relaxed.tv[window]), 1)[0]
    return float(rate), window


# ---------------------------------------------------------------------------------------------
# The integrator's checks and what the chapter's cells print (the cells show the idea).
# ---------------------------------------------------------------------------------------------

def weak_order_errors(steps: Sequence[float], *, a: float = 1.0, s: float = 1.0,
                      T: float = 1.0, x0: float = 2.0, chains: int = 400_000,
                      seed: int = SEEDS["weak_order"]) -> tuple[list[float], list[float]]:
    """Euler-Maruyama on the Ornstein-Uhlenbeck process ``f = a x^2 / 2`` at temperature ``s``
    (section "The integrator"): for each step ``h`` of ``steps``, ``chains`` chains from ``x0``
    to the time ``T`` (generator ``default_rng(seed)`` for each ``h``), and the errors of their
    mean and variance against the closed forms ``x0 e^{-aT}`` and ``s (1 - e^{-2aT}) / (2a)``."""
    ou = partial(potentials.quadratic, curvature=a)
    mean_err, var_err = [], []
    for h in steps:
        n = int(round(T / h))
        run = langevin.euler_maruyama(ou, np.full((chains, 1), x0), step=h, temperature=s,
                                      n_steps=n, record_every=n,
                                      rng=np.random.default_rng(seed))
        x = run.theta[:, 0]
        mean_err.append(abs(x.mean() - x0 * np.exp(-a * T)))
        var_err.append(abs(x.var() - s / (2 * a) * (1 - np.exp(-2 * a * T))))
    return mean_err, var_err


#: The samplers and steps of "The step-size bias, measured".
BIAS_RUNS = (("Euler-Maruyama", 0.02), ("Euler-Maruyama", 0.01), ("Euler-Maruyama", 0.005),
             ("MALA", 0.02))


def stationary_biases(potential: langevin.LossAndGrad, start: np.ndarray, exact: float,
                      s: float, *, runs: Sequence[tuple[str, float]] = BIAS_RUNS,
                      seed: int = SEEDS["bias"] + 1) -> dict[tuple[str, float], tuple]:
    """The bias of each sampler's stationary law in the mean of ``f``: chains from the exact
    Gibbs sample ``start`` to t = 25 (recorded every 0.5; generator ``default_rng(seed)`` for
    each run), the mean of ``f`` over the last 80% of the records minus the exact Gibbs mean
    ``exact``. Keyed by ``(sampler, h)``: ``(bias, standard error, acceptance or None)``."""
    biases = {}
    for sampler, h in runs:
        run_fn = langevin.mala if sampler == "MALA" else langevin.euler_maruyama
        run = run_fn(potential, start, step=h, temperature=s, n_steps=int(round(25 / h)),
                     record_every=int(round(0.5 / h)), rng=np.random.default_rng(seed))
        mean_f, err_f = langevin.tail_mean(run.loss, fraction=0.8)
        biases[sampler, h] = (mean_f - exact, err_f,
                              run.acceptance if sampler == "MALA" else None)
    return biases


def describe_biases(biases: dict[tuple[str, float], tuple]) -> str:
    """Each run of :func:`stationary_biases`, and the Euler-Maruyama bias divided by h."""
    lines = []
    for (sampler, h), (bias, err, acceptance) in biases.items():
        extra = f", acceptance {acceptance:.3f}" if acceptance is not None else ""
        lines.append(f"{sampler:>14s}, h = {h:5.3f}: E f - exact = {bias:+.4f} "
                     f"+- {err:.4f}{extra}")
    em = [(h, value[0]) for (sampler, h), value in biases.items() if sampler != "MALA"]
    lines.append("Euler-Maruyama bias / h: " + ", ".join(f"{b / h:.2f}" for h, b in em))
    return "\n".join(lines)


def describe_spreading(times: np.ndarray, second_moment: np.ndarray, inside: np.ndarray,
                       shown: Sequence[float] = (10, 50, 200)) -> str:
    """The second moment and the fraction of chains in [-3, 3] at the times ``shown``."""
    lines = []
    for t_show in shown:
        i = np.searchsorted(times, t_show)
        lines.append(f"t = {t_show:3d}: E x^2 = {second_moment[i]:6.1f}, "
                     f"fraction in [-3, 3] = {inside[i]:.2f}")
    return "\n".join(lines)


def describe_box_gaps(boxes: Sequence[int], gaps: Sequence[float]) -> str:
    """The spectral gap on each box [-L, L], three boxes a line."""
    growth = [f"L={b}: {g:.2e}" for b, g in zip(boxes, gaps)]
    return ("log growth, lambda_1 on [-L, L]: " + ", ".join(growth[:3]) + "\n  "
            + ", ".join(growth[3:]))
