"""Navigating a fitted partition upwards: parents, depths, subtree sums and leaf ancestors.

Read-outs that look at internal nodes (LPCT-prune) aggregate leaf statistics over
subtrees. Everything here loops over nodes (at most ``2^(s+1)``, public structure), never over data.
"""

from __future__ import annotations

import numpy as np

from ldptree._typing import FloatArray, IntArray
from ldptree.partitions._partition import Partition


def breadth_first(partition: Partition) -> IntArray:
    """Node indices in breadth-first order from the root (parents before children)."""
    order = [0]
    for node in order:
        if partition.left[node] >= 0:
            order.extend((int(partition.left[node]), int(partition.right[node])))
    return np.asarray(order, dtype=np.int64)


def node_parents(partition: Partition) -> IntArray:
    """``parent[i]`` for every node (``-1`` for the root)."""
    parent = np.full(partition.n_nodes, -1, dtype=np.int64)
    internal = np.flatnonzero(partition.left >= 0)
    parent[partition.left[internal]] = internal
    parent[partition.right[internal]] = internal
    return parent


def node_depths(partition: Partition) -> IntArray:
    """Depth of every node (the root has depth 0)."""
    parent = node_parents(partition)
    depth = np.zeros(partition.n_nodes, dtype=np.int64)
    for node in breadth_first(partition)[1:]:
        depth[node] = depth[parent[node]] + 1
    return depth


def subtree_sums(partition: Partition, leaf_values: FloatArray) -> FloatArray:
    """``out[i] = sum of leaf_values[l]`` over the leaves ``l`` below node ``i`` (shape
    ``[n_nodes, ...]`` for ``leaf_values`` of shape ``[L, ...]``)."""
    leaf_values = np.asarray(leaf_values, dtype=np.float64)
    out = np.zeros((partition.n_nodes, *leaf_values.shape[1:]))
    out[partition.leaf_nodes] = leaf_values
    for node in breadth_first(partition)[::-1]:
        if partition.left[node] >= 0:
            out[node] = out[partition.left[node]] + out[partition.right[node]]
    return out


def leaf_ancestors(partition: Partition) -> IntArray:
    """``int[L, depth + 1]``: column ``a`` holds the node ``a`` levels above each leaf (column 0
    is the leaf itself), ``-1`` above the root."""
    parent = node_parents(partition)
    table = np.full((partition.n_leaves, partition.depth + 1), -1, dtype=np.int64)
    current = partition.leaf_nodes.astype(np.int64)
    for level in range(partition.depth + 1):
        table[:, level] = current
        current = np.where(current >= 0, parent[np.maximum(current, 0)], -1)
    return table
