"""Read-outs: per-cell predictions from debiased cell estimates (LPDT paper eq. (5)).

``f_j = s^_j / c^_j`` for cells whose estimated private count is large enough; otherwise the
cell falls back to a public estimate (the reference predicts the public leaf mean). The reference
rule is ``c^_j < tau n`` with ``tau = 0`` by default, which only catches negative counts; we also
treat ``c^_j = 0`` as too small (the paper's ``0/0``), since a ratio with a zero denominator is
undefined.

Both read-outs are pure array code (:mod:`ldptree._xp`): NumPy float64 on concrete inputs,
``jax.numpy`` under ``jax.jit``/``jax.vmap``.
"""

from __future__ import annotations

import numpy as np

from ldptree._typing import BoolArray, FloatArray
from ldptree._xp import bincount, namespace
from ldptree.protocols import CellEstimates


def ratio_with_fallback(
    estimates: CellEstimates, fallback: FloatArray, *, min_ratio: float
) -> tuple[FloatArray, BoolArray]:
    """``(values[L], used_fallback[L])``: ``s^/c^`` if ``c^ > min_ratio n``, else ``fallback``."""
    xp = namespace(estimates, fallback)
    usable = estimates.count > min_ratio * estimates.n
    safe = xp.where(usable, estimates.count, 1.0)
    values = xp.where(usable, estimates.label_sum / safe, fallback)
    return values, ~usable


def cell_means(cells: np.ndarray, y: FloatArray, n_cells: int, default: float) -> FloatArray:
    """Mean of ``y`` per cell (``default`` for cells with no rows): public leaf means."""
    xp = namespace(cells, y)
    counts = bincount(xp, cells, n_cells)
    sums = bincount(xp, cells, n_cells, weights=y)
    means: FloatArray = xp.where(counts > 0, sums / xp.maximum(counts, 1), default)
    return means
