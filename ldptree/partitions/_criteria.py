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
on one feature with one sort and one cumulative sum instead of one mask per threshold.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs
import numpy as np

from ldptree._typing import BoolArray, FloatArray

#: ``impurity_sum(y)`` returns ``m * I(y)`` for the labels of one cell.
ImpuritySum = Callable[[FloatArray], float]


def _mse_stats(y: FloatArray) -> FloatArray:
    # Centring at the cell mean keeps ``sum y^2 - (sum y)^2 / m`` free of cancellation; the
    # variance is shift invariant and the shift is common to both children.
    centred = y - y.mean()
    return np.column_stack([np.ones_like(y), centred, centred * centred])


def _mse_from_stats(s: FloatArray) -> FloatArray:
    m, total, squares = s[..., 0], s[..., 1], s[..., 2]
    return np.where(m > 0, squares - total * total / np.maximum(m, 1.0), 0.0)


def _class_stats(y: FloatArray) -> FloatArray:
    codes = y.astype(np.int64)
    n_classes = int(codes.max()) + 1 if codes.size else 1
    onehot: FloatArray = np.zeros((codes.shape[0], n_classes))
    onehot[np.arange(codes.shape[0]), codes] = 1.0
    return onehot


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

    ``classification`` criteria expect class codes ``0..K-1`` (as floats). Calling the criterion
    on the labels of a cell returns ``m * I(y)``, so it is an :data:`ImpuritySum`.
    """

    name: str
    stats: Callable[[FloatArray], FloatArray]
    from_stats: Callable[[FloatArray], FloatArray]
    classification: bool

    def __call__(self, y: FloatArray) -> float:
        if y.size == 0:
            return 0.0
        return float(self.from_stats(self.stats(y).sum(axis=0)))


CRITERIA: dict[str, Criterion] = {
    "mse": Criterion("mse", _mse_stats, _mse_from_stats, classification=False),
    "entropy": Criterion("entropy", _class_stats, _entropy_from_stats, classification=True),
    "gini": Criterion("gini", _class_stats, _gini_from_stats, classification=True),
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


def gain(impurity_sum: ImpuritySum, y: FloatArray, go_left: BoolArray) -> float:
    """``Delta`` above for one candidate split (0 for an empty cell)."""
    m = y.shape[0]
    if m == 0:
        return 0.0
    parent = impurity_sum(y)
    children = impurity_sum(y[go_left]) + impurity_sum(y[~go_left])
    return float((parent - children) / m)


def split_gains(
    criterion: Criterion, x: FloatArray, y: FloatArray, thresholds: FloatArray
) -> FloatArray:
    """``Delta`` of the splits ``{x < t}`` / ``{x >= t}`` for every ``t`` in ``thresholds``.

    ``O(m log m + m s + |thresholds| s)`` for ``m`` points with ``s`` statistics per point.
    """
    m = y.shape[0]
    if m == 0:
        return np.zeros(thresholds.shape[0])
    order = np.argsort(x, kind="stable")
    stats = criterion.stats(y)[order]
    cumulative = np.vstack([np.zeros((1, stats.shape[1])), np.cumsum(stats, axis=0)])
    n_left = np.searchsorted(x[order], thresholds, side="left")
    left = cumulative[n_left]
    right = cumulative[-1] - left
    parent = criterion.from_stats(cumulative[-1])
    gains: FloatArray = (parent - criterion.from_stats(left) - criterion.from_stats(right)) / m
    return gains
