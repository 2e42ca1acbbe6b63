"""What the mechanisms built on an item release share (k-subset selection, local hashing, and
k-ary randomized response of the cell): the cell released as an item among ``L`` with a label
(regression), or the pair ``(cell, class)`` as an item among ``L (K + 1)`` (classification).

A release of this kind has a law (``item_law(n_items)``) whose indicator of item ``j`` has mean
``offset + slope 1{x = j}``; :func:`~ldptree.mechanisms.debias_indicators` inverts it. The
mechanisms differ only in their release, its law and their variance bounds.
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs
import numpy as np

from ldptree._validation import check_int
from ldptree._xp import namespace
from ldptree.mechanisms._geometric_label import GeometricLabel
from ldptree.mechanisms._kit import ClassMechanism, debias_indicators
from ldptree.mechanisms._release import Release
from ldptree.mechanisms._variance import (
    CellVariance,
    ExactCellVariance,
    check_label_moments,
    indicator_class_variance,
    indicator_variances,
)
from ldptree.protocols import CellEstimates

__all__ = ["ItemCellLabel", "ItemPairs"]


class ItemCellLabel(GeometricLabel):
    """The cell as an item release ``"cell"`` (budget ``rho eps``) beside the geometric label."""

    #: The release's name in the budget's parts, e.g. ``"k-subset selection"``.
    item_kind: ClassVar[str]

    @property
    def cell_release(self) -> Any:
        raise NotImplementedError

    def item_law(self, n_cells: int) -> Any:
        """The cell release's law over ``n_cells`` items (``offset``, ``slope``)."""
        raise NotImplementedError

    def releases(self) -> tuple[Release, ...]:
        return (self.cell_release, self.label_release())

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        return ((f"cell ({self.item_kind})", self.cell_epsilon), self.label_budget_part())

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and label sums from summed statistics (module docstring)."""
        law = self.item_law(int(np.shape(stats["cell"])[0]))
        return self.debias_cells(law, stats, "cell", n)

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds for ``n_cells`` cells (from the indicators' law)."""
        law = self.item_law(check_int(n_cells, "n_cells", minimum=1))
        return self.indicator_cell_variance(law.offset, law.slope)

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances: item ``j``'s indicator is Bernoulli with mean
        ``offset + slope 1{j_i = j}``, times the independent geometric label
        (:meth:`~ldptree.mechanisms._geometric_label.GeometricLabel.exact_indicator_variance`)."""
        law = self.item_law(check_int(n_cells, "n_cells", minimum=1))
        return self.exact_indicator_variance(
            law.offset, law.slope, label_mean=label_mean, label_second_moment=label_second_moment
        )


@attrs.frozen  # (no fields) an attrs base keeps a subclass's inherited fields in order
class ItemPairs(ClassMechanism):
    """The pair ``(cell, class)`` as one item release ``"pairs"`` with the whole budget; an
    undeclared class code is the extra item ``K`` of its cell, counted nowhere. Its releases are
    checked when it is constructed."""

    item_kind: ClassVar[str]

    @property
    def pair_release(self) -> Any:
        raise NotImplementedError

    def item_law(self, n_cells: int) -> Any:
        """The pair release's law for ``n_cells`` cells."""
        raise NotImplementedError

    def _count_variances(self, law: Any) -> tuple[float, float]:
        """The variance one holder adds to ``c^_j`` (the debiased sum of cell ``j``'s ``K``
        declared items) inside cell ``j`` with a declared class, and otherwise."""
        raise NotImplementedError

    def releases(self) -> tuple[Release, ...]:
        return (self.pair_release,)

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        return ((f"cell x class ({self.item_kind})", self.epsilon),)

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Per-(cell, class) counts ``float[L, K]`` and their row sums (module docstring)."""
        counts = stats["pairs"]
        law = self.item_law(int(np.shape(counts)[0]))
        pairs = debias_indicators(law, counts, n).count[:, : self.n_classes]
        xp = namespace(pairs)
        return CellEstimates(count=xp.sum(pairs, axis=1), label_sum=pairs, n=int(n))

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds for ``n_cells`` cells: :meth:`_count_variances` for the
        count, one debiased indicator for ``V^_jk``."""
        law = self.item_law(check_int(n_cells, "n_cells", minimum=1))
        inside, outside = self._count_variances(law)
        single_in, single_out = indicator_variances(law.offset, law.slope)
        return CellVariance(
            count=max(inside, outside),
            label_sum=max(single_in, single_out),
            count_outside=outside,
            label_sum_outside=single_out,
        )

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances: :meth:`_count_variances` for ``c^_j``; ``V^_jk`` is one
        debiased indicator (:func:`~ldptree.mechanisms._variance.indicator_class_variance`)."""
        share, _ = check_label_moments(label_mean, label_second_moment, indicator=True)
        law = self.item_law(check_int(n_cells, "n_cells", minimum=1))
        inside, outside = self._count_variances(law)
        return indicator_class_variance(inside, outside, law.offset, law.slope, share)
