"""Provenance, admission and the memo by value: what a certificate may say about the code that
runs, which mechanisms an estimator runs, and when a certificate is reused.

Deterministic, except ``check_sampler`` in the opt-in tests (false-rejection rate at most
``1e-6`` for a correct sampler; fixed keys).
"""

from __future__ import annotations

import copy
import math
import pickle
import warnings
from typing import Any, NamedTuple

import attrs
import jax
import numpy as np
import pytest
from toy_mechanisms import ToyLaplace

from ldptree import LPDTRegressor
from ldptree._memo import fingerprint, memoised
from ldptree.accounting import (
    AdmissionError,
    HandWritten,
    IndexBlock,
    KeyReuseWarning,
    ReportLaw,
    admit,
    provenance,
    verify_ldp,
)
from ldptree.mechanisms import (
    LaplaceFeatureLabelMechanism,
    RRLaplaceMechanism,
    RRLaplaceReport,
)
from ldptree.rounds._charge import admitted
from ldptree.testing import BUILT_INS


# -- provenance ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(BUILT_INS))
def test_every_built_in_is_proven(name: str) -> None:
    origin = provenance(BUILT_INS[name].make(1.0))
    expected = "library" if name == "LaplaceFeatureLabelMechanism" else "kit"
    assert origin.kind == expected and origin.proven


@attrs.frozen
class _OwnPrivatize(RRLaplaceMechanism):
    def privatize(self, *args: Any, **kwargs: Any) -> Any:
        return super().privatize(*args, **kwargs)


@attrs.frozen
class _OwnLaw(RRLaplaceMechanism):
    def report_law(self, n_cells: int) -> ReportLaw:
        return super().report_law(n_cells)


@attrs.frozen
class _Declarations(RRLaplaceMechanism):
    """Only declarations and curator-side methods change: still the kit's sampler."""

    def debias(self, stats: Any, n: int) -> Any:
        return super().debias(stats, n)


class _Rewriting(NamedTuple):
    bits: Any
    code: Any


class _LoudReport(_Rewriting):
    def __new__(cls, bits: Any, code: Any) -> Any:  # rewrites what the kit sampled
        return super().__new__(cls, bits, code * 0)


@attrs.frozen
class _OwnReportType(RRLaplaceMechanism):
    report_type = _LoudReport


@attrs.frozen
class _Features(LaplaceFeatureLabelMechanism):
    pass


@pytest.mark.parametrize(
    ("cls", "kind", "why"),
    [
        (_OwnPrivatize, "hand-written", "privatize"),
        (_OwnLaw, "hand-written", "report_law"),
        (_Declarations, "kit", "kit"),
        (_OwnReportType, "hand-written", "NamedTuple"),
    ],
)
def test_a_subclass_is_kit_only_while_the_sampling_path_is_the_kits(
    cls: type, kind: str, why: str
) -> None:
    origin = provenance(cls(epsilon=1.0, label_bound=1.0))
    assert origin.kind == kind and why in origin.reason


def test_a_library_mechanism_is_proven_only_as_its_exact_class() -> None:
    assert provenance(_Features(epsilon=1.0, n_features=2, label_bound=1.0)).kind == (
        "hand-written"
    )


@pytest.mark.slow
def test_a_hand_written_certificate_never_says_pure() -> None:
    cert = verify_ldp(_OwnPrivatize(epsilon=1.0, label_bound=1.0), n_cells=3)
    assert cert.law_holds and cert.delta == 0.0 and cert.exact
    assert not cert.holds and not cert.pure and not cert.proven
    assert cert.status == "law certified, sampler not tested, not proven"
    text = str(cert)
    assert "NOT PROVEN" in text and "(pure)" not in text.splitlines()[0]
    tested = verify_ldp(
        _OwnPrivatize(epsilon=1.0, label_bound=1.0), n_cells=3, check_sampler=True, n_sampler=500
    )
    assert tested.status == "law certified, sampler tested, not proven" and not tested.pure


# -- a law is a law ------------------------------------------------------------------------------
def test_an_index_block_must_sum_to_one() -> None:
    block = IndexBlock("cell", log_keep=math.log(0.02), log_other=math.log(0.01))
    from ldptree.accounting._verify import _index_problems

    assert _index_problems(block, 4)  # 0.02 + 3 * 0.01 = 0.05
    fine = IndexBlock("cell", log_keep=math.log(0.4), log_other=math.log(0.2))
    assert _index_problems(fine, 4) == []
    exact = attrs.evolve(fine, counts=(2, 1, 5))  # 2 + 3 * 1 = 5
    assert _index_problems(exact, 4) == []
    assert _index_problems(attrs.evolve(fine, counts=(2, 1, 6)), 4)


