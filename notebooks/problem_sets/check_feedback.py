"""Short feedback from the problem sets' checks.

scripts/editions.py copies this code into the first code cell of each problem set (otter's
"Initialize Otter" cell), so the notebook needs no file beside it: ``grader`` is a
:class:`BriefGrader`, otter's ``Notebook`` with brief feedback. A failing ``grader.check("q2_loo_weights")``
then prints the question and each failing check's message, one line each, instead of otter's
doctest trace; ``grader.check("q2_loo_weights", verbose=True)`` (or ``grader.verbose = True``
for every check) prints otter's full report. Grading is unchanged: ``otter run`` records the
same results, and the trusted grader (scripts/grade.py) never runs this cell.
"""

import otter
from otter.check.utils import list_available_tests

HOW_TO_SEE_MORE = 'otter\'s full report: grader.check("{name}", verbose=True)'


def failure_message(report):
    """The message of the first failing example in otter's doctest ``report`` of a test case:
    the exception's text (without ``AssertionError: ``), or what the example printed."""
    lines = report.splitlines()
    for index, line in enumerate(lines):
        if line in ("Exception raised:", "Got:"):
            block = []
            for later in lines[index + 1:]:
                if not later.startswith("    "):
                    break
                block.append(later[4:])
            if line == "Got:":
                return "the check printed: " + " ".join(part.strip() for part in block)
            message = [part for part in block if part and not part.startswith((" ", "Traceback"))]
            return " ".join(message).removeprefix("AssertionError: ") or "a check failed"
    return report.strip().splitlines()[-1] if report.strip() else "a check failed"


def brief_lines(test_file):
    """``name: all public checks pass``, or ``name: message`` for each failing check."""
    failing = [result for result in test_file.test_case_results
               if not result.passed and not result.test_case.hidden]
    if not failing:
        return [f"{test_file.name}: all public checks pass"]
    return [f"{test_file.name}: {failure_message(result.message)}" for result in failing]


class Feedback:
    """What a check shows in the notebook: the brief lines, or otter's report when verbose."""

    def __init__(self, results, verbose):
        self.results, self.verbose = results, verbose

    def __repr__(self):
        if self.verbose:
            return "\n\n".join(result.summary(public_only=True) for result in self.results)
        lines = [line for result in self.results for line in brief_lines(result)]
        failing = [result.name for result in self.results if not result.passed_all_public]
        if failing:
            lines.append(HOW_TO_SEE_MORE.format(name=failing[0]))
        return "\n".join(lines)


class BriefGrader(otter.Notebook):
    """otter's ``Notebook`` grader whose ``check`` and ``check_all`` show :class:`Feedback`.

    otter runs the checks in the globals of its method's caller, here this class's methods:
    defined in the notebook's own cell, they have the notebook's globals."""

    verbose = False

    def check(self, question, global_env=None, verbose=None):
        """Run the question's public checks (in ``global_env`` if given)."""
        result = super().check(question, global_env)
        return Feedback([result], self.verbose if verbose is None else verbose)

    def check_all(self, verbose=None):
        """Run every question's public checks (nothing in grading mode, as otter's own)."""
        if type(self)._grading_mode:
            return None
        results = []
        for name in list_available_tests(self._tests_dir, self._nbmeta_config):
            results.append(super().check(name))
        return Feedback(results, self.verbose if verbose is None else verbose)
