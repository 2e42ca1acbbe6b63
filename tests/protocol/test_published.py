"""The published round: exact JSON, re-certified by the holder, refused when unknown or unsafe."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import numpy as np
import pytest
from protocol_helpers import make_round

from ldptree.accounting import verify_ldp
from ldptree.mechanisms import (
    LaplaceCellClassMechanism,
    LaplaceCellLabelMechanism,
    RRLaplaceMechanism,
)
from ldptree.mechanisms._noise import Geometric
from ldptree.partitions import MaxEdgePartitioner, RangeScaler
from ldptree.protocol import MECHANISMS, _published, load_published, publish, round_fingerprint


@pytest.mark.parametrize(
    "mechanism",
    [
        RRLaplaceMechanism(epsilon=2.0, label_bound=(0.0, 5.0), budget_split=0.3),
        LaplaceCellLabelMechanism(epsilon=1.5, label_bound=2.0),
        LaplaceCellClassMechanism(epsilon=1.0, n_classes=3),
    ],
    ids=lambda m: type(m).__name__,
)
def test_round_trip_is_exact(mechanism: Any) -> None:
    published = make_round(mechanism)
    round_ = load_published(published)
    assert round_.mechanism == mechanism
    assert round_.certificate.pure
    assert published["certificate"]["pure"] is True
    assert published["epsilon"] == mechanism.epsilon
    assert round_.partition.equals(MaxEdgePartitioner(max_depth=3).fit(np.empty((0, 2))))
    np.testing.assert_array_equal(round_.scaler.lo, [0.0, -1.0])
    np.testing.assert_array_equal(round_.scaler.hi, [10.0, 1.0])


def test_unknown_versions_and_schemas_are_refused(published: dict[str, Any]) -> None:
    for key, value in [("version", 2), ("version", True), ("schema", "other")]:
        bad = copy.deepcopy(published)
        bad[key] = value
        with pytest.raises(ValueError, match="schema"):
            load_published(bad)


@pytest.mark.parametrize(
    ("path", "value", "match"),
    [
        (("mechanism", "name"), "GaussianMechanism", "must be one of"),
        (("mechanism", "params", "epsilon"), -1.0, "params are invalid"),
        (("epsilon",), 3.0, "not the mechanism's epsilon"),
        (("scaler", "lo"), ["0x0p+0"], "scaler"),
        (("scaler", "hi"), ["nan", "0x1p+0"], "float.hex|finite"),
    ],
)
def test_malformed_rounds_are_refused(
    published: dict[str, Any], path: tuple[str, ...], value: Any, match: str
) -> None:
    bad = copy.deepcopy(published)
    target = bad
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError, match=match):
        load_published(bad)


def test_the_published_certificate_is_not_trusted(
    published: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A holder recertifies: a mechanism that spends more than it claims is refused even when
    the published certificate says it is pure."""

    class Leaky(LaplaceCellClassMechanism):
        @property
        def noise(self) -> Geometric:  # twice the budget per coordinate it claims
            return Geometric(self.epsilon / 2.0, span=1)

    leaky = Leaky(epsilon=1.0, n_classes=2)
    assert not verify_ldp(leaky, n_cells=8).holds
    monkeypatch.setitem(_published.MECHANISMS, "Leaky", Leaky)  # type: ignore[index]
    with pytest.raises(ValueError, match="not certified pure"):
        publish(
            MaxEdgePartitioner(max_depth=3).fit(np.empty((0, 2))),
            RangeScaler.unit(2),
            leaky,
        )
    forged = copy.deepcopy(published)
    forged["mechanism"] = {"name": "Leaky", "params": {"epsilon": 1.0, "n_classes": 2}}
    forged["epsilon"] = 1.0
    assert forged["certificate"]["pure"] is True
    with pytest.raises(ValueError, match="not certified pure"):
        load_published(forged)


def test_publish_checks_its_arguments() -> None:
    partition = MaxEdgePartitioner(max_depth=1).fit(np.empty((0, 2)))
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    with pytest.raises(ValueError, match="features"):
        publish(partition, RangeScaler.unit(3), mech)
    with pytest.raises(TypeError, match="must be one of"):
        publish(partition, RangeScaler.unit(2), object())
    assert set(MECHANISMS) == {
        "RRLaplaceMechanism",
        "LaplaceCellClassMechanism",
        "LaplaceCellLabelMechanism",
    }
    json.dumps(publish(partition, RangeScaler.unit(2), mech))  # plain JSON


def test_every_publication_is_a_new_round() -> None:
    """The same partition, box and mechanism published twice: two nonces, two fingerprints;
    the fingerprint is the SHA-256 of the canonical JSON, and a repeated nonce repeats it."""
    partition = MaxEdgePartitioner(max_depth=2).fit(np.empty((0, 2)))
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    first = publish(partition, RangeScaler.unit(2), mech)
    second = publish(partition, RangeScaler.unit(2), mech)
    assert first["nonce"] != second["nonce"]
    assert round_fingerprint(first) != round_fingerprint(second)
    again = publish(partition, RangeScaler.unit(2), mech, nonce=first["nonce"])
    assert round_fingerprint(again) == round_fingerprint(first)
    canonical = json.dumps(first, sort_keys=True, separators=(",", ":")).encode()
    assert round_fingerprint(first) == hashlib.sha256(canonical).hexdigest()
    assert load_published(first).fingerprint == round_fingerprint(first)
    for nonce in ("ABC", "0" * 31, 7):
        with pytest.raises(ValueError, match="nonce must be 32 lowercase hex"):
            publish(partition, RangeScaler.unit(2), mech, nonce=nonce)  # type: ignore[arg-type]
    for bad in ({**first, "nonce": "0" * 31}, {k: v for k, v in first.items() if k != "nonce"}):
        with pytest.raises(ValueError, match="nonce"):
            load_published(bad)
