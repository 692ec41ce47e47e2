"""python -m attnbook.claim: one claim's verdict record, re-decided or as stored."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from attnbook import claim, ledger

ROOT = Path(__file__).resolve().parents[1]


def test_stored_record_of_a_claim_is_the_ledgers_row() -> None:
    printed, _ = claim.decide("p1-infinite-data-factorization", stored=True)
    rows, _ = ledger.ledger_rows(ledger.load_claims())
    row = next(r for r in rows if r.claim["id"] == "p1-infinite-data-factorization")
    assert printed.verdict == row.printed.verdict
    assert printed.verdict.measurements == row.printed.verdict.measurements


def test_the_command_prints_the_record_as_json_then_the_line() -> None:
    done = subprocess.run([sys.executable, "-m", "attnbook.claim",
                           "p1-infinite-data-factorization", "--stored"],
                          capture_output=True, text=True, cwd=ROOT, check=True)
    record_text, _, rest = done.stdout.rpartition("}\n")
    record = json.loads(record_text + "}")
    assert record["id"] == "p1-infinite-data-factorization" and record["label"] == "[summary]"
    assert record["status"] == "reproduced" and record["measurements"][0]["op"] == "<="
    assert "weighted matrix factorization: reproduced" in rest and "stored outputs" in rest


def test_an_unknown_claim_lists_the_known_ones() -> None:
    done = subprocess.run([sys.executable, "-m", "attnbook.claim", "p1-nothing"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2
    assert "no claim 'p1-nothing'" in done.stderr and "p1-sgd-2000" in done.stderr
