"""A holder's report on the wire, and the collector's check of untrusted reports.

A report is the JSON object

.. code-block:: text

    {"schema": "ldptree.protocol/report", "version": 1,
     "report_id": "<32 lowercase hex digits: 128 random bits>",
     "round": "<the round fingerprint: 64 lowercase hex digits>",
     "fields": {"<release name>": [int, ...], ...}}

with one flat list of integers per release of the mechanism, in the row-major order of its array
in the mechanism's report (:meth:`~ldptree.mechanisms.KitMechanism.report_fields` gives each
release's shape and the integers its noise can output). The report id only deduplicates
retransmissions; it is drawn at random, so it carries nothing about the record. ``round`` is
:func:`~ldptree.protocol.round_fingerprint` of the published round the report answers: a report
is valid for that round only.

Holders make reports with :func:`~ldptree.protocol.holder_report`. :func:`parse_report` is the
collector's check of untrusted input; it raises :class:`RejectedReportError` with one of
:data:`REASONS`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import numpy as np

from ldptree.protocol._published import SCHEMA_VERSION, PublishedRound

__all__ = [
    "REASONS",
    "REPORT_SCHEMA",
    "RejectedReportError",
    "parse_report",
    "report_object",
]

#: Schema name of a holder's report.
REPORT_SCHEMA = "ldptree.protocol/report"
#: Why a report can be rejected.
REASONS = (
    "oversized",  # longer than any valid report can be
    "malformed",  # not UTF-8 JSON (truncated, garbage, too deeply nested, unparsable number)
    "schema",  # not a report object: wrong schema name, missing or extra keys
    "version",  # a schema version this code does not read
    "report_id",  # not 32 lowercase hex digits
    "round",  # made for another round (its round fingerprint is not this round's)
    "shape",  # fields are not exactly the releases, or a list has the wrong length
    "type",  # an entry that is not an integer (float, bool, string, null, nested list)
    "range",  # an integer the mechanism's noise can never output
    "duplicate",  # a report id already accepted
)
_REPORT_ID = re.compile(r"[0-9a-f]{32}")
_KEYS = {"schema", "version", "report_id", "round", "fields"}


class RejectedReportError(ValueError):
    """A report that cannot be accepted; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def report_object(round_: PublishedRound, report_id: str, arrays: list[Any]) -> dict[str, Any]:
    """The JSON object of one report of ``round_`` (module docstring): one holder's release
    arrays (holder axis dropped) as flat integer lists."""
    layout = round_.mechanism.report_fields(round_.n_cells)
    return {
        "schema": REPORT_SCHEMA,
        "version": SCHEMA_VERSION,
        "report_id": report_id,
        "round": round_.fingerprint,
        "fields": {
            name: np.asarray(arr).astype(np.int64).reshape(-1).tolist()
            for (name, *_), arr in zip(layout, arrays, strict=True)
        },
    }


def parse_report(raw: Any, round_: PublishedRound) -> tuple[str, list[np.ndarray[Any, Any]]]:
    """``(report_id, arrays)`` of a valid report, one ``int32`` array per release in its shape.

    ``raw`` is the report's JSON text (``str`` or ``bytes``) or an already parsed object.
    Anything else than a valid report raises :class:`RejectedReportError`, and nothing else is
    ever raised."""
    obj = raw
    if isinstance(raw, bytes | bytearray | str):
        if len(raw) > round_.max_report_bytes:
            raise RejectedReportError("oversized", f"{len(raw)} bytes")
        try:
            obj = json.loads(raw)
        except (ValueError, RecursionError) as err:  # JSONDecodeError, bad UTF-8, huge ints
            raise RejectedReportError("malformed", str(err)[:200]) from None
    if not isinstance(obj, Mapping) or set(obj) != _KEYS or obj["schema"] != REPORT_SCHEMA:
        raise RejectedReportError("schema", f"expected an object with keys {sorted(_KEYS)}")
    version = obj["version"]
    if type(version) is not int or version != SCHEMA_VERSION:
        raise RejectedReportError("version", f"{version!r}"[:100])
    report_id = obj["report_id"]
    if not isinstance(report_id, str) or not _REPORT_ID.fullmatch(report_id):
        raise RejectedReportError("report_id", f"{report_id!r}"[:100])
    made_for = obj["round"]
    if not isinstance(made_for, str) or made_for != round_.fingerprint:
        shown = made_for[:64] if isinstance(made_for, str) else type(made_for).__name__
        raise RejectedReportError("round", f"made for round {shown!r}, not this round")
    fields = obj["fields"]
    layout = round_.layout
    if not isinstance(fields, Mapping) or set(fields) != {name for name, *_ in layout}:
        raise RejectedReportError("shape", "fields must hold exactly the mechanism's releases")
    arrays = []
    for name, shape, lo, hi in layout:
        values = fields[name]
        if not isinstance(values, list) or len(values) != math.prod(shape):
            raise RejectedReportError(
                "shape", f"{name} must be a list of {math.prod(shape)} integers"
            )
        # whole-list checks in C: exact int type (bools and floats are not), then the range
        if not set(map(type, values)) <= {int}:
            raise RejectedReportError("type", f"{name} holds a value that is not an integer")
        try:
            wide = np.array(values, dtype=np.int64)
        except OverflowError:
            wide = None  # beyond 64 bits: outside any range
        if wide is None or (wide.size and (wide.min() < lo or wide.max() > hi)):
            raise RejectedReportError("range", f"{name} holds a value outside [{lo}, {hi}]")
        arrays.append(wide.astype(np.int32).reshape(shape))
    return report_id, arrays
