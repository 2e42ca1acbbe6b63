"""Top-down growth of a partition on public data, shared by every splitting rule.

Stopping rules (those of the papers' reference builder): a node holding ``m`` public points at depth
``s`` becomes a leaf when ``m <= min_samples_split``, when ``s >= max_depth``, or when its rows
``[x | y]`` take at most ``min_samples_split`` distinct values. Otherwise the rule proposes an
ordered list of candidate splits and the first whose two children both keep at least
``min_samples_leaf`` public points is taken; if none qualifies the node is a leaf.

With no public rows at all (``X`` of shape ``(0, d)``) the count rules are meaningless and every
node is split down to ``max_depth``: the data-free partition. Rules must then propose splits that
need no data (the max-edge midpoint does).

Refinement of cells the public data cannot split (``refine_empty = k > 0``, default 0: off): a
node at depth ``s < max_depth`` that the rules above would make a leaf (too few public points or
distinct rows, or no candidate keeping ``min_samples_leaf`` points on each side) is instead
replaced by the data-free grid of depth ``r = min(k, max_depth - s)`` below it: each node of that
subtree is split at the midpoint of its longest side (the smallest feature index among equals),
whatever public points it holds, so the cell becomes ``2^r`` cells. The rule is public and
data-free, so the partition stays a function of the public data; with ``k = 0`` the partition is
exactly the one grown without it.

Growth visits nodes depth first, left child first (node numbers and the randomised rules' keys
follow that order); loops run over nodes (at most ``2^(s+1)``), never over rows, and never over
private data. The per-node work is array work on the node's public rows, kept linear:

* each feature is sorted once, at the root; a child gets its parent's sorted views by a stable
  partition (the points going left, in their order), so a rule scanning sorted features (CART)
  never sorts again;
* the distinct-row test uses one integer id per distinct public row (a hash of the row's bits,
  verified exactly), counted in an inherited id-sorted view; once a node's rows are known to be
  distinct (one feature has no repeated value), its descendants' are too and nothing is counted.

These change no partition: a test compares every rule, on data with ties and duplicate rows,
with a plain transcription that re-sorts and re-counts at every node.
"""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from itertools import count
from typing import Any, ClassVar, cast

import attrs
import jax
import numpy as np

from ldptree._typing import BoolArray, FloatArray, IntArray, PRNGKey
from ldptree._validation import check_int, check_matrix, check_vector
from ldptree.partitions._criteria import CRITERIA, check_criterion_labels
from ldptree.partitions._params import nonneg_int
from ldptree.partitions._partition import Partition

#: ``propose(node) -> [(feature, threshold), ...]`` in order of preference (see :class:`Node`).
Proposer = Callable[["Node"], Sequence[tuple[int, float]]]

#: What :func:`grow` may remember about a node across growths on the same public data: its number
#: of distinct rows and its proposals. Keys identify the node (its rows, box and depth).
NodeMemo = MutableMapping[bytes, tuple[int, Sequence[tuple[int, float]]]]


#: Deepest data-free partition (no public rows): ``2^20`` (about a million) cells.
MAX_DATA_FREE_DEPTH = 20


