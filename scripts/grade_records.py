"""What a grading sandbox reports, checked line by line before the grader believes any of it.

The harness of ``scripts/grade.py`` runs a submission's notebook and writes one JSON object a
line on a pipe: the value (or error) of each recorded answer call, the notebook's cells, each
call of a withheld attnlib function, and ``done``. The notebook's own code can write to that
pipe too (it runs in the same process), so :func:`parse_records` trusts nothing of its shape:
every line is checked against the schema (types, sizes, nesting depth, array sizes against
their data) and anything else, including a second result for one call, is dropped and
described for the sheet's ``flags``. It never raises.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from dataclasses import dataclass, field

NAME_LIMIT = 200                   # characters of a dict key in an answer's value
RESULT_LIMIT = 64 * 2 ** 20        # bytes of records read back from one sandbox
RECORD_LIMIT = 10_000              # records read back from one sandbox
DEPTH_LIMIT = 20                   # nesting of an answer's value (the harness encodes no deeper)
ENTRIES_LIMIT = 20_000_000         # list items, dict entries and array elements of one record
TEXT_LIMIT = 10_000                # characters of a string inside an answer's value


class MalformedRecord(ValueError):
    """A line on the sandbox's channel that is not one of the harness's records."""


def decode_value(value: object, depth: int = 0, budget: list[int] | None = None) -> object:
    """An answer's value as the sandbox sent it (plain JSON data), checked against the
    harness's encoding and rebuilt as numpy arrays, tuples and dicts.

    Accepted: None, booleans, numbers, strings (at most TEXT_LIMIT characters), lists,
    ``{"__tuple__": [...]}``, ``{"__dict__": [[key, value], ...]}`` and ``{"__nd__": dtype,
    "shape": [...], "scalar": bool, "data": base64}`` with a numeric dtype and exactly
    ``prod(shape)`` elements, nested at most DEPTH_LIMIT deep and with at most ENTRIES_LIMIT
    entries in all; anything else raises :class:`MalformedRecord` saying what was expected.
    """
    import numpy as np

    budget = [ENTRIES_LIMIT] if budget is None else budget
    budget[0] -= 1
    if depth > DEPTH_LIMIT or budget[0] < 0:
        raise MalformedRecord(f"a value nested deeper than {DEPTH_LIMIT} levels or with more "
                              f"than {ENTRIES_LIMIT} entries")
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        if len(value) > TEXT_LIMIT:
            raise MalformedRecord(f"a string longer than {TEXT_LIMIT} characters")
        return value
    if isinstance(value, list):
        return [decode_value(item, depth + 1, budget) for item in value]
    keys = set(value) if isinstance(value, dict) else None
    if keys == {"__tuple__"} and isinstance(value["__tuple__"], list):
        return tuple(decode_value(item, depth + 1, budget) for item in value["__tuple__"])
    if keys == {"__dict__"} and isinstance(value["__dict__"], list):
        decoded = {}
        for pair in value["__dict__"]:
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[0], str)
                    and len(pair[0]) <= NAME_LIMIT):
                raise MalformedRecord("a dict entry must be [key (short text), value]")
            decoded[pair[0]] = decode_value(pair[1], depth + 1, budget)
        return decoded
    if keys == {"__nd__", "shape", "scalar", "data"}:
        return _decode_array(value, budget, np)
    raise MalformedRecord("a value must be null, a boolean, a number, a string, a list or an "
                          f"encoded tuple, dict or array, got {type(value).__name__}"
                          + (f" with keys {sorted(map(str, keys))[:4]}" if keys else ""))


def _decode_array(value: dict, budget: list[int], np) -> object:
    """The numpy array (or scalar) of an ``{"__nd__": ...}`` value; see :func:`decode_value`."""
    kind, shape, scalar, data = value["__nd__"], value["shape"], value["scalar"], value["data"]
    try:
        dtype = np.dtype(kind) if isinstance(kind, str) and len(kind) <= 8 else None
    except (TypeError, ValueError):
        dtype = None
    if dtype is None or dtype.kind not in "biufc" or dtype.itemsize > 32:
        raise MalformedRecord(f"an array's dtype must be a numeric type, got {str(kind)[:20]!r}")
    if not (isinstance(shape, list) and len(shape) <= 32
            and all(type(n) is int and n >= 0 for n in shape)):
        raise MalformedRecord("an array's shape must be a list of at most 32 sizes >= 0")
    size = math.prod(shape)
    budget[0] -= size
    if budget[0] < 0:
        raise MalformedRecord(f"an array with more than {ENTRIES_LIMIT} elements")
    if type(scalar) is not bool or (scalar and shape):
        raise MalformedRecord("an array's 'scalar' must be true only for shape []")
    if not isinstance(data, str) or len(data) != 4 * math.ceil(size * dtype.itemsize / 3):
        raise MalformedRecord(f"an array of shape {shape} and dtype {dtype} needs "
                              f"{size * dtype.itemsize} bytes of base64 data")
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as error:
        raise MalformedRecord(f"an array's data is not base64 ({error})") from error
    if len(raw) != size * dtype.itemsize:
        raise MalformedRecord(f"an array of shape {shape} needs {size * dtype.itemsize} bytes, "
                              f"got {len(raw)}")
    array = np.frombuffer(raw, dtype=dtype).reshape(shape).copy()
    return array[()] if scalar else array


@dataclass
class Records:
    """What one sandbox reported, each line checked (:func:`parse_records`)."""

    answers: dict[str, dict] = field(default_factory=dict)   # call id -> value, or error
    cells: int = 0
    cell_errors: list[str] = field(default_factory=list)
    notebook: str = ""                          # why the harness could not read the notebook
    blocked: list[tuple[str, str]] = field(default_factory=list)  # (function, cell or call)
    done: bool = False
    problems: list[str] = field(default_factory=list)  # malformed or duplicated lines


def parse_records(raw: bytes, call_ids: set[str]) -> Records:
    """The harness's records in ``raw`` (one JSON object a line), checked against their schema:
    an answer (``{"id", "value"}`` or ``{"id", "error", "not_own"?}`` for one of ``call_ids``,
    once), the notebook's cells (``{"cells": int, "cell_errors": [text]}``, once), a withheld
    function's call (``{"blocked": text, "during": text}``), ``{"notebook": text}`` and
    ``{"done": true}`` (once). Any other line (not JSON, nested too deep, of the wrong types or
    sizes, a second result for one call) is dropped and described in ``problems``; a call with
    two results counts as failed. Never raises."""
    records = Records()
    seen: set[str] = set()
    for number, line in enumerate(raw.decode(errors="replace").splitlines(), 1):
        if number > RECORD_LIMIT:
            records.problems.append(f"more than {RECORD_LIMIT} records (the rest ignored)")
            break
        if not line.strip():
            continue
        try:
            _read_record(json.loads(line), records, call_ids, seen)
        except (ValueError, RecursionError) as error:   # MalformedRecord is a ValueError
            reason = ("nested too deeply" if isinstance(error, RecursionError)
                      else str(error)[:120])
            records.problems.append(f"line {number}: {reason}")
    if records.notebook and seen:     # the harness reports either an unreadable notebook or cells
        records.problems.append("an 'unreadable notebook' record beside the notebook's results")
        records.notebook = ""
    return records


def _read_record(record: object, records: Records, call_ids: set[str], seen: set[str]) -> None:
    """Add one decoded JSON line to ``records``; raises :class:`MalformedRecord` for anything
    that is not a record of the harness (see :func:`parse_records`)."""
    if not isinstance(record, dict):
        raise MalformedRecord(f"expected a JSON object, got {type(record).__name__}")
    keys = set(record)
    text = (lambda name, limit: record[name][:limit]
            if isinstance(record.get(name), str) else None)
    if "id" in keys:
        call_id = record["id"]
        if not isinstance(call_id, str) or call_id not in call_ids:
            raise MalformedRecord(f"a result for an unknown call {str(call_id)[:60]!r}")
        if keys == {"id", "value"}:
            answer = {"value": decode_value(record["value"])}
        elif ({"id", "error"} <= keys <= {"id", "error", "not_own"} and text("error", 300)
              is not None and type(record.get("not_own", False)) is bool):
            answer = {"error": text("error", 300), "not_own": record.get("not_own", False)}
        else:
            raise MalformedRecord("a result must be {id, value} or {id, error (text), "
                                  "not_own (boolean)}")
        if call_id in records.answers:
            records.answers[call_id] = {"error": "two results were reported for this call",
                                        "not_own": False}
            raise MalformedRecord(f"a second result for call {call_id}")
        records.answers[call_id] = answer
    elif keys in ({"blocked"}, {"blocked", "during"}):
        if text("blocked", 200) is None or text("during", 200) is None and "during" in keys:
            raise MalformedRecord("a blocked call must name the function and where (text)")
        if len(records.blocked) < 50:
            records.blocked.append((text("blocked", 200), text("during", 200) or ""))
    elif keys == {"cells", "cell_errors"}:
        errors = record["cell_errors"]
        if (type(record["cells"]) is not int or record["cells"] < 0
                or not isinstance(errors, list) or len(errors) > 5
                or not all(isinstance(error, str) for error in errors)):
            raise MalformedRecord("cells must be a count and cell_errors at most 5 texts")
        if "cells" in seen:
            raise MalformedRecord("a second cells record")
        seen.add("cells")
        records.cells, records.cell_errors = record["cells"], [e[:200] for e in errors]
    elif keys == {"notebook"} and text("notebook", 300) is not None:
        records.notebook = text("notebook", 300)
    elif keys == {"done"} and record["done"] is True:
        if "done" in seen:
            raise MalformedRecord("a second done record")
        seen.add("done")
        records.done = True
    else:
        raise MalformedRecord(f"an unknown record with keys {sorted(map(str, keys))[:4]}")
