"""Stable text for callables in fingerprints: no memory addresses, which change every run."""

from __future__ import annotations

import functools
from typing import Any


def callable_label(func: Any) -> str:
    """``module.qualname`` (with the bound arguments of a ``functools.partial``)."""
    if isinstance(func, functools.partial):
        bound = [repr(a) for a in func.args] + [
            f"{k}={v!r}" for k, v in sorted(func.keywords.items())
        ]
        return f"{callable_label(func.func)}({', '.join(bound)})"
    module = getattr(func, "__module__", None) or type(func).__module__
    name = getattr(func, "__qualname__", None) or type(func).__qualname__
    return f"{module}.{name}"
