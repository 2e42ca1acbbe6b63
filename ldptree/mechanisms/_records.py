"""Validation of the records ``(cell, label)`` handed to a mechanism's ``privatize``.

Shapes and dtypes are checked before anything is traced, so misuse surfaces as a ``ValueError`` or
``TypeError`` naming the argument, never as a JAX tracer error. Label *values* are not checked
here: each mechanism clips or nulls out-of-domain labels itself, so its guarantee holds for any
input.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def check_records(
    cells: Any, labels: Any, n_cells: int, *, integer_labels: bool
) -> tuple[jax.Array, jax.Array]:
    """``(int32[n] cells, labels[n])`` or raise naming ``cells``/``labels``/``n_cells``."""
    cells = jnp.asarray(cells)
    labels = jnp.asarray(labels)
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
    if not isinstance(cells, jax.core.Tracer) and cells.size:
        lo, hi = int(cells.min()), int(cells.max())
        if lo < 0 or hi >= n_cells:
            raise ValueError(f"cells must lie in [0, {n_cells}), got values in [{lo}, {hi}]")
    return cells.astype(jnp.int32), labels
