"""PrivacySpend composition and the PrivacyLedger budget."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.accounting import PrivacyLedger, PrivacySpend, spend_of
from ldptree.mechanisms import RRLaplaceMechanism


def test_sequential_composition_adds_epsilon_and_delta() -> None:
    a = PrivacySpend(epsilon=0.5, parts=(("cell", 0.2), ("label", 0.3)))
    b = PrivacySpend(epsilon=1.0, delta=1e-6)
    total = PrivacySpend.sequential(a, b)
    assert total.epsilon == pytest.approx(1.5) and total.delta == pytest.approx(1e-6)
    assert total.parts == (("cell", 0.2), ("label", 0.3), ("release", 1.0))


def test_parallel_composition_takes_the_worst_group() -> None:
    total = PrivacySpend.parallel(PrivacySpend(0.3), PrivacySpend(0.8, 1e-9), PrivacySpend(0.5))
    assert total.epsilon == 0.8 and total.delta == 1e-9


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epsilon": -1.0}, "epsilon"),
        ({"epsilon": float("inf")}, "epsilon"),
        ({"epsilon": 1.0, "delta": 2.0}, "delta"),
        ({"epsilon": 1.0, "parts": (("a", 0.4),)}, "add up"),
        ({"epsilon": 1.0, "parts": (("a",),)}, "parts"),
    ],
)
def test_spend_validation(kwargs: dict, match: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ValueError, match=match):
        PrivacySpend(**kwargs)


def test_ledger_composes_and_refuses_to_exceed_the_budget() -> None:
    ledger = PrivacyLedger(budget=PrivacySpend(epsilon=2.0, delta=1e-5))
    ledger = ledger.record("round 1", PrivacySpend(epsilon=1.0))
    ledger = ledger.record_parallel(
        "tuning", {"fold A": PrivacySpend(0.5), "fold B": PrivacySpend(0.75, 1e-6)}
    )
    ledger = ledger.post_process("read-out")
    assert ledger.groups == ("fold A", "fold B")
    assert ledger.spent("fold A").epsilon == pytest.approx(1.5)
    assert ledger.total.epsilon == pytest.approx(1.75) and ledger.total.delta == 1e-6
    remaining = ledger.remaining
    assert remaining is not None and remaining.epsilon == pytest.approx(0.25)
    with pytest.raises(ValueError, match="above the budget"):
        ledger.record("round 2", PrivacySpend(epsilon=0.5))
    # the refused entry left the ledger unchanged; a release that fits is accepted
    assert ledger.record("round 2", PrivacySpend(epsilon=0.25)).total.epsilon == pytest.approx(2.0)
    with pytest.raises(ValueError, match="above the budget"):
        ledger.record("leaky", PrivacySpend(epsilon=0.0, delta=1e-4))


def test_post_processing_is_free_and_ledger_is_printable() -> None:
    ledger = PrivacyLedger().post_process("aggregation")
    assert ledger.total.epsilon == 0.0
    assert "post-processing (free)" in str(ledger.record("r", PrivacySpend(1.0)))
    with pytest.raises(ValueError, match="name"):
        ledger.record("", PrivacySpend(1.0))
    with pytest.raises(ValueError, match="holders"):
        ledger.record("x", PrivacySpend(1.0), holders="")


def test_lpdt_records_its_release_through_the_ledger() -> None:
    rng = np.random.default_rng(0)
    X, Xq = rng.uniform(size=(500, 2)), rng.uniform(size=(50, 2))
    model = LPDTRegressor(
        epsilon=3.0, max_depth=2, budget_split=0.4, label_bound=1.0, mechanism="paper"
    )
    model.set_params(random_state=1).fit(X, X[:, 0], X_public=Xq, y_public=Xq[:, 0])
    assert model.privacy_ == model.privacy_ledger_.total
    # charged from the certificate: the declared epsilon and parts, the delta as sampled
    declared = spend_of(model.mechanism_)
    assert (model.privacy_.epsilon, model.privacy_.parts) == (declared.epsilon, declared.parts)
    assert model.privacy_.delta == model.privacy_certificate_.delta
    assert model.privacy_.epsilon == pytest.approx(3.0)
    assert dict(model.privacy_.parts)["cell (randomized response)"] == pytest.approx(1.2)


def test_spend_of_a_mechanism_without_spend() -> None:
    class Bare:
        epsilon = 0.7

    assert spend_of(Bare()) == PrivacySpend(epsilon=0.7)
    assert spend_of(RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)).parts
