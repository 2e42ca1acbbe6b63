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
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import jax
import numpy as np

from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import (
    check_choice,
    check_label_bound,
    check_matrix,
    check_positive,
    check_vector,
)
from ldptree.accounting._ledger import PrivacyLedger
from ldptree.accounting._reuse import watch_key_use
from ldptree.accounting._spend import PrivacySpend
from ldptree.estimators._aggregate import (
    SimulatedSumAggregator,
    SumAggregator,
    SumState,
    to_host,
)
from ldptree.estimators._pipeline import map_chunks
from ldptree.estimators._rows import LabelCheck, PrivateRows, private_rows
from ldptree.mechanisms._kit import KitMechanism
from ldptree.mechanisms._random import fold_in
from ldptree.partitions._builder import MAX_DATA_FREE_DEPTH
from ldptree.partitions._partition import Partition
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import (
    Aggregator,
    AggregatorFactory,
    CellEstimates,
    Mechanism,
    ReportT,
    SimulatesHolders,
    StatsT,
)


def check_fit_data(
    X: Any, y: Any, X_public: Any, y_public: Any, *, check_labels: LabelCheck = check_vector
) -> tuple[FloatArray, Any, FloatArray | None, Any]:
    """Validated ``(X, y, X_public, y_public)``; no public data gives ``(.., None, None)``.

    ``check_labels(y, name, n=rows)`` validates both label vectors (real labels by default).
    """
    X_arr = check_matrix(X, "X")
    y_arr = check_labels(y, "y", n=X_arr.shape[0])
    return (X_arr, y_arr, *check_public_data(X_public, y_public, X_arr.shape[1], check_labels))


def check_fit_rows(
    X: Any, y: Any, X_public: Any, y_public: Any, *, check_labels: LabelCheck = check_vector
) -> tuple[PrivateRows, FloatArray | None, Any]:
    """As :func:`check_fit_data`, but the private sample is read chunk by chunk
    (:class:`~ldptree.estimators._rows.PrivateRows`: arrays, memory maps or an iterable of
    ``(X_chunk, y_chunk)`` pairs with ``y=None``), never copied as a whole."""
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


def check_data_free_depth(max_depth: Any, mechanism_for: Callable[[int], Any], name: Any) -> None:
    """Without public data the partition splits every node down to ``max_depth``: refuse, before
    growing it (minutes at depth 20), a depth whose ``2**max_depth`` cells the mechanism
    ``mechanism_for(n_cells)`` cannot serve, naming ``max_depth``. Depths the partitioner itself
    refuses (``> MAX_DATA_FREE_DEPTH``) and non-integers are left to its message."""
    if isinstance(max_depth, bool) or not isinstance(max_depth, int):
        return
    if not 0 <= max_depth <= MAX_DATA_FREE_DEPTH:
        return
    try:
        mechanism_for(2**max_depth)
    except ValueError as err:
        raise ValueError(
            f"max_depth={max_depth} without public data makes a partition of 2**{max_depth} = "
            f"{2**max_depth:,} cells, which mechanism={name!r} cannot serve ({err}); pass public "
            "data (X_public) or a smaller max_depth"
        ) from None


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


def resolve_aggregator(aggregator: Any, simulation: Any = "per_holder") -> AggregatorFactory:
    """The aggregator factory of a fit: ``aggregator`` (``None``: the exact streaming sum,
    :class:`SumAggregator`), or :class:`SimulatedSumAggregator` for
    ``simulation="aggregate"`` (which then must not be combined with an ``aggregator``).
    ``TypeError`` for an ``aggregator`` that is not callable as ``(mechanism, n_cells)``."""
    simulated = check_simulation(simulation)
    if aggregator is None:
        return SimulatedSumAggregator if simulated else SumAggregator
    if not isinstance(aggregator, AggregatorFactory):
        raise TypeError(
            "aggregator must be None or a callable (mechanism, n_cells) -> Aggregator, such as "
            f"an aggregator class like SumAggregator; got {type(aggregator).__name__}"
        )
    if simulated:
        raise ValueError(
            "simulation='aggregate' chooses the aggregator (SimulatedSumAggregator); pass either "
            "it or aggregator=, not both"
        )
    return aggregator


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
    return fold_in(key, int.from_bytes(digest.digest(), "little"))


