"""assert_ldp for users' test suites: passes certified mechanisms, fails with the witness."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.testing import assert_ldp


@attrs.frozen
class _SmallerFlips(RRLaplaceMechanism):
    """Flips less often than its budget allows."""

    @property
    def flip_threshold(self) -> int:
        return max(1, super().flip_threshold // 2)


@attrs.frozen
class _NoLaw(RRLaplaceMechanism):
    def report_law(self, n_cells: int) -> Any:
        return "not a law"


def test_assert_ldp_returns_the_certificate() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    cert = assert_ldp(mech, n_cells=8, label_bound=2.0, max_delta=1e-3)
    assert cert.declared_holds and cert.delta is not None and cert.delta <= 1e-3


def test_assert_ldp_requires_the_sampler_to_be_pure_by_default() -> None:
    # today's float32 Laplace label noise only approximates the declared law (delta > 0)
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    with pytest.raises(AssertionError, match="as implemented FAILS"):
        assert_ldp(mech, n_cells=8, label_bound=2.0)


def test_assert_ldp_failure_shows_the_witness() -> None:
    mech = _SmallerFlips(epsilon=1.0, label_bound=1.0)
    with pytest.raises(AssertionError) as info:
        assert_ldp(mech, n_cells=8, label_bound=1.0)
    message = str(info.value)
    assert "_SmallerFlips is not certified 1-LDP" in message
    assert "FAILS" in message and "witness: records (cell, label)" in message
    assert "cell:" in message and "label:" in message


def test_assert_ldp_max_delta() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    with pytest.raises(AssertionError, match="max_delta"):
        assert_ldp(mech, n_cells=2, label_bound=1.0, max_delta=1e-9)
    assert_ldp(mech, n_cells=2, label_bound=1.0, max_delta=1e-3)


def test_report_law_type_is_checked() -> None:
    with pytest.raises(TypeError, match="ReportLaw"):
        assert_ldp(_NoLaw(epsilon=1.0, label_bound=1.0), n_cells=2, label_bound=1.0)
