"""assert_ldp for users' test suites: passes certified mechanisms, fails with the witness."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from ldptree.accounting import ReportLaw
from ldptree.mechanisms import BitFlip, RRLaplaceMechanism
from ldptree.testing import assert_ldp


@attrs.frozen
class _SmallerFlips(RRLaplaceMechanism):
    """Flips less often than its budget allows (each bit at the whole cell budget)."""

    @property
    def flips(self) -> BitFlip:
        return BitFlip(self.cell_epsilon)


@attrs.frozen
class _TV:
    """A declared sampler caveat: total variation at most 1e-6 per coordinate."""

    note: str = "approximate sampler (test)"

    def tv_bound(self, inputs: Any) -> float:
        return 1e-6

    def unreachable(self, a: Any, b: Any) -> Any:
        return None

    def exact_delta(self, a: Any, b: Any, epsilon: float) -> float | None:
        return None


@attrs.frozen
class _Approximate(RRLaplaceMechanism):
    """Declares that its label sampler only approximates the label law (a small delta)."""

    def report_law(self, n_cells: int) -> ReportLaw:
        law = super().report_law(n_cells)
        bits, code = law.blocks
        noisy = attrs.evolve(code, channel=attrs.evolve(code.channel, sampling=_TV()))
        return attrs.evolve(law, blocks=(bits, noisy))


@attrs.frozen
class _NoLaw(RRLaplaceMechanism):
    def report_law(self, n_cells: int) -> Any:
        return "not a law"


def test_assert_ldp_returns_the_certificate() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    cert = assert_ldp(mech, n_cells=8)
    assert cert.declared_holds and cert.pure and cert.delta == 0.0


def test_assert_ldp_requires_the_sampler_to_be_pure_by_default() -> None:
    mech = _Approximate(epsilon=1.0, label_bound=1.0)
    with pytest.raises(AssertionError, match="as implemented FAILS"):
        assert_ldp(mech, n_cells=8)


def test_assert_ldp_failure_shows_the_witness() -> None:
    mech = _SmallerFlips(epsilon=1.0, label_bound=1.0)
    with pytest.raises(AssertionError) as info:
        assert_ldp(mech, n_cells=8)
    message = str(info.value)
    assert "_SmallerFlips is not certified 1-LDP" in message
    assert "FAILS" in message and "witness: records (cell, label)" in message
    assert "bits:" in message and "code:" in message


@pytest.mark.slow
def test_assert_ldp_max_delta() -> None:
    mech = _Approximate(epsilon=1.0, label_bound=1.0)
    with pytest.raises(AssertionError, match="max_delta"):
        assert_ldp(mech, n_cells=2, max_delta=1e-9)
    cert = assert_ldp(mech, n_cells=2, max_delta=1e-3)
    assert 0.0 < cert.delta <= 1e-3


def test_report_law_type_is_checked() -> None:
    with pytest.raises(TypeError, match="ReportLaw"):
        assert_ldp(_NoLaw(epsilon=1.0, label_bound=1.0), n_cells=2, label_bound=1.0)
