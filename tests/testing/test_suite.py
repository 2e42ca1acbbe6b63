"""The generated per-mechanism suite, run on every built-in (see ``ldptree.testing._suite`` for
each check's false-failure rate)."""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np
import pytest

from ldptree.mechanisms import RRLaplaceMechanism, RRLaplaceReport
from ldptree.protocols import CellEstimates
from ldptree.testing import BUILT_INS, built_in_mechanisms, mechanism_checks, pytest_params

#: The statistical checks (thousands to a million reports per mechanism: the unbiasedness and
#: variance tests, the sampler's goodness of fit, the black-box audits of the claim and of an
#: over-claim) run in the slow group.
_STATISTICAL = (
    "unbiased",
    "sampler_matches_law",
    "count_variance",
    "audit_not_refuted",
    "over_claim_rejected",
)


def _cases() -> list[Any]:
    # every built-in samples exactly, so every check (the pure certificate included) must pass
    return [
        pytest.param(
            check,
            id=f"{name}-{check.name}",
            marks=pytest.mark.slow if check.name in _STATISTICAL else (),
        )
        for name, built_in in BUILT_INS.items()
        for check in built_in.checks()
    ]


def test_every_built_in_is_in_the_registry() -> None:
    missing = sorted(set(built_in_mechanisms()) - set(BUILT_INS))
    assert not missing, (
        f"built-in mechanisms {missing} have no entry in the mechanism registry: add one to "
        "mechanism_registry() in ldptree/mechanisms/_registry.py (BUILT_INS is its view; "
        "NOT_BUILT_INS in ldptree/testing/_suite.py for a class that is not a standalone mechanism)"
    )
    stale = sorted(set(BUILT_INS) - set(built_in_mechanisms()))
    assert not stale, f"registry entries {stale} are not built-in mechanisms any more"


@pytest.mark.parametrize("check", _cases())
def test_built_in(check: Any) -> None:
    failure = check.failure()
    assert failure is None, failure


def test_task_is_validated() -> None:
    with pytest.raises(ValueError, match="task"):
        mechanism_checks(BUILT_INS["RRLaplaceMechanism"].make, task="ranking")  # type: ignore[arg-type]


@attrs.frozen
class _BiasedCounts(RRLaplaceMechanism):
    """Debiased counts off by n / 2 per cell."""

    def debias(self, stats: Any, n: int) -> CellEstimates:
        est = super().debias(stats, n)
        return CellEstimates(count=np.asarray(est.count) + 0.5 * n, label_sum=est.label_sum, n=n)


@attrs.frozen
class _IgnoresFirstHolder(RRLaplaceMechanism):
    """Draws holder randomness from its position in the call, not from first_holder."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> RRLaplaceReport:
        return super().privatize(key, cells, labels, n_cells)


def _named(checks: Any, name: str) -> Any:
    (check,) = [c for c in checks if c.name == name]
    return check


def test_the_unbiasedness_check_catches_a_bias() -> None:
    checks = mechanism_checks(
        lambda e: _BiasedCounts(epsilon=e, label_bound=(-1.0, 1.0)), task="regression"
    )
    with pytest.raises(AssertionError, match="count looks biased"):
        _named(checks, "unbiased")()
    # the same failure, collected as a message instead of raised
    failure = _named(checks, "unbiased").failure()
    assert failure is not None and failure.startswith("unbiased:") and "biased" in failure


def test_the_chunking_check_catches_position_dependent_randomness() -> None:
    checks = mechanism_checks(
        lambda e: _IgnoresFirstHolder(epsilon=e, label_bound=(-1.0, 1.0)), task="regression"
    )
    with pytest.raises(AssertionError, match="chunked"):
        _named(checks, "chunking")()


def test_pytest_params_wrap_every_check_with_its_marks() -> None:
    xfail = pytest.mark.xfail(strict=True, reason="demo")
    params = pytest_params(
        BUILT_INS["RRLaplaceMechanism"].make,
        task="regression",
        prefix="rr-",
        marks={"certificate_pure": xfail},
    )
    names = [c.name for c in BUILT_INS["RRLaplaceMechanism"].checks()]
    assert [p.id for p in params] == [f"rr-{n}" for n in names]
    marked = [p for p in params if p.marks]
    assert [p.id for p in marked] == ["rr-certificate_pure"]
