"""Property tests: for any partition and budget in [1e-3, 50] the certificate holds and is tight,
and the calibration never overshoots.

Where the bound is below the claim: randomized response is realised with ``q' = ceil(q 2^bits) /
2^bits >= q``, so the cell part ``2 log((1 - q') / q')`` falls short of ``rho eps`` by at most
``2 (q' - q) / (q (1 - q))`` (mean value theorem on ``q -> 2 log((1 - q)/q)``). Everything else is
near-tight: the label's exact geometric noise realises at least 99% of ``(1 - rho) eps`` (up to
the ``e^{44}`` ceiling of 64-bit counts), and the mechanism is pure as sampled.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_mutants import LaplaceOneHot

from ldptree.mechanisms import RRLaplaceMechanism, RRLaplaceReport
from ldptree.partitions import Partition
from ldptree.testing import assert_ldp, budgets, partitions, records, rr_laplace_mechanisms


@given(partition=partitions(max_depth=6), mech=rr_laplace_mechanisms())
@pytest.mark.slow
def test_built_in_certificate_holds_and_is_tight(
    partition: Partition, mech: RRLaplaceMechanism
) -> None:
    n_cells = partition.n_leaves
    lo, hi = mech.label_bound
    cert = assert_ldp(
        mech, n_cells=n_cells, label_bound=(lo - (hi - lo), hi + (hi - lo)), max_delta=1.0
    )
    assert cert.exact
    parts = dict(cert.witness.parts)
    realised_cell = (2.0 if n_cells >= 2 else 0.0) * math.log(mech.keep_prob / mech.flip_prob)
    assert math.isclose(parts["bits"], realised_cell, rel_tol=1e-9, abs_tol=1e-15)
    # exact geometric label noise: at least 99% of its claim is realised, never more (64-bit
    # counts cap one coordinate's ratio between e^40 and e^44: beyond, the label spends less)
    assert 0.99 * min(mech.label_epsilon, 40.0) <= parts["code"] <= mech.label_epsilon
    assert cert.epsilon_bound <= mech.epsilon * (1.0 + 1e-12)
    assert cert.pure


@given(mech=rr_laplace_mechanisms())
def test_calibration_never_overshoots(mech: RRLaplaceMechanism) -> None:
    q = 1.0 / (1.0 + math.exp(mech.cell_epsilon / 2.0))
    q_real = mech.flip_prob
    assert q <= q_real <= q + 2.0**-mech.bits
    realised = 2.0 * math.log((1.0 - q_real) / q_real)
    assert realised <= mech.cell_epsilon * (1.0 + 1e-12)
    assert mech.cell_epsilon - realised <= 2.0 * (q_real - q) / (q * (1.0 - q)) + 1e-12
    assert math.isclose(mech.cell_epsilon + mech.label_epsilon, mech.epsilon, rel_tol=1e-12)


@given(partition=partitions(max_depth=5), epsilon=budgets())
def test_third_party_laplace_certificate_is_exact(partition: Partition, epsilon: float) -> None:
    cert = assert_ldp(LaplaceOneHot(epsilon=epsilon), n_cells=partition.n_leaves)
    expected = epsilon if partition.n_leaves >= 2 else epsilon / 2.0
    # the law is certified exactly; the float sampler is hand-written, so never "pure"
    assert cert.law_holds and cert.delta == 0.0 and cert.exact and not cert.pure
    assert math.isclose(cert.epsilon_bound, expected, rel_tol=1e-12)


@given(n_cells=st.integers(2, 4096), mech=rr_laplace_mechanisms())
@pytest.mark.slow
def test_randomized_response_on_long_one_hot_vectors(
    n_cells: int, mech: RRLaplaceMechanism
) -> None:
    cert = assert_ldp(mech, n_cells=n_cells, label_bound=mech.label_bound, max_delta=1.0)
    assert math.isclose(
        cert.epsilon_bound,
        2.0 * math.log(mech.keep_prob / mech.flip_prob) + mech.label_epsilon,
        rel_tol=1e-9,
    )


@pytest.mark.slow
@settings(max_examples=6)  # each example compiles privatize for a new mechanism
@given(
    mech=rr_laplace_mechanisms(max_epsilon=8.0),
    data=st.data(),
    seed=st.integers(0, 2**31 - 1),
)
def test_sampled_reports_never_exceed_the_certified_ratio(
    mech: RRLaplaceMechanism, data: st.DataObject, seed: int
) -> None:
    """The bound dominates the log-likelihood ratio of actual reports between random records."""
    n_cells = data.draw(st.integers(1, 12))
    lo, hi = mech.label_bound
    cert = assert_ldp(
        mech, n_cells=n_cells, label_bound=(lo - (hi - lo), hi + (hi - lo)), max_delta=1.0
    )
    (cell, label), (cell2, label2) = (
        data.draw(records(n_cells, label_bound=mech.label_bound)) for _ in range(2)
    )
    reports = mech.privatize(
        jax.random.key(seed), jnp.asarray([cell] * 4), jnp.asarray([label] * 4), n_cells
    )
    for i in range(4):
        report = RRLaplaceReport(reports.bits[i], reports.code[i])
        ratio = mech.log_prob(report, cell, label, n_cells) - mech.log_prob(
            report, cell2, label2, n_cells
        )
        assert ratio <= cert.epsilon_bound * (1.0 + 1e-9) + 1e-12
