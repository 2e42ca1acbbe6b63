"""LPDT-V: LPDTRegressor with the CART rule (and the other named rules)."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.partitions import CartPartitioner


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    return X, np.where(X[:, 1] < 0.3, -1.0, 1.0) + 0.1 * rng.normal(size=n)


def test_cart_rule_is_lpdt_v_and_splits_where_the_signal_is() -> None:
    X, y = _data(6000, 0)
    Xq, yq = _data(400, 1)
    model = LPDTRegressor(epsilon=4.0, max_depth=1, rule="cart", label_bound=2.0, random_state=0)
    model.fit(X, y, X_public=Xq, y_public=yq)
    assert model.partition_.feature[0] == 1
    cut = model.scaler_.lo[1] + model.partition_.threshold[0] * model.scaler_.scale[1]
    assert abs(cut - 0.3) < 0.05  # the signal's jump, in original units
    expected = CartPartitioner(max_depth=1, min_samples_split=5, min_samples_leaf=2).fit(
        model.scaler_.transform(Xq), yq
    )
    assert model.partition_.equals(expected)
    Xt, yt = _data(1000, 2)
    assert model.score(Xt, yt) > 0.8


@pytest.mark.parametrize("rule", ["max_edge", "cart", "random_max_edge"])
def test_named_rules_fit(rule: str) -> None:
    X, y = _data(3000, 3)
    Xq, yq = _data(200, 4)
    model = LPDTRegressor(epsilon=8.0, max_depth=2, rule=rule, label_bound=2.0, random_state=1)
    assert model.fit(X, y, X_public=Xq, y_public=yq).predict(Xq).shape == (200,)


def test_unknown_rule_is_named() -> None:
    X, y = _data(100, 5)
    with pytest.raises(ValueError, match="rule"):
        LPDTRegressor(rule="forest").fit(X, y, X_public=X, y_public=y)
