"""The one mechanism registry (``ldptree.mechanisms.mechanism_registry``) and the lists computed
from it: auto's candidates, the estimators' ``mechanism=`` names, the test suite's built-ins,
the protocol's publishable mechanisms and ``kit_built_ins``."""

from __future__ import annotations

import attrs
import pytest

import ldptree.mechanisms as mechanisms
from ldptree.estimators._composition import MECHANISM_CHOICES
from ldptree.estimators._fits import label_kind
from ldptree.mechanisms import (
    Candidate,
    KitMechanism,
    MechanismEntry,
    MechanismRegistry,
    RRLaplaceMechanism,
    choose_class_mechanism,
    choose_regression_mechanism,
    kit_built_ins,
    mechanism_registry,
)
from ldptree.protocol import MECHANISMS
from ldptree.testing import BUILT_INS, built_in_mechanisms

REGISTRY = mechanism_registry()


def test_every_built_in_is_registered_exactly_once() -> None:
    names = [e.name for e in REGISTRY.entries]
    assert len(names) == len(set(names))
    assert sorted(names) == sorted(built_in_mechanisms())
    for entry in REGISTRY.entries:
        assert getattr(mechanisms, entry.name) is entry.mechanism


@pytest.mark.parametrize("entry", REGISTRY.entries, ids=lambda e: e.name)
def test_an_entry_says_what_its_mechanism_declares(entry: MechanismEntry) -> None:
    mechanism = entry.make(1.0)
    assert type(mechanism) is entry.mechanism
    assert label_kind(mechanism)[0] == entry.label_kind
    assert entry.publishable == isinstance(mechanism, KitMechanism)
    assert entry.splits == ("budget_split" in attrs.fields_dict(entry.mechanism))


def test_the_lists_are_views_of_the_registry() -> None:
    publishable = {e.name: e.mechanism for e in REGISTRY.select(publishable=True)}
    assert dict(MECHANISMS) == kit_built_ins() == publishable
    assert {e.name for e in REGISTRY.entries} - set(publishable) == {"LaplaceFeatureLabelMechanism"}
    assert {n: b.task for n, b in BUILT_INS.items()} == {e.name: e.task for e in REGISTRY.entries}
    assert MECHANISM_CHOICES == ("auto", "paper")
    assert REGISTRY.named("paper", "regression").mechanism is RRLaplaceMechanism
    assert REGISTRY.named("paper", "classification").name == "LaplaceCellClassMechanism"
    regression = choose_regression_mechanism(8, 1.0, 1.0).candidates
    assert sorted(n for n, _, _ in regression) == sorted(
        c.name for c, _ in REGISTRY.candidates("regression")
    )
    classes = choose_class_mechanism(8, 1.0, 3).candidates
    assert sorted(n for n, _, _ in classes) == sorted(
        c.name for c, _ in REGISTRY.candidates("classification")
    )
    selectable = {e.name for e in REGISTRY.select(selectable=True)}
    assert selectable == {e.name for _, e in REGISTRY.candidates("regression")} | {
        e.name for _, e in REGISTRY.candidates("classification")
    }


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: REGISTRY.get("Nope"), "mechanism must be one of .*RRLaplaceMechanism"),
        (lambda: REGISTRY.named("nope", "regression"), r"mechanism must be one of \('paper',\)"),
        (lambda: REGISTRY.candidate("nope", "classification"), "one of .*'laplace'"),
        (lambda: REGISTRY.with_entries(REGISTRY.entries[0]), "repeated: .*RRLaplaceMechanism"),
        (lambda: MechanismEntry(RRLaplaceMechanism, "ranking"), "task"),  # type: ignore[arg-type]
        (
            lambda: choose_class_mechanism(4, 1.0, 2, registry=MechanismRegistry(())),
            "no candidates",
        ),
    ],
)
def test_bad_lookups_and_registrations_name_what_is_allowed(call, match) -> None:
    with pytest.raises(ValueError, match=match):
        call()


def test_a_users_registry_is_a_new_value_passed_where_wanted() -> None:
    """A subclass registered as an auto candidate is compared by the choice given the new
    registry; the built-in registry is unchanged."""

    @attrs.frozen
    class MyRR(RRLaplaceMechanism):
        pass

    mine = REGISTRY.with_entries(MechanismEntry(MyRR, "regression", (Candidate("my-rr"),)))
    assert mine.get("MyRR").mechanism is MyRR
    with pytest.raises(ValueError, match="MyRR"):
        REGISTRY.get("MyRR")
    choice = choose_regression_mechanism(8, 1.0, 1.0, registry=mine)
    rows = dict((n, e) for n, _, e in choice.candidates)
    assert rows["my-rr"] == rows["rr-laplace"]  # the same variance as the class it extends
    with pytest.raises(ValueError, match="repeated"):
        mine.with_entries(MechanismEntry(MyRR, "regression"))
    assert isinstance(mine, MechanismRegistry) and len(mine.entries) == len(REGISTRY.entries) + 1
