"""Write the claims ledger page from the verdict records in the chapters' executed outputs.

Usage (from the repository root, with .venv's Python; both README commands run it before the
book build)::

    python -m attnbook.ledger [--check] [--verify --root ROOT] [--json PATH]

It reads ``book/claims.yml`` (every checkable [summary]/[abstract] claim of the two papers, the
chapter and section that tests it) and, from the stored outputs of the notebooks, the verdict
records that every shown :class:`attnbook.verdicts.VerdictTable` puts in its output (MIME type
:data:`attnbook.verdicts.RECORD_MIME`: label, claim, status, reason, each measured value with
its threshold, direction, printed form and spread, the sub-verdicts). No printed text is read
back. It writes ``book/ledger.md``:

* one screen first: a prose summary computed from the rows (how many claims of each paper,
  how many of them have each verdict, and of the headline claims, ``headline: true`` in the
  claims file), the verdicts counted per part in a small table, and "Headline claims": a
  compact table per paper, one row per claim with each of its readings on a line (verdict
  badge, label, short name linked to its full entry) and the section that tests it;
* one box per claim for each paper, the source's reading and the book's stricter readings of
  it (**[choice]**) together: each reading with its own anchor (``#claim-<id>``), verdict
  badge, text, measured numbers and thresholds from the records, and links that say whether
  they lead to a chapter or a report page; headline readings marked with a badge. The texts'
  ASCII maths ("n^-2 log^6 n", "Sigma_hat^-1", "<= 1e-3") is shown as maths (:func:`maths`);
* how the page is made, and the statements of the sources that make no checkable claim, and
  why;

and ``book/ledger.json``, the same rows as data (the book publishes it beside the page), with
each claim's anchor on the page and the sections and figure that show its verdict and
evidence, from which ``book/_static/book.js`` links those sections back to the claim's entry.

It fails (exit status 1, one message per problem, nothing written) when a claim has no
verdict record and the claims file does not say why it is not yet tested, when a verdict is
shown outside the section the claims file names or twice there with different text, when a
labelled [summary]/[abstract] verdict is shown in a section where the claims file does not list
it, or when a record's status disagrees with its own measurements (or sub-verdicts).
``--check`` does all of this and writes nothing. ``--verify`` compares the records of
``--root``'s notebooks (the build's fresh execution) with the stored ones: verdicts exactly,
each measured value within its recorded spread (or, with no spread, as printed), naming the
claim and the value that differ.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml
from docutils.nodes import make_id

from attnbook import claims as book_claims
from attnbook.verdicts import (NOT_REPRODUCED, NOT_TESTABLE, PARTLY, RECORD_MIME, REPRODUCED,
                               STATUSES, Measurement, Verdict, combine, status_of_levels)

__all__ = ["Printed", "Row", "load_claims", "printed_verdicts", "inconsistencies", "ledger_rows",
           "summary", "render", "verdict_differences", "row_differences", "ledger_records",
           "with_shown_parts", "maths", "groups", "page_name", "value_items", "targets",
           "main"]

ROOT = Path(__file__).resolve().parents[1]
CLAIMS = ROOT / "book" / "claims.yml"
LEDGER = ROOT / "book" / "ledger.md"
NOT_YET_TESTED = "not yet tested"
SOURCE_LABELS = ("[summary]", "[abstract]")
CHOICE = "[choice]"      # a row with the book's stricter reading of a source claim



@dataclass(frozen=True)
class Printed:
    """One verdict record in a notebook's stored output: where it is, its label and verdict,
    and its sub-verdicts: the verdict's own parts (:func:`attnbook.verdicts.combine`), else
    those shown under it."""

    notebook: str
    cell: int
    section: str
    label: str | None
    verdict: Verdict
    parts: tuple[Verdict, ...] = ()


def headings(notebook: dict) -> list[tuple[int, int, str]]:
    """(cell index, level, title) of every markdown heading, in order."""
    found = []
    for index, cell in enumerate(notebook["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        fence = False
        for line in "".join(cell["source"]).splitlines():
            if line.lstrip().startswith(("```", ":::")):
                fence = not fence
            match = re.match(r"^(#{1,6})\s+(.*?)\s*$", line)
            if match and not fence:
                found.append((index, len(match[1]), match[2]))
    return found


def printed_verdicts(path: Path, notebook: dict | None = None) -> list[Printed]:
    """Every verdict record shown by a code cell of the notebook at ``path`` (or of
    ``notebook``, that notebook's contents, when given)."""
    notebook = json.loads(path.read_text()) if notebook is None else notebook
    titles = {index: title for index, _, title in headings(notebook)}
    section, found = "", []
    for index, cell in enumerate(notebook["cells"]):
        section = titles.get(index, section)
        if cell["cell_type"] != "code":
            continue
        for output in cell.get("outputs", []):
            for row in output.get("data", {}).get(RECORD_MIME, {}).get("rows", []):
                verdict = Verdict.from_record(row["verdict"])
                parts = verdict.parts or tuple(Verdict.from_record(p) for p in row["parts"])
                found.append(Printed(path.name, index, section, row["label"].strip() or None,
                                     verdict, parts))
    return found


def _fragment_problems(m: Measurement) -> list[str]:
    """Where a measurement's credit disagrees with its value, threshold and direction."""
    if m.earned_level() != m.level:
        return [f"{m.name} = {m.value:g} is recorded with credit {m.level}, its numbers give "
                f"{m.earned_level()} ({m.op} {m.threshold:g})"]
    return []


def inconsistencies(verdict: Verdict) -> list[str]:
    """Where a recorded status disagrees with the verdict's own numbers.

    Each measurement's credit must follow from its value, direction and thresholds, and the
    status from the credits by the rule of ``attnbook.verdicts`` (all pass: reproduced; none
    even partly: not reproduced; otherwise partly). A combined verdict must follow the rule of
    ``verdicts.combine`` from its parts; a not-testable verdict must have a reason; any other
    verdict must carry its measurements or its parts.
    """
    if verdict.status == NOT_TESTABLE and not verdict.parts:
        return [] if verdict.reason.strip() else ["a not-testable verdict without a reason"]
    if verdict.measurements:
        problems = [p for m in verdict.measurements for p in _fragment_problems(m)]
        expected = status_of_levels([m.level for m in verdict.measurements])
        if expected != verdict.status:
            problems.append(f"status {verdict.status!r} but its measurements give {expected!r}")
        return problems
    if verdict.parts:
        expected = combine(verdict.claim, verdict.parts)
        if (expected.status, expected.reason) != (verdict.status, verdict.reason):
            return [f"status {verdict.status!r} ({verdict.reason!r}) but its parts give "
                    f"{expected.status!r} ({expected.reason!r})"]
        return []
    return ["a verdict with neither measurements nor sub-verdicts"]


def evidence_notebook(claim: dict) -> str:
    """The notebook whose section ``evidence`` shows the measurement: ``evidence_notebook``
    when the claim gives one (a chapter, when the verdict is printed on its Reproduction
    report page), else the claim's ``notebook``."""
    return claim.get("evidence_notebook") or claim["notebook"]


def load_claims(path: Path = CLAIMS) -> dict:
    """The claims file, checked for its required fields."""
    data = yaml.safe_load(path.read_text())
    required = ("id", "paper", "label", "claim", "notebook", "section", "evidence")
    ids = set()
    texts = book_claims.registry()
    for claim in data["claims"]:
        # the claim's text is typed once: in its chapter module of attnbook.claims
        if claim.get("id") in texts:
            if "claim" in claim:
                raise ValueError(f"{path.name}: claim {claim['id']} has its text in "
                                 "attnbook.claims; remove its 'claim' field here")
            claim["claim"] = texts[claim["id"]]
        missing = [key for key in required if not claim.get(key)]
        if missing:
            raise ValueError(f"{path.name}: claim {claim.get('id', '?')} lacks {missing}")
        if claim["label"] not in (*SOURCE_LABELS, CHOICE) or claim["paper"] not in (1, 2):
            raise ValueError(f"{path.name}: claim {claim['id']}: label must be one of "
                             f"{(*SOURCE_LABELS, CHOICE)} and paper 1 or 2")
        cause = claim.get("cause")
        if cause is not None and not all(cause.get(k) for k in ("text", "notebook", "section")):
            raise ValueError(f"{path.name}: claim {claim['id']}: cause needs text, notebook "
                             "and section")
        if claim.get("headline", False) not in (True, False):
            raise ValueError(f"{path.name}: claim {claim['id']}: headline must be true or "
                             "absent")
        if claim.get("headline") and not claim.get("short"):
            raise ValueError(f"{path.name}: claim {claim['id']}: a headline claim needs a "
                             "short name (short)")
        if claim["id"] in ids:
            raise ValueError(f"{path.name}: claim id {claim['id']} appears twice")
        ids.add(claim["id"])
    source = None
    for claim in data["claims"]:
        # a [choice] row is the stricter reading of the source row before it: both are
        # headline rows or neither is, so the headline list never shows one reading alone
        if claim["label"] != CHOICE:
            source = claim
        elif source is None or bool(claim.get("headline")) != bool(source.get("headline")):
            raise ValueError(f"{path.name}: claim {claim['id']} ([choice]) and the source row "
                             f"before it ({source['id'] if source else 'none'}) must both be "
                             "headline rows or neither")
    for bullet in data.get("design_notes", []):
        unknown = set(bullet.get("claims", [])) - ids
        if unknown or not (bullet.get("claims") or bullet.get("not_checkable")):
            raise ValueError(f"{path.name}: design-note bullet at {bullet['note']}:"
                             f"{bullet['line']} needs known claims or not_checkable "
                             f"(unknown: {sorted(unknown)})")
    return data


@dataclass(frozen=True)
class Row:
    """One ledger row: the claim and the verdict a chapter showed for it (None: not yet);
    ``figure`` names the evidence section's first named figure (None: it has none)."""

    claim: dict
    printed: Printed | None
    chapter: str
    figure: str | None


def chapter_title(notebook: dict) -> str:
    """'Chapter N' (or the page title) from the notebook's first heading."""
    title = next(t for _, level, t in headings(notebook) if level == 1)
    return title.split(":")[0]


def section_figure(notebook: dict, section: str) -> str | None:
    """The name of the first named figure under heading ``section`` (up to the next heading):
    myst-nb's ``mystnb.figure.name`` cell metadata, the figure's label and HTML id; None when
    the section shows no named figure."""
    titles = {index: title for index, _, title in headings(notebook)}
    current = None
    for index, cell in enumerate(notebook["cells"]):
        current = titles.get(index, current)
        name = cell.get("metadata", {}).get("mystnb", {}).get("figure", {}).get("name")
        if current == section and name and any(
                "image/png" in o.get("data", {}) for o in cell.get("outputs", [])):
            return str(name)
    return None


def ledger_rows(data: dict, root: Path = ROOT) -> tuple[list[Row], list[str]]:
    """One row per claim of ``data``, and every problem found (empty when all is well)."""
    problems: list[str] = []
    rows: list[Row] = []
    notebooks = {path.name: path for path in sorted((root / "notebooks").glob("*.ipynb"))}
    printed = [p for path in notebooks.values() for p in printed_verdicts(path)]
    for p in printed:
        for problem in inconsistencies(p.verdict):
            problems.append(f"{p.notebook} cell {p.cell}: {p.verdict.claim!r}: {problem}")
    known = {(Path(c["notebook"]).name, c["section"], c["claim"]) for c in data["claims"]}
    for p in printed:
        if p.label in SOURCE_LABELS and (p.notebook, p.section, p.verdict.claim) not in known:
            problems.append(f"{p.notebook} cell {p.cell} prints a {p.label} verdict in section "
                            f"{p.section!r} that book/claims.yml does not list there: "
                            f"{p.verdict.claim!r}")
    for claim in data["claims"]:
        name = Path(claim["notebook"]).name
        if name not in notebooks:
            problems.append(f"claim {claim['id']}: no notebook {claim['notebook']}")
            continue
        notebook = json.loads(notebooks[name].read_text())
        evidence_name = Path(evidence_notebook(claim)).name
        if evidence_name not in notebooks:
            problems.append(f"claim {claim['id']}: no notebook {evidence_notebook(claim)}")
            continue
        evidence = json.loads(notebooks[evidence_name].read_text())
        for key, where, page in (("section", name, notebook),
                                 ("evidence", evidence_name, evidence)):
            if claim[key] not in {t for _, _, t in headings(page)}:
                problems.append(f"claim {claim['id']}: {where} has no heading {claim[key]!r}")
        cause = claim.get("cause")
        if cause is not None and (Path(cause["notebook"]).name not in notebooks or cause[
                "section"] not in {t for _, _, t in headings(json.loads(
                    notebooks[Path(cause["notebook"]).name].read_text()))}):
            problems.append(f"claim {claim['id']}: its cause links to no heading "
                            f"{cause['section']!r} of {cause['notebook']}")
        mine = [p for p in printed if p.notebook == name and p.verdict.claim == claim["claim"]]
        here = [p for p in mine if p.section == claim["section"]]
        if len({p.verdict for p in here}) > 1:
            problems.append(f"claim {claim['id']}: {name} prints different verdicts for it "
                            f"in section {claim['section']!r}")
        if mine and not here:
            problems.append(f"claim {claim['id']}: printed in section {mine[0].section!r}, "
                            f"not in {claim['section']!r}")
        for p in here:
            if p.label is not None and p.label != claim["label"]:
                problems.append(f"claim {claim['id']}: printed with label {p.label}, "
                                f"book/claims.yml says {claim['label']}")
        if here and claim.get("not_yet_tested"):
            problems.append(f"claim {claim['id']}: {name} now shows a verdict; remove "
                            "not_yet_tested from book/claims.yml")
        if not here and not claim.get("not_yet_tested"):
            problems.append(f"claim {claim['id']}: no cell of {name} shows a verdict "
                            f"'{claim['claim']}: <status> (<reason>)' and book/claims.yml "
                            "gives no not_yet_tested reason")
        chosen = here[-1] if here else None
        rows.append(Row(claim, chosen, chapter_title(notebook),
                        section_figure(evidence, claim["evidence"])))
    return rows, problems


_ESCAPE = re.compile(r"([\\`*_\[\]<>$|{}~#])")


def escape(text: str) -> str:
    """``text`` with Markdown/MyST punctuation backslash-escaped, so it renders literally."""
    return _ESCAPE.sub(r"\\\1", " ".join(text.split()))


def heading_anchor(title: str) -> str:
    """The HTML id Sphinx gives the section titled ``title`` (docutils ``make_id`` of its text)."""
    return make_id(title.replace("$", ""))


# --- ASCII maths in the ledger's own texts (claims, measured quantities, thresholds) -------
# The claims file and the verdict records write maths in ASCII ("n^-2 log^6 n", "Sigma_hat^-1",
# "dist_P(S) < sqrt(2 s_min(X*))", "<= 1e-3"). The page shows it as maths: maths() finds the runs
# of a text that are maths (a subscript, superscript, hat or star, a Greek letter's name, a
# norm, a square root, a number in e-notation, with the single letters, numbers, operators and
# function names around them) and writes them as $...$ (or, inside an HTML link, as HTML with
# sub- and superscripts); the rest is escaped as escape() does, with <=, >= and -> as symbols.

_GREEK = {"alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "eps": "ε", "epsilon": "ε",
          "zeta": "ζ", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ",
          "nu": "ν", "xi": "ξ", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "chi": "χ",
          "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ", "Lambda": "Λ",
          "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω"}
_TEX_GREEK = {name: "\\varepsilon" if name.startswith("eps") else "\\" + name for name in _GREEK}
_FUNCTIONS = {"log", "exp", "det", "max", "min", "sup", "inf"}
_TOKEN = re.compile(r"""
    (?P<norm>\|\|[^|\s]+\|\|(?:_[A-Za-z0-9]+)?)
  | (?P<sqrt>sqrt\()
  | (?P<log10>log10\b)
  | (?P<number>\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![A-Za-z0-9]))
  | (?P<word>[A-Za-z]+(?:_hat)?(?:_[A-Za-z0-9]+)?(?:\^-?[A-Za-z0-9]+)?\*?)
  | (?P<sup>\^-?[A-Za-z0-9]+)
  | (?P<op><=|>=|->|[-+*/=<>(),])
  | (?P<space>\s+)
  | (?P<other>.)""", re.VERBOSE)
_WORD = re.compile(r"(?P<base>[A-Za-z]+?)(?P<hat>_hat)?(?:_(?P<sub>[A-Za-z0-9]+))?"
                   r"(?:\^(?P<sup>-?[A-Za-z0-9]+))?(?P<star>\*)?$")
_E_NUMBER = re.compile(r"(?P<mantissa>\d+(?:\.\d+)?)e(?P<exponent>[-+]?\d+)$")


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens; a sqrt( takes its balanced argument along: ("sqrt", inner)."""
    found, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        kind, piece = match.lastgroup, match[0]
        position = match.end()
        if kind == "sqrt":
            depth, end = 1, position
            while end < len(text) and depth:
                depth += {"(": 1, ")": -1}.get(text[end], 0)
                end += 1
            if depth:                               # unbalanced: an ordinary word and "("
                found += [("word", "sqrt"), ("op", "(")]
                continue
            found.append(("sqrt", text[position:end - 1]))
            position = end
            continue
        if kind == "word":
            parts = _WORD.match(piece)
            if parts is None:
                kind = "text"
        found.append((kind, piece))
    return found


def _strong(token: tuple[str, str]) -> bool:
    """A token that makes its neighbourhood maths: a subscript, superscript, hat or star,
    a Greek letter, a norm, a square root, log10, a number in e-notation, grad."""
    kind, piece = token
    if kind in ("norm", "sqrt", "log10", "sup"):
        return True
    if kind == "number":
        return "e" in piece
    if kind == "word":
        parts = _WORD.match(piece)
        return bool(parts["hat"] or parts["sub"] or parts["sup"] or parts["star"]
                    or parts["base"] in _GREEK or parts["base"] == "grad")
    return False


def _weak(token: tuple[str, str]) -> bool:
    """A token that may sit inside maths: a single letter, a number, an operator, a space, a
    function name."""
    kind, piece = token
    if kind in ("number", "op", "space"):
        return True
    return kind == "word" and (len(piece) == 1 and piece != "a" or piece in _FUNCTIONS)


def _operand(token: tuple[str, str]) -> bool:
    return token[0] in ("word", "number", "norm", "sqrt", "log10")


def _spans(tokens: list[tuple[str, str]]) -> list[tuple[int, int]]:
    """Index ranges [start, end) of the maths in ``tokens``."""
    inside = [False] * len(tokens)
    for i, token in enumerate(tokens):
        if not _strong(token) or inside[i]:
            continue
        start, end = i, i + 1
        depth = 0                                   # walk left
        j = i - 1
        while j >= 0 and (_strong(tokens[j]) or _weak(tokens[j])):
            piece = tokens[j][1]
            if tokens[j] == ("op", ","):
                if depth >= 0:
                    break
            if piece == ")":
                depth += 1
            elif piece == "(":
                depth -= 1
                if depth < 0 and (j == 0 or tokens[j - 1][0] == "space"):
                    start = j
                    break
            start = j
            j -= 1
        left = [t[1] for t in tokens[start:i]]
        depth, last = left.count("(") - left.count(")"), i      # walk right
        j = i + 1
        while j < len(tokens) and (_strong(tokens[j]) or _weak(tokens[j])):
            piece = tokens[j][1]
            if tokens[j] == ("op", ",") and depth == 0:
                break
            if piece == "(":
                depth += 1
            elif piece == ")":
                if depth == 0:
                    break
                depth -= 1
            if tokens[j][0] == "number" and not _strong(tokens[j]) and tokens[j - 1][0] == "space" \
                    and _operand(tokens[last]) and all(t[0] == "space" for t in tokens[last + 1:j]):
                break                               # "sigma 0.1": a label, not a product
            if tokens[j][0] != "space":
                last = j
            end = j + 1
            j += 1
        # trim spaces and operators at the edges, then unmatched parentheses
        while True:
            while start < end and (tokens[start][0] == "space" or tokens[start][1] in
                                   ("=", "<", ">", "<=", ">=", "->", "+", "*", "/", ",", ")")
                                   or tokens[start][1] == "-" and start + 1 < end
                                   and tokens[start + 1][0] == "space"):
                start += 1
            while end > start and (tokens[end - 1][0] == "space" or tokens[end - 1][1] in
                                   ("=", "<", ">", "<=", ">=", "->", "+", "-", "*", "/", ",", "(")):
                end -= 1
            pieces = [t[1] for t in tokens[start:end]]
            opened = pieces.count("(") - pieces.count(")")
            if opened > 0 and pieces and pieces[0] == "(":
                start += 1
            elif opened < 0 and pieces and pieces[-1] == ")":
                end -= 1
            else:
                break
        pieces = [t[1] for t in tokens[start:end]]
        if pieces.count("(") != pieces.count(")") or not any(map(_strong, tokens[start:end])):
            start, end = i, i + 1                   # the token alone
        for k in range(start, end):
            inside[k] = True
    spans, k = [], 0
    while k < len(tokens):
        if inside[k]:
            begin = k
            while k < len(tokens) and inside[k]:
                k += 1
            spans.append((begin, k))
        else:
            k += 1
    return spans


def _exponent(text: str) -> str:
    return str(int(text))


def _tex(token: tuple[str, str]) -> str:
    kind, piece = token
    if kind == "norm":
        inner, _, sub = piece[2:].partition("||")
        return "\\|" + _tex_of(inner) + "\\|" + (f"_{{{sub[1:]}}}" if sub else "")
    if kind == "sqrt":
        return "\\sqrt{" + _tex_of(piece) + "}"
    if kind == "log10":
        return "\\log_{10}"
    if kind == "sup":
        return "^{" + piece[1:] + "}"
    if kind == "number":
        match = _E_NUMBER.match(piece)
        if not match:
            return piece
        power = f"10^{{{_exponent(match['exponent'])}}}"
        return power if match["mantissa"] == "1" else f"{match['mantissa']} \\times {power}"
    if kind == "op":
        return {"<=": "\\le ", ">=": "\\ge ", "->": "\\to ", "*": "\\ast "}.get(piece, piece)
    if kind == "space":
        return " "
    if kind == "word":
        parts = _WORD.match(piece)
        base = parts["base"]
        if base in _TEX_GREEK:
            tex = _TEX_GREEK[base] + " "
        elif base in _FUNCTIONS:
            tex = "\\" + base + " "
        elif base == "grad":
            tex = "\\nabla "
        elif len(base) == 1:
            tex = base
        else:
            tex = f"\\mathrm{{{base}}}"
        if parts["hat"]:
            tex = f"\\hat{{{tex.strip()}}}"
        if parts["sub"]:
            sub = parts["sub"]
            tex = tex.strip() + "_{" + (f"\\{sub}" if sub in ("min", "max") else sub) + "}"
        sup = (parts["sup"] or "") + ("*" if parts["star"] else "")
        if sup:
            tex = tex.strip() + "^{" + sup.replace("*", "\\star") + "}"
        return tex
    return piece


def _tex_span(tokens: list[tuple[str, str]]) -> str:
    """TeX of a run of tokens: a space between two operands stays a space (``\\ ``)."""
    out = []
    for k, token in enumerate(tokens):
        if token[0] == "space" and 0 < k < len(tokens) - 1 and _operand(tokens[k - 1]) \
                and _operand(tokens[k + 1]) and tokens[k - 1][1] not in (*_FUNCTIONS, "grad"):
            out.append("\\ ")
        else:
            out.append(_tex(token))
    return "".join(out).strip()


def _tex_of(text: str) -> str:
    return _tex_span(_tokens(text))


def _html(token: tuple[str, str]) -> str:
    kind, piece = token
    if kind == "norm":
        inner, _, sub = piece[2:].partition("||")
        return ("‖" + _html_of(inner) + "‖"
                + (f"<sub>{html.escape(sub[1:])}</sub>" if sub else ""))
    if kind == "sqrt":
        return "√(" + _html_of(piece) + ")"
    if kind == "log10":
        return "log<sub>10</sub>"
    if kind == "sup":
        return "<sup>" + piece[1:].replace("-", "−") + "</sup>"
    if kind == "number":
        match = _E_NUMBER.match(piece)
        if not match:
            return piece
        power = f"10<sup>{_exponent(match['exponent']).replace('-', '−')}</sup>"
        return power if match["mantissa"] == "1" else f"{match['mantissa']}×{power}"
    if kind == "op":
        return {"<=": "≤", ">=": "≥", "->": "→", "-": "−", "<": "&lt;", ">": "&gt;",
                "*": "∗"}.get(piece, piece)
    if kind == "word":
        parts = _WORD.match(piece)
        base = parts["base"]
        if base in _GREEK:
            out = _GREEK[base]
        elif base == "grad":
            out = "∇"
        elif base in _FUNCTIONS or len(base) > 1:
            out = base
        else:
            out = base
        if parts["hat"]:
            out += "\u0302"
        if len(base) == 1 or (base in _GREEK and base[0].islower()):
            out = f"<i>{out}</i>"
        if parts["sub"]:
            out += f"<sub>{html.escape(parts['sub'])}</sub>"
        sup = (parts["sup"] or "").replace("-", "−") + ("*" if parts["star"] else "")
        if sup:
            out += f"<sup>{sup}</sup>"
        return out
    return html.escape(piece)


def _html_of(text: str) -> str:
    return "".join(_html(t) for t in _tokens(text))


_SYMBOLS = (("<=", "≤"), (">=", "≥"), ("->", "→"))
_MD_ESCAPE = re.compile(r"([\\`*_\[\]<>$|{}~#])")


def _md_text(text: str) -> str:
    for ascii_form, symbol in _SYMBOLS:
        text = text.replace(ascii_form, symbol)
    return _MD_ESCAPE.sub(r"\\\1", text)


def maths(text: str, *, form: str = "myst") -> str:
    """``text`` (plain, with ASCII maths) as MyST Markdown with its maths as ``$...$``
    (``form="myst"``), or as inline HTML with sub/superscripts (``form="html"``)."""
    text = " ".join(text.split())
    tokens = _tokens(text)
    out, k = [], 0
    for start, end in _spans(tokens) + [(len(tokens), len(tokens))]:
        plain = "".join(t[1] for t in tokens[k:start])
        if form == "html":
            out.append("".join(_html(t) if t[0] == "op" and t[1] in ("<=", ">=", "->") else
                               html.escape(t[1]) for t in tokens[k:start]))
        else:
            out.append(_md_text(plain))
        if start < end:
            if form == "html":
                out.append("".join(_html(t) for t in tokens[start:end]))
            else:
                out.append("$" + _tex_span(tokens[start:end]) + "$")
        k = end
    return "".join(out)


def _link(text: str, notebook: str, section: str) -> str:
    page = Path(notebook).with_suffix(".html").name
    return f'<a href="../notebooks/{page}#{heading_anchor(section)}">{text}</a>'


BADGES = {REPRODUCED: "success", PARTLY: "warning", NOT_REPRODUCED: "danger",
          NOT_TESTABLE: "dark", NOT_YET_TESTED: "light"}


def claim_anchor_id(claim_id: str) -> str:
    """The HTML id of a claim's row: ``ledger.html#claim-<id>`` links to that one claim."""
    return "claim-" + make_id(claim_id)


def _claim_anchor(claim_id: str) -> str:
    """The claim's id and a link to itself, the row's anchor."""
    anchor = claim_anchor_id(claim_id)
    return (f'<small>`{claim_id}` <a class="claim-anchor" id="{anchor}" href="#{anchor}" '
            f'title="Link to this claim">#</a></small>')


HEADLINE_BADGE = "{bdg-primary}`headline`"
PAPERS = {1: ("Part I: fast global convergence via preconditioning", "goel2026"),
          2: ("Part II: the Villani condition, Langevin training, LoRA", "frangi2026")}
ORDER = (*STATUSES, NOT_YET_TESTED)
HEADLINES_TITLE = "Headline claims"
LEFT_OUT_TITLE = "What the ledger leaves out"
HOW_TITLE = "How this page is made"


def _badge(status: str) -> str:
    return f"{{bdg-{BADGES[status]}}}`{status}`"


def status_of(row: Row) -> str:
    """The row's verdict: the printed status, or "not yet tested"."""
    return row.printed.verdict.status if row.printed else NOT_YET_TESTED


def status_counts(rows: list[Row]) -> dict[str, int]:
    """How many of ``rows`` have each verdict, in the order of ``ORDER`` (zeros left out)."""
    statuses = [status_of(row) for row in rows]
    return {s: statuses.count(s) for s in ORDER if s in statuses}


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _counted(counts: dict[str, int], names: dict[str, str] | None = None) -> str:
    """"19 are reproduced, 9 partly reproduced and 4 not testable here", each count followed
    by ``names[status]`` in parentheses when given."""
    parts = [f"{n} {s}" + (f" ({names[s]})" if names else "") for s, n in counts.items()]
    parts[0] = parts[0].replace(" ", " is " if next(iter(counts.values())) == 1 else " are ", 1)
    return _and(parts)


def summary(rows: list[Row]) -> str:
    """The page's opening paragraph, every number computed from ``rows``: the claims per
    paper, the verdicts of all of them and of the headline claims (which the tables right
    under it name, with their verdicts)."""
    per_paper = [f"{sum(r.claim['paper'] == paper for r in rows)} of {{cite}}`{key}` "
                 f"(Part {numeral})" for (paper, (_, key)), numeral
                 in zip(PAPERS.items(), ("I", "II"))]
    choices = sum(r.claim["label"] == CHOICE for r in rows)
    counts = status_counts(rows)
    headline = [r for r in rows if r.claim.get("headline")]
    text = [f"This page checks {len(rows)} claims about the two papers: {_and(per_paper)}"
            + (f"; {choices} of them are a stricter reading chosen by this book "
               f"(**[choice]**) of a source claim, shown with it"
               if choices else "") + ".",
            f"Of all {len(rows)}, {_counted(counts)}."]
    if headline:
        text += [f"The {len(headline)} headline claims, each paper's main theorems and the main "
                 f"findings of its experiments, are listed first below and carry a "
                 f"{HEADLINE_BADGE} badge further down.",
                 f"Of these, {_counted(status_counts(headline))}.",
                 f"The other {len(rows) - len(headline)} rows are the technical claims: "
                 "intermediate results, side observations and second readings of a headline "
                 "statement."]
    return " ".join(text)


def evidence_link(row: Row) -> str:
    """The row's evidence, named: its figure's number (``{numref}``, "Fig. 5.3") when the
    evidence section shows a named figure, else a link titled by that section's heading."""
    if row.figure:
        return f"{{numref}}`{row.figure}`"
    claim = row.claim
    return _link(claim["evidence"], evidence_notebook(claim), claim["evidence"])


def _cells(row: Row) -> list[str | list[str]]:
    """Claim (with where it is tested and the evidence), measured, threshold, verdict."""
    claim, printed = row.claim, row.printed
    chapter = f"{{doc}}`{row.chapter} <../{Path(claim['notebook']).with_suffix('')}>`"
    where = (f"{chapter}, {_link(claim['section'], claim['notebook'], claim['section'])}"
             + "; evidence: " + evidence_link(row))
    printed_as = (f" <br> <small>verdict printed as: {escape(claim['claim'])}</small>"
                  if claim.get("statement") else "")
    cause = claim.get("cause")
    shared = ("" if cause is None else f" <br> <small>one cause of several rows: "
              f"{_link(escape(cause['text']), cause['notebook'], cause['section'])}</small>")
    title = ((HEADLINE_BADGE + " " if claim.get("headline") else "")
             + f"**{claim['label']}** {escape(claim.get('statement') or claim['claim'])}"
             f"{printed_as}{shared} <br> {where} <br> {_claim_anchor(claim['id'])}")
    if printed is None:
        return [title, escape(claim.get("not_yet_tested", "no verdict printed")), "",
                _badge(NOT_YET_TESTED)]
    verdict = printed.verdict
    if verdict.measurements:
        return [title, _measured(verdict), _thresholds(verdict.measurements),
                _badge(verdict.status)]
    if verdict.status == NOT_TESTABLE:
        return [title, escape(verdict.reason), "", _badge(NOT_TESTABLE)]
    testable = [p for p in printed.parts if p.status != NOT_TESTABLE]
    skipped = [p.claim for p in printed.parts if p.status == NOT_TESTABLE]
    measured = [escape(f"{p.claim}: {p.status}") + (": " + escape("; ".join(
        f"{m.name} {m.shown}" for m in p.measurements)) if p.measurements else "")
                for p in testable]
    if skipped:
        measured.append(escape(f"not testable: {', '.join(skipped)}"))
    thresholds = _thresholds([m for p in testable for m in p.measurements], partial=False)
    return [title, measured, thresholds or "per part, in the chapter section",
            f"{_badge(verdict.status)} (combined)"]


def _measured(verdict: Verdict) -> list[str]:
    return [escape(f"{m.name} {m.shown}") for m in verdict.measurements]


def _thresholds(measurements: list[Measurement] | tuple[Measurement, ...], *,
                partial: bool = True) -> list[str]:
    """Each threshold once (equal numbers once, whatever digits they were printed with), in
    the order of the measured values it belongs to."""
    shown: dict[tuple, str] = {}
    for m in measurements:
        loose = partial and m.partial is not None
        key = (m.op, m.threshold, m.partial if loose else None)
        shown.setdefault(key, f"{m.op} {m.threshold_text}"
                         + (f" (partly: {m.op} {m.partial_text})" if loose else ""))
    return [escape(text) for text in shown.values()]


def page_name(notebook: str) -> str:
    """How a link names a notebook's page, saying which kind of page it is: "chapter 4",
    "report on chapter 4" (a Reproduction report page), else its file's name in words."""
    stem = Path(notebook).stem
    if match := re.match(r"(report_)?ch0*(\d+[a-z]?)_", stem):
        return ("report on chapter " if match[1] else "chapter ") + match[2]
    return stem.replace("_", " ")


def _section_link(notebook: str, section: str) -> str:
    """A link to a section whose text names its page's kind: "chapter 3: Symmetries ..."."""
    return _link(f"{page_name(notebook)}: {html.escape(section, quote=False)}", notebook,
                 section)


def _evidence(row: Row) -> str:
    """The row's evidence, named with its page: its figure's number (``{numref}``, "Fig. 5.3
    in chapter 5") when the evidence section shows a named figure, else a link to that
    section titled by the page and the heading ("chapter 4: Spectral initialization")."""
    notebook = evidence_notebook(row.claim)
    if row.figure:
        return f"{{numref}}`Fig. %s in {page_name(notebook)} <{row.figure}>`"
    return _section_link(notebook, row.claim["evidence"])


def _split_prefix(names: list[str]) -> tuple[str, list[str]]:
    """The longest common start of ``names`` that ends between words (after ", " if it can,
    with balanced parentheses, not in the middle of "d = 5" or before a bare number), and what
    is left of each name; ("", names) when there is none worth factoring out."""
    if len(names) < 2:
        return "", names
    common = os.path.commonprefix(names)
    for separator in (", ", " "):
        cut = common.rfind(separator)
        while cut > 0:
            prefix = common[:cut]
            rests = [name[cut + len(separator):] for name in names]
            last = prefix.split(" ")[-1]
            balanced = prefix.count("(") == prefix.count(")")
            readable = not re.fullmatch(r"[=<>]+|[A-Za-z]", last) \
                and all(rests) and not any(re.match(r"[\d.=<>]", rest) for rest in rests)
            if balanced and readable and len(prefix) >= 6:
                return prefix.rstrip(","), rests
            cut = common.rfind(separator, 0, cut)
    return "", names


def _threshold(m: Measurement, partial: bool = True) -> str:
    text = maths(f"{m.op} {m.threshold_text}")
    if partial and m.partial is not None:
        text += "; partly: " + maths(f"{m.op} {m.partial_text}")
    return text


def _values(measurements: tuple[Measurement, ...] | list[Measurement], *,
            partial: bool = True) -> tuple[str, list[str]]:
    """What was measured and against which threshold, as a lead ("smallest alpha-ratio,
    threshold > 0") and one item per value ("random **= 0.253**"): the names' common start is
    said once, and so is the threshold when every value has the same one (equal numbers,
    whatever digits they were printed with). Values whose names differ only in their last part
    after a comma ("..., log" and "..., power") share one item."""
    prefix, rests = _split_prefix([m.name for m in measurements])
    keys = {(m.op, m.threshold, m.partial if partial else None) for m in measurements}
    same = len(keys) == 1
    lead = maths(prefix) if prefix else ""
    if same:
        lead += (", threshold " if lead else "threshold ") + _threshold(measurements[0], partial)

    def value(m: Measurement) -> str:
        return f"**{maths(m.shown)}**" + ("" if same else f" ({_threshold(m, partial)})")

    runs: list[tuple[str, list[tuple[str, Measurement]]]] = []
    for rest, m in zip(rests, measurements):
        head, comma, tail = rest.rpartition(", ")
        if not comma:
            runs = []
            break
        if runs and runs[-1][0] == head:
            runs[-1][1].append((tail, m))
        else:
            runs.append((head, [(tail, m)]))
    if runs and len(runs) < len(rests) and all(len(pairs) > 1 for _, pairs in runs):
        items = [f"{maths(head)}: " + ", ".join(f"{maths(tail)} {value(m)}" for tail, m in pairs)
                 for head, pairs in runs]
    else:
        items = [f"{maths(rest)} {value(m)}" for rest, m in zip(rests, measurements)]
    return lead, items


#: Measured values whose items are this short in all (as text) are listed on one line.
INLINE_VALUES_CHARS = 120


def _plain(markup: str) -> str:
    """The text of a line of the ledger's MyST, roughly (for its length)."""
    return re.sub(r"[*$\\{}]|\\[a-z]+", "", markup)


def value_items(verdict: Verdict) -> list[str]:
    """The items the ledger lists for ``verdict``'s measured values (see :func:`_values`)."""
    return _values(verdict.measurements)[1]


def _measured_block(row: Row) -> list[str]:
    """The measured values of a row, its thresholds, or why it has none (MyST lines)."""
    claim, printed = row.claim, row.printed
    if printed is None:
        return [f"*Not yet tested:* {maths(claim.get('not_yet_tested', 'no verdict printed'))}", ""]
    verdict = printed.verdict
    if verdict.measurements:
        lead, items = _values(verdict.measurements)
        if len(items) == 1:
            return [f"**Measured:** {items[0]}" + (f" ({lead})" if lead else ""), ""]
        head = f"**Measured** ({lead}):" if lead else "**Measured:**"
        if sum(len(_plain(item)) for item in items) <= INLINE_VALUES_CHARS:
            return [head + " " + " · ".join(items), ""]
        return [head, "", ":::{container} ledger-values", *(f"- {item}" for item in items),
                ":::", ""]
    if verdict.status == NOT_TESTABLE:
        return [f"*Not testable here:* {maths(verdict.reason)}", ""]
    lines = ["**Measured, sub-claim by sub-claim** (the verdict combines them):", "",
             ":::{container} ledger-parts"]
    for part in printed.parts:
        head = f"- *{maths(part.claim)}*: {part.status}"
        if not part.measurements:
            lines.append(head + (f" ({maths(part.reason)})" if part.reason else ""))
            continue
        lead, items = _values(part.measurements, partial=False)
        head += f"; {lead}" if lead else ""
        if sum(len(_plain(item)) for item in items) <= INLINE_VALUES_CHARS:
            lines.append(f"{head}: " + " · ".join(items))
        else:
            lines += [head, *(f"  - {item}" for item in items)]
    return lines + [":::", ""]


def _reading(row: Row, *, first: bool) -> list[str]:
    """One reading of a claim (MyST lines of its container): its verdict badge, label and
    text, the measured values, and where its verdict and evidence are."""
    claim = row.claim
    status = status_of(row)
    badge = _badge(status) + (" (combined)" if row.printed is not None
                              and not row.printed.verdict.measurements
                              and status != NOT_TESTABLE else "")
    anchor = claim_anchor_id(claim["id"])
    lead = "" if first or claim["label"] != CHOICE else "*The book's stricter reading:* "
    title = (f'<a class="claim-anchor" id="{anchor}" href="#{anchor}" title="Link to this '
             f'claim">#</a> {badge} ' + (HEADLINE_BADGE + " " if claim.get("headline") else "")
             + f"{lead}**{claim['label']}** {maths(claim.get('statement') or claim['claim'])}"
             + f' <span class="ledger-id">`{claim["id"]}`</span>')
    notes = []
    if claim.get("statement"):
        notes.append(f"verdict printed as: {maths(claim['claim'])}")
    cause = claim.get("cause")
    if cause is not None:
        notes.append("one cause of several rows: " + _link(maths(cause["text"], form="html"),
                                                           cause["notebook"], cause["section"]))
    where = (f"verdict: {_section_link(claim['notebook'], claim['section'])} · "
             f"evidence: {_evidence(row)}")
    classes = "ledger-reading" + (" ledger-choice" if claim["label"] == CHOICE else "")
    return [f"::::{{container}} {classes}", title, "",
            *(f'<span class="ledger-note">{note}</span>' + "\n" for note in notes),
            *_measured_block(row),
            f'<span class="ledger-where">{where}</span>', "::::", ""]


def groups(rows: list[Row]) -> list[list[Row]]:
    """The rows grouped by claim: a source's row with the [choice] rows (the book's stricter
    readings of it) that follow it."""
    found: list[list[Row]] = []
    for row in rows:
        if row.claim["label"] == CHOICE and found:
            found[-1].append(row)
        else:
            found.append([row])
    return found


def _claim_block(group: list[Row]) -> list[str]:
    """One claim: its source's reading, then each stricter reading, in one box."""
    lines = [":::::{container} ledger-claim"]
    for i, row in enumerate(group):
        lines += _reading(row, first=i == 0)
    return lines + [":::::", ""]


def _short_rest(short: str, source: str) -> str:
    """A [choice] row's short name without the start it shares with its source's."""
    common = os.path.commonprefix([short, source])
    rest = short[len(common):].lstrip(" ,;:")
    return rest if common == source and rest else short


def _headline_tables(rows: list[Row]) -> list[str]:
    """The headline claims, one compact table per paper: a row per claim, each of its
    readings on its own line (verdict badge, label, short name linked to its full entry), and
    the section that prints the verdict."""
    lines = []
    for paper, (_, key) in PAPERS.items():
        mine = [group for group in groups(rows) if group[0].claim["paper"] == paper]
        if not mine:
            continue
        lines += [f"{'Part I' if paper == 1 else 'Part II'}, {{cite}}`{key}`:", "",
                  "```{list-table}", ":header-rows: 1", ":widths: 56 44",
                  ":class: ledger-headlines", "", "* - Verdict and claim", "  - Tested in"]
        for group in mine:
            readings, where = [], []
            for row in group:
                claim = row.claim
                status = status_of(row)
                verdict = _badge(status) + (" (combined)" if row.printed is not None
                                            and not row.printed.verdict.measurements
                                            and status != NOT_TESTABLE else "")
                name = claim["short"] if row is group[0] else _short_rest(
                    claim["short"], group[0].claim["short"])
                readings.append(f"{verdict} **{claim['label']}** <a href=\"#"
                                f"{claim_anchor_id(claim['id'])}\">"
                                f"{maths(name, form='html')}</a>")
                link = _section_link(claim["notebook"], claim["section"])
                if link not in where:
                    where.append(link)
            lines += ["* - " + " <br> ".join(readings), "  - " + " <br> ".join(where)]
        lines += ["```", ""]
    return lines


def _counts_table(rows: list[Row]) -> list[str]:
    """How many claims have each verdict: per part, for the headline claims and for all."""
    shown = [s for s in ORDER if any(status_of(r) == s for r in rows)]
    lines = ["```{list-table}", ":header-rows: 1", ":class: ledger-counts", "",
             "* - Verdicts", *(f"  - {_badge(s)}" for s in shown), "  - all claims"]
    parts = [(f"Part I, {{cite}}`{PAPERS[1][1]}`", [r for r in rows if r.claim["paper"] == 1]),
             (f"Part II, {{cite}}`{PAPERS[2][1]}`", [r for r in rows if r.claim["paper"] == 2]),
             ("headline claims", [r for r in rows if r.claim.get("headline")]),
             ("all", rows)]
    for name, mine in parts:
        counts = status_counts(mine)
        lines += [f"* - {name}", *(f"  - {counts.get(s, 0)}" for s in shown),
                  f"  - {len(mine)}"]
    return lines + ["```", ""]


def render(rows: list[Row], notes: list[dict] = ()) -> str:
    """The ledger page (MyST Markdown). One screen first: the summary (:func:`summary`), the
    verdicts counted per part, and the headline claims in compact tables (a claim's readings
    grouped, each with its verdict badge). Then how the page is made, one box per claim of
    each paper (headline claims marked; the source's reading and the book's stricter
    readings of it together, each reading with its own anchor, its measured values, its
    thresholds, and links to the chapter or report sections), and what the claims-file
    bullets ``notes`` state that makes no checkable claim, and why."""
    headline = [r for r in rows if r.claim.get("headline")]
    sections = ([HEADLINES_TITLE] if headline else []) + [part for part, _ in PAPERS.values()]
    left_out = [(n["note"], n.get("not_checkable") or n.get("unchecked")) for n in notes
                if n.get("not_checkable") or n.get("unchecked")]
    sections.append(HOW_TITLE)
    if left_out:
        sections.append(LEFT_OUT_TITLE)
    jump = " · ".join(f'<a href="#{heading_anchor(title)}">{title.split(":")[0]}</a>'
                      for title in sections)
    lines = [
        "# What the papers claim and what this book measured",
        "",
        summary(rows),
        "",
        *_counts_table(rows),
        f'<p class="ledger-jump">On this page: {jump} · the rows as data: '
        '<a href="ledger.json">ledger.json</a></p>',
        "",
    ]
    if headline:
        lines += [f"## {HEADLINES_TITLE}", "",
                  "Each paper's main theorems and the main findings of its experiments. Where the "
                  "book also checks a stricter reading of its own (**[choice]**), the claim's row "
                  "shows both readings, one line each: the source's and the stricter one; the "
                  "two verdicts answer two different questions. A claim's name links to its "
                  "full entry below, where each claim is a box with its measured values, "
                  "thresholds and links (how the page is made: "
                  f'<a href="#{heading_anchor(HOW_TITLE)}">at its end</a>).', ""]
        lines += _headline_tables(headline)
    for paper, (part, key) in PAPERS.items():
        mine = [r for r in rows if r.claim["paper"] == paper]
        counts = status_counts(mine)
        marked = sum(bool(r.claim.get("headline")) for r in mine)
        lines += [f"## {part}", "",
                  f"{len(mine)} claims of {{cite}}`{key}`: "
                  + ", ".join(f"{n} {s}" for s, n in counts.items())
                  + (f"; {marked} of them headline claims" if marked else "") + ".", ""]
        for group in groups(mine):
            lines += _claim_block(group)
    lines += [
        f"## {HOW_TITLE}", "",
        "Each box above is one claim: labelled by where the book found it (**[summary]**: a "
        "summary of the paper; **[abstract]**: a public abstract), with its verdict, the "
        "measured numbers and the thresholds, and links to the chapter or report section that "
        "prints the verdict and to the evidence. Where the book also checks a stricter "
        "reading (**[choice]**), it is in the same box, under the source's reading: the two "
        "verdicts answer two different questions. The thresholds are the book's **[choice]**; "
        "each chapter section says why. Nothing here is typed: `python -m attnbook.ledger` "
        "writes this page before each book build from `book/claims.yml` and the verdict records "
        "the chapters' cells output (computed by `attnbook.verdicts` from the measured numbers "
        "and thresholds). A claim whose chapter shows no verdict yet is marked *not yet "
        "tested*, with the reason from the claims file.", ""]
    if left_out:
        lines += [f"## {LEFT_OUT_TITLE}", "",
                  "Statements of the sources that make no claim this book can measure, from "
                  "`book/claims.yml`:", ""]
        lines += [f"- Part {'I' if note.startswith('paper1') else 'II'}: {escape(why)}."
                  for note, why in left_out]
        lines += [""]
    return "\n".join(lines)


def _same_value(old: Measurement, new: Measurement) -> bool:
    """Whether two runs measured the same value: within the recorded spread (the larger of
    the two), or, with no spread, printed the same."""
    spread = max(old.spread, new.spread)
    if spread > 0:
        return abs(old.value - new.value) <= spread
    return old.shown == new.shown


def verdict_differences(where: str, old: Verdict, new: Verdict) -> list[str]:
    """What differs between the stored verdict ``old`` and the recomputed ``new``: the status
    exactly; each measurement's name and threshold exactly and its value within its spread;
    then the sub-verdicts, the same way."""
    if old.status != new.status:
        return [f"{where}: verdict {old.status!r} stored, {new.status!r} here"]
    olds, news = old.measurements, new.measurements
    if [(m.name, m.op, m.threshold_text) for m in olds] != [
            (m.name, m.op, m.threshold_text) for m in news]:
        return [f"{where}: measured {[m.name for m in olds]} against "
                f"{[m.threshold_text for m in olds]} stored, {[m.name for m in news]} against "
                f"{[m.threshold_text for m in news]} here"]
    found = [f"{where}: {a.name} {a.shown} stored, {b.shown} here (spread "
             f"{max(a.spread, b.spread):g}{'' if max(a.spread, b.spread) else ': as printed'})"
             for a, b in zip(olds, news) if not _same_value(a, b)]
    if [p.claim for p in old.parts] != [p.claim for p in new.parts]:
        return found + [f"{where}: sub-verdicts {[p.claim for p in old.parts]} stored, "
                        f"{[p.claim for p in new.parts]} here"]
    for a, b in zip(old.parts, new.parts):
        found += verdict_differences(f"{where}, {a.claim}", a, b)
    return found


def row_differences(stored: list[Row], fresh: list[Row]) -> list[str]:
    """Every claim whose verdict, or one of whose measured values, differs between ``stored``
    and ``fresh`` rows (:func:`verdict_differences`)."""
    found = []
    fresh_by_id = {row.claim["id"]: row for row in fresh}
    for old in stored:
        claim = old.claim["id"]
        new = fresh_by_id.get(claim)
        if new is None or (old.printed is None) != (new.printed is None):
            found.append(f"{claim}: shown in one of the two runs only")
        elif old.printed is not None:
            found += verdict_differences(claim, with_shown_parts(old.printed),
                                         with_shown_parts(new.printed))
    return found


def targets(row: Row) -> list[str]:
    """Where the book shows the row's claim, as ``page#id`` from the site's root: the section
    that prints its verdict, the evidence section, and the evidence figure (if named). Each of
    them links back to the claim's entry in the ledger (``book.js``)."""
    claim = row.claim
    page = f"notebooks/{Path(claim['notebook']).stem}.html"
    evidence = f"notebooks/{Path(evidence_notebook(claim)).stem}.html"
    found = [f"{page}#{heading_anchor(claim['section'])}",
             f"{evidence}#{heading_anchor(claim['evidence'])}"]
    if row.figure:
        found.append(f"{evidence}#{make_id(row.figure)}")
    return list(dict.fromkeys(found))


def _text(text: str) -> str:
    """A claim's text with its maths as plain Unicode (a link's title, ledger.json)."""
    return html.unescape(re.sub(r"<[^>]+>", "", maths(text, form="html")))


def ledger_records(rows: list[Row]) -> dict[str, Any]:
    """The ledger as data: per claim its id, paper, label, text, where it is tested, the
    record of its verdict (``None`` when not yet tested), its entry's anchor on the ledger page
    and the sections that show it (``targets``)."""
    return {"claims": [
        {"id": row.claim["id"], "paper": row.claim["paper"], "label": row.claim["label"],
         "claim": row.claim["claim"], "headline": bool(row.claim.get("headline")),
         "notebook": row.claim["notebook"], "section": row.claim["section"],
         "verdict": None if row.printed is None else with_shown_parts(row.printed).record(),
         "anchor": claim_anchor_id(row.claim["id"]),
         "title": _text(row.claim.get("short") or row.claim.get("statement")
                        or row.claim["claim"]),
         "targets": targets(row)}
        for row in rows]}


def with_shown_parts(printed: Printed) -> Verdict:
    """The printed verdict with the sub-verdicts shown under it as its parts."""
    return replace(printed.verdict, parts=printed.parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="check only; write nothing")
    parser.add_argument("--out", type=Path, default=LEDGER)
    parser.add_argument("--json", type=Path, default=None,
                        help="where to write the rows as data (default: beside --out, .json)")
    parser.add_argument("--claims", type=Path, default=CLAIMS)
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="read ROOT/notebooks/*.ipynb (default: the repository)")
    parser.add_argument("--verify", action="store_true",
                        help="fail, naming each claim and value, where the verdicts from "
                             "ROOT's notebooks differ from the stored notebooks' (build_book.sh: "
                             "the freshly executed chapters against the stored): verdicts "
                             "exactly, values within their recorded spread")
    parser.add_argument("--stored", type=Path, default=ROOT,
                        help="with --verify: the root whose notebooks hold the stored outputs")
    args = parser.parse_args(argv)
    data = load_claims(args.claims)
    rows, problems = ledger_rows(data, root=args.root)
    if problems:
        print("ledger: the ledger cannot be written:", file=sys.stderr)
        for problem in problems:
            print(f"  - {problem}", file=sys.stderr)
        return 1
    tested = sum(row.printed is not None for row in rows)
    page = render(rows, data.get("design_notes", []))
    if args.verify:
        stored, stored_problems = ledger_rows(data, root=args.stored)
        differences = stored_problems + row_differences(stored, rows)
        if differences:
            print(f"ledger: the verdicts in {args.root / 'notebooks'} differ from the stored "
                  f"ones in {args.stored / 'notebooks'} (verdicts exactly, values within their "
                  "recorded spread):", file=sys.stderr)
            for difference in differences:
                print(f"  - {difference}", file=sys.stderr)
            return 1
        print(f"ledger: {len(rows)} claims; {args.root / 'notebooks'} gives the same "
              "verdicts and values")
        return 0
    if not args.check:
        args.out.write_text(page)
        (args.json or args.out.with_suffix(".json")).write_text(
            json.dumps(ledger_records(rows), indent=1, ensure_ascii=False) + "\n")
    print(f"ledger: {len(rows)} claims, {tested} with a printed verdict"
          + ("" if args.check else f"; wrote {args.out}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
