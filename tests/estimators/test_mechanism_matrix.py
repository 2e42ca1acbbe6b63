"""Every built-in mechanism in every tree estimator: it fits where it should, and is refused with a
``TypeError`` naming what is missing everywhere else, before any data is read.

Driven by ``BUILT_INS`` (a mechanism registered there joins the matrix): a ``"regression"``
mechanism that privatizes ``(cell, label)`` records fits :class:`LPDTRegressor`, PHIST and APHIST;
a ``"classification"`` mechanism fits :class:`LPCTClassifier` and, over two classes,
:class:`LPCTPrunedClassifier` and the PHIST classifier; a mechanism releasing extra record fields
(``n_features`` in its suite options: DECONV's feature release) fits none of them. The
expectation is read from the registry, not from :func:`check_mechanism_fits`, so the check
itself is under test.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree.baselines import APHISTRegressor, PHISTClassifier, PHISTRegressor
from ldptree.estimators import ESTIMATOR_NEEDS, check_mechanism_fits
from ldptree.estimators._fits import label_kind
from ldptree.testing import BUILT_INS

ESTIMATORS: dict[str, Any] = {
    "LPDTRegressor": LPDTRegressor,
    "LPCTClassifier": LPCTClassifier,
    "LPCTPrunedClassifier": LPCTPrunedClassifier,
    "PHISTRegressor": PHISTRegressor,
    "APHISTRegressor": APHISTRegressor,
    "PHISTClassifier": PHISTClassifier,
}
REGRESSORS = {"LPDTRegressor", "PHISTRegressor", "APHISTRegressor"}
BINARY = {"LPCTPrunedClassifier", "PHISTClassifier"}
EPSILON = 2.0


def _expected(name: str, estimator: str, mechanism: Any) -> bool:
    """Whether the registry says ``mechanism`` (built-in ``name``) fits ``estimator``."""
    built = BUILT_INS[name]
    if "n_features" in built.options:
        return False
    if built.task == "regression":
        return estimator in REGRESSORS
    if estimator in BINARY:
        return int(mechanism.labels().n_classes) == 2
    return estimator == "LPCTClassifier"


def _pairs() -> list[Any]:
    pairs = []
    for name in sorted(BUILT_INS):
        for estimator in ESTIMATORS:
            pairs.append(pytest.param(name, estimator, id=f"{name}-{estimator}"))
    return pairs


def _data(estimator: str, mechanism: Any) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    n, n_public = 400, 120
    X = rng.uniform(0.0, 1.0, (n, 2))
    Xq = rng.uniform(0.0, 1.0, (n_public, 2))
    if estimator in REGRESSORS:
        return {"X": X, "y": X[:, 0] - X[:, 1], "X_public": Xq, "y_public": Xq[:, 0] - Xq[:, 1]}
    _, n_classes = label_kind(mechanism)
    k = 2 if n_classes is None else n_classes
    yq = np.arange(n_public) % k  # every class public
    return {"X": X, "y": rng.integers(0, k, n), "X_public": Xq, "y_public": yq}


def _make(estimator: str, mechanism: Any) -> Any:
    options: dict[str, Any] = {"epsilon": EPSILON, "mechanism": mechanism, "random_state": 0}
    if estimator == "LPCTPrunedClassifier":
        options.update(max_depth=2, min_depth=1)
    elif estimator.startswith(("PHIST", "APHIST")):
        options["num_cell"] = 2
    else:
        options["max_depth"] = 2
    return ESTIMATORS[estimator](**options)


def test_every_estimator_with_mechanism_is_in_the_matrix() -> None:
    assert set(ESTIMATORS) == set(ESTIMATOR_NEEDS)


@pytest.mark.parametrize(("name", "estimator"), _pairs())
def test_mechanism_fits_or_is_refused(name: str, estimator: str) -> None:
    mechanism = BUILT_INS[name].make(EPSILON)
    if _expected(name, estimator, mechanism):
        check_mechanism_fits(estimator, mechanism)  # no error
        data = _data(estimator, mechanism)
        model = _make(estimator, mechanism).fit(
            data["X"], data["y"], X_public=data["X_public"], y_public=data["y_public"]
        )
        pred = model.predict(data["X"][:50])
        assert pred.shape == (50,)
        if estimator in REGRESSORS:
            assert np.all(np.isfinite(pred))
        else:
            assert set(np.unique(pred)) <= set(model.classes_.tolist())
        assert model.mechanism_ is mechanism
        assert model.privacy_certificate_ is not None and model.privacy_certificate_.holds
        assert model.estimates_.n == data["X"].shape[0]
        return
    with pytest.raises(TypeError, match=f"{estimator} needs a mechanism"):
        check_mechanism_fits(estimator, mechanism)
    # refused at the start of fit, before any data is read: X is not even an array
    with pytest.raises(TypeError, match=f"{estimator} needs a mechanism"):
        _make(estimator, mechanism).fit("not data", "not labels")


def _class_mechanisms_with_n_classes() -> list[Any]:
    out = []
    for name in sorted(BUILT_INS):
        built = BUILT_INS[name]
        mechanism = built.make(EPSILON)
        if built.task == "classification" and "n_classes" in attrs.fields_dict(type(mechanism)):
            out.append(pytest.param(name, id=name))
    return out


@pytest.mark.parametrize("estimator", sorted(BINARY))
@pytest.mark.parametrize("name", _class_mechanisms_with_n_classes())
def test_binary_class_mechanism_fits_binary_classifiers(name: str, estimator: str) -> None:
    """Every class mechanism, built over two classes, runs in the binary classifiers."""
    mechanism = attrs.evolve(BUILT_INS[name].make(EPSILON), n_classes=2)
    check_mechanism_fits(estimator, mechanism)
    data = _data(estimator, mechanism)
    model = _make(estimator, mechanism).fit(
        data["X"], data["y"], X_public=data["X_public"], y_public=data["y_public"]
    )
    assert model.predict_proba(data["X"][:10]).shape == (10, 2)
    assert model.mechanism_ is mechanism
    assert model.privacy_certificate_ is not None and model.privacy_certificate_.holds


def test_class_count_mismatch_is_refused_naming_both() -> None:
    """A 3-class mechanism in a fit whose public classes are 2: refused before the round."""
    from ldptree.mechanisms import LaplaceCellClassMechanism

    mechanism = LaplaceCellClassMechanism(epsilon=EPSILON, n_classes=3)
    rng = np.random.default_rng(1)
    X, Xq = rng.uniform(size=(100, 2)), rng.uniform(size=(40, 2))
    model = LPCTClassifier(epsilon=EPSILON, mechanism=mechanism, random_state=0)
    with pytest.raises(TypeError, match=r"over 2 classes.*ClassLabels\(n_classes=3\)"):
        model.fit(X, rng.integers(0, 2, 100), X_public=Xq, y_public=np.arange(40) % 2)
    assert not hasattr(model, "estimates_")


def test_refusal_messages_name_what_is_missing() -> None:
    from ldptree.mechanisms import (
        LaplaceCellClassMechanism,
        LaplaceFeatureLabelMechanism,
        RRLaplaceMechanism,
    )

    with pytest.raises(TypeError, match=r"LPDTRegressor needs a mechanism with real labels"):
        check_mechanism_fits("LPDTRegressor", LaplaceCellClassMechanism(epsilon=1.0))
    with pytest.raises(TypeError, match=r"LPCTClassifier needs a mechanism with class labels"):
        check_mechanism_fits("LPCTClassifier", RRLaplaceMechanism(epsilon=1.0, label_bound=1.0))
    features = LaplaceFeatureLabelMechanism(epsilon=1.0, n_features=2, label_bound=1.0)
    with pytest.raises(TypeError, match=r"also needs features="):
        check_mechanism_fits("LPDTRegressor", features)
    with pytest.raises(ValueError, match="estimator must be one of"):
        check_mechanism_fits("DTRegressor", features)


def test_undeclared_mechanism_is_accepted_by_the_check() -> None:
    """A mechanism without a labels() declaration cannot be checked and passes (as documented)."""

    class Plain:
        epsilon = 1.0

    check_mechanism_fits("LPDTRegressor", Plain())
    check_mechanism_fits("LPCTClassifier", Plain())
