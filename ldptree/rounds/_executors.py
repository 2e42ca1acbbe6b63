"""Where the engine runs its rounds' pieces: the executors.

Every executor folds the same pieces (scaled rows and converted labels of consecutive holders)
into the same aggregator states, so each round's result is the same bit for bit whichever runs
it (tested). What a piece becomes depends on the capabilities of the round's components
(:class:`Job`): ``"summaries"`` (an aggregator that :class:`~ldptree.protocols.FoldsSummaries`
takes the piece's summed reports, through the mechanism's fused kernel when it has one),
``"records"`` (a :class:`~ldptree.protocols.SimulatesHolders` device takes the routed records,
in batches of :data:`~ldptree.rounds._chunks.ROUTING_ROWS`) or ``"reports"`` (``update`` takes
the piece's reports: any other aggregator, or a mechanism with extra record fields).

* :class:`Serial`: every piece in the calling thread. Pure given its inputs, so it runs under
  ``jax.jit``/``jax.vmap`` with traced keys, rows and partition (the loop is over pieces, whose
  shapes are static).
* :class:`Threads` (the default for one round): summaries computed in worker threads, one host
  device each, while the calling thread reads the next pieces (:func:`map_chunks`); a stream's
  short last piece is padded to the compiled length (:func:`~ldptree.rounds._chunks.mark_last`).
* :class:`Batched` (the default for several rounds, :func:`~ldptree.estimators.fit_many`): rounds
  whose mechanisms have :class:`~ldptree.protocols.FusedSummary` share their pieces and routes
  and run as vectorised kernel calls (:func:`~ldptree.mechanisms.summarize_many`).
* :class:`~ldptree.rounds.Dask` (:mod:`ldptree.rounds._dask`): pieces on a cluster.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal, Protocol, TypeVar, cast

import attrs
import jax
import numpy as np

from ldptree._validation import check_int
from ldptree.accounting._reuse import watch_key_use
from ldptree.mechanisms._batch import SummaryJob, summarize_many
from ldptree.protocols import (
    Aggregator,
    FoldsSummaries,
    FusedSummary,
    PreparesSummary,
    SimulatesHolders,
    declares,
)
from ldptree.rounds._chunks import ROUTING_ROWS, Piece, mark_last, numbered, pad_rows, rebatch
from ldptree.rounds._holders import field_names, holder_sums, mechanism_labels, record_fields
from ldptree.rounds._plan import Round
from ldptree.rounds._reports import Reports
from ldptree.rounds._resident import ResidentRound, kernel_block, on_accelerator, piece_rows
from ldptree.rounds._rows import PrivateRows, release_pages

Result = TypeVar("Result")
#: ``work(X_piece, y_piece, first_holder)``: one piece's summary.
Work = Callable[[Any, Any, int], Result]
Mode = Literal["summaries", "records", "reports"]


@attrs.frozen(eq=False)
class Job:
    """A round with its bound aggregator, release key (``None`` over reports) and ``mode``: what
    its pieces become (module docstring), from the capabilities of its components."""

    round: Round
    aggregator: Aggregator[Any]
    key: Any
    mode: Mode

    @classmethod
    def of(cls, r: Round) -> Job:
        aggregator = r.bind()
        mode: Mode = "reports"
        if declares(aggregator, SimulatesHolders):
            mode = "records"
        elif declares(aggregator, FoldsSummaries) and not field_names(r.mechanism):
            mode = "summaries"
        return cls(r, aggregator, r.key, mode)


class Executor(Protocol):
    """Folds rounds over private rows or released reports: every job's final state, in order."""

    def fold_rows(self, jobs: Sequence[Job], source: PrivateRows) -> list[Any]: ...

    def fold_reports(self, jobs: Sequence[Job], source: Reports) -> list[Any]: ...


def piece_summary(job: Job, X: Any, y: Any, first: int, holders: int | None = None) -> Any:
    """One piece's aggregator state in ``"summaries"`` mode: its rows routed, its holders'
    reports summed (the first ``holders`` rows; default all) and taken by ``from_summary``."""
    r, aggregator = job.round, cast(FoldsSummaries[Any], job.aggregator)
    m = int(X.shape[0]) if holders is None else holders
    cells = r.partition.cells(X)
    stats = holder_sums(
        r.mechanism, job.key, cells, y, r.n_cells, first_holder=first, holders=holders
    )
    return aggregator.from_summary(m, stats)


