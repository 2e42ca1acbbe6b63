"""The random max-edge rule (LPCT-R): key-driven, dyadic, labels unused."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree.partitions import MaxEdgePartitioner, RandomMaxEdgePartitioner
from ldptree.partitions._builder import Node, _PublicRows


def _data(n: int = 300, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    X = rng.random((n, d))
    return X, (X[:, 0] > 0.5).astype(float)


def test_same_key_same_partition_and_keys_matter() -> None:
    X, y = _data()
    rule = RandomMaxEdgePartitioner(max_depth=5)
    first = rule.fit(X, y, key=jax.random.key(3))
    assert first.equals(rule.fit(X, y, key=jax.random.key(3)))
    others = [rule.fit(X, y, key=jax.random.key(k)) for k in range(4, 10)]
    assert not all(first.equals(p) for p in others)


def test_cells_are_dyadic_boxes_split_at_midpoints_of_longest_edges() -> None:
    X, y = _data()
    partition = RandomMaxEdgePartitioner(max_depth=6, min_samples_split=0, min_samples_leaf=0).fit(
        X, y, key=jax.random.key(0)
    )
    widths = partition.leaf_upper - partition.leaf_lower
    assert np.all(widths.max(axis=1) <= 2 * widths.min(axis=1))
    assert np.all(np.log2(widths) == np.round(np.log2(widths)))  # powers of two
    assert partition.n_leaves == 2**6


def test_split_feature_is_uniform_among_longest_edges() -> None:
    # Root of the unit square: both edges are longest. Over 400 keys the number of splits on
    # feature 0 is Binomial(400, 1/2); |count - 200| <= 60 fails with probability < 2e-9.
    X, y = _data(d=2)
    rule = RandomMaxEdgePartitioner(max_depth=1, min_samples_leaf=0)
    firsts = [int(rule.fit(X, y, key=jax.random.key(k)).feature[0]) for k in range(400)]
    assert abs(firsts.count(0) - 200) <= 60


def test_labels_do_not_choose_the_split() -> None:
    X, y = _data()
    rule = RandomMaxEdgePartitioner(max_depth=4, min_samples_split=0, min_samples_leaf=0)
    key = jax.random.key(11)
    assert rule.fit(X, y, key=key).equals(rule.fit(X, 1.0 - y, key=key))


def test_data_free_partition_is_a_random_dyadic_grid() -> None:
    p = RandomMaxEdgePartitioner(max_depth=3).fit(np.empty((0, 2)), key=jax.random.key(0))
    assert p.n_leaves == 8


def test_key_is_required() -> None:
    X, y = _data()
    with pytest.raises(TypeError, match="key"):
        RandomMaxEdgePartitioner().fit(X, y)


def test_differs_from_criterion_rule_only_in_the_edge_choice() -> None:
    X, y = _data(d=2)
    random_p = RandomMaxEdgePartitioner(max_depth=1).fit(X, y, key=jax.random.key(0))
    max_edge = MaxEdgePartitioner(max_depth=1, criterion="gini").fit(X, y)
    assert random_p.threshold[0] == max_edge.threshold[0] == 0.5


def test_fused_draw_is_the_per_node_key_draw() -> None:
    """The growth's one-call edge draw equals ``_propose`` with ``fold_in(key, index)``."""
    rule = RandomMaxEdgePartitioner()
    key = jax.random.key(11)
    public = _PublicRows(np.zeros((0, 6)), None)
    for index in range(60):
        upper = np.ones(6)
        upper[: index % 6] = 0.5  # 6 - index % 6 longest edges
        node = Node(public, np.arange(0), np.zeros(6), upper, 1)
        fused = rule._propose_with_index(node, key, index)
        assert fused == rule._propose(node, jax.random.fold_in(key, index))
