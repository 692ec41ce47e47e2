"""Tests of attnbook.verdicts: verdicts on the papers' claims computed from numbers."""

from __future__ import annotations

import numpy as np
import pytest

from attnbook import verdicts
from attnbook.verdicts import NOT_REPRODUCED, NOT_TESTABLE, PARTLY, REPRODUCED


def test_single_value_each_direction_and_reason_shows_threshold():
    v = verdicts.verdict("gap stays small", 0.02, 0.05, direction="<=", quantity="gap")
    assert v.status == REPRODUCED
    assert "0.02 <= 0.05" in v.reason and str(v).startswith("gap stays small: reproduced")
    assert verdicts.verdict("c", 0.07, 0.05, direction="<=").status == NOT_REPRODUCED
    assert verdicts.verdict("c", 0.05, 0.05, direction="<").status == NOT_REPRODUCED
    assert verdicts.verdict("c", 0.05, 0.05, direction=">=").status == REPRODUCED
    assert verdicts.verdict("c", 2.0, 1.0, direction=">").status == REPRODUCED
    failing = verdicts.verdict("c", 0.07, 0.05, quantity="gap")
    assert "fails <= 0.05" in failing.reason and "0.07" in failing.reason


def test_several_values_give_partly_and_partial_threshold_gives_half_credit():
    v = verdicts.verdict("norms grow", [1.5, 0.2, 2.0], 1.0, direction=">",
                         quantity="growth", labels=["adam", "sgd", "noisy"])
    assert v.status == PARTLY
    assert "growth sgd = 0.2: fails > 1" in v.reason
    assert verdicts.verdict("c", [0.1, 0.2], [0.5, 0.3]).status == REPRODUCED
    assert verdicts.verdict("c", [0.6, 0.4], [0.5, 0.3]).status == NOT_REPRODUCED
    half = verdicts.verdict("c", 0.08, 0.05, partial=0.1, quantity="err")
    assert half.status == PARTLY and "meets partial <= 0.1" in half.reason
    assert verdicts.verdict("c", 0.2, 0.05, partial=0.1).status == NOT_REPRODUCED


def test_missing_measurement_is_not_testable_and_bad_input_raises():
    assert verdicts.verdict("c", None, 1.0).status == NOT_TESTABLE
    nan = verdicts.verdict("c", [1.0, np.nan], 2.0, labels=["a", "b"])
    assert nan.status == NOT_TESTABLE and "b" in nan.reason
    assert verdicts.not_testable("c", "no data").status == NOT_TESTABLE
    with pytest.raises(ValueError, match="reason"):
        verdicts.not_testable("c", "")
    with pytest.raises(ValueError, match="direction"):
        verdicts.verdict("c", 1.0, 2.0, direction="=")
    with pytest.raises(ValueError, match="partial must be looser"):
        verdicts.verdict("c", 1.0, 2.0, direction="<=", partial=1.0)
    with pytest.raises(ValueError, match="labels"):
        verdicts.verdict("c", [1.0, 2.0], 3.0, labels=["a"])
    with pytest.raises(ValueError, match="threshold"):
        verdicts.verdict("c", [1.0, 2.0], [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match="value"):
        verdicts.verdict("c", "big", 1.0)


def test_combine_merges_sub_claims():
    ok = verdicts.verdict("a", 1.0, 2.0)
    bad = verdicts.verdict("b", 3.0, 2.0)
    skip = verdicts.not_testable("c", "no data")
    assert verdicts.combine("all", [ok, ok]).status == REPRODUCED
    assert verdicts.combine("all", [bad, bad]).status == NOT_REPRODUCED
    mixed = verdicts.combine("all", [ok, bad, skip])
    assert mixed.status == PARTLY and "not testable: c" in mixed.reason
    assert verdicts.combine("all", [skip]).status == NOT_TESTABLE
    capped = verdicts.combine("all", [ok, skip])      # never reproduced beyond what was measured
    assert capped.status == PARTLY and "not testable: c" in capped.reason
    with pytest.raises(ValueError):
        verdicts.combine("all", [])


def test_interval_verdict_decides_only_when_the_interval_is_on_one_side() -> None:
    assert verdicts.interval_verdict("c", (-1.6, -1.3), -1.2).status == verdicts.REPRODUCED
    assert verdicts.interval_verdict("c", (-1.1, -0.7), -1.2).status == verdicts.NOT_REPRODUCED
    straddles = verdicts.interval_verdict("c", (-1.3, -1.0), -1.2, quantity="exponent's 95%")
    assert straddles.status == verdicts.NOT_TESTABLE
    assert "exponent's 95% interval [-1.30, -1.00] contains the threshold -1.20" in straddles.reason
    with pytest.raises(ValueError, match="interval must be"):
        verdicts.interval_verdict("c", (1.0, 0.0), 0.5)


def test_values_below_the_resolution_print_as_a_bound_and_still_decide() -> None:
    below = verdicts.verdict("c", [1e-17, 0.5], 0.1, resolution=1e-14)
    assert below.status == verdicts.PARTLY
    assert "#0 < 1e-14 <= 0.1" in below.reason and "#1 = 0.5: fails <= 0.1" in below.reason
    with pytest.raises(ValueError, match="resolution"):
        verdicts.verdict("c", 1.0, 2.0, resolution=-1.0)


def test_verdict_table_prints_the_ledger_lines_and_renders_one_row_per_claim() -> None:
    main = verdicts.verdict("claim a", [1.0, 3.0], 2.0, labels=["x", "y"])
    part = verdicts.verdict("sub b", 3.0, 2.0)
    table = verdicts.verdict_table([("[summary]", main, [part]), ("[choice]", part)])
    assert str(table).splitlines() == [f"[summary]   {main}", f"              {part}",
                                       f"[choice]    {part}"]
    rendered = table._repr_html_()
    assert rendered.count("<tr>") == 3                 # the header and one row per claim
    assert "<strong>partly reproduced</strong>" in rendered
    assert main.reason.split("; ")[0] in rendered.replace("&lt;", "<")
    assert "<br>" in rendered                          # one measured value a line
    with pytest.raises(TypeError, match=r"rows\[1\]: expected \(label, Verdict\)"):
        verdicts.verdict_table([("[summary]", main), ("[choice]", "reproduced")])
