"""LPCTClassifier: the estimator API, LPCT-P/-Q as settings, multi-class, privacy bookkeeping and
bad input."""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
import pytest

from ldptree import LPCTClassifier
from ldptree.estimators._lpct_readout import simplex_projection
from ldptree.mechanisms import LaplaceCellClassMechanism
from ldptree.partitions import MaxEdgePartitioner


def _blobs(n: int, n_classes: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Classes in vertical bands of [0, 1]^2 with 10% label noise."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    y = np.minimum((X[:, 0] * n_classes).astype(int), n_classes - 1)
    flip = rng.random(n) < 0.1
    y[flip] = rng.integers(0, n_classes, int(flip.sum()))
    return X, y


@pytest.fixture(scope="module")
def binary() -> dict[str, Any]:
    X, y = _blobs(4000, 2, 0)
    Xq, yq = _blobs(200, 2, 1)
    Xt, yt = _blobs(1000, 2, 2)
    return {"X": X, "y": y, "Xq": Xq, "yq": yq, "Xt": Xt, "yt": yt}


def _fit(data: dict[str, Any], **params: Any) -> LPCTClassifier:
    params.setdefault("random_state", 0)
    params.setdefault("mechanism", "paper")  # the read-out tests below use the paper's form
    return LPCTClassifier(**params).fit(
        data["X"], data["y"], X_public=data["Xq"], y_public=data["yq"]
    )


def test_binary_fit_predict_score(binary: dict[str, Any]) -> None:
    model = _fit(binary, epsilon=4.0, max_depth=3, lam=1.0)
    assert model.classes_.tolist() == [0, 1]
    pred = model.predict(binary["Xt"])
    assert set(np.unique(pred)) <= {0, 1}
    assert model.score(binary["Xt"], binary["yt"]) == pytest.approx(np.mean(pred == binary["yt"]))
    assert model.score(binary["Xt"], binary["yt"]) > 0.8
    proba = model.predict_proba(binary["Xt"])
    assert proba.shape == (1000, 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(proba >= 0)
    np.testing.assert_array_equal(model.classes_[np.argmax(proba, axis=1)], pred)


def test_string_labels_and_three_classes() -> None:
    X, y = _blobs(6000, 3, 3)
    Xq, yq = _blobs(300, 3, 4)
    names = np.array(["low", "mid", "high"])
    model = LPCTClassifier(epsilon=8.0, max_depth=3, rule="cart", random_state=1).fit(
        X, names[y], X_public=Xq, y_public=names[yq]
    )
    assert model.classes_.tolist() == ["high", "low", "mid"]
    assert model.estimates_.label_sum.shape == (model.partition_.n_leaves, 3)
    Xt, yt = _blobs(1000, 3, 5)
    assert model.score(Xt, names[yt]) > 0.85  # Bayes accuracy 0.933
    assert model.predict_proba(Xt).shape == (1000, 3)


def test_privacy_budget_caps_the_release(binary: dict[str, Any]) -> None:
    assert _fit(binary, epsilon=1.0, privacy_budget=1.5).privacy_.epsilon == 1.0
    with pytest.raises(ValueError, match="above the budget"):
        _fit(binary, epsilon=2.0, privacy_budget=1.5)
    # LPCT-Q releases nothing, so any budget admits it
    assert _fit(binary, epsilon=2.0, lam=np.inf, privacy_budget=0.1).privacy_.epsilon == 0.0


def test_lam_zero_is_private_only_and_lam_inf_public_only(binary: dict[str, Any]) -> None:
    private = _fit(binary, max_depth=2, lam=0.0)
    est = private.estimates_
    ratio = est.label_sum / est.count
    np.testing.assert_allclose(private.leaf_eta_[:, 1], ratio)
    public = _fit(binary, max_depth=2, lam=np.inf)
    counts = public.public_class_counts_
    np.testing.assert_allclose(public.leaf_eta_, counts / counts.sum(axis=1, keepdims=True))
    assert public.estimates_ is None and public.mechanism_ is None
    assert public.privacy_.epsilon == 0.0  # LPCT-Q touches no private data
    assert private.privacy_.epsilon == private.epsilon


def test_lambda_weighting_matches_eq_8(binary: dict[str, Any]) -> None:
    model = _fit(binary, max_depth=2, lam=3.0)
    est, pub = model.estimates_, model.public_class_counts_
    eta1 = (est.label_sum + 3.0 * pub[:, 1]) / (est.count + 3.0 * pub.sum(axis=1))
    np.testing.assert_allclose(model.leaf_eta_[:, 1], eta1)
    np.testing.assert_allclose(model.leaf_eta_.sum(axis=1), 1.0)  # binary: eta_0 = 1 - eta_1


def test_lambda_path_equals_refits_with_the_same_noise(binary: dict[str, Any]) -> None:
    model = _fit(binary, max_depth=3, lam=1.0)
    path = model.predict_proba_path(binary["Xt"], [0.0, 10.0, np.inf])
    for lam, proba in zip([0.0, 10.0], path[:2], strict=True):
        np.testing.assert_allclose(
            proba, _fit(binary, max_depth=3, lam=lam).predict_proba(binary["Xt"])
        )
    np.testing.assert_allclose(
        path[2], _fit(binary, max_depth=3, lam=np.inf).predict_proba(binary["Xt"])
    )
    with pytest.raises(ValueError, match="lam=inf"):
        _fit(binary, max_depth=3, lam=np.inf).predict_proba_path(binary["Xt"], [1.0])


def test_same_random_state_same_model_and_chunking_does_not_matter(binary: dict[str, Any]) -> None:
    a = _fit(binary, max_depth=3, chunk_size=1024)
    b = _fit(binary, max_depth=3, chunk_size=4096)
    np.testing.assert_array_equal(a.estimates_.count, b.estimates_.count)
    np.testing.assert_array_equal(a.leaf_eta_, b.leaf_eta_)
    c = _fit(binary, max_depth=3, random_state=1)
    assert not np.array_equal(a.estimates_.count, c.estimates_.count)


def test_partition_and_scaling_ignore_private_data(binary: dict[str, Any]) -> None:
    a = _fit(binary, max_depth=4, rule="cart")
    shuffled = dict(binary, X=binary["X"][::-1] * 3.0, y=1 - binary["y"])
    b = _fit(shuffled, max_depth=4, rule="cart")
    assert a.partition_.equals(b.partition_)
    np.testing.assert_array_equal(a.scaler_.lo, b.scaler_.lo)
    np.testing.assert_array_equal(a.public_class_counts_, b.public_class_counts_)


@pytest.mark.parametrize("rule", ["max_edge", "random_max_edge", "cart"])
@pytest.mark.parametrize("criterion", ["gini", "entropy"])
def test_every_rule_and_criterion_fits(binary: dict[str, Any], rule: str, criterion: str) -> None:
    model = _fit(binary, epsilon=4.0, max_depth=3, rule=rule, criterion=criterion, lam=1.0)
    assert model.score(binary["Xt"], binary["yt"]) > 0.75


def test_a_partitioner_instance_is_accepted(binary: dict[str, Any]) -> None:
    rule = MaxEdgePartitioner(max_depth=1, criterion="gini")
    assert _fit(binary, max_depth=1, rule=rule).partition_.n_leaves == 2


def test_aggregate_simulation_agrees_with_the_protocol_in_distribution(
    binary: dict[str, Any],
) -> None:
    # Same expected counts: both debiased counts are within 6 noise sd of the true cell counts
    # (two-sided normal tail 2e-9 per cell; sums of 4000 geometric draws are close to normal).
    model = _fit(binary, max_depth=2, simulation="aggregate")
    cells = np.asarray(model.partition_.cells(model.scaler_.transform(binary["X"])))
    truth = np.bincount(cells, minlength=model.partition_.n_leaves)
    sd = np.sqrt(4000 * model.mechanism_.count_variance)
    assert np.all(np.abs(model.estimates_.count - truth) < 6 * sd)


def test_private_labels_outside_classes_are_null_records(binary: dict[str, Any]) -> None:
    # Half of the private labels are a class the curator never declared: the fit succeeds and
    # those holders vanish from the counts (their reports are pure noise).
    y = binary["y"].copy()
    y[::2] = 7
    model = LPCTClassifier(epsilon=8.0, max_depth=1, mechanism="paper", random_state=0).fit(
        binary["X"], y, X_public=binary["Xq"], y_public=binary["yq"]
    )
    assert model.classes_.tolist() == [0, 1]
    sd = np.sqrt(4000 * model.mechanism_.count_variance)
    assert abs(model.estimates_.count.sum() - 2000) < 6 * sd * np.sqrt(2)


def test_public_class_missing_from_private_data_is_fine(binary: dict[str, Any]) -> None:
    model = LPCTClassifier(max_depth=2, random_state=0).fit(
        binary["X"], np.zeros(4000, int), X_public=binary["Xq"], y_public=binary["yq"]
    )
    assert model.classes_.tolist() == [0, 1]


def test_single_private_class_with_declared_classes_and_no_public_labels(
    binary: dict[str, Any],
) -> None:
    model = LPCTClassifier(max_depth=2, classes=[0, 1], random_state=0).fit(
        binary["X"], np.ones(4000, int), X_public=binary["Xq"]
    )
    assert np.all(model.public_class_counts_ == 0)
    assert model.predict(binary["Xt"]).shape == (1000,)


def test_no_public_data_uses_the_dyadic_grid_and_declared_classes(binary: dict[str, Any]) -> None:
    model = LPCTClassifier(
        epsilon=8.0, max_depth=2, lam=0.0, classes=[0, 1], mechanism="paper", random_state=0
    )
    model.fit(binary["X"], binary["y"])
    assert model.partition_.n_leaves == 4
    assert model.score(binary["Xt"], binary["yt"]) > 0.7


def test_outside_zero_predicts_the_first_class(binary: dict[str, Any]) -> None:
    model = _fit(binary, max_depth=2, outside="zero")
    far = np.array([[5.0, 5.0]])
    assert model.predict(far).tolist() == [0]
    assert model.predict_proba(far).tolist() == [[1.0, 0.0]]


@pytest.mark.slow
def test_prior_fallback_replaces_non_positive_denominators(binary: dict[str, Any]) -> None:
    model = _fit(binary, epsilon=0.05, max_depth=4, lam=0.0, fallback="prior")
    bad = model.estimates_.count <= 0
    assert bad.any() and np.array_equal(model.used_fallback_, bad)
    prior = model.public_class_counts_.sum(axis=0) / model.public_class_counts_.sum()
    np.testing.assert_allclose(model.leaf_eta_[bad], np.broadcast_to(prior, (bad.sum(), 2)))


def test_get_params_set_params_and_repr() -> None:
    model = LPCTClassifier(epsilon=2.0, lam=5.0)
    params = model.get_params()
    assert params["epsilon"] == 2.0 and params["lam"] == 5.0 and "criterion" in params
    model.set_params(lam=0.0, max_depth=2)
    assert model.lam == 0.0 and model.max_depth == 2
    assert "lam=0.0" in repr(model)
    with pytest.raises(ValueError, match=r"(?i)invalid parameter"):
        model.set_params(lamda=1.0)


def test_predict_before_fit_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="not fitted"):
        LPCTClassifier().predict(np.zeros((1, 2)))


def test_custom_mechanism_must_match_epsilon(binary: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match=r"mechanism\.epsilon"):
        _fit(binary, epsilon=1.0, mechanism=LaplaceCellClassMechanism(epsilon=2.0))
    model = _fit(binary, epsilon=2.0, max_depth=1, mechanism=LaplaceCellClassMechanism(epsilon=2.0))
    assert model.privacy_.epsilon == 2.0


@pytest.mark.parametrize(
    ("params", "error", "name"),
    [
        ({"lam": -1.0}, ValueError, "lam"),
        ({"lam": float("nan")}, ValueError, "lam"),
        ({"lam": "big"}, TypeError, "lam"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"max_depth": -2}, ValueError, "max_depth"),
        ({"min_samples_leaf": 1.5}, TypeError, "min_samples_leaf"),
        ({"rule": "forest"}, ValueError, "rule"),
        ({"criterion": "mse"}, ValueError, "criterion"),
        ({"fallback": "guess"}, ValueError, "fallback"),
        ({"simulation": "fast"}, ValueError, "simulation"),
        ({"outside": "drop"}, ValueError, "outside"),
        ({"chunk_size": 0}, ValueError, "chunk_size"),
        ({"random_state": "seed"}, TypeError, "random_state"),
        ({"classes": [0, 1, 1]}, ValueError, "classes"),
    ],
)
def test_bad_parameters_fail_at_fit_naming_the_parameter(
    binary: dict[str, Any], params: dict[str, Any], error: type, name: str
) -> None:
    with pytest.raises(error, match=name):
        _fit(binary, **params)


