"""fit_many / the engine's batch: many fits of one data set with their rounds run together end
exactly as the same fits run one by one."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldptree.estimators import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor, fit_many
from ldptree.experiments._methods import lpdt_cart, lpdt_max_edge
from ldptree.rounds import ReportCollector, run


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


@pytest.mark.slow
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
    batched = [r.estimates for r in run([p.round for p in pending], pending[0].rows)]
    for p, got in zip(pending, batched, strict=True):
        want = run([p.round], p.rows)[0].estimates
        np.testing.assert_array_equal(got.count, want.count)
        np.testing.assert_array_equal(got.label_sum, want.label_sum)


def _classifiers() -> list[Any]:
    return [
        LPCTClassifier(epsilon=2.0, max_depth=2, random_state=0),  # auto mechanism
        LPCTClassifier(epsilon=2.0, max_depth=3, random_state=1, mechanism="paper", lam=5.0),
        LPCTClassifier(epsilon=1.0, max_depth=3, random_state=2, lam=float("inf")),  # no round
        LPCTClassifier(epsilon=1.0, max_depth=2, random_state=3, simulation="aggregate"),
        LPCTPrunedClassifier(epsilon=2.0, max_depth=4, random_state=4),
        _Unstaged(LPCTClassifier(epsilon=2.0, max_depth=2, random_state=5)),
    ]


class _Unstaged:
    """An estimator without ``_start_fit``: fit_many must call its ``fit``."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def fit(self, X: Any, y: Any, *, X_public: Any, y_public: Any) -> Any:
        return self.inner.fit(X, y, X_public=X_public, y_public=y_public)


@pytest.mark.slow
def test_classifiers_fitted_together_equal_their_own_fits() -> None:
    rng = np.random.default_rng(2)
    X, Xq = rng.random((600, 2)), rng.random((150, 2))
    c, cq = (X[:, 0] > 0.5).astype(int), (Xq[:, 0] > 0.5).astype(int)
    alone = [m.fit(X, c, X_public=Xq, y_public=cq) for m in _classifiers()]
    together = fit_many(_classifiers(), X, c, X_public=Xq, y_public=cq)
    for a, b in zip(alone, together, strict=True):
        np.testing.assert_array_equal(a.predict_proba(Xq), b.predict_proba(Xq))
        assert (a.estimates_ is None) == (b.estimates_ is None)
        if a.estimates_ is not None:
            np.testing.assert_array_equal(a.estimates_.count, b.estimates_.count)
    assert together[2].estimates_ is None  # lam=inf collects no reports


def test_fit_many_needs_rereadable_rows() -> None:
    X, y, Xq, yq = _data()
    chunks = iter([(X[:10], y[:10])])
    with pytest.raises(TypeError, match="X must be an array or a memory map"):
        fit_many([LPDTRegressor(epsilon=1.0, random_state=0)], chunks, X_public=Xq, y_public=yq)
