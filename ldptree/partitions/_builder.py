"""Top-down growth of a partition on public data, shared by every splitting rule.

Stopping rules (the reference builder): a node holding ``m`` public points at depth
``s`` becomes a leaf when ``m <= min_samples_split``, when ``s >= max_depth``, or when its rows
``[x | y]`` take at most ``min_samples_split`` distinct values. Otherwise the rule proposes an
ordered list of candidate splits and the first whose two children both keep at least
``min_samples_leaf`` public points is taken; if none qualifies the node is a leaf.

With no public rows at all (``X`` of shape ``(0, d)``) the count rules are meaningless and every
node is split down to ``max_depth``: the data-free partition. Rules must then propose splits that
need no data (the max-edge midpoint does).

Growth visits nodes depth first, left child first; loops run over nodes (at most ``2^(s+1)``),
never over private data, and the public data are small.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from itertools import count
from typing import Any, ClassVar, NamedTuple

import attrs
import jax
import numpy as np

from ldptree._typing import FloatArray, IntArray, PRNGKey
from ldptree._validation import check_matrix, check_vector
from ldptree.partitions._criteria import CRITERIA, check_criterion_labels
from ldptree.partitions._params import nonneg_int
from ldptree.partitions._partition import Partition

#: ``propose(X_node, y_node, lower, upper, depth) -> [(feature, threshold), ...]`` in order of
#: preference; ``y_node`` is ``None`` when no public labels were given.
Proposer = Callable[
    [FloatArray, FloatArray | None, FloatArray, FloatArray, int], Sequence[tuple[int, float]]
]

#: What :func:`grow` may remember about a node across growths on the same public data: its number
#: of distinct rows and its proposals. Keys identify the node (its rows, box and depth).
NodeMemo = MutableMapping[bytes, tuple[int, Sequence[tuple[int, float]]]]


def grow(
    X: FloatArray,
    y: FloatArray | None,
    *,
    max_depth: int,
    min_samples_split: int,
    min_samples_leaf: int,
    propose: Proposer,
    memo: NodeMemo | None = None,
) -> Partition:
    """Grow a partition of ``[0, 1]^d`` from public rows ``X`` (already scaled) and labels ``y``.

    ``memo`` (for deterministic rules only) shares node work between growths on the same ``X``,
    ``y`` and rule with different stopping sizes: a node's proposals and its number of distinct
    rows depend on its rows, box and depth, never on ``max_depth``, ``min_samples_split`` or
    ``min_samples_leaf``, so a grid over those grows every distinct node once. The partition is
    the same as without it.
    """
    n, d = X.shape
    data_free = n == 0
    feature: list[int] = [-1]
    threshold: list[float] = [np.nan]
    left: list[int] = [-1]
    right: list[int] = [-1]
    lower: list[FloatArray] = [np.zeros(d)]
    upper: list[FloatArray] = [np.ones(d)]
    stack: list[tuple[int, IntArray, int]] = [(0, np.arange(n), 0)]
    while stack:
        node, rows, depth = stack.pop()
        if depth >= max_depth:
            continue
        X_node = X[rows]
        y_node = None if y is None else y[rows]
        node_id, cached = b"", None
        if data_free or rows.shape[0] <= min_samples_split:
            n_distinct = rows.shape[0]
        else:
            node_id = b"".join(
                (
                    rows.tobytes(),
                    lower[node].tobytes(),
                    upper[node].tobytes(),
                    depth.to_bytes(4, "little"),
                )
            )
            cached = None if memo is None else memo.get(node_id)
            n_distinct = _n_distinct(X_node, y_node) if cached is None else cached[0]
        if not data_free and n_distinct <= min_samples_split:
            continue
        if cached is not None:
            candidates = cached[1]
        else:
            candidates = list(propose(X_node, y_node, lower[node], upper[node], depth))
            if memo is not None and not data_free:
                memo[node_id] = (n_distinct, candidates)
        for f, t in candidates:
            go_left = X_node[:, f] < t
            n_left = int(go_left.sum())
            if not data_free and min(n_left, rows.shape[0] - n_left) < min_samples_leaf:
                continue
            ids = (len(feature), len(feature) + 1)
            feature[node], threshold[node] = f, t
            left[node], right[node] = ids
            lo_right, up_left = lower[node].copy(), upper[node].copy()
            up_left[f] = lo_right[f] = t
            for _ in ids:
                feature.append(-1)
                threshold.append(np.nan)
                left.append(-1)
                right.append(-1)
            lower.extend([lower[node], lo_right])
            upper.extend([up_left, upper[node]])
            stack.append((ids[1], rows[~go_left], depth + 1))
            stack.append((ids[0], rows[go_left], depth + 1))
            break
    return Partition.from_arrays(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        lower=np.asarray(lower),
        upper=np.asarray(upper),
    )


class Node(NamedTuple):
    """What a rule sees of a node: its public rows and labels (``None`` without labels), its box
    ``[lower, upper]`` and its depth."""

    X: FloatArray
    y: FloatArray | None
    lower: FloatArray
    upper: FloatArray
    depth: int


@attrs.frozen
class TreeRule:
    """A partition rule grown with :func:`grow`; subclasses implement :meth:`_propose`.

    Parameters
    ----------
    max_depth:
        Depth ``s`` of the tree (the root has depth 0); at most ``2^s`` cells.
    min_samples_split:
        A node with at most this many public points (or distinct public rows) is a leaf.
    min_samples_leaf:
        ``n_l``: a split is rejected when either child would hold fewer public points.
    """

    max_depth: int = attrs.field(default=4, validator=nonneg_int)
    min_samples_split: int = attrs.field(default=5, validator=nonneg_int)
    min_samples_leaf: int = attrs.field(default=2, validator=nonneg_int)

    #: Whether proposals ignore the key (rules that draw randomness set this to False).
    deterministic: ClassVar[bool] = True

    def fit(self, X_public: Any, y_public: Any = None, *, key: PRNGKey | None = None) -> Partition:
        """Grow the partition on public rows scaled to ``[0, 1]^d`` (and their labels).

        ``X_public`` of shape ``(0, d)`` asks for the data-free partition. Randomised rules draw
        the ``i``-th proposal's randomness from ``fold_in(key, i)`` (proposals in the builder's
        depth-first order), so the partition is a function of the public data and ``key``.
        """
        return self._grow(X_public, y_public, key, None)

    def fit_shared(self, X_public: Any, y_public: Any, memo: NodeMemo) -> Partition:
        """:meth:`fit` of a deterministic rule, sharing node work through ``memo``.

        For a grid of stopping sizes on the same public data: pass the same (initially empty)
        ``memo`` to every growth of rules that differ only in ``max_depth``,
        ``min_samples_split`` and ``min_samples_leaf`` (see :func:`grow`). Same partition as
        ``fit(X_public, y_public)``. Randomised rules, whose proposals depend on the key, refuse.
        """
        if not self.deterministic:
            raise TypeError(f"{type(self).__name__} is randomised; its proposals cannot be shared")
        return self._grow(X_public, y_public, None, memo)

    def _grow(
        self, X_public: Any, y_public: Any, key: PRNGKey | None, memo: NodeMemo | None
    ) -> Partition:
        X = check_matrix(X_public, "X_public", allow_empty=True)
        y = None if y_public is None else check_vector(y_public, "y_public", n=X.shape[0])
        criterion = getattr(self, "criterion", None)
        if criterion is not None:
            check_criterion_labels(CRITERIA[criterion], y, "y_public")
        self._check_inputs(X, y, key)
        proposals = count()

        def propose(
            X_node: FloatArray,
            y_node: FloatArray | None,
            lower: FloatArray,
            upper: FloatArray,
            depth: int,
        ) -> Sequence[tuple[int, float]]:
            node_key = None if key is None else jax.random.fold_in(key, next(proposals))
            return self._propose(Node(X_node, y_node, lower, upper, depth), node_key)

        return grow(
            X,
            y,
            max_depth=self.max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            propose=propose,
            memo=memo,
        )

    def _check_inputs(self, X: FloatArray, y: FloatArray | None, key: PRNGKey | None) -> None:
        """Rule-specific requirements on the public data or the key (none by default)."""

    def _propose(self, node: Node, key: PRNGKey | None) -> Sequence[tuple[int, float]]:
        """Candidate splits ``[(feature, threshold), ...]`` of ``node``, best first."""
        raise NotImplementedError


def rank_candidates(deltas: FloatArray, threshold: float) -> list[int]:
    """Indices of the candidates the reference tries, best first.

    Candidates are sorted by ``Delta`` descending (stable, so ties keep their order), those with
    ``Delta < threshold`` are dropped, and only the first ``max(1, floor((|kept| + 5) / 10))`` are
    returned, i.e. one unless at least 15 candidates pass.
    """
    order = np.argsort(-deltas, kind="stable")
    kept = [int(i) for i in order if deltas[i] >= threshold]
    return kept[: max(1, (len(kept) + 5) // 10)]


def _n_distinct(X_node: FloatArray, y_node: FloatArray | None) -> int:
    """Number of distinct public rows ``[x | y]`` of a node (the stopping rule's second test)."""
    rows = X_node if y_node is None else np.column_stack([X_node, y_node])
    return int(np.unique(rows, axis=0).shape[0])
