"""Partition: routing, validation, JSON round trip, jit agreement."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ldptree.partitions import Partition
from ldptree.testing import partitions


def naive_cells(p: Partition, X: np.ndarray) -> np.ndarray:
    """One row at a time, straight from the definition (x[f] < t in float64 goes left)."""
    out = []
    for x in X:
        node = 0
        while p.left[node] >= 0:
            f, t = p.feature[node], p.threshold[node]
            node = p.left[node] if float(x[f]) < float(t) else p.right[node]
        out.append(p.leaf_id[node])
    return np.asarray(out)


def two_level() -> Partition:
    # root splits x0 at 0.5; its right child splits x1 at 0.25
    return Partition.from_arrays(
        feature=[0, -1, 1, -1, -1],
        threshold=[0.5, np.nan, 0.25, np.nan, np.nan],
        left=[1, -1, 3, -1, -1],
        right=[2, -1, 4, -1, -1],
        lower=[[0, 0], [0, 0], [0.5, 0], [0.5, 0], [0.5, 0.25]],
        upper=[[1, 1], [0.5, 1], [1, 1], [1, 0.25], [1, 1]],
    )


def test_hand_built_tree_routes_by_threshold_rule():
    p = two_level()
    assert (p.n_leaves, p.depth, p.n_nodes, p.n_features) == (3, 2, 5, 2)
    X = np.array([[0.1, 0.9], [0.5, 0.1], [0.7, 0.25], [0.99, 0.0], [-3.0, 7.0], [4.0, -1.0]])
    # 0.5 is not < 0.5 so it goes right; points outside the cube route like clamped ones
    np.testing.assert_array_equal(np.asarray(p.cells(X)), [0, 1, 2, 1, 0, 1])
    np.testing.assert_array_equal(p.leaf_lower, [[0, 0], [0.5, 0], [0.5, 0.25]])


def test_trivial_partition_has_one_cell():
    p = Partition.trivial(3)
    assert p.n_leaves == 1 and p.depth == 0
    np.testing.assert_array_equal(
        np.asarray(p.cells(np.random.default_rng(0).uniform(size=(10, 3)))), np.zeros(10)
    )


@given(partitions(max_depth=6), st.integers(0, 2**31))
def test_vectorised_routing_matches_definition(p, seed):
    X = np.random.default_rng(seed).uniform(-0.2, 1.2, size=(50, p.n_features))
    np.testing.assert_array_equal(np.asarray(p.cells(X)), naive_cells(p, X))


@given(partitions(max_depth=6))
def test_cells_lie_in_their_boxes(p):
    X = np.random.default_rng(0).uniform(size=(100, p.n_features)).astype(np.float32)
    cells = np.asarray(p.cells(X))
    lo, up = p.leaf_lower[cells], p.leaf_upper[cells]
    assert np.all((lo.astype(np.float32) <= X) & ((up.astype(np.float32) > X) | (up >= 1.0)))


@given(partitions(max_depth=6))
def test_json_round_trip_is_exact(p):
    q = Partition.from_json(p.to_json())
    assert q.equals(p)
    assert q.to_json() == p.to_json()
    assert (q.depth, q.n_leaves) == (p.depth, p.n_leaves)


def test_jit_and_eager_routing_agree():
    p = two_level()
    X = np.random.default_rng(1).uniform(size=(300, 2))
    jitted = np.asarray(p.cells(X))
    with jax.disable_jit():
        eager = np.asarray(p.cells(X))
    np.testing.assert_array_equal(jitted, eager)


@given(partitions(max_depth=5))
@pytest.mark.slow
def test_numpy_and_jitted_routing_agree(p):
    # Concrete input of a few rows is routed in NumPy, traced input by the jitted walk; both
    # must give the same cells, including rows outside the cube.
    X = np.random.default_rng(p.n_nodes).uniform(-0.1, 1.1, size=(37, p.n_features))
    host = np.asarray(p.cells(X))
    traced = np.asarray(jax.jit(p.cells)(X.astype(np.float32)))
    np.testing.assert_array_equal(host, traced)
    assert host.dtype == np.int32
    assert ((host >= 0) & (host < p.n_leaves)).all()


def test_large_inputs_take_the_jitted_walk_with_the_same_cells():
    from ldptree.partitions._partition import HOST_ROUTING_ROWS

    p = two_level()
    X = np.random.default_rng(2).uniform(size=(HOST_ROUTING_ROWS + 5, 2))
    whole = np.asarray(p.cells(X))  # jitted walk on host-padded input
    parts = np.concatenate([np.asarray(p.cells(X[i : i + 1000])) for i in range(0, len(X), 1000)])
    np.testing.assert_array_equal(whole, parts)


def test_partition_is_a_pytree_that_round_trips_through_its_leaves():
    p = two_level()
    leaves = jax.tree_util.tree_leaves(p)
    assert len(leaves) == 7
    rebuilt = jax.tree_util.tree_unflatten(jax.tree_util.tree_structure(p), leaves)
    assert rebuilt.equals(p)


def test_partition_is_usable_as_a_traced_jit_argument():
    p = two_level()
    X = np.random.default_rng(0).random((300, 2))
    routed = jax.jit(lambda part, x: part.cells(x))(p, X)
    np.testing.assert_array_equal(np.asarray(routed), naive_cells(p, X))
    returned = jax.jit(lambda part: part)(p)  # a partition also comes back out of jit intact
    assert returned.equals(p)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(left=[1, -1, 3, -1, -1], right=[2, -1, 0, -1, -1]), "single tree"),
        (dict(left=[1, -1, 9, -1, -1], right=[2, -1, 4, -1, -1]), "child indices"),
        (dict(feature=[0, -1, 5, -1, -1]), "split features"),
        (dict(threshold=[np.nan, np.nan, 0.25, np.nan, np.nan]), "thresholds must be finite"),
        (dict(left=[1, -1, 3, -1, 2]), "both be -1"),
    ],
)
def test_malformed_arrays_are_rejected(kwargs, message):
    base = dict(
        feature=[0, -1, 1, -1, -1],
        threshold=[0.5, np.nan, 0.25, np.nan, np.nan],
        left=[1, -1, 3, -1, -1],
        right=[2, -1, 4, -1, -1],
        lower=np.zeros((5, 2)),
        upper=np.ones((5, 2)),
    )
    base.update(kwargs)
    with pytest.raises(ValueError, match=message):
        Partition.from_arrays(**base)


@pytest.mark.parametrize(
    "text", ["not json", "[]", '{"format": "other"}', '{"format": "ldptree.partition/1"}']
)
def test_bad_json_raises_value_error(text):
    with pytest.raises(ValueError):
        Partition.from_json(text)


def test_cells_rejects_wrong_width():
    with pytest.raises(ValueError, match="shape"):
        two_level().cells(np.zeros((3, 5)))


def _near_thresholds(p: Partition, n_rows: int, seed: int) -> np.ndarray:
    """Rows with one feature at a split's threshold, one float64 ulp below or one above it
    (points a float32 comparison cannot tell apart), the others uniform."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n_rows, p.n_features))
    internal = np.flatnonzero(p.left >= 0)
    for i in range(n_rows):
        node = internal[i % internal.shape[0]]
        t = p.threshold[node]
        X[i, p.feature[node]] = (t, np.nextafter(t, -np.inf), np.nextafter(t, np.inf))[i % 3]
    return X


