"""Predicted variance of a mechanism's debiased cell estimates, from public quantities only.

A mechanism that implements :class:`SupportsVariance` says, for a partition of ``n_cells`` cells,
how much variance **one holder** adds to a debiased cell count ``c^_j`` and to a debiased label
sum ``s^_j`` (per-class count for class mechanisms), as an upper bound over the holder's record
(in cell ``j`` or not, any label in the declared bound) and over cells. With ``n`` independent
holders the variance of ``c^_j`` is at most ``n * count`` and that of ``s^_j`` at most
``n * label_sum``. These bounds use only the published partition size, epsilon and the declared
label bound, so comparing them (to pick a mechanism or a budget split) costs no privacy.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

__all__ = ["CellVariance", "SupportsVariance"]


@attrs.frozen
class CellVariance:
    """Per-holder variance bounds of the debiased estimates of one cell.

    ``count``: variance one holder adds to ``c^_j``; ``label_sum``: variance one holder adds to
    ``s^_j`` (label units squared for real labels; for class mechanisms, to one per-class count).
    """

    count: float
    label_sum: float


@runtime_checkable
class SupportsVariance(Protocol):
    """A mechanism that predicts the variance of its debiased cell estimates."""

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds for a partition of ``n_cells`` cells."""
        ...
