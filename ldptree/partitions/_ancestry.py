"""Navigating a fitted partition upwards: parents, depths, subtree sums and leaf ancestors.

Read-outs that look at internal nodes (LPCT-prune) aggregate leaf statistics over
subtrees. Everything here is array code over nodes (at most ``2^(s+1)``, public structure), never
over data, with loops only over the (static) depth, so it runs on a concrete partition in NumPy
and on a traced one (under ``jax.jit``/``jax.vmap``) in ``jax.numpy`` (:mod:`ldptree._xp`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldptree._typing import FloatArray, IntArray
from ldptree._xp import as_float, int_dtype, namespace
from ldptree.partitions._partition import Partition


def _scatter(xp: Any, base: Any, index: Any, values: Any) -> Any:
    """A copy of ``base`` with ``base[index] = values`` (duplicate indices: any one wins)."""
    if xp is np:
        out = base.copy()
        out[index] = values
        return out
    return base.at[index].set(values)


def node_parents(partition: Partition) -> IntArray:
    """``parent[i]`` for every node (``-1`` for the root)."""
    xp = namespace(partition)
    n = partition.n_nodes
    internal = partition.left >= 0
    ids = xp.arange(n, dtype=int_dtype(xp))
    parent = xp.full(n + 1, -1, dtype=int_dtype(xp))  # slot n absorbs the leaves' -1 children
    parent = _scatter(xp, parent, xp.where(internal, partition.left, n), ids)
    parent = _scatter(xp, parent, xp.where(internal, partition.right, n), ids)
    out: IntArray = parent[:n]
    return out


def node_depths(partition: Partition) -> IntArray:
    """Depth of every node (the root has depth 0)."""
    xp = namespace(partition)
    parent = node_parents(partition)
    has_parent, above = parent >= 0, xp.maximum(parent, 0)
    depth = xp.zeros(partition.n_nodes, dtype=int_dtype(xp))
    for _ in range(partition.depth):  # after k rounds every node of depth <= k is right
        depth = xp.where(has_parent, depth[above] + 1, 0)
    out: IntArray = depth
    return out


def subtree_sums(partition: Partition, leaf_values: FloatArray) -> FloatArray:
    """``out[i] = sum of leaf_values[l]`` over the leaves ``l`` below node ``i`` (shape
    ``[n_nodes, ...]`` for ``leaf_values`` of shape ``[L, ...]``).

    Bottom-up, one level at a time: every internal node is ``out[left] + out[right]``, so each
    node's sum is the same pairwise sum on every path (NumPy or traced).
    """
    xp = namespace(partition, leaf_values)
    leaf_values = as_float(leaf_values, xp)
    out = xp.zeros((partition.n_nodes, *leaf_values.shape[1:]), dtype=leaf_values.dtype)
    out = _scatter(xp, out, partition.leaf_nodes, leaf_values)
    internal = partition.left >= 0
    left, right = xp.maximum(partition.left, 0), xp.maximum(partition.right, 0)
    depth = node_depths(partition)
    extra = (1,) * (leaf_values.ndim - 1)
    for level in range(partition.depth - 1, -1, -1):
        mask = (internal & (depth == level)).reshape(-1, *extra)
        out = xp.where(mask, out[left] + out[right], out)
    result: FloatArray = out
    return result


def leaf_ancestors(partition: Partition) -> IntArray:
    """``int[L, depth + 1]``: column ``a`` holds the node ``a`` levels above each leaf (column 0
    is the leaf itself), ``-1`` above the root."""
    xp = namespace(partition)
    parent = node_parents(partition)
    current = partition.leaf_nodes.astype(int_dtype(xp))
    columns = []
    for _ in range(partition.depth + 1):
        columns.append(current)
        current = xp.where(current >= 0, parent[xp.maximum(current, 0)], -1)
    table: IntArray = xp.stack(columns, axis=1)
    return table
