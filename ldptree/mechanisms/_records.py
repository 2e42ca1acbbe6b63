"""Validation of the records ``(cell, label)`` handed to a mechanism's ``privatize``.

Shapes and dtypes are checked before anything is traced, so misuse surfaces as a ``ValueError`` or
``TypeError`` naming the argument, never as a JAX tracer error. Value checks run in NumPy on
concrete inputs only (under an outer jit, jnp reductions would trace). Label *values* in range are
each mechanism's business: it clips or nulls out-of-domain labels itself, so its guarantee holds
for any input.
"""

from __future__ import annotations

import numbers
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


def check_records(
    cells: Any, labels: Any, n_cells: int, *, integer_labels: bool
) -> tuple[Any, Any]:
    """``(int cells[n], labels[n])`` (real labels as float32), or raise naming the argument.

    Real labels must not be NaN (a NaN survives clipping); class codes must be integers.
    Concrete records stay NumPy arrays in the dtypes ``jnp.asarray`` would give them (a kernel
    call transfers them once; a device copy here would be a dispatch per check); traced ones
    stay traced.
    """
    if int(n_cells) < 1:
        raise ValueError(f"n_cells must be >= 1, got {n_cells}")
    cells = _concrete_cells(cells, n_cells)
    if not isinstance(labels, jax.core.Tracer):
        kind = np.asarray(labels).dtype.kind
        if kind not in "biuf":
            raise TypeError(
                f"labels must be {'integer class codes' if integer_labels else 'real numbers'}, "
                f"got dtype {np.asarray(labels).dtype}"
            )
    labels = _as_array(labels, None if integer_labels else np.float32)
    if cells.ndim != 1 or labels.shape != cells.shape:
        raise ValueError(
            f"cells and labels must be 1-d of equal length, got {cells.shape} and {labels.shape}"
        )
    if not jnp.issubdtype(cells.dtype, jnp.integer):
        raise TypeError(f"cells must be integer cell indices, got dtype {cells.dtype}")
    if integer_labels and not jnp.issubdtype(labels.dtype, jnp.integer):
        raise TypeError(f"labels must be integer class codes, got dtype {labels.dtype}")
    if int(n_cells) < 1:
        raise ValueError(f"n_cells must be >= 1, got {n_cells}")
    if (
        not integer_labels
        and not isinstance(labels, jax.core.Tracer)
        and np.isnan(np.asarray(labels)).any()
    ):
        raise ValueError("labels contain NaN; every holder must hold a label (+-inf are clipped)")
    if not isinstance(cells, jax.core.Tracer) and cells.size:
        concrete = np.asarray(cells)
        lo, hi = int(concrete.min()), int(concrete.max())
        if lo < 0 or hi >= n_cells:
            raise ValueError(f"cells must lie in [0, {n_cells}), got values in [{lo}, {hi}]")
    return cells, labels


def _concrete_cells(cells: Any, n_cells: int) -> Any:
    """``cells`` checked in NumPy before JAX sees them: JAX (32-bit by default) would wrap an
    ``int64`` index such as ``2^32 + 1`` to cell 1. Traced cells pass through unchanged."""
    if isinstance(cells, jax.core.Tracer):
        return cells
    concrete = np.asarray(cells)
    if concrete.dtype.kind not in "iu":
        raise TypeError(f"cells must be integer cell indices, got dtype {concrete.dtype}")
    if concrete.ndim == 1 and concrete.size:
        lo, hi = int(concrete.min()), int(concrete.max())
        if lo < 0 or hi >= int(n_cells):
            raise ValueError(f"cells must lie in [0, {n_cells}), got values in [{lo}, {hi}]")
    return _as_array(concrete, None)


def _as_array(x: Any, dtype: Any) -> Any:
    """``jnp.asarray(x, dtype)`` for a traced ``x``; for a concrete one the same values and dtype
    (JAX's canonical dtype: ``int64`` becomes ``int32`` unless 64-bit mode is on) as a NumPy
    array."""
    if isinstance(x, jax.core.Tracer):
        return jnp.asarray(x, dtype=dtype)
    arr = np.asarray(x, dtype=dtype)
    return arr.astype(jax.dtypes.canonicalize_dtype(arr.dtype), copy=False)


def check_first_holder(first_holder: Any, n_holders: int) -> None:
    """Refuse holder indices ``first_holder .. first_holder + n_holders - 1`` outside
    ``[0, 2^32)``: ``first_holder`` must be an integer ``>= 0`` with ``first_holder + n_holders
    <= 2^32``, since 32-bit indices would wrap and two holders would share randomness (module
    ``_random``). A traced value (under the caller's ``jit``) cannot be checked and passes."""
    if isinstance(first_holder, jax.core.Tracer):
        return
    if isinstance(first_holder, jax.Array | np.ndarray) and first_holder.ndim == 0:
        if not jnp.issubdtype(first_holder.dtype, jnp.integer):
            raise TypeError(f"first_holder must be an integer, got dtype {first_holder.dtype}")
        first_holder = int(first_holder)
    if isinstance(first_holder, bool) or not isinstance(first_holder, numbers.Integral):
        raise TypeError(f"first_holder must be an integer >= 0, got {type(first_holder).__name__}")
    first = int(first_holder)
    if first < 0 or first + int(n_holders) > 2**32:
        raise ValueError(
            f"first_holder must be an integer >= 0 with first_holder + n <= 2**32 (holder "
            f"indices are 32-bit and must not wrap), got first_holder={first} for n={n_holders}"
        )
