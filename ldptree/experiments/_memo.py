"""Memoised partition growth for grids: one partition per (rule, public data), not per fit.

In a grid, many fits share a partition: with LPDT-M and LPDT-V the partition depends on
``(max_depth, min_samples_leaf, min_samples_split)`` and the public rows only, not on ``rho`` or
``epsilon``. :class:`MemoPartitioner` wraps a *deterministic* partitioner (one that ignores its
key, as the max-edge and CART rules do) and returns the cached partition for identical public
inputs, so results are bit-identical to refitting. The cache is a bounded LRU keyed on the rule
and the bytes of the public arrays.

Tree rules (:class:`~ldptree.partitions.TreeRule`) go one step further: the partitions of a
grid over ``max_depth`` and ``min_samples_leaf`` on the same public data share their nodes, and
a node's proposals and distinct-row count do not depend on those sizes, so all growths of one
rule family (the rule with its sizes zeroed) on one public sample share a node memo
(:meth:`~ldptree.partitions.TreeRule.fit_shared`): each distinct node is examined once per
sample instead of once per grid point. For the quantile CART rule (LPDT-V), whose per-node
threshold search dominates a small-data fit, this is most of the growth time.
"""

from __future__ import annotations

import functools
from collections.abc import Hashable
from typing import Any, cast

import attrs
import numpy as np

from ldptree._typing import PRNGKey
from ldptree.partitions import Partition
from ldptree.partitions._builder import NodeMemo, TreeRule
from ldptree.protocols import Partitioner


@functools.lru_cache(maxsize=16)
def _node_memo(family: Hashable, X_bytes: bytes, y_bytes: bytes | None) -> NodeMemo:
    # A fresh dict per (rule family, public sample), kept while the sample is in use; a grid
    # touches one sample at a time, so a few entries suffice.
    del family, X_bytes, y_bytes
    return {}


@functools.lru_cache(maxsize=512)
def _grow(
    inner: Hashable, shape: tuple[int, ...], X_bytes: bytes, y_bytes: bytes | None
) -> Partition:
    X = np.frombuffer(X_bytes, dtype=np.float64).reshape(shape)
    y = None if y_bytes is None else np.frombuffer(y_bytes, dtype=np.float64)
    assert isinstance(inner, Partitioner)
    if isinstance(inner, TreeRule) and inner.deterministic:
        family = attrs.evolve(inner, max_depth=0, min_samples_split=0, min_samples_leaf=0)
        return inner.fit_shared(X, y, _node_memo(family, X_bytes, y_bytes))
    return inner.fit(X, y)


@attrs.frozen
class MemoPartitioner:
    """A deterministic, hashable partitioner whose fits are memoised (module docstring)."""

    inner: Partitioner

    def fit(self, X_public: Any, y_public: Any = None, *, key: PRNGKey | None = None) -> Partition:
        del key  # deterministic rules ignore it
        X = np.ascontiguousarray(X_public, dtype=np.float64)
        y = None if y_public is None else np.ascontiguousarray(y_public, dtype=np.float64)
        return _grow(
            cast(Hashable, self.inner), X.shape, X.tobytes(), None if y is None else y.tobytes()
        )
