"""Split criteria: the impurity reduction of splitting a cell's public labels in two.

For labels ``y`` of the ``m`` public points in a cell and a split into ``y_L``/``y_R``,

    Delta = I(y) - (m_L I(y_L) + m_R I(y_R)) / m,

with impurity ``I`` one of

* ``"mse"``: the population variance (the reference's variance reduction, LPDT-M/-V);
* ``"entropy"``: ``-sum_k p_k log2 p_k`` over the class frequencies ``p_k`` (information gain, as
  the LPCT reference code computes it, binary there);
* ``"gini"``: ``1 - sum_k p_k^2`` (the LPCT paper's stated choice, §6; ``2 p (1 - p)`` when
  binary).

Classification labels are class codes ``0..K-1`` stored as floats; both classification criteria are
multi-class. A child with no points contributes 0, so ``Delta >= 0``.

Every criterion is additive over points through sufficient statistics (``mse``: ``(1, y, y^2)``;
classification: the one-hot class vector), so :func:`split_gains` scores any number of thresholds
on one feature with one sort and one cumulative sum instead of one mask per threshold, and
:func:`sweep_gains` does so for every feature of a cell at once.

Sums run in a fixed order: a cell's total runs down its points in sample order, a sweep's prefix
sums in sorted order. Mathematically tied gains are then broken the same way by every
implementation path (the fast ones are tested bit for bit against the plain ones), so partitions
do not depend on how the work was vectorised.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from ldptree._typing import BoolArray, FloatArray

#: ``impurity_sum(y)`` returns ``m * I(y)`` for the labels of one cell.
ImpuritySum = Callable[[FloatArray], float]


def _mean(y: FloatArray) -> float:
    return float(y.mean())


def _mse_columns(y: FloatArray, centre: float) -> list[FloatArray]:
    # Centring at the cell mean keeps ``sum y^2 - (sum y)^2 / m`` free of cancellation; the
    # variance is shift invariant and the shift is common to both children.
    centred = y - centre
    ones: FloatArray = np.broadcast_to(np.float64(1.0), y.shape)  # a view: sweeps use counts
    return [ones, centred, centred * centred]


def _mse_totals(y: FloatArray) -> FloatArray:
    # ``_mse_stats(y, mean).sum(axis=0)`` without the stacked copy: that sum runs down each
    # column in order, which is what the last entry of a cumulative sum is, bit for bit.
    centred = y - _mean(y)
    return np.array([float(y.shape[0]), np.cumsum(centred)[-1], np.cumsum(centred * centred)[-1]])


def _mse_from_stats(s: FloatArray) -> FloatArray:
    m, total, squares = s[..., 0], s[..., 1], s[..., 2]
    return np.where(m > 0, squares - total * total / np.maximum(m, 1.0), 0.0)


def _n_classes(y: FloatArray) -> float:
    return float(y.max()) + 1.0 if y.size else 1.0


def _class_columns(y: FloatArray, n_classes: float) -> list[FloatArray]:
    return [(y == k).astype(np.float64) for k in range(int(n_classes))]


def _class_totals(y: FloatArray) -> FloatArray:
    counts: FloatArray = np.bincount(y.astype(np.int64), minlength=int(_n_classes(y))).astype(
        np.float64
    )
    return counts


def _entropy_from_stats(counts: FloatArray) -> FloatArray:
    m = counts.sum(axis=-1, keepdims=True)
    p = counts / np.maximum(m, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(p > 0, -p * np.log2(np.where(p > 0, p, 1.0)), 0.0)
    out: FloatArray = m[..., 0] * terms.sum(axis=-1)
    return out


def _gini_from_stats(counts: FloatArray) -> FloatArray:
    m = counts.sum(axis=-1)
    squares = (counts * counts).sum(axis=-1)
    out: FloatArray = np.where(m > 0, m - squares / np.maximum(m, 1.0), 0.0)
    return out


@attrs.frozen
class Criterion:
    """An impurity ``I`` in additive form: ``m I(y) = from_stats(sum_i stats(y)_i)``.

    A point's statistics depend on its label and on one number of its cell, ``anchor(y)`` (the
    mean for ``mse``, the number of classes ``K`` for the others), so
    ``columns_with(v, anchor(y))`` gives the statistics (one array shaped like ``v`` per
    statistic) of any reordering or subset ``v`` of the cell's labels ``y``, as ``stats(y)``
    would list them. ``totals(y)`` is ``stats(y).sum(axis=0)``, bit for bit, without
    the per-point array. ``classification`` criteria expect class codes ``0..K-1`` (as floats).
    Calling the criterion on the labels of a cell returns ``m * I(y)``, so it is an
    :data:`ImpuritySum`.
    """

    name: str
    anchor: Callable[[FloatArray], float]
    columns_with: Callable[[FloatArray, float], list[FloatArray]]
    totals: Callable[[FloatArray], FloatArray]
    from_stats: Callable[[FloatArray], FloatArray]
    classification: bool
    #: whether the first statistic is the constant 1 (so its sums are point counts)
    count_column: bool = False

    def stats(self, y: FloatArray) -> FloatArray:
        """Per-point statistics ``float[m, s]`` of a cell's labels."""
        return self.stats_with(y, self.anchor(y))

    def stats_with(self, v: FloatArray, anchor: float) -> FloatArray:
        """Statistics ``float[m, s]`` of labels ``v`` of a cell whose anchor is ``anchor``."""
        out: FloatArray = np.column_stack(self.columns_with(v, anchor))
        return out

    def __call__(self, y: FloatArray) -> float:
        if y.size == 0:
            return 0.0
        return float(self.from_stats(self.totals(y)))


