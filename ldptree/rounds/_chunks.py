"""The one place where holders' rows are cut into pieces, and the one chunk-size formula.

Holder ``i`` is the ``i``-th row in arrival order and draws its randomness from the release key
and ``i`` alone, and the built-in statistics are exact integer sums, so how rows are cut never
changes a result; it bounds memory (``O(piece rows * n_cells)``) and fixes the shapes the
kernels compile for. Every reader of private rows and every executor cuts through :func:`cut`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np

from ldptree._validation import check_int

#: ``(rows, labels)`` of consecutive holders.
Piece = tuple[Any, Any]

#: Rows routed per call by the aggregate simulation (a power of two: one compiled shape).
ROUTING_ROWS = 1 << 18
#: Released numbers per piece when an estimator leaves the chunk size to the round.
REPORT_NUMBERS = 1 << 22


def cut(X: Any, y: Any, size: int) -> Iterator[Piece]:
    """``(X[s:s + size], y[s:s + size])`` for ``s = 0, size, 2 size, ...``: the pieces of at most
    ``size`` rows of one chunk, in order (none when it has no rows)."""
    for start in range(0, int(X.shape[0]), size):
        yield X[start : start + size], y[start : start + size]


def pieces(chunks: Iterable[Piece], size: int) -> Iterator[Piece]:
    """Non-empty pieces of at most ``size`` rows of consecutive ``chunks``, in order."""
    for X, y in chunks:
        yield from cut(X, y, size)


def numbered(chunks: Iterable[Piece]) -> Iterator[tuple[int, Any, Any]]:
    """``(first holder, X, y)`` of consecutive chunks: holders are numbered in arrival order."""
    first = 0
    for X, y in chunks:
        yield first, X, y
        first += int(X.shape[0])


def rebatch(chunks: Iterable[Piece], size: int) -> Iterator[Piece]:
    """The rows of ``chunks``, in order, regrouped into batches of exactly ``size`` rows (the
    last one shorter, none empty)."""
    X_parts: list[Any] = []
    y_parts: list[Any] = []
    held = 0
    for X, y in chunks:
        X_parts.append(np.asarray(X))
        y_parts.append(np.asarray(y))
        held += X_parts[-1].shape[0]
        if held < size:
            continue
        X_all, y_all = _joined(X_parts), _joined(y_parts)
        full = held - held % size
        yield from cut(X_all[:full], y_all[:full], size)
        X_parts, y_parts, held = [X_all[full:]], [y_all[full:]], held - full
    if held:
        yield _joined(X_parts), _joined(y_parts)


def _joined(parts: list[Any]) -> Any:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def mark_last(chunks: Iterable[Piece], size: int, padded_at: list[int]) -> Iterator[Piece]:
    """``chunks`` unchanged and in order; just before the last one is yielded, ``padded_at[0]``
    becomes its first holder's index if it is shorter than ``size`` and follows a piece of
    ``size`` rows. That piece may then be padded to ``size`` rows (:func:`pad_rows`) and
    summarised by the kernel the full pieces already compiled (one compiled shape per stream).
    A lone short piece, or a stream of short pieces, is left at its own size: padding it would
    only add work."""
    start, full, held = 0, False, None
    for piece in chunks:
        if held is not None:
            yield held
            start += int(held[0].shape[0])
            full = full or int(held[0].shape[0]) == size
        held = piece
    if held is not None:
        if full and int(held[0].shape[0]) < size:
            padded_at[0] = start
        yield held


def pad_rows(a: Any, rows: int) -> np.ndarray[Any, Any]:
    """``a`` (on the host) followed by zero rows up to ``rows`` rows (``a`` itself when it has
    ``rows`` rows already)."""
    a = np.asarray(a)
    if a.shape[0] == rows:
        same: np.ndarray[Any, Any] = a
        return same
    out = np.zeros((rows, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def chunk_rows(
    chunk_size: Any,
    *,
    numbers: int,
    budget: int = REPORT_NUMBERS,
    cap: bool = False,
    simulated: bool = False,
) -> int:
    """Holders per piece of a round whose holders release ``numbers`` numbers each: a given
    ``chunk_size``, with ``cap`` at most ``budget // numbers`` (at least 1); ``None``:
    ``budget // numbers`` rounded down to a multiple of 1024 (at least 1024), or
    :data:`ROUTING_ROWS` for ``simulated`` rounds (no reports are drawn per piece)."""
    if chunk_size is not None:
        rows = check_int(chunk_size, "chunk_size", minimum=1)
        return rows if simulated or not cap else max(1, min(rows, budget // max(numbers, 1)))
    if simulated:
        return ROUTING_ROWS
    return max(1024, budget // max(numbers, 1) // 1024 * 1024)
