"""A uniform grid of ``num_cell`` bins per feature on ``[0, 1]^d`` as a :class:`Partition`.

Bin ``k`` of a feature is ``[k / num_cell, (k + 1) / num_cell)`` (the last bin is closed: ``x = 1``
lands in it, as in the PHIST reference's clipped ``np.digitize``). The grid is a binary tree of
splits at ``k / num_cell``: feature 0 is bisected (by bin index) down to single bins, then feature
1 inside each of those, and so on, so ``cells(X)`` routing and JSON publication are the ones every
partition uses. ``L = num_cell^d`` leaves; the grid is data-independent.

:class:`GridPartitioner` is the grid as a :class:`~ldptree.protocols.Partitioner`, so the
histogram baselines run the same round as the tree estimators (partition, privatize, aggregate).
"""

from __future__ import annotations

import functools
from typing import Any

import attrs
import numpy as np

from ldptree._typing import PRNGKey
from ldptree._validation import NotApplicableError, check_int
from ldptree.partitions import Partition

#: Default cap on ``num_cell^d`` (about 4 million cells): above it the dense per-cell arrays and
#: the per-holder reports (``2 L`` numbers each) would exhaust memory.
MAX_CELLS = 2**22


def check_grid_size(num_cell: int, n_features: int, max_cells: int = MAX_CELLS) -> int:
    """``num_cell^d`` if it is at most ``max_cells``, else a :class:`NotApplicableError` (a
    ``ValueError``; checked before any allocation; Python integers, so no overflow)."""
    num_cell = check_int(num_cell, "num_cell", minimum=1)
    n_cells: int = num_cell**n_features
    if n_cells > max_cells:
        raise NotApplicableError(
            f"a grid with num_cell={num_cell} bins on each of d={n_features} features has "
            f"num_cell**d = {n_cells} cells, above max_cells={max_cells}: the histogram would not "
            "fit in memory (the papers report PHIST/APHIST 'corrupted' on such data); lower "
            "num_cell (num_cell=1 always fits) or reduce the dimension"
        )
    return n_cells


def uniform_grid(n_features: int, num_cell: int, *, max_cells: int = MAX_CELLS) -> Partition:
    """The grid partition of ``[0, 1]^d`` (module docstring), after :func:`check_grid_size`."""
    n_features = check_int(n_features, "n_features", minimum=1)
    check_grid_size(num_cell, n_features, max_cells)
    return _build(n_features, int(num_cell))


@attrs.frozen
class GridPartitioner:
    """The uniform grid of ``num_cell`` bins per feature as a partition rule (module docstring).

    Data-independent: ``fit`` reads only the number of columns ``d`` of ``X_public`` (an empty
    ``float[0, d]`` array when there is no public data) and returns :func:`uniform_grid`, refused
    with a ``ValueError`` when ``num_cell^d > max_cells``. ``y_public`` and ``key`` are unused.
    """

    num_cell: int
    max_cells: int = MAX_CELLS

    def fit(self, X_public: Any, y_public: Any = None, *, key: PRNGKey | None = None) -> Partition:
        """``float[n_q, d]`` -> the grid on ``[0, 1]^d``."""
        del y_public, key
        shape = np.shape(X_public)
        if len(shape) != 2:
            raise ValueError(f"X_public must be a 2-d array float[n_q, d], got shape {shape}")
        return uniform_grid(shape[1], self.num_cell, max_cells=self.max_cells)


# Data-independent and immutable, so shared across fits: a parameter grid refits the same few
# grids for every repetition and budget, and a 6^8-cell tree takes tens of seconds to build in
# Python. Six entries cover the papers' num_cell grids (about 0.5 GB at 6^8 cells, d = 8).
@functools.lru_cache(maxsize=6)
def _build(n_features: int, num_cell: int) -> Partition:
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    # iterative pre-order build: (node box in bin indices, feature being cut)
    stack = [(np.zeros(n_features, int), np.full(n_features, num_cell), 0, -1, False)]
    while stack:
        lo, hi, f, parent, is_right = stack.pop()
        node = len(feature)
        if parent >= 0:
            (right if is_right else left)[parent] = node
        lower.append(lo / num_cell)
        upper.append(hi / num_cell)
        while f < n_features and hi[f] - lo[f] == 1:
            f += 1
        left.append(-1)
        right.append(-1)
        if f == n_features:
            feature.append(-1)
            threshold.append(0.0)
            continue
        mid = (lo[f] + hi[f]) // 2
        feature.append(f)
        threshold.append(mid / num_cell)
        hi_left, lo_right = hi.copy(), lo.copy()
        hi_left[f], lo_right[f] = mid, mid
        stack.append((lo_right, hi, f, node, True))
        stack.append((lo, hi_left, f, node, False))
    return Partition.from_arrays(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        lower=np.array(lower),
        upper=np.array(upper),
    )