def grow(
    X: FloatArray,
    y: FloatArray | None,
    *,
    max_depth: int,
    min_samples_split: int,
    min_samples_leaf: int,
    propose: Proposer,
    memo: NodeMemo | None = None,
    refine_empty: int = 0,
) -> Partition:
    """Grow a partition of ``[0, 1]^d`` from public rows ``X`` (already scaled) and labels ``y``.

    ``refine_empty = k`` splits every cell the public data cannot split further data-free, up to
    ``k`` more levels and never past ``max_depth`` (module docstring; ``0``: off).

    ``memo`` (for deterministic rules only) shares node work between growths on the same ``X``,
    ``y`` and rule with different stopping sizes: a node's proposals and its number of distinct
    rows depend on its rows, box and depth, never on ``max_depth``, ``min_samples_split`` or
    ``min_samples_leaf``, so a grid over those grows every distinct node once. The partition is
    the same as without it.
    """
    n, d = X.shape
    data_free = n == 0
    if data_free and max_depth > MAX_DATA_FREE_DEPTH:
        raise ValueError(
            f"max_depth must be <= {MAX_DATA_FREE_DEPTH} without public data: the data-free "
            f"partition splits every node, so it has 2**max_depth cells; got max_depth="
            f"{max_depth} (pass public rows, or a smaller depth)"
        )
    refine = check_int(refine_empty, "refine_empty", minimum=0)
    if refine > MAX_DATA_FREE_DEPTH:
        raise ValueError(
            f"refine_empty must be <= {MAX_DATA_FREE_DEPTH} (a refined cell becomes up to "
            f"2**refine_empty cells), got {refine}"
        )
    public = _PublicRows(X, y)
    feature: list[int] = [-1]
    threshold: list[float] = [np.nan]
    left: list[int] = [-1]
    right: list[int] = [-1]
    lower: list[FloatArray] = [np.zeros(d)]
    upper: list[FloatArray] = [np.ones(d)]
    # the third item: levels of data-free refinement left below the node (None: grown by rules)
    stack: list[tuple[int, Node, int | None]] = [
        (0, Node(public, np.arange(n), lower[0], upper[0], 0), None)
    ]

    def add_children(
        index: int,
        node: Node,
        f: int,
        t: float,
        go_left: BoolArray,
        keep: tuple[bool, bool],
        free: int | None,
    ) -> None:
        """Split ``node`` at ``x_f < t`` and push its children (left on top)."""
        ids = (len(feature), len(feature) + 1)
        feature[index], threshold[index] = f, t
        left[index], right[index] = ids
        lo_right, up_left = node.lower.copy(), node.upper.copy()
        up_left[f] = lo_right[f] = t
        for _ in ids:
            feature.append(-1)
            threshold.append(np.nan)
            left.append(-1)
            right.append(-1)
        lower.extend([node.lower, lo_right])
        upper.extend([up_left, node.upper])
        rows_left, rows_right = (node.rows[part] for part in mask_indices(go_left))
        views = node.split_views(go_left, keep)
        depth, distinct = node.depth + 1, node.distinct
        stack.append(
            (
                ids[1],
                Node(public, rows_right, lo_right, node.upper, depth, views[1], distinct),
                free,
            )
        )
        stack.append(
            (ids[0], Node(public, rows_left, node.lower, up_left, depth, views[0], distinct), free)
        )

    while stack:
        index, node, free = stack.pop()
        depth, m = node.depth, node.n_rows
        if depth >= max_depth or free == 0:
            continue
        if free is not None:  # inside a refined cell: the data-free midpoint of the longest side
            f = int(np.argmax(node.upper - node.lower))
            t = float((node.lower[f] + node.upper[f]) / 2.0)
            add_children(index, node, f, t, node.column(f) < t, (False, False), free - 1)
            continue
        node_id, cached = b"", None
        if data_free or m <= min_samples_split:
            n_distinct = m
        else:
            node_id = b"".join(
                (
                    node.rows.tobytes(),
                    node.lower.tobytes(),
                    node.upper.tobytes(),
                    depth.to_bytes(4, "little"),
                )
            )
            cached = None if memo is None else memo.get(node_id)
            n_distinct = node.n_distinct() if cached is None else cached[0]
        if not data_free and n_distinct <= min_samples_split:
            if refine:  # the public data stop here: refine the cell data-free
                stack.append((index, node, refine))
            continue
        if cached is not None:
            candidates = cached[1]
        else:
            candidates = list(propose(node))
            if memo is not None and not data_free:
                memo[node_id] = (n_distinct, candidates)
        for f, t in candidates:
            go_left = node.column(f) < t
            n_left = int(np.count_nonzero(go_left))
            if not data_free and min(n_left, m - n_left) < min_samples_leaf:
                continue
            # only children that will be examined need the sorted views
            examined = depth + 1 < max_depth
            keep = (
                examined and (data_free or n_left > min_samples_split),
                examined and (data_free or m - n_left > min_samples_split),
            )
            add_children(index, node, f, t, go_left, keep, None)
            break
        else:
            if refine and not data_free:  # no candidate qualifies: refine the cell data-free
                stack.append((index, node, refine))
    return Partition.from_arrays(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        lower=np.asarray(lower),
        upper=np.asarray(upper),
    )


