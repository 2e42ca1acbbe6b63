"""Reading a CSV data file (plain or gzip) into its header and string cells.

Cells are stripped of surrounding blanks; a cell equal to one of :data:`MISSING_TOKENS` is a
missing value. Every row must have as many fields as the header (a ragged row is an error that
names the file and line, never silently padded). A number is what :data:`CSV_NUMBER` matches:
ASCII digits, an optional sign, at most one decimal point and an optional exponent, as CSV
writers print numbers; Python's own ``float`` syntax is wider (``1_000``, non-ASCII digits) and
is not used to decide what is a number.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from pathlib import Path
from typing import Any

#: Cell values read as "missing": empty, ``?`` (UCI's convention), and the usual NA spellings.
MISSING_TOKENS = frozenset({"", "?", "NA", "N/A", "NaN", "nan", "null", "NULL", "None"})
#: A number in a CSV cell (e.g. ``-12``, ``3.``, ``.5``, ``1.5e-3``).
CSV_NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")


def read_table(path: Path) -> tuple[tuple[str, ...], list[list[str]]]:
    """``(header, rows)`` of a comma-separated file with one header row; ``.gz`` is decompressed."""
    raw = path.read_bytes()
    if path.name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as err:
            raise ValueError(f"{path} is not a valid gzip file: {err}") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ValueError(f"{path} is not UTF-8 text: {err}") from None
    try:
        return _parse(path, csv.reader(io.StringIO(text, newline="")))
    except csv.Error as err:  # e.g. a field longer than csv.field_size_limit()
        raise ValueError(f"{path} is not a readable CSV file: {err}") from None


def _parse(path: Path, reader: Any) -> tuple[tuple[str, ...], list[list[str]]]:
    try:
        header = tuple(cell.strip() for cell in next(reader))
    except StopIteration:
        raise ValueError(f"{path} is empty; expected a header row") from None
    if len(set(header)) != len(header):
        raise ValueError(f"{path}: the header repeats a column name: {list(header)}")
    rows: list[list[str]] = []
    for line, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) != len(header):
            raise ValueError(
                f"{path}: line {line} has {len(row)} fields but the header has {len(header)}"
            )
        rows.append([cell.strip() for cell in row])
    return header, rows


def is_missing(cell: str) -> bool:
    """Whether a (stripped) cell is a missing value: one of :data:`MISSING_TOKENS`, or any
    spelling that Python reads as a NaN (``nAn``, ``-NaN``: never a value)."""
    return cell in MISSING_TOKENS or cell.lower().lstrip("+-") == "nan"
