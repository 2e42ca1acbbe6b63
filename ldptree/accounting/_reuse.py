"""A warning when one noise key privatizes two different samples.

Holder ``h``'s randomness is a function of the release's noise key and ``h`` alone. The noise key
of an estimator's round is derived from its ``random_state`` with the published partition and
the mechanism folded in (``ldptree.estimators.release_key``), so two fits with the same
``random_state``, partition and mechanism give every holder the *same* randomness. On the same
data that is harmless (the same reports again). On changed data it is not: comparing the two
releases cancels the noise. With randomized response, the XOR of a holder's two reports is the
XOR of its two true one-hot vectors, which reveals both cells whenever they differ.

:func:`watch_key_use` follows a round's chunks as they are privatized and records, per noise
key, a *signature* of the data: the number of holders, every label, and a fixed sample of
feature rows (64 per chunk) — computed with a few vectorised passes over the labels (a full
digest of the features would cost as much as the round). A later round under the same key whose
signature differs raises :class:`KeyReuseWarning` once its reports are drawn. A change confined
to features of rows outside the sample is not seen; the remedy either way is a fresh
``random_state`` per release (or ``None``: fresh entropy each fit).
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["KeyReuseWarning", "watch_key_use"]

#: Noise keys remembered (the most recent).
_MAX_KEYS = 4096
#: Feature rows whose holder index is a multiple of this are part of the signature.
_STRIDE = 257
_MULT = np.uint64(0x9E3779B97F4A7C15)
_MOD = 1 << 64
#: Longest cached ramp (8 MiB); longer chunks build theirs each time.
_MAX_RAMP = 1 << 20


class KeyReuseWarning(UserWarning):
    """One noise key privatized two different samples (module docstring)."""


_SEEN: OrderedDict[bytes, tuple[int, ...]] = OrderedDict()
_LOCK = threading.Lock()


def _key_bytes(key: Any) -> bytes | None:
    """The key's data, or ``None`` for a traced key (inside a caller's ``jit``)."""
    if isinstance(key, jax.core.Tracer):
        return None
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    if isinstance(data, jax.core.Tracer):
        return None
    return np.asarray(data).tobytes()


def _bits(values: Any) -> np.ndarray[Any, Any]:
    """The raw bits of numeric ``values`` (any shape), one ``uint64`` per number, row-major."""
    raw = np.ascontiguousarray(values)
    if raw.dtype.kind not in "biuf" or raw.dtype.itemsize not in (1, 2, 4, 8):
        raw = raw.astype(np.float64)
    flat = raw.reshape(-1).view(f"u{raw.dtype.itemsize}")
    return flat if flat.dtype == np.uint64 else flat.astype(np.uint64)


@functools.lru_cache(maxsize=8)
def _ramp(size: int) -> np.ndarray[Any, Any]:
    """``0, 1, ..., size - 1`` as ``uint64`` (chunks repeat their size: built once)."""
    out = np.arange(size, dtype=np.uint64)
    out.setflags(write=False)
    return out


def _sums(values: Any, start: int, stride: int = 1) -> tuple[int, int]:
    """``(sum_k b_k, sum_k p_k b_k)`` modulo ``2^64`` over the numbers' raw bits ``b_k`` and
    their places ``p_k`` (holder ``start + stride i`` and column ``c``, spread by an odd
    multiplier). Integer sums modulo ``2^64`` do not depend on how the rows are chunked; a
    changed, moved or added number changes them except with probability ``~2^-64``. Two
    passes over the labels (a sum and an integer dot product): a small part of the round."""
    bits = _bits(values)
    if bits.size == 0:
        return 0, 0
    rows = max(1, int(np.shape(values)[0]))
    width = bits.size // rows
    total = int(bits.sum(dtype=np.uint64))
    with np.errstate(over="ignore"):
        if width == 1 and stride == 1:
            # sum_i (start + i) b_i = start sum b + sum i b_i: a cached ramp, no new arrays
            ramp = _ramp(rows) if rows <= _MAX_RAMP else np.arange(rows, dtype=np.uint64)
            placed = (start * total + int(np.dot(bits, ramp))) % _MOD
            return total, placed * int(_MULT) % _MOD
        place = np.arange(start, start + rows * stride, stride, dtype=np.uint64) * _MULT
        place = (place[:, None] + np.arange(width, dtype=np.uint64)[None, :]).reshape(-1)
        return total, int(np.dot(bits, place))


def watch_key_use(
    key: Any,
    chunks: Iterable[tuple[Any, Any]],
    rows: Callable[[Any], Any] | None = None,
) -> Iterator[tuple[Any, Any]]:
    """``chunks`` unchanged, recording the data's signature under the noise ``key``; warns
    (:class:`KeyReuseWarning`) at the end when ``key`` already privatized a sample with a
    different signature in this process (module docstring). ``rows`` (default: as they are)
    maps the sampled rows of a chunk to what the holders route, for a reader whose chunks hold
    them in another form (unscaled, float32): the same data then signs alike on every path."""
    data = _key_bytes(key)
    n, sums = 0, [0, 0, 0, 0]
    mod = 1 << 64
    for X, y in chunks:
        if data is not None:
            m = int(np.shape(y)[0])
            label_sums = _sums(y, n)
            first = -n % _STRIDE  # the same rows however the data is chunked
            sample = np.asarray(X)[first::_STRIDE]
            row_sums = _sums(sample if rows is None else rows(sample), n + first, _STRIDE)
            for i, v in enumerate((*label_sums, *row_sums)):
                sums[i] = (sums[i] + v) % mod
            n += m
        yield X, y
    if data is None:
        return
    signature = (n, *sums)
    with _LOCK:
        before = _SEEN.get(data)
        _SEEN[data] = signature
        _SEEN.move_to_end(data)
        while len(_SEEN) > _MAX_KEYS:
            _SEEN.popitem(last=False)
    if before is not None and before != signature:
        warnings.warn(
            "this release used the same noise key as an earlier release in this process (the "
            "same random_state, partition and mechanism) on different private data: every "
            "holder drew the same randomness twice, and comparing the two releases cancels it "
            "(the XOR of two randomized-response reports with shared flips reveals both cells). "
            "Give each release on changed data its own random_state, or random_state=None",
            KeyReuseWarning,
            stacklevel=3,
        )
