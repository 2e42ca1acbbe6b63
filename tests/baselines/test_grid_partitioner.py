"""GridPartitioner: the histogram baselines' uniform grid as a Partitioner."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.baselines import GridPartitioner, uniform_grid
from ldptree.protocols import Partitioner


def test_grid_partitioner_is_the_uniform_grid_and_data_independent() -> None:
    rule = GridPartitioner(num_cell=3)
    assert isinstance(rule, Partitioner)
    rng = np.random.default_rng(0)
    a = rule.fit(rng.uniform(size=(10, 2)), rng.uniform(size=10))
    b = rule.fit(np.empty((0, 2)))
    grid = uniform_grid(2, 3)
    assert a.n_leaves == b.n_leaves == grid.n_leaves == 9
    X = rng.uniform(size=(200, 2))
    cells = np.asarray(a.cells(X))
    assert np.array_equal(cells, np.asarray(grid.cells(X)))
    # bin k of each feature is [k/3, (k+1)/3): rows in the same bins share a cell
    bins = np.minimum((X * 3).astype(int), 2)
    key = bins[:, 0] * 3 + bins[:, 1]
    for k in np.unique(key):
        assert np.unique(cells[key == k]).size == 1
    assert np.unique(cells).size == np.unique(key).size


def test_grid_partitioner_refuses_bad_input() -> None:
    with pytest.raises(ValueError, match="X_public must be a 2-d array"):
        GridPartitioner(2).fit(np.zeros(3))
    with pytest.raises(ValueError, match="max_cells"):
        GridPartitioner(10, max_cells=50).fit(np.zeros((0, 2)))
