"""Optimized local hashing on the cell (LPDT) or on the (cell, class) pair (LPCT), built on the
kit (:class:`~ldptree.mechanisms.LocalHashRelease`).

Each holder reports a random linear hash of its item (``r`` masks) and k-ary randomized response
on the hash value over ``g = 2^r`` values (exact law and sampler in
:mod:`ldptree.mechanisms._local_hash`). Item ``j``'s indicator ``1{H_A(j) = z}`` has mean
``1/g + (p - 1/g) 1{x = j}`` exactly, so ``N^_j = (C_j - n / g) / (p - 1/g)`` is unbiased for the
number of holders whose item is ``j`` (``C_j`` reports whose hash of ``j`` matches), and the
indicators of different items are pairwise uncorrelated.

* :class:`OLHLaplaceMechanism` (regression): hashing of the cell with budget ``rho eps`` plus the
  geometric label of :mod:`~ldptree.mechanisms._geometric_label` (``(1 - rho) eps``);
  ``c^_j = N^_j`` and ``s^_j = (lo (C_j - n / g) + step (S_j - S / g)) / (p - 1/g)`` with
  ``S_j = sum_i 1{H_i(j) = z_i} code_i``.
* :class:`OLHCellClassMechanism` (classification): hashing of the pair ``(cell, class)`` among
  ``L (K + 1)`` items with the whole ``eps``; an undeclared class code is the extra item ``K`` of
  its cell, counted nowhere. ``V^_jk = N^_jk``, ``c^_j = sum_{k < K} N^_jk``; uncorrelated
  indicators make ``Var c^_j`` the sum of the ``K`` indicator variances.

Variance: an outside holder adds ``q (1 - q) / (p - q)^2`` (``q = 1 / g``) to a count, about
``4 e^eps / (e^eps - 1)^2`` at the best ``g``, whatever ``L``; the report is ``r (m + 1)`` bits
(``m = log2`` of the item count) and ``r + 2`` random words, against ``L`` bits for unary
encodings.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import jax
import numpy as np

from ldptree.mechanisms._item_mechanisms import ItemCellLabel, ItemPairs
from ldptree.mechanisms._kit import KitMechanism
from ldptree.mechanisms._local_hash import LocalHashRelease, _to_bits
from ldptree.mechanisms._variance import (
    indicator_variances,
)

__all__ = [
    "OLHCellClassMechanism",
    "OLHCellClassReport",
    "OLHLaplaceMechanism",
    "OLHLaplaceReport",
]


class OLHLaplaceReport(NamedTuple):
    """Reports of ``n`` holders: ``cell`` ``int32[n, r + 1]`` (the hash masks, then the response)
    and noisy label levels ``code`` ``int32[n]``."""

    cell: jax.Array
    code: jax.Array


@attrs.frozen
class OLHLaplaceMechanism(ItemCellLabel, KitMechanism):
    """Optimized local hashing of the cell + one exact noisy label (module docstring).

    Parameters
    ----------
    epsilon, label_bound, budget_split:
        As for :class:`RRLaplaceMechanism`.
    hash_bits:
        ``r`` (``g = 2^r`` hash values); ``None`` (default) takes the best for the cell budget
        and cell count.
    """

    hash_bits: int | None = attrs.field(default=None, converter=_to_bits)

    report_type = OLHLaplaceReport

    @property
    def cell_release(self) -> LocalHashRelease:
        """The hashed cell (budget ``rho eps``)."""
        return LocalHashRelease("cell", self.cell_epsilon, self.hash_bits)

    item_kind = "optimized local hashing"

    def item_law(self, n_cells: int) -> Any:
        return self.cell_release.channel(n_cells)


class OLHCellClassReport(NamedTuple):
    """Reports of ``n`` holders: ``pairs`` ``int32[n, r + 1]`` (the hash masks of the (cell,
    class) item, then the response)."""

    pairs: jax.Array


@attrs.frozen
class OLHCellClassMechanism(ItemPairs, KitMechanism):
    """Optimized local hashing of the pair (cell, class) (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0`` (one release).
    n_classes:
        ``K >= 2``; class codes outside ``0..K-1`` are the extra item ``K`` of their cell.
    hash_bits:
        ``r``; ``None`` (default) takes the best for the budget and item count.
    """

    hash_bits: int | None = attrs.field(default=None, converter=_to_bits)

    report_type = OLHCellClassReport

    @property
    def pair_release(self) -> LocalHashRelease:
        """The hashed (cell, class) item (the whole ``eps``)."""
        items = np.arange(self.n_classes + 1)
        return LocalHashRelease("pairs", self.epsilon, self.hash_bits, label_index=items)

    item_kind = "optimized local hashing"

    def item_law(self, n_cells: int) -> Any:
        return self.pair_release.channel(n_cells)

    def report_width(self, n_cells: int) -> int:
        """Numbers released per holder: ``r + 1``."""
        return self.pair_release.hash_bits(n_cells) + 1

    def _count_variances(self, law: Any) -> tuple[float, float]:
        """The item indicators are pairwise uncorrelated, so ``c^_j`` adds the sum of its ``K``
        indicators' variances (the own one inside)."""
        single_in, single_out = indicator_variances(law.offset, law.slope)
        k = self.n_classes
        return single_in + (k - 1) * single_out, k * single_out
