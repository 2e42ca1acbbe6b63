"""The max-edge rule (LPDT-M, LPCT "Maxedge"; LPDT paper §2.3 eq. (6)).

A cell ``prod_k [a_k, b_k]`` is split at the midpoint of one of its longest edges
``M = argmax_k (b_k - a_k)``; among those, the edge with the largest criterion reduction ``Delta_k``
on the public points in the cell (paper eq. (6)), ties broken by the smaller feature index (a
stable sort, as the reference). Only the first ``max(1, floor((|M'| + 5) / 10))`` candidates with
``Delta_k >= threshold`` are tried, where ``M'`` are the edges passing the threshold.

Cells stay dyadic boxes whose side lengths differ by at most a factor 2, so
``diam(A) in [sqrt(d)/2, 2 sqrt(d)] * 2^(-depth/d)`` (LPDT Lemma C.6) whatever the public data.
Without public data (zero rows) every ``Delta_k`` is 0 and the rule is the plain dyadic grid.
The rule is deterministic; ``key`` is unused.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import numpy as np

from ldptree._typing import FloatArray, IntArray, PRNGKey
from ldptree.partitions._builder import Node, TreeRule, rank_candidates
from ldptree.partitions._criteria import CRITERIA, gain
from ldptree.partitions._params import check_criterion, to_threshold


def longest_edges(lower: FloatArray, upper: FloatArray) -> tuple[IntArray, FloatArray]:
    """``(features, midpoints)`` of the longest edges of the box ``[lower, upper]``.

    Exact float equality: with midpoint splits of ``[0, 1]`` every edge is a power of two.
    """
    width = upper - lower
    longest = np.flatnonzero(width == width.max())
    return longest, (lower[longest] + upper[longest]) / 2.0


@attrs.frozen
class MaxEdgePartitioner(TreeRule):
    """Max-edge partition rule with criterion-driven choice among the longest edges.

    ``max_depth``, ``min_samples_split`` and ``min_samples_leaf`` are the stopping rules of
    :class:`~ldptree.partitions.TreeRule`; ``criterion`` is the impurity whose reduction ranks the
    longest edges: ``"mse"`` (regression), ``"entropy"`` (LPCT reference code) or ``"gini"``
    (LPCT paper), the last two on class codes; ``threshold`` is the minimal reduction for a split
    to be considered (the reference's 0).
    """

    criterion: str = attrs.field(default="mse", validator=check_criterion)
    threshold: float = attrs.field(default=0.0, converter=to_threshold)

    def _propose(self, node: Node, key: PRNGKey | None) -> Sequence[tuple[int, float]]:
        longest, mids = longest_edges(node.lower, node.upper)
        y = node.y
        if y is None or node.n_rows == 0:
            deltas = np.zeros(longest.shape[0])
        else:
            impurity_sum = CRITERIA[self.criterion]
            parent = impurity_sum(y)
            deltas = np.array(
                [
                    gain(impurity_sum, y, node.column(int(k)) < t, parent)
                    for k, t in zip(longest, mids, strict=True)
                ]
            )
        return [(int(longest[i]), float(mids[i])) for i in rank_candidates(deltas, self.threshold)]
