"""Every built-in's ``debias`` (and the kit's ``debias_indicators``) runs under jit/vmap and agrees
with the float64 host path. Inside ``jax.enable_x64(True)`` the traced arithmetic is float64 on the
same integer sums; XLA divides by a constant via its reciprocal (<= 1 ulp), hence ``rtol=1e-12``.
Deterministic (fixed seeds): no false-failure rate."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree.mechanisms import (
    LaplaceCellClassMechanism,
    LaplaceCellLabelMechanism,
    LaplaceFeatureLabelMechanism,
    OLHCellClassMechanism,
    OLHLaplaceMechanism,
    RRLaplaceMechanism,
    SubsetCellClassMechanism,
    SubsetLaplaceMechanism,
)
from ldptree.protocols import CellEstimates

N_CELLS = 6


def _records(integer: bool, n: int = 700):
    rng = np.random.default_rng(0)
    cells = rng.integers(0, N_CELLS, n).astype(np.int32)
    labels = rng.integers(0, 3, n).astype(np.int32) if integer else rng.normal(size=n)
    return cells, labels.astype(np.int32 if integer else np.float32)


MECHANISMS = [
    (RRLaplaceMechanism(epsilon=2.0, label_bound=(-2.0, 2.0), budget_split=0.4), False),
    (LaplaceCellLabelMechanism(epsilon=3.0, label_bound=(-2.0, 2.0)), False),
    (LaplaceCellClassMechanism(epsilon=1.0, n_classes=2), True),
    (LaplaceCellClassMechanism(epsilon=1.0, n_classes=3), True),
    (OLHLaplaceMechanism(epsilon=2.0, label_bound=(-2.0, 2.0)), False),
    (OLHCellClassMechanism(epsilon=1.0, n_classes=3), True),
    (SubsetLaplaceMechanism(epsilon=2.0, label_bound=(-2.0, 2.0)), False),
    (SubsetCellClassMechanism(epsilon=1.0, n_classes=3), True),
]


def _assert_close(traced: CellEstimates, host: CellEstimates) -> None:
    assert traced.n == host.n
    for t, h in ((traced.count, host.count), (traced.label_sum, host.label_sum)):
        t, h = np.asarray(t), np.asarray(h)
        assert t.dtype == np.float64 and t.shape == h.shape
        scale = max(float(np.abs(h).max()), 1.0)
        np.testing.assert_allclose(t, h, rtol=1e-12, atol=1e-12 * scale)


@pytest.mark.parametrize(("mechanism", "integer"), MECHANISMS)
def test_debias_under_jit_matches_the_host(mechanism, integer):
    cells, labels = _records(integer)
    stats = mechanism.privatize_summarize(jax.random.key(1), cells, labels, N_CELLS)
    host = mechanism.debias(stats, cells.shape[0])
    assert isinstance(host.count, np.ndarray) and host.count.dtype == np.float64
    with jax.enable_x64(True):
        traced = jax.jit(lambda s: mechanism.debias(s, cells.shape[0]))(stats)
    _assert_close(traced, host)


@pytest.mark.parametrize(("mechanism", "integer"), MECHANISMS[:1] + MECHANISMS[2:3])
def test_privatize_summarize_debias_vmapped_over_keys(mechanism, integer):
    cells, labels = _records(integer)
    keys = jax.random.split(jax.random.key(2), 4)

    def estimate(key):
        stats = mechanism.privatize_summarize(key, cells, labels, N_CELLS)
        return mechanism.debias(stats, cells.shape[0])

    with jax.enable_x64(True):
        batched = jax.jit(jax.vmap(estimate))(keys)
    assert isinstance(batched, CellEstimates) and batched.count.shape == (4, N_CELLS)
    for i, key in enumerate(keys):
        host = estimate(key)
        _assert_close(
            CellEstimates(count=batched.count[i], label_sum=batched.label_sum[i], n=batched.n), host
        )


def test_feature_label_debias_under_jit_matches_the_host():
    mechanism = LaplaceFeatureLabelMechanism(epsilon=2.0, n_features=2, label_bound=(-1.0, 1.0))
    rng = np.random.default_rng(3)
    n = 300
    features = rng.random((n, 2))
    labels = rng.normal(size=n).astype(np.float32)
    reports = mechanism.privatize(
        jax.random.key(4), np.zeros(n, np.int32), labels, 1, features=features
    )
    stats = mechanism.summarize(reports, 1)
    host = mechanism.debias(stats, n)
    with jax.enable_x64(True):
        traced = jax.jit(lambda s: mechanism.debias(s, n))(stats)
    _assert_close(traced, host)
    np.testing.assert_array_equal(np.asarray(traced.count), [float(n)])


def test_cell_estimates_is_a_pytree_with_static_n():
    est = CellEstimates(count=np.arange(3.0), label_sum=np.ones(3), n=5)
    leaves, tree = jax.tree_util.tree_flatten(est)
    assert len(leaves) == 2
    doubled = jax.tree_util.tree_unflatten(tree, [2 * leaf for leaf in leaves])
    assert doubled.n == 5
    np.testing.assert_array_equal(doubled.count, [0.0, 2.0, 4.0])
