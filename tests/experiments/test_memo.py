"""MemoPartitioner: memoised growth equals plain growth, and a sample is held once."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.experiments._memo import MemoPartitioner, _intern
from ldptree.partitions import CartPartitioner, MaxEdgePartitioner


@pytest.mark.parametrize("kind", [MaxEdgePartitioner, CartPartitioner])
def test_memoised_growth_equals_plain_growth(kind) -> None:
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(300, 3)), rng.normal(size=300)
    for depth in (1, 3):
        for leaf in (5, 20):
            rule = kind(max_depth=depth, min_samples_leaf=leaf, min_samples_split=2)
            plain = rule.fit(X, y)
            memo = MemoPartitioner(rule)
            first, again = memo.fit(X.copy(), y.copy()), memo.fit(X, y)
            assert first is again  # the second fit is a cache hit
            np.testing.assert_array_equal(first.cells(X), plain.cells(X))
            assert first.n_leaves == plain.n_leaves


def test_equal_samples_share_one_copy() -> None:
    X = np.random.default_rng(1).uniform(size=(50, 2))
    a, b = _intern(X.copy(), None), _intern(X.copy(), None)
    assert a is b and not a.X.flags.writeable
    assert _intern(X + 1.0, None) is not a
    assert _intern(X.copy(), np.zeros(50)) is not a  # labels are part of the key
