"""A partition grown by every rule is usable as a *traced* argument (jit and vmap): routing,
leaf boxes and the upward navigation (parents, depths, subtree sums, ancestors) give exactly the
host results."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree.partitions import CartPartitioner, MaxEdgePartitioner, RandomMaxEdgePartitioner
from ldptree.partitions._ancestry import leaf_ancestors, node_depths, node_parents, subtree_sums


def _grown(rule: str):
    rng = np.random.default_rng(1)
    X = rng.random((400, 3))
    y = np.sin(4 * X[:, 0]) + X[:, 1]
    kinds = {
        "max_edge": MaxEdgePartitioner,
        "cart": CartPartitioner,
        "random_max_edge": RandomMaxEdgePartitioner,
    }
    return kinds[rule](max_depth=4, min_samples_split=5, min_samples_leaf=2).fit(
        X, y, key=jax.random.key(2)
    )


RULES = ["max_edge", "cart", "random_max_edge"]


@pytest.mark.parametrize("rule", RULES)
def test_traced_partition_routes_like_the_host(rule):
    p = _grown(rule)
    assert p.n_leaves > 4  # a real tree, not the trivial partition
    X = np.random.default_rng(3).random((1000, 3))
    host = np.asarray(p.cells(X))
    traced = jax.jit(lambda part, x: part.cells(x))(p, X)
    np.testing.assert_array_equal(np.asarray(traced), host)
    # the partition traced, the rows concrete (closed over)
    np.testing.assert_array_equal(np.asarray(jax.jit(lambda part: part.cells(X))(p)), host)
    # a batch of row sets under vmap, the partition broadcast
    batch = np.stack([X[:500], X[500:]])
    vmapped = jax.jit(jax.vmap(lambda part, x: part.cells(x), in_axes=(None, 0)))(p, batch)
    np.testing.assert_array_equal(np.asarray(vmapped).ravel(), host)


@pytest.mark.parametrize("rule", RULES)
def test_traced_partition_navigation_matches_the_host(rule):
    p = _grown(rule)
    values = np.random.default_rng(4).normal(size=(p.n_leaves, 2))

    def navigate(part, v):
        return (
            part.leaf_nodes,
            part.leaf_lower,
            node_parents(part),
            node_depths(part),
            subtree_sums(part, v),
            leaf_ancestors(part),
        )

    host = navigate(p, values)
    with jax.enable_x64(True):
        traced = jax.jit(navigate)(p, jnp.asarray(values))
        for h, t in zip(host, traced, strict=True):
            assert np.asarray(t).shape == np.asarray(h).shape
            # sums are the same pairwise additions in the same order: exactly equal
            np.testing.assert_array_equal(np.asarray(t), h)
    # the root's subtree sum is the sum of all leaves
    np.testing.assert_allclose(host[4][0], values.sum(axis=0), rtol=1e-12)
