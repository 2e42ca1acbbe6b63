"""The published round: exact JSON, re-certified by the holder, refused when unknown or unsafe."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from protocol_helpers import POLICY, make_round

from ldptree import mechanisms
from ldptree.accounting import verify_ldp
from ldptree.mechanisms import (
    KitMechanism,
    LaplaceCellClassMechanism,
    LaplaceCellLabelMechanism,
    RRLaplaceMechanism,
)
from ldptree.mechanisms._noise import Geometric
from ldptree.partitions import MaxEdgePartitioner, RangeScaler
from ldptree.protocol import (
    MECHANISMS,
    Collector,
    HolderLedger,
    _published,
    holder_report,
    load_published,
    publish,
    round_fingerprint,
)
from ldptree.testing import BUILT_INS


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


def test_every_built_in_kit_mechanism_is_publishable() -> None:
    """The registry is every built-in kit mechanism (the one built-in off the kit, which
    privatizes features rather than a cell, is not a round's mechanism)."""
    kit = {name for name in BUILT_INS if issubclass(getattr(mechanisms, name), KitMechanism)}
    assert set(MECHANISMS) == kit
    assert set(BUILT_INS) - kit == {"LaplaceFeatureLabelMechanism"}


@pytest.mark.slow  # every kit mechanism certified and answered: about a minute in all
@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_each_kit_mechanism_is_published_loaded_certified_and_answered(
    name: str, tmp_path: Path
) -> None:
    """Published with non-default parameters where it has them, the mechanism round-trips
    through the JSON text exactly, the holder re-certifies it, answers, and the collector
    accepts the answer."""
    mechanism = BUILT_INS[name].make(1.25)
    if "budget_split" in attrs.fields_dict(type(mechanism)):
        mechanism = attrs.evolve(mechanism, budget_split=0.375)
    partition = MaxEdgePartitioner(max_depth=2).fit(np.empty((0, 2)))
    published = json.loads(json.dumps(publish(partition, RangeScaler.unit(2), mechanism)))
    round_ = load_published(published)
    assert round_.mechanism == mechanism and type(round_.mechanism) is type(mechanism)
    assert round_.certificate.pure and published["certificate"]["pure"] is True
    assert round_.epsilon == pytest.approx(1.25, rel=1e-9)
    label = 2 if mechanism.labels().integer else 0.25
    answer = holder_report(
        [0.3, 0.9], label, published, policy=POLICY, ledger=HolderLedger.in_memory()
    )
    assert answer.epsilon == round_.epsilon
    with Collector(tmp_path / "store", published) as collector:
        assert collector.submit(answer.report) is None
        assert collector.commit() == 1
        assert collector.estimate().n == 1


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