@pytest.mark.parametrize("n_rows", [300, 5000])  # the NumPy walk and the compiled key walk
def test_routing_is_exact_in_float64_next_to_every_threshold(n_rows):
    from ldptree.partitions import CartPartitioner
    from ldptree.partitions._partition import HOST_ROUTING_ROWS

    rng = np.random.default_rng(7)
    Xq = rng.uniform(size=(500, 3))
    p = CartPartitioner(max_depth=5, min_samples_leaf=2).fit(
        Xq, Xq[:, 0] + rng.normal(size=500), key=jax.random.key(0)
    )
    X = _near_thresholds(p, n_rows, 8)
    assert (n_rows > HOST_ROUTING_ROWS) == (n_rows == 5000)
    cells = np.asarray(p.cells(X))
    np.testing.assert_array_equal(cells, naive_cells(p, X))
    # the float32 comparison would have moved some of these rows: the check can fail
    as_float32 = Partition.from_arrays(
        feature=p.feature,
        threshold=p.threshold.astype(np.float32),
        left=p.left,
        right=p.right,
        lower=p.lower,
        upper=p.upper,
    )
    assert np.any(naive_cells(as_float32, X.astype(np.float32)) != cells)


@pytest.mark.parametrize("n_rows", [300, 5000])  # the NumPy walk and the compiled walk
def test_routing_compares_special_values_like_float64(n_rows):
    # zeros of both signs, subnormals, infinities and huge magnitudes against thresholds at zero,
    # at a subnormal and at a huge value: the compiled walk runs in float64 whatever the
    # process's 64-bit setting, so it agrees with the one-row-at-a-time float64 definition
    special = [0.0, -0.0, np.inf, -np.inf, 5e-324, -5e-324, 1e300, -1e300, 1.0]
    p = Partition.from_arrays(
        feature=[0, -1, 1, 0, -1, -1, -1],
        threshold=[0.0, np.nan, 5e-324, 1e300, np.nan, np.nan, np.nan],
        left=[1, -1, 3, 5, -1, -1, -1],
        right=[2, -1, 4, 6, -1, -1, -1],
        lower=np.zeros((7, 2)),
        upper=np.ones((7, 2)),
    )
    rng = np.random.default_rng(3)
    X = rng.choice(special, size=(n_rows, 2))
    cells = np.asarray(p.cells(X))
    np.testing.assert_array_equal(cells, naive_cells(p, X))
    assert set(cells.tolist()) == {0, 1, 2, 3}  # every cell reached: the check can fail


def test_float32_rows_route_as_their_float64_values():
    # float32 rows are widened, never thresholds narrowed: a float32 row one float32 ulp from a
    # float64 threshold goes where its exact value belongs
    from ldptree.partitions import CartPartitioner

    rng = np.random.default_rng(5)
    Xq = rng.uniform(size=(500, 3))
    p = CartPartitioner(max_depth=5, min_samples_leaf=2).fit(
        Xq, Xq[:, 0] + rng.normal(size=500), key=jax.random.key(0)
    )
    X = _near_thresholds(p, 5000, 9).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(p.cells(X)), naive_cells(p, X))
    np.testing.assert_array_equal(np.asarray(p.cells(X[:300])), naive_cells(p, X[:300]))
