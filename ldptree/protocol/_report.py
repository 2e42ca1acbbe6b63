"""One holder's report: made from its own record and the published round; validated on arrival.

A report is the JSON object

.. code-block:: text

    {"schema": "ldptree.protocol/report", "version": 1,
     "report_id": "<32 lowercase hex digits: 128 random bits>",
     "fields": {"<release name>": [int, ...], ...}}

with one flat list of integers per release of the mechanism, in the row-major order of its array
in the mechanism's report (:meth:`~ldptree.mechanisms.KitMechanism.report_fields` gives each
release's shape and the integers its noise can output). The report id only deduplicates
retransmissions; it is drawn at random, so it carries nothing about the record.

:func:`holder_report` draws the holder's randomness from the operating system's CSPRNG
(``secrets.token_bytes``): ``W`` uniform 32-bit words (``words_per_holder``) fed to
:meth:`~ldptree.mechanisms.KitMechanism.privatize_words`, the same exact integer sampling that
:func:`~ldptree.accounting.verify_ldp` certifies. :func:`parse_report` is the collector's check
of untrusted input; it raises :class:`RejectedReportError` with one of :data:`REASONS`.
"""

from __future__ import annotations

import json
import math
import re
import secrets
from collections.abc import Mapping
from typing import Any

import numpy as np

from ldptree._validation import check_real_dtype
from ldptree.protocol._published import SCHEMA_VERSION, PublishedRound, load_published

__all__ = [
    "REASONS",
    "REPORT_SCHEMA",
    "RejectedReportError",
    "holder_report",
    "parse_report",
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
    "shape",  # fields are not exactly the releases, or a list has the wrong length
    "type",  # an entry that is not an integer (float, bool, string, null, nested list)
    "range",  # an integer the mechanism's noise can never output
    "duplicate",  # a report id already accepted
)
_REPORT_ID = re.compile(r"[0-9a-f]{32}")
_KEYS = {"schema", "version", "report_id", "fields"}


class RejectedReportError(ValueError):
    """A report that cannot be accepted; ``reason`` is one of :data:`REASONS`."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


def _random_words(n_words: int) -> np.ndarray[Any, np.dtype[np.uint32]]:
    raw = secrets.token_bytes(4 * n_words)
    return np.frombuffer(raw, dtype="<u4").astype(np.uint32).reshape(1, n_words)


def _features(record_x: Any, n_features: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    check_real_dtype(record_x, "record_x")
    try:
        x = np.asarray(record_x, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("record_x must be a vector of real numbers") from None
    if x.shape != (n_features,) or not np.all(np.isfinite(x)):
        raise ValueError(f"record_x must be {n_features} finite numbers, got shape {x.shape}")
    return x


def _label(label: Any, integer: bool) -> np.ndarray[Any, Any]:
    if isinstance(label, bool | np.bool_):
        raise TypeError("label must be a number, not a bool")
    if integer:
        if not isinstance(label, int | np.integer) or not -(2**31) <= int(label) < 2**31:
            raise ValueError(f"label must be a class code (an int32 integer), got {label!r}")
        return np.asarray([int(label)], dtype=np.int32)
    if not isinstance(label, int | float | np.integer | np.floating) or not math.isfinite(label):
        raise ValueError(f"label must be a finite real number, got {label!r}")
    return np.asarray([label], dtype=np.float32)


def holder_report(record_x: Any, label: Any, published: Any) -> dict[str, Any]:
    """One holder's report (module docstring) from its record ``(record_x, label)`` alone.

    ``published`` is the curator's published object (a dict; validated and re-certified here) or
    a :class:`~ldptree.protocol.PublishedRound` from :func:`load_published` (a holder with many
    records loads once). ``record_x`` is the raw feature vector: it is scaled with the published
    box and routed through the published partition here, on the holder's side. ``label`` is a
    real label or a class code, as the mechanism takes.
    """
    round_ = load_published(published)
    mechanism, n_cells = round_.mechanism, round_.n_cells
    x = _features(record_x, round_.partition.n_features)
    y = _label(label, mechanism.labels().integer)
    cells = np.asarray(round_.partition.cells(round_.scaler.transform(x[None, :])))
    words = _random_words(mechanism.words_per_holder(n_cells))
    report = mechanism.privatize_words(words, cells, y, n_cells)
    arrays = mechanism._report_arrays(report)
    fields = {
        name: np.asarray(arr)[0].astype(np.int64).reshape(-1).tolist()
        for (name, *_), arr in zip(mechanism.report_fields(n_cells), arrays, strict=True)
    }
    return {
        "schema": REPORT_SCHEMA,
        "version": SCHEMA_VERSION,
        "report_id": secrets.token_hex(16),
        "fields": fields,
    }


def max_report_bytes(round_: PublishedRound) -> int:
    """A generous bound on the size of a valid report's JSON text (longer input is rejected
    unread): 24 bytes per integer plus 1 KiB."""
    count = sum(
        math.prod(shape) for _, shape, _, _ in round_.mechanism.report_fields(round_.n_cells)
    )
    return 1024 + 24 * count


def parse_report(raw: Any, round_: PublishedRound) -> tuple[str, list[np.ndarray[Any, Any]]]:
    """``(report_id, arrays)`` of a valid report, one ``int32`` array per release in its shape.

    ``raw`` is the report's JSON text (``str`` or ``bytes``) or an already parsed object.
    Anything else than a valid report raises :class:`RejectedReportError`, and nothing else is
    ever raised."""
    obj = raw
    if isinstance(raw, bytes | bytearray | str):
        if len(raw) > max_report_bytes(round_):
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
    fields = obj["fields"]
    layout = round_.mechanism.report_fields(round_.n_cells)
    if not isinstance(fields, Mapping) or set(fields) != {name for name, *_ in layout}:
        raise RejectedReportError("shape", "fields must hold exactly the mechanism's releases")
    arrays = []
    for name, shape, lo, hi in layout:
        values = fields[name]
        if not isinstance(values, list) or len(values) != math.prod(shape):
            raise RejectedReportError(
                "shape", f"{name} must be a list of {math.prod(shape)} integers"
            )
        if not all(type(v) is int for v in values):
            raise RejectedReportError("type", f"{name} holds a value that is not an integer")
        if not all(lo <= v <= hi for v in values):
            raise RejectedReportError("range", f"{name} holds a value outside [{lo}, {hi}]")
        arrays.append(np.asarray(values, dtype=np.int32).reshape(shape))
    return report_id, arrays
