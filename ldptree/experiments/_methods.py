"""The built-in methods of the runner's default registry.

To register a new estimator, add one :class:`MethodSpec` line to ``DEFAULT_METHODS`` (for
example ``MethodSpec("phist", "regression", PHISTRegressor, "phist-real", "PHIST",
paper_key="P")``) and, if its grid is new, one preset in :mod:`._grids`.

``lpdt-v`` is ``LPDTRegressor(rule="cart")`` (the reference's quantile CART rule).
"""

from __future__ import annotations

from typing import Any

from ldptree.estimators import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
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


LPDT_M = MethodSpec("lpdt-m", "regression", lpdt_max_edge, "lpdt-real", "LPDT-M", paper_key="M")
LPDT_V = MethodSpec(
    "lpdt-v",
    "regression",
    LPDTRegressor,
    "lpdt-real",
    "LPDT-V",
    fixed={"rule": "cart"},
    paper_key="V",
)

DEFAULT_METHODS = MethodRegistry((LPDT_M, LPDT_V))


# --- LPCT family (LPCT Table 2, spec §4.2, §5, §7.3) -------------------------------------------
# The LPCT runs use ``simulation="aggregate"``: per-cell noise sums drawn in law (spec §3.5),
# the same distribution of estimates as the per-holder protocol at O(cells) cost, which is what
# makes the paper's 1800-point oracle grid affordable.


def lpct_tree(
    *,
    epsilon: float,
    random_state: Any,
    rule: str = "max_edge",
    max_depth: int = 4,
    min_samples_leaf: int = 2,
    min_samples_split: int = 5,
    criterion: str = "gini",
    **kwargs: Any,
) -> LPCTClassifier:
    """``LPCTClassifier(rule=...)`` with the (deterministic) partition memoised across a grid:
    the max-edge and CART rules ignore their key, so results equal the plain estimator's."""
    kind = {"max_edge": MaxEdgePartitioner, "cart": CartPartitioner}[rule]
    partitioner = MemoPartitioner(
        kind(
            max_depth=max_depth,
            min_samples_split=min_samples_split,
            min_samples_leaf=min_samples_leaf,
            criterion=criterion,
        )
    )
    return LPCTClassifier(
        epsilon,
        max_depth,
        min_samples_leaf,
        min_samples_split=min_samples_split,
        rule=partitioner,
        criterion=criterion,
        random_state=random_state,
        **kwargs,
    )


_AGG = {"simulation": "aggregate"}
LPCT_M = MethodSpec(
    "lpct-m", "classification", lpct_tree, "lpct-real", "LPCT-M", fixed=_AGG, paper_key="LPCT-M"
)
LPCT_V = MethodSpec(
    "lpct-v",
    "classification",
    lpct_tree,
    "lpct-real",
    "LPCT-V",
    fixed={**_AGG, "rule": "cart"},
    paper_key="LPCT-V",
)
LPCT_PRUNE_M = MethodSpec(
    "lpct-prune-m",
    "classification",
    LPCTPrunedClassifier,
    "lpct-prune-real",
    "LPCT-prune-M",
    fixed=_AGG,
    paper_key="prune-M",
)
LPCT_PRUNE_V = MethodSpec(
    "lpct-prune-v",
    "classification",
    LPCTPrunedClassifier,
    "lpct-prune-real",
    "LPCT-prune-V",
    fixed={**_AGG, "rule": "cart"},
    paper_key="prune-V",
)
# LPDT for classification = LPCT-P: lambda = 0 (private counts only), on the LPCT-M grid minus
# lambda (spec §7.3, reference ``LPCT_original``)
LPDT_C = MethodSpec(
    "lpdt-c",
    "classification",
    lpct_tree,
    "lpct-real-p",
    "LPDT (lambda=0)",
    fixed={**_AGG, "lam": 0.0},
    paper_key="LPDT",
)
LPCT_METHODS = (LPCT_M, LPCT_V, LPCT_PRUNE_M, LPCT_PRUNE_V, LPDT_C)
DEFAULT_METHODS = MethodRegistry((*DEFAULT_METHODS.specs, *LPCT_METHODS))
