"""Re-decide one claim of the ledger and print its verdict record.

Usage (from the repository root, with .venv's Python)::

    python -m attnbook.claim CLAIM_ID [--stored]

``CLAIM_ID`` is a claim's id in ``book/claims.yml`` (``p1-sgd-2000``, ``p2-lora-villani``,
...). The page that decides the claim (its chapter, or its page in the Reproduction report)
runs on a fresh kernel, in memory: it loads its stored runs and replays their prefixes as the
book does, and nothing is written. The claim's record is printed as JSON (claim, status,
reason, every measured value with its threshold and spread, the sub-verdicts), followed by its
readable line and the seconds it took. ``--stored`` prints the record stored in the page's
outputs instead, at once. Unknown ids get the list of known ones.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from attnbook import ledger

__all__ = ["decide"]


def _claim(claim_id: str, claims: dict) -> dict:
    known = {claim["id"]: claim for claim in claims["claims"]}
    if claim_id not in known:
        raise KeyError(f"no claim {claim_id!r} in book/claims.yml; the claims are: "
                       f"{', '.join(known)}")
    return known[claim_id]


def decide(claim_id: str, *, stored: bool = False, root: Path = ledger.ROOT
           ) -> tuple[ledger.Printed, float]:
    """The verdict the book's page shows for claim ``claim_id`` and the seconds it took: the
    page executed afresh on a new kernel (``stored=False``) or its stored outputs."""
    claim = _claim(claim_id, ledger.load_claims())
    path = root / claim["notebook"]
    start = time.perf_counter()
    notebook = json.loads(path.read_text())
    if not stored:
        import nbformat
        from nbclient import NotebookClient

        notebook = nbformat.read(path, as_version=4)
        NotebookClient(notebook, timeout=600, kernel_name="python3", allow_errors=False,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        notebook = json.loads(nbformat.writes(notebook))
    shown = [p for p in ledger.printed_verdicts(path, notebook)
             if p.verdict.claim == claim["claim"] and p.section == claim["section"]]
    if not shown:
        raise LookupError(f"{claim['notebook']} shows no verdict for {claim_id!r} in section "
                          f"{claim['section']!r}")
    return shown[-1], time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("claim_id", help="a claim's id in book/claims.yml, e.g. p1-sgd-2000")
    parser.add_argument("--stored", action="store_true",
                        help="print the record stored in the page's outputs (no execution)")
    args = parser.parse_args(argv)
    try:
        printed, seconds = decide(args.claim_id, stored=args.stored)
    except (KeyError, LookupError) as error:
        print(f"error: {error.args[0]}", file=sys.stderr)
        return 2
    verdict = ledger.with_shown_parts(printed)
    print(json.dumps({"id": args.claim_id, "label": printed.label, **verdict.record()},
                     indent=1, ensure_ascii=False))
    print(f"{printed.label or ''} {printed.verdict}".strip())
    how = "stored outputs of" if args.stored else "decided afresh by"
    print(f"({how} {printed.notebook}, section {printed.section!r}, in {seconds:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
