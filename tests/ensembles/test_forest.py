"""Private forests: composition of the trees' releases, reproducibility, equivalence with a single
tree, budgets and bad inputs. Deterministic (fixed keys and data): no false failures."""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
from sklearn.base import clone

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.accounting import PrivacyAccount
from ldptree.ensembles import LPCTForestClassifier, LPDTForestRegressor
from ldptree.estimators import fit_many

N, NQ = 3000, 200


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    X, Xq, Xt = rng.uniform(size=(N, 2)), rng.uniform(size=(NQ, 2)), rng.uniform(size=(300, 2))

    def f(Z: np.ndarray) -> np.ndarray:
        return np.sin(3 * Z[:, 0]) + Z[:, 1]

    return {
        "X": X,
        "y": f(X) + 0.1 * rng.normal(size=N),
        "Xq": Xq,
        "yq": f(Xq),
        "Xt": Xt,
        "c": (f(X) > 1).astype(int),
        "cq": (f(Xq) > 1).astype(int),
    }


def _fit(model: Any, data: dict[str, Any], classes: bool = False) -> Any:
    y, yq = (data["c"], data["cq"]) if classes else (data["y"], data["yq"])
    return model.fit(data["X"], y, X_public=data["Xq"], y_public=yq)


TREE = LPDTRegressor(max_depth=2, rule="random_max_edge")


def test_split_spends_epsilon_once_and_each_holder_answers_one_tree(data: dict[str, Any]) -> None:
    forest = _fit(LPDTForestRegressor(TREE, n_trees=4, epsilon=2.0, random_state=0), data)
    assert forest.privacy_.epsilon == pytest.approx(2.0)
    cert = forest.privacy_certificate_
    assert cert.rule == "parallel" and cert.holds and cert.epsilon == pytest.approx(2.0)
    assert all(tree.epsilon == 2.0 for tree in forest.estimators_)
    sizes = forest.holder_split_.sizes(N)
    assert [tree.estimates_.n for tree in forest.estimators_] == list(sizes)
    assert sum(tree.estimates_.n for tree in forest.estimators_) == N
    parts = [e.holders for e in forest.privacy_ledger_.entries if not e.post_processing]
    assert len(set(parts)) == 4  # one disjoint group per tree
    assert "parallel composition" in cert.describe()


def test_sequential_spends_epsilon_over_t_per_tree(data: dict[str, Any]) -> None:
    forest = _fit(
        LPDTForestRegressor(TREE, n_trees=4, epsilon=2.0, composition="sequential", random_state=0),
        data,
    )
    assert forest.holder_split_ is None
    assert forest.privacy_.epsilon == pytest.approx(2.0)
    assert [tree.privacy_.epsilon for tree in forest.estimators_] == [0.5] * 4
    assert all(tree.estimates_.n == N for tree in forest.estimators_)
    cert = forest.privacy_certificate_
    assert cert.rule == "sequential" and cert.holds and cert.epsilon == pytest.approx(2.0)
    # every tree's entry is about every holder: they add up
    assert [e.holders for e in forest.privacy_ledger_.entries] == [None] * 5


@pytest.mark.parametrize("composition", ["split", "sequential"])
def test_a_fixed_random_state_reproduces_the_forest_bit_for_bit(
    data: dict[str, Any], composition: str
) -> None:
    model = LPDTForestRegressor(TREE, n_trees=3, epsilon=2.0, composition=composition)
    a = _fit(clone(model).set_params(random_state=5), data).predict(data["Xt"])
    b = _fit(clone(model).set_params(random_state=5), data).predict(data["Xt"])
    c = _fit(clone(model).set_params(random_state=6), data).predict(data["Xt"])
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_a_forest_of_one_tree_is_the_single_tree(data: dict[str, Any]) -> None:
    """With one tree, the split gives every holder to it and ``public_sample="all"`` grows it
    on the whole public sample: the forest is the estimator fitted with the tree's key."""
    tree = LPDTRegressor(max_depth=3, label_bound=(-1.0, 3.0))
    forest = _fit(
        LPDTForestRegressor(tree, n_trees=1, epsilon=2.0, public_sample="all", random_state=1),
        data,
    )
    single = clone(tree).set_params(epsilon=2.0, random_state=forest.estimators_[0].random_state)
    _fit(single, data)
    np.testing.assert_array_equal(forest.predict(data["Xt"]), single.predict(data["Xt"]))
    assert (forest.privacy_.epsilon, forest.privacy_.delta) == (
        single.privacy_.epsilon,
        single.privacy_.delta,
    )

    classifier = LPCTClassifier(max_depth=2)
    cforest = _fit(
        LPCTForestClassifier(classifier, n_trees=1, epsilon=1.0, public_sample="all"),
        data,
        classes=True,
    )
    csingle = clone(classifier).set_params(
        epsilon=1.0, random_state=cforest.estimators_[0].random_state
    )
    _fit(csingle, data, classes=True)
    np.testing.assert_array_equal(
        cforest.predict_proba(data["Xt"]), csingle.predict_proba(data["Xt"])
    )