class _PublicRows:
    """The public sample of one growth: contiguous feature columns, labels, an integer id per
    distinct row ``[x | y]`` (for the distinct-row stopping test, computed on first use) and a
    scratch mask for splitting sorted views."""

    __slots__ = ("X", "columns", "id_order", "ids", "side", "y")

    def __init__(self, X: FloatArray, y: FloatArray | None) -> None:
        self.X = X
        self.columns: FloatArray = np.ascontiguousarray(X.T)  # feature k: a contiguous row
        self.y = y
        self.ids: IntArray | None = None
        self.id_order: IntArray | None = None
        self.side = np.zeros(X.shape[0], dtype=bool)

    def row_ids(self) -> tuple[IntArray, IntArray]:
        """``(ids, order)``: distinct-row ids and an order sorting them (see
        :func:`distinct_row_ids`)."""
        if self.ids is None or self.id_order is None:
            table = self.X if self.y is None else np.column_stack([self.X, self.y])
            self.ids, self.id_order = distinct_row_ids(table)
        return self.ids, self.id_order


def distinct_row_ids(table: FloatArray) -> tuple[IntArray, IntArray]:
    """``(ids, order)``: rows of ``table`` get ids ``0, 1, ...``, equal exactly for equal rows, and
    ``ids[order]`` is non-decreasing.

    Rows compare as ``np.unique(table, axis=0)`` compares them (float equality, so ``-0.0`` equals
    ``0.0``). A 64-bit hash of each row's bits groups candidates with one sort; neighbours in that
    order are then compared row by row, and on a collision (never seen in practice) the ids come
    from ``np.unique`` itself, so the result is exact either way.
    """
    n = table.shape[0]
    canonical = np.ascontiguousarray(table + 0.0)  # -0.0 + 0.0 == +0.0: one bit pattern per value
    bits = canonical.view(np.uint64)
    digest = np.full(n, 0x243F6A8885A308D3, dtype=np.uint64)
    for j in range(bits.shape[1]):
        digest ^= bits[:, j]
        digest *= np.uint64(0x9E3779B97F4A7C15)
        digest ^= digest >> np.uint64(29)
    order = np.argsort(digest)  # groups equal digests; their order within a group is irrelevant
    sorted_digest, sorted_rows = digest[order], canonical[order]
    same_digest = sorted_digest[1:] == sorted_digest[:-1]
    if np.any(same_digest & np.any(sorted_rows[1:] != sorted_rows[:-1], axis=1)):
        _, inverse = np.unique(table, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1).astype(np.int64)
        return inverse, np.argsort(inverse, kind="stable")
    ids = np.empty(n, dtype=np.int64)
    ids[order] = np.cumsum(np.concatenate([[n > 0], ~same_digest])) - 1
    return ids, order


def stable_argsort_rows(a: FloatArray) -> IntArray:
    """``np.argsort(a, axis=1, kind="stable")`` of a ``float[r, m]`` array, several times faster.

    NumPy's unstable sort is vectorised and its stable sort is not. Without ties every sort is
    the stable one; where a row has ties (values comparing equal), each run of equal values is
    put back in index order by sorting the keys ``run * m + index``, which are distinct.
    """
    order = np.argsort(a, axis=1)
    ordered = np.take_along_axis(a, order, axis=1)
    new_run = ordered[:, 1:] != ordered[:, :-1]
    if np.all(new_run):
        return order
    m = a.shape[1]
    run = np.zeros(a.shape, dtype=np.int64)
    np.cumsum(new_run, axis=1, out=run[:, 1:])
    keys = np.sort(run * m + order, axis=1)
    fixed: IntArray = keys % m
    return fixed


