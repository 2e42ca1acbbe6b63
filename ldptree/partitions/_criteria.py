"""Split criteria: the impurity reduction of splitting a cell's public labels in two (spec §2.4).

For labels ``y`` of the ``m`` public points in a cell and a split into ``y_L``/``y_R``,

    Delta = I(y) - (m_L I(y_L) + m_R I(y_R)) / m,

with ``I`` the population variance for ``"mse"`` (the reference's variance reduction). A child with
no points contributes 0. The classification criteria slot into the same table.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ldptree._typing import BoolArray, FloatArray

#: ``impurity_sum(y)`` returns ``m * I(y)`` for the labels of one cell.
ImpuritySum = Callable[[FloatArray], float]


def _mse_sum(y: FloatArray) -> float:
    if y.size == 0:
        return 0.0
    return float(np.sum((y - y.mean()) ** 2))


CRITERIA: dict[str, ImpuritySum] = {"mse": _mse_sum}


def gain(impurity_sum: ImpuritySum, y: FloatArray, go_left: BoolArray) -> float:
    """``Delta`` above for one candidate split (0 for an empty cell)."""
    m = y.shape[0]
    if m == 0:
        return 0.0
    parent = impurity_sum(y)
    children = impurity_sum(y[go_left]) + impurity_sum(y[~go_left])
    return float((parent - children) / m)
