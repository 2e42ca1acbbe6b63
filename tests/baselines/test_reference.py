"""Non-private reference trees against a brute-force greedy CART on small data."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldptree.baselines import NON_PRIVATE, CTClassifier, DTRegressor


def _impurity(y: np.ndarray, kind: str) -> float:
    if y.size == 0:
        return 0.0
    if kind == "mse":
        return float(np.sum((y - y.mean()) ** 2))
    p = np.bincount(y.astype(int)) / y.size
    return float(y.size * (1.0 - np.sum(p**2)))


def _brute(X: np.ndarray, y: np.ndarray, depth: int, kind: str) -> object:
    """Greedy CART by exhaustion: every feature, every midpoint; first best on ties."""
    if depth == 0 or np.unique(np.column_stack([X, y]), axis=0).shape[0] <= 1:
        return y
    parent, best = _impurity(y, kind), (0.0, -1, 0.0)
    for k in range(X.shape[1]):
        u = np.unique(X[:, k])
        for t in (u[:-1] + u[1:]) / 2.0:
            go = X[:, k] < t
            gain = parent - _impurity(y[go], kind) - _impurity(y[~go], kind)
            if gain > best[0] + 1e-12:
                best = (gain, k, t)
    if best[1] < 0:
        return y
    go = X[:, best[1]] < best[2]
    return (
        best[1],
        best[2],
        _brute(X[go], y[go], depth - 1, kind),
        _brute(X[~go], y[~go], depth - 1, kind),
    )


def _predict(tree: object, x: np.ndarray, kind: str) -> float:
    while isinstance(tree, tuple):
        k, t, left, right = tree
        tree = left if x[k] < t else right
    y = np.asarray(tree)
    return float(y.mean()) if kind == "mse" else float(np.argmax(np.bincount(y.astype(int))))


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_dt_matches_brute_force(depth: int) -> None:
    rng = np.random.default_rng(depth)
    X = rng.uniform(size=(60, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=60)
    model = DTRegressor(1.0, depth).fit(X, y)
    tree = _brute(X, y, depth, "mse")
    expected = np.array([_predict(tree, x, "mse") for x in X])
    np.testing.assert_allclose(model.predict(X), expected, rtol=1e-9)


@pytest.mark.parametrize("depth", [1, 3])
def test_ct_matches_brute_force(depth: int) -> None:
    rng = np.random.default_rng(10 + depth)
    X = rng.uniform(size=(80, 2))
    y = (X[:, 0] + 0.3 * rng.normal(size=80) > 0.5).astype(int) + (X[:, 1] > 0.8)
    Xq, yq = X[:20], y[:20]
    model = CTClassifier(None, depth, training="union").fit(
        X[20:], y[20:], X_public=Xq, y_public=yq
    )
    tree = _brute(X, y.astype(float), depth, "gini")
    np.testing.assert_array_equal(model.predict(X), [_predict(tree, x, "gini") for x in X])
    proba = model.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)


def test_training_sets_and_non_private_record() -> None:
    rng = np.random.default_rng(0)
    X, Xq = rng.uniform(size=(50, 2)), rng.uniform(size=(20, 2))
    y, yq = X[:, 0] * 3.0, Xq[:, 1] * 5.0
    private = DTRegressor(2.0, 2).fit(X, y, X_public=Xq, y_public=yq)
    public = DTRegressor(2.0, 2, training="public").fit(X, y, X_public=Xq, y_public=yq)
    assert private.n_training_ == 50 and public.n_training_ == 20
    assert not np.allclose(private.predict(X), public.predict(X))
    # epsilon is ignored: any value gives the same tree
    again = DTRegressor(1e-3, 2).fit(X, y, X_public=Xq, y_public=yq)
    np.testing.assert_array_equal(again.predict(X), private.predict(X))
    for model in (private, public):
        assert model.privacy_ is NON_PRIVATE and math.isinf(model.privacy_.epsilon)
        assert "non-private" in str(model.privacy_)
    with pytest.raises(ValueError, match="public"):
        DTRegressor(1.0, training="public").fit(X, y)
    with pytest.raises(ValueError, match="training"):
        DTRegressor(1.0, training="all").fit(X, y)
    ct = CTClassifier(1.0, 2, training="public").fit(
        X, (y > 1).astype(int), X_public=Xq, y_public=(yq > 2).astype(int)
    )
    assert ct.n_training_ == 20 and math.isinf(ct.epsilon_)
