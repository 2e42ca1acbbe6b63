"""Max-edge rule: geometry, criterion choice, stopping rules, data-free grid."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ldptree.partitions import MaxEdgePartitioner


@pytest.mark.parametrize(("d", "depth"), [(1, 0), (1, 5), (3, 4), (5, 7)])
def test_data_free_grid_is_the_full_dyadic_tree(d, depth):
    p = MaxEdgePartitioner(max_depth=depth).fit(np.empty((0, d)))
    assert p.n_leaves == 2**depth and p.depth == depth
    widths = p.leaf_upper - p.leaf_lower
    # every cell is a dyadic box with sides within a factor 2 of each other (LPDT Lemma C.6)
    assert np.all(widths.max(axis=1) <= 2 * widths.min(axis=1))
    assert np.allclose(np.prod(widths, axis=1), 2.0**-depth)
    # ties between longest edges go to the smaller feature index
    assert depth == 0 or p.feature[0] == 0


@given(st.integers(1, 4), st.integers(0, 6), st.integers(0, 2**31))
def test_cells_stay_balanced_dyadic_boxes_with_data(d, depth, seed):
    rng = np.random.default_rng(seed)
    X = rng.beta(0.5, 2.0, size=(300, d))
    y = np.sin(8 * X.sum(axis=1)) + rng.normal(size=300)
    p = MaxEdgePartitioner(max_depth=depth, min_samples_leaf=1).fit(X, y)
    widths = p.leaf_upper - p.leaf_lower
    assert np.all(widths.max(axis=1) <= 2 * widths.min(axis=1))
    assert np.isclose(np.prod(widths, axis=1).sum(), 1.0)


def test_variance_reduction_picks_the_informative_edge():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(400, 3))
    y = (X[:, 2] > 0.5).astype(float) + 0.01 * rng.normal(size=400)
    p = MaxEdgePartitioner(max_depth=1).fit(X, y)
    assert p.feature[0] == 2 and p.threshold[0] == 0.5


def test_min_samples_leaf_is_enforced_on_public_counts():
    rng = np.random.default_rng(1)
    X = rng.beta(0.8, 1.5, size=(200, 2))
    y = rng.normal(size=200)
    n_l = 15
    p = MaxEdgePartitioner(max_depth=8, min_samples_leaf=n_l).fit(X, y)
    counts = np.bincount(np.asarray(p.cells(X)), minlength=p.n_leaves)
    assert p.n_leaves > 1 and counts.min() >= n_l


def test_stopping_on_few_distinct_rows():
    X = np.repeat([[0.1, 0.1], [0.9, 0.9]], 50, axis=0)
    y = np.repeat([0.0, 1.0], 50)
    # two distinct rows <= min_samples_split: the root is not split at all
    assert MaxEdgePartitioner(max_depth=6, min_samples_split=5).fit(X, y).n_leaves == 1
    # with min_samples_split=1 the root splits once; each child then holds one distinct row
    p = MaxEdgePartitioner(max_depth=6, min_samples_split=1, min_samples_leaf=1).fit(X, y)
    assert p.n_leaves == 2
    np.testing.assert_array_equal(np.bincount(np.asarray(p.cells(X))), [50, 50])


def test_fit_is_deterministic():
    rng = np.random.default_rng(2)
    X, y = rng.uniform(size=(100, 3)), rng.normal(size=100)
    a = MaxEdgePartitioner(max_depth=5).fit(X, y)
    b = MaxEdgePartitioner(max_depth=5).fit(X.copy(), y.copy())
    assert a.equals(b)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        (dict(max_depth=-1), "max_depth"),
        (dict(min_samples_leaf=-2), "min_samples_leaf"),
        (dict(max_depth=2.5), "max_depth"),
        (dict(criterion="gain"), "criterion"),
        (dict(threshold=float("nan")), "threshold"),
    ],
)
def test_bad_parameters_name_the_argument(kwargs, name):
    with pytest.raises((ValueError, TypeError), match=name):
        MaxEdgePartitioner(**kwargs)


def test_bad_public_data_names_the_argument():
    with pytest.raises(ValueError, match="X_public"):
        MaxEdgePartitioner().fit(np.array([[np.nan, 0.0]]))
    with pytest.raises(ValueError, match="y_public"):
        MaxEdgePartitioner().fit(np.zeros((3, 2)), np.zeros(4))
