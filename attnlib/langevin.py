"""Langevin dynamics and Gibbs measures (chapters 7 and 10).

The source (Frangi et al. 2026) models stochastic training by the SDE

    d theta_t = -grad f(theta_t) dt + sqrt(s) dB_t,                         (SDE)

with f the (regularized) loss, s > 0 a temperature and B_t a standard Brownian motion. When
``exp(-2 f / s)`` is integrable, its normalisation ``mu_s`` (the Gibbs measure) is the
stationary law of (SDE), whose generator is

    L g = (s / 2) Laplacian g - grad f . grad g.

This module provides

* :func:`euler_maruyama`: the Euler-Maruyama scheme
  ``theta_{k+1} = theta_k - h grad f(theta_k) + sqrt(s h) xi_k``, ``xi_k ~ N(0, I)``, run for
  many independent chains at once (``theta`` has shape ``(chains, D)``), with a history of the
  loss (and optionally of block norms and states) every ``record_every`` steps; optionally
  preconditioned by a constant SPD matrix P (chapter 12):
  ``theta_{k+1} = theta_k - h P grad f(theta_k) + sqrt(s h) P^{1/2} xi_k``, the scheme of
  ``d theta = -P grad f dt + sqrt(s) P^{1/2} dB``, whose stationary law is the same mu_s;
* Gibbs-measure helpers on a grid in one or two dimensions: the normalised density
  (:func:`gibbs_density`), bin probabilities (:func:`gibbs_bin_probabilities`), expectations
  (:func:`gibbs_expectation`), exact samples (:func:`gibbs_sample`), the total variation distance of a histogram of chain states
  (:func:`histogram_tv`), moment checks of chain states against the grid Gibbs expectations
  with autocorrelation-corrected error bars (:func:`gibbs_z_scores`) and the spectral gap of
  the generator (:func:`spectral_gap`);
* :func:`mala`: the Metropolis-adjusted Langevin algorithm, the same proposal followed by an
  accept/reject step that makes ``mu_s`` exactly stationary (no ``O(h)`` bias), optionally
  preconditioned by a constant SPD matrix and with the step size adapted during a warm-up to a
  target acceptance rate (dual averaging, as in Stan);
* summaries over chains: :func:`chain_mean` (mean and standard error), :func:`tail_mean`
  (the long-time average estimating the Gibbs mean), :func:`hitting_times` and
  :func:`autocorrelation_time` (the integrated autocorrelation time of an observable, with an
  :class:`AutocorrelationWarning` when the chains are shorter than
  :data:`AUTOCORRELATION_TOLERANCE` times it, as emcee warns);
* multi-chain convergence diagnostics as in Stan and ArviZ (Vehtari et al. 2021):
  :func:`split_rhat` (split R-hat, classic or rank-normalised) and
  :func:`effective_sample_size` (multi-chain ESS with Geyer's initial monotone sequence).

Which observables to monitor: the raw weights cannot mix, because the data loss is invariant
under a continuous, non-compact group (``(W_Q, W_K) -> (W_Q G, W_K G^{-T})`` for every
invertible G leaves ``W_Q W_K^T`` unchanged), so the chains diffuse along its orbits, held only
by the regularizer (without one the Gibbs measure is not even normalisable), and R-hat or the
ESS of a raw weight does not settle. Monitor quantities invariant under the group, which do not
see where a chain is on its orbit: the product ``W_Q W_K^T``
(:meth:`attnlib.qk_attention.AttentionProblem.query_key_product`), Part I's effective map
``A Sigma B^T`` (:func:`attnlib.population.effective_map`), or the loss.

Every loss is given in the batched form shared by Part II's models:
``loss_and_grad(theta: (chains, D)) -> (loss: (chains,), grad: (chains, D))``.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla
import scipy.special
import scipy.stats

from ._constants import documented
from ._progress import progress as _progress
from .runs import SavedRun
from ._validation import (MAX_SIZE, DivergenceError, as_matrix, check_generator, check_in_range,
                          check_int, check_memory, check_positive, check_spd, finite_result)

__all__ = [
    "LossAndGrad",
    "LangevinDivergenceError",
    "LangevinRun",
    "euler_maruyama",
    "MalaRun",
    "mala",
    "autocorrelation_time",
    "AutocorrelationWarning",
    "AUTOCORRELATION_TOLERANCE",
    "split_rhat",
    "effective_sample_size",
    "chain_mean",
    "tail_mean",
    "hitting_times",
    "gibbs_density",
    "gibbs_bin_probabilities",
    "gibbs_expectation",
    "gibbs_sample",
    "histogram_tv",
    "gibbs_z_scores",
    "spectral_gap",
    "MAX_REFINE",
    "MAX_EIGENVALUES",
    "MIN_Z_CHAINS",
]

LossAndGrad = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


class LangevinDivergenceError(DivergenceError):
    """Raised when a chain's state, loss or gradient becomes NaN or infinite (the book's one
    divergence rule, shared with :func:`attnlib.vit.train`)."""


@dataclass(frozen=True, repr=False)
class LangevinRun(SavedRun):
    """History of :func:`euler_maruyama`; ``save(path)`` and ``LangevinRun.load(path)`` keep it
    in a file (:mod:`attnlib.runs`).

    Attributes
    ----------
    times : (R,) array
        Recorded times ``k h`` for ``k = 0, record_every, ..., n_steps``.
    loss : (R, chains) array
        ``f(theta_k)`` of every chain at the recorded times.
    theta : (chains, D) array
        Final states.
    step, temperature : float
        ``h`` and ``s``.
    block_names : tuple of str
        Names of the parameter blocks whose Frobenius norms were recorded (may be empty).
    block_norms : (R, chains, len(block_names)) array or None
        ``||theta_k[block]||_2`` per chain and block, when blocks were given.
    states : (R, chains, D) array or None
        The states themselves, when ``record_states=True``.
    """

    times: np.ndarray
    loss: np.ndarray
    theta: np.ndarray
    step: float
    temperature: float
    block_names: tuple[str, ...] = ()
    block_norms: np.ndarray | None = None
    states: np.ndarray | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "block_names", tuple(self.block_names))   # a loaded JSON list


def _evaluate(loss_and_grad: LossAndGrad, theta: np.ndarray, k: int
              ) -> tuple[np.ndarray, np.ndarray]:
    """Call the batched loss, check shapes and finiteness, name the step on failure."""
    loss, grad = loss_and_grad(theta)
    loss = np.asarray(loss, dtype=np.float64)
    grad = np.asarray(grad, dtype=np.float64)
    chains, dim = theta.shape
    if loss.shape != (chains,):
        raise ValueError(f"loss_and_grad must return a loss of shape ({chains},), "
                         f"got {loss.shape}")
    if grad.shape != (chains, dim):
        raise ValueError(f"loss_and_grad must return a gradient of shape ({chains}, {dim}), "
                         f"got {grad.shape}")
    bad = ~(np.isfinite(loss) & np.all(np.isfinite(grad), axis=1))
    if bad.any():
        raise LangevinDivergenceError(
            f"{int(bad.sum())} of {chains} chains have a non-finite loss or gradient at step {k} "
            f"(time index {k}); the chains blew up: reduce the step h or check that the "
            "potential is confining")
    return loss, grad


#: Largest ``refine`` (cells per bin and axis) of ``gibbs_bin_probabilities`` (the book uses 16).
MAX_REFINE = documented(10 ** 5, """Largest ``refine`` (cells per bin and axis) of
``gibbs_bin_probabilities`` (the book uses 16).""")
#: Largest ``n_eigenvalues`` of ``spectral_gap`` (the book uses 3; a sparse eigensolver for many
#: eigenvalues costs as much as a dense one).
MAX_EIGENVALUES = documented(1000, """Largest ``n_eigenvalues`` of ``spectral_gap`` (the book
uses 3; a sparse eigensolver for many eigenvalues costs as much as a dense one).""")


def _preconditioner(preconditioner: object, shape: tuple[int, int]
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The checked SPD ``preconditioner`` P (D x D for states of ``shape`` (chains, D)) with
    its symmetric square root ``P^{1/2}`` and inverse square root ``P^{-1/2}`` (shared by
    :func:`euler_maruyama` and :func:`mala`)."""
    dim = shape[1]
    matrix = check_spd("preconditioner", preconditioner)
    if matrix.shape != (dim, dim):
        raise ValueError(f"preconditioner must have shape ({dim}, {dim}) (D x D for "
                         f"theta0 of shape {shape}), got {matrix.shape}")
    eigenvalues, vectors = np.linalg.eigh(matrix)
    half = (vectors * np.sqrt(eigenvalues)) @ vectors.T             # symmetric P^{1/2}
    inverse_half = (vectors / np.sqrt(eigenvalues)) @ vectors.T     # symmetric P^{-1/2}
    return matrix, half, inverse_half


