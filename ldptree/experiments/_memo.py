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
import hashlib
from collections import OrderedDict
from collections.abc import Hashable
from typing import Any, cast

import attrs
import numpy as np

from ldptree._typing import PRNGKey
from ldptree.partitions import Partition
from ldptree.partitions._builder import NodeMemo, TreeRule
from ldptree.protocols import Partitioner


@attrs.frozen(eq=False)
class _Sample:
    """A public sample keyed by a digest of its bytes: equal samples compare equal, and the cache
    entries of one sample share a single copy of its arrays (keying on the bytes themselves kept
    one copy per grid point: gigabytes for a 41k-row public file)."""

    digest: bytes
    X: np.ndarray[Any, Any]
    y: np.ndarray[Any, Any] | None

    def __hash__(self) -> int:
        return hash(self.digest)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Sample) and other.digest == self.digest


_SAMPLES: OrderedDict[bytes, _Sample] = OrderedDict()
_MAX_SAMPLES = 8  # a grid touches one public sample at a time


def _intern(X: np.ndarray[Any, Any], y: np.ndarray[Any, Any] | None) -> _Sample:
    h = hashlib.blake2b(digest_size=20)
    h.update(repr(X.shape).encode())
    h.update(X.tobytes())
    if y is not None:
        h.update(b"y")
        h.update(y.tobytes())
    digest = h.digest()
    if digest in _SAMPLES:
        _SAMPLES.move_to_end(digest)
        return _SAMPLES[digest]
    X.setflags(write=False)  # shared by every cache entry of this sample
    if y is not None:
        y.setflags(write=False)
    sample = _Sample(digest, X, y)
    _SAMPLES[digest] = sample
    if len(_SAMPLES) > _MAX_SAMPLES:
        _SAMPLES.popitem(last=False)
    return sample


@functools.lru_cache(maxsize=16)
def _node_memo(family: Hashable, sample: _Sample) -> NodeMemo:
    # A fresh dict per (rule family, public sample), kept while the sample is in use; a grid
    # touches one sample at a time, so a few entries suffice.
    del family, sample
    return {}


@functools.lru_cache(maxsize=512)
def _grow(inner: Hashable, sample: _Sample) -> Partition:
    assert isinstance(inner, Partitioner)
    if isinstance(inner, TreeRule) and inner.deterministic:
        family = attrs.evolve(
            inner, max_depth=0, min_samples_split=0, min_samples_leaf=0, refine_empty=0
        )
        return inner.fit_shared(sample.X, sample.y, _node_memo(family, sample))
    return inner.fit(sample.X, sample.y)


@attrs.frozen
class MemoPartitioner:
    """A deterministic, hashable partitioner whose fits are memoised (module docstring)."""

    inner: Partitioner

    @property
    def max_depth(self) -> int | None:
        """The wrapped rule's declared depth (what an estimator checks its own against)."""
        own = getattr(self.inner, "max_depth", None)
        return own if isinstance(own, int) else None

    def fit(self, X_public: Any, y_public: Any = None, *, key: PRNGKey | None = None) -> Partition:
        del key  # deterministic rules ignore it
        X = np.array(X_public, dtype=np.float64, order="C")  # private copies, frozen by _intern
        y = None if y_public is None else np.array(y_public, dtype=np.float64, order="C")
        return _grow(cast(Hashable, self.inner), _intern(X, y))
