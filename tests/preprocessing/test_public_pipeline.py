"""PublicPipeline fits its transformers on public data only and transforms X_public too; an
ordinary Pipeline in front of an ldptree estimator warns. Deterministic (fixed seeds)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.preprocessing import (
    PrivatePreprocessingWarning,
    PublicPipeline,
    make_public_pipeline,
)


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2)) * np.array([100.0, 1.0])
    return X, (X[:, 0] > 50.0).astype(float)


@pytest.mark.slow
def test_transformers_see_only_public_data() -> None:
    X, y = _data(300, 0)
    Xp, yp = _data(80, 1)
    X = X + np.array([1000.0, 0.0])  # private rows far away: a scaler fitted on them would differ
    pipe = make_public_pipeline(StandardScaler(), LPDTRegressor(epsilon=8.0, random_state=0))
    pipe.fit(X, y, X_public=Xp, y_public=yp)
    scaler = pipe[0]
    np.testing.assert_allclose(scaler.mean_, Xp.mean(axis=0))
    # the final estimator's public box is the scaled public sample's
    est = pipe[-1]
    np.testing.assert_allclose(est.scaler_.transform(scaler.transform(Xp)).min(axis=0), 0.0)


def test_public_pipeline_matches_manual_public_preprocessing() -> None:
    X, y = _data(400, 2)
    Xp, yp = _data(100, 3)
    scaler = StandardScaler().fit(Xp)
    manual = LPDTRegressor(epsilon=4.0, max_depth=2, random_state=0)
    manual.fit(scaler.transform(X), y, X_public=scaler.transform(Xp), y_public=yp)
    pipe = PublicPipeline(
        [("scale", StandardScaler()), ("lpdt", LPDTRegressor(4.0, 2, random_state=0))]
    ).fit(X, y, X_public=Xp, y_public=yp)
    np.testing.assert_allclose(pipe.predict(Xp), manual.predict(scaler.transform(Xp)))


def test_impute_and_one_hot_from_public_data() -> None:
    rng = np.random.default_rng(4)
    cat = rng.integers(0, 3, size=200).astype(float)
    X = np.column_stack([cat, rng.uniform(size=200)])
    X[::7, 1] = np.nan  # missing private values are imputed with the public median
    y = (cat == 2).astype(int)
    Xp = np.column_stack([np.arange(60) % 3, rng.uniform(size=60)]).astype(float)
    yp = (Xp[:, 0] == 2).astype(int)
    columns = ColumnTransformer(
        [("cat", OneHotEncoder(handle_unknown="ignore"), [0])],
        remainder=SimpleImputer(strategy="median"),
    )
    pipe = make_public_pipeline(columns, LPCTClassifier(epsilon=8.0, random_state=0))
    pipe.fit(X, y, X_public=Xp, y_public=yp)
    assert pipe[-1].n_features_in_ == 4  # three categories + the imputed numeric column
    assert pipe.score(Xp, yp) > 0.9


def test_public_pipeline_refuses_without_public_data() -> None:
    pipe = make_public_pipeline(StandardScaler(), LPDTRegressor(label_bound=1.0))
    with pytest.raises(ValueError, match="X_public"):
        pipe.fit(*_data(50, 5))


@pytest.mark.slow
def test_grid_search_over_a_public_pipeline() -> None:
    X, y = _data(300, 6)
    Xp, yp = _data(90, 7)
    pipe = make_public_pipeline(StandardScaler(), LPDTRegressor(epsilon=8.0, random_state=0))
    grid = GridSearchCV(pipe, {"lpdtregressor__max_depth": [0, 1]}, cv=2)
    grid.fit(X, y, X_public=Xp, y_public=yp)
    assert grid.best_params_ == {"lpdtregressor__max_depth": 1}


def test_ordinary_pipeline_warns_public_pipeline_does_not() -> None:
    X, y = _data(200, 8)
    Xp, yp = _data(50, 9)
    plain = make_pipeline(StandardScaler(), LPDTRegressor(epsilon=8.0, random_state=0))
    with pytest.warns(PrivatePreprocessingWarning, match="PublicPipeline"):
        plain.fit(X, y, lpdtregressor__X_public=Xp, lpdtregressor__y_public=yp)
    public = make_public_pipeline(StandardScaler(), LPDTRegressor(epsilon=8.0, random_state=0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        public.fit(X, y, X_public=Xp, y_public=yp)
        LPDTRegressor(epsilon=8.0, random_state=0).fit(X, y, X_public=Xp, y_public=yp)
    private = [w for w in caught if issubclass(w.category, PrivatePreprocessingWarning)]
    assert private == [], [str(w.message) for w in private]


def test_set_output_reaches_the_transformers() -> None:
    X, y = _data(200, 10)
    Xp, yp = _data(60, 11)
    pipe = make_public_pipeline(StandardScaler(), LPDTRegressor(epsilon=8.0, random_state=0))
    assert pipe.set_output(transform="default") is pipe
    pipe.fit(X, y, X_public=Xp, y_public=yp)
    assert isinstance(pipe[0].transform(Xp), np.ndarray)
    assert pipe.predict(Xp).shape == (60,)
