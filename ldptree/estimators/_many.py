"""Many fits of one data set at once: every round set up first, then run together.

A fit is: checks, the public partition, the mechanism and its charge (host work on public data);
then the *round*, where every holder privatizes its record and the curator sums the reports;
then the read-out. An estimator that supports staged fits (:class:`~ldptree.LPDTRegressor`,
:class:`~ldptree.LPCTClassifier`, :class:`~ldptree.LPCTPrunedClassifier`) splits ``fit`` at the
round (``_start_fit`` returns a :class:`RoundPlan` and the read-out that completes it, a
:class:`PendingFit`). :func:`fit_many` starts every fit, runs the rounds with :func:`run_rounds`
and completes them, so a grid over depths, leaf sizes and budget splits becomes:

* one routing of the private rows per distinct partition (a grid over the budget split, or
  epsilon, reuses the memoised partition of its depth and leaf size);
* one vectorised kernel call per group of rounds whose kernels share a compiled shape
  (:func:`ldptree.mechanisms.summarize_many`): on data of a few thousand rows a round costs more
  in dispatch than in arithmetic.

Rounds the batch cannot serve (a user aggregator, a mechanism outside the kit, one that needs
extra record fields, a chunk above the mechanism's ``max_summary_rows``) run as in ``fit``. Every
round keeps its own key, holders and mechanism, so each estimator ends **bit for bit** as
``estimator.fit(X, y, X_public=..., y_public=...)`` would leave it (tested): this is a faster
schedule, not another estimator.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, Generic, TypeVar

import attrs
import jax
import numpy as np

from ldptree._typing import FloatArray, PRNGKey
from ldptree.accounting._reuse import watch_key_use
from ldptree.estimators._aggregate import SumAggregator, SumState
from ldptree.estimators._protocol import (
    host_labels,
    release_key,
    split_chunks,
    stream_round,
    summary_state,
)
from ldptree.estimators._rows import PrivateRows
from ldptree.mechanisms._batch import SummaryJob, summarize_many
from ldptree.mechanisms._kit import KitMechanism
from ldptree.partitions._partition import Partition
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import AggregatorFactory, CellEstimates, Mechanism

T = TypeVar("T")


@attrs.frozen(eq=False)
class RoundPlan:
    """One fit's round as the estimator set it up: the private ``rows`` scaled by ``scaler``,
    their labels passed through ``labels`` (e.g. class labels to codes; ``None``: as they are),
    routed through ``partition``, privatized by ``mechanism`` with ``key`` (the fit's noise key;
    the release digest is folded in by the round) and summed by ``aggregator``."""

    partition: Partition
    mechanism: Mechanism
    rows: PrivateRows
    scaler: RangeScaler
    key: PRNGKey
    chunk_size: int
    aggregator: AggregatorFactory
    labels: Callable[[Any], Any] | None = None

    def chunks(self) -> Iterator[tuple[FloatArray, Any]]:
        """``(scaled rows, labels)`` pieces of at most ``chunk_size`` holders, in holder order."""
        convert = self.labels
        raw = (
            (self.scaler.transform(Xc), yc if convert is None else convert(yc))
            for Xc, yc in self.rows.chunks(self.chunk_size)
        )
        return split_chunks(raw, self.chunk_size)

    def run(self) -> CellEstimates:
        """The round as ``fit`` runs it (:func:`~ldptree.estimators._protocol.stream_round`)."""
        return stream_round(
            self.partition,
            self.mechanism,
            self.chunks(),
            key=self.key,
            chunk_size=self.chunk_size,
            aggregator=self.aggregator,
        )

    @property
    def batchable(self) -> bool:
        """Whether :func:`run_rounds` can run this round through the vectorised kernel."""
        return (
            self.aggregator is SumAggregator
            and isinstance(self.mechanism, KitMechanism)
            and not getattr(self.mechanism, "record_fields", ())
            and self.chunk_size <= self.mechanism.max_summary_rows
        )


@attrs.frozen(eq=False)
class PendingFit(Generic[T]):
    """A started fit: its round (``None`` when the fit collects no reports), and the read-out
    that completes the estimator from the round's estimates (:meth:`run` is ``fit``)."""

    round: RoundPlan | None
    finish: Callable[[CellEstimates | None], T]

    def run(self) -> T:
        """The fit: the round as ``fit`` runs it, then the read-out."""
        return self.finish(None if self.round is None else self.round.run())


