"""Data-free refinement of cells the public data cannot split (``refine_empty``)."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree.partitions import CartPartitioner, MaxEdgePartitioner, RandomMaxEdgePartitioner


def _left_half(n: int = 200, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Public rows in ``[0, 0.5) x [0, 1)`` only: the right half has no public point."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2)) * np.array([0.5, 1.0])
    return X, np.sin(6 * X[:, 0]) + X[:, 1]


def _volumes(partition) -> np.ndarray:  # type: ignore[no-untyped-def]
    return np.prod(partition.leaf_upper - partition.leaf_lower, axis=1)


@pytest.mark.parametrize(
    "rule",
    [MaxEdgePartitioner(max_depth=5), CartPartitioner(max_depth=5)],
    ids=["max_edge", "cart"],
)
def test_off_is_the_partition_grown_without_it(rule) -> None:  # type: ignore[no-untyped-def]
    X, y = _left_half()
    plain = rule.fit(X, y)
    assert rule.refine_empty == 0
    assert plain.to_json() == type(rule)(max_depth=5, refine_empty=0).fit(X, y).to_json()


def test_empty_half_is_split_to_max_depth() -> None:
    X, y = _left_half()
    plain = MaxEdgePartitioner(max_depth=6).fit(X, y)
    refined = MaxEdgePartitioner(max_depth=6, refine_empty=6).fit(X, y)
    # max-edge cells are dyadic: a cell at depth s has volume 2^-s, so every refined leaf is
    # at depth 6 and the cells still cover the unit square
    assert np.allclose(_volumes(refined), 2.0**-6)
    assert refined.n_leaves == 2**6
    assert np.isclose(_volumes(refined).sum(), 1.0)
    # the plain tree stops at the right half's root (no public point there)
    assert np.max(_volumes(plain)) >= 0.5
    # a cell the public data split alike is unchanged: the public points route the same way
    # within the refined cells (every refined cell lies inside one plain cell)
    inside = plain.cells(refined.leaf_lower + 1e-9)
    upper_inside = plain.cells(refined.leaf_upper - 1e-9)
    assert np.array_equal(np.asarray(inside), np.asarray(upper_inside))


def test_extra_depth_is_bounded_by_k() -> None:
    X, y = _left_half()
    plain = MaxEdgePartitioner(max_depth=8).fit(X, y)
    one = MaxEdgePartitioner(max_depth=8, refine_empty=1).fit(X, y)
    depth_plain = np.round(-np.log2(_volumes(plain))).astype(int)
    stopped_early = int(np.count_nonzero(depth_plain < 8))
    # each leaf the public data could not split (above max_depth) becomes two cells
    assert one.n_leaves == plain.n_leaves + stopped_early
    assert stopped_early > 0


def test_randomised_rule_refines_too() -> None:
    X, y = _left_half()
    rule = RandomMaxEdgePartitioner(max_depth=4, refine_empty=4)
    refined = rule.fit(X, y, key=jax.random.key(0))
    assert refined.n_leaves == 2**4


@pytest.mark.parametrize("bad", [-1, 21, 1.5, "2"])
def test_bad_refine_empty(bad) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match="refine_empty"):
        MaxEdgePartitioner(max_depth=4, refine_empty=bad).fit(*_left_half())
