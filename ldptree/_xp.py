"""One array namespace for the curator's arithmetic: NumPy on concrete inputs, ``jax.numpy``
under a trace.

Debiasing, aggregation and read-outs are written once against a namespace ``xp`` picked by
:func:`namespace`. On concrete inputs ``xp`` is NumPy and the arithmetic is the host arithmetic
(float64, exact integer sums), so results do not change when a function gains a traced path. When
any input is a JAX tracer (``jax.jit``, ``jax.vmap``, ``jax.grad``) ``xp`` is ``jax.numpy`` and the
same expressions trace; its floats are JAX's canonical float (float64 only inside
``jax.enable_x64(True)``, float32 otherwise), which :func:`float_dtype` names.

Both namespaces round every elementwise ``+ - * /`` correctly (IEEE 754), so under x64 a traced
computation built from those operations reproduces the host result exactly; reductions may sum in
another order and agree to a few ulps.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def is_traced(*trees: Any) -> bool:
    """Whether any array leaf of ``trees`` is a JAX tracer."""
    return any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(list(trees)))


def namespace(*trees: Any) -> Any:
    """``jax.numpy`` if any leaf of ``trees`` is traced, else ``numpy``."""
    return jnp if is_traced(*trees) else np


def float_dtype(xp: Any) -> Any:
    """The float of ``xp``'s arithmetic: float64 in NumPy; JAX's canonical float in jnp."""
    if xp is np:
        return np.float64
    return jax.dtypes.canonicalize_dtype(np.float64)


def int_dtype(xp: Any) -> Any:
    """The widest integer of ``xp``: int64 in NumPy; JAX's canonical integer in jnp."""
    if xp is np:
        return np.int64
    return jax.dtypes.canonicalize_dtype(np.int64)


def as_float(x: Any, xp: Any) -> Any:
    """``x`` as an array of :func:`float_dtype`."""
    return xp.asarray(x, dtype=float_dtype(xp))


def bincount(xp: Any, x: Any, length: int, weights: Any = None) -> Any:
    """Counts (or summed ``weights``) of the values ``0 .. length - 1`` of ``x``: ``[length]``.

    Values of ``x`` must lie in ``[0, length)`` (NumPy would grow the output, jnp drop them).
    """
    if xp is np:
        return np.bincount(x, weights=weights, minlength=length)
    return jnp.bincount(x, weights=weights, length=length)
