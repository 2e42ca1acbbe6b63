"""scikit-learn compatibility: clone, nested parameters, cross-validation, grid search, metadata
routing, NotFittedError, and check_estimator (minus the checks excluded by design, each with its
reason in ldptree.testing.expected_failed_checks).

Deterministic: every estimator has a fixed random_state, so no test here can fail by chance.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator

import numpy as np
import pytest
import sklearn
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.utils.estimator_checks import check_estimator

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.baselines import (
    APHISTRegressor,
    CTClassifier,
    DECONVRegressor,
    DTRegressor,
    PHISTClassifier,
    PHISTRegressor,
)
from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.testing import expected_failed_checks


def _regression(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    return X, (X[:, 0] > 0.5).astype(float) + 0.1 * rng.normal(size=n)


@pytest.fixture
def routing() -> Iterator[None]:
    sklearn.set_config(enable_metadata_routing=True)
    yield
    sklearn.set_config(enable_metadata_routing=False)


def test_estimator_types_and_tags() -> None:
    assert is_regressor(LPDTRegressor()) and not is_classifier(LPDTRegressor())
    assert is_classifier(LPCTClassifier()) and not is_regressor(LPCTClassifier())
    assert LPDTRegressor().__sklearn_tags__().non_deterministic  # random_state=None: fresh noise
    assert not LPDTRegressor(random_state=0).__sklearn_tags__().non_deterministic


def test_not_fitted_error_is_sklearns() -> None:
    with pytest.raises(NotFittedError, match="not fitted"):
        LPDTRegressor().predict(np.zeros((2, 2)))


def test_nested_params_evolve_a_copy_of_the_mechanism() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=(-1.0, 1.0), budget_split=0.5)
    est = LPDTRegressor(epsilon=1.0, mechanism=mech)
    assert est.get_params(deep=True)["mechanism__budget_split"] == 0.5
    assert "mechanism__epsilon" not in est.get_params(deep=False)
    est.set_params(epsilon=2.0, mechanism__epsilon=2.0, mechanism__budget_split=0.3)
    assert (est.mechanism.epsilon, est.mechanism.budget_split) == (2.0, 0.3)
    assert mech.epsilon == 1.0  # the shared original is untouched
    assert clone(est).mechanism == est.mechanism
    with pytest.raises(ValueError, match="invalid parameter"):
        est.set_params(mechanism__nope=1)
    with pytest.raises(ValueError, match="Invalid parameter"):
        est.set_params(nope=1)


def test_cross_val_score_and_grid_search_with_public_fit_params() -> None:
    X, y = _regression(400, 0)
    Xp, yp = _regression(101, 1)  # a different row count from X: see docs/sklearn.md
    est = LPDTRegressor(epsilon=8.0, max_depth=1, random_state=0)
    scores = cross_val_score(est, X, y, cv=2, params={"X_public": Xp, "y_public": yp})
    assert scores.shape == (2,) and np.all(np.isfinite(scores))
    grid = GridSearchCV(est, {"max_depth": [0, 1]}, cv=2)
    grid.fit(X, y, X_public=Xp, y_public=yp)
    assert grid.best_params_ == {"max_depth": 1}  # the signal is one split at x0 = 0.5


def test_metadata_routing(routing: None) -> None:
    X, y = _regression(300, 2)
    Xp, yp = _regression(51, 3)
    est = LPDTRegressor(epsilon=8.0, max_depth=1, random_state=0)
    with pytest.raises(Exception, match="X_public"):  # unrequested metadata is refused
        cross_val_score(est, X, y, cv=2, params={"X_public": Xp, "y_public": yp})
    est.set_fit_request(X_public=True, y_public=True)
    scores = cross_val_score(est, X, y, cv=2, params={"X_public": Xp, "y_public": yp})
    assert np.all(np.isfinite(scores))


def test_set_output_and_feature_names() -> None:
    pd = pytest.importorskip("pandas")
    X, y = _regression(200, 4)
    frame = pd.DataFrame(X, columns=["a", "b"])
    est = LPDTRegressor(epsilon=8.0, max_depth=1, random_state=0)
    est.fit(frame, y, X_public=frame.iloc[:50].to_numpy(), y_public=y[:50])
    assert list(est.feature_names_in_) == ["a", "b"]


# the baselines whose kernels compile for each of scikit-learn's data shapes (10-20 s each) are in
# the slow group; every estimator is checked in CI
ESTIMATORS = [
    LPDTRegressor(label_bound=5.0, random_state=0),
    LPCTClassifier(classes=[0, 1], random_state=0),
    pytest.param(PHISTRegressor(label_bound=5.0, random_state=0), marks=pytest.mark.slow),
    pytest.param(APHISTRegressor(label_bound=5.0, random_state=0), marks=pytest.mark.slow),
    pytest.param(PHISTClassifier(classes=[0, 1], random_state=0), marks=pytest.mark.slow),
    pytest.param(DECONVRegressor(label_bound=5.0, random_state=0), marks=pytest.mark.slow),
    DTRegressor(),
    CTClassifier(training="private"),  # non-private reference: classes from its training rows
]


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: type(e).__name__)
def test_check_estimator(estimator: object) -> None:
    """Every scikit-learn check passes except the documented exclusions, which do fail (so the
    list stays honest)."""
    expected = expected_failed_checks(estimator)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results = check_estimator(estimator, on_fail=None, expected_failed_checks=expected)
    failed = sorted({r["check_name"] for r in results if r["status"] == "failed"})
    assert failed == []
    xfailed = {r["check_name"] for r in results if r["status"] == "xfail"}
    assert xfailed <= set(expected)
