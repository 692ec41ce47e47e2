"""Common wrong answers fail the problem sets' public checks, with a message naming the mistake.

A student sees only the public checks before the deadline (issue 67): a mistake that only a
hidden check catches is feedback that comes too late. For every problem set, each common mistake
of ``MISTAKES`` is fed to its question's public checks as the student's notebook runs them (the
setup cells, the reference solutions of the other questions, then the wrong answer, then the
question's public check cells in turn): one of them must fail, and the first failure of one of
the failing cells (what the brief feedback shows, one line per failing cell) must name the
mistake. The reference solutions pass every public check.

The brief feedback itself (``notebooks/problem_sets/check_feedback.py``, copied by
scripts/editions.py into each problem set's "Initialize Otter" cell) is checked on otter's own
report: a failing ``grader.check`` shows the check's message first, in a few lines, and
``grader.check_all()`` stays as short; ``verbose=True`` gives otter's full doctest trace.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PROBLEM_SETS = ROOT / "notebooks" / "problem_sets"
MASTERS = sorted(PROBLEM_SETS.glob("ps*.ipynb"))
_spec = importlib.util.spec_from_file_location("editions", ROOT / "scripts" / "editions.py")
editions = importlib.util.module_from_spec(_spec)
sys.modules["editions"] = editions  # dataclasses look their module up there
_spec.loader.exec_module(editions)


#: What a failing check may print by default (issue 67: otter's trace was 28 to 63 lines).
MAX_LINES = 10


def _function(name: str, *body: str) -> str:
    """The source of ``def name(...)`` with ``body`` (the signature is the first line)."""
    return "\n    ".join((f"def {name}", *body)) + "\n"


# problem set -> question -> [(mistake, wrong answer's source, words the failure must hold)]
MISTAKES: dict[str, dict[str, list[tuple[str, str, str]]]] = {
    "ps1_part1_theory": {
        "q1_softmax": [
            ("no maximum subtracted", _function(
                "softmax_rows(logits):", "w = np.exp(logits)",
                "return w / w.sum(axis=1, keepdims=True)"), "subtract each row's maximum"),
            ("the array's maximum subtracted", _function(
                "softmax_rows(logits):", "w = np.exp(logits - logits.max())",
                "return w / w.sum(axis=1, keepdims=True)"), "not the array's"),
            ("normalised over the columns", _function(
                "softmax_rows(logits):", "w = np.exp(logits - logits.max(axis=0))",
                "return w / w.sum(axis=0)"), "each row must sum to 1"),
            ("the library's softmax", _function(
                "softmax_rows(logits):", "return attention.row_softmax(logits)"),
             "calls attention.row_softmax, which the grader withholds"),
        ],
        "q2_loo_weights": [
            ("transposed logits", _function(
                "loo_weights(B, X):", "logits = X @ B.T @ X.T",
                "np.fill_diagonal(logits, -np.inf)", "return softmax_rows(logits)"),
             "is the logit x_j^T B x_i (query j in the row)?"),
            ("forgotten mask", _function(
                "loo_weights(B, X):", "return softmax_rows(X @ B @ X.T)"),
             "the diagonal must be 0"),
            ("diagonal zeroed after the softmax", _function(
                "loo_weights(B, X):", "W = softmax_rows(X @ B @ X.T)",
                "np.fill_diagonal(W, 0.0)", "return W"), "each row of W must sum to 1"),
            ("the library's weights", _function(
                "loo_weights(B, X):", "return attention.attention_weights(B, X, mask='loo')"),
             "calls attention.attention_weights, which the grader withholds"),
        ],
        "q3_population_loss": [
            ("missing noise floor", _function(
                "population_loss(A, B, Sigma, M, noise_std):", "E = A @ Sigma @ B.T - M",
                "return 0.5 * np.trace(E @ Sigma @ E.T)"), "the noise floor p sigma^2 / 2"),
            ("the notebook's noise_std", _function(
                "population_loss(A, B, Sigma, M, sigma):", "E = A @ Sigma @ B.T - M",
                "return 0.5 * np.trace(E @ Sigma @ E.T) + M.shape[0] * noise_std ** 2 / 2"),
             "wrong dependence on noise_std"),
            ("missing factor 1/2", _function(
                "population_loss(A, B, Sigma, M, noise_std):", "E = A @ Sigma @ B.T - M",
                "return np.trace(E @ Sigma @ E.T) + M.shape[0] * noise_std ** 2 / 2"),
             "differs from the closed form"),
            ("B not transposed", _function(
                "population_loss(A, B, Sigma, M, noise_std):", "E = A @ Sigma @ B - M",
                "return 0.5 * np.trace(E @ Sigma @ E.T) + M.shape[0] * noise_std ** 2 / 2"),
             "differs from the closed form"),
        ],
        "q4_factor": [
            ("inverse square root", _function(
                "to_factor(A, B, Sigma):", "_, half = population.spd_sqrt(Sigma)",
                "return A @ half, half @ B @ half"), "the symmetric square root"),
            ("Cholesky factor for the square root", _function(
                "to_factor(A, B, Sigma):", "half = np.linalg.cholesky(Sigma)",
                "return A @ half, half.T @ B @ half"), "the symmetric square root"),
            ("right factor forgotten", _function(
                "to_factor(A, B, Sigma):", "half, _ = population.spd_sqrt(Sigma)",
                "return A @ half, half @ B"), "on both sides of B"),
            ("chapter 2's population.to_factor", _function(
                "to_factor(A, B, Sigma):", "return population.to_factor(A, B, Sigma)"),
             "calls population.to_factor, which the grader withholds"),
        ],
        "q5_balance_gradient": [
            ("wrong sign of dR/dV", _function(
                "balance_grad(U, V, lam):", "D = U.T @ U - V.T @ V",
                "return lam / 2 * U @ D, lam / 2 * V @ D"), "dR/dV has the wrong sign"),
            ("factor 2", _function(
                "balance_grad(U, V, lam):", "D = U.T @ U - V.T @ V",
                "return lam * U @ D, -lam * V @ D"), "dR/dU is off by a factor 2.00"),
            ("factor 1/2 on dR/dV", _function(
                "balance_grad(U, V, lam):", "D = U.T @ U - V.T @ V",
                "return lam / 2 * U @ D, -lam / 4 * V @ D"), "dR/dV is off by a factor 0.50"),
            ("lam ignored", _function(
                "balance_grad(U, V, lam):", "D = U.T @ U - V.T @ V",
                "return 0.35 * U @ D, -0.35 * V @ D"), "at lam = 2.5: dR/dU is off by a factor"),
            ("D squared", _function(
                "balance_grad(U, V, lam):", "D = U.T @ U - V.T @ V",
                "return lam / 2 * U @ D @ D, -lam / 2 * V @ D @ D"),
             "dR/dU disagrees with central differences (relative error"),
        ],
    },
    "ps2_part1_experiments": {
        "q1_ols": [
            ("transposed fit", _function(
                "ols_fit(X, Y):", "return np.linalg.solve(X.T @ X, X.T @ Y)"),
             "M_hat must be p x d"),
            ("cross-covariance without the inverse", _function(
                "ols_fit(X, Y):", "return Y.T @ X / len(X)"), "not the least-squares fit"),
            ("a ridge term", _function(
                "ols_fit(X, Y):", "ridge = X.T @ X + np.eye(X.shape[1])",
                "return np.linalg.solve(ridge, X.T @ Y).T"),
             "not the least-squares fit"),
            ("the library's fit", _function(
                "ols_fit(X, Y):", "return population.empirical_moments(X, Y)[1]"),
             "calls population.empirical_moments, which the grader withholds"),
        ],
        "q2_ols_risk": [
            ("the exact formula", _function(
                "mean_ols_excess_risk(n, trials, rng):",
                "return population.ols_excess_risk(n, d, p, noise_std)"),
             "not a formula"),
            ("a generator of its own", _function(
                "mean_ols_excess_risk(n, trials, rng):", "rng = np.random.default_rng(0)",
                "risks = [population.linear_excess_risk(ols_fit(*data.sample_regression("
                "n, Sigma, M, noise_std, rng=rng)), Sigma, M) for _ in range(trials)]",
                "return float(np.mean(risks))"), "another seed must give another"),
            ("one sample reused", _function(
                "mean_ols_excess_risk(n, trials, rng):",
                "X, Y = data.sample_regression(n, Sigma, M, noise_std, rng=rng)",
                "return population.linear_excess_risk(ols_fit(X, Y), Sigma, M)"),
             "is not the mean excess risk of the 5 samples drawn in turn from rng"),
            ("the last sample counted twice", _function(
                "mean_ols_excess_risk(n, trials, rng):",
                "risks = [population.linear_excess_risk(ols_fit(*data.sample_regression("
                "n, Sigma, M, noise_std, rng=rng)), Sigma, M) for _ in range(trials)]",
                "return float(np.mean(risks + risks[-1:]))"),
             "is not the mean excess risk of the 5 samples drawn in turn from rng"),
        ],
        "q3_gradient_descent": [
            ("wrong sign of the step", _function(
                "gd_losses(A, B, X, Y, eta, steps):", "losses = [attention.loss(A, B, X, Y)]",
                "for _ in range(steps):",
                "    _, gA, gB = attention.loss_and_grad(A, B, X, Y)",
                "    A, B = A + eta * gA, B + eta * gB",
                "    losses.append(attention.loss(A, B, X, Y))", "return np.array(losses)"),
             "is the sign of the step right?"),
            ("only A stepped", _function(
                "gd_losses(A, B, X, Y, eta, steps):", "losses = [attention.loss(A, B, X, Y)]",
                "for _ in range(steps):",
                "    _, gA, gB = attention.loss_and_grad(A, B, X, Y)",
                "    A = A - eta * gA",
                "    losses.append(attention.loss(A, B, X, Y))", "return np.array(losses)"),
             "step both A and B"),
            ("final loss missing", _function(
                "gd_losses(A, B, X, Y, eta, steps):", "losses = []",
                "for _ in range(steps):",
                "    loss, gA, gB = attention.loss_and_grad(A, B, X, Y)",
                "    losses.append(loss)",
                "    A, B = A - eta * gA, B - eta * gB", "return np.array(losses)"),
             "expected steps + 1 = 31 losses"),
            ("losses recorded after each step", _function(
                "gd_losses(A, B, X, Y, eta, steps):", "losses = []",
                "for _ in range(steps + 1):",
                "    _, gA, gB = attention.loss_and_grad(A, B, X, Y)",
                "    A, B = A - eta * gA, B - eta * gB",
                "    losses.append(attention.loss(A, B, X, Y))", "return np.array(losses)"),
             "the first entry must be the loss at the start"),
        ],
        "q4_tilting": [
            ("limit B^T Sigma x", _function(
                "tilting_error(B, x, n, rng):",
                "X, _ = data.sample_regression(n, Sigma, M, noise_std, rng=rng)",
                "h = attention.predict_new(np.eye(d), B, X, x[None, :])[0]",
                "limit = B.T @ Sigma @ x",
                "return float(np.linalg.norm(h - limit) / np.linalg.norm(limit))"),
             "is the limit Sigma B^T x"),
            ("limit Sigma B x", _function(
                "tilting_error(B, x, n, rng):",
                "X, _ = data.sample_regression(n, Sigma, M, noise_std, rng=rng)",
                "h = attention.predict_new(np.eye(d), B, X, x[None, :])[0]",
                "limit = Sigma @ B @ x",
                "return float(np.linalg.norm(h - limit) / np.linalg.norm(limit))"),
             "is the limit Sigma B^T x"),
            ("absolute error", _function(
                "tilting_error(B, x, n, rng):",
                "X, _ = data.sample_regression(n, Sigma, M, noise_std, rng=rng)",
                "h = attention.predict_new(np.eye(d), B, X, x[None, :])[0]",
                "return float(np.linalg.norm(h - Sigma @ B.T @ x))"), "the error relative"),
            ("a formula in n", _function(
                "tilting_error(B, x, n, rng):", "return float(n ** -0.5)"),
             "do not return a formula in n"),
        ],
    },
    "ps3_part2_langevin_villani": {
        "q1_euler_maruyama": [
            ("noise without s", _function(
                "em_step(loss_and_grad, theta, h, s, xi):",
                "return theta - h * loss_and_grad(theta)[1] + np.sqrt(h) * xi"),
             "the drift is right, check the noise scale"),
            ("noise s h without the root", _function(
                "em_step(loss_and_grad, theta, h, s, xi):",
                "return theta - h * loss_and_grad(theta)[1] + s * h * xi"),
             "the drift is right, check the noise scale"),
            ("drift uphill", _function(
                "em_step(loss_and_grad, theta, h, s, xi):",
                "return theta + h * loss_and_grad(theta)[1] + np.sqrt(s * h) * xi"),
             "check the drift"),
            ("the loss instead of its gradient", _function(
                "em_step(loss_and_grad, theta, h, s, xi):",
                "return theta - h * loss_and_grad(theta)[0] + np.sqrt(s * h) * xi"),
             "the gradient is loss_and_grad(theta)[1]"),
        ],
        "q2_gibbs_density": [
            ("exponent -f/s", _function(
                "gibbs_density_1d(f_values, s, dx):",
                "w = np.exp(-(f_values - f_values.min()) / s)", "return w / (w.sum() * dx)"),
             "is the exponent -2 f / s?"),
            ("no minimum subtracted", _function(
                "gibbs_density_1d(f_values, s, dx):", "w = np.exp(-2.0 * f_values / s)",
                "return w / (w.sum() * dx)"), "subtract min f before exponentiating"),
            ("dx left out of Z", _function(
                "gibbs_density_1d(f_values, s, dx):",
                "w = np.exp(-2.0 * (f_values - f_values.min()) / s)", "return w / w.sum()"),
             "the density must integrate to 1"),
        ],
        "q3_villani": [
            ("times s instead of over s", _function(
                "villani_1d(fp, fpp, s):", "return fp ** 2 * s - fpp"),
             "V_s = f'^2 / s - f'' differs"),
            ("plus f''", _function("villani_1d(fp, fpp, s):", "return fp ** 2 / s + fpp"),
             "V_s = f'^2 / s - f'' differs"),
            ("f' not squared", _function("villani_1d(fp, fpp, s):", "return fp / s - fpp"),
             "V_s = f'^2 / s - f'' differs"),
        ],
        "q4_gibbs_mean": [
            ("mean over the whole run", _function(
                "langevin_mean_loss(theta0, h, s, n_steps, rng):",
                "run = langevin.euler_maruyama(double_well, theta0, step=h, temperature=s, "
                "n_steps=n_steps, rng=rng)",
                "return float(run.loss.mean()), langevin.tail_mean(run.loss)[1]"),
             "is not the tail mean and standard error"),
            ("step and temperature swapped", _function(
                "langevin_mean_loss(theta0, h, s, n_steps, rng):",
                "run = langevin.euler_maruyama(double_well, theta0, step=s, temperature=h, "
                "n_steps=n_steps, rng=rng)", "return langevin.tail_mean(run.loss)"),
             "Gibbs mean"),
            ("a generator of its own", _function(
                "langevin_mean_loss(theta0, h, s, n_steps, rng):",
                "run = langevin.euler_maruyama(double_well, theta0, step=h, temperature=s, "
                "n_steps=n_steps, rng=np.random.default_rng(0))",
                "return langevin.tail_mean(run.loss)"), "another seed must give other chains"),
        ],
        "q5_lora_symmetry": [
            ("G V instead of G^-1 V", _function("rescale(U, V, G):", "return U @ G, G @ V"),
             "U V changed"),
            ("the inverse on the wrong side", _function(
                "rescale(U, V, G):", "return U @ np.linalg.inv(G), G @ V"),
             "differs from the orbit action (U G, G^-1 V)"),
            ("G transposed", _function(
                "rescale(U, V, G):", "return U @ G.T, np.linalg.solve(G.T, V)"),
             "differs from the orbit action (U G, G^-1 V)"),
        ],
    },
    "ps4_part2_langevin_darcy_bridge": {
        "q1_hitting_time": [
            ("first time below, not staying", _function(
                "first_time_below(times, gap, eps):",
                "below = np.nonzero(np.abs(gap) <= eps)[0]",
                "return float(times[below[0]]) if below.size else np.nan"),
             "stays within eps"),
            ("the index instead of the time", _function(
                "first_time_below(times, gap, eps):", "inside = np.abs(gap) <= eps",
                "if not inside[-1]:", "    return np.nan",
                "outside = np.nonzero(~inside)[0]",
                "return float(0 if outside.size == 0 else outside[-1] + 1)"),
             "not the index k"),
            ("gap without its absolute value", _function(
                "first_time_below(times, gap, eps):", "inside = gap <= eps",
                "if not inside[-1]:", "    return np.nan",
                "outside = np.nonzero(~inside)[0]",
                "return float(times[0 if outside.size == 0 else outside[-1] + 1])"),
             "|gap| counts"),
            ("no NaN when the gap ends above eps", _function(
                "first_time_below(times, gap, eps):", "inside = np.abs(gap) <= eps",
                "outside = np.nonzero(~inside)[0]",
                "k = 0 if outside.size == 0 else min(outside[-1] + 1, len(times) - 1)",
                "return float(times[k])"), "the answer must be nan"),
        ],
        "q2_patchify": [
            ("a plain reshape", _function(
                "patchify(fields, patch):",
                "return fields.reshape(fields.shape[0], -1, patch * patch)"),
             "each token must be one P x P square"),
            ("patches read column by column", _function(
                "patchify(fields, patch):", "b, s, _ = fields.shape", "q = s // patch",
                "return fields.reshape(b, q, patch, q, patch).transpose(0, 1, 3, 4, 2)"
                ".reshape(b, q * q, patch * patch)"), "each token must be one P x P square"),
            ("patch grid column by column", _function(
                "patchify(fields, patch):", "b, s, _ = fields.shape", "q = s // patch",
                "return fields.reshape(b, q, patch, q, patch).transpose(0, 3, 1, 2, 4)"
                ".reshape(b, q * q, patch * patch)"), "not in row-major order"),
            ("the library's patchify", _function(
                "patchify(fields, patch):", "return vit.patchify(fields, patch)"),
             "calls vit.patchify, which the grader withholds"),
        ],
        "q3_darcy_residual": [
            ("coefficient not averaged onto the faces", _function(
                "flux_residual(a, u, f):", "h2 = (1.0 / (a.shape[0] - 1)) ** 2",
                "fx = a[1:, :] * (u[1:, :] - u[:-1, :])",
                "fy = a[:, 1:] * (u[:, 1:] - u[:, :-1])",
                "div = (fx[1:, 1:-1] - fx[:-1, 1:-1]) + (fy[1:-1, 1:] - fy[1:-1, :-1])",
                "return -div / h2 - f"), "averaged onto the faces"),
            ("spacing 1/s", _function(
                "flux_residual(a, u, f):", "h2 = (1.0 / a.shape[0]) ** 2",
                "fx = 0.5 * (a[1:, :] + a[:-1, :]) * (u[1:, :] - u[:-1, :])",
                "fy = 0.5 * (a[:, 1:] + a[:, :-1]) * (u[:, 1:] - u[:, :-1])",
                "div = (fx[1:, 1:-1] - fx[:-1, 1:-1]) + (fy[1:-1, 1:] - fy[1:-1, :-1])",
                "return -div / h2 - f"), "the spacing h = 1/(s-1)"),
            ("the whole residual's sign flipped", _function(
                "flux_residual(a, u, f):", "h2 = (1.0 / (a.shape[0] - 1)) ** 2",
                "fx = 0.5 * (a[1:, :] + a[:-1, :]) * (u[1:, :] - u[:-1, :])",
                "fy = 0.5 * (a[:, 1:] + a[:, :-1]) * (u[:, 1:] - u[:, :-1])",
                "div = (fx[1:, 1:-1] - fx[:-1, 1:-1]) + (fy[1:-1, 1:] - fy[1:-1, :-1])",
                "return div / h2 + f"), "it has the wrong sign"),
            ("every node, not the interior", _function(
                "flux_residual(a, u, f):", "return np.zeros_like(u)"),
             "one residual per interior node"),
        ],
        "q4_preconditioner": [
            ("S^-1 on one side of G_B", _function(
                "precondition(G_A, G_B, Sigma_hat):",
                "return np.linalg.solve(Sigma_hat, G_A.T).T, np.linalg.solve(Sigma_hat, G_B)"),
             "needs S^-1 on both sides"),
            ("S instead of S^-1", _function(
                "precondition(G_A, G_B, Sigma_hat):",
                "return G_A @ Sigma_hat, Sigma_hat @ G_B @ Sigma_hat"), "G_A S^-1 differs"),
            ("G_A not transposed back", _function(
                "precondition(G_A, G_B, Sigma_hat):",
                "left = np.linalg.solve(Sigma_hat, G_B)",
                "return np.linalg.solve(Sigma_hat, G_A.T), np.linalg.solve(Sigma_hat, left.T).T"),
             "must keep the shapes"),
            ("the library's preconditioner", _function(
                "precondition(G_A, G_B, Sigma_hat):",
                "P = bridge.preconditioner_matrix(Sigma_hat, G_A.shape[0])",
                "return bridge.unflatten(P @ bridge.flatten(G_A, G_B), *G_A.shape)"),
             "calls bridge.preconditioner_matrix, which the grader withholds"),
        ],
    },
}


def _questions(master: Path) -> tuple[list[str], dict[str, tuple[list[str], list[str]]]]:
    """(setup cells, question -> (solution cells, public check cells)) of a master notebook."""
    setup: list[str] = []
    questions: dict[str, tuple[list[str], list[str]]] = {}
    current, in_tests = None, False
    for cell in json.loads(master.read_text())["cells"][1:]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "raw":
            if source.startswith("# BEGIN QUESTION"):
                current = yaml.safe_load(source.removeprefix("# BEGIN QUESTION"))["name"]
                questions[current] = ([], [])
            elif source.startswith("# END QUESTION"):
                current = None
            in_tests = {"# BEGIN TESTS": True, "# END TESTS": False}.get(source, in_tests)
        elif cell["cell_type"] == "code" and current is None:
            setup.append(source)
        elif cell["cell_type"] == "code" and "# BEGIN SOLUTION" in source:
            questions[current][0].append(source)
        elif cell["cell_type"] == "code" and in_tests and "hidden: true" not in source:
            questions[current][1].append(source)
    return setup, questions


def _namespace(master: Path) -> dict:
    """The student's notebook with every question answered by its reference solution."""
    setup, questions = _questions(master)
    namespace: dict = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for source in setup + [s for solutions, _ in questions.values() for s in solutions]:
            exec(compile(source, f"<{master.stem}>", "exec"), namespace)
    return namespace


