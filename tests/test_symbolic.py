"""Tests of attnlib.symbolic: every derivation of chapter 2 holds exactly, wrong claims fail,
and the derived expressions agree numerically with attnlib.population."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from scipy.special import factorial2

from attnlib import data, population, symbolic as S


def _holds_all(identities: list[S.Identity]) -> dict[str, bool]:
    return {identity.name: identity.holds() for identity in identities}


def test_standard_normal_mgf_derived_by_integration() -> None:
    assert S.standard_normal_mgf().holds()


def test_mgf_in_the_book_dimension() -> None:
    assert S.mgf_identity(10).holds()


@pytest.mark.parametrize("d", [2, 3])
def test_mgf_and_tilting_in_explicit_dimension(d: int) -> None:
    assert S.mgf_identity(d).holds()
    assert S.tilting_identity(d).holds()


def test_tilting_in_general_dimension() -> None:
    assert S.tilting_identity_general_d().holds()


def test_moments_match_double_factorial() -> None:
    for k in range(9):
        expected = 0 if k % 2 else int(factorial2(k - 1, exact=True)) if k else 1
        assert S.gaussian_moment(k) == expected


def test_gaussian_expectation_of_a_polynomial() -> None:
    z1, z2, c = sp.symbols("z1 z2 c", real=True)
    value = S.gaussian_expectation(c * z1 ** 4 * z2 ** 2 + z1 * z2 + 5 * z2 ** 2 + c, [z1, z2])
    assert sp.expand(value - (3 * c + 5 + c)) == 0


@pytest.mark.parametrize("p, d", [(2, 2), (3, 2), (4, 3)])
def test_population_loss_identity(p: int, d: int) -> None:
    assert S.population_loss_identity(p, d).holds()


def test_a_wrong_population_loss_is_rejected() -> None:
    identity = S.population_loss_identity(2, 2)
    sigma = sp.Symbol("sigma", positive=True)
    wrong = S.Identity("noise counted twice", identity.lhs, identity.rhs + 2 * sigma ** 2 / 2)
    assert not wrong.holds()
    with pytest.raises(AssertionError, match="noise counted twice"):
        wrong.assert_holds()


def test_factorization_and_symmetry() -> None:
    assert all(_holds_all(S.factorization_identities(3, 2)).values())
    assert all(_holds_all(S.symmetry_identities(3, 2)).values())


def test_regularizer_identities_and_the_failing_gl_case() -> None:
    results = _holds_all(S.regularizer_identities(2))
    failing = [name for name in results if "[fails]" in name]
    assert len(failing) == 1 and not results[failing[0]]
    assert all(value for name, value in results.items() if name not in failing)


def test_gradient_identities_and_the_failing_plain_step() -> None:
    results = _holds_all(S.gradient_identities(2, 2))
    assert results.pop("plain A step = U step [fails unless Sigma = I]") is False
    assert all(results.values()), results


def _random_numbers(p: int, d: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sigma = data.covariance(d, kappa=5.0, rng=rng)
    return {"A": rng.standard_normal((p, d)), "B": rng.standard_normal((d, d)),
            "M": rng.standard_normal((p, d)), "Sigma": sigma}


def test_derived_population_loss_matches_population_module() -> None:
    p, d, noise = 3, 2, 0.3
    num = _random_numbers(p, d, 0)
    identity = S.population_loss_identity(p, d)
    symbols = [(S.matrix_symbols("a", p, d), num["A"]), (S.matrix_symbols("b", d, d), num["B"]),
               (S.matrix_symbols("m", p, d), num["M"]),
               (S.lower_triangular_symbols("l", d), np.linalg.cholesky(num["Sigma"])),
               (sp.Symbol("sigma", positive=True), noise)]
    derived = S.evaluate(identity.lhs, symbols)
    expected = population.population_loss(num["A"], num["B"], num["Sigma"], num["M"],
                                          noise_std=noise)
    assert derived == pytest.approx(expected, rel=1e-12)


def test_derived_gradients_match_population_module() -> None:
    p, d, lam = 2, 2, 0.7
    num = _random_numbers(p, d, 1)
    half, _ = population.spd_sqrt(num["Sigma"])
    identities = {i.name: i for i in S.gradient_identities(p, d)}
    symbols = [(S.matrix_symbols("a", p, d), num["A"]), (S.matrix_symbols("b", d, d), num["B"]),
               (S.matrix_symbols("m", p, d), num["M"]), (S.symmetric_symbols("r", d), half),
               (sp.Symbol("lambda", positive=True), lam)]
    grad_a = S.evaluate(identities["grad_A Q closed form"].lhs, symbols)
    grad_b = S.evaluate(identities["grad_B Q closed form"].lhs, symbols)
    _, want_a, want_b = population.objective_and_grad(num["A"], num["B"], num["Sigma"],
                                                      num["M"], lam=lam)
    np.testing.assert_allclose(grad_a, want_a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(grad_b, want_b, rtol=1e-10, atol=1e-12)


def test_evaluate_rejects_a_wrong_shape() -> None:
    a = S.matrix_symbols("a", 2, 2)
    with pytest.raises(ValueError, match="shape"):
        S.evaluate(a[0, 0], [(a, np.zeros((3, 2)))])


def _unit_tilt(Sigma: np.ndarray, size: float, rng: np.random.Generator) -> np.ndarray:
    u = rng.standard_normal(Sigma.shape[0])
    return u * np.sqrt(size / (u @ Sigma @ u))


def test_tilting_monte_carlo_agrees_with_the_closed_form_and_rejects_a_wrong_one() -> None:
    rng = np.random.default_rng(5)
    sigma = data.covariance(6, kappa=10.0, rng=rng)
    u = _unit_tilt(sigma, 1.0, rng)
    estimate = S.tilting_monte_carlo(sigma, u, n_samples=200_000, rng=rng, block_size=30_000)
    right = estimate.z_scores(mgf=np.exp(0.5), tilted_mean=sigma @ u)
    assert right.shape == (7,)
    assert np.abs(right).max() < 4.5
    wrong = estimate.z_scores(mgf=np.exp(u @ u / 2), tilted_mean=u)   # Sigma replaced by I
    assert np.abs(wrong).max() > 20


def test_tilting_monte_carlo_standard_errors_are_calibrated() -> None:
    rng = np.random.default_rng(6)
    sigma = data.covariance(3, kappa=4.0, rng=rng)
    u = _unit_tilt(sigma, 1.0, rng)
    z = np.array([S.tilting_monte_carlo(sigma, u, n_samples=4000, rng=rng)
                  .z_scores(mgf=np.exp(0.5), tilted_mean=sigma @ u) for _ in range(300)])
    # 300 replicates: the spread of each z-score is 1 up to about +-0.1 if the errors are right
    assert np.all(np.abs(z.std(axis=0) - 1.0) < 0.2), z.std(axis=0)
    assert np.all(np.abs(z.mean(axis=0)) < 0.25), z.mean(axis=0)


def test_tilting_monte_carlo_rejects_bad_input() -> None:
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="u must have shape"):
        S.tilting_monte_carlo(np.eye(3), np.ones(2), n_samples=10, rng=rng)
    with pytest.raises(ValueError, match="Sigma must be positive definite"):
        S.tilting_monte_carlo(np.zeros((2, 2)), np.ones(2), n_samples=10, rng=rng)
    with pytest.raises(ValueError, match="n_samples"):
        S.tilting_monte_carlo(np.eye(2), np.ones(2), n_samples=1, rng=rng)
    with pytest.raises(TypeError, match="rng"):
        S.tilting_monte_carlo(np.eye(2), np.ones(2), n_samples=10, rng=0)


def test_finite_context_errors_shrink_with_n() -> None:
    rng = np.random.default_rng(4)
    problem = data.default_problem(rng=rng, d=3, p=4)
    a, b = 0.3 * rng.standard_normal((4, 3)), 0.3 * rng.standard_normal((3, 3))
    result = S.finite_context_errors(problem, a, b, [16, 4096], reps=4, n_queries=50, rng=rng,
                                     loss_max_n=16)
    assert result["output_error"].shape == (2, 4)
    assert result["output_error"][1].mean() < 0.25 * result["output_error"][0].mean()
    assert np.all(np.isfinite(result["loss_error"][0]))
    assert np.all(np.isnan(result["loss_error"][1]))
    with pytest.raises(ValueError, match="ns entry"):
        S.finite_context_errors(problem, a, b, [1], reps=1, n_queries=1, rng=rng)


# ------------------------------------------------------------- strings are never parsed
def _valid_symbolic_calls() -> dict[str, dict[str, object]]:
    """One valid call of every public function (or class) of attnlib.symbolic that takes a
    sympy object, as keyword arguments."""
    L1, u1 = S.lower_triangular_symbols("L", 1), S.matrix_symbols("u", 1, 1)
    z = sp.Symbol("z0")
    return {
        "Identity": dict(name="x", lhs=z, rhs=z),
        "gaussian_expectation": dict(expr=z ** 2, variables=[z]),
        "gaussian_mgf": dict(L=L1, u=u1),
        "tilting_ratio": dict(L=L1, u=u1),
        "attention_limit": dict(L=L1, B=S.matrix_symbols("B", 1, 1),
                                x=S.matrix_symbols("x", 1, 1)),
        "evaluate": dict(expr=z ** 2, values=[(z, 3.0)]),
    }


def _string_cases() -> list[tuple[str, str]]:
    return [(name, arg) for name, kwargs in _valid_symbolic_calls().items()
            for arg, value in kwargs.items() if _is_sympy(value)]


def _is_sympy(value: object) -> bool:
    if isinstance(value, list):
        return all(map(_is_sympy, value))
    return isinstance(value, (sp.Basic, sp.MatrixBase))


def test_every_sympy_argument_is_in_the_string_test() -> None:
    """A public symbolic function taking a sympy object must be listed above."""
    import inspect

    takes_sympy = set()
    for name in S.__all__:
        obj = getattr(S, name)
        if not callable(obj):
            continue
        for arg, parameter in inspect.signature(obj).parameters.items():
            annotation = str(parameter.annotation)
            if "sp." in annotation or (name == "Identity" and arg in ("lhs", "rhs")):
                takes_sympy.add((name, arg))
    assert takes_sympy - set(_string_cases()) == set()


@pytest.mark.parametrize("name, arg", _string_cases())
def test_no_entry_point_parses_a_string_into_code(name: str, arg: str, tmp_path) -> None:
    marker = tmp_path / "executed"
    attack = f"__import__('pathlib').Path({str(marker)!r}).touch() or z0**2"
    kwargs = _valid_symbolic_calls()[name]
    getattr(S, name)(**kwargs)                      # the valid call runs
    kwargs[arg] = attack
    with pytest.raises(TypeError, match=rf"^{arg} must be"):
        result = getattr(S, name)(**kwargs)
        if isinstance(result, S.Identity):
            result.holds()
    assert not marker.exists()


def test_variables_and_symbol_names_are_not_parsed(tmp_path) -> None:
    marker = tmp_path / "executed"
    attack = f"__import__('pathlib').Path({str(marker)!r}).touch() or z0"
    z = sp.Symbol("z0")
    with pytest.raises(TypeError, match=r"^variables\[0\] must be a sympy Symbol"):
        S.gaussian_expectation(z ** 2, [attack])
    with pytest.raises(TypeError, match="^variables must be"):
        S.gaussian_expectation(z ** 2, attack)
    with pytest.raises(TypeError, match=r"^values\[0\]\[0\] must be"):
        S.evaluate(z ** 2, [(attack, 1.0)])
    for make in (lambda n: S.matrix_symbols(n, 1, 1), lambda n: S.symmetric_symbols(n, 1),
                 lambda n: S.lower_triangular_symbols(n, 1)):
        with pytest.raises(TypeError, match="^name must be a plain identifier"):
            make(attack)
    assert not marker.exists()


def test_symbolic_matrices_must_have_matching_shapes() -> None:
    L2 = S.lower_triangular_symbols("L", 2)
    with pytest.raises(ValueError, match=r"^u must have shape \(2, 1\)"):
        S.gaussian_mgf(L2, S.matrix_symbols("u", 3, 1))
    with pytest.raises(ValueError, match=r"^L must have shape \(2, 2\)"):
        S.tilting_ratio(S.matrix_symbols("L", 2, 3), S.matrix_symbols("u", 2, 1))
    with pytest.raises(ValueError, match=r"^B must have shape"):
        S.attention_limit(L2, S.matrix_symbols("B", 2, 1), S.matrix_symbols("x", 2, 1))


# ------------------------------------------------------------------- bounded sizes
_HUGE = 10 ** 9


@pytest.mark.parametrize("call, arg", [
    (lambda: S.matrix_symbols("a", _HUGE, 1), "rows"),
    (lambda: S.matrix_symbols("a", 1, _HUGE), "cols"),
    (lambda: S.symmetric_symbols("s", _HUGE), "d"),
    (lambda: S.lower_triangular_symbols("l", _HUGE), "d"),
    (lambda: S.gaussian_moment(_HUGE), "k"),
    (lambda: S.mgf_identity(_HUGE), "d"),
    (lambda: S.tilting_identity(_HUGE), "d"),
    (lambda: S.ratio_estimator_moments(_HUGE), "d"),
    (lambda: S.population_loss_identity(_HUGE, 1), "p"),
    (lambda: S.population_loss_identity(1, _HUGE), "d"),
    (lambda: S.factorization_identities(_HUGE, 1), "p"),
    (lambda: S.symmetry_identities(1, _HUGE), "d"),
    (lambda: S.regularizer_identities(_HUGE), "p"),
    (lambda: S.gradient_identities(1, _HUGE), "d"),
])
def test_huge_symbolic_sizes_fail_at_once(call, arg: str) -> None:
    with pytest.raises(ValueError, match=rf"^{arg} must be at most \d+, got {_HUGE}"):
        call()