def piece_reports(job: Job, X: Any, y: Any, first: int) -> Any:
    """One piece's reports (``"reports"`` mode): each holder privatizes its record, with the
    extra fields the mechanism declares."""
    r, fields = job.round, record_fields(job.round.mechanism, X)
    cells, labels = r.partition.cells(X), mechanism_labels(y)
    return r.mechanism.privatize(job.key, cells, labels, r.n_cells, first_holder=first, **fields)


@attrs.frozen
class Serial:
    """Every piece in the calling thread, in holder order (module docstring)."""

    def fold_rows(self, jobs: Sequence[Job], source: PrivateRows) -> list[Any]:
        return [self.fold(job, source) for job in jobs]

    def fold(self, job: Job, source: PrivateRows) -> Any:
        """One round's final state."""
        if job.mode == "summaries":
            return self.fold_summaries(job, source)
        aggregator, state = job.aggregator, job.aggregator.init()
        if job.mode == "records":
            # this simulation holds every row's cell and label anyway: route in large batches
            # (one compiled call each); a row's cell does not depend on the batch it is routed in
            r, simulator = job.round, cast(SimulatesHolders[Any], aggregator)
            for first, X, y in numbered(rebatch(r.pieces(source), ROUTING_ROWS)):
                cells = r.partition.cells(X)
                state = simulator.update_records(state, job.key, cells, y, first_holder=first)
            return state
        for first, X, y in numbered(job.round.pieces(source)):
            state = aggregator.update(state, piece_reports(job, X, y, first))
        return state

    def fold_summaries(self, job: Job, source: PrivateRows) -> Any:
        aggregator, state = job.aggregator, job.aggregator.init()
        for first, X, y in numbered(job.round.pieces(source)):
            state = aggregator.merge(state, piece_summary(job, X, y, first))
        return state

    def fold_reports(self, jobs: Sequence[Job], source: Reports) -> list[Any]:
        states = []
        for job in jobs:
            aggregator, state = job.aggregator, job.aggregator.init()
            for part in source.parts:
                state = aggregator.update(state, source.load(part))
            states.append(state)
        return states


def _optional_rows(value: Any) -> int | None:
    return None if value is None else check_int(value, "piece_rows", minimum=1)


