"""k-subset selection on the cell (LPDT) or on the (cell, class) pair (LPCT), built on the kit
(:class:`~ldptree.mechanisms.SubsetRelease`).

Each holder reports a set of ``k`` items that holds its own with a raised probability (exact
law and sampler in :mod:`ldptree.mechanisms._subset`). Item ``j``'s indicator ``Z_j`` has mean
``offset + slope 1{x = j}`` (exact rationals of the realised law), so
``N^_j = (C_j - n offset) / slope`` is unbiased for the number of holders whose item is ``j``
(``C_j`` reports holding ``j``).

* :class:`SubsetLaplaceMechanism` (regression): subsets of the ``L`` cells with budget
  ``rho eps`` plus the geometric label of :mod:`~ldptree.mechanisms._geometric_label`
  (``(1 - rho) eps``). ``c^_j = N^_j`` and ``s^_j = (lo (C_j - n offset) + step (S_j - offset S))
  / slope`` with ``S_j = sum_i Z_ij code_i`` (the label release is independent of the subset given
  the record); per-holder variance bounds from the indicator's two means
  (:meth:`~ldptree.mechanisms._geometric_label.GeometricLabel.indicator_cell_variance`).
* :class:`SubsetCellClassMechanism` (classification): subsets of the ``L (K + 1)`` pairs
  ``(cell, class)`` with the whole ``eps``; an undeclared class code is the extra item ``K`` of its
  cell and is counted nowhere. ``V^_jk = N^_jk`` (``float[L, K]``), ``c^_j = sum_{k < K} N^_jk``;
  the variance of ``c^_j`` uses the exact pair probabilities of the subset
  (:meth:`~ldptree.mechanisms._subset.SubsetLaw.block_variance`).

Variance: an outside holder adds about ``q (1 - q) / (p - q)^2`` to a count with ``k`` near
``d / (e^eps + 1)``, which for large ``d`` approaches ``4 e^eps / (e^eps - 1)^2`` (optimized unary
encoding's) while the report holds ``k`` items instead of ``L`` noisy bits.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import jax
import numpy as np

from ldptree.mechanisms._item_mechanisms import ItemCellLabel, ItemPairs
from ldptree.mechanisms._kit import KitMechanism
from ldptree.mechanisms._subset import SubsetRelease, _to_size

__all__ = [
    "SubsetCellClassMechanism",
    "SubsetCellClassReport",
    "SubsetLaplaceMechanism",
    "SubsetLaplaceReport",
]


class SubsetLaplaceReport(NamedTuple):
    """Reports of ``n`` holders: the subset ``cell`` ``bool[n, L]`` and noisy label levels
    ``code`` ``int32[n]`` (the released label is ``lo + label_step * code``)."""

    cell: jax.Array
    code: jax.Array


@attrs.frozen
class SubsetLaplaceMechanism(ItemCellLabel, KitMechanism):
    """k-subset selection on the cell + one exact noisy label (module docstring).

    Parameters
    ----------
    epsilon, label_bound, budget_split:
        As for :class:`RRLaplaceMechanism`.
    subset_size:
        ``k``; ``None`` (default) takes the best ``k`` for the cell count and budget. At most
        ``L - 1`` is used.
    """

    subset_size: int | None = attrs.field(default=None, converter=_to_size)

    report_type = SubsetLaplaceReport

    @property
    def cell_release(self) -> SubsetRelease:
        """The subset of cells (budget ``rho eps``)."""
        return SubsetRelease("cell", self.cell_epsilon, self.subset_size)

    item_kind = "k-subset selection"

    def item_law(self, n_cells: int) -> Any:
        return self.cell_release.law(n_cells)


class SubsetCellClassReport(NamedTuple):
    """Reports of ``n`` holders: the subset ``pairs`` ``bool[n, L, K + 1]`` of (cell, class)
    items (class ``K`` stands for undeclared codes)."""

    pairs: jax.Array


@attrs.frozen
class SubsetCellClassMechanism(ItemPairs, KitMechanism):
    """k-subset selection on the pair (cell, class) (module docstring).

    Parameters
    ----------
    epsilon, n_classes:
        As for :class:`OLHCellClassMechanism`.
    subset_size:
        ``k``; ``None`` (default) takes the best ``k`` for the item count and budget.
    """

    subset_size: int | None = attrs.field(default=None, converter=_to_size)

    report_type = SubsetCellClassReport

    @property
    def pair_release(self) -> SubsetRelease:
        """The subset of (cell, class) items (the whole ``eps``)."""
        items = np.arange(self.n_classes + 1)
        return SubsetRelease("pairs", self.epsilon, self.subset_size, label_index=items)

    item_kind = "k-subset selection"

    def item_law(self, n_cells: int) -> Any:
        return self.pair_release.law(n_cells)

    def report_width(self, n_cells: int) -> int:
        """Numbers released per holder: ``L (K + 1)`` bits."""
        return int(n_cells) * (self.n_classes + 1)

    def _count_variances(self, law: Any) -> tuple[float, float]:
        """From the exact pair probabilities of the subset over cell ``j``'s ``K`` declared
        items, holding the own item or not
        (:meth:`~ldptree.mechanisms._subset.SubsetLaw.block_variance`)."""
        k, slope2 = self.n_classes, law.slope**2
        return law.block_variance(k, True) / slope2, law.block_variance(k, False) / slope2
