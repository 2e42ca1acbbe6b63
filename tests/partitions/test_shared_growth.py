"""Growing a grid of stopping sizes with a shared node memo gives the partitions of plain fits."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

from ldptree.partitions import CartPartitioner, MaxEdgePartitioner, RandomMaxEdgePartitioner


@pytest.mark.parametrize("rule", [MaxEdgePartitioner, CartPartitioner])
@pytest.mark.parametrize("seed", [0, 1])
def test_shared_memo_grows_the_plain_partitions(rule, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(400, 4))
    X[:50, 1] = 0.5  # ties and repeated values exercise the distinct-row rule
    y = np.sin(5 * X[:, 0]) + X[:, 1] + 0.1 * rng.normal(size=400)
    memo: dict = {}
    # deepest first and shallowest first, so entries are both written and read in each order
    sizes = list(itertools.product((4, 1, 3, 2), (2, 40, 10, 160)))
    for depth, leaf in sizes + sizes[::-1]:
        r = rule(max_depth=depth, min_samples_leaf=leaf, min_samples_split=5)
        assert r.fit_shared(X, y, memo).equals(r.fit(X, y))
    assert memo  # nodes were shared


def test_randomised_rules_refuse_a_shared_memo():
    r = RandomMaxEdgePartitioner(max_depth=2)
    with pytest.raises(TypeError, match="randomised"):
        r.fit_shared(np.zeros((10, 2)), None, {})
    r.fit(np.zeros((10, 2)), key=jax.random.key(0))  # the plain fit still works