@attrs.frozen
class Threads(Serial):
    """A round's summaries computed in worker threads, one device each (module docstring);
    rounds of other modes run as :class:`Serial`.

    ``resident``: whether a round of summaries runs resident on the device
    (:mod:`ldptree.rounds._resident`: stored rows cross to the device, which scales, routes,
    privatizes and sums them). ``None`` (default): when the round's devices are accelerators;
    ``True``: also on a CPU (for tests: the host path is faster there); ``False``: never. The
    results are the same bit for bit. ``piece_rows``: holders per resident piece (default: per
    device, :func:`~ldptree.rounds._resident.piece_rows`); the round's own ``chunk_size`` sizes
    the host path's pieces."""

    resident: bool | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(bool))
    )
    piece_rows: int | None = attrs.field(default=None, converter=_optional_rows)

    def runs_resident(self, job: Job) -> bool:
        """Whether ``job`` (a round of summaries) runs resident on the device."""
        r = job.round
        wanted = on_accelerator(round_devices()) if self.resident is None else self.resident
        return (
            wanted
            and declares(r.mechanism, FusedSummary)
            and r.every_holder
            and ResidentRound.fits(r)
        )

    def fold_summaries(self, job: Job, source: PrivateRows) -> Any:
        if self.runs_resident(job):
            return self.fold_resident(job, source)
        size, mechanism = job.round.chunk_size, job.round.mechanism
        padded_at = [-1]  # first holder of the last piece when it is padded (see mark_last)

        def work(X: Any, y: Any, first: int) -> Any:
            holders = int(X.shape[0])
            if first == padded_at[0]:
                X, y = pad_rows(X, size), pad_rows(y, size)
            return piece_summary(job, X, y, first, holders)

        def prepare(X: Any, y: Any, first: int) -> None:
            # the kernel this piece will run, compiled while the piece is routed; only shapes
            # and dtypes are read (zeros stand in for the cells and the converted labels)
            rows = int(X.shape[0])
            labels = np.zeros(rows, dtype=mechanism_labels(y[:1], host=True).dtype)
            cells = np.zeros(rows, dtype=np.int32)
            cast(PreparesSummary, mechanism).prepare_summary(
                job.key, cells, labels, job.round.n_cells
            )

        pieces: Iterable[Piece] = job.round.pieces(source)
        fused = (
            declares(mechanism, FusedSummary)
            and size <= cast(FusedSummary, mechanism).max_summary_rows
        )
        if fused:
            pieces = mark_last(pieces, size, padded_at)
        aggregator, state = job.aggregator, job.aggregator.init()
        # merged in holder order
        early = fused and declares(mechanism, PreparesSummary)
        for part in map_chunks(work, pieces, prepare=prepare if early else None):
            state = aggregator.merge(state, part)
        return state

    def fold_resident(self, job: Job, source: PrivateRows) -> Any:
        """One round's state with its pieces resident on the device (module docstring of
        :mod:`ldptree.rounds._resident`); a suspect piece is summed again on the host path."""
        r, aggregator = job.round, job.aggregator
        device = round_devices()[0]
        rows = piece_rows(r, device, self.piece_rows)
        scaler, convert = r.scaler, r.labels

        def stored() -> Iterator[Piece]:
            chunks: Iterable[Piece] = source.chunks(rows, stored=True)
            if source.n is None:  # a stream's chunks may be short: full pieces move faster
                chunks = rebatch(chunks, rows)
            for X, y in chunks:
                if X.dtype not in (np.float32, np.float64):
                    X = np.asarray(X, dtype=np.float64)
                yield X, y if convert is None else convert(y)

        def routed(sample: Any) -> Any:  # what the host path signs: the rows it routes
            X = source.as_read(sample)
            return X if scaler is None else scaler.transform(X)

        signed = watch_key_use(job.key, stored(), rows=routed)
        items = ((X, mechanism_labels(y, host=True)) for X, y in signed)
        head = next(items, None)
        state = aggregator.init()
        if head is None:
            return state
        device_round = ResidentRound.of(r, job.key, rows, head[1][:1], block=kernel_block(device))

        def work(X: Any, y: Any, first: int) -> Any:
            stats = device_round.sums(X, y, first)
            # the reader dropped a memory map's pages when it moved on, before this transfer
            # read them back in: drop them again once the rows are on the device
            release_pages(X)
            if stats is not None:
                return cast(FoldsSummaries[Any], aggregator).from_summary(int(X.shape[0]), stats)
            # a suspect piece: scaled and routed on the host, exactly, in the round's pieces
            Xs = routed(X)
            part = aggregator.init()
            for start in range(0, int(X.shape[0]), r.chunk_size):
                end = start + r.chunk_size
                piece = piece_summary(job, Xs[start:end], y[start:end], first + start)
                part = aggregator.merge(part, piece)
            return part

        def prepare(X: Any, y: Any, first: int) -> None:
            device_round.prepare(device_round.padded(int(X.shape[0]), first))

        for part in map_chunks(work, itertools.chain([head], items), prepare=prepare):
            state = aggregator.merge(state, part)
        return state


def batchable(job: Job) -> bool:
    """Whether :class:`Batched` runs the round through the vectorised kernel."""
    mechanism = job.round.mechanism
    return (
        job.mode == "summaries"
        and declares(mechanism, FusedSummary)
        and job.round.chunk_size <= cast(FusedSummary, mechanism).max_summary_rows
    )


