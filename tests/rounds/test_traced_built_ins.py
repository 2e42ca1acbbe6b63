"""Every built-in mechanism and every built-in read-out runs under ``jax.jit(jax.vmap(...))`` over
noise keys through the public functional path (a :class:`~ldptree.rounds.Round` run by the serial
executor, then :func:`~ldptree.estimators.lpdt_leaves` / :func:`~ldptree.estimators.lpct_leaves` /
:func:`~ldptree.estimators.lpct_pruned_leaves`), and agrees with the eager fit of each key.

Tolerance: eager code computes in float64 NumPy; the traced code runs inside
``jax.enable_x64(True)`` on the same integer sums (the reports are bit-identical). XLA divides by a
constant through its reciprocal (one extra rounding per division), so values agree to
``rtol=1e-12`` relative to their scale, not bit for bit. Deterministic (fixed seeds): no
false-failure rate.
"""

from __future__ import annotations

import attrs
import jax
import numpy as np
import pytest

from ldptree.estimators import lpct_leaves, lpct_pruned_leaves, lpdt_leaves
from ldptree.estimators._lpct_readout import public_class_counts, simplex_projection
from ldptree.estimators._readout import shrinkage_strength
from ldptree.partitions import MaxEdgePartitioner
from ldptree.partitions._partition import Partition
from ldptree.rounds import PrivateRows, Round, Serial, run
from ldptree.testing import BUILT_INS

# every built-in mechanism and read-out traced and vmapped: minutes (make test-slow, CI)
pytestmark = pytest.mark.slow

RTOL = 1e-12
N_KEYS = 2
N = 400
BOUND = (-1.0, 1.0)


def _data(classification: bool, n_classes: int):
    rng = np.random.default_rng(5)
    X = rng.random((N, 2)).astype(np.float32)
    Xq = rng.random((200, 2))
    if classification:
        y = np.minimum((X[:, 0] * n_classes).astype(np.int32), n_classes - 1)
        yq = np.minimum((Xq[:, 0] * n_classes).astype(np.int64), n_classes - 1)
    else:
        y = (np.sin(3 * X[:, 0]) + 0.2 * rng.normal(size=N)).astype(np.float32)
        yq = np.sin(3 * Xq[:, 0])
    return X, y, Xq, yq


def _partition(mechanism, Xq):
    if getattr(mechanism, "record_fields", ()):  # releases features: one cell (DECONV's design)
        return Partition.trivial(Xq.shape[1])
    return MaxEdgePartitioner(max_depth=3, min_samples_split=5, min_samples_leaf=2).fit(Xq)


def _estimates(key, partition, mechanism, X, y):
    round_ = Round(partition=partition, mechanism=mechanism, key=key, chunk_size=128)
    return run([round_], PrivateRows.of(X, y), executor=Serial())[0].estimates


def _close(traced, eager):
    traced, eager = np.asarray(traced), np.asarray(eager)
    assert traced.shape == eager.shape
    finite = np.isfinite(eager)  # lam = inf (public only) in a pruned walk
    np.testing.assert_array_equal(traced[~finite], eager[~finite])
    scale = max(float(np.max(np.abs(eager[finite]), initial=0.0)), 1.0)
    np.testing.assert_allclose(traced[finite], eager[finite], rtol=RTOL, atol=RTOL * scale)


def _compare(fit, keys, *args):
    eager = [fit(k, *args) for k in keys]
    with jax.enable_x64(True):
        batched = jax.jit(jax.vmap(fit, in_axes=(0,) + (None,) * len(args)))(keys, *args)
    leaves_b, tree_b = jax.tree_util.tree_flatten(batched)
    for i, one in enumerate(eager):
        leaves_e, tree_e = jax.tree_util.tree_flatten(one)
        assert tree_e == tree_b
        for b, e in zip(leaves_b, leaves_e, strict=True):
            _close(b[i], e)
    return eager


REGRESSION = [name for name, b in BUILT_INS.items() if b.task == "regression"]
CLASSIFICATION = [name for name, b in BUILT_INS.items() if b.task == "classification"]


def test_the_lists_cover_every_built_in():
    assert sorted(REGRESSION + CLASSIFICATION) == sorted(BUILT_INS)
    assert REGRESSION and CLASSIFICATION


@pytest.mark.parametrize("name", REGRESSION)
def test_regression_built_in_and_both_read_outs_under_jit_and_vmap(name):
    mechanism = BUILT_INS[name].make(2.0)
    X, y, Xq, yq = _data(False, 0)
    partition = _partition(mechanism, Xq)
    public_mean = np.full(partition.n_leaves, float(yq.mean()))
    # the shrunk read-out's strength; a mechanism without a variance gets a fixed one (the
    # read-out's code is the same)
    strength = shrinkage_strength(mechanism, partition.n_leaves, N, BOUND) or float(N)

    def fit(key, part, rows, labels, mean):
        estimates = _estimates(key, part, mechanism, rows, labels)
        ratio = lpdt_leaves(estimates, mean, min_ratio=0.0)
        shrunk = lpdt_leaves(estimates, mean, min_ratio=0.01, strength=strength)
        return ratio, shrunk

    keys = jax.random.split(jax.random.key(17), N_KEYS)
    eager = _compare(fit, keys, partition, X, y, public_mean)
    assert not np.allclose(eager[0][0].values, eager[1][0].values)  # the keys are used


@pytest.mark.parametrize("name", CLASSIFICATION)
@pytest.mark.parametrize("n_classes", [2, 3])
def test_class_built_in_and_every_read_out_under_jit_and_vmap(name, n_classes):
    mechanism = attrs.evolve(BUILT_INS[name].make(2.0), n_classes=n_classes)
    X, codes, Xq, yq = _data(True, n_classes)
    partition = _partition(mechanism, Xq)
    public = public_class_counts(
        np.asarray(partition.cells(Xq)).astype(np.int64), yq, partition.n_leaves, n_classes
    )
    depth = partition.depth

    def fit(key, part, rows, labels, counts):
        estimates = _estimates(key, part, mechanism, rows, labels)
        out = [
            lpct_leaves(estimates, counts, lam=lam, fallback=fallback)
            for lam, fallback in ((0.0, "none"), (0.5, "prior"), (np.inf, "none"))
        ]
        projected = simplex_projection(out[1].values)
        if n_classes != 2:
            return out, projected
        pruned = lpct_pruned_leaves(
            part,
            estimates,
            counts,
            epsilon=2.0,
            max_depth=depth,
            min_depth=1,
            n_public=Xq.shape[0],
        )
        reference = lpct_pruned_leaves(
            part,
            estimates,
            counts,
            epsilon=2.0,
            max_depth=depth,
            min_depth=0,
            rule="reference",
            n_public=Xq.shape[0],
        )
        return out, projected, pruned, reference

    keys = jax.random.split(jax.random.key(18 + n_classes), N_KEYS)  # other data, other keys
    eager = _compare(fit, keys, partition, X, codes, public)
    assert not np.allclose(eager[0][0][0].values, eager[1][0][0].values)
