"""The built-in methods of the runner's default registry.

To register a new estimator, add one :class:`MethodSpec` line to ``DEFAULT_METHODS`` (for
example ``MethodSpec("phist", "regression", PHISTRegressor, "phist-real", "PHIST",
paper_key="P")``) and, if its grid is new, one preset in :mod:`._grids`.

``lpdt-v`` is ``LPDTRegressor(rule="cart")`` (the reference's quantile CART rule). Both LPDT
variants memoise their deterministic partition across a grid: it depends on the public rows,
``max_depth``, ``min_samples_leaf`` and ``min_samples_split`` only, not on ``rho`` or ``epsilon``.
"""

from __future__ import annotations

from typing import Any

from ldptree.estimators import LPDTRegressor
from ldptree.experiments._memo import MemoPartitioner
from ldptree.experiments._registry import MethodRegistry, MethodSpec
from ldptree.partitions import CartPartitioner, MaxEdgePartitioner


def lpdt_max_edge(
    *,
    epsilon: float,
    random_state: Any,
    max_depth: int = 4,
    min_samples_leaf: int = 2,
    min_samples_split: int = 5,
    **kwargs: Any,
) -> LPDTRegressor:
    """``LPDTRegressor(rule="max_edge", ...)`` with the partition memoised across a grid.

    Same results as the plain estimator (the max-edge rule is deterministic), fewer rebuilds.
    """
    rule = MemoPartitioner(
        MaxEdgePartitioner(
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
        )
    )
    return LPDTRegressor(
        epsilon,
        max_depth,
        min_samples_leaf,
        min_samples_split=min_samples_split,
        rule=rule,
        random_state=random_state,
        **kwargs,
    )


def lpdt_cart(
    *,
    epsilon: float,
    random_state: Any,
    max_depth: int = 4,
    min_samples_leaf: int = 2,
    min_samples_split: int = 5,
    **kwargs: Any,
) -> LPDTRegressor:
    """``LPDTRegressor(rule="cart", ...)`` with the partition memoised across a grid.

    Same results as the plain estimator (the quantile CART rule is deterministic and ignores its
    key). Growth is the most expensive step of a small-data LPDT-V fit, and a grid over ``rho``
    and ``epsilon`` would otherwise regrow the same partition at every point.
    """
    rule = MemoPartitioner(
        CartPartitioner(
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
        )
    )
    return LPDTRegressor(
        epsilon,
        max_depth,
        min_samples_leaf,
        min_samples_split=min_samples_split,
        rule=rule,
        random_state=random_state,
        **kwargs,
    )


LPDT_M = MethodSpec("lpdt-m", "regression", lpdt_max_edge, "lpdt-real", "LPDT-M", paper_key="M")
LPDT_V = MethodSpec("lpdt-v", "regression", lpdt_cart, "lpdt-real", "LPDT-V", paper_key="V")

DEFAULT_METHODS = MethodRegistry((LPDT_M, LPDT_V))
