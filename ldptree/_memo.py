"""Memoising by content: work that depends only on an object's value is cached under a
*fingerprint* of that value, never under the object's identity or its own ``__hash__``.

A certificate, a mechanism's checked releases or its kernel's description are functions of the
mechanism's parameters. Caching them by identity (or by a ``__hash__`` that ignores some state)
goes wrong when the object changes after the first call: a mutable user mechanism re-run at a
larger budget would keep the first call's certificate. So :func:`memoised` caches only objects
whose content it can read completely (:func:`fingerprint`), and recomputes the fingerprint on
every call, so a changed value is a new key; anything else is simply recomputed every time.
"""

from __future__ import annotations

import enum
import functools
import math
import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, TypeVar

import attrs
import numpy as np

R = TypeVar("R")

__all__ = ["fingerprint", "memoised"]

#: Values that are immutable and compare by value.
_ATOMS = (type(None), bool, int, str, bytes, complex)
#: Deepest nesting read by :func:`fingerprint` (deeper values are treated as opaque).
_MAX_DEPTH = 32


def _frozen_attrs(cls: type) -> bool:
    """An attrs class whose instances refuse attribute assignment (``@attrs.frozen``)."""
    setter = getattr(cls, "__setattr__", None)
    return attrs.has(cls) and getattr(setter, "__name__", "") == "_frozen_setattrs"


def _fingerprint(value: Any, depth: int) -> Hashable | None:
    if depth > _MAX_DEPTH:
        return None
    if isinstance(value, _ATOMS):
        return (type(value), value)
    if isinstance(value, float):
        # hex: distinguishes -0.0 from 0.0 and makes NaN equal to itself (a stable key)
        return (float, value.hex() if not math.isnan(value) else "nan")
    if isinstance(value, enum.Enum):
        return (type(value), value.name)
    if isinstance(value, np.generic):
        return (np.generic, value.dtype.str, value.tobytes())
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return None
        return (np.ndarray, value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
    if isinstance(value, tuple | frozenset):
        items = [_fingerprint(v, depth + 1) for v in value]
        if any(item is None for item in items):
            return None
        return (type(value), tuple(items) if isinstance(value, tuple) else frozenset(items))
    explicit = getattr(type(value), "fingerprint", None)
    if callable(explicit) and not isinstance(value, type):
        # an explicit fingerprint is the object's promise that it determines everything the
        # memoised work reads; it must be hashable
        own = explicit(value)
        hash(own)
        return (type(value), "explicit", own)
    cls = type(value)
    if _frozen_attrs(cls):
        parts: list[Any] = [cls]
        for field in attrs.fields(cls):
            item = _fingerprint(getattr(value, field.name), depth + 1)
            if item is None:
                return None
            parts.append((field.name, item))
        extra = getattr(value, "__dict__", None)
        if extra:  # an unslotted subclass can carry state outside its fields
            names = {f.name for f in attrs.fields(cls)}
            for name in sorted(set(extra) - names):
                item = _fingerprint(extra[name], depth + 1)
                if item is None:
                    return None
                parts.append((name, item))
        return tuple(parts)
    return None


def fingerprint(value: Any) -> Hashable | None:
    """A hashable key determined by ``value``'s content, or ``None`` when ``value`` holds
    anything whose content cannot be read completely.

    Read by content: ``None``, numbers, strings, bytes, enums, NumPy scalars and arrays (their
    bytes), tuples and frozensets of such, instances of *frozen* attrs classes whose fields
    (and any instance ``__dict__`` entries) are such, and objects with a ``fingerprint()``
    method (which then vouches for their content). Everything else — mutable objects, classes
    hashed by identity, functions — has no fingerprint. The key includes the type itself.
    """
    return _fingerprint(value, 0)


class _Store:
    """A thread-safe least-recently-used dict of one memoised function's results."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self.items: OrderedDict[Hashable, Any] = OrderedDict()
        self.lock = threading.Lock()


_STORES: dict[Any, _Store] = {}
_STORES_LOCK = threading.Lock()


def _store(cached: Any) -> _Store:
    with _STORES_LOCK:
        store = _STORES.get(cached)
        if store is None:
            params = getattr(cached, "cache_parameters", None)
            size = params().get("maxsize") if params is not None else None
            store = _STORES[cached] = _Store(int(size) if size else 512)
        return store


def memoised(cached: functools._lru_cache_wrapper[R], first: Any, *args: Any) -> R:
    """``cached(first, *args)``, memoised under ``(fingerprint(first), args)``; computed afresh
    when ``first`` has no fingerprint (module docstring). ``cached`` is an
    ``functools.lru_cache``-wrapped function; its own cache is bypassed (it would key by
    ``first``'s identity or ``__hash__``), only its ``maxsize`` is used."""
    compute = cached.__wrapped__
    key = fingerprint(first)
    if key is None:
        built: R = compute(first, *args)
        return built
    full = (key, args)
    store = _store(cached)
    with store.lock:
        if full in store.items:
            store.items.move_to_end(full)
            hit: R = store.items[full]
            return hit
    result: R = compute(first, *args)
    with store.lock:
        store.items[full] = result
        store.items.move_to_end(full)
        while len(store.items) > store.maxsize:
            store.items.popitem(last=False)
    return result