def failures(namespace: dict, checks: list[str]) -> list[str]:
    """Run the public check cells in turn in a copy of ``namespace``: the message of each
    failing cell's first failure (what the brief feedback shows; the exception's type too,
    unless it is an AssertionError)."""
    scope, messages = dict(namespace), []
    for check in checks:
        try:
            exec(compile(check, "<public check>", "exec"), scope)
        except AssertionError as error:
            messages.append(str(error))
        except Exception as error:  # noqa: BLE001  (a wrong answer may raise anything)
            messages.append(f"{type(error).__name__}: {error}")
    return messages


@pytest.fixture(scope="module", params=MASTERS, ids=lambda path: path.stem)
def problem_set(request) -> tuple[Path, dict, dict]:
    """(master, reference namespace, question -> public check cells) of one problem set."""
    master = request.param
    _, questions = _questions(master)
    return master, _namespace(master), {q: checks for q, (_, checks) in questions.items()}


def test_every_question_has_common_mistakes() -> None:
    """Each automatically checked question of every problem set has three mistakes or more."""
    assert set(MISTAKES) == {master.stem for master in MASTERS}
    for master in MASTERS:
        coded = {q for q, (solutions, _) in _questions(master)[1].items() if solutions}
        assert set(MISTAKES[master.stem]) == coded, master.stem
        assert all(len(mistakes) >= 3 for mistakes in MISTAKES[master.stem].values())


