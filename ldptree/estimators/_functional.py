"""Pure functional fits after the partition: one round of the protocol and a read-out.

Once the partition is grown (on public data) a fit is a pure function of the noise key, the
private rows and public per-cell statistics, composed only of protocol calls:

    route (Partition.cells) -> privatize_summarize (per chunk) -> SumAggregator.merge
        -> Mechanism.debias -> read-out

* :func:`lpdt_fit`: LPDT's leaf values ``f_j = s^_j / c^_j``, the public leaf mean where the
  debiased count is ``<= tau n`` (:func:`~ldptree.estimators._readout.ratio_with_fallback`);
* :func:`lpct_fit`: LPCT's ``eta_jk = (V^_jk + lam V^Q_jk) / (U^_j + lam U^Q_j)``
  (:mod:`~ldptree.estimators._lpct_readout`);
* :func:`lpct_pruned_fit`: LPCT-prune's per-leaf walk (:mod:`~ldptree.estimators._prune`).

The estimators' ``fit`` methods read out through the same ``*_leaves`` functions, and their round
(:func:`~ldptree.estimators._protocol.stream_round`) folds chunks with the same
:func:`~ldptree.estimators._protocol.fold_keyed`, so both give identical leaves for the same
noise key.

Every function runs unchanged under ``jax.jit`` and ``jax.vmap``: vectorising over keys,
``jax.jit(jax.vmap(lambda k: lpdt_fit(k, ...)))(keys)``, gives one compiled computation for many
repetitions. The key is the *release* key: estimators fold a digest of the mechanism and partition
into their noise key (:func:`~ldptree.estimators._protocol.release_key`, host-side hashing); pass
``release_key(key, mechanism, partition)`` to reproduce an estimator's fit. Traced arithmetic uses
JAX's canonical float: inside ``jax.enable_x64(True)`` it is float64 like the host path (and equal
to it: elementwise IEEE operations, integer sums), otherwise float32 (relative error ~1e-7).
Rows are routed after rounding to JAX's canonical float; pass ``X_scaled`` as float32 to route
exactly as the host path does whatever the x64 setting.

Privacy: these functions run the mechanism they are given; certifying it and charging its budget
(:func:`~ldptree.rounds._charge.certified_spend`) is the caller's job, as in the estimators.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import jax

from ldptree._typing import BoolArray, FloatArray, PRNGKey
from ldptree._validation import check_choice, check_int
from ldptree._xp import float_dtype, namespace
from ldptree.estimators._lpct_readout import (
    FALLBACKS,
    check_lam,
    class_prior,
    private_class_counts,
    weighted_eta,
)
from ldptree.estimators._protocol import fold_keyed
from ldptree.estimators._prune import PRUNE_RULES, PruneResult, node_stats, prune
from ldptree.estimators._readout import ratio_with_fallback, shrunk_ratio
from ldptree.partitions._partition import Partition
from ldptree.protocols import CellEstimates, Mechanism

__all__ = [
    "LeafFit",
    "lpct_fit",
    "lpct_leaves",
    "lpct_pruned_fit",
    "lpct_pruned_leaves",
    "lpdt_fit",
    "lpdt_leaves",
    "private_round",
]

#: Holders privatized per chunk unless told otherwise (memory ``O(chunk_size * n_cells)``).
DEFAULT_CHUNK = 65536


@attrs.frozen(eq=False)
class LeafFit:
    """A read-out: per-leaf ``values`` (LPDT: ``float[L]``; LPCT: ``eta``, ``float[L, K]``),
    where the fallback replaced the private estimate (``bool[L]``), and the private estimates
    it was read from (``None`` when nothing private was collected). A JAX pytree."""

    values: FloatArray
    used_fallback: BoolArray
    estimates: CellEstimates | None


jax.tree_util.register_pytree_node(
    LeafFit,
    lambda f: ((f.values, f.used_fallback, f.estimates), None),
    lambda _, c: LeafFit(values=c[0], used_fallback=c[1], estimates=c[2]),
)


def private_round(
    key: PRNGKey,
    partition: Partition,
    mechanism: Mechanism,
    X_scaled: Any,
    labels: Any,
    *,
    chunk_size: int = DEFAULT_CHUNK,
) -> CellEstimates:
    """Debiased cell estimates of one per-holder round over ``X_scaled`` (``float[n, d]``, scaled
    into the partition's cube) and ``labels`` (real labels or class codes, ``[n]``); holder ``i``
    is row ``i``, its randomness from ``key`` (a release key) and ``i`` alone."""
    chunk = check_int(chunk_size, "chunk_size", minimum=1)
    if X_scaled.shape[0] != labels.shape[0]:
        raise ValueError(
            f"X_scaled and labels must have the same number of rows, got {X_scaled.shape[0]} "
            f"and {labels.shape[0]}"
        )
    bound, state = fold_keyed(
        partition, mechanism, [(X_scaled, labels)], key=key, chunk_size=chunk, concurrent=False
    )
    return bound.finalize(state)


def lpdt_leaves(
    estimates: CellEstimates, public_mean: Any, *, min_ratio: float, strength: float = 0.0
) -> LeafFit:
    """LPDT's read-out: ``s^_j / c^_j`` (``strength = 0``, the reference) or the shrunk ratio
    ``(s^_j c^_j + a m_j) / (c^_j^2 + a)`` with ``a = strength`` and ``m = public_mean``
    (:func:`~ldptree.estimators._readout.shrunk_ratio`) where ``c^_j > min_ratio n``, else
    ``public_mean[j]``."""
    if strength == 0.0:
        values, fallback = ratio_with_fallback(estimates, public_mean, min_ratio=min_ratio)
    else:
        values, fallback = shrunk_ratio(
            estimates, public_mean, min_ratio=min_ratio, strength=strength
        )
    return LeafFit(values=values, used_fallback=fallback, estimates=estimates)


def lpdt_fit(
    key: PRNGKey,
    partition: Partition,
    mechanism: Mechanism,
    X_scaled: Any,
    y: Any,
    public_mean: Any,
    *,
    min_ratio: float = 0.0,
    strength: float = 0.0,
    chunk_size: int = DEFAULT_CHUNK,
) -> LeafFit:
    """LPDT after the partition: :func:`private_round` on real labels ``y``, then
    :func:`lpdt_leaves` with ``public_mean`` (``float[L]``, the fallback per leaf) and the
    shrinkage ``strength`` (``0``: the reference's ratio)."""
    estimates = private_round(key, partition, mechanism, X_scaled, y, chunk_size=chunk_size)
    return lpdt_leaves(estimates, public_mean, min_ratio=min_ratio, strength=strength)


def lpct_leaves(
    estimates: CellEstimates | None, public_classes: Any, *, lam: float, fallback: str
) -> LeafFit:
    """LPCT's read-out: ``eta`` (``float[L, K]``) for one ``lam`` from the private estimates and
    the public per-(cell, class) counts ``public_classes``; ``estimates=None`` (nothing private
    collected) only with ``lam = inf``."""
    lam = check_lam(lam)
    check_choice(fallback, "fallback", FALLBACKS)
    n_cells, n_classes = public_classes.shape
    xp = namespace(estimates, public_classes)
    if estimates is None:
        if not math.isinf(lam):
            raise ValueError(
                "no private estimates were collected (lam=inf, public only); a finite lam "
                "needs them"
            )
        dtype = float_dtype(xp)
        count, classes = xp.zeros(n_cells, dtype), xp.zeros((n_cells, n_classes), dtype)
    else:
        count, classes = estimates.count, private_class_counts(estimates, n_classes)
    eta, fell_back = weighted_eta(
        count,
        classes,
        public_classes,
        lam,
        fallback=fallback,
        prior=class_prior(public_classes),
    )
    return LeafFit(values=eta, used_fallback=fell_back, estimates=estimates)


def lpct_fit(
    key: PRNGKey,
    partition: Partition,
    mechanism: Mechanism,
    X_scaled: Any,
    codes: Any,
    public_classes: Any,
    *,
    lam: float,
    fallback: str = "none",
    chunk_size: int = DEFAULT_CHUNK,
) -> LeafFit:
    """LPCT after the partition: :func:`private_round` on integer class ``codes``, then
    :func:`lpct_leaves`."""
    estimates = private_round(key, partition, mechanism, X_scaled, codes, chunk_size=chunk_size)
    return lpct_leaves(estimates, public_classes, lam=lam, fallback=fallback)


def lpct_pruned_leaves(
    partition: Partition,
    estimates: CellEstimates,
    public_classes: Any,
    *,
    epsilon: float,
    max_depth: int,
    min_depth: int,
    rule: str = "corrected",
    c: float = 1.0,
    n_public: int | None = None,
) -> PruneResult:
    """LPCT-prune's read-out (binary): node statistics over the partition and each leaf's walk
    up its ancestors. ``n_public`` (public rows) defaults to the sum of ``public_classes``, which
    must then be concrete (it fixes constants of the statistic)."""
    check_choice(rule, "rule", PRUNE_RULES)
    counts = private_class_counts(estimates, 2)
    stats = node_stats(
        partition,
        estimates.count,
        counts[:, 1],
        public_classes.sum(axis=1),
        public_classes[:, 1],
        n_private=estimates.n,
        epsilon=epsilon,
        max_depth=max_depth,
        n_public=n_public,
    )
    return prune(partition, stats, min_depth=min_depth, rule=rule, c=c)


def lpct_pruned_fit(
    key: PRNGKey,
    partition: Partition,
    mechanism: Mechanism,
    X_scaled: Any,
    codes: Any,
    public_classes: Any,
    *,
    epsilon: float,
    max_depth: int,
    min_depth: int,
    rule: str = "corrected",
    c: float = 1.0,
    n_public: int | None = None,
    chunk_size: int = DEFAULT_CHUNK,
) -> PruneResult:
    """LPCT-prune after the (deep) partition: :func:`private_round`, then
    :func:`lpct_pruned_leaves`."""
    estimates = private_round(key, partition, mechanism, X_scaled, codes, chunk_size=chunk_size)
    return lpct_pruned_leaves(
        partition,
        estimates,
        public_classes,
        epsilon=epsilon,
        max_depth=max_depth,
        min_depth=min_depth,
        rule=rule,
        c=c,
        n_public=n_public,
    )
