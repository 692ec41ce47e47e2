"""Verdicts on the papers' claims, computed from measured numbers (both parts of the book).

A chapter never types "reproduced" into prose: it measures one or more numbers, states the
threshold each must pass and the direction of the comparison, and prints the
:class:`Verdict` that :func:`verdict` computes. The rule, for values ``v_i`` compared with
thresholds ``t_i`` in direction ``op`` (one of ``"<", "<=", ">", ">="``):

* a value *passes* when ``v_i op t_i``; with an optional looser ``partial`` threshold
  ``p_i`` a value that fails ``t_i`` but satisfies ``v_i op p_i`` *half-passes*;
* **reproduced** when every value passes; **not reproduced** when none passes or
  half-passes; **partly reproduced** otherwise;
* **not testable here** when there is no finite measurement (``value`` is ``None`` or
  contains NaN): the book says so instead of guessing.

:func:`combine` merges the verdicts of the sub-claims of one claim (all tested and
reproduced -> reproduced, all not -> not, otherwise partly, also when some sub-claims could
not be tested; those are named). ``str(verdict)`` is one printable line with the claim, the status and the
reason, thresholds included.

Verdicts travel as data: a :class:`Verdict` keeps its :class:`Measurement` objects (value,
threshold, direction, how the value was printed, and ``spread``, the amount by which the value
may move between machines) and its sub-verdicts, and :meth:`Verdict.record` turns them into a
JSON-able record. A :class:`VerdictTable` shown in a notebook puts the records of its rows in
its output under the MIME type :data:`RECORD_MIME`, beside its text and HTML; the claims ledger
(``python -m attnbook.ledger``) is written from those records alone.
"""

from __future__ import annotations

import html
import math
import operator
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from attnlib._validation import check_finite, check_positive

__all__ = ["REPRODUCED", "PARTLY", "NOT_REPRODUCED", "NOT_TESTABLE", "STATUSES",
           "RECORD_MIME", "Measurement", "Verdict", "verdict", "interval_verdict",
           "not_testable", "combine", "status_of_levels", "VerdictTable", "verdict_table"]

#: Status when every measured value passes its threshold.
REPRODUCED = "reproduced"
#: Status when some values pass or half-pass and not all pass (or sub-claims disagree).
PARTLY = "partly reproduced"
#: Status when no value passes or half-passes.
NOT_REPRODUCED = "not reproduced"
#: Status when there is no finite measurement (``None`` or NaN).
NOT_TESTABLE = "not testable here"
#: The four statuses, from best to worst.
STATUSES = (REPRODUCED, PARTLY, NOT_REPRODUCED, NOT_TESTABLE)

#: The MIME type under which a shown :class:`VerdictTable` puts its rows' records.
RECORD_MIME = "application/vnd.attnbook.verdicts+json"

_OPERATORS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _level(value: float, op: str, threshold: float, partial: float | None) -> int:
    """2 when ``value op threshold``, 1 when only ``value op partial``, else 0."""
    compare = _OPERATORS[op]
    return 2 if compare(value, threshold) else 1 if partial is not None and compare(
        value, partial) else 0


def _json_number(value: float) -> float | str:
    """``value``, or its name (``"inf"``, ``"-inf"``, ``"nan"``) where JSON has no number."""
    return value if math.isfinite(value) else str(value)


@dataclass(frozen=True)
class Measurement:
    """One measured value compared with its threshold, as a verdict printed it.

    ``level`` is the credit it earned: 2 passes ``value op threshold``, 1 fails it but meets
    the looser ``partial`` threshold, 0 fails. ``shown``, ``threshold_text`` and
    ``partial_text`` are the printed forms (``"= 0.0666"`` or ``"< 1e-12"``, ``"0.1"``).
    ``spread`` is the amount by which ``value`` may move between machines (other CPUs, SIMD
    paths, BLAS kernels) with the same seeds; 0 means its printed digits reproduce.
    """

    name: str
    value: float
    shown: str
    op: str
    threshold: float
    threshold_text: str
    level: int
    partial: float | None = None
    partial_text: str | None = None
    spread: float = 0.0

    def earned_level(self) -> int:
        """The credit its numbers earn (what ``level`` must be): 2 when ``value op
        threshold``, 1 when only ``value op partial``, else 0."""
        return _level(self.value, self.op, self.threshold, self.partial)

    def record(self) -> dict[str, Any]:
        """The measurement as JSON-able data (non-finite numbers as ``"inf"`` and ``"nan"``)."""
        data = asdict(self)
        for key in ("value", "threshold", "partial"):
            if data[key] is not None:
                data[key] = _json_number(data[key])
        return data

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Measurement:
        """The inverse of :meth:`record`."""
        numbers = {key: None if data.get(key) is None else float(data[key])
                   for key in ("value", "threshold", "partial")}
        return cls(**{**data, **numbers})