def test_reference_solutions_pass_the_public_checks(problem_set) -> None:
    master, namespace, checks = problem_set
    for question, cells in checks.items():
        assert not failures(namespace, cells), (master.stem, question)


def test_common_mistakes_fail_a_public_check_that_names_them(problem_set) -> None:
    master, namespace, checks = problem_set
    for question, mistakes in MISTAKES[master.stem].items():
        assert checks[question], f"{question}: no public check"
        for mistake, code, words in mistakes:
            scope = dict(namespace)
            exec(code, scope)
            messages = failures(scope, checks[question])
            assert messages, f"{question}: {mistake!r} passes the public checks"
            assert any(words in message for message in messages), (
                f"{question}: {mistake!r} fails with {messages}")


@pytest.fixture(scope="module")
def student_notebook(tmp_path_factory) -> tuple[Path, list[str]]:
    """Problem set 1's student edition (``otter assign``'s, the solutions not run): its folder,
    and its code cells but the checks, followed by the reference solutions."""
    master = PROBLEM_SETS / "ps1_part1_theory.ipynb"
    build = tmp_path_factory.mktemp("ps1")
    wheel = build / "attnlib-0-py3-none-any.whl"     # only packed into the unused zip
    wheel.write_bytes(b"")
    student = editions.assign(master, build / "dist", wheel=wheel, run_tests=False) / "student"
    cells = json.loads((student / master.name).read_text())["cells"]
    sources = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
    answers = [s for solutions, _ in _questions(master)[1].values() for s in solutions]
    return student, [s for s in sources if not s.startswith("grader.")] + answers


