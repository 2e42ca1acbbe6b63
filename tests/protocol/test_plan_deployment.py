"""A deployment ends in the estimator's own model: the plan chosen on public data (with
``mechanism="auto"``) is published, 2,000 holders answer through ``holder_report`` with their
policy and ledger, a collector stores the reports, and the plan finishes from the collector into
a fitted estimator whose predictions equal those of the same plan finished from the in-process
round over the same reports."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from protocol_helpers import POLICY

from ldptree import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree.protocol import (
    Collector,
    HolderLedger,
    holder_report,
    load_published,
    parse_report,
    publish,
)
from ldptree.rounds import PrivateRows, Reports

N_HOLDERS, N_PUBLIC = 2000, 200


def _data(kind: str, n: int, seed: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    rng = np.random.default_rng(seed)
    X = rng.uniform([0.0, -1.0], [10.0, 1.0], (n, 2))
    if kind == "regression":
        return X, np.clip(X[:, 0] / 2 + X[:, 1] + rng.normal(0.0, 0.5, n), -1.0, 6.0)
    return X, np.where(X[:, 0] + 3 * X[:, 1] + rng.normal(0.0, 1.0, n) > 5.0, "yes", "no")


def _holders(plan: Any, published: dict[str, Any], X: Any, y: Any) -> list[dict[str, Any]]:
    """Every holder answers from its own record (a classifier's holders their own class
    label, encoded with the published classes), with its own ledger and the tests' policy."""
    round_ = load_published(published)  # one holder process would load it once
    reports = []
    for x, label in zip(X, y, strict=True):
        ledger = HolderLedger.in_memory()
        answer = holder_report(x, label.item(), round_, policy=POLICY, ledger=ledger)
        assert not answer.replayed
        assert ledger.rounds() == {round_.fingerprint: answer.epsilon}
        reports.append(answer.report)
    return reports


CASES = {
    "LPDT": (lambda: LPDTRegressor(epsilon=2.0, max_depth=3, random_state=5), "regression"),
    "LPCT": (lambda: LPCTClassifier(epsilon=2.0, max_depth=3, random_state=5), "classes"),
}


@pytest.mark.slow  # 2,000 holders through holder_report and a store: ~25 s each
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_deployment_ends_in_the_estimators_model(case: str, tmp_path: Path) -> None:
    make, kind = CASES[case]
    X_public, y_public = _data(kind, N_PUBLIC, seed=1)
    X, y = _data(kind, N_HOLDERS, seed=2)
    estimator = make()
    plan = estimator.plan(X_public, y_public, n_holders=N_HOLDERS)
    assert plan.choice is not None and plan.choice.mechanism == plan.mechanism  # "auto"
    assert not hasattr(estimator, "partition_")  # nothing fitted until finish

    # curator publishes; the holders see only the published JSON and their own record
    published = json.loads(json.dumps(plan.publish()))
    assert load_published(published).mechanism == plan.mechanism
    if kind == "classes":  # the label encoding is part of the round
        assert published["classes"] == ["no", "yes"] == plan.classes.tolist()
    else:
        assert "classes" not in published
    reports = _holders(plan, published, X, y)
    path = tmp_path / "reports.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in reports))
    with Collector(tmp_path / "store", published) as collector:
        assert collector.ingest_file(path) == N_HOLDERS
        model = plan.collect(collector)
        collected = collector.estimate()
    assert model is estimator
    predicted = np.asarray(model.predict(X_public)).copy()
    estimates = model.estimates_

    # the model's privacy is what was published and what each holder spent
    assert model.privacy_ == plan.privacy
    assert model.privacy_.epsilon == published["epsilon"] == plan.mechanism.epsilon
    assert model.privacy_certificate_ is plan.certificate and plan.certificate.holds
    assert published["certificate"]["pure"] and model.privacy_.delta == 0.0
    assert load_published(published).epsilon == pytest.approx(model.privacy_.epsilon, rel=1e-9)

    # the same plan finished from the in-process round over the same reports: equal, bit for bit
    round_ = load_published(published)
    arrays = [parse_report(r, round_)[1] for r in reports]
    batch = plan.mechanism._assemble([np.stack(a) for a in zip(*arrays, strict=True)])
    in_process = plan.run(Reports([batch]))
    np.testing.assert_array_equal(in_process.estimates_.count, estimates.count)
    np.testing.assert_array_equal(in_process.estimates_.label_sum, estimates.label_sum)
    np.testing.assert_array_equal(collected.count, estimates.count)  # the collector's own
    assert estimates.n == N_HOLDERS
    np.testing.assert_array_equal(in_process.predict(X_public), predicted)
    # and the model learned something: better than a constant on fresh data. The holders'
    # noise is the operating system's (no seed); over 200 seeded simulations of this round the
    # R^2 was >= 0.65 (mean 0.79, sd 0.03) and the accuracy >= 0.83 (mean 0.87, sd 0.014, the
    # majority class 0.51): both thresholds are over 15 sd below the mean (false-failure rate
    # far below 1e-9)
    X_test, y_test = _data(kind, 500, seed=3)
    if kind == "regression":
        assert in_process.score(X_test, y_test) > 0.3
    else:
        majority = max(np.mean(y_test == c) for c in np.unique(y_test))
        assert in_process.score(X_test, y_test) > majority