@dataclass(frozen=True)
class Verdict:
    """The outcome of checking one claim: ``status`` is one of :data:`STATUSES` and
    ``reason`` a one-line account of the numbers and thresholds that decided it.

    ``measurements`` are the values that decided it (:func:`verdict`) and ``parts`` the
    verdicts of its sub-claims (:func:`combine`); two verdicts are equal when their claim,
    status and reason are."""

    claim: str
    status: str
    reason: str
    measurements: tuple[Measurement, ...] = field(default=(), compare=False, repr=False)
    parts: tuple[Verdict, ...] = field(default=(), compare=False, repr=False)

    def __str__(self) -> str:
        return f"{self.claim}: {self.status} ({self.reason})"

    def record(self) -> dict[str, Any]:
        """The verdict as JSON-able data: claim, status, reason, measurements, parts."""
        return {"claim": self.claim, "status": self.status, "reason": self.reason,
                "measurements": [m.record() for m in self.measurements],
                "parts": [p.record() for p in self.parts]}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Verdict:
        """The inverse of :meth:`record`."""
        return cls(data["claim"], data["status"], data["reason"],
                   tuple(Measurement.from_record(m) for m in data.get("measurements", [])),
                   tuple(cls.from_record(p) for p in data.get("parts", [])))


def status_of_levels(levels: Sequence[int]) -> str:
    """The status earned by measurements of credit ``levels`` (2 pass, 1 partial, 0 fail):
    reproduced when all pass, not reproduced when none even half-passes, else partly."""
    if all(level == 2 for level in levels):
        return REPRODUCED
    if all(level == 0 for level in levels):
        return NOT_REPRODUCED
    return PARTLY


def _values(name: str, value: object) -> np.ndarray:
    try:
        raw = np.atleast_1d(np.asarray(value))
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a number or a sequence of numbers, "
                        f"got {type(value).__name__}") from exc
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be a number or a sequence of real numbers (not text), "
                        f"got dtype {raw.dtype}")
    array = raw.astype(np.float64)
    if array.ndim != 1 or array.size == 0:
        raise ValueError(f"{name} must be a number or a non-empty 1-D sequence, "
                         f"got shape {array.shape}")
    return array


def _per_value(name: str, value: object, n: int) -> np.ndarray:
    array = _values(name, value)
    if array.size not in (1, n):
        raise ValueError(f"{name} must be one number or one per value ({n}), got {array.size}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite")
    return np.broadcast_to(array, (n,))


def not_testable(claim: str, reason: str) -> Verdict:
    """A claim this book cannot test (no data, no access, out of budget): say why."""
    if not reason:
        raise ValueError("reason must say why the claim is not testable here")
    return Verdict(claim, NOT_TESTABLE, reason)