@attrs.frozen
class Batched(Threads):
    """Rounds over one source run together (module docstring): one read of the pieces per
    distinct scaling, label conversion and chunk size, one routing per distinct partition
    object, one vectorised kernel call per group of pieces that share a compiled shape. Each
    round keeps its own key, holders and mechanism, so its state is the one :class:`Threads`
    gives, bit for bit. The shared pieces and routes are held in memory for the whole call:
    this is for grids on data that fit in memory (and a source that can be read again)."""

    def fold_rows(self, jobs: Sequence[Job], source: PrivateRows) -> list[Any]:
        states: list[Any] = [None] * len(jobs)
        batched = [batchable(job) for job in jobs]
        rest = [i for i, job in enumerate(jobs) if not batched[i]]
        for i, state in zip(rest, super().fold_rows([jobs[i] for i in rest], source), strict=True):
            states[i] = state
        raw: dict[Hashable, list[Piece]] = {}  # as read: what the key-reuse watch signs
        read: dict[Hashable, list[Piece]] = {}
        routes: dict[Hashable, list[Any]] = {}
        summary_jobs: list[SummaryJob] = []
        owners: list[tuple[int, int]] = []  # (job, holders) of each summary job
        for i, job in enumerate(jobs):
            if not batched[i]:
                continue
            r = job.round
            states[i] = job.aggregator.init()
            rows_id = r.rows_id()
            if rows_id not in read:
                raw[rows_id] = list(r.pieces(source, watch=False))
                read[rows_id] = [(X, mechanism_labels(y, host=True)) for X, y in raw[rows_id]]
            # one read, every round's key; signed before the labels' float32 conversion, as the
            # other executors sign them (else a fit and a fit_many of the same data differ)
            for _ in watch_key_use(job.key, raw[rows_id]):
                pass
            route_id = (rows_id, id(r.partition))
            if route_id not in routes:
                routes[route_id] = [r.partition.cells(X) for X, _ in read[rows_id]]
            for first, cells, labels in numbered(
                zip(routes[route_id], (y for _, y in read[rows_id]), strict=True)
            ):
                mechanism = cast(FusedSummary, r.mechanism)  # batchable
                summary_jobs.append(
                    SummaryJob(mechanism, job.key, cells, labels, r.n_cells, first_holder=first)
                )
                owners.append((i, int(labels.shape[0])))
        for (i, m), stats in zip(owners, summarize_many(summary_jobs), strict=True):
            aggregator = cast(FoldsSummaries[Any], jobs[i].aggregator)  # batchable
            # in holder order, as the round merges its pieces
            states[i] = aggregator.merge(states[i], aggregator.from_summary(m, stats))
        return states


def round_devices() -> list[Any]:
    """The devices chunks are spread over: the default backend's local devices, or only the
    device (or platform) the caller chose with ``jax.default_device``."""
    chosen = getattr(jax.config, "jax_default_device", None)  # the calling thread's choice
    if chosen is None:
        return list(jax.local_devices())
    if isinstance(chosen, str):
        return list(jax.local_devices(backend=chosen))
    return [chosen]


def map_chunks(
    work: Work[Result], pieces: Iterable[Piece], *, prepare: Work[None] | None = None
) -> Iterator[Result]:
    """``work(X_chunk, y_chunk, first_holder)`` for consecutive pieces, results in order.

    A single piece runs in the calling thread; several go to one worker per device (at least two,
    so that reading overlaps the kernels: JAX and NumPy release the interpreter lock in theirs).
    Piece ``i`` runs on device ``i mod D`` with the same holder indices wherever it runs; at most
    ``workers + 1`` pieces are held; an error stops the round once the pieces in flight end.
    ``prepare(X_chunk, y_chunk, first_holder)``, if given, runs on the first piece beside its
    ``work``, on the same device, and its result is dropped: a process's first round compiles
    its kernels side by side (e.g. routing beside the fused kernel) instead of one after the other.
    """
    items = iter(pieces)
    head = list(itertools.islice(items, 2))
    if len(head) < 2 and (prepare is None or not head):
        for X_chunk, y_chunk in head:
            yield work(X_chunk, y_chunk, 0)
        return
    devices = round_devices()
    workers = max(2, len(devices))
    # JAX's context settings are per thread: the worker gets the caller's 64-bit mode (routing
    # compares in JAX's default float type) and its device
    x64 = bool(getattr(jax.config, "jax_enable_x64", False))  # untyped option

    def run(fn: Work[Any], device: Any, X_chunk: Any, y_chunk: Any, first: int) -> Any:
        with jax.default_device(device), jax.enable_x64(x64):
            return fn(X_chunk, y_chunk, first)

    with ThreadPoolExecutor(workers, thread_name_prefix="ldptree-round") as pool:
        pending: deque[Future[Result]] = deque()
        if prepare is not None:
            # not awaited: it only fills compile caches; an error in it is the piece's own
            # error, which `work` raises on the same inputs
            pool.submit(run, prepare, devices[0], *head[0], 0)
        start = 0
        try:
            for i, (X_chunk, y_chunk) in enumerate(itertools.chain(head, items)):
                device = devices[i % len(devices)]
                pending.append(pool.submit(run, work, device, X_chunk, y_chunk, start))
                start += int(X_chunk.shape[0])
                if len(pending) > workers:
                    yield pending.popleft().result()
            while pending:
                yield pending.popleft().result()
        finally:
            for future in pending:
                future.cancel()