def _shown(notebook: tuple[Path, list[str]], call: str, wrong: str = "") -> str:
    """What ``call`` (a grader call in a cell) shows in the notebook run from the top as a
    student runs it (in its folder, with otter's grader of its first cell), with the ``wrong``
    answers in a cell before it."""
    folder, sources = notebook
    namespace: dict = {"__name__": "__main__"}
    with contextlib.chdir(folder), contextlib.redirect_stdout(io.StringIO()):
        for source in [*sources, wrong, f"_shown = repr({call})"]:
            exec(compile(source, "<ps1 cell>", "exec"), namespace)
    return namespace["_shown"]


def test_a_failing_check_shows_its_message_first(student_notebook) -> None:
    """Issue 67: otter printed 28 to 63 lines of doctest trace per failing check; the brief
    feedback prints the message first, in a few lines, and the trace on request."""
    _, wrong, _ = MISTAKES["ps1_part1_theory"]["q2_loo_weights"][0]
    shown = _shown(student_notebook, 'grader.check("q2_loo_weights")', wrong)
    assert shown.startswith("q2_loo_weights: W differs from the leave-one-out weights"), shown
    assert len(shown.splitlines()) <= MAX_LINES and "Trying:" not in shown, shown
    full = _shown(student_notebook, 'grader.check("q2_loo_weights", verbose=True)', wrong)
    assert "Trying:" in full and "W differs from the leave-one-out weights" in full
    assert len(full.splitlines()) > MAX_LINES
    _, wrong, words = MISTAKES["ps1_part1_theory"]["q5_balance_gradient"][1]
    shown = _shown(student_notebook, 'grader.check("q5_balance_gradient")', wrong)
    assert words in shown.splitlines()[0] and len(shown.splitlines()) <= MAX_LINES, shown


def test_check_all_is_brief_too(student_notebook) -> None:
    """Every question's first mistake at once: one line per failing check, all in view."""
    first = [mistakes[0] for mistakes in MISTAKES["ps1_part1_theory"].values()]
    shown = _shown(student_notebook, "grader.check_all()", "".join(m[1] for m in first))
    assert len(shown.splitlines()) <= MAX_LINES and "Trying:" not in shown, shown
    assert all(words in shown for _, _, words in first), shown
    passing = _shown(student_notebook, "grader.check_all()")
    assert passing.splitlines() == [f"{q}: all public checks pass"
                                    for q in MISTAKES["ps1_part1_theory"]], passing
