"""The post-partition fit as a pure function: the engine's serial executor and a read-out give
the estimators' fits (one path), and run under jit(vmap) over keys.

Tolerances: the host path computes in float64 NumPy; traced code runs inside
``jax.enable_x64(True)``, also float64, on the *same* integer sums (the reports are bit-identical).
XLA evaluates a division by a constant as a multiplication by its reciprocal (one extra rounding,
at most 1 ulp), so debiased values agree to ``rtol=1e-12`` rather than bitwise; no test here is
statistical (no false-failure rate).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree._validation import as_key
from ldptree.estimators import lpct_leaves, lpct_pruned_leaves, lpdt_leaves
from ldptree.estimators._lpct import LPCTPrunedClassifier
from ldptree.estimators._lpct_readout import public_class_counts
from ldptree.estimators._readout import cell_means
from ldptree.mechanisms import LaplaceCellClassMechanism, RRLaplaceMechanism
from ldptree.partitions import CartPartitioner, MaxEdgePartitioner
from ldptree.rounds import PrivateRows, Round, Serial, release_key, run

RTOL = 1e-12
N_KEYS = 16


def _regression(n: int = 1500, seed: int = 0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 3))
    y = np.sin(3 * X[:, 0]) + 0.3 * rng.normal(size=n)
    Xq = rng.random((300, 3))
    yq = np.sin(3 * Xq[:, 0]) + 0.3 * rng.normal(size=300)
    return X, y, Xq, yq


def _classification(n: int = 1500, seed: int = 1, n_classes: int = 2):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    edges = np.linspace(0, 1, n_classes + 1)[1:-1]
    y = np.digitize(X[:, 0] + 0.1 * rng.normal(size=n), edges)
    Xq = rng.random((400, 2))
    yq = np.digitize(Xq[:, 0], edges)
    return X, y, Xq, yq


def private_round(key, partition, mechanism, X_scaled, labels, *, chunk_size=65536):
    """One round over scaled rows with the serial executor (pure: jit and vmap trace it)."""
    round_ = Round(partition=partition, mechanism=mechanism, key=key, chunk_size=chunk_size)
    return run([round_], PrivateRows.of(X_scaled, labels), executor=Serial())[0].estimates


def lpdt_fit(key, partition, mechanism, X_scaled, y, public_mean, *, strength=0.0, **kw):
    estimates = private_round(key, partition, mechanism, X_scaled, y, **kw)
    return lpdt_leaves(estimates, public_mean, min_ratio=0.0, strength=strength)


def lpct_fit(key, partition, mechanism, X_scaled, codes, public, *, lam, fallback="none"):
    estimates = private_round(key, partition, mechanism, X_scaled, codes)
    return lpct_leaves(estimates, public, lam=lam, fallback=fallback)


def lpct_pruned_fit(key, partition, mechanism, X_scaled, codes, public, **settings):
    estimates = private_round(key, partition, mechanism, X_scaled, codes)
    return lpct_pruned_leaves(partition, estimates, public, **settings)


def _noise_key(random_state: int, mechanism, partition):
    """The release key an estimator with ``random_state`` privatizes with."""
    _, key_noise = jax.random.split(as_key(random_state))
    return release_key(key_noise, mechanism, partition)


def _close(traced, host):
    traced, host = np.asarray(traced), np.asarray(host)
    assert traced.shape == host.shape
    scale = max(float(np.max(np.abs(host))), 1.0)
    np.testing.assert_allclose(traced, host, rtol=RTOL, atol=RTOL * scale)


@pytest.mark.parametrize("rule", ["max_edge", "cart"])
def test_lpdt_estimator_and_functional_fit_are_one_path(rule):
    X, y, Xq, yq = _regression()
    model = LPDTRegressor(epsilon=2.0, max_depth=3, rule=rule, random_state=7)
    model.fit(X, y, X_public=Xq, y_public=yq)
    key = _noise_key(7, model.mechanism_, model.partition_)
    fit = lpdt_fit(
        key,
        model.partition_,
        model.mechanism_,
        model.scaler_.transform(X),
        y,
        model.public_leaf_mean_,
        strength=model.shrinkage_,
    )
    assert model.readout_ == "shrink" and model.shrinkage_ > 0  # the default read-out
    np.testing.assert_array_equal(fit.values, model.leaf_values_)
    np.testing.assert_array_equal(fit.used_fallback, model.used_fallback_)
    np.testing.assert_array_equal(fit.estimates.count, model.estimates_.count)


def test_lpct_estimators_and_functional_fits_are_one_path():
    X, y, Xq, yq = _classification()
    model = LPCTClassifier(epsilon=2.0, max_depth=3, lam=0.5, random_state=3)
    model.fit(X, y, X_public=Xq, y_public=yq)
    key = _noise_key(3, model.mechanism_, model.partition_)
    codes = y.astype(np.int32)  # classes_ are 0, 1
    Xs = model.scaler_.transform(X)
    fit = lpct_fit(
        key, model.partition_, model.mechanism_, Xs, codes, model.public_class_counts_, lam=0.5
    )
    np.testing.assert_array_equal(fit.values, model.leaf_eta_)

    pruned = LPCTPrunedClassifier(epsilon=2.0, max_depth=4, min_depth=1, random_state=3)
    pruned.fit(X, y, X_public=Xq, y_public=yq)
    key = _noise_key(3, pruned.mechanism_, pruned.partition_)
    result = lpct_pruned_fit(
        key,
        pruned.partition_,
        pruned.mechanism_,
        pruned.scaler_.transform(X),
        codes,
        pruned.public_class_counts_,
        epsilon=2.0,
        max_depth=4,
        min_depth=1,
    )
    np.testing.assert_array_equal(result.leaf_node, pruned.leaf_node_)
    np.testing.assert_array_equal(result.leaf_eta, pruned.leaf_eta_[:, 1])


def test_vmapped_lpdt_fits_over_keys_equal_separate_fits():
    X, y, Xq, yq = _regression()
    partition = CartPartitioner(max_depth=3, min_samples_split=5, min_samples_leaf=2).fit(Xq, yq)
    mechanism = RRLaplaceMechanism(epsilon=2.0, label_bound=(-1.5, 1.5), budget_split=0.5)
    public_mean = cell_means(np.asarray(partition.cells(Xq)), yq, partition.n_leaves, 0.0)
    # under x64 the traced walk compares float32 rows with the float64 thresholds exactly, as
    # the host path does
    Xs, ys = X.astype(np.float32), y.astype(np.float32)
    keys = jax.random.split(jax.random.key(11), N_KEYS)

    def fit(key, part, rows, labels, fallback):
        return lpdt_fit(key, part, mechanism, rows, labels, fallback, chunk_size=1024)

    separate = [fit(k, partition, Xs, ys, public_mean) for k in keys]
    with jax.enable_x64(True):
        batched = jax.jit(jax.vmap(fit, in_axes=(0, None, None, None, None)))(
            keys, partition, Xs, ys, public_mean
        )
        assert batched.values.dtype == np.float64
    assert batched.values.shape == (N_KEYS, partition.n_leaves)
    assert batched.estimates.n == X.shape[0]
    for i, host in enumerate(separate):
        _close(batched.estimates.count[i], host.estimates.count)
        _close(batched.estimates.label_sum[i], host.estimates.label_sum)
        _close(batched.values[i], host.values)
        np.testing.assert_array_equal(batched.used_fallback[i], host.used_fallback)
    # the keys are used: different keys, different noise
    assert not np.allclose(separate[0].values, separate[1].values)


@pytest.mark.parametrize("n_classes", [2, 3])
@pytest.mark.slow
def test_vmapped_lpct_fits_over_keys_equal_separate_fits(n_classes):
    X, y, Xq, yq = _classification(n_classes=n_classes)
    partition = MaxEdgePartitioner(max_depth=3, min_samples_split=5, min_samples_leaf=2).fit(Xq)
    mechanism = LaplaceCellClassMechanism(epsilon=1.0, n_classes=n_classes)
    public = public_class_counts(
        np.asarray(partition.cells(Xq)).astype(np.int64), yq, partition.n_leaves, n_classes
    )
    Xs, codes = X.astype(np.float32), y.astype(np.int32)
    keys = jax.random.split(jax.random.key(12), N_KEYS)

    def fit(key, part, rows, labels, counts):
        return lpct_fit(key, part, mechanism, rows, labels, counts, lam=0.5, fallback="prior")

    separate = [fit(k, partition, Xs, codes, public) for k in keys]
    with jax.enable_x64(True):
        batched = jax.jit(jax.vmap(fit, in_axes=(0, None, None, None, None)))(
            keys, partition, Xs, codes, public
        )
    assert batched.values.shape == (N_KEYS, partition.n_leaves, n_classes)
    for i, host in enumerate(separate):
        _close(batched.values[i], host.values)
        np.testing.assert_array_equal(batched.used_fallback[i], host.used_fallback)
        np.testing.assert_array_equal(
            np.argmax(batched.values[i], axis=1), np.argmax(host.values, axis=1)
        )


@pytest.mark.slow
def test_vmapped_lpct_pruned_fits_over_keys_equal_separate_fits():
    X, y, Xq, yq = _classification(seed=4)
    partition = MaxEdgePartitioner(max_depth=5, min_samples_split=1, min_samples_leaf=1).fit(Xq)
    mechanism = LaplaceCellClassMechanism(epsilon=4.0, n_classes=2)
    public = public_class_counts(
        np.asarray(partition.cells(Xq)).astype(np.int64), yq, partition.n_leaves, 2
    )
    Xs, codes = X.astype(np.float32), y.astype(np.int32)
    keys = jax.random.split(jax.random.key(13), N_KEYS)
    settings = dict(epsilon=4.0, max_depth=5, min_depth=1, n_public=Xq.shape[0])

    def fit(key, part, rows, labels, counts):
        return lpct_pruned_fit(key, part, mechanism, rows, labels, counts, **settings)

    separate = [fit(k, partition, Xs, codes, public) for k in keys]
    with jax.enable_x64(True):
        batched = jax.jit(jax.vmap(fit, in_axes=(0, None, None, None, None)))(
            keys, partition, Xs, codes, public
        )
    for i, host in enumerate(separate):
        _close(batched.statistic[i], host.statistic)
        _close(batched.eta[i], host.eta)
        np.testing.assert_array_equal(batched.leaf_node[i], host.leaf_node)
    # the walk does prune somewhere, so the comparison covers internal nodes
    assert any(np.any(h.leaf_node != partition.leaf_nodes) for h in separate)


def test_float32_tracing_stays_close_to_the_float64_host_path():
    """Without x64 the traced debias is float32: relative error ~1e-6 of the count scale."""
    X, y, Xq, _ = _regression(n=1000)
    partition = MaxEdgePartitioner(max_depth=2, min_samples_split=5, min_samples_leaf=2).fit(Xq)
    mechanism = RRLaplaceMechanism(epsilon=2.0, label_bound=(-1.5, 1.5), budget_split=0.5)
    key = jax.random.key(0)
    Xs, ys = X.astype(np.float32), y.astype(np.float32)
    host = private_round(key, partition, mechanism, Xs, ys)
    traced = jax.jit(lambda k: private_round(k, partition, mechanism, Xs, ys))(key)
    assert traced.count.dtype == np.float32
    scale = X.shape[0]  # counts are differences of sums of order n
    np.testing.assert_allclose(traced.count, host.count, rtol=0, atol=1e-5 * scale)


def test_bad_inputs_are_refused_by_name():
    X, y, Xq, _ = _regression(n=50)
    partition = MaxEdgePartitioner(max_depth=1, min_samples_split=5, min_samples_leaf=2).fit(Xq)
    mechanism = RRLaplaceMechanism(epsilon=2.0, label_bound=(-1.5, 1.5), budget_split=0.5)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="same number of rows"):
        private_round(key, partition, mechanism, X, y[:10])
    with pytest.raises(ValueError, match="chunk_size"):
        private_round(key, partition, mechanism, X, y, chunk_size=0)
    public = np.ones((partition.n_leaves, 2))
    with pytest.raises(ValueError, match="lam"):
        lpct_leaves(None, public, lam=-1.0, fallback="none")
    with pytest.raises(ValueError, match="fallback"):
        lpct_leaves(None, public, lam=np.inf, fallback="nope")
    with pytest.raises(ValueError, match="finite lam"):
        lpct_leaves(None, public, lam=1.0, fallback="none")