def _bad_data(binary: dict[str, Any], **override: Any) -> dict[str, Any]:
    return {**binary, **override}


@pytest.mark.parametrize(
    ("override", "error", "name"),
    [
        ({"y": np.r_[np.nan, np.zeros(3999)]}, ValueError, "y"),
        ({"y": np.full(4000, 0.5)}, ValueError, "y"),
        ({"y": np.zeros(3999)}, ValueError, "y"),
        ({"X": np.full((4000, 2), np.nan)}, ValueError, "X"),
        ({"Xq": np.zeros((200, 3))}, ValueError, "X_public"),
        ({"yq": np.zeros(200, int)}, ValueError, "y_public"),
        ({"yq": np.r_[np.nan, np.zeros(199)]}, ValueError, "y_public"),
        ({"yq": np.zeros(150, int)}, ValueError, "y_public"),
        ({"y": np.array(["a", "b"] * 2000)}, TypeError, "y"),
    ],
)
def test_bad_data_fails_naming_the_argument(
    binary: dict[str, Any], override: dict[str, Any], error: type, name: str
) -> None:
    with pytest.raises(error, match=rf"\b{name}\b"):
        _fit(_bad_data(binary, **override))


def test_predict_checks_the_number_of_features(binary: dict[str, Any]) -> None:
    model = _fit(binary, max_depth=1)
    with pytest.raises(ValueError, match="features"):
        model.predict(np.zeros((2, 3)))


def test_simplex_projection_keeps_argmax_and_lands_in_the_simplex() -> None:
    rng = np.random.default_rng(0)
    eta = rng.normal(size=(500, 4)) * 3
    proba = simplex_projection(eta)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(proba >= 0)
    np.testing.assert_array_equal(np.argmax(proba, axis=1), np.argmax(eta, axis=1))
    np.testing.assert_allclose(simplex_projection(proba), proba, atol=1e-12)
    assert jax.numpy.isfinite(proba).all()
