"""A report's integers as compact bytes, for the collector's store.

A valid report's releases hold integers in known ranges (``report_fields``: ``{0, 1}`` for bit
flips, ``[-margin, span + margin]`` for geometric codes, ...). Each release is stored in the
narrowest exact form: a ``{0, 1}`` release as packed bits (8 per byte), any other as the
smallest little-endian integer type holding its range. A report is the concatenation of its
releases, a fixed number of bytes for a given round, so ``n`` stored reports decode as one
``uint8[n, row_bytes]`` matrix, release by release, without a Python loop over reports.
Decoding gives back exactly the ``int32`` arrays :func:`~ldptree.protocol.parse_report` gave.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

__all__ = ["ReportCodec"]


def _dtype(lo: int, hi: int) -> np.dtype[Any]:
    for name in ("<u1", "<u2", "<u4") if lo >= 0 else ("<i1", "<i2", "<i4"):
        info = np.iinfo(np.dtype(name))
        if info.min <= lo and hi <= info.max:
            return np.dtype(name)
    raise ValueError(f"a release range [{lo}, {hi}] does not fit 32-bit integers")


@attrs.frozen
class _Part:
    shape: tuple[int, ...]
    count: int  # integers in the release
    bits: bool  # packed bits, else ``dtype``
    dtype: np.dtype[Any]
    start: int  # byte offset in a stored report
    stop: int


@attrs.frozen(eq=False)
class ReportCodec:
    """Encodes one report (its ``int32`` release arrays) and decodes many at once."""

    parts: tuple[_Part, ...]
    row_bytes: int

    @classmethod
    def of(cls, layout: Any) -> ReportCodec:
        """The codec of a mechanism's ``report_fields`` (``(name, shape, lo, hi)`` each)."""
        parts, offset = [], 0
        for _, shape, lo, hi in layout:
            count = math.prod(shape)
            bits = lo >= 0 and hi <= 1
            dtype = np.dtype(np.uint8) if bits else _dtype(lo, hi)
            size = -(-count // 8) if bits else count * dtype.itemsize
            parts.append(_Part(tuple(shape), count, bits, dtype, offset, offset + size))
            offset += size
        return cls(parts=tuple(parts), row_bytes=offset)

    def encode(self, arrays: list[np.ndarray[Any, Any]]) -> bytes:
        """One report's bytes (``row_bytes`` of them)."""
        out = []
        for part, arr in zip(self.parts, arrays, strict=True):
            flat = np.asarray(arr).reshape(-1)
            out.append(np.packbits(flat.astype(np.uint8)) if part.bits else flat.astype(part.dtype))
        return b"".join(a.tobytes() for a in out)

    def decode(self, rows: np.ndarray[Any, np.dtype[np.uint8]]) -> list[np.ndarray[Any, Any]]:
        """The ``int32`` release arrays (leading report axis) of ``uint8[n, row_bytes]``."""
        n = rows.shape[0]
        arrays = []
        for part in self.parts:
            raw = rows[:, part.start : part.stop]
            if part.bits:
                values = np.unpackbits(raw, axis=1, count=part.count)
            else:
                values = np.ascontiguousarray(raw).view(part.dtype)
            arrays.append(values.astype(np.int32).reshape(n, *part.shape))
        return arrays
