"""SumAggregator: a monoid whose result does not depend on chunking or merge order."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.rounds import SumAggregator


@pytest.fixture(scope="module")
def reports():
    m = RRLaplaceMechanism(epsilon=1.0, label_bound=(-3.0, 3.0))
    rng = np.random.default_rng(0)
    cells = rng.integers(0, 7, size=5000).astype(np.int32)
    return m, m.privatize(jax.random.key(1), cells, rng.normal(size=5000), 7)


def _slice(r, a, b):
    return jax.tree_util.tree_map(lambda x: x[a:b], r)


def test_one_chunk_and_many_chunks_are_identical(reports):
    m, r = reports
    agg = SumAggregator(mechanism=m, n_cells=7)
    whole = agg.finalize(agg.update(agg.init(), r))
    state = agg.init()
    for a in range(0, 5000, 613):
        state = agg.update(state, _slice(r, a, a + 613))
    chunked = agg.finalize(state)
    np.testing.assert_array_equal(whole.count, chunked.count)
    np.testing.assert_array_equal(whole.label_sum, chunked.label_sum)
    assert whole.n == chunked.n == 5000


def test_merge_is_associative_and_commutative_exactly(reports):
    m, r = reports
    agg = SumAggregator(mechanism=m, n_cells=7)
    a, b, c = (
        agg.update(agg.init(), _slice(r, lo, hi))
        for lo, hi in ((0, 1000), (1000, 3100), (3100, 5000))
    )
    left = agg.finalize(agg.merge(agg.merge(a, b), c))
    right = agg.finalize(agg.merge(c, agg.merge(b, a)))
    np.testing.assert_array_equal(left.label_sum, right.label_sum)
    np.testing.assert_array_equal(left.count, right.count)
    # the empty state is the identity
    ident = agg.finalize(agg.merge(agg.init(), agg.merge(a, agg.init())))
    np.testing.assert_array_equal(ident.count, agg.finalize(a).count)


def test_large_batches_are_split_below_the_exact_integer_limit():
    m = RRLaplaceMechanism(epsilon=0.02, label_bound=1.0)
    assert m.max_summary_rows < 300_000  # the label's geometric codes are wide at this budget
    agg = SumAggregator(mechanism=m, n_cells=2)
    n = m.max_summary_rows + 10
    r = m.privatize(jax.random.key(0), np.zeros(n, dtype=np.int32), np.ones(n), 2)
    est = agg.finalize(agg.update(agg.init(), r))
    with pytest.raises(ValueError, match="max_summary_rows"):
        m.summarize(r, 2)
    assert est.n == n


def test_finalize_without_reports_is_a_clear_error(reports):
    m, _ = reports
    agg = SumAggregator(mechanism=m, n_cells=7)
    with pytest.raises(ValueError, match="no reports"):
        agg.finalize(agg.init())


def test_the_aggregate_simulation_of_class_labels_keeps_counts_not_records():
    # LPCT's mechanism has class labels: chunks fold into counts per (cell, class level) and the
    # draw equals simulate_summary of all records at once, bit for bit
    from ldptree.mechanisms import LaplaceCellClassMechanism
    from ldptree.protocols import SimulatesFromCounts
    from ldptree.rounds import SimulatedSumAggregator

    m = LaplaceCellClassMechanism(epsilon=1.0, n_classes=3)
    assert isinstance(m, SimulatesFromCounts)
    rng = np.random.default_rng(4)
    cells = rng.integers(0, 7, size=3000).astype(np.int32)
    labels = rng.integers(0, 3, size=3000).astype(np.int32)
    key = jax.random.key(2)
    agg = SimulatedSumAggregator(m, 7)
    state = agg.init()
    for a, b in [(0, 1000), (1000, 1001), (1001, 3000)]:
        state = agg.update_records(state, key, cells[a:b], labels[a:b], first_holder=a)
    assert state.cells == () and state.counts is not None and state.counts.shape == (7, 4)
    assert int(state.counts.sum()) == 3000
    got = agg.finalize(state)
    want = m.debias(m.simulate_summary(key, cells, labels, 7), 3000)
    for name in ("count", "label_sum"):
        np.testing.assert_array_equal(
            np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        )
    with pytest.raises(ValueError, match="counts must be integer counts of shape"):
        m.simulate_counts(key, np.ones((6, 4), dtype=np.int64), 7)
    with pytest.raises(ValueError, match="non-negative"):
        m.simulate_counts(key, -np.ones((7, 4), dtype=np.int64), 7)


def test_the_aggregate_simulation_of_real_labels_keeps_the_records():
    # real labels are rounded to levels at random inside the draw: the records must be kept
    from ldptree.rounds import SimulatedSumAggregator

    m = RRLaplaceMechanism(epsilon=1.0, label_bound=(-3.0, 3.0))
    rng = np.random.default_rng(5)
    cells = rng.integers(0, 7, size=500).astype(np.int32)
    assert m.record_counts(cells, rng.normal(size=500), 7) is None
    agg = SimulatedSumAggregator(m, 7)
    state = agg.update_records(
        agg.init(), jax.random.key(3), cells, rng.normal(size=500), first_holder=0
    )
    assert state.counts is None and len(state.cells) == 1
