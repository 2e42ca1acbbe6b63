"""The holder protects itself: a required policy checked before any draw, one answer per round,
a total it never exceeds, and reports bound to their round."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from protocol_helpers import make_round

from ldptree.mechanisms import LaplaceCellLabelMechanism, RRLaplaceMechanism
from ldptree.protocol import (
    Collector,
    HolderLedger,
    PrivacyPolicy,
    PrivacyPolicyError,
    _holder,
    holder_report,
    load_published,
    round_fingerprint,
)


@pytest.fixture(scope="module")
def greedy() -> dict[str, Any]:
    """A curator's round at epsilon 50 (certified pure: it spends what it says)."""
    return make_round(RRLaplaceMechanism(epsilon=50.0, label_bound=(0.0, 5.0)))


@pytest.fixture
def no_randomness(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every source of the holder's randomness, replaced by a recorder that fails the test."""
    calls: list[str] = []

    def forbidden(name: str) -> Any:
        def draw(*args: Any) -> Any:
            calls.append(name)
            raise AssertionError(f"{name} was called")

        return draw

    monkeypatch.setattr(_holder, "_random_words", forbidden("_random_words"))
    monkeypatch.setattr(_holder.secrets, "token_bytes", forbidden("token_bytes"))
    monkeypatch.setattr(_holder.secrets, "token_hex", forbidden("token_hex"))
    return calls


def test_a_round_above_the_policy_is_refused_before_any_draw(
    published: dict[str, Any], greedy: dict[str, Any], no_randomness: list[str], tmp_path: Path
) -> None:
    assert load_published(published).epsilon == pytest.approx(2.0)
    strict = PrivacyPolicy(max_epsilon_per_round=1.0, max_epsilon_total=10.0)
    with HolderLedger(tmp_path / "ledger.sqlite") as ledger:
        with pytest.raises(PrivacyPolicyError, match="above your policy's max_epsilon_per_round"):
            holder_report([1.0, 0.0], 1.0, published, policy=strict, ledger=ledger)
        assert ledger.spent == 0.0 and ledger.rounds() == {}
    assert no_randomness == []
    # a greedy round is refused the same way, whatever its published certificate says
    greedy["certificate"]["epsilon_bound"] = 1.0
    with pytest.raises(PrivacyPolicyError, match="max_epsilon_per_round"):
        holder_report([1.0, 0.0], 1.0, greedy, policy=strict, ledger=HolderLedger.in_memory())
    assert no_randomness == []


def test_the_total_is_never_exceeded(published: dict[str, Any], tmp_path: Path) -> None:
    policy = PrivacyPolicy(max_epsilon_per_round=2.0, max_epsilon_total=3.0)
    path = tmp_path / "ledger.sqlite"
    with HolderLedger(path) as ledger:
        answer = holder_report([1.0, 0.0], 1.0, published, policy=policy, ledger=ledger)
    assert answer.epsilon == pytest.approx(2.0) and answer.spent == answer.epsilon
    assert not answer.replayed
    assert "spends epsilon=2" in answer.message and "of your 3" in answer.message
    second_round = make_round()  # the same setting published again: another round
    with HolderLedger(path) as ledger:  # the ledger is the file: a new process sees it
        with pytest.raises(PrivacyPolicyError, match="max_epsilon_total=3"):
            holder_report([1.0, 0.0], 1.0, second_round, policy=policy, ledger=ledger)
        assert ledger.rounds() == {round_fingerprint(published): answer.epsilon}
        cheap = make_round(LaplaceCellLabelMechanism(epsilon=1.0, label_bound=(0.0, 5.0)))
        other = holder_report([1.0, 0.0], 1.0, cheap, policy=policy, ledger=ledger)
        assert other.spent == pytest.approx(3.0)


def test_a_second_answer_to_the_same_round_is_the_stored_one(
    published: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = PrivacyPolicy(max_epsilon_per_round=2.0, max_epsilon_total=2.0)
    path = tmp_path / "ledger.sqlite"
    with HolderLedger(path) as ledger:
        first = holder_report([1.0, 0.0], 1.0, published, policy=policy, ledger=ledger)
    calls: list[int] = []
    monkeypatch.setattr(_holder, "_random_words", lambda n: calls.append(n))
    # another process of the same holder, another record even: the stored report comes back
    with HolderLedger(path) as one, HolderLedger(path) as two:
        again = holder_report([9.0, 0.5], 4.0, published, policy=policy, ledger=one)
        third = holder_report([1.0, 0.0], 1.0, published, policy=policy, ledger=two)
    assert again.report == first.report == third.report
    assert again.replayed and third.replayed and calls == []
    assert again.spent == first.spent == pytest.approx(2.0)
    assert "answered before" in again.message


def test_a_report_for_another_round_is_rejected_by_the_collector(
    published: dict[str, Any], tmp_path: Path
) -> None:
    """The same partition and mechanism published again is another round: its collector
    rejects this round's reports under their own reason, once per distinct report."""
    policy = PrivacyPolicy(max_epsilon_per_round=2.0, max_epsilon_total=4.0)
    mine = holder_report(
        [1.0, 0.0], 1.0, published, policy=policy, ledger=HolderLedger.in_memory()
    ).report
    assert mine["round"] == round_fingerprint(published)
    other = make_round()
    with Collector(tmp_path / "store", other) as collector:
        assert collector.submit(json.dumps(mine)) == "round"
        assert collector.submit(mine) == "round"  # the same report again: counted once
        collector.commit()
        assert collector.n_reports == 0
        assert {k: v for k, v in collector.rejected.items() if v} == {"round": 1}


def test_policy_and_ledger_arguments(published: dict[str, Any], tmp_path: Path) -> None:
    with pytest.raises(TypeError):
        PrivacyPolicy()  # type: ignore[call-arg]  # no default that accepts everything
    with pytest.raises(ValueError, match="max_epsilon_per_round must be > 0"):
        PrivacyPolicy(max_epsilon_per_round=0.0, max_epsilon_total=1.0)
    with pytest.raises(ValueError, match="max_epsilon_total must be finite"):
        PrivacyPolicy(max_epsilon_per_round=1.0, max_epsilon_total=float("inf"))
    with pytest.raises(ValueError, match="must be >= max_epsilon_per_round"):
        PrivacyPolicy(max_epsilon_per_round=2.0, max_epsilon_total=1.0)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        PrivacyPolicy(1.0, 2.0).max_epsilon_total = 5.0  # type: ignore[misc]
    with pytest.raises(TypeError, match="policy must be a PrivacyPolicy"):
        holder_report([1.0, 0.0], 1.0, published, policy=None, ledger=HolderLedger.in_memory())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="ledger must be a HolderLedger"):
        holder_report([1.0, 0.0], 1.0, published, policy=PrivacyPolicy(2, 2), ledger=None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="cannot be opened"):
        HolderLedger(tmp_path / "no such folder" / "ledger.sqlite")
    notes = tmp_path / "notes.txt"
    notes.write_text("my own notes\n" * 100)
    with pytest.raises(ValueError, match="not an SQLite database"):
        HolderLedger(notes)
    assert notes.read_text() == "my own notes\n" * 100
    with Collector(tmp_path / "store", published):
        pass
    before = (tmp_path / "store" / "reports.sqlite").read_bytes()
    with pytest.raises(ValueError, match="another application"):
        HolderLedger(tmp_path / "store" / "reports.sqlite")
    assert (tmp_path / "store" / "reports.sqlite").read_bytes() == before
    ledger = HolderLedger.in_memory()
    ledger.close()
    with pytest.raises(ValueError, match="closed"):
        holder_report([1.0, 0.0], 1.0, published, policy=PrivacyPolicy(2, 2), ledger=ledger)
    np.testing.assert_equal(HolderLedger.in_memory().spent, 0.0)
