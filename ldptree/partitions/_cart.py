"""The CART-like rule (LPDT-V, LPCT "CART"/-V; the reference code's ``GainReductionSplitter``).

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

from ldptree._typing import BoolArray, FloatArray, IntArray, PRNGKey
from ldptree.partitions._builder import Node, TreeRule, rank_candidates
from ldptree.partitions._criteria import CRITERIA, sweep_gains
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
        thresholds, valid = self._sorted_candidates(np.sort(x)[None, :])
        out: FloatArray = thresholds[0, valid[0]]
        return out

    def _sorted_candidates(self, x_sorted: FloatArray) -> tuple[FloatArray, BoolArray]:
        """:meth:`candidates` of every row of ``x_sorted`` (``float[r, m]``, rows sorted), padded
        to one width: ``(thresholds[r, T], valid[r, T])``, each row's valid entries being its
        candidates in increasing order."""
        r, m = x_sorted.shape
        first = np.ones((r, m), dtype=bool)  # first of each run of equal values
        np.not_equal(x_sorted[:, 1:], x_sorted[:, :-1], out=first[:, 1:])
        n_unique = np.count_nonzero(first, axis=1)
        unique = x_sorted.ravel()[np.flatnonzero(first)]  # row after row
        start = np.cumsum(n_unique) - n_unique
        if self.thresholds == "exact":
            width = int(n_unique.max()) - 1 if r else 0
            j = np.arange(width)
            valid = j[None, :] < (n_unique - 1)[:, None]
            at = np.minimum(start[:, None] + j[None, :], unique.shape[0] - 2)
            if width == 0:
                return np.zeros((r, 0)), valid
            midpoints: FloatArray = (unique[at] + unique[at + 1]) / 2.0
            return midpoints, valid
        levels = (2.0 * np.arange(self.search_number, dtype=np.float64) + 1.0) / (
            2.0 * self.search_number
        )
        quantiles = np.sort(sorted_quantiles(unique, start, n_unique, levels), axis=1)
        valid = np.ones(quantiles.shape, dtype=bool)  # np.unique: the first of equal values
        np.not_equal(quantiles[:, 1:], quantiles[:, :-1], out=valid[:, 1:])
        return quantiles, valid

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
        criterion = CRITERIA[self.criterion]
        # every feature at once, each sorted within the node (inherited: no sort below the root)
        x_sorted, y_sorted = node.sorted_features()
        assert y_sorted is not None
        thresholds, valid = self._sorted_candidates(x_sorted)
        n_features = x_sorted.shape[0]
        deltas = np.zeros(n_features)
        split_at = np.full(n_features, np.nan)
        if thresholds.shape[1] == 0:
            return []
        columns = criterion.columns_with(y_sorted, criterion.anchor(y))
        gains = np.where(valid, sweep_gains(criterion, x_sorted, columns, thresholds), -np.inf)
        best = np.argmax(gains, axis=1)  # the first best candidate of each feature
        for k in range(n_features):
            top = gains[k, best[k]]
            if top > 0.0 and top >= self.threshold:
                deltas[k], split_at[k] = top, thresholds[k, best[k]]
        return [
            (k, float(split_at[k]))
            for k in rank_candidates(deltas, self.threshold)
            if not np.isnan(split_at[k])
        ]


def sorted_quantiles(
    values: FloatArray, start: IntArray, count: IntArray, levels: FloatArray
) -> FloatArray:
    """``np.quantile(values[start[i] : start[i] + count[i]], levels)`` (linear interpolation)
    for every segment ``i`` of sorted values (``count[i] >= 1``): ``float[r, len(levels)]``.

    The quantile at level ``q`` sits at the virtual index ``v = (U - 1) q`` of the ``U`` sorted
    values: ``a + (b - a) g`` between ``a = values[floor(v)]`` and ``b = values[floor(v) + 1]``
    with ``g = v - floor(v)``, evaluated as ``b - (b - a)(1 - g)`` when ``g >= 1/2``; indices at or
    past the end take the last value. These are NumPy's operations in NumPy's order, so the
    result is bit-for-bit ``np.quantile``'s (a test checks), for all segments in one pass.
    """
    last = (count - 1)[:, None]
    virtual = last * levels[None, :]
    below = np.floor(virtual)
    above = below + 1
    past_end = virtual >= last
    below[past_end] = -1
    above[past_end] = -1
    lower_index, upper_index = below.astype(np.intp), above.astype(np.intp)
    weight = virtual - lower_index
    base = start[:, None]
    a = values[base + np.where(lower_index < 0, last, lower_index)]
    b = values[base + np.where(upper_index < 0, last, upper_index)]
    diff = b - a
    out: FloatArray = a + diff * weight
    np.subtract(b, diff * (1 - weight), out=out, where=weight >= 0.5)
    return out