def run_round(
    partition: Partition,
    mechanism: Mechanism[ReportT, StatsT],
    X_scaled: FloatArray,
    y: np.ndarray[Any, Any],
    *,
    key: PRNGKey,
    chunk_size: int,
    aggregator: AggregatorFactory = SumAggregator,
) -> CellEstimates:
    """Privatize every private row and aggregate: the holders' and the curator's side in one loop.

    ``y`` holds what the mechanism takes as labels (real labels, or class codes). Holder ``i``'s
    randomness depends only on ``key`` and ``i`` whatever ``chunk_size``, and the statistics are
    exact integers, so the result does not depend on the chunking. A mechanism's optional
    ``privatize_summarize`` (equal to ``summarize(privatize(...))``) is used when present.

    ``aggregator`` is bound to the mechanism and the partition's size (``aggregator(mechanism,
    n_cells)``; default the exact streaming sum). ``SimulatedSumAggregator`` is a *simulation*
    of the round: it keeps the routed records and draws the summed reports of all holders at
    once; it sees the whole private sample (the protocol never does), so it is for experiments.
    """
    n = X_scaled.shape[0]
    starts = range(0, n, chunk_size)
    chunks = ((X_scaled[s : s + chunk_size], y[s : s + chunk_size]) for s in starts)
    return stream_round(
        partition, mechanism, chunks, key=key, chunk_size=chunk_size, aggregator=aggregator
    )


def stream_round(
    partition: Partition,
    mechanism: Mechanism[ReportT, StatsT],
    chunks: Iterable[tuple[FloatArray, np.ndarray[Any, Any]]],
    *,
    key: PRNGKey,
    chunk_size: int,
    aggregator: AggregatorFactory = SumAggregator,
) -> CellEstimates:
    """:func:`run_round` over ``(X_scaled_chunk, labels_chunk)`` pairs of consecutive holders.

    Holders are numbered in the order their rows arrive; a chunk longer than ``chunk_size`` is
    split. Each chunk is routed, privatized by the mechanism (the holders' side) and folded into
    the bound aggregator with ``update`` (:func:`fold_chunk`), then ``finalize`` gives the
    estimates. Memory is one chunk plus the aggregator's state. The result equals
    :func:`run_round` on the concatenated chunks, bit for bit.
    """
    bound, state = fold_round(
        partition, mechanism, chunks, key=key, chunk_size=chunk_size, aggregator=aggregator
    )
    return bound.finalize(state)


def fold_round(
    partition: Partition,
    mechanism: Mechanism[ReportT, StatsT],
    chunks: Iterable[tuple[FloatArray, np.ndarray[Any, Any]]],
    *,
    key: PRNGKey,
    chunk_size: int,
    aggregator: AggregatorFactory = SumAggregator,
) -> tuple[Aggregator[Any], Any]:
    """:func:`stream_round` up to ``finalize``: the bound aggregator and its final state (for a
    read-out that needs more than the estimates, e.g. the kept reports of a
    :class:`~ldptree.estimators.ReportCollector`)."""
    key = release_key(key, mechanism, partition)
    chunks = watch_key_use(key, chunks)  # warns when this key privatized other data before
    return fold_keyed(
        partition, mechanism, chunks, key=key, chunk_size=chunk_size, aggregator=aggregator
    )


