"""``max_depth="auto"``: the LPDT paper's bias-variance balance from public quantities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.datasets import lpdt_uniform
from ldptree.estimators._auto_depth import auto_depth


def test_formula_and_monotonicity():
    # t* = (n / (d V/h^2))^(d / (2d + 2)); n = 2^20, d = 1, V/h^2 = 1: t* = 2^5
    assert auto_depth(2**20, 1, 1.0) == 5
    assert auto_depth(10, 8, 500.0) == 1  # never below depth 1
    depths = [auto_depth(n, 4, 4.0) for n in (10**3, 10**4, 10**5, 10**6)]
    assert depths == sorted(depths) and depths[-1] > depths[0]
    assert auto_depth(10**5, 4, 1.0) >= auto_depth(10**5, 4, 40.0)  # more noise, shallower
    with pytest.raises(ValueError, match="relative_variance"):
        auto_depth(100, 2, 0.0)


def test_lpdt_auto_depth_uses_only_public_quantities():
    rng = np.random.default_rng(0)
    X, y = lpdt_uniform(20_000, 2, rng)
    Xq, yq = lpdt_uniform(2_000, 2, rng)
    # the depth rule uses the papers' mechanism's variance, as the shrinkage does under "paper"
    a = LPDTRegressor(epsilon=8.0, max_depth="auto", mechanism="paper", random_state=0).fit(
        X, y, X_public=Xq, y_public=yq
    )
    b = LPDTRegressor(epsilon=8.0, max_depth="auto", mechanism="paper", random_state=1).fit(
        X, rng.permutation(y), X_public=Xq, y_public=yq
    )
    expected = auto_depth(20_000, 2, a.shrinkage_ / 20_000)
    assert a.max_depth_ == b.max_depth_ == expected >= 2
    assert a.partition_.n_leaves <= 2**expected
    assert math.isfinite(a.score(Xq, yq))
    assert (
        LPDTRegressor(max_depth=3).fit(X[:500], y[:500], X_public=Xq, y_public=yq).max_depth_ == 3
    )


def test_auto_depth_refuses_a_stream_and_unknown_strings():
    rng = np.random.default_rng(1)
    X, y = lpdt_uniform(300, 2, rng)
    Xq, yq = lpdt_uniform(100, 2, rng)
    with pytest.raises(ValueError, match="max_depth='auto' needs the number of private rows"):
        LPDTRegressor(max_depth="auto").fit(iter([(X, y)]), X_public=Xq, y_public=yq)
    with pytest.raises(ValueError, match="max_depth"):
        LPDTRegressor(max_depth="deep").fit(X, y, X_public=Xq, y_public=yq)
