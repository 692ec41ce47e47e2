"""Guards of the problem sets' hidden checks (shipped in the autograder only).

Every hidden check loads this file afresh into a private namespace
(``exec(open("grading_checks.py").read(), _guard := {})``), so no name in it existed while the
submission ran, and then:

* ``_guard["untampered"]()`` fails when a submission replaced a function of numpy or attnlib
  (``np.allclose = lambda *a, **k: True``): every function reachable as an attribute of a loaded
  numpy or attnlib module must be defined inside numpy's or attnlib's installed files (or be one
  of numpy's compiled functions), not in a notebook cell;
* ``_guard["call"](function, *args, allowed=(...))`` calls the student's function under a
  profiler and fails when it entered an attnlib function other than those in ``allowed`` (by
  qualified name such as ``"attnlib.population.spd_sqrt"``), however it was reached: an alias,
  ``getattr`` on a name read from the test files, a copy of the function object. Every hidden
  check calls the answers through it, and ``allowed`` lists everything the exercise lets them
  use: the trusted grader withholds the rest in its sandbox (``GROUPS`` below);
* ``_guard["close"](actual, expected)`` compares with array operators and methods only
  (``ndarray`` methods cannot be rebound from Python), never through numpy module functions.

These in-process guards serve ``otter run`` / Gradescope, where the checks run in the
submission's own process, and a submission can defeat them (rewrite this file or the tests on
disk, switch the profiler off). ``scripts/grade.py`` is the trusted path: it runs the notebook in
a sandbox, fetches only the values its answer functions return on the checks' inputs, and runs
these checks in its own process with the answers replaced by those values (``GROUPS`` below).

A check never takes an answer's own report as evidence (its error bar, or a value the prompt
states): a Monte Carlo answer gets a seeded generator and is compared with the same draws made
by the check itself.
"""

import os
import sys

# The trusted grader (scripts/grade.py) runs a submission once per group of questions, in a
# sandbox whose attnlib withholds every function the group's checks do not allow (their
# ``allowed=`` lists; scripts/library_wall.py keeps those, what the setup cells call and what all
# of them reach, and replaces every other body with a raise): problem set -> groups of questions.
# A question whose allowed functions compute another question's answer needs a group of its own:
# problem set 3's Gibbs mean may run ``langevin.euler_maruyama``, which takes question 1's
# Euler-Maruyama step. Read with ast.literal_eval.
GROUPS = {
    "ps1_part1_theory": [
        ("q1_softmax", "q2_loo_weights", "q3_population_loss", "q4_factor", "q5_balance_gradient"),
    ],
    "ps2_part1_experiments": [("q1_ols", "q2_ols_risk", "q3_gradient_descent", "q4_tilting")],
    "ps3_part2_langevin_villani": [
        ("q1_euler_maruyama",),
        ("q2_gibbs_density", "q3_villani", "q4_gibbs_mean", "q5_lora_symmetry"),
    ],
    "ps4_part2_langevin_darcy_bridge": [
        ("q1_hitting_time", "q2_patchify", "q3_darcy_residual", "q4_preconditioner"),
    ],
}

# The written questions (``manual: true``, marked by hand with the rubric), in notebook order, and
# their points: columns of the grader's sheet. Read with ast.literal_eval.
WRITTEN = {
    "ps1_part1_theory": {"q6_written_tilting": 3},
    "ps2_part1_experiments": {"q5_written_ingredients": 3, "q6_written_finite_n": 3},
    "ps3_part2_langevin_villani": {"q6_written_villani": 3},
    "ps4_part2_langevin_darcy_bridge": {"q5_written_gibbs_offset": 3},
}

import attnlib  # noqa: F401  (its directory is where its functions must be defined)

_PACKAGES = ("numpy", "attnlib")
# modules whose functions a submission could replace to fool a comparison or the profiler
_SCANNED = ("builtins", "sys", "math", "operator")


def _home(package):
    module = sys.modules[package]
    return module.__path__[0]


def _defined_in(code, directory):
    return code.co_filename.startswith(directory)


def untampered():
    """Assert that no function of numpy, attnlib, builtins, sys, math or operator was replaced
    by one defined outside the installed packages (a notebook cell's code)."""
    installed = (sys.prefix, sys.base_prefix, sys.exec_prefix, _home("attnlib"), "<frozen ")
    replaced = []
    for name, module in list(sys.modules.items()):
        if module is None or not (name.split(".")[0] in _PACKAGES or name in _SCANNED):
            continue
        for attribute, value in list(vars(module).items()):
            if type(value) is not _FUNCTION:  # compiled functions cannot come from a notebook cell
                continue
            if not value.__code__.co_filename.startswith(installed):
                replaced.append(f"{name}.{attribute}")
    assert not replaced, (f"the submission replaced {', '.join(sorted(replaced)[:5])}: "
                          "answers must not change numpy, attnlib or Python's builtins")


_FUNCTION = type(untampered)


def _attnlib_name(code, home):
    relative = code.co_filename[len(home):].lstrip("/").removesuffix(".py").replace("/", ".")
    module = "attnlib" if relative == "__init__" else "attnlib." + relative
    return f"{module}.{code.co_qualname}"


def call(function, *args, allowed=()):
    """``function(*args)``, asserting that the only attnlib functions it entered itself (not
    from inside attnlib) are those of ``allowed``."""
    home = _home("attnlib")
    entered = set()

    checks = os.path.join(home, "_validation.py")   # input checks and their decorators

    def entered_from_outside(frame):
        """No attnlib function (other than its input checks and their decorators' wrappers)
        is anywhere up the stack: the answer itself called into attnlib here."""
        caller = frame.f_back
        while caller is not None:
            if _defined_in(caller.f_code, home) and caller.f_code.co_filename != checks:
                return False
            caller = caller.f_back
        return True

    def profiler(frame, event, _arg):
        if (event == "call" and _defined_in(frame.f_code, home)
                and frame.f_code.co_filename != checks and entered_from_outside(frame)):
            entered.add(_attnlib_name(frame.f_code, home))

    previous = sys.getprofile()
    sys.setprofile(profiler)
    try:
        result = function(*args)
    finally:
        intact = sys.getprofile() is profiler
        sys.setprofile(previous)
    assert intact, "the answer switched off the grader's profiler"
    bad = sorted(name for name in entered if name not in allowed)
    assert not bad, (f"{getattr(function, '__name__', 'the answer')} calls {', '.join(bad)}: "
                     "the exercise asks you to write it yourself")
    return result


def close(actual, expected, *, rtol=1e-7, atol=1e-9):
    """True when ``|actual - expected| <= atol + rtol |expected|`` entry by entry, with the shapes
    equal and ``actual`` a numpy array where ``expected`` is one; NaN is never close."""
    if getattr(expected, "shape", ()) == ():
        try:
            actual = float(actual)
        except (TypeError, ValueError):
            return False
        return abs(actual - float(expected)) <= atol + rtol * abs(float(expected))
    if type(actual) is not type(expected) or actual.shape != expected.shape:
        return False
    return bool((abs(actual - expected) <= atol + rtol * abs(expected)).all())
