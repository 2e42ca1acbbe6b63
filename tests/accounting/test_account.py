"""Budgets that compose: nested groups, splits, group budgets and a ledger shared by fits."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from sklearn.base import clone

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.accounting import Group, LedgerScope, PrivacyAccount, PrivacyLedger, PrivacySpend


def test_parts_of_a_split_compose_in_parallel_and_the_same_holders_sequentially() -> None:
    ledger = PrivacyLedger().record("public round", PrivacySpend(0.5))
    trees = [(Group(f"tree {t}", split="forest"),) for t in range(3)]
    for t, path in enumerate(trees):
        ledger = ledger.record(f"tree {t}", PrivacySpend(1.0 + t, 1e-7 * t), holders=path)
    # a holder answers the every-holder round and one tree: worst part is tree 2
    assert ledger.total.epsilon == pytest.approx(3.5) and ledger.total.delta == pytest.approx(2e-7)
    assert ledger.holder_spend(trees[0]).epsilon == pytest.approx(1.5)
    # the same holders answering twice pay twice
    again = ledger.record("tree 0 again", PrivacySpend(4.0), holders=trees[0])
    assert again.holder_spend(trees[0]).epsilon == pytest.approx(5.5)
    assert again.total.epsilon == pytest.approx(5.5)


def test_two_splits_of_the_same_holders_compose_sequentially() -> None:
    # two independent assignments: a holder may fall in the worst part of each
    ledger = PrivacyLedger()
    for split, eps in (("first forest", (1.0, 2.0)), ("second forest", (3.0, 0.5))):
        for i, e in enumerate(eps):
            ledger = ledger.record(split, PrivacySpend(e), holders=(Group(str(i), split),))
    assert ledger.total.epsilon == pytest.approx(5.0)
    # a holder of part 0 of the first split may be in part 0 of the second (worst: 3.0)
    assert ledger.holder_spend((Group("0", "first forest"),)).epsilon == pytest.approx(4.0)


def test_nested_groups_and_per_group_remaining_budget() -> None:
    outer = (Group("study"),)
    inner = (*outer, Group("holdout"))
    ledger = PrivacyLedger(budget=PrivacySpend(4.0, 1.0)).limit(outer, PrivacySpend(3.0, 1.0))
    ledger = ledger.limit(inner, PrivacySpend(2.0, 1.0))
    ledger = ledger.record("everyone", PrivacySpend(0.5))
    ledger = ledger.record("study", PrivacySpend(1.0), holders=outer)
    assert ledger.holder_spend(inner).epsilon == pytest.approx(1.5)
    left_inner, left_outer, left_all = (ledger.remaining_for(p) for p in (inner, outer, None))
    assert left_inner is not None and left_inner.epsilon == pytest.approx(0.5)
    # a release about the study reaches the holdout too, so the holdout's cap binds
    assert left_outer is not None and left_outer.epsilon == pytest.approx(0.5)
    assert left_all is not None and left_all.epsilon == pytest.approx(0.5)
    other = (Group("other"),)
    left_other = ledger.remaining_for(other)
    assert left_other is not None and left_other.epsilon == pytest.approx(3.5)
    ledger = ledger.record("holdout", PrivacySpend(0.5), holders=inner)
    with pytest.raises(ValueError, match="'study' / 'holdout'"):
        ledger.record("holdout again", PrivacySpend(0.01), holders=inner)
    with pytest.raises(ValueError, match="already spent"):
        ledger.limit(outer, PrivacySpend(1.0, 1.0))
    assert ledger.record("other", PrivacySpend(3.5), holders=other).total.epsilon == 4.0


def test_a_cap_on_a_part_of_another_split_bounds_what_is_left() -> None:
    first = [(Group(str(i), "first"),) for i in range(2)]
    second = [(Group(str(i), "second"),) for i in range(2)]
    ledger = PrivacyLedger().limit(first[0], PrivacySpend(2.0, 1.0))
    ledger = ledger.record("a", PrivacySpend(1.5), holders=first[0])
    # a part of another split may share holders with the capped part; the other part of the
    # same split shares none
    left_second, left_sibling = ledger.remaining_for(second[1]), ledger.remaining_for(first[1])
    assert left_second is not None and left_second.epsilon == pytest.approx(0.5)
    assert left_sibling is None
    with pytest.raises(ValueError, match="above the budget"):
        ledger.record("b", PrivacySpend(0.75), holders=second[1])
    assert ledger.record("b", PrivacySpend(0.5), holders=second[1]).total.epsilon == 2.0


def test_account_refuses_before_changing_and_is_shared_by_copies() -> None:
    account = PrivacyAccount(budget=2.0)
    scope = account.scope()
    assert copy.deepcopy(scope).account is account and copy.copy(account) is account
    scope.charge("first", PrivacySpend(1.5))
    before = account.ledger
    with pytest.raises(ValueError, match="above the budget"):
        scope.group("late").charge("second", PrivacySpend(1.0))
    assert account.ledger is before
    remaining = scope.remaining
    assert remaining is not None and remaining.epsilon == pytest.approx(0.5)
    parts = scope.split("trees", 4)
    for part in parts:
        part.charge("tree", PrivacySpend(0.5))
    assert scope.spent.epsilon == pytest.approx(2.0) and parts[1].spent.epsilon == 2.0


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda s: s.split("x", 0), "parts"),
        (lambda s: s.split("x", ("a", "a")), "distinct"),
        (lambda s: s.group(""), "part"),
        (lambda s: LedgerScope(s.account, (3,)), "holders"),
        (lambda s: LedgerScope("account"), "PrivacyAccount"),  # type: ignore[arg-type]
        (lambda s: PrivacyAccount(budget=-1.0), "budget"),
    ],
)
def test_bad_scopes_are_refused(call, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=match):
        call(PrivacyAccount().scope())


def _regression(seed: int = 0) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    X, Xq = rng.uniform(size=(400, 2)), rng.uniform(size=(60, 2))
    return X, X[:, 0], Xq, Xq[:, 0]


def test_estimators_charge_a_shared_scope_before_the_release() -> None:
    X, y, Xq, yq = _regression()
    account = PrivacyAccount(budget=3.0)
    holders_a = account.scope("holders A")
    first = LPDTRegressor(epsilon=2.0, max_depth=2, label_bound=1.0, privacy_budget=holders_a)
    first.set_params(random_state=0).fit(X, y, X_public=Xq, y_public=yq)
    assert account.ledger.total.epsilon == pytest.approx(2.0)
    # the fit's own ledger is its release; the account holds every fit's
    assert first.privacy_.epsilon == pytest.approx(2.0)
    second = clone(first).set_params(epsilon=1.5)
    assert second.privacy_budget.account is account
    with pytest.raises(ValueError, match="above the budget"):
        second.fit(X, y, X_public=Xq, y_public=yq)
    assert not hasattr(second, "privacy_") and account.ledger.total.epsilon == pytest.approx(2.0)
    # a classifier on a disjoint group of the same account
    yc = (y > 0.5).astype(int)
    group = account.scope("holders B")
    LPCTClassifier(epsilon=3.0, max_depth=2, privacy_budget=group, random_state=0).fit(
        X, yc, X_public=Xq, y_public=(yq > 0.5).astype(int)
    )
    assert group.spent.epsilon == pytest.approx(3.0)
    assert account.ledger.total.epsilon == pytest.approx(3.0)


def test_a_number_still_caps_and_a_bad_budget_names_the_argument() -> None:
    X, y, Xq, yq = _regression()
    with pytest.raises(ValueError, match="privacy_budget"):
        LPDTRegressor(max_depth=1, privacy_budget=-1.0).fit(X, y, X_public=Xq, y_public=yq)
    with pytest.raises(TypeError, match="privacy_budget"):
        LPDTRegressor(max_depth=1, privacy_budget="all").fit(X, y, X_public=Xq, y_public=yq)
