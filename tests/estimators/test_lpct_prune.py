"""LPCT-prune: node aggregates, the statistic's closed form, both rules' branches, the walk, and
the estimator."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldptree import LPCTPrunedClassifier
from ldptree.datasets import make_lpct_pair
from ldptree.estimators._prune import NodeStats, node_stats, prune, prune_statistics
from ldptree.partitions import MaxEdgePartitioner
from ldptree.partitions._ancestry import leaf_ancestors, node_depths


def _stats(**columns: Any) -> NodeStats:
    """Hand-made single-level node statistics (depth 2 of p_max 2, one leaf per node)."""
    n = len(columns["u_p"])
    return NodeStats(
        u_p=np.asarray(columns["u_p"], float),
        v_p=np.asarray(columns["v_p"], float),
        u_q=np.asarray(columns["u_q"], float),
        v_q=np.asarray(columns["v_q"], float),
        depth=np.full(n, 2),
        n_leaves_below=np.ones(n),
        n_private=columns.get("n_private", 10_000),
        n_public=columns.get("n_public", 50),
        epsilon=columns.get("epsilon", 2.0),
        max_depth=2,
    )


def _reference_u(stats: NodeStats) -> tuple[float, float]:
    k, a = 2.0, 0.0
    n_p, n_q, eps = stats.n_private, stats.n_public, stats.epsilon
    c2 = math.log(n_p + n_q) + k + 1
    c1 = 2 ** (a + 1) * (2 * math.log(2 * n_p) + eps * 2 ** (-k / 2) * math.sqrt(c2)) ** 2
    return c1 / c2 * n_p / eps**2, c2


def test_node_aggregates_are_subtree_sums_of_leaf_sums() -> None:
    rng = np.random.default_rng(0)
    partition = MaxEdgePartitioner(max_depth=3, min_samples_leaf=0, min_samples_split=0).fit(
        rng.random((64, 2)), rng.integers(0, 2, 64).astype(float)
    )
    leaf = rng.normal(size=(partition.n_leaves, 4))
    stats = node_stats(partition, *leaf.T, n_private=100, epsilon=1.0, max_depth=3)
    assert stats.u_p[0] == pytest.approx(leaf[:, 0].sum())
    assert stats.v_q[0] == pytest.approx(leaf[:, 3].sum())
    assert stats.n_leaves_below[0] == partition.n_leaves
    left = partition.left[0]
    assert stats.n_leaves_below[left] == partition.n_leaves // 2


@settings(max_examples=50)
@given(
    u_p=st.floats(50, 5000),
    ratio_p=st.floats(0.05, 0.95),
    u_q=st.floats(1, 50),
    ratio_q=st.floats(0.05, 0.95),
    eps=st.floats(0.5, 50),
)
def test_closed_form_lambda_maximises_the_statistic_over_a_grid(
    u_p: float, ratio_p: float, u_q: float, ratio_q: float, eps: float
) -> None:
    stats = _stats(u_p=[u_p], v_p=[ratio_p * u_p], u_q=[u_q], v_q=[ratio_q * u_q], epsilon=eps)
    _, t, _ = prune_statistics(stats, rule="corrected", c=1.0)
    u, c2 = _reference_u(stats)
    variance = u + u_p
    grid = np.concatenate([[0.0], np.geomspace(1e-4, 1e8, 4000)])
    a, b = u_p * (ratio_p - 0.5), u_q * (ratio_q - 0.5)
    t_grid = np.abs(a + grid * b) / (np.sqrt(c2) * np.sqrt(variance + grid**2 * u_q))
    c2q = math.log(50) + 2 + 1
    t_public = abs(ratio_q - 0.5) * math.sqrt(u_q) / math.sqrt(c2q)
    assert t[0] == pytest.approx(max(t_grid.max(), t_public), rel=1e-3)
    assert t[0] >= t_grid.max() * (1 - 1e-9)


def test_reference_rule_branches() -> None:
    # 0: no public data; 1: negative private count; 2: noisy private ratio > 1 (kept, truncated);
    # 3: u > U_P (private discarded); 4: u <= U_P with agreeing signals (combined).
    stats = _stats(
        u_p=[100, -5, 200, 300, 1e9],
        v_p=[60, 3, 260, 250, 0.8e9],
        u_q=[0, 10, 10, 10, 10],
        v_q=[0, 8, 8, 8, 8],
    )
    eta, t, lam = prune_statistics(stats, rule="reference", c=1.0)
    assert eta[0] == 0.5 and t[0] == 0.0
    assert eta[1] == pytest.approx(0.8) and math.isinf(lam[1])
    u, c2 = _reference_u(stats)
    assert u > 300  # the reference's noise proxy dwarfs these counts...
    assert eta[3] == pytest.approx(0.8) and math.isinf(lam[3])  # ...so node 3 is public only
    # node 2: s_P := 1/2, V_P := U_P, u kept; combined with the public ratio when T* >= T_Q
    lam2 = u / 200 * (0.3 / 0.5)
    eta2 = (200 + lam2 * 8) / (200 + lam2 * 10)
    t2 = abs(eta2 - 0.5) / (math.sqrt(c2) * math.sqrt(u + lam2**2 * 10) / (200 + lam2 * 10))
    t_q = 0.3 * math.sqrt(10) / math.sqrt(math.log(50) + 3)
    if t2 >= t_q:
        assert eta[2] == pytest.approx(eta2)
    else:
        assert eta[2] == pytest.approx(0.8)
    assert lam[4] == pytest.approx(1e9 / 1e9 * (0.3 / 0.3))  # u := U_P, lam* = s_Q / s_P
    assert t[4] > t_q  # a huge private sample is far more confident than 10 public points


def test_corrected_rule_weights_noisy_private_data_instead_of_discarding_it() -> None:
    # U_P = 5000 private points at 80% class 1 against 10 public points at 60%: the reference's
    # noise proxy u (~2.2e5) exceeds U_P, so it discards the private sums; the corrected rule
    # weighs them (their signal is ~7x the public one per unit of noise).
    stats = _stats(u_p=[5000.0], v_p=[4000.0], u_q=[10.0], v_q=[6.0])
    ref_eta, _, ref_lam = prune_statistics(stats, rule="reference", c=1.0)
    eta, _, lam = prune_statistics(stats, rule="corrected", c=1.0)
    assert math.isinf(ref_lam[0])  # reference: public only
    assert 0 < lam[0] < math.inf  # corrected: both sources, lambda* from the closed form
    assert eta[0] != pytest.approx(ref_eta[0])


def test_corrected_rule_is_symmetric_in_the_classes() -> None:
    stats = _stats(u_p=[300.0, 300.0], v_p=[350.0, -50.0], u_q=[10.0, 10.0], v_q=[8.0, 2.0])
    eta, t, _ = prune_statistics(stats, rule="corrected", c=1.0)
    assert eta[0] == pytest.approx(1 - eta[1]) and t[0] == pytest.approx(t[1])


def test_constant_c_scales_the_statistic() -> None:
    stats = _stats(u_p=[300.0, 50.0], v_p=[250.0, 10.0], u_q=[10.0, 20.0], v_q=[8.0, 3.0])
    _, t1, _ = prune_statistics(stats, rule="corrected", c=1.0)
    _, t4, _ = prune_statistics(stats, rule="corrected", c=4.0)
    np.testing.assert_allclose(t4, t1 / 4.0)


def _tree_and_stats() -> tuple[Any, NodeStats]:
    partition = MaxEdgePartitioner(max_depth=3, min_samples_leaf=0, min_samples_split=0).fit(
        np.empty((0, 2))
    )
    rng = np.random.default_rng(5)
    n = partition.n_leaves
    u_p, u_q = rng.uniform(50, 150, n), rng.uniform(1, 20, n)
    stats = node_stats(
        partition,
        u_p,
        u_p * rng.uniform(0, 1, n),
        u_q,
        u_q * rng.uniform(0, 1, n),
        n_private=1000,
        epsilon=1.0,
        max_depth=3,
    )
    return partition, stats


def test_walk_takes_the_largest_statistic_when_nothing_is_confident() -> None:
    partition, stats = _tree_and_stats()
    result = prune(partition, stats, min_depth=0, rule="corrected", c=1e6)  # nothing reaches 1
    _, t, _ = prune_statistics(stats, rule="corrected", c=1e6)
    table = leaf_ancestors(partition)
    for row, node in zip(table, result.leaf_node, strict=True):
        path = row[row >= 0]
        assert node == path[int(np.argmax(t[path]))]


def test_walk_stops_at_the_first_confident_node() -> None:
    partition, stats = _tree_and_stats()
    result = prune(partition, stats, min_depth=0, rule="corrected", c=1e-6)
    np.testing.assert_array_equal(result.leaf_node, partition.leaf_nodes)  # all leaves confident
    _, t, _ = prune_statistics(stats, rule="corrected", c=1.0)
    result = prune(partition, stats, min_depth=0, rule="corrected", c=1.0)
    for row, node in zip(leaf_ancestors(partition), result.leaf_node, strict=True):
        path = row[row >= 0]
        confident = path[t[path] >= 1.0]
        expected = confident[0] if confident.size else path[int(np.argmax(t[path]))]
        assert node == expected


def test_walk_never_goes_above_min_depth() -> None:
    partition, stats = _tree_and_stats()
    result = prune(partition, stats, min_depth=3, rule="corrected", c=1e6)
    np.testing.assert_array_equal(result.leaf_node, partition.leaf_nodes)
    result = prune(partition, stats, min_depth=1, rule="corrected", c=1e6)
    assert np.all(stats.depth[result.leaf_node] >= 1)


@pytest.fixture(scope="module")
def pair() -> Any:
    return make_lpct_pair(5000, 100, gamma=0.5, n_test=1000, rng=0)


@pytest.mark.parametrize("rule", ["corrected", "reference"])
def test_pruned_classifier_fits_and_beats_chance(pair: Any, rule: str) -> None:
    model = LPCTPrunedClassifier(epsilon=4.0, prune_rule=rule, random_state=0).fit(
        pair.X_private, pair.y_private, X_public=pair.X_public, y_public=pair.y_public
    )
    expected_max = math.floor(math.log2(5000 * 16 + 100**3) / 3)
    expected_min = min(math.floor(math.log2(5000 * 16 + 1) / 3), expected_max)
    assert (model.max_depth_, model.min_depth_) == (expected_max, expected_min)
    assert model.partition_.depth <= model.max_depth_
    # a classifier at chance (0.5) exceeds 0.55 on 1000 test points with probability < 1e-3
    assert model.score(pair.X_test, pair.y_test) > 0.55
    assert model.privacy_.epsilon == 4.0
    assert model.leaf_proba_.shape == (model.partition_.n_leaves, 2)


def test_pruning_shallower_than_the_grown_tree(pair: Any) -> None:
    model = LPCTPrunedClassifier(epsilon=1.0, max_depth=6, min_depth=1, C=50.0, random_state=0).fit(
        pair.X_private, pair.y_private, X_public=pair.X_public, y_public=pair.y_public
    )
    assert model.prune_.statistic.shape == (model.partition_.n_nodes,)
    depth = node_depths(model.partition_)
    assert np.any(depth[model.leaf_node_] < depth[model.partition_.leaf_nodes])


def test_pruned_classifier_rejects_multiclass_and_missing_public_data(pair: Any) -> None:
    model = LPCTPrunedClassifier(random_state=0)
    with pytest.raises(ValueError, match="binary"):
        model.fit(
            pair.X_private, pair.y_private, X_public=pair.X_public, y_public=np.arange(100) % 3
        )
    with pytest.raises(ValueError, match="X_public and y_public"):
        model.fit(pair.X_private, pair.y_private, X_public=pair.X_public)


@pytest.mark.parametrize(
    ("params", "name"),
    [({"C": 0.0}, "C"), ({"prune_rule": "lepski"}, "prune_rule"), ({"min_depth": -1}, "min_depth")],
)
def test_pruned_bad_parameters_are_named(pair: Any, params: dict[str, Any], name: str) -> None:
    with pytest.raises(ValueError, match=name):
        LPCTPrunedClassifier(**params).fit(
            pair.X_private, pair.y_private, X_public=pair.X_public, y_public=pair.y_public
        )
