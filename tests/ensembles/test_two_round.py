"""The two-round refine-then-estimate design: each holder answers one round (ledger, certificate,
counts), the choice of the partition, equality with the estimator fitted on the chosen
partition, fit_many, memory maps and bad inputs. Deterministic (fixed keys and data): no false
failures."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.accounting import PrivacyAccount
from ldptree.ensembles import LPCTTwoRoundClassifier, LPDTTwoRoundRegressor
from ldptree.ensembles._two_round import (
    ChosenPartition,
    choose_partition,
    snr_splits,
    subtree_sums,
)
from ldptree.estimators import fit_many
from ldptree.partitions import MaxEdgePartitioner

N, NQ = 3000, 200


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    X, Xq, Xt = rng.uniform(size=(N, 2)), rng.uniform(size=(NQ, 2)), rng.uniform(size=(300, 2))

    def f(Z: np.ndarray) -> np.ndarray:
        return np.sin(3 * Z[:, 0]) + Z[:, 1]

    return {"X": X, "y": f(X) + 0.1 * rng.normal(size=N), "Xq": Xq, "yq": f(Xq), "Xt": Xt}


def _fit(model: Any, data: dict[str, Any]) -> Any:
    return model.fit(data["X"], data["y"], X_public=data["Xq"], y_public=data["yq"])


TREE = LPDTRegressor(max_depth=2)


@pytest.fixture(scope="module")
def fitted(data: dict[str, Any]) -> LPDTTwoRoundRegressor:
    return _fit(LPDTTwoRoundRegressor(TREE, epsilon=2.0, random_state=0), data)


def test_each_holder_answers_one_round_at_epsilon(fitted: LPDTTwoRoundRegressor) -> None:
    assert fitted.privacy_.epsilon == pytest.approx(2.0)
    cert = fitted.privacy_certificate_
    assert cert.rule == "parallel" and cert.holds and cert.epsilon == pytest.approx(2.0)
    assert [c.holds for c in cert.certificates] == [True, True]
    assert [s.epsilon for s in cert.spends] == pytest.approx([2.0, 2.0])
    # the two rounds read disjoint groups of the split, which together are every holder
    n_1 = fitted.n_refine_
    assert n_1 == fitted.holder_split_.sizes(N)[0]
    assert fitted.estimator_.estimates_.n == N - n_1
    charged = [e for e in fitted.privacy_ledger_.entries if not e.post_processing]
    assert len(charged) == 2 and len({e.holders for e in charged}) == 2
    assert all(e.spend.epsilon == pytest.approx(2.0) for e in charged)
    # the sequential reading of the same two rounds would be 2 epsilon: the ledger is parallel
    assert fitted.privacy_ledger_.total.epsilon == pytest.approx(2.0)


def test_round_one_counts_estimate_the_part_zero_holders(
    fitted: LPDTTwoRoundRegressor, data: dict[str, Any]
) -> None:
    counts = fitted.refine_counts_
    assert counts.shape == (fitted.refine_partition_.n_leaves,)
    # unbiased counts add up to about n_1: the total's noise sd is sqrt(n_1 L v) (OUE: v <= 1
    # at eps=2), so 6 sd is a bound this fixed seed cannot cross by chance (P < 1e-8)
    v = fitted.refine_mechanism_.cell_variance(counts.shape[0]).label_sum
    assert abs(counts.sum() - fitted.n_refine_) < 6 * np.sqrt(fitted.n_refine_ * len(counts) * v)


def test_round_two_is_the_estimator_on_the_chosen_partition(
    fitted: LPDTTwoRoundRegressor, data: dict[str, Any]
) -> None:
    chosen = fitted.partition_
    assert fitted.estimator_.partition_ is chosen
    assert chosen.depth <= TREE.max_depth + 2
    assert chosen.n_leaves <= fitted.refine_partition_.n_leaves
    np.testing.assert_array_equal(fitted.predict(data["Xt"]), fitted.estimator_.predict(data["Xt"]))


def test_choice_prunes_children_with_too_few_holders() -> None:
    fine = MaxEdgePartitioner(max_depth=2).fit(np.empty((0, 2)))  # 4 cells: 2 levels
    # left half holds every holder, its right child none: only the root's split passes
    counts = np.array([500.0, 0.0, 0.0, 0.0])
    assert np.array_equal(subtree_sums(fine, counts)[0], 500.0)
    keep = snr_splits(fine, counts, n_1=1000, n_2=3000, v=1.0, min_snr=0.5)
    chosen = choose_partition(fine, keep)
    assert chosen.n_leaves == 1  # the root's right child has no holders
    balanced = np.full(4, 250.0)
    assert choose_partition(fine, snr_splits(fine, balanced, 1000, 3000, 1.0, 0.5)).n_leaves == 4
    strict = snr_splits(fine, balanced, 1000, 3000, 1.0, 1e6)
    assert choose_partition(fine, strict).n_leaves == 1
    everything = choose_partition(fine, np.ones(fine.n_nodes, dtype=bool))
    assert everything.to_json() == fine.to_json()


def test_chosen_partition_is_a_partitioner() -> None:
    fine = MaxEdgePartitioner(max_depth=3).fit(np.empty((0, 2)))
    rule = ChosenPartition(fine)
    assert rule.fit(np.zeros((5, 2))) is fine and rule.max_depth == 3


def test_reproducible_and_fit_many_equals_fit(
    fitted: LPDTTwoRoundRegressor, data: dict[str, Any]
) -> None:
    [again] = fit_many(
        [LPDTTwoRoundRegressor(TREE, epsilon=2.0, random_state=0)],
        data["X"],
        data["y"],
        X_public=data["Xq"],
        y_public=data["yq"],
    )
    np.testing.assert_array_equal(again.predict(data["Xt"]), fitted.predict(data["Xt"]))
    np.testing.assert_array_equal(again.refine_counts_, fitted.refine_counts_)


def test_memory_map_equals_array(
    fitted: LPDTTwoRoundRegressor, data: dict[str, Any], tmp_path
) -> None:  # type: ignore[no-untyped-def]
    np.save(tmp_path / "X.npy", data["X"])
    np.save(tmp_path / "y.npy", data["y"])
    X, y = (np.load(tmp_path / f"{n}.npy", mmap_mode="r") for n in ("X", "y"))
    model = LPDTTwoRoundRegressor(TREE, epsilon=2.0, random_state=0)
    model.fit(X, y, X_public=data["Xq"], y_public=data["yq"])
    np.testing.assert_array_equal(model.predict(data["Xt"]), fitted.predict(data["Xt"]))


def test_refine_empty_reaches_round_one(data: dict[str, Any]) -> None:
    # public rows only in the left half: round 1's partition is refined in the right half
    Xq = data["Xq"] * np.array([0.5, 1.0])
    Xq[0] = [1.0, 1.0]  # the public box still spans the unit square
    model = LPDTTwoRoundRegressor(TREE, epsilon=2.0, refine_empty=4, random_state=5)
    model.fit(data["X"], data["y"], X_public=Xq, y_public=data["yq"])
    plain = LPDTTwoRoundRegressor(TREE, epsilon=2.0, random_state=6)
    plain.fit(data["X"], data["y"], X_public=Xq, y_public=data["yq"])
    assert model.refine_partition_.n_leaves > plain.refine_partition_.n_leaves


def test_shared_account_is_charged_per_group(data: dict[str, Any]) -> None:
    account = PrivacyAccount(budget=3.0)
    scope = account.scope("study")
    _fit(LPDTTwoRoundRegressor(TREE, epsilon=2.0, privacy_budget=scope, random_state=7), data)
    assert scope.spent.epsilon == pytest.approx(2.0)
    assert len([e for e in account.ledger.entries if not e.post_processing]) == 2
    with pytest.raises(ValueError, match="budget"):
        _fit(LPDTTwoRoundRegressor(TREE, epsilon=2.0, privacy_budget=scope, random_state=1), data)
    assert scope.spent.epsilon == pytest.approx(2.0)  # refused before any release
    with pytest.raises(ValueError, match="budget"):
        _fit(LPDTTwoRoundRegressor(TREE, epsilon=2.0, privacy_budget=1.0, random_state=0), data)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"estimator": "tree"}, TypeError, "estimator"),
        ({"estimator": LPDTRegressor(max_depth="auto")}, ValueError, "max_depth"),
        ({"estimator": LPDTRegressor(privacy_budget=1.0)}, ValueError, "privacy_budget"),
        ({"estimator": LPDTRegressor(rule=MaxEdgePartitioner())}, TypeError, "rule"),
        ({"epsilon": 0.0}, ValueError, "epsilon"),
        ({"extra_depth": -1}, ValueError, "extra_depth"),
        ({"refine_empty": -1}, ValueError, "refine_empty"),
        ({"refine_parts": 1}, ValueError, "refine_parts"),
        ({"min_snr": 0.0}, ValueError, "min_snr"),
    ],
)
def test_bad_inputs(data: dict[str, Any], kwargs: dict[str, Any], error: type, match: str) -> None:
    params = {"estimator": TREE, "random_state": 0, **kwargs}
    with pytest.raises(error, match=match):
        _fit(LPDTTwoRoundRegressor(**params), data)


def test_chunk_streams_are_refused(data: dict[str, Any]) -> None:
    chunks = [(data["X"][:100], data["y"][:100])]
    with pytest.raises(TypeError, match="memory map"):
        LPDTTwoRoundRegressor(TREE, random_state=0).fit(
            chunks, X_public=data["Xq"], y_public=data["yq"]
        )


# --- the classifier ---------------------------------------------------------------------------
def _classes(data: dict[str, Any]) -> tuple[np.ndarray, np.ndarray]:
    return (data["y"] > 1).astype(int), (data["yq"] > 1).astype(int)


def test_classifier_answers_one_round_per_holder(data: dict[str, Any]) -> None:
    c, cq = _classes(data)
    model = LPCTTwoRoundClassifier(LPCTClassifier(max_depth=2), epsilon=2.0, random_state=0)
    model.fit(data["X"], c, X_public=data["Xq"], y_public=cq)
    assert model.privacy_.epsilon == pytest.approx(2.0)
    cert = model.privacy_certificate_
    assert (
        cert.rule == "parallel"
        and cert.holds
        and [x.holds for x in cert.certificates]
        == [
            True,
            True,
        ]
    )
    assert model.n_refine_ + model.estimator_.estimates_.n == N
    np.testing.assert_array_equal(model.classes_, [0, 1])
    assert model.estimator_.partition_ is model.partition_
    np.testing.assert_array_equal(model.predict(data["Xt"]), model.estimator_.predict(data["Xt"]))
    proba = model.predict_proba(data["Xt"])
    assert proba.shape == (300, 2) and np.allclose(proba.sum(axis=1), 1.0)
    [again] = fit_many(
        [LPCTTwoRoundClassifier(LPCTClassifier(max_depth=2), epsilon=2.0, random_state=0)],
        data["X"],
        c,
        X_public=data["Xq"],
        y_public=cq,
    )
    np.testing.assert_array_equal(again.predict_proba(data["Xt"]), proba)


@pytest.mark.parametrize(
    ("estimator", "error", "match"),
    [
        (LPDTRegressor(), TypeError, "LPCTClassifier"),
        (LPCTClassifier(lam=float("inf")), ValueError, "lam"),
        (LPCTClassifier(max_depth=None), ValueError, "max_depth"),
    ],
)
def test_classifier_bad_inputs(
    data: dict[str, Any], estimator: Any, error: type, match: str
) -> None:
    c, cq = _classes(data)
    with pytest.raises(error, match=match):
        LPCTTwoRoundClassifier(estimator, random_state=0).fit(
            data["X"], c, X_public=data["Xq"], y_public=cq
        )