FIT_CASES = {
    "LPDT-auto-depth": (lambda: LPDTRegressor(1.0, "auto", random_state=3), "regression"),
    "LPCT": (lambda: LPCTClassifier(1.0, 3, lam=0.5, random_state=3), "classes"),
    "LPCT-prune-default-depths": (lambda: LPCTPrunedClassifier(1.0, random_state=3), "classes"),
}


@pytest.mark.parametrize("case", sorted(FIT_CASES))
def test_fit_is_the_plan_finished_from_the_round(case: str) -> None:
    """``fit`` = ``plan`` (with ``n_holders`` the number of rows) + the round + ``finish``,
    including the choices that read the number of holders (depths)."""
    make, kind = FIT_CASES[case]
    X_public, y_public = _data(kind, N_PUBLIC, seed=1)
    X, y = _data(kind, 300, seed=2)
    fitted = make().fit(X, y, X_public=X_public, y_public=y_public)
    plan = make().plan(X_public, y_public, n_holders=300)
    planned = plan.run(PrivateRows.of(X, y))  # the round encodes classes itself
    assert type(planned) is type(fitted)
    for name in ("max_depth_", "privacy_", "n_features_in_"):
        assert getattr(planned, name, None) == getattr(fitted, name, None)
    np.testing.assert_array_equal(planned.estimates_.count, fitted.estimates_.count)
    np.testing.assert_array_equal(planned.predict(X), fitted.predict(X))
    if kind == "classes":
        np.testing.assert_array_equal(planned.predict_proba(X), fitted.predict_proba(X))


def test_choices_that_read_the_number_of_holders_need_it_declared() -> None:
    X_public, y_public = _data("regression", N_PUBLIC, seed=1)
    with pytest.raises(ValueError, match="n_holders"):
        LPDTRegressor(max_depth="auto").plan(X_public, y_public)
    with pytest.raises(ValueError, match="n_holders"):
        LPCTPrunedClassifier().plan(X_public, y_public > 2.0)


def test_published_classes_are_checked_and_encode_the_holders_labels() -> None:
    X_public, y_public = _data("classes", N_PUBLIC, seed=1)
    plan = LPCTClassifier(max_depth=2, random_state=0).plan(X_public, y_public)
    published = plan.publish()
    ledger = HolderLedger.in_memory()
    with pytest.raises(ValueError, match="not one of the round's classes"):
        holder_report([1.0, 0.0], "maybe", published, policy=POLICY, ledger=ledger)
    with pytest.raises(ValueError, match="not one of the round's classes"):
        holder_report([1.0, 0.0], 1, published, policy=POLICY, ledger=ledger)
    assert ledger.spent == 0.0  # refused before any draw
    answer = holder_report([1.0, 0.0], "yes", published, policy=POLICY, ledger=ledger)
    assert answer.epsilon > 0
    for bad in (["no"], ["no", "no"], ["no", True], ["no", float("nan")], [["no"], "yes"]):
        with pytest.raises(ValueError, match="classes must be 2 distinct"):
            publish(plan.partition, plan.scaler, plan.mechanism, classes=bad)
        with pytest.raises(ValueError, match=r"classes must be 2 distinct|not plain JSON"):
            load_published({**published, "classes": bad})
    regression = LPDTRegressor(label_bound=1.0, max_depth=1).plan(n_features=2)
    with pytest.raises(ValueError, match="takes real labels"):
        publish(regression.partition, regression.scaler, regression.mechanism, classes=[0, 1])


def test_a_plan_refuses_what_it_cannot_finish(tmp_path: Path) -> None:
    X_public, y_public = _data("classes", N_PUBLIC, seed=1)
    public_only = LPCTClassifier(lam=float("inf"), random_state=0).plan(X_public, y_public)
    assert public_only.round is None and public_only.mechanism is None
    with pytest.raises(ValueError, match="no round to publish"):
        public_only.publish()
    assert public_only.finish(None).predict(X_public).shape == (N_PUBLIC,)
    plan = LPCTClassifier(random_state=0).plan(X_public, y_public)
    with pytest.raises(ValueError, match="estimates"):
        plan.finish(None)
    other = LPCTClassifier(max_depth=2, random_state=0).plan(X_public, y_public)
    with (
        Collector(tmp_path / "store", other.publish()) as collector,
        pytest.raises(ValueError, match="another round"),
    ):
        plan.collect(collector)
    with pytest.raises(ValueError, match="n_features"):
        LPDTRegressor(label_bound=1.0).plan()
    data_free = LPDTRegressor(label_bound=1.0, max_depth=2).plan(n_features=3)
    assert data_free.partition.n_features == 3 and data_free.partition.n_leaves == 4