def fold_keyed(
    partition: Partition,
    mechanism: Mechanism[ReportT, StatsT],
    chunks: Iterable[tuple[FloatArray, np.ndarray[Any, Any]]],
    *,
    key: PRNGKey,
    chunk_size: int,
    aggregator: AggregatorFactory = SumAggregator,
    concurrent: bool = True,
) -> tuple[Aggregator[Any], Any]:
    """:func:`fold_round` with the noise key already derived (no release digest folded in): route
    each chunk, summarise its holders' reports, fold them into the aggregator.

    ``concurrent`` lets the default aggregator summarise chunks in worker threads
    (:mod:`~ldptree.estimators._pipeline`; identical sums). With ``concurrent=False`` it is pure
    given its inputs, so it also runs under ``jax.jit``/``jax.vmap`` with traced keys, chunks
    and partition (the loop is over chunks, whose shapes are static)."""
    n_cells = partition.n_leaves
    bound = aggregator(mechanism, n_cells)
    state = bound.init()
    if concurrent and type(bound) is SumAggregator and not getattr(mechanism, "record_fields", ()):
        padded_at = [-1]  # first holder of the last piece when it is padded (see mark_last)
        pads = isinstance(mechanism, KitMechanism) and chunk_size <= mechanism.max_summary_rows

        def chunk_summary(X_chunk: FloatArray, y_chunk: np.ndarray[Any, Any], first: int) -> Any:
            holders = int(X_chunk.shape[0])
            if first == padded_at[0]:
                X_chunk, y_chunk = pad_rows(X_chunk, chunk_size), pad_rows(y_chunk, chunk_size)
            cells = partition.cells(X_chunk)
            return holder_summary(
                mechanism, key, cells, y_chunk, n_cells, first_holder=first, holders=holders
            )

        # chunks are summarised concurrently (reading overlaps the kernels; one chunk per host
        # device at a time) and merged in order: the same exact sums as the loop below
        pieces = split_chunks(chunks, chunk_size)
        if pads:
            pieces = mark_last(pieces, chunk_size, padded_at)
        for part in map_chunks(chunk_summary, pieces):
            state = bound.merge(state, part)
        return bound, state
    if isinstance(bound, SimulatesHolders):
        # this simulation holds every row's cell and label anyway: route in large batches (one
        # compiled call each); a row's cell does not depend on the batch it is routed in
        pieces = rebatch(chunks, AGGREGATE_ROUTING_ROWS)
    else:
        pieces = split_chunks(chunks, chunk_size)
    start = 0
    for X_chunk, y_chunk in pieces:
        cells = partition.cells(X_chunk)
        fields = record_fields(mechanism, X_chunk)
        state = fold_chunk(
            bound, state, mechanism, key, cells, y_chunk, n_cells, first_holder=start, **fields
        )
        start += X_chunk.shape[0]
    return bound, state


def record_fields(mechanism: Mechanism, X_chunk: FloatArray) -> dict[str, Any]:
    """The extra per-holder inputs the mechanism declares in ``record_fields`` (see
    :mod:`~ldptree.estimators._fits`): the round can supply ``features``, the holder's scaled
    feature vector (a mechanism releasing it runs on the trivial partition)."""
    names = tuple(getattr(mechanism, "record_fields", ()))
    unknown = [name for name in names if name != "features"]
    if unknown:
        raise TypeError(
            f"{type(mechanism).__name__} needs record fields {unknown} that the round cannot "
            "supply (it supplies the cell, the label and features=)"
        )
    return {"features": X_chunk} if names else {}


def fold_chunk(
    aggregator: Aggregator[Any],
    state: Any,
    mechanism: Mechanism,
    key: PRNGKey,
    cells: Any,
    y: np.ndarray[Any, Any],
    n_cells: int,
    *,
    first_holder: int,
    **fields: Any,
) -> Any:
    """One chunk of holders ``first_holder, ...`` folded into ``state``: each holder privatizes
    its record (``mechanism.privatize``, with the extra record ``fields`` it declares) and the
    aggregator's ``update`` takes the reports.

    Two strategies replace that step: the exact :class:`SumAggregator` takes the chunk's summed
    reports from :func:`holder_summary` (the same state, through the mechanism's fused kernel when
    it has one); an aggregator with ``update_records`` (:class:`~ldptree.protocols.
    SimulatesHolders`, a simulation device) takes the records themselves.
    """
    if isinstance(aggregator, SimulatesHolders):
        return aggregator.update_records(state, key, cells, y, first_holder=first_holder)
    if type(aggregator) is SumAggregator and not fields:  # its update, through the fused kernel
        return aggregator.merge(
            state, holder_summary(mechanism, key, cells, y, n_cells, first_holder=first_holder)
        )
    reports = mechanism.privatize(
        key, cells, holder_labels(y), n_cells, first_holder=first_holder, **fields
    )
    return aggregator.update(state, reports)


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