def test_forest_classifier_averages_tree_probabilities(data: dict[str, Any]) -> None:
    forest = _fit(
        LPCTForestClassifier(LPCTClassifier(max_depth=2), n_trees=3, epsilon=2.0, random_state=0),
        data,
        classes=True,
    )
    probs = forest.predict_proba(data["Xt"])
    mean = np.mean([t.predict_proba(data["Xt"]) for t in forest.estimators_], axis=0)
    np.testing.assert_array_equal(probs, mean)
    np.testing.assert_array_equal(forest.predict(data["Xt"]), forest.classes_[probs.argmax(1)])
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    assert list(forest.classes_) == [0, 1] and forest.privacy_certificate_.holds


def test_budgets_refuse_before_any_release(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="above the budget"):
        _fit(LPDTForestRegressor(TREE, n_trees=2, epsilon=2.0, privacy_budget=1.5), data)
    account = PrivacyAccount(budget=3.0)
    model = LPDTForestRegressor(TREE, n_trees=4, epsilon=2.0, privacy_budget=account)
    _fit(clone(model).set_params(random_state=0), data)
    assert account.ledger.total.epsilon == pytest.approx(2.0)
    before = account.ledger
    # a second forest on the same holders (another split of them) would bring them to 4 > 3
    with pytest.raises(ValueError, match="above the budget"):
        _fit(clone(model).set_params(random_state=1), data)
    assert account.ledger is before  # all the trees' charges, or none
    # a forest on a disjoint group of the same account fits
    group = account.scope("others")
    _fit(clone(model).set_params(privacy_budget=group, epsilon=1.0, random_state=2), data)
    assert group.spent.epsilon == pytest.approx(3.0)


def test_a_fitted_forest_pickles(data: dict[str, Any]) -> None:
    forest = _fit(LPDTForestRegressor(TREE, n_trees=2, epsilon=1.0, random_state=0), data)
    again = pickle.loads(pickle.dumps(forest))
    np.testing.assert_array_equal(again.predict(data["Xt"]), forest.predict(data["Xt"]))
    assert again.privacy_ledger_ == forest.privacy_ledger_


def test_a_forest_runs_in_fit_many_and_on_a_memory_map(data: dict[str, Any], tmp_path) -> None:  # type: ignore[no-untyped-def]
    model = LPDTForestRegressor(TREE, n_trees=3, epsilon=2.0, random_state=4)
    alone = _fit(clone(model), data).predict(data["Xt"])
    (many,) = fit_many(
        [clone(model)], data["X"], data["y"], X_public=data["Xq"], y_public=data["yq"]
    )
    np.testing.assert_array_equal(many.predict(data["Xt"]), alone)
    np.save(tmp_path / "X.npy", data["X"])
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    on_disk = clone(model).fit(mapped, data["y"], X_public=data["Xq"], y_public=data["yq"])
    np.testing.assert_array_equal(on_disk.predict(data["Xt"]), alone)


def test_sklearn_parameters_and_clone() -> None:
    forest = LPDTForestRegressor(TREE, n_trees=3, epsilon=2.0, random_state=0)
    params = forest.get_params(deep=True)
    assert params["estimator__max_depth"] == 2 and params["n_trees"] == 3
    copy = clone(forest)
    assert copy.get_params()["n_trees"] == 3 and copy.estimator is not forest.estimator


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"n_trees": 0}, ValueError, "n_trees"),
        ({"composition": "both"}, ValueError, "composition"),
        ({"public_sample": "some"}, ValueError, "public_sample"),
        ({"epsilon": -1.0}, ValueError, "epsilon"),
        ({"estimator": LPCTClassifier()}, TypeError, "estimator"),
        ({"estimator": LPDTRegressor(privacy_budget=1.0)}, ValueError, "privacy_budget"),
        ({"estimator": LPDTRegressor(max_depth="auto")}, ValueError, "max_depth"),
        ({"privacy_budget": "all"}, TypeError, "privacy_budget"),
    ],
)
def test_bad_inputs_name_the_argument(
    data: dict[str, Any], kwargs: dict[str, Any], error: type, match: str
) -> None:
    with pytest.raises(error, match=match):
        _fit(LPDTForestRegressor(**kwargs), data)


def test_bad_data_names_the_argument(data: dict[str, Any]) -> None:
    forest = LPDTForestRegressor(TREE, n_trees=2)
    with pytest.raises(ValueError, match="X_public"):
        forest.fit(data["X"], data["y"])
    with pytest.raises(TypeError, match="iterable of chunks"):
        forest.fit(iter([(data["X"], data["y"])]), X_public=data["Xq"], y_public=data["yq"])
    with pytest.raises(ValueError, match="n_trees=8 leaves tree"):
        forest.set_params(n_trees=8).fit(
            data["X"][:5], data["y"][:5], X_public=data["Xq"], y_public=data["yq"]
        )
    with pytest.raises(ValueError, match="y_public"):
        forest.fit(data["X"], data["y"], X_public=data["Xq"], y_public=data["yq"][:5])
