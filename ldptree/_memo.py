"""Memoising by value where the value allows it.

Immutable objects (mechanisms are frozen attrs classes) hash by value, so work that depends only
on them (a certificate, a kernel's description) can be cached in a ``functools.lru_cache``. A
user's object that cannot be hashed is not an error: the work is simply done again.
"""

from __future__ import annotations

import functools
from typing import Any, TypeVar

R = TypeVar("R")


def memoised(cached: functools._lru_cache_wrapper[R], first: Any, *args: Any) -> R:
    """``cached(first, *args)``, or the uncached function when ``first`` is unhashable."""
    try:
        hash(first)
    except TypeError:
        built: R = cached.__wrapped__(first, *args)
        return built
    return cached(first, *args)