def _chain_settings(theta0: object, step: float, temperature: float, n_steps: int,
                    record_every: int, rng: object
                    ) -> tuple[np.ndarray, float, float, int, int, np.random.Generator]:
    """The checked settings shared by :func:`euler_maruyama` and :func:`mala`."""
    n_steps = check_int("n_steps", n_steps, minimum=1, maximum=MAX_SIZE)
    record_every = check_int("record_every", record_every, minimum=1)
    if n_steps % record_every:
        raise ValueError(f"n_steps must be a multiple of record_every, got n_steps = {n_steps} "
                         f"and record_every = {record_every}")
    return (as_matrix("theta0", theta0).copy(), check_positive("step", step),
            check_positive("temperature", temperature), n_steps, record_every,
            check_generator("rng", rng))


@finite_result
def euler_maruyama(loss_and_grad: LossAndGrad, theta0: np.ndarray, *, step: float,
                   temperature: float, n_steps: int, rng: np.random.Generator,
                   record_every: int = 1, blocks: Mapping[str, slice] | None = None,
                   record_states: bool = False, preconditioner: np.ndarray | None = None,
                   progress: bool = False) -> LangevinRun:
    """Integrate (SDE) for all chains with the Euler-Maruyama scheme.

    ``theta_{k+1} = theta_k - h grad f(theta_k) + sqrt(s h) xi_k`` with ``xi_k ~ N(0, I_D)``
    drawn from ``rng`` (one ``(chains, D)`` block per step, so a run is a deterministic
    function of ``rng``'s state). The scheme has weak order 1 (Kloeden and Platen 1992):
    ``|E g(theta_n) - E g(theta_{nh})| = O(h)`` for smooth g at fixed time ``n h``.

    With a constant symmetric positive definite ``preconditioner`` P (D x D) the step is

    ::

        theta_{k+1} = theta_k - h P grad f(theta_k) + sqrt(s h) P^{1/2} xi_k,

    with ``P^{1/2}`` the symmetric square root: the Euler-Maruyama scheme of
    ``d theta = -P grad f dt + sqrt(s) P^{1/2} dB``. Its generator is
    ``L g = (s/2) tr(P Hess g) - (P grad f) . grad g``, and ``L* rho = div(P ((s/2) grad rho +
    rho grad f)) = 0`` for ``rho ~ exp(-2 f / s)``: the stationary law is the same Gibbs measure
    mu_s for every constant SPD P (in continuous time; the scheme's stationary law carries an
    ``O(h)`` bias, as without P). It is plain Langevin in the coordinates
    ``z = P^{-1/2} theta``; P changes the speed, not the target.

    Parameters
    ----------
    loss_and_grad
        Batched ``theta (chains, D) -> (loss (chains,), grad (chains, D))``.
    theta0
        Initial states, shape ``(chains, D)``.
    step, temperature
        ``h > 0`` and ``s > 0``.
    n_steps
        Number of steps (1 to ``MAX_SIZE`` = 10^8 of ``attnlib._validation``; the
        recorded history must fit in memory); must be a multiple of ``record_every``.
    record_every
        Record the loss (and block norms, states) at every ``record_every``-th step.
    blocks
        Optional ``name -> slice`` of the flat parameter vector; the Euclidean (Frobenius)
        norm of each block is recorded per chain.
    record_states
        Also store the states at the recorded times (memory ``R * chains * D`` floats).
    preconditioner
        Optional constant SPD matrix P (D x D); None is ``P = I``.

    Returns
    -------
    LangevinRun
        The recorded times, losses, block norms (and states) and the final states.

    Raises
    ------
    ValueError
        On a bad step, temperature, count or shape.
    LangevinDivergenceError
        When a state, loss or gradient becomes NaN or infinite (the step index is named).
    KeyboardInterrupt
        On Ctrl-C, re-raised with the records so far attached as to a divergence
        (``interrupt.history``: ``times``, ``loss`` and the block norms and states recorded).

    Examples
    --------
    Ornstein-Uhlenbeck chains in ``f = ||theta||^2 / 2`` at ``s = 1``, whose Gibbs law is
    ``N(0, I / 2)`` (the scheme's own stationary variance is ``s / (2 - h) = 0.513`` at
    ``h = 0.05``):

    >>> import numpy as np
    >>> from attnlib import langevin, potentials
    >>> run = langevin.euler_maruyama(potentials.quadratic, np.zeros((2000, 1)), step=0.05,
    ...                               temperature=1.0, n_steps=200, record_every=100,
    ...                               rng=np.random.default_rng(0))
    >>> run.loss.shape, run.times.tolist()
    ((3, 2000), [0.0, 5.0, 10.0])
    >>> print(f"{run.theta.var():.1f}")
    0.5
    """
    theta, h, s, n_steps, record_every, rng = _chain_settings(
        theta0, step, temperature, n_steps, record_every, rng)
    chains, dim = theta.shape
    names = tuple(blocks) if blocks else ()
    slices = [blocks[name] for name in names] if blocks else []
    for name, block in zip(names, slices):
        if not isinstance(block, slice) or theta[:, block].shape[1] == 0:
            raise ValueError(f"blocks[{name!r}] must be a non-empty slice of the {dim} "
                             f"parameters, got {block!r}")
    drift, noise = None, None
    if preconditioner is not None:
        drift, noise, _ = _preconditioner(preconditioner, theta.shape)
    n_records = n_steps // record_every + 1
    check_memory("n_steps", n_steps, 8 * n_records * chains * (1 + len(names)
                                                            + dim * record_states),
                 "the recorded history")
    losses = np.empty((n_records, chains))
    norms = np.empty((n_records, chains, len(names))) if names else None
    states = np.empty((n_records, chains, dim)) if record_states else None
    noise_scale = np.sqrt(s * h)

    filled = [0]                                # records complete so far

    def record(index: int, loss: np.ndarray) -> None:
        losses[index] = loss
        if norms is not None:
            for j, block in enumerate(slices):
                norms[index, :, j] = np.linalg.norm(theta[:, block], axis=1)
        if states is not None:
            states[index] = theta
        filled[0] = index + 1

    loss, grad = _evaluate(loss_and_grad, theta, 0)
    record(0, loss)
    k = 0
    try:
        for k in _progress(range(1, n_steps + 1), total=n_steps, desc="Langevin",
                           enabled=progress):
            xi = rng.standard_normal((chains, dim))
            if drift is None:
                theta -= h * grad
                theta += noise_scale * xi
            else:                               # rows: (P g)^T = g^T P for symmetric P
                theta -= h * grad @ drift
                theta += noise_scale * xi @ noise
            if not np.all(np.isfinite(theta)):
                raise LangevinDivergenceError(
                    f"the state of some chains became non-finite at step {k}; reduce the step "
                    f"h (now {h:g}) or check that the potential is confining")
            loss, grad = _evaluate(loss_and_grad, theta, k)
            if k % record_every == 0:
                record(k // record_every, loss)
    except LangevinDivergenceError as error:
        error.history = _recorded(h * record_every, (k - 1) // record_every + 1, loss=losses,
                                  block_norms=norms, states=states)
        raise
    except KeyboardInterrupt as interrupt:      # Ctrl-C: the records so far, as on divergence
        _attach(interrupt, _recorded(h * record_every, filled[0], loss=losses,
                                     block_norms=norms, states=states))
        raise
    times = h * record_every * np.arange(n_records)
    return LangevinRun(times=times, loss=losses, theta=theta, step=h, temperature=s,
                       block_names=names, block_norms=norms, states=states)


def _attach(interrupt: KeyboardInterrupt, history: dict[str, np.ndarray]) -> None:
    """Attach a sampler's records so far to a Ctrl-C, as to a divergence: ``history`` (the
    first records, :func:`_recorded`) and ``result`` (None: a sampler has no partial result)."""
    interrupt.history = history                                        # type: ignore[attr-defined]
    interrupt.result = None                                            # type: ignore[attr-defined]


def _recorded(spacing: float, count: int, **arrays: np.ndarray | None) -> dict[str, np.ndarray]:
    """The first ``count`` records of a sampler's history (attached to a divergence error)."""
    return {"times": spacing * np.arange(count),
            **{key: value[:count].copy() for key, value in arrays.items() if value is not None}}


@dataclass(frozen=True, repr=False)
class MalaRun(SavedRun):
    """History of :func:`mala`: recorded ``times`` (R,), ``loss`` (R, chains), final ``theta``
    (chains, D), ``states`` (R, chains, D) when recorded, ``acceptance``, the fraction of
    accepted proposals over all chains and the ``n_steps`` recorded steps (the warm-up
    excluded), and ``step``, the step size h of those steps (the adapted one after a warm-up;
    None only for a run built by hand)."""

    times: np.ndarray
    loss: np.ndarray
    theta: np.ndarray
    acceptance: float
    states: np.ndarray | None = None
    step: float | None = None


#: Dual averaging constants of :func:`mala`'s step-size adaptation (Hoffman and Gelman 2014,
#: section 3.2; Stan's defaults): ``gamma``, ``t_0`` and ``kappa``.
_DUAL_AVERAGING = (0.05, 10.0, 0.75)
#: The adapted step stays within this factor of the initial one (either way).
_ADAPT_RANGE = 1e6


@finite_result
def mala(loss_and_grad: LossAndGrad, theta0: np.ndarray, *, step: float, temperature: float,
         n_steps: int, rng: np.random.Generator, record_every: int = 1,
         record_states: bool = False, preconditioner: np.ndarray | None = None,
         adapt_steps: int = 0, target_acceptance: float = 0.574) -> MalaRun:
    """Metropolis-adjusted Langevin algorithm with target ``mu_s ~ exp(-2 f / s)``.

    Proposal (one Euler-Maruyama step): ``y = x - h grad f(x) + sqrt(s h) xi``, so
    ``q(y | x) ~ exp(-||y - x + h grad f(x)||^2 / (2 s h))``. Accept with probability
    ``min(1, exp(-2 f(y)/s) q(x | y) / (exp(-2 f(x)/s) q(y | x)))``, else stay at ``x``.
    The chain is reversible for ``mu_s``, which is therefore exactly stationary for every
    ``h``; the price is the rejected steps. Each step draws the ``(chains, D)`` normals, then
    ``chains`` uniforms, from ``rng``.

    With a constant symmetric positive definite ``preconditioner`` P (D x D; its symmetric
    square root ``P^{1/2}``), the proposal is the preconditioned Euler-Maruyama step of
    :func:`euler_maruyama` and its density is Gaussian in P's metric:

    ::

        y = x - h P grad f(x) + sqrt(s h) P^{1/2} xi,
        q(y | x) ~ exp(-(y - x + h P g(x))^T P^{-1} (y - x + h P g(x)) / (2 s h)),

    with ``g = grad f``; the accept/reject step is the same, so ``mu_s`` stays exactly
    stationary. P should resemble the covariance of ``mu_s``, so that the proposal's steps
    are long along the wide directions. ``preconditioner=None`` (``P = I``) runs the
    arithmetic of the unpreconditioned sampler unchanged.

    With ``adapt_steps > 0``, ``adapt_steps`` warm-up steps, not recorded, come first: from
    the state ``theta0`` the step size is adapted by dual averaging (Hoffman and Gelman 2014,
    section 3.2, with Stan's constants ``gamma = 0.05``, ``t_0 = 10``, ``kappa = 0.75``) so
    that the mean acceptance probability over the chains, ``a_m = mean min(1, ratio)`` at warm-up
    step m, approaches ``delta = target_acceptance``:

    ::

        H_m = (1 - 1/(m + t_0)) H_{m-1} + (delta - a_m) / (m + t_0),     H_0 = 0,
        log h_m = log(10 h_0) - sqrt(m) H_m / gamma,
        log hbar_m = m^{-kappa} log h_m + (1 - m^{-kappa}) log hbar_{m-1},

    with ``h_0 = step`` (``h_m`` kept within a factor 10^6 of it). The ``n_steps`` recorded
    steps then use the frozen ``h = hbar`` of the last warm-up step (``MalaRun.step``), so
    they form a Markov chain with the exact stationary law ``mu_s``; the record at time 0 is
    the state after the warm-up. For MALA the acceptance rate that optimises the efficiency
    in high dimension is 0.574 (Roberts and Rosenthal 1998). ``adapt_steps=0`` (the default)
    runs no warm-up: the rng draws and the numbers are those of a run without adaptation.

    Parameters
    ----------
    loss_and_grad, theta0, step, temperature, n_steps, rng, record_every, record_states
        As in :func:`euler_maruyama`; ``step`` is the initial step size when adapting.
    preconditioner
        Optional constant SPD matrix P (D x D); None is ``P = I``.
    adapt_steps
        Number of warm-up steps that adapt the step size (0 to ``MAX_SIZE`` = 10^8; 0: no
        warm-up).
    target_acceptance
        The acceptance rate the adaptation aims at, in (0, 1).

    Returns
    -------
    MalaRun
        The recorded history, final states, acceptance rate and step size.

    Raises
    ------
    ValueError
        On a bad step, temperature, count, shape, preconditioner or target acceptance.
    LangevinDivergenceError
        When a state, loss or gradient becomes NaN or infinite (the step index, or the
        warm-up step, is named).
    KeyboardInterrupt
        On Ctrl-C, re-raised with the records so far attached as to a divergence
        (``interrupt.history``: ``times``, ``loss`` and the states recorded; none during the
        warm-up).

    Examples
    --------
    Chains in ``f = ||theta||^2 / 2`` (Gibbs law ``N(0, I / 2)`` at ``s = 1``), the step size
    adapted from 0.01 during 300 warm-up steps to the target acceptance 0.574:

    >>> import numpy as np
    >>> from attnlib import langevin, potentials
    >>> run = langevin.mala(potentials.quadratic, np.zeros((1000, 2)), step=0.01,
    ...                     temperature=1.0, n_steps=200, adapt_steps=300,
    ...                     rng=np.random.default_rng(0))
    >>> print(f"acceptance {run.acceptance:.1f}, variance {run.theta.var():.1f}")
    acceptance 0.6, variance 0.5
    """
    theta, h, s, n_steps, record_every, rng = _chain_settings(
        theta0, step, temperature, n_steps, record_every, rng)
    adapt_steps = check_int("adapt_steps", adapt_steps, minimum=0, maximum=MAX_SIZE)
    target = check_in_range("target_acceptance", target_acceptance, 0.0, 1.0,
                            closed=(False, False))
    chains, dim = theta.shape
    metric = (None if preconditioner is None
              else _preconditioner(preconditioner, theta.shape))
    n_records = n_steps // record_every + 1
    check_memory("n_steps", n_steps, 8 * n_records * chains * (1 + dim * record_states),
                 "the recorded history")
    losses = np.empty((n_records, chains))
    states = np.empty((n_records, chains, dim)) if record_states else None
    loss, grad = _evaluate(loss_and_grad, theta, 0)

    def transition(h: float, k: int) -> tuple[np.ndarray, np.ndarray]:
        """One MALA step of every chain (``theta``, ``loss``, ``grad`` updated in place):
        the accepted mask and the log acceptance ratios."""
        if metric is None:
            proposal = theta - h * grad + np.sqrt(s * h) * rng.standard_normal((chains, dim))
        else:                       # rows: (P g)^T = g^T P and (P^{1/2} xi)^T for symmetric P
            drift, half, inverse_half = metric
            proposal = theta - h * grad @ drift \
                + np.sqrt(s * h) * rng.standard_normal((chains, dim)) @ half
        new_loss, new_grad = _evaluate(loss_and_grad, proposal, k)
        if metric is None:
            forward = np.sum((proposal - theta + h * grad) ** 2, axis=1)
            backward = np.sum((theta - proposal + h * new_grad) ** 2, axis=1)
        else:                       # ||r||^2_{P^{-1}} = ||P^{-1/2} r||^2
            forward = np.sum(((proposal - theta + h * grad @ drift) @ inverse_half) ** 2,
                             axis=1)
            backward = np.sum(((theta - proposal + h * new_grad @ drift) @ inverse_half) ** 2,
                              axis=1)
        log_ratio = -2.0 * (new_loss - loss) / s - (backward - forward) / (2.0 * s * h)
        accept = np.log(rng.uniform(size=chains)) < log_ratio
        theta[accept], loss[accept], grad[accept] = (proposal[accept], new_loss[accept],
                                                     new_grad[accept])
        return accept, log_ratio

    filled = 0
    try:
        if adapt_steps:
            gamma, t0, kappa = _DUAL_AVERAGING
            mu, log_h0 = math.log(10.0 * h), math.log(h)
            lowest, highest = log_h0 - math.log(_ADAPT_RANGE), log_h0 + math.log(_ADAPT_RANGE)
            statistic, log_h, log_h_bar = 0.0, log_h0, log_h0
            for m in range(1, adapt_steps + 1):
                try:
                    _, log_ratio = transition(math.exp(log_h), m)
                except LangevinDivergenceError as error:
                    raise LangevinDivergenceError(
                        f"during the warm-up (step size adaptation, h = {math.exp(log_h):.3g}, "
                        f"warm-up step {m} of {adapt_steps}): {error}",
                        history=_recorded(h * record_every, 0, loss=losses, states=states)
                    ) from error
                rate = float(np.mean(np.exp(np.minimum(log_ratio, 0.0))))
                weight = 1.0 / (m + t0)
                statistic = (1.0 - weight) * statistic + weight * (target - rate)
                log_h = min(max(mu - math.sqrt(m) / gamma * statistic, lowest), highest)
                average = m ** -kappa
                log_h_bar = average * log_h + (1.0 - average) * log_h_bar
            h = math.exp(log_h_bar)
        losses[0] = loss
        if states is not None:
            states[0] = theta
        filled = 1                                  # records complete so far
        accepted = 0
        for k in range(1, n_steps + 1):
            try:
                accept, _ = transition(h, k)
            except LangevinDivergenceError as error:
                error.history = _recorded(h * record_every, (k - 1) // record_every + 1,
                                          loss=losses, states=states)
                raise
            accepted += int(accept.sum())
            if k % record_every == 0:
                losses[k // record_every] = loss
                if states is not None:
                    states[k // record_every] = theta
                filled = k // record_every + 1
    except KeyboardInterrupt as interrupt:      # Ctrl-C: the records so far, as on divergence
        _attach(interrupt, _recorded(h * record_every, filled, loss=losses, states=states))
        raise
    return MalaRun(times=h * record_every * np.arange(n_records), loss=losses, theta=theta,
                   acceptance=accepted / (n_steps * chains), states=states, step=h)


class AutocorrelationWarning(UserWarning):
    """Issued by :func:`autocorrelation_time` when the series is shorter than
    :data:`AUTOCORRELATION_TOLERANCE` times the estimated autocorrelation time: the estimate
    (and every error bar built on it) is then unreliable, as emcee warns."""


#: ``autocorrelation_time`` warns (``AutocorrelationWarning``) when the number of records R per
#: chain is below this many times the estimated time, ``R < 50 tau`` (emcee's default ``tol``;
#: Sokal's windowed estimator is trustworthy only for series much longer than ``tau``).
AUTOCORRELATION_TOLERANCE = documented(50, """``autocorrelation_time`` warns
(``AutocorrelationWarning``) when the number of records R per chain is below this many times
the estimated time, ``R < 50 tau`` (emcee's default ``tol``; Sokal's windowed estimator is
trustworthy only for series much longer than ``tau``).""")


@finite_result
def autocorrelation_time(series: np.ndarray, *, window_factor: float = 5.0) -> float:
    """Integrated autocorrelation time ``tau = 1 + 2 sum_{k>=1} rho(k)`` in units of records.

    ``series`` has shape ``(R, chains)``: one stationary scalar observable per chain, every
    chain sampling the same law. The autocovariance ``c(k)`` is pooled over chains about the
    grand mean ``x_bar`` (FFT per chain, then averaged):
    ``c(k) = mean_chains 1/(R - k) sum_{t<R-k} (x_t - x_bar)(x_{t+k} - x_bar)``, and
    ``rho(k) = c(k) / c(0)``. Removing each short chain's own mean instead would absorb the
    slow part of every chain and bias ``tau`` low (by about 20% for ``tau = 20`` at 640
    records). The sum is cut at the first window ``M`` with ``M >= window_factor * tau(M)``
    (Sokal's automatic windowing). The variance of a time average over ``R`` records is about
    ``tau Var / R``; multiply by the record spacing to get a time.

    When ``R < AUTOCORRELATION_TOLERANCE * tau`` (:data:`AUTOCORRELATION_TOLERANCE` = 50, as in
    emcee) the estimate is unreliable and an :class:`AutocorrelationWarning` is issued, naming
    R, tau and the length needed; the value is still returned.

    Examples
    --------
    AR(1) chains ``x_{t+1} = rho x_t + e_t`` have ``tau = (1 + rho) / (1 - rho)``, 3 for
    ``rho = 0.5``:

    >>> import numpy as np
    >>> from scipy.signal import lfilter
    >>> from attnlib import langevin
    >>> x = lfilter([1.0], [1.0, -0.5], np.random.default_rng(0).standard_normal((4000, 4)),
    ...             axis=0)
    >>> print(f"{langevin.autocorrelation_time(x):.0f}")
    3
    """
    x = as_matrix("series", series)
    steps, chains = x.shape
    if steps < 8:
        raise ValueError(f"series needs at least 8 records, got {steps}")
    window_factor = check_positive("window_factor", window_factor)
    x = x - x.mean()
    size = 1 << (2 * steps - 1).bit_length()
    spectrum = np.fft.rfft(x, n=size, axis=0)
    lagged_sums = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=0)[:steps]
    acov = lagged_sums.mean(axis=1) / (steps - np.arange(steps))
    if acov[0] <= 0:
        raise ValueError("series is constant: its autocorrelation time is undefined")
    taus = 2.0 * np.cumsum(acov / acov[0]) - 1.0
    window = np.arange(steps) >= window_factor * taus
    cut = int(np.argmax(window)) if window.any() else steps - 1
    if taus[cut] <= 0:
        raise ValueError(f"series has a non-positive autocorrelation time ({taus[cut]:.3g}) "
                         f"with window_factor = {window_factor:.3g}: its chains do not look "
                         "stationary, or are too short")
    tau = float(taus[cut])
    needed = AUTOCORRELATION_TOLERANCE * tau
    if steps < needed:
        warnings.warn(f"autocorrelation_time: the series has R = {steps} records per chain, "
                      f"fewer than {AUTOCORRELATION_TOLERANCE} tau = {needed:.0f} for the "
                      f"estimated tau = {tau:.3g} records; the estimate is unreliable: run "
                      f"chains of at least {math.ceil(needed)} records",
                      AutocorrelationWarning, stacklevel=3)
    return tau


def _split_chains(series: object) -> np.ndarray:
    """``series (R, chains)`` checked, each chain cut into its first and last ``R // 2``
    records (the middle one dropped when R is odd): shape ``(R // 2, 2 chains)``."""
    x = as_matrix("series", series)
    steps = x.shape[0]
    if steps < 8:
        raise ValueError(f"series needs at least 8 records (two halves of 4 per chain), "
                         f"got {steps}")
    half = steps // 2
    return np.concatenate([x[:half], x[steps - half:]], axis=1)


def _z_scale(x: np.ndarray) -> np.ndarray:
    """Rank normalisation (Vehtari et al. 2021): ``Phi^{-1}((r - 3/8) / (S + 1/4))`` with r
    the rank (average rank for ties) of each entry among all S entries."""
    ranks = scipy.stats.rankdata(x.ravel(), method="average").reshape(x.shape)
    return scipy.special.ndtri((ranks - 0.375) / (x.size + 0.25))


def _rhat(x: np.ndarray) -> float:
    """The classic R-hat of the sequences in the columns of ``x (n, m)``."""
    n = x.shape[0]
    within = float(x.var(axis=0, ddof=1).mean())
    if within <= 0:
        raise ValueError("series has no variation within its chains (every half-chain is "
                         "constant): R-hat is undefined; are the chains stuck?")
    between = n * float(x.mean(axis=0).var(ddof=1))
    return math.sqrt(((n - 1) / n * within + between / n) / within)


@finite_result
def split_rhat(series: np.ndarray, *, rank_normalized: bool = False) -> float:
    """Split R-hat, the potential scale reduction factor of several chains.

    ``series`` has shape ``(R, chains)``: one scalar observable per record and chain (the
    layout of :func:`autocorrelation_time`). Each chain is split into its first and second
    halves of ``n = R // 2`` records (the middle record dropped when R is odd), which gives
    ``m = 2 chains`` sequences ``x_{tj}``; with their means ``x_bar_j``, the grand mean
    ``x_bar`` and the variances ``s_j^2 = sum_t (x_{tj} - x_bar_j)^2 / (n - 1)`` (Gelman et
    al., BDA3, section 11.4)::

        W = mean_j s_j^2,                 B = n / (m - 1) sum_j (x_bar_j - x_bar)^2,
        var_plus = (n - 1) / n W + B / n,     R_hat = sqrt(var_plus / W).

    ``R_hat -> 1`` when every chain samples the target; chains stuck in different places
    (between-chain spread B) or still drifting (the halves differ) give ``R_hat > 1``.
    Vehtari et al. (2021) recommend ``R_hat < 1.01``.

    With ``rank_normalized=True`` this is their rank-normalised split R-hat (the default of
    ArviZ and Stan): the split draws are replaced by the normal scores
    ``z = Phi^{-1}((r - 3/8) / (S + 1/4))`` of their ranks r among all ``S = m n`` of them
    (bulk), and again for the folded draws ``|x - median x|`` (tails); the result is the
    larger of the two R-hats. It is invariant under monotone maps and defined for heavy tails.

    Parameters
    ----------
    series : (R, chains) array
        At least 8 records; one chain is allowed (its two halves are compared).
    rank_normalized : bool
        Rank-normalised and folded (True) or classic (False) split R-hat.

    Returns
    -------
    float
        ``R_hat >= 0`` (close to 1 at convergence).

    Raises
    ------
    ValueError
        For a bad shape, fewer than 8 records, non-finite entries, or chains without any
        variation (R-hat undefined).

    Examples
    --------
    >>> import numpy as np
    >>> from attnlib import langevin
    >>> draws = np.random.default_rng(0).standard_normal((1000, 4))
    >>> print(f"{langevin.split_rhat(draws):.2f}")
    1.00
    >>> print(f"{langevin.split_rhat(draws + np.arange(4)):.1f}")    # means 0, 1, 2, 3
    1.6
    """
    x = _split_chains(series)
    if not isinstance(rank_normalized, (bool, np.bool_)):
        raise TypeError(f"rank_normalized must be True or False, got {rank_normalized!r}")
    if not rank_normalized:
        return _rhat(x)
    if float(x.var(axis=0, ddof=1).mean()) <= 0:
        return _rhat(x)                                  # raises the named error
    bulk = _rhat(_z_scale(x))
    tail = _rhat(_z_scale(np.abs(x - np.median(x))))
    return max(bulk, tail)


@finite_result
def effective_sample_size(series: np.ndarray, *, rank_normalized: bool = False) -> float:
    """Multi-chain effective sample size of the mean of an observable (Stan, ArviZ).

    ``series`` has shape ``(R, chains)`` as for :func:`split_rhat`, whose split sequences
    (``m = 2 chains`` of ``n = R // 2`` records) it uses. With the autocovariances
    ``c_j(t) = 1/n sum_{i<n-t} (x_{ij} - x_bar_j)(x_{i+t,j} - x_bar_j)`` of each sequence
    (FFT), ``W`` and ``var_plus`` of :func:`split_rhat`, the autocorrelation at lag t pooled
    over the chains is (Vehtari et al. 2021, eq. 10; BDA3 eq. 11.7)

    ::

        rho_t = 1 - (W - mean_j c_j(t)) / var_plus,        rho_0 = 1,

    which counts a difference between the chains' means as correlation. The sum is truncated
    by Geyer's (1992) initial monotone sequence: the pairs ``P_k = rho_{2k} + rho_{2k+1}``
    are summed up to the last k before the first negative pair, each replaced by
    ``min(P_k, P_{k-1})``, and

    ::

        tau = -1 + 2 sum_{k=0}^{K} P_k  (+ rho_{2K+2} if positive),
        ESS = m n / max(tau, 1 / log10(m n)),

    exactly as ArviZ's ``ess(method="mean")`` (Stan's ``ess``). For a stationary AR(1)
    chain ``x_{t+1} = rho x_t + sqrt(1 - rho^2) e_t``, ``tau -> (1 + rho) / (1 - rho)`` and
    ``ESS / (R chains) -> (1 - rho) / (1 + rho)``; independent draws give ``ESS ~ R chains``.
    ``tau`` here and in :func:`autocorrelation_time` (Sokal's window, one mean for all
    chains) estimate the same time for stationary chains. The Monte Carlo standard error of
    the mean is ``sqrt(var_plus / ESS)``.

    With ``rank_normalized=True`` the split draws are first replaced by their rank normal
    scores (see :func:`split_rhat`): the bulk ESS of Vehtari et al. (2021), ArviZ's default.

    Parameters
    ----------
    series : (R, chains) array
        At least 8 records per chain; one chain is allowed.
    rank_normalized : bool
        Bulk ESS of the rank-normalised draws (True) or ESS of the draws themselves (False).

    Returns
    -------
    float
        The effective number of independent draws (may exceed ``R chains`` for antithetic
        chains).

    Raises
    ------
    ValueError
        For a bad shape, fewer than 8 records, non-finite entries or chains without any
        variation.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.signal import lfilter
    >>> from attnlib import langevin
    >>> draws = np.random.default_rng(0).standard_normal((4000, 4))     # independent
    >>> print(f"{langevin.effective_sample_size(draws) / draws.size:.1f}")
    1.0
    >>> noise = np.random.default_rng(1).standard_normal((4000, 4))
    >>> ar1 = lfilter([1.0], [1.0, -0.5], noise, axis=0)                  # rho = 0.5
    >>> print(f"{langevin.effective_sample_size(ar1) / ar1.size:.1f}")     # (1 - 0.5) / 1.5
    0.3
    """
    x = _split_chains(series)
    if not isinstance(rank_normalized, (bool, np.bool_)):
        raise TypeError(f"rank_normalized must be True or False, got {rank_normalized!r}")
    n, m = x.shape
    if float(x.var(axis=0, ddof=1).mean()) <= 0:
        raise ValueError("series has no variation within its chains (every half-chain is "
                         "constant): the effective sample size is undefined")
    if rank_normalized:
        x = _z_scale(x)
    centred = x - x.mean(axis=0)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=0)
    acov = np.fft.irfft(spectrum * np.conj(spectrum), n=size, axis=0)[:n] / n     # c_j(t)
    within = float(acov[0].mean()) * n / (n - 1)
    var_plus = within * (n - 1) / n + (float(x.mean(axis=0).var(ddof=1)) if m > 1 else 0.0)
    rho = 1.0 - (within - acov.mean(axis=1)) / var_plus
    kept = np.zeros(n)
    even, odd = 1.0, float(rho[1])
    kept[0], kept[1] = even, odd
    t = 1                                           # Geyer's initial positive sequence
    while t < n - 3 and even + odd > 0.0:
        even, odd = float(rho[t + 1]), float(rho[t + 2])
        if even + odd >= 0.0:
            kept[t + 1], kept[t + 2] = even, odd
        t += 2
    last = t - 2
    if even > 0.0:
        kept[last + 1] = even
    t = 1                                           # Geyer's initial monotone sequence
    while t <= last - 2:
        if kept[t + 1] + kept[t + 2] > kept[t - 1] + kept[t]:
            kept[t + 1] = kept[t + 2] = (kept[t - 1] + kept[t]) / 2.0
        t += 2
    total = m * n
    tau = -1.0 + 2.0 * float(kept[:last + 1].sum()) + float(kept[last + 1:last + 2].sum())
    return total / max(tau, 1.0 / math.log10(total))


@finite_result
def chain_mean(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean over chains (last axis) and its standard error ``std / sqrt(chains)``.

    ``values`` has shape ``(..., chains)`` with at least two chains.
    """
    array = as_matrix("values", values, ndim=tuple(range(1, 33)))
    if array.shape[-1] < 2:
        raise ValueError(f"values must have at least two chains on the last axis, "
                         f"got shape {array.shape}")
    chains = array.shape[-1]
    return array.mean(axis=-1), array.std(axis=-1, ddof=1) / np.sqrt(chains)


@finite_result
def tail_mean(loss: np.ndarray, *, fraction: float = 0.5) -> tuple[float, float]:
    """Long-time average of the loss over the last ``fraction`` of the records and all chains.

    ``loss`` has shape ``(R, chains)``. Each chain's time average over the tail is one number;
    the chains are independent, so the returned standard error is the standard deviation of
    those per-chain averages over ``sqrt(chains)``. With a long enough tail this estimates the
    stationary mean of the Euler-Maruyama chain (the Gibbs mean up to an ``O(h)`` bias).
    """
    array = as_matrix("loss", loss)
    fraction = check_in_range("fraction", fraction, 0.0, 1.0, closed=(False, True))
    start = min(int(np.floor((1 - fraction) * array.shape[0])), array.shape[0] - 1)
    per_chain = array[start:].mean(axis=0)
    mean, err = chain_mean(per_chain)
    return float(mean), float(err)


def hitting_times(times: np.ndarray, gap: np.ndarray, epsilons: Sequence[float]
                  ) -> np.ndarray:
    """For each ``eps``, the first recorded time after which ``|gap| <= eps`` holds to the end.

    Requiring the gap to *stay* below ``eps`` makes the answer robust to a noisy estimate of
    the mean that dips below ``eps`` once by chance.

    Parameters
    ----------
    times : ndarray
        Recorded times, increasing.
    gap : ndarray
        The gap at those times (same shape).
    epsilons : sequence of float
        The thresholds.

    Returns
    -------
    ndarray
        One time per ``eps``; NaN for an ``eps`` never reached.

    Raises
    ------
    ValueError
        For mismatched shapes, non-finite inputs or times that do not increase.
    """
    t = as_matrix("times", times, ndim=1)
    if np.any(np.diff(t) <= 0):
        raise ValueError(f"times must be strictly increasing, got a step of {np.diff(t).min()!r}")
    g = np.abs(as_matrix("gap", gap, shape=t.shape, ndim=1))
    # largest suffix maximum: running max of |gap| from the end
    suffix_max = np.maximum.accumulate(g[::-1])[::-1]
    out = np.full(len(epsilons), np.nan)
    for i, eps in enumerate(epsilons):
        check_positive("epsilons", eps)
        below = np.nonzero(suffix_max <= eps)[0]
        if below.size:
            out[i] = t[below[0]]
    return out


def _grid(axes: Sequence[np.ndarray]) -> tuple[list[np.ndarray], np.ndarray]:
    """Check 1 or 2 uniform, increasing axes; return them and the (M, D) grid points."""
    if len(axes) not in (1, 2):
        raise ValueError(f"axes must hold one or two 1-D grids, got {len(axes)}")
    checked = []
    for i, axis in enumerate(axes):
        a = as_matrix(f"axes[{i}]", axis, ndim=1)
        if a.size < 3:
            raise ValueError(f"axes[{i}] must have at least 3 points, got {a.size}")
        d = np.diff(a)
        if np.any(d <= 0) or not np.allclose(d, d[0], rtol=1e-8):
            raise ValueError(f"axes[{i}] must be uniform and increasing")
        checked.append(a)
    mesh = np.meshgrid(*checked, indexing="ij")
    points = np.stack([m.ravel() for m in mesh], axis=1)
    return checked, points


def _grid_loss(loss_and_grad: LossAndGrad, points: np.ndarray) -> np.ndarray:
    """The loss at every grid point, checked: one finite real number per point."""
    loss = np.asarray(loss_and_grad(points)[0])
    if loss.dtype.kind not in "biuf" or loss.shape != (points.shape[0],) \
            or not np.all(np.isfinite(loss)):
        raise ValueError("loss_and_grad must return a finite real loss for every grid point "
                         f"(shape ({points.shape[0]},)), got dtype {loss.dtype}, shape "
                         f"{loss.shape}")
    return loss.astype(np.float64)


def _log_weights(loss_and_grad: LossAndGrad, points: np.ndarray, s: float) -> np.ndarray:
    return -2.0 * _grid_loss(loss_and_grad, points) / s


def gibbs_density(loss_and_grad: LossAndGrad, axes: Sequence[np.ndarray], temperature: float
                  ) -> np.ndarray:
    """The Gibbs density ``exp(-2 f / s) / Z`` on a uniform grid in one or two dimensions.

    ``Z`` is the Riemann sum of ``exp(-2 f / s)`` over the grid times the cell volume, so the
    result integrates to 1 over the box spanned by the axes (which should contain essentially
    all the mass). Returns an array of shape ``(len(axes[0]),)`` or ``(len(axes[0]),
    len(axes[1]))``.
    """
    s = check_positive("temperature", temperature)
    checked, points = _grid(axes)
    logw = _log_weights(loss_and_grad, points, s)
    weights = np.exp(logw - logw.max())
    volume = np.prod([a[1] - a[0] for a in checked])
    density = weights / (weights.sum() * volume)
    return density.reshape([a.size for a in checked])


@finite_result
def gibbs_bin_probabilities(loss_and_grad: LossAndGrad, edges: Sequence[np.ndarray],
                            temperature: float, *, refine: int = 16) -> np.ndarray:
    """Gibbs probabilities of the histogram bins given by ``edges`` (one or two axes).

    Each bin is split into ``refine`` cells per axis and ``exp(-2 f / s)`` is summed at the
    cell midpoints (midpoint rule); the result is normalised over the box, so it sums to 1.
    ``refine`` is at most :data:`MAX_REFINE`, and the refined grid must fit in memory.
    """
    s = check_positive("temperature", temperature)
    refine = check_int("refine", refine, minimum=1, maximum=MAX_REFINE)
    fine_axes = []
    for i, e in enumerate(edges):
        e = as_matrix(f"edges[{i}]", e, ndim=1)
        if e.size < 2 or np.any(np.diff(e) <= 0):
            raise ValueError(f"edges[{i}] must be increasing with at least 2 entries")
        width = np.diff(e)
        if not np.allclose(width, width[0], rtol=1e-8):
            raise ValueError(f"edges[{i}] must be uniformly spaced")
        fine_axes.append((e[0], width[0], (e.size - 1) * refine))
    if len(fine_axes) not in (1, 2):
        raise ValueError(f"edges must hold one or two axes, got {len(fine_axes)}")
    n_points = math.prod(count for _, _, count in fine_axes)
    check_memory("refine", refine, 8 * 8 * n_points, f"the {n_points} refined grid points")
    fine_axes = [start + (np.arange(count) + 0.5) * spacing / refine
                 for start, spacing, count in fine_axes]
    mesh = np.meshgrid(*fine_axes, indexing="ij")
    points = np.stack([m.ravel() for m in mesh], axis=1)
    logw = _log_weights(loss_and_grad, points, s)
    weights = np.exp(logw - logw.max()).reshape([a.size for a in fine_axes])
    shape = []
    for a in fine_axes:
        shape += [a.size // refine, refine]
    blocks = weights.reshape(shape).sum(axis=tuple(range(1, len(shape), 2)))
    return blocks / blocks.sum()


def gibbs_expectation(loss_and_grad: LossAndGrad, axes: Sequence[np.ndarray],
                      temperature: float, values: np.ndarray | None = None) -> float:
    """``E_{mu_s}[g]`` by the Riemann sum on the grid; ``g = f`` when ``values`` is None.

    ``values`` (optional) are g at the grid points, shaped like :func:`gibbs_density`'s output.
    """
    s = check_positive("temperature", temperature)
    checked, points = _grid(axes)
    loss = _grid_loss(loss_and_grad, points)
    logw = -2.0 * loss / s
    shape = tuple(a.size for a in checked)
    g = loss if values is None else as_matrix("values", values, shape=shape,
                                              ndim=len(shape)).ravel()
    weights = np.exp(logw - logw.max())
    return float(np.sum(weights * g) / weights.sum())


def gibbs_sample(loss_and_grad: LossAndGrad, axes: Sequence[np.ndarray], temperature: float,
                 *, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` independent draws from the grid approximation of ``mu_s``, shape ``(size, D)``.

    A grid point is drawn with probability ``exp(-2 f / s) / sum`` (the weights of
    :func:`gibbs_density`), then moved uniformly within its grid cell (half a spacing each
    way), so the draws have a density that is piecewise constant on the cells. A starting
    point for chains that is already (up to the grid) at equilibrium. ``size`` is at most
    ``MAX_SIZE`` = 10^8 (``attnlib._validation``), and the draws must fit in memory.
    """
    s = check_positive("temperature", temperature)
    size = check_int("size", size, minimum=1, maximum=MAX_SIZE)
    rng = check_generator("rng", rng)
    checked, points = _grid(axes)
    check_memory("size", size, 4 * 8 * size * (points.shape[1] + 1), "the draws")
    logw = _log_weights(loss_and_grad, points, s)
    weights = np.exp(logw - logw.max())
    picked = points[rng.choice(points.shape[0], size=size, p=weights / weights.sum())]
    spacing = np.array([a[1] - a[0] for a in checked])
    return picked + (rng.uniform(size=picked.shape) - 0.5) * spacing


def histogram_tv(samples: np.ndarray, edges: Sequence[np.ndarray],
                 probabilities: np.ndarray) -> float:
    """Total variation distance between the histogram of ``samples`` and bin probabilities.

    ``samples`` has shape ``(chains, D)`` with D = ``len(edges)`` (1 or 2); ``probabilities``
    (e.g. from :func:`gibbs_bin_probabilities`) has one entry per bin and sums to 1. Samples
    outside the box count as mass the target does not have::

        TV = 1/2 sum_bins |p_hist - p| + 1/2 (fraction of samples outside the box).
    """
    x = as_matrix("samples", samples, shape=(None, len(edges)))
    edge_list = [as_matrix(f"edges[{i}]", e, ndim=1) for i, e in enumerate(edges)]
    for i, e in enumerate(edge_list):
        if e.size < 2 or np.any(np.diff(e) <= 0):
            raise ValueError(f"edges[{i}] must be increasing with at least 2 entries")
    expected = tuple(e.size - 1 for e in edge_list)
    p = as_matrix("probabilities", probabilities, shape=expected, ndim=len(expected))
    if np.any(p < 0) or not np.isclose(p.sum(), 1.0, rtol=1e-6):
        raise ValueError(f"probabilities must be >= 0 and sum to 1, got sum {p.sum():.6g}")
    counts, _ = np.histogramdd(x, bins=edge_list)
    inside = counts.sum()
    outside = (x.shape[0] - inside) / x.shape[0]
    return float(0.5 * np.abs(counts / x.shape[0] - p).sum() + 0.5 * outside)


#: Fewest independent chains :func:`gibbs_z_scores` takes: the standard error of the mean over
#: chains comes from the spread of the chains' means, a poor estimate from fewer.
MIN_Z_CHAINS = documented(20, """Fewest independent chains ``gibbs_z_scores`` takes: the
standard error of the mean over chains comes from the spread of the chains' means, a poor
estimate from fewer.""")


@finite_result
def gibbs_z_scores(states: np.ndarray, observables: Mapping[str, Callable[[np.ndarray],
                                                                          np.ndarray]],
                   loss_and_grad: LossAndGrad, axes: Sequence[np.ndarray], temperature: float
                   ) -> dict[str, float]:
    """Standardised errors of chain averages against the Gibbs expectations on a grid.

    ``states`` has shape ``(R, chains, D)`` (D = ``len(axes)``, 1 or 2): stationary records of
    at least ``MIN_Z_CHAINS`` independent chains. For each observable ``g`` (a function of points
    ``(..., D) -> (...)``) the result is

    ::

        z_g = (mean of g over records and chains - E_{mu_s} g) / se_g,
        se_g = std over chains of (chain c's mean of g over its R records) / sqrt(chains),

    with ``E_{mu_s} g`` from :func:`gibbs_expectation` on the grid. The grand mean is the mean of
    the chains' means, independent and identically distributed, so ``se_g`` is its standard
    error whatever the autocorrelation within a chain: unlike ``std(g) sqrt(tau_g / (R
    chains))`` it needs no estimate of the autocorrelation time, which is unreliable for chains
    shorter than about 50 tau (:func:`autocorrelation_time`). For chains whose stationary law
    is mu_s, each ``|z_g|`` is of order 1; a wrong law (a wrong noise scale, a visible ``O(h)``
    bias) makes some grow like the square root of the sample size.
    """
    s = check_positive("temperature", temperature)
    checked, points = _grid(axes)
    x = as_matrix("states", states, shape=(None, None, len(checked)), ndim=3)
    if x.shape[1] < MIN_Z_CHAINS:
        raise ValueError(f"states must hold at least {MIN_Z_CHAINS} independent chains (axis 1) "
                         f"for the standard error of their means, got {x.shape[1]}")
    if not observables:
        raise ValueError("observables must name at least one function of the state")
    grid = points.reshape(tuple(a.size for a in checked) + (len(checked),))
    scores = {}
    for name, g in observables.items():
        if not callable(g):
            raise TypeError(f"observables[{name!r}] must be a function of the state")
        series = np.asarray(g(x), dtype=np.float64)
        if series.shape != x.shape[:2]:
            raise ValueError(f"observables[{name!r}] must map (R, chains, D) states to "
                             f"(R, chains) values, got shape {series.shape}")
        error = float(series.mean(axis=0).std(ddof=1)) / np.sqrt(series.shape[1])
        if not error > 0:
            raise ValueError(f"states must give a varying series of observables[{name!r}]: "
                             "every chain has the same mean")
        exact = gibbs_expectation(loss_and_grad, checked, s, values=g(grid))
        scores[name] = float((series.mean() - exact) / error)
    return scores


@finite_result
def spectral_gap(loss_and_grad: LossAndGrad, axes: Sequence[np.ndarray], temperature: float,
                 *, n_eigenvalues: int = 2) -> np.ndarray:
    """Smallest eigenvalues of ``-L`` (``L = s/2 Laplacian - grad f . grad``) on a grid box.

    Discretisation (finite volumes, reflecting walls at the box edges): neighbouring grid
    points i, j at spacing Delta exchange at rate ``(s / (2 Delta^2)) exp(-(f_j - f_i) / s)``
    (the "square-root approximation"). This jump process is reversible for the grid Gibbs
    weights ``exp(-2 f_i / s)``, its generator converges to L as Delta -> 0, and its
    symmetrisation is a sparse symmetric matrix. With the Poincare inequality written
    ``Var_mu(g) <= C_P int ||grad g||^2 dmu``, the Dirichlet form of L is
    ``(s/2) int ||grad g||^2 dmu``, so ``C_P = s / (2 lambda_1)``; the law of (SDE) approaches
    mu_s like ``exp(-lambda_1 t)`` (chi-square distance).

    Parameters
    ----------
    loss_and_grad : callable
        Batched ``theta (chains, D) -> (loss (chains,), grad (chains, D))``; only the loss
        is used.
    axes : sequence of ndarray
        The grid along each coordinate (1 or 2 axes), equally spaced.
    temperature : float
        ``s > 0``.
    n_eigenvalues : int
        How many of the smallest eigenvalues to return (at least 2, at most
        :data:`MAX_EIGENVALUES`, and fewer than the grid points).

    Returns
    -------
    ndarray
        The eigenvalues ``0 = lambda_0 < lambda_1 <= ...``; ``lambda_1`` is the spectral gap.

    Raises
    ------
    ValueError
        For a bad grid, temperature or count.
    """
    s = check_positive("temperature", temperature)
    n_eigenvalues = check_int("n_eigenvalues", n_eigenvalues, minimum=2,
                              maximum=MAX_EIGENVALUES)
    checked, points = _grid(axes)
    shape = tuple(a.size for a in checked)
    if n_eigenvalues >= points.shape[0]:
        raise ValueError(f"n_eigenvalues must be smaller than the {points.shape[0]} grid points "
                         f"of axes, got {n_eigenvalues}")
    f = np.asarray(loss_and_grad(points)[0], dtype=np.float64).reshape(shape)
    if not np.all(np.isfinite(f)):
        raise ValueError("loss_and_grad must return a finite loss for every grid point")
    index = np.arange(f.size).reshape(shape)
    rows, cols, vals = [], [], []
    diagonal = np.zeros(shape)
    for axis, a in enumerate(checked):
        c = s / (2.0 * (a[1] - a[0]) ** 2)
        lo = [slice(None)] * len(shape)
        hi = [slice(None)] * len(shape)
        lo[axis] = slice(0, -1)
        hi[axis] = slice(1, None)
        lo_t, hi_t = tuple(lo), tuple(hi)
        df = f[hi_t] - f[lo_t]
        if np.abs(df).max() > 50.0 * s:
            raise ValueError(f"axes must span a grid on which the loss changes by at most 50 s "
                             f"= {50 * s:.3g} between neighbours, got {np.abs(df).max():.3g} "
                             f"along axis {axis}: the rates would overflow; shrink the box to "
                             "where the Gibbs measure lives or refine the grid")
        # rate lo -> hi is c exp(-df / s); hi -> lo is c exp(df / s)
        diagonal[lo_t] -= c * np.exp(-df / s)
        diagonal[hi_t] -= c * np.exp(df / s)
        i, j = index[lo_t].ravel(), index[hi_t].ravel()
        rows += [i, j]
        cols += [j, i]
        vals += [np.full(i.size, c), np.full(i.size, c)]
    sym = sp.coo_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                        shape=(f.size, f.size)).tocsr() + sp.diags(diagonal.ravel())
    # -sym is positive semidefinite with a simple eigenvalue 0; shift-invert just below 0
    scale = float(np.abs(diagonal).max())
    eigenvalues = spla.eigsh(-sym, k=n_eigenvalues, sigma=-1e-8 * scale,
                             which="LM", return_eigenvectors=False)
    return np.sort(eigenvalues)