def test_the_tolerance_is_relative() -> None:
    """At a tiny claim an absolute allowance would pass a 2x over-claim."""
    from ldptree.mechanisms import KRRCellClassMechanism
    from ldptree.testing._suite import _HalfClaim

    mech = KRRCellClassMechanism(epsilon=2.0**-40, n_classes=2)
    assert verify_ldp(mech, n_cells=4).pure
    assert not verify_ldp(_HalfClaim(mech), n_cells=4).declared_holds


# -- admission -----------------------------------------------------------------------------------
def test_admit_runs_a_kit_mechanism_without_sampling() -> None:
    cert = admit(RRLaplaceMechanism(epsilon=1.0, label_bound=1.0), n_cells=4, label_bound=(-1, 1))
    assert cert.pure and cert.sampler_check is None


def test_admit_refuses_a_hand_written_mechanism_unless_opted_in() -> None:
    mech = _OwnPrivatize(epsilon=1.0, label_bound=1.0)
    with pytest.raises(AdmissionError, match="HandWritten"):
        admit(mech, n_cells=4, label_bound=(-1.0, 1.0))
    cert = admit(HandWritten(mech, n=2_000), n_cells=4, label_bound=(-1.0, 1.0))
    assert cert.law_holds and not cert.holds
    assert cert.sampler_check is not None and cert.sampler_check.n_tests > 100
    # a continuous law cannot be tested: refused even when opted in
    with pytest.raises(AdmissionError, match="cannot be tested"):
        admit(HandWritten(ToyLaplace(epsilon=1.0)), n_cells=2, label_bound=(0.0, 1.0))


def test_the_wrapper_behaves_as_the_mechanism() -> None:
    inner = _OwnPrivatize(epsilon=1.0, label_bound=1.0)
    wrapped = HandWritten(inner, n=1_000, seed=3)
    assert wrapped.epsilon == 1.0 and wrapped.labels() == inner.labels()
    report = wrapped.privatize(jax.random.key(0), np.zeros(4, np.int32), np.zeros(4), 3)
    assert isinstance(report, RRLaplaceReport)
    assert copy.deepcopy(wrapped) == wrapped and pickle.loads(pickle.dumps(wrapped)) == wrapped
    with pytest.raises(AttributeError):
        wrapped.no_such_attribute  # noqa: B018
    with pytest.raises(ValueError, match="alpha"):
        HandWritten(inner, alpha=2.0)


# -- the memo by value ---------------------------------------------------------------------------
def test_fingerprints_read_content_only() -> None:
    a, b = (RRLaplaceMechanism(epsilon=1.0, label_bound=1.0) for _ in range(2))
    assert fingerprint(a) == fingerprint(b) is not None
    assert fingerprint(attrs.evolve(a, epsilon=2.0)) != fingerprint(a)
    object.__setattr__(b, "epsilon", 3.0)  # a frozen object mutated anyway: a new key
    assert fingerprint(b) != fingerprint(a)
    assert fingerprint(np.arange(3)) != fingerprint(np.arange(3) + 1)
    assert fingerprint(ToyLaplace(epsilon=1.0, label_map=lambda y: y)) is None  # a function

    class Plain:  # mutable, hashed by identity
        epsilon = 1.0

    assert fingerprint(Plain()) is None

    class Explicit:
        def fingerprint(self) -> Any:
            return ("v", 1)

    assert fingerprint(Explicit()) == fingerprint(Explicit())


def test_certificates_are_memoised_by_value() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 1.0))
    first = admitted(mech, 8, (0.0, 1.0))
    assert admitted(RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 1.0)), 8, (0.0, 1.0)) is first
    calls: list[int] = []

    import functools

    @functools.lru_cache(maxsize=4)
    def count(obj: Any) -> int:
        calls.append(1)
        return len(calls)

    class Plain:
        pass

    plain = Plain()
    memoised(count, plain)
    memoised(count, plain)  # no fingerprint: computed again
    memoised(count, mech)
    memoised(count, mech)  # memoised
    assert len(calls) == 3


# -- reusing random_state --------------------------------------------------------------------------
def test_one_noise_key_on_changed_data_warns() -> None:
    rng = np.random.default_rng(5)
    X, y = rng.uniform(size=(400, 2)), rng.uniform(-1.0, 1.0, 400)
    changed = y.copy()
    changed[123] = -changed[123]

    def fit(labels: Any) -> None:
        LPDTRegressor(epsilon=1.0, max_depth=2, label_bound=(-1.0, 1.0), random_state=11).fit(
            X, labels
        )

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit(y)
        fit(y)  # the same data again: the same reports, nothing new is revealed
        assert not [w for w in caught if issubclass(w.category, KeyReuseWarning)]
        fit(changed)
    reuse = [w for w in caught if issubclass(w.category, KeyReuseWarning)]
    assert len(reuse) == 1 and "random_state" in str(reuse[0].message)