CRITERIA: dict[str, Criterion] = {
    "mse": Criterion(
        "mse", _mean, _mse_columns, _mse_totals, _mse_from_stats, False, count_column=True
    ),
    "entropy": Criterion(
        "entropy", _n_classes, _class_columns, _class_totals, _entropy_from_stats, True
    ),
    "gini": Criterion("gini", _n_classes, _class_columns, _class_totals, _gini_from_stats, True),
}


def check_criterion_labels(criterion: Criterion, y: FloatArray | None, name: str) -> None:
    """Classification criteria need class codes ``0, 1, ..., K-1``; raise naming ``name``."""
    if not criterion.classification or y is None or y.size == 0:
        return
    if np.any(y < 0) or np.any(y != np.round(y)):
        raise ValueError(
            f"{name} must hold class codes 0, 1, ..., K-1 for criterion {criterion.name!r}; "
            "encode class labels first (the classifiers do)"
        )


def gain(
    impurity_sum: ImpuritySum, y: FloatArray, go_left: BoolArray, parent: float | None = None
) -> float:
    """``Delta`` above for one candidate split (0 for an empty cell).

    ``parent`` is ``impurity_sum(y)`` when the caller already has it (several candidates of one
    cell share it); the result is the same.
    """
    m = y.shape[0]
    if m == 0:
        return 0.0
    if parent is None:
        parent = impurity_sum(y)
    on_left, on_right = np.flatnonzero(go_left), np.flatnonzero(~go_left)  # faster than y[mask]
    children = impurity_sum(y[on_left]) + impurity_sum(y[on_right])
    return float((parent - children) / m)


def split_gains(
    criterion: Criterion, x: FloatArray, y: FloatArray, thresholds: FloatArray
) -> FloatArray:
    """``Delta`` of the splits ``{x < t}`` / ``{x >= t}`` for every ``t`` in ``thresholds``.

    ``O(m log m + m s + |thresholds| s)`` for ``m`` points with ``s`` statistics per point.
    """
    if y.shape[0] == 0:
        return np.zeros(thresholds.shape[0])
    order = np.argsort(x, kind="stable")
    return sorted_split_gains(criterion, x[order], criterion.stats(y)[order], thresholds)


def sorted_split_gains(
    criterion: Criterion, x_sorted: FloatArray, stats_sorted: FloatArray, thresholds: FloatArray
) -> FloatArray:
    """:func:`split_gains` from the points already sorted by ``x`` (stably) with their statistics
    ``criterion.stats(y)`` in the same order (one cumulative sum, ``O(m s + |thresholds| s)``)."""
    if x_sorted.shape[0] == 0:
        return np.zeros(thresholds.shape[0])
    columns = [stats_sorted[:, j][None, :] for j in range(stats_sorted.shape[1])]
    gains: FloatArray = sweep_gains(criterion, x_sorted[None, :], columns, thresholds[None, :])[0]
    return gains


def sweep_gains(
    criterion: Criterion, x_sorted: FloatArray, columns: list[FloatArray], thresholds: FloatArray
) -> FloatArray:
    """Gains ``float[r, T]`` of ``{x < t}`` for ``r`` sorted rows of ``m`` points at once.

    Row ``i`` of ``x_sorted`` (``float[r, m]``, each row sorted stably) and of every statistic in
    ``columns`` (``float[r, m]`` each, in the same order) describes one cell's points; row ``i`` of
    ``thresholds`` (``float[r, T]``) its candidates. The left child of ``t`` holds the first
    ``n_L(t) = #{x < t}`` points of the row, so its statistics are prefix sums (running down the
    row, in order) and the right child's are the total minus them.
    """
    r, m = x_sorted.shape
    n_thresholds = thresholds.shape[1]
    n_left = np.stack(
        [np.searchsorted(x_sorted[i], thresholds[i], side="left") for i in range(r)]
    ).reshape(r, n_thresholds)
    # axis 1: the whole cell, then the left children, then the right children
    sums = np.zeros((r, 2 * n_thresholds + 1, len(columns)))
    some = n_left > 0
    below = np.maximum(n_left - 1, 0)
    for j, column in enumerate(columns):
        if j == 0 and criterion.count_column:  # a column of ones: its sums are exact counts
            sums[:, 0, 0], sums[:, 1 : n_thresholds + 1, 0] = m, n_left
            continue
        cumulative = np.cumsum(column, axis=1)
        sums[:, 0, j] = cumulative[:, -1]
        sums[:, 1 : n_thresholds + 1, j] = np.where(
            some, np.take_along_axis(cumulative, below, axis=1), 0.0
        )
    sums[:, n_thresholds + 1 :] = sums[:, :1] - sums[:, 1 : n_thresholds + 1]
    impurity = criterion.from_stats(sums)
    parent = impurity[:, :1]
    left, right = impurity[:, 1 : n_thresholds + 1], impurity[:, n_thresholds + 1 :]
    gains: FloatArray = (parent - left - right) / m
    return gains
