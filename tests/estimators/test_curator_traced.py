"""The curator's side under jit: SumAggregator update/merge/finalize and the read-outs agree with
the host path (integer sums bit for bit; float64 read-outs to 1e-12 inside
``jax.enable_x64(True)``: XLA may divide via a reciprocal, <= 1 ulp). Deterministic: no
false-failure rate."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree.estimators._lpct_readout import (
    class_prior,
    private_class_counts,
    public_class_counts,
    simplex_projection,
    weighted_eta,
)
from ldptree.estimators._readout import cell_means, ratio_with_fallback
from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.protocols import CellEstimates
from ldptree.rounds._aggregators import SumAggregator, SumState

RTOL = 1e-12


def _close(traced, host):
    traced, host = np.asarray(traced), np.asarray(host)
    assert traced.shape == host.shape
    np.testing.assert_allclose(traced, host, rtol=RTOL, atol=RTOL)


def _reports(n=600, n_cells=5):
    mechanism = RRLaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 1.0), budget_split=0.5)
    rng = np.random.default_rng(0)
    cells = rng.integers(0, n_cells, n).astype(np.int32)
    labels = rng.normal(size=n).astype(np.float32)
    return mechanism, mechanism.privatize(jax.random.key(0), cells, labels, n_cells), n_cells


def test_aggregator_update_merge_finalize_under_jit():
    mechanism, reports, n_cells = _reports()
    agg = SumAggregator(mechanism=mechanism, n_cells=n_cells)

    def run(reps):
        first = jax.tree_util.tree_map(lambda a: a[:250], reps)
        second = jax.tree_util.tree_map(lambda a: a[250:], reps)
        state = agg.merge(agg.update(agg.init(), first), agg.update(agg.init(), second))
        return state, agg.finalize(state)

    host_state, host = run(reports)
    with jax.enable_x64(True):
        state, traced = jax.jit(run)(reports)
    assert isinstance(state, SumState) and state.n == 600
    for name, value in host_state.stats.items():  # exact integer sums
        assert np.asarray(state.stats[name]).dtype == np.int64
        np.testing.assert_array_equal(np.asarray(state.stats[name]), value)
    _close(traced.count, host.count)
    _close(traced.label_sum, host.label_sum)


def test_traced_int32_sums_beyond_one_batch_are_refused():
    mechanism, reports, n_cells = _reports()
    agg = SumAggregator(mechanism=mechanism, n_cells=n_cells)
    big = SumState(n=mechanism.max_summary_rows, stats=None)

    def run(reps):
        state = agg.update(agg.init(), reps)
        return agg.merge(SumState(n=big.n, stats=state.stats), state).stats

    with pytest.raises(ValueError, match="enable_x64"):
        jax.jit(run)(reports)
    with jax.enable_x64(True):  # int64 sums: allowed
        assert jax.jit(run)(reports)["bits"].dtype == jnp.int64


def test_read_outs_under_jit_match_the_host():
    rng = np.random.default_rng(1)
    n_cells, k = 7, 3
    count = rng.normal(20.0, 15.0, n_cells)
    count[2] = 0.0
    est = CellEstimates(count=count, label_sum=rng.normal(5.0, 5.0, (n_cells, k)), n=100)
    fallback = rng.normal(size=n_cells)
    cells = rng.integers(0, n_cells, 200)
    y = rng.normal(size=200)
    codes = rng.integers(0, k, 200)
    public = public_class_counts(cells, codes, n_cells, k)
    public[4] = 0.0

    def readouts(est, fallback, cells, y, codes, public):
        ratio = ratio_with_fallback(
            CellEstimates(count=est.count, label_sum=est.label_sum[:, 0], n=est.n),
            fallback,
            min_ratio=0.05,
        )
        out = [*ratio, cell_means(cells, y, n_cells, -1.0), public_class_counts(cells, codes, 7, k)]
        classes = private_class_counts(est, k)
        for lam in (0.0, 0.7, np.inf):
            for rule in ("none", "prior"):
                eta, bad = weighted_eta(
                    est.count, classes, public, lam, fallback=rule, prior=class_prior(public)
                )
                out += [eta, bad, simplex_projection(eta)]
        out.append(class_prior(0.0 * public))
        return out

    host = readouts(est, fallback, cells, y, codes, public)
    with jax.enable_x64(True):
        traced = jax.jit(readouts)(est, fallback, cells, y, codes, public)
    assert len(traced) == len(host)
    for t, h in zip(traced, host, strict=True):
        if np.asarray(h).dtype == bool:
            np.testing.assert_array_equal(np.asarray(t), h)
        else:
            _close(t, h)
    assert host[0][2] == fallback[2]  # a zero count falls back
    np.testing.assert_allclose(host[-1], np.full(k, 1.0 / k))  # no public rows: uniform prior
