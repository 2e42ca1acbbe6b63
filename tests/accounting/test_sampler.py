"""check_sampler: privatize is tested against the declared report law.

False-failure rate: each check of a correct sampler rejects with probability at most
``alpha = 1e-6`` (Bonferroni over its tests, chi-square approximation); keys are fixed.
"""

from __future__ import annotations

from typing import Any

import attrs
import jax
import jax.numpy as jnp
import pytest
from toy_mechanisms import ToyLaplace

from ldptree.accounting import check_sampler, verify_ldp
from ldptree.mechanisms import LaplaceCellClassMechanism, RRLaplaceMechanism, RRLaplaceReport


@attrs.frozen
class _TrueCell(RRLaplaceMechanism):
    """Releases the true one-hot cell (no flips) but keeps the honest report law."""

    def privatize(
        self, key: Any, cells: Any, labels: Any, n_cells: int, *, first_holder: int = 0
    ) -> RRLaplaceReport:
        report = super().privatize(key, cells, labels, n_cells, first_holder=first_holder)
        return report._replace(bits=jax.nn.one_hot(jnp.asarray(cells), n_cells, dtype=bool))


@pytest.mark.slow
def test_a_sampler_that_ignores_its_declared_law_is_rejected() -> None:
    mech = _TrueCell(epsilon=1.0, label_bound=1.0)
    result = check_sampler(mech, 5, label_bound=1.0, key=jax.random.PRNGKey(0))
    assert result.rejected and result.p_min == 0.0
    assert "input 1" in result.worst  # the record's own cell
    cert = verify_ldp(mech, n_cells=5, label_bound=1.0, check_sampler=True)
    # the declared law is fine; what runs is not
    assert cert.declared_holds and not cert.holds
    assert cert.sampler_check is not None and cert.sampler_check.rejected
    assert "REJECTED" in str(cert)


@pytest.mark.parametrize(
    "mech, label_bound",
    [
        (RRLaplaceMechanism(epsilon=1.0, label_bound=1.0), 1.0),
        (LaplaceCellClassMechanism(epsilon=2.0, n_classes=3), None),
    ],
)
@pytest.mark.slow
def test_built_in_samplers_are_not_rejected(mech: Any, label_bound: Any) -> None:
    result = check_sampler(mech, 4, label_bound=label_bound, key=jax.random.PRNGKey(1))
    assert not result.rejected and result.n_tests > 0
    cert = verify_ldp(mech, n_cells=4, label_bound=label_bound, check_sampler=True)
    assert cert.sampler_check is not None and not cert.sampler_check.rejected


def test_continuous_channels_are_listed_as_not_tested() -> None:
    result = check_sampler(ToyLaplace(epsilon=1.0), 3, label_bound=1.0, key=jax.random.PRNGKey(0))
    assert not result.rejected and result.n_tests == 0
    assert any("not a finite channel" in s for s in result.skipped)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="label_bound"):
        check_sampler(ToyLaplace(epsilon=1.0), 4, key=jax.random.PRNGKey(0))
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    with pytest.raises(ValueError, match="alpha"):
        check_sampler(mech, 4, label_bound=1.0, key=jax.random.PRNGKey(0), alpha=2.0)
    with pytest.raises(TypeError, match="report_law"):
        check_sampler(object(), 4, key=jax.random.PRNGKey(0))