def mark_last(
    pieces: Iterable[tuple[FloatArray, np.ndarray[Any, Any]]], size: int, padded_at: list[int]
) -> Iterator[tuple[FloatArray, np.ndarray[Any, Any]]]:
    """``pieces`` unchanged and in order; just before the last one is yielded, ``padded_at[0]``
    becomes its first holder's index if it is shorter than ``size`` and follows a piece of
    ``size`` rows. That piece may then be padded to ``size`` rows and summarised by the kernel
    the full pieces already compiled (one compiled shape per stream). A lone short piece, or a
    stream of short pieces, is left at its own size: padding it would only add work."""
    start, full, held = 0, False, None
    for piece in pieces:
        if held is not None:
            yield held
            start += int(held[0].shape[0])
            full = full or int(held[0].shape[0]) == size
        held = piece
    if held is not None:
        if full and int(held[0].shape[0]) < size:
            padded_at[0] = start
        yield held


def pad_rows(a: Any, rows: int) -> np.ndarray[Any, Any]:
    """``a`` (on the host) followed by zero rows up to ``rows`` rows."""
    a = np.asarray(a)
    out = np.zeros((rows, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def holder_summary(
    mechanism: Mechanism,
    key: PRNGKey,
    cells: Any,
    y: np.ndarray[Any, Any],
    n_cells: int,
    *,
    first_holder: int,
    holders: int | None = None,
) -> SumState:
    """The summed reports of holders ``first_holder, first_holder + 1, ...`` (one per row of
    ``cells``/``y``) as an aggregator state: the holders' side of the round for one chunk.

    ``holders`` (default: every row) counts the holders when the rows after them only pad the
    chunk to an already compiled length (:meth:`KitMechanism.privatize_summarize
    <ldptree.mechanisms.KitMechanism.privatize_summarize>`'s ``n_holders``); the result is that
    of the first ``holders`` rows alone.

    Real labels are passed to the mechanism as float32 (its arithmetic), class codes as
    integers. Depends only on ``key``, the holder indices and the records, so chunks may be
    summarised anywhere (another process or machine) and merged with
    :meth:`SumAggregator.merge <ldptree.estimators._aggregate.SumAggregator.merge>`.
    """
    # the kit checks and pads records on the host: a device copy of the labels would only be
    # copied back; any other mechanism gets them as JAX arrays, as before
    labels = host_labels(y) if isinstance(mechanism, KitMechanism) else holder_labels(y)
    rows = int(labels.shape[0])
    m = rows if holders is None else holders
    extra: dict[str, int] = {}
    if m < rows:  # the kit's kernel masks the padding rows; any other mechanism sees m rows
        if isinstance(mechanism, KitMechanism):
            extra = {"n_holders": m}
        else:
            cells, labels = cells[:m], labels[:m]
    fused = getattr(mechanism, "privatize_summarize", None)
    if fused is not None and m <= getattr(mechanism, "max_summary_rows", 0):
        return summary_state(
            m, fused(key, cells, labels, n_cells, first_holder=first_holder, **extra)
        )
    if extra:
        cells, labels = cells[:m], labels[:m]
    aggregator = SumAggregator(mechanism=mechanism, n_cells=n_cells)
    reports = mechanism.privatize(key, cells, labels, n_cells, first_holder=first_holder)
    return aggregator.update(aggregator.init(), reports)


def summary_state(m: int, stats: Any) -> SumState:
    """The aggregator state of ``m`` holders' summed reports ``stats``, widened for exact
    summation (:func:`~ldptree.estimators._aggregate.to_host`)."""
    return SumState(n=m, stats=jax.tree_util.tree_map(to_host, stats))


def host_labels(y: Any) -> Any:
    """:func:`holder_labels` without the transfer: concrete labels as a NumPy array (real labels
    as float32, rounded to nearest as on the device; class codes as they are), traced ones as
    :func:`holder_labels` gives them."""
    if isinstance(y, jax.core.Tracer):
        return holder_labels(y)
    host = np.asarray(y)
    if jax.numpy.issubdtype(host.dtype, jax.numpy.floating):
        host = host.astype(np.float32)
    return host


def holder_labels(y: Any) -> jax.Array:
    """Labels as the holders pass them to the mechanism: real labels as float32 (its
    arithmetic), class codes as integers."""
    if isinstance(y, jax.core.Tracer):
        labels = jax.numpy.asarray(y)
        if jax.numpy.issubdtype(labels.dtype, jax.numpy.floating):
            labels = labels.astype(np.float32)
        return labels
    # concrete labels are converted on the host and transferred, which runs no jitted program
    # (jnp.asarray traces one per new shape); integer codes get JAX's canonical integer dtype
    out: jax.Array = jax.device_put(host_labels(y))
    return out


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