def verdict(claim: str, value: object, threshold: object, *, direction: str = "<=",
            partial: object | None = None, quantity: str = "value",
            labels: Sequence[str] | None = None, fmt: str | Sequence[str] = ".3g",
            resolution: float = 0.0, spread: object = 0.0) -> Verdict:
    """Compare measured ``value`` (a number or a sequence) with ``threshold`` in ``direction``.

    ``threshold`` and ``partial`` are a number (used for every value) or one per value.
    ``partial`` is a looser threshold (on the failing side of ``threshold``) that earns a
    value half credit. ``quantity`` names what was measured and ``labels`` name the values
    (e.g. the seeds or the conditions); both appear in the reason, formatted with ``fmt``
    (one specification, or one per value). A ``value`` of ``None`` or one containing NaN
    gives :data:`NOT_TESTABLE`. A value whose magnitude is below ``resolution`` (a
    round-off-sized quantity, whose digits differ between machines) prints as
    ``< resolution``; the comparison uses the value itself. ``spread`` (one number, or one per
    value, >= 0) is how far a value may move between machines with the same seeds; it is
    recorded with the value (:class:`Measurement`) for the book's staleness check.

    Examples
    --------
    >>> v = verdict("loss ratio within 10%", [0.04, 0.12], 0.1, labels=["seed 0", "seed 1"])
    >>> str(v)
    'loss ratio within 10%: partly reproduced (value seed 0 = 0.04 <= 0.1; value seed 1 = 0.12: fails <= 0.1)'
    >>> [m.level for m in v.measurements]
    [2, 0]
    """
    resolution = check_positive("resolution", resolution, allow_zero=True)
    if direction not in _OPERATORS:
        raise ValueError(f"direction must be one of {sorted(_OPERATORS)}, got {direction!r}")
    formats = [fmt] if isinstance(fmt, str) else list(fmt) if isinstance(fmt, Sequence) else [fmt]
    for spec in formats:
        try:
            format(1.0, spec)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"fmt must be a format specification for numbers such as '.3g' "
                             f"(or one per value), got {spec!r}") from exc
    compare = _OPERATORS[direction]
    if value is None:
        return not_testable(claim, f"no measurement of {quantity}")
    values = _values("value", value)
    n = values.size
    thresholds = _per_value("threshold", threshold, n)
    spreads = _per_value("spread", spread, n)
    if np.any(spreads < 0):
        raise ValueError("spread must be >= 0 (how far a value may move between machines)")
    if len(formats) not in (1, n):
        raise ValueError(f"fmt must be one specification or one per value ({n}), "
                         f"got {len(formats)}")
    formats = formats * n if len(formats) == 1 else formats
    if labels is None:
        labels = [""] * n if n == 1 else [f"#{i}" for i in range(n)]
    if len(labels) != n:
        raise ValueError(f"labels must have one entry per value ({n}), got {len(labels)}")
    loose = None
    if partial is not None:
        loose = _per_value("partial", partial, n)
        if any(not (compare(t, p) or t == p) for t, p in zip(thresholds, loose)):
            raise ValueError(f"partial must be looser than threshold: need threshold "
                             f"{direction} partial for every value")
    if np.any(np.isnan(values)):
        bad = [lab or quantity for lab, v in zip(labels, values) if np.isnan(v)]
        return not_testable(claim, f"{quantity} not measured (NaN) for {', '.join(bad)}")
    measurements = []
    for i, (lab, v, t, spec) in enumerate(zip(labels, values, thresholds, formats)):
        name = f"{quantity} {lab}" if lab else quantity
        shown = f"< {resolution:.0e}" if abs(v) < resolution else f"= {v:{spec}}"
        level = _level(float(v), direction, float(t), None if loose is None else float(loose[i]))
        measurements.append(Measurement(
            name, float(v), shown, direction, float(t), f"{t:{spec}}", level,
            None if loose is None else float(loose[i]),
            None if loose is None else f"{loose[i]:{spec}}", float(spreads[i])))
    reason = "; ".join(_fragment(m) for m in measurements)
    return Verdict(claim, status_of_levels([m.level for m in measurements]), reason,
                   tuple(measurements))


def _fragment(m: Measurement) -> str:
    """How a measurement reads in a verdict's reason."""
    if m.level == 2:
        return f"{m.name} {m.shown} {m.op} {m.threshold_text}"
    if m.level == 1:
        return (f"{m.name} {m.shown}: fails {m.op} {m.threshold_text}, "
                f"meets partial {m.op} {m.partial_text}")
    return f"{m.name} {m.shown}: fails {m.op} {m.threshold_text}"


def interval_verdict(claim: str, interval: tuple[float, float], threshold: float, *,
                     quantity: str = "value") -> Verdict:
    """A claim ``measured <= threshold`` judged on a confidence ``interval`` (low, high) of the
    measured quantity: reproduced if the whole interval is at or below ``threshold`` (judged on
    ``high``), not reproduced if the whole interval is above it (judged on ``low``), not
    testable if the interval contains the threshold."""
    if np.ndim(interval) != 1 or len(interval) != 2:
        raise ValueError(f"interval must be a pair (low, high), got {interval!r}")
    low, high = (check_finite("interval", v) for v in interval)
    if low > high:
        raise ValueError(f"interval must be (low, high) with low <= high, got {interval}")
    threshold = check_finite("threshold", threshold)
    if high <= threshold:
        return verdict(claim, high, threshold, direction="<=",
                       quantity=f"upper end of the {quantity} interval")
    if low > threshold:
        return verdict(claim, low, threshold, direction="<=",
                       quantity=f"lower end of the {quantity} interval")
    return not_testable(claim, f"the {quantity} interval [{low:.2f}, {high:.2f}] contains the "
                               f"threshold {threshold:.2f}")


def combine(claim: str, parts: Sequence[Verdict]) -> Verdict:
    """One verdict for a claim made of sub-claims: reproduced only if every part is tested and
    reproduced; not reproduced if no tested part is even partly; partly otherwise (in
    particular when some parts are reproduced and others could not be tested: a claim is
    never called reproduced beyond what was measured); not testable if no part is."""
    if not parts:
        raise ValueError("parts must contain at least one Verdict")
    testable = [p for p in parts if p.status != NOT_TESTABLE]
    skipped = [p.claim for p in parts if p.status == NOT_TESTABLE]
    note = f"; not testable: {', '.join(skipped)}" if skipped else ""
    if not testable:
        return Verdict(claim, NOT_TESTABLE, "no part is testable here" + note,
                       parts=tuple(parts))
    statuses = [p.status for p in testable]
    if all(s == REPRODUCED for s in statuses) and not skipped:
        status = REPRODUCED
    elif all(s == NOT_REPRODUCED for s in statuses):
        status = NOT_REPRODUCED
    else:
        status = PARTLY
    summary = ", ".join(f"{p.claim}: {p.status}" for p in testable)
    return Verdict(claim, status, summary + note, parts=tuple(parts))


