"""fit_many / run_rounds: many fits of one data set with their rounds run together end exactly
as the same fits run one by one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldptree.estimators import (
    LPCTClassifier,
    LPDTRegressor,
    ReportCollector,
    fit_many,
    run_rounds,
)
from ldptree.experiments._methods import lpdt_cart, lpdt_max_edge


def _data(seed: int = 0) -> tuple[Any, ...]:
    rng = np.random.default_rng(seed)
    X, Xq = rng.random((1500, 3)), rng.random((300, 3))
    y = np.sin(4 * X[:, 0]) + 0.3 * rng.normal(size=1500)
    yq = np.sin(4 * Xq[:, 0]) + 0.3 * rng.normal(size=300)
    return X, y, Xq, yq


def _grid() -> list[Any]:
    """A small oracle-style grid (memoised partitions shared across budget splits) plus fits
    the batch cannot run and must hand back to ``fit``."""
    out: list[Any] = [
        kind(
            epsilon=epsilon,
            random_state=7 * depth + int(10 * rho),
            max_depth=depth,
            min_samples_leaf=5,
            min_samples_split=5,
            budget_split=rho,
        )
        for kind in (lpdt_max_edge, lpdt_cart)
        for depth in (1, 3)
        for rho in (0.3, 0.7)
        for epsilon in (2.0, 6.0)
    ]
    out += [
        LPDTRegressor(epsilon=1.0, max_depth=2, random_state=1),  # defaults: auto mechanism
        LPDTRegressor(epsilon=1.0, max_depth=2, random_state=2, chunk_size=400),  # 4 chunks
        LPDTRegressor(epsilon=1.0, max_depth=2, random_state=3, aggregator=ReportCollector),
        LPDTRegressor(epsilon=1.0, max_depth=2, random_state=4, chunk_size=2**40),  # one chunk
    ]
    return out


def test_fit_many_equals_fitting_one_by_one() -> None:
    X, y, Xq, yq = _data()
    alone = [model.fit(X, y, X_public=Xq, y_public=yq) for model in _grid()]
    together = fit_many(_grid(), X, y, X_public=Xq, y_public=yq)
    assert len(together) == len(alone)
    for a, b in zip(alone, together, strict=True):
        assert type(a) is type(b)
        np.testing.assert_array_equal(a.leaf_values_, b.leaf_values_)
        np.testing.assert_array_equal(a.estimates_.count, b.estimates_.count)
        np.testing.assert_array_equal(a.estimates_.label_sum, b.estimates_.label_sum)
        assert a.estimates_.n == b.estimates_.n == X.shape[0]
        assert a.privacy_ == b.privacy_
        np.testing.assert_array_equal(a.predict(Xq), b.predict(Xq))


def test_run_rounds_equals_each_plans_own_round() -> None:
    X, y, Xq, yq = _data(1)
    pending = [m._start_fit(X, y, X_public=Xq, y_public=yq) for m in _grid()[:6]]
    batched = run_rounds([p.round for p in pending])
    for p, got in zip(pending, batched, strict=True):
        want = p.round.run()
        np.testing.assert_array_equal(got.count, want.count)
        np.testing.assert_array_equal(got.label_sum, want.label_sum)


def test_estimators_without_staged_fits_are_fitted_with_fit() -> None:
    rng = np.random.default_rng(2)
    X, Xq = rng.random((400, 2)), rng.random((100, 2))
    c, cq = (X[:, 0] > 0.5).astype(int), (Xq[:, 0] > 0.5).astype(int)
    alone = LPCTClassifier(epsilon=2.0, max_depth=2, random_state=0).fit(
        X, c, X_public=Xq, y_public=cq
    )
    (together,) = fit_many(
        [LPCTClassifier(epsilon=2.0, max_depth=2, random_state=0)], X, c, X_public=Xq, y_public=cq
    )
    np.testing.assert_array_equal(alone.predict(Xq), together.predict(Xq))


def test_fit_many_needs_rereadable_rows() -> None:
    X, y, Xq, yq = _data()
    chunks = iter([(X[:10], y[:10])])
    with pytest.raises(TypeError, match="X must be an array or a memory map"):
        fit_many([LPDTRegressor(epsilon=1.0, random_state=0)], chunks, X_public=Xq, y_public=yq)
