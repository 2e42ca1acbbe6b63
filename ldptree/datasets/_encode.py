"""Turning string columns into numbers: numeric parsing and one-hot encoding.

* A numeric column becomes ``float64`` with ``NaN`` for missing cells; a non-numeric cell is an
  error naming the column, the row and the fix (declare the column categorical).
* A categorical column with levels ``v_1 < ... < v_m`` (numeric order when every level is a
  number, else string order) becomes ``m`` indicator columns named ``"col=v"``; a missing cell
  becomes its own indicator ``"col=<missing>"`` (so no statistic of any row is needed to encode
  it). These are the levels of the whole file, private rows included: the experiment splits
  keep only the levels their public rows have (``ldptree.experiments.public_levels``).
"""

from __future__ import annotations

import math

import numpy as np

from ldptree._typing import FloatArray
from ldptree.datasets._table import CSV_NUMBER, is_missing

MISSING_LEVEL = "<missing>"
_INFINITE = frozenset({"inf", "infinity"})


def as_number(cell: str) -> float | None:
    """The finite number a cell spells by CSV rules (:data:`~._table.CSV_NUMBER`), else ``None``
    (``inf`` is no value a holder can hold)."""
    if not CSV_NUMBER.fullmatch(cell):
        return None
    try:
        value = float(cell)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_numeric(cells: list[str], column: str, source: str) -> FloatArray:
    """``float64[n]`` of a numeric column; missing cells are ``NaN``."""
    out = np.empty(len(cells))
    for i, cell in enumerate(cells):
        if is_missing(cell):
            out[i] = np.nan
            continue
        value = as_number(cell)
        if value is None and cell.lower().lstrip("+-") in _INFINITE:
            raise ValueError(
                f"{source}: column {column!r}, data row {i + 1} holds {cell!r}; numeric cells "
                "must be finite (write a missing value as empty or NA)"
            )
        if value is None:
            raise ValueError(
                f"{source}: column {column!r}, data row {i + 1} holds the non-numeric value "
                f"{cell!r} (a number is written with the digits 0-9, an optional sign, one "
                "decimal point and an optional exponent, e.g. -1.5e3: no '_' separators); "
                "list the column in categorical_feature_columns of the manifest or fix the file"
            )
        out[i] = value
    return out


def _level_order(levels: set[str]) -> list[str]:
    numbers = {level: as_number(level) for level in levels}
    if all(v is not None for v in numbers.values()):
        return sorted(levels, key=lambda level: (numbers[level], level))
    return sorted(levels)


def one_hot(cells: list[str], column: str) -> tuple[FloatArray, list[str]]:
    """``(float64[n, m] indicators, m column names)`` of a categorical column."""
    present = {cell for cell in cells if not is_missing(cell)}
    levels = _level_order(present)
    has_missing = any(is_missing(cell) for cell in cells)
    index = {level: j for j, level in enumerate(levels)}
    width = len(levels) + int(has_missing)
    out = np.zeros((len(cells), width))
    for i, cell in enumerate(cells):
        out[i, index[cell] if cell in index else len(levels)] = 1.0
    names = [f"{column}={level}" for level in levels]
    if has_missing:
        names.append(f"{column}={MISSING_LEVEL}")
    return out, names