#: Width of the label column of a printed verdict line (``"[summary]   claim: ..."``).
LABEL_WIDTH = 11


@dataclass(frozen=True)
class VerdictTable:
    """Verdicts on several claims, shown one row per claim.

    ``rows`` holds ``(label, verdict, parts)``: the provenance label (``"[summary]"``,
    ``"[choice]"``, ...), the claim's verdict and the verdicts of its sub-claims (may be
    empty). The book renders the HTML form (``_repr_html_``): a table with the claim, its
    status and the numbers and thresholds that decided it, whose cells wrap inside the text
    column. Plain text (``str``, ``repr``, nbval's ``text/plain``) is one line per verdict, ``label`` padded to ``LABEL_WIDTH`` characters then
    ``str(verdict)`` (an empty label: the verdict alone), each sub-claim on its own line
    indented under it. The rows' records
    (:meth:`record`) go beside them under :data:`RECORD_MIME`: what the claims ledger reads.
    """

    rows: tuple[tuple[str, Verdict, tuple[Verdict, ...]], ...]

    def record(self) -> dict[str, Any]:
        """``{"rows": [{"label", "verdict", "parts"}, ...]}`` with each verdict's record."""
        return {"rows": [{"label": label, "verdict": main.record(),
                          "parts": [part.record() for part in parts]}
                         for label, main, parts in self.rows]}

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        return {"text/plain": str(self), "text/html": self._repr_html_(),
                RECORD_MIME: self.record()}

    def __str__(self) -> str:
        lines = []
        for label, main, parts in self.rows:
            lines.append(f"{label:{LABEL_WIDTH}s} {main}" if label else str(main))
            indent = LABEL_WIDTH + 3 if label else 4
            lines += [f"{'':{indent}s}{part}" for part in parts]
        return "\n".join(lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        def reason(item: Verdict) -> str:                  # one measured value a line
            return "<br>".join(html.escape(value) for value in item.reason.split("; "))

        body = []
        for label, main, parts in self.rows:
            detail = reason(main)
            if parts:
                detail += "<ul>" + "".join(
                    f"<li>{html.escape(p.claim)}: <em>{html.escape(p.status)}</em> "
                    f"({reason(p)})</li>" for p in parts) + "</ul>"
            body.append(f"<tr><td>{html.escape(label)}</td><td>{html.escape(main.claim)}</td>"
                        f"<td><strong>{html.escape(main.status)}</strong></td>"
                        f"<td>{detail}</td></tr>")
        return ('<table class="attn-result-table attn-verdict-table"><thead><tr><th>label</th>'
                "<th>claim</th><th>verdict</th><th>measured against the threshold</th></tr>"
                f"</thead><tbody>{''.join(body)}</tbody></table>")


class RecordsInTheBook:
    """How the book's pages render a verdict record: not at all (the table beside it is the
    reader's view; the ledger reads the record). A myst-nb mime renderer plugin, registered in
    ``pyproject.toml`` (entry point group ``myst_nb.mime_renderers``)."""

    mime_priority_overrides = (("*", RECORD_MIME, None),)

    @staticmethod
    def handle_mime(renderer: Any, data: Any, inline: bool) -> list | None:
        """No nodes for a verdict record; ``None`` (another renderer's turn) otherwise."""
        return [] if data.mime_type == RECORD_MIME else None


def verdict_table(rows: Sequence[tuple[str, Verdict] | tuple[str, Verdict, Sequence[Verdict]]]
                  ) -> VerdictTable:
    """A :class:`VerdictTable` from rows ``(label, verdict)`` or ``(label, verdict, parts)``;
    a ``TypeError`` names a row that is not of that shape."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence):
        raise TypeError(f"rows: expected a list of (label, Verdict) rows, got {rows!r:.80}")
    if not rows:
        raise ValueError("rows: expected at least one (label, Verdict) row, got none")
    table = []
    for i, row in enumerate(rows):
        if not (isinstance(row, tuple) and len(row) in (2, 3) and isinstance(row[0], str)
                and isinstance(row[1], Verdict)
                and all(isinstance(p, Verdict) for p in (row[2] if len(row) == 3 else ()))):
            raise TypeError(f"rows[{i}]: expected (label, Verdict) or (label, Verdict, "
                            f"[Verdict, ...]), got {row!r}")
        table.append((row[0], row[1], tuple(row[2]) if len(row) == 3 else ()))
    return VerdictTable(tuple(table))
