"""The CART-like rule (LPDT-V, LPCT "CART"/-V; spec §2.6, reference ``GainReductionSplitter``).

For every feature ``k`` the candidate thresholds are

* ``thresholds="quantile"`` (the reference, default): the ``(2i + 1) / (2 S)`` quantiles,
  ``i = 0..S-1``, of the *sorted unique* public values of ``x_k`` in the cell (NumPy's linear
  interpolation; ``S = search_number = 10``, i.e. the 5%, 15%, ..., 95% quantiles), deduplicated;
* ``thresholds="exact"`` (ours): every midpoint between consecutive unique values, i.e. the
  classical CART search.

The feature's split is its candidate of largest criterion reduction ``Delta`` (the first one on
ties), kept only if ``Delta > 0`` and ``Delta >= threshold``. Features are then ranked by ``Delta``
(stable), and the builder tries the first ``max(1, floor((d' + 5) / 10))`` of the ``d'`` features
passing ``threshold``, skipping features without a split, exactly as the reference. No randomness.

The split uses public data only, so the private release stays eps-LDP for whatever partition
results (both papers' argument: the privacy proof holds for any fixed partition). Without public
labels there is no criterion to reduce and this rule raises; without public rows the partition is
the single cell. The rule is deterministic; ``key`` is unused.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ldptree._typing import FloatArray, PRNGKey
from ldptree.partitions._builder import Node, TreeRule, rank_candidates
from ldptree.partitions._criteria import CRITERIA, sorted_split_gains
from ldptree.partitions._params import check_criterion, positive_int, to_threshold

_THRESHOLDS = ("quantile", "exact")


def _check_thresholds(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in _THRESHOLDS:
        raise ValueError(f"{attribute.name} must be one of {_THRESHOLDS}, got {value!r}")


@attrs.frozen
class CartPartitioner(TreeRule):
    """Criterion-reduction splits at data-driven thresholds (LPDT-V / LPCT-CART).

    Parameters
    ----------
    max_depth, min_samples_split, min_samples_leaf:
        The stopping rules of :class:`~ldptree.partitions.TreeRule`.
    criterion:
        ``"mse"`` (regression, LPDT-V), ``"entropy"`` (LPCT reference code) or ``"gini"`` (LPCT
        paper).
    threshold:
        Minimal reduction for a split to be considered (the reference's 0).
    search_number:
        ``S``: number of quantile thresholds per feature in ``"quantile"`` mode.
    thresholds:
        ``"quantile"`` (reference parity) or ``"exact"`` (all midpoints).
    """

    criterion: str = attrs.field(default="mse", validator=check_criterion)
    threshold: float = attrs.field(default=0.0, converter=to_threshold)
    search_number: int = attrs.field(default=10, validator=positive_int)
    thresholds: str = attrs.field(default="quantile", validator=_check_thresholds)

    def candidates(self, x: FloatArray) -> FloatArray:
        """Candidate thresholds for one feature's public values ``x`` in a cell."""
        return self._sorted_candidates(np.sort(x))

    def _sorted_candidates(self, x_sorted: FloatArray) -> FloatArray:
        """:meth:`candidates` from the values already sorted."""
        distinct = np.empty(x_sorted.shape[0], dtype=bool)
        distinct[:1] = True
        np.not_equal(x_sorted[1:], x_sorted[:-1], out=distinct[1:])
        unique = x_sorted[np.flatnonzero(distinct)]
        if self.thresholds == "exact":
            out: FloatArray = (unique[:-1] + unique[1:]) / 2.0
            return out
        levels = (2.0 * np.arange(self.search_number, dtype=np.float64) + 1.0) / (
            2.0 * self.search_number
        )
        return np.unique(sorted_quantiles(unique, levels))

    def _check_inputs(self, X: FloatArray, y: FloatArray | None, key: PRNGKey | None) -> None:
        if y is None and X.shape[0] > 0:
            raise ValueError(
                "y_public is required by the CART rule (it ranks splits by label impurity); "
                "pass public labels or use the max-edge rule"
            )

    def _propose(self, node: Node, key: PRNGKey | None) -> Sequence[tuple[int, float]]:
        y = node.y
        if y is None or node.n_rows == 0:
            return []
        criterion, n_features = CRITERIA[self.criterion], node.lower.shape[0]
        anchor = criterion.anchor(y)  # the cell's mean or class count, from its sample order
        deltas = np.zeros(n_features)
        split_at = np.full(n_features, np.nan)
        for k in range(n_features):
            # inherited from the parent: no sort below the root
            x_sorted, y_sorted = node.sorted_feature(k)
            assert y_sorted is not None
            thresholds = self._sorted_candidates(x_sorted)
            if thresholds.size == 0:
                continue
            gains = sorted_split_gains(
                criterion, x_sorted, criterion.stats_with(y_sorted, anchor), thresholds
            )
            best = int(np.argmax(gains))
            if gains[best] > 0.0 and gains[best] >= self.threshold:
                deltas[k], split_at[k] = gains[best], thresholds[best]
        return [
            (k, float(split_at[k]))
            for k in rank_candidates(deltas, self.threshold)
            if not np.isnan(split_at[k])
        ]


def sorted_quantiles(values: FloatArray, levels: FloatArray) -> FloatArray:
    """``np.quantile(values, levels)`` (linear interpolation) of sorted, non-empty ``values``.

    The quantile at level ``q`` sits at the virtual index ``v = (U - 1) q`` of the ``U`` sorted
    values: ``a + (b - a) g`` between ``a = values[floor(v)]`` and ``b = values[floor(v) + 1]``
    with ``g = v - floor(v)``, evaluated as ``b - (b - a)(1 - g)`` when ``g >= 1/2``; indices at or
    past the end take the last value. These are NumPy's operations in NumPy's order, so the
    result is bit-for-bit ``np.quantile``'s (a test checks), without its sort and overhead.
    """
    count = values.shape[0]
    virtual = (count - 1) * levels
    below = np.floor(virtual)
    above = below + 1
    past_end = virtual >= count - 1
    below[past_end] = -1
    above[past_end] = -1
    lower_index, upper_index = below.astype(np.intp), above.astype(np.intp)
    weight = virtual - lower_index
    a, b = values[lower_index], values[upper_index]
    diff = b - a
    out: FloatArray = a + diff * weight
    np.subtract(b, diff * (1 - weight), out=out, where=weight >= 0.5)
    return out
