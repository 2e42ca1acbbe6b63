"""The one-round protocol shared by every tree estimator (partition, privatize, aggregate).

``check_fit_data`` validates private and public inputs together (``check_fit_rows`` leaves the
private sample to be read chunk by chunk: memory maps, iterables of chunks); ``run_round`` (on
arrays) and ``stream_round`` (on chunks) route the private rows through the published partition,
let each holder's record pass through the mechanism (the only place private data is touched) and
fold the reports into an aggregator chunk by chunk (``holder_summary`` is one chunk's share), so
memory is ``O(chunk_size * n_cells)`` whatever ``n``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

import jax
import numpy as np

from ldptree._jax_cache import default_compilation_cache
from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import (
    check_choice,
    check_label_bound,
    check_matrix,
    check_positive,
    check_vector,
)
from ldptree.accounting._ledger import PrivacyLedger
from ldptree.accounting._spend import PrivacySpend
from ldptree.estimators._aggregate import SumAggregator, SumState, to_host
from ldptree.estimators._pipeline import map_chunks
from ldptree.estimators._rows import LabelCheck, PrivateRows, private_rows
from ldptree.partitions._partition import Partition
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import CellEstimates, Mechanism, SupportsAggregateSimulation


def check_fit_data(
    X: Any, y: Any, X_public: Any, y_public: Any, *, check_labels: LabelCheck = check_vector
) -> tuple[FloatArray, Any, FloatArray | None, Any]:
    """Validated ``(X, y, X_public, y_public)``; no public data gives ``(.., None, None)``.

    ``check_labels(y, name, n=rows)`` validates both label vectors (real labels by default).
    Called first by every ``fit``, it also turns on the persistent compilation cache
    (:func:`~ldptree._jax_cache.default_compilation_cache`; ``LDPTREE_JAX_CACHE=off`` opts out).
    """
    default_compilation_cache()
    X_arr = check_matrix(X, "X")
    y_arr = check_labels(y, "y", n=X_arr.shape[0])
    return (X_arr, y_arr, *check_public_data(X_public, y_public, X_arr.shape[1], check_labels))


def check_fit_rows(
    X: Any, y: Any, X_public: Any, y_public: Any, *, check_labels: LabelCheck = check_vector
) -> tuple[PrivateRows, FloatArray | None, Any]:
    """As :func:`check_fit_data`, but the private sample is read chunk by chunk
    (:class:`~ldptree.estimators._rows.PrivateRows`: arrays, memory maps or an iterable of
    ``(X_chunk, y_chunk)`` pairs with ``y=None``), never copied as a whole."""
    default_compilation_cache()
    rows = private_rows(X, y, check_labels=check_labels)
    return (rows, *check_public_data(X_public, y_public, rows.n_features, check_labels))


def check_public_data(
    X_public: Any, y_public: Any, n_features: int, check_labels: LabelCheck
) -> tuple[FloatArray | None, Any]:
    """Validated ``(X_public, y_public)`` with ``n_features`` columns; ``(None, None)`` if none."""
    if X_public is None:
        if y_public is not None:
            raise ValueError("y_public was given without X_public; pass both or neither")
        return None, None
    Xq = check_matrix(X_public, "X_public", allow_empty=True)
    if Xq.shape[1] != n_features:
        raise ValueError(
            f"X_public has {Xq.shape[1]} features but X has {n_features}; they must match"
        )
    if Xq.shape[0] == 0:
        if y_public is not None:
            raise ValueError(
                "X_public is empty but y_public was given; pass X_public=None and y_public=None "
                "to fit without public data"
            )
        return None, None
    yq = None if y_public is None else check_labels(y_public, "y_public", n=Xq.shape[0])
    return Xq, yq


def fit_scaler(X_public: FloatArray | None, n_features: int, margin: float) -> RangeScaler:
    """Public min-max box, or the unit cube when there is no public data."""
    if X_public is None:
        return RangeScaler.unit(n_features)
    return RangeScaler.fit(X_public, margin=margin)


def resolve_label_bound(label_bound: Any, y_public: FloatArray | None) -> tuple[float, float]:
    """The label range ``(lo, hi)``: ``label_bound`` if given, else the public labels' range;
    never private labels (``ValueError`` when neither can set it). Either way it is rounded
    outward to float32 and must satisfy :func:`~ldptree._validation.check_label_bound`'s limits
    (``|lo|, |hi| <= 2^64``, ``hi - lo >= 2^-64``)."""
    if label_bound is not None:
        return check_label_bound(label_bound, "label_bound")
    if y_public is None:
        raise ValueError(
            "label_bound is required when no public labels are given: pass label_bound=M or "
            "(lo, hi), or y_public (the bound never comes from private labels)"
        )
    lo, hi = float(y_public.min()), float(y_public.max())
    if not lo < hi:
        raise ValueError(
            f"y_public is constant ({lo}), so it cannot set the label range; pass label_bound"
        )
    return check_label_bound((lo, hi), "label_bound (from the range of y_public)")


#: How a fit runs its private round: the protocol, or its in-law simulation.
SIMULATIONS = ("per_holder", "aggregate")


def check_simulation(value: Any) -> bool:
    """Whether ``simulation`` asks for the aggregate simulation; ``ValueError`` if unknown."""
    return check_choice(value, "simulation", SIMULATIONS) == "aggregate"


def release_key(key: PRNGKey, mechanism: Any, partition: Partition | None = None) -> PRNGKey:
    """The noise key of one release: ``key`` with a digest of what identifies the release (the
    published partition's arrays and the mechanism's parameters) folded in.

    Fits that reuse a ``random_state`` on the same holders but publish a different partition or
    mechanism then draw independent noise (with shared noise, comparing the two reports would
    cancel it: the XOR of two randomized-response vectors reveals both cells); the same
    configuration still reproduces bit for bit. This protects simulations from accidental reuse;
    a deployment draws each holder's randomness from the operating system (``ldptree.protocol``).
    """
    digest = hashlib.blake2b(repr(mechanism).encode(), digest_size=4)
    if partition is not None:
        for leaf in jax.tree_util.tree_leaves(partition):
            digest.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return jax.random.fold_in(key, int.from_bytes(digest.digest(), "little"))


def run_round(
    partition: Partition,
    mechanism: Mechanism,
    X_scaled: FloatArray,
    y: np.ndarray[Any, Any],
    *,
    key: PRNGKey,
    chunk_size: int,
    aggregate: bool = False,
) -> CellEstimates:
    """Privatize every private row and aggregate: the holders' and the curator's side in one loop.

    ``y`` holds what the mechanism takes as labels (real labels, or class codes). Holder ``i``'s
    randomness depends only on ``key`` and ``i`` whatever ``chunk_size``, and the statistics are
    exact integers, so the result does not depend on the chunking. A mechanism's optional
    ``privatize_summarize`` (equal to ``summarize(privatize(...))``) is used when present.

    ``aggregate=True`` is a *simulation* of the round: the rows are routed chunk by
    chunk as usual, but the mechanism's ``simulate_summary`` then draws the summed reports of all
    holders at once. It sees the whole private sample (the protocol never does) and is exact in
    law only as far as that mechanism documents; use it for experiments.
    """
    n = X_scaled.shape[0]
    starts = range(0, n, chunk_size)
    chunks = ((X_scaled[s : s + chunk_size], y[s : s + chunk_size]) for s in starts)
    return stream_round(
        partition, mechanism, chunks, key=key, chunk_size=chunk_size, aggregate=aggregate
    )


def stream_round(
    partition: Partition,
    mechanism: Mechanism,
    chunks: Iterable[tuple[FloatArray, np.ndarray[Any, Any]]],
    *,
    key: PRNGKey,
    chunk_size: int,
    aggregate: bool = False,
) -> CellEstimates:
    """:func:`run_round` over ``(X_scaled_chunk, labels_chunk)`` pairs of consecutive holders.

    Holders are numbered in the order their rows arrive; a chunk longer than ``chunk_size`` is
    split. Memory is one chunk (plus, for ``aggregate=True``, the routed cells and labels of all
    rows, which that simulation needs at once). The result equals :func:`run_round` on the
    concatenated chunks, bit for bit.
    """
    key = release_key(key, mechanism, partition)
    n_cells = partition.n_leaves
    if aggregate:
        if not isinstance(mechanism, SupportsAggregateSimulation):
            raise TypeError(
                f"{type(mechanism).__name__} cannot draw aggregate reports (no simulate_summary); "
                "use the per-holder protocol"
            )
        cells_parts: list[np.ndarray[Any, Any]] = []
        label_parts: list[np.ndarray[Any, Any]] = []
        # routed in large batches (one compiled call each): this simulation holds every row's
        # cell and label anyway, and a row's cell does not depend on the batch it is routed in
        for X_batch, y_batch in rebatch(chunks, AGGREGATE_ROUTING_ROWS):
            cells_parts.append(np.asarray(partition.cells(X_batch)))
            label_parts.append(np.asarray(y_batch))
        all_cells, labels = np.concatenate(cells_parts), np.concatenate(label_parts)
        summary = mechanism.simulate_summary(key, all_cells, labels, n_cells)
        return mechanism.debias(summary, all_cells.shape[0])
    aggregator = SumAggregator(mechanism=mechanism, n_cells=n_cells)

    def chunk_summary(X_chunk: FloatArray, y_chunk: np.ndarray[Any, Any], first: int) -> SumState:
        cells = partition.cells(X_chunk)
        return holder_summary(mechanism, key, cells, y_chunk, n_cells, first_holder=first)

    # chunks are summarised concurrently (reading overlaps the kernels; one chunk per host device
    # at a time) and merged in order: the same exact sums as a plain loop (``_pipeline``)
    state = aggregator.init()
    for part in map_chunks(chunk_summary, split_chunks(chunks, chunk_size)):
        state = aggregator.merge(state, part)
    return aggregator.finalize(state)


#: Rows routed per call by the aggregate simulation (a power of two: one compiled shape).
AGGREGATE_ROUTING_ROWS = 1 << 18


def rebatch(
    chunks: Iterable[tuple[FloatArray, np.ndarray[Any, Any]]], size: int
) -> Iterator[tuple[FloatArray, np.ndarray[Any, Any]]]:
    """The rows of ``chunks``, in order, regrouped into batches of exactly ``size`` rows (the
    last one shorter, none empty)."""
    X_parts: list[Any] = []
    y_parts: list[Any] = []
    held = 0
    for X_chunk, y_chunk in chunks:
        X_parts.append(np.asarray(X_chunk))
        y_parts.append(np.asarray(y_chunk))
        held += X_parts[-1].shape[0]
        if held < size:
            continue
        X_all, y_all = _joined(X_parts), _joined(y_parts)
        full = held - held % size
        for s in range(0, full, size):
            yield X_all[s : s + size], y_all[s : s + size]
        X_parts, y_parts, held = [X_all[full:]], [y_all[full:]], held - full
    if held:
        yield _joined(X_parts), _joined(y_parts)


def _joined(parts: list[Any]) -> Any:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def split_chunks(
    chunks: Iterable[tuple[FloatArray, np.ndarray[Any, Any]]], size: int
) -> Iterator[tuple[FloatArray, np.ndarray[Any, Any]]]:
    """Non-empty pieces of at most ``size`` rows, in order."""
    for X_chunk, y_chunk in chunks:
        for s in range(0, X_chunk.shape[0], size):
            yield X_chunk[s : s + size], y_chunk[s : s + size]


def holder_summary(
    mechanism: Mechanism,
    key: PRNGKey,
    cells: Any,
    y: np.ndarray[Any, Any],
    n_cells: int,
    *,
    first_holder: int,
) -> SumState:
    """The summed reports of holders ``first_holder, first_holder + 1, ...`` (one per row of
    ``cells``/``y``) as an aggregator state: the holders' side of the round for one chunk.

    Real labels are passed to the mechanism as float32 (its arithmetic), class codes as
    integers. Depends only on ``key``, the holder indices and the records, so chunks may be
    summarised anywhere (another process or machine) and merged with
    :meth:`SumAggregator.merge <ldptree.estimators._aggregate.SumAggregator.merge>`.
    """
    labels = jax.numpy.asarray(y)
    if jax.numpy.issubdtype(labels.dtype, jax.numpy.floating):
        labels = labels.astype(np.float32)
    m = int(labels.shape[0])
    fused = getattr(mechanism, "privatize_summarize", None)
    if fused is not None and m <= getattr(mechanism, "max_summary_rows", 0):
        stats = jax.tree_util.tree_map(
            to_host, fused(key, cells, labels, n_cells, first_holder=first_holder)
        )
        return SumState(n=m, stats=stats)
    aggregator = SumAggregator(mechanism=mechanism, n_cells=n_cells)
    reports = mechanism.privatize(key, cells, labels, n_cells, first_holder=first_holder)
    return aggregator.update(aggregator.init(), reports)


def budget_ledger(privacy_budget: Any) -> PrivacyLedger:
    """An empty ledger capped at ``privacy_budget`` (an epsilon; ``None`` means no cap).

    Estimators record their release in it *before* any private row is privatized, so a release
    over the cap fails with a ``ValueError`` and nothing is spent. The cap is on epsilon only:
    the delta a certificate reports for the mechanism as sampled is recorded, not capped.
    """
    if privacy_budget is None:
        return PrivacyLedger()
    return PrivacyLedger(
        budget=PrivacySpend(epsilon=check_positive(privacy_budget, "privacy_budget"), delta=1.0)
    )