def _rows_id(plan: RoundPlan) -> tuple[bytes, Any, int]:
    """Plans with equal ids read the same scaled rows and labels in the same chunks (given the
    same private data; the chunk size matters to the mechanism's ``max_summary_rows``)."""
    scaler = plan.scaler
    bounds = np.asarray(scaler.lo).tobytes() + np.asarray(scaler.hi).tobytes()
    return (bounds, plan.labels, plan.chunk_size)


def run_rounds(plans: Sequence[RoundPlan]) -> list[CellEstimates]:
    """The estimates of every round, equal to ``[plan.run() for plan in plans]`` bit for bit
    (module docstring). The rounds must read the same private rows (as in :func:`fit_many`):
    their scaled chunks and routes are shared between plans with equal scalers and the same
    partition object."""
    out: list[CellEstimates | None] = [None] * len(plans)
    scaled: dict[Hashable, list[tuple[FloatArray, Any]]] = {}
    routes: dict[Hashable, list[Any]] = {}
    jobs: list[SummaryJob] = []
    owners: list[tuple[int, int]] = []  # (plan, rows in the job) for each job
    for index, plan in enumerate(plans):
        if not plan.batchable:
            out[index] = plan.run()
            continue
        assert isinstance(plan.mechanism, KitMechanism)
        sid = _rows_id(plan)
        if sid not in scaled:
            scaled[sid] = [(Xc, host_labels(yc)) for Xc, yc in plan.chunks()]
        chunks = scaled[sid]
        route_id = (sid, id(plan.partition))
        if route_id not in routes:
            routes[route_id] = [plan.partition.cells(Xc) for Xc, _ in chunks]
        key = release_key(plan.key, plan.mechanism, plan.partition)
        for _ in watch_key_use(key, chunks):  # warns when this key privatized other data
            pass
        first = 0
        for (_, labels), cells in zip(chunks, routes[route_id], strict=True):
            m = int(labels.shape[0])
            jobs.append(
                SummaryJob(
                    plan.mechanism, key, cells, labels, plan.partition.n_leaves, first_holder=first
                )
            )
            owners.append((index, m))
            first += m
    parts: dict[int, list[SumState]] = {}
    for (index, m), stats in zip(owners, summarize_many(jobs), strict=True):
        parts.setdefault(index, []).append(summary_state(m, stats))
    for index, states in parts.items():
        plan = plans[index]
        bound = SumAggregator(mechanism=plan.mechanism, n_cells=plan.partition.n_leaves)
        state = bound.init()
        for part in states:  # in holder order, as the round merges its chunks
            state = bound.merge(state, part)
        out[index] = bound.finalize(state)
    for index, plan in enumerate(plans):
        if out[index] is None:  # a round with no holders: no chunk reached the batch
            out[index] = plan.run()
    return [estimates for estimates in out if estimates is not None]


def fit_many(
    estimators: Sequence[Any], X: Any, y: Any = None, *, X_public: Any = None, y_public: Any = None
) -> list[Any]:
    """Fit every estimator on the same data, with their rounds run together (module docstring).

    Each estimator ends exactly as ``estimator.fit(X, y, X_public=X_public, y_public=y_public)``
    leaves it; estimators without staged fits (``_start_fit``) are fitted with ``fit``. ``X``
    must be re-readable (an array or a memory map, not a one-shot iterable of chunks). The
    scaled rows and their routes are held in memory for the whole call (one copy per distinct
    scaling and chunk size, one route per distinct partition): this is for grids on data that
    fit in memory; stream a large data set through each estimator's ``fit``. Returns the fitted
    estimators in order."""
    if not isinstance(X, np.ndarray | jax.Array) and not hasattr(X, "__array__"):
        raise TypeError(
            "fit_many reads X once per distinct scaling, so X must be an array or a memory map, "
            f"got {type(X).__name__}"
        )
    pending: list[tuple[int, PendingFit[Any]]] = []
    fitted: list[Any] = list(estimators)
    for index, estimator in enumerate(estimators):
        start = getattr(estimator, "_start_fit", None)
        if start is None:
            fitted[index] = estimator.fit(X, y, X_public=X_public, y_public=y_public)
        else:
            pending.append((index, start(X, y, X_public=X_public, y_public=y_public)))
    with_round = [(index, p) for index, p in pending if p.round is not None]
    estimates = run_rounds([p.round for _, p in with_round if p.round is not None])
    done = {index: e for (index, _), e in zip(with_round, estimates, strict=True)}
    for index, p in pending:
        fitted[index] = p.finish(done.get(index))
    return fitted