def mask_indices(mask: BoolArray) -> tuple[IntArray, IntArray]:
    """``(flatnonzero(mask), flatnonzero(~mask))``: gathering with these is much faster than
    indexing with the mask itself, and gives the same arrays."""
    return np.flatnonzero(mask), np.flatnonzero(~mask)


#: A sorted view of a node: its rows ordered by a key, with the key's values and the labels
#: (``None`` without labels) in that order. Either one row per feature (``[d, m]`` arrays, each
#: feature sorted stably) or the distinct-row ids (``[m]`` arrays).
_View = tuple[IntArray, np.ndarray[Any, Any], FloatArray | None]
_FEATURES, _IDS = 0, 1  # view keys


class Node:
    """What a rule sees of a node: its public rows, box ``[lower, upper]`` and depth.

    ``rows`` are indices into the public sample, ascending, so ``y`` and :meth:`column` list
    the node's points in sample order. :meth:`sorted_features` gives every feature sorted stably
    within the node (ties in sample order) with the labels in the same order; a child inherits
    every sorted view of its parent by a stable partition (``O(m)``, no sort), so each feature is
    sorted once per growth.
    """

    __slots__ = ("_columns", "_public", "_views", "depth", "distinct", "lower", "rows", "upper")

    def __init__(
        self,
        public: _PublicRows,
        rows: IntArray,
        lower: FloatArray,
        upper: FloatArray,
        depth: int,
        views: dict[int, _View] | None = None,
        distinct: bool = False,
    ) -> None:
        self.rows, self.lower, self.upper, self.depth = rows, lower, upper, depth
        #: whether the node's rows are known to be pairwise distinct (then so are its children's)
        self.distinct = distinct
        self._public = public
        self._views: dict[int, _View] = {} if views is None else views
        self._columns: dict[int, FloatArray] = {}

    @property
    def n_rows(self) -> int:
        return int(self.rows.shape[0])

    @property
    def y(self) -> FloatArray | None:
        """The node's public labels ``float[m]`` (``None`` without labels)."""
        return None if self._public.y is None else self._public.y[self.rows]

    def column(self, k: int) -> FloatArray:
        """Feature ``k`` of the node's rows (contiguous, cached)."""
        if k not in self._columns:
            self._columns[k] = self._public.columns[k][self.rows]
        return self._columns[k]

    def sorted_features(self) -> tuple[FloatArray, FloatArray | None]:
        """``(x, y)``, both ``float[d, m]``: row ``k`` lists the node's points ordered by
        ``np.argsort(self.column(k), kind="stable")`` (ties in sample order), ``x`` their feature
        ``k`` and ``y`` their labels (``None`` without labels)."""
        if _FEATURES not in self._views:
            columns = self._public.columns[:, self.rows]
            order = stable_argsort_rows(columns)
            rows, y = self.rows[order], self._public.y
            x = np.take_along_axis(columns, order, axis=1)
            self._views[_FEATURES] = (rows, x, None if y is None else y[rows])
        _, x, y_sorted = self._views[_FEATURES]
        return x, y_sorted

    def n_distinct(self) -> int:
        """Number of distinct public rows ``[x | y]`` (the stopping rule's second test)."""
        if self.distinct:
            return self.n_rows
        if _IDS in self._views:
            ids = self._views[_IDS][1]
            return int(np.count_nonzero(ids[1:] != ids[:-1])) + int(ids.shape[0] > 0)
        if self.depth == 0 and self.n_rows == self._public.X.shape[0]:  # the root
            first = np.sort(self.column(0))
            if not np.any(first[1:] == first[:-1]):
                # distinct in one feature: all rows distinct, here and in every descendant
                self.distinct = True
                return self.n_rows
            all_ids, order = self._public.row_ids()
            self._views[_IDS] = (order, all_ids[order], None)
            return self.n_distinct()
        all_ids, _ = self._public.row_ids()
        return int(np.unique(all_ids[self.rows]).shape[0])

    def split_views(
        self, go_left: BoolArray, keep: tuple[bool, bool]
    ) -> tuple[dict[int, _View], dict[int, _View]]:
        """The children's sorted views (for the children flagged in ``keep``): each view is
        partitioned stably, so every child's points keep their order."""
        if not self._views or not any(keep):
            return {}, {}
        side = self._public.side
        side[self.rows] = go_left
        children: tuple[dict[int, _View], dict[int, _View]] = ({}, {})
        for key, (rows, values, y) in self._views.items():
            on_left = side[rows]
            # Every row of a view lists the same points, so each keeps the same number of them:
            # the flat selection reshapes to one row per feature. Index lists then gathers:
            # NumPy's boolean-mask copies are several times slower.
            flat = (rows.ravel(), values.ravel(), None if y is None else y.ravel())
            for child, part, wanted in zip(
                children, mask_indices(on_left.ravel()), keep, strict=True
            ):
                if wanted:
                    shape = (*rows.shape[:-1], -1)
                    child[key] = cast(
                        _View, tuple(None if a is None else a[part].reshape(shape) for a in flat)
                    )
        return children


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
    refine_empty:
        ``k`` (keyword only; default 0: off): a cell the public data cannot split further (the
        rules above) is split data-free at the midpoint of its longest side, and so on for up
        to ``k`` more levels, never past ``max_depth`` (:func:`grow`). Lets a later round of
        private reports resolve regions with holders but no public points.
    """

    max_depth: int = attrs.field(default=4, validator=nonneg_int)
    min_samples_split: int = attrs.field(default=5, validator=nonneg_int)
    min_samples_leaf: int = attrs.field(default=2, validator=nonneg_int)
    refine_empty: int = attrs.field(default=0, validator=nonneg_int, kw_only=True)

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

        def propose(node: Node) -> Sequence[tuple[int, float]]:
            # deterministic rules ignore the key: deriving one per node would cost a JAX
            # dispatch per node (most of a small growth) for nothing
            if key is None or self.deterministic:
                return self._propose(node, None)
            return self._propose_with_index(node, key, next(proposals))

        return grow(
            X,
            y,
            max_depth=self.max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            propose=propose,
            memo=memo,
            refine_empty=self.refine_empty,
        )

    def _check_inputs(self, X: FloatArray, y: FloatArray | None, key: PRNGKey | None) -> None:
        """Rule-specific requirements on the public data or the key (none by default)."""

    def _propose(self, node: Node, key: PRNGKey | None) -> Sequence[tuple[int, float]]:
        """Candidate splits ``[(feature, threshold), ...]`` of ``node``, best first."""
        raise NotImplementedError

    def _propose_with_index(
        self, node: Node, key: PRNGKey, index: int
    ) -> Sequence[tuple[int, float]]:
        """:meth:`_propose` of the ``index``-th proposal of a randomised growth, with the node
        key ``fold_in(key, index)`` (a rule may fuse the derivation into its own draw)."""
        return self._propose(node, jax.random.fold_in(key, index))


def rank_candidates(deltas: FloatArray, threshold: float) -> list[int]:
    """Indices of the candidates the reference tries, best first (max-edge and CART rules).

    Candidates are sorted by ``Delta`` descending (stable, so ties keep their order), those with
    ``Delta < threshold`` are dropped, and only the first ``max(1, floor((|kept| + 5) / 10))`` are
    returned, i.e. one unless at least 15 candidates pass.
    """
    order = np.argsort(-deltas, kind="stable")
    kept = [int(i) for i in order if deltas[i] >= threshold]
    return kept[: max(1, (len(kept) + 5) // 10)]
