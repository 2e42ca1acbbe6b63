"""The max-edge rule (LPDT-M; spec §2.3, LPDT paper §2.3 eq. (6)).

A cell ``prod_k [a_k, b_k]`` is split at the midpoint of one of its longest edges
``M = argmax_k (b_k - a_k)``; among those, the edge with the largest criterion reduction ``Delta_k``
on the public points in the cell (paper eq. (6)), ties broken by the smaller feature index (a
stable sort, as the reference). Only the first ``max(1, floor((|M'| + 5) / 10))`` candidates with
``Delta_k >= threshold`` are tried, where ``M'`` are the edges passing the threshold.

Cells stay dyadic boxes whose side lengths differ by at most a factor 2, so
``diam(A) in [sqrt(d)/2, 2 sqrt(d)] * 2^(-depth/d)`` (LPDT Lemma C.6) whatever the public data.
Without public data (zero rows) every ``Delta_k`` is 0 and the rule is the plain dyadic grid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import check_int, check_matrix, check_real, check_vector
from ldptree.partitions._builder import grow
from ldptree.partitions._criteria import CRITERIA, gain
from ldptree.partitions._partition import Partition


def _to_threshold(value: Any) -> float:
    return check_real(value, "threshold")


def _check_criterion(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in CRITERIA:
        raise ValueError(f"{attribute.name} must be one of {sorted(CRITERIA)}, got {value!r}")


def _nonneg_int(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    check_int(value, attribute.name, minimum=0)


@attrs.frozen
class MaxEdgePartitioner:
    """Max-edge partition rule with criterion-driven choice among the longest edges.

    Parameters
    ----------
    max_depth:
        Depth ``s`` of the tree (the root has depth 0); at most ``2^s`` cells.
    min_samples_split:
        A node with at most this many public points (or distinct public rows) is a leaf.
    min_samples_leaf:
        ``n_l``: a split is rejected when either child would hold fewer public points.
    criterion:
        Impurity whose reduction ranks the longest edges (``"mse"`` for regression).
    threshold:
        Minimal reduction for a split to be considered (the reference's 0).
    """

    max_depth: int = attrs.field(default=4, validator=_nonneg_int)
    min_samples_split: int = attrs.field(default=5, validator=_nonneg_int)
    min_samples_leaf: int = attrs.field(default=2, validator=_nonneg_int)
    criterion: str = attrs.field(default="mse", validator=_check_criterion)
    threshold: float = attrs.field(default=0.0, converter=_to_threshold)

    def fit(self, X_public: Any, y_public: Any = None, *, key: PRNGKey | None = None) -> Partition:
        """Grow the partition on public data scaled to ``[0, 1]^d``.

        ``X_public`` of shape ``(0, d)`` gives the data-free dyadic grid of depth ``max_depth``.
        The rule is deterministic; ``key`` is accepted for the common protocol and unused.
        """
        del key
        X = check_matrix(X_public, "X_public", allow_empty=True)
        y = None if y_public is None else check_vector(y_public, "y_public", n=X.shape[0])
        impurity_sum = CRITERIA[self.criterion]

        def propose(
            X_node: FloatArray,
            y_node: FloatArray | None,
            lower: FloatArray,
            upper: FloatArray,
            depth: int,
        ) -> Sequence[tuple[int, float]]:
            width = upper - lower
            longest = np.flatnonzero(width == width.max())
            mids = (lower[longest] + upper[longest]) / 2.0
            if y_node is None or X_node.shape[0] == 0:
                deltas = np.zeros(longest.shape[0])
            else:
                deltas = np.array(
                    [
                        gain(impurity_sum, y_node, X_node[:, k] < t)
                        for k, t in zip(longest, mids, strict=True)
                    ]
                )
            order = np.argsort(-deltas, kind="stable")
            kept = [i for i in order if deltas[i] >= self.threshold]
            n_try = max(1, (len(kept) + 5) // 10)
            return [(int(longest[i]), float(mids[i])) for i in kept[:n_try]]

        return grow(
            X,
            y,
            max_depth=self.max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            propose=propose,
        )
