"""The streaming sum aggregator: a commutative monoid over a mechanism's sufficient statistics.

``update`` summarises a batch of reports with ``mechanism.summarize`` (jitted; exact integer sums
for the built-in mechanisms) and adds the result into a host-side state held in int64/float64, so
memory is bounded by one batch whatever the number of holders, and ``merge`` of two states is
plain addition. Integer statistics make the result bitwise identical for any chunking, any order
of ``update`` calls and any tree of ``merge`` calls. The aggregator never sees a raw record.

:class:`ReportCollector` sums as :class:`SumAggregator` does and also keeps every report, for a
read-out that needs the reports themselves (DECONV's kernel regression on released features).

:class:`SimulatedSumAggregator` is the aggregate simulation (``simulation="aggregate"``) as an
aggregator: a simulation device that keeps the routed records and draws the summed reports at
``finalize``; it sees private data, so it is for experiments only.

Under ``jax.jit``/``jax.vmap`` (traced reports or states) the same code runs in ``jax.numpy``:
sums are held in JAX's widest enabled integer (int64 inside ``jax.enable_x64(True)``, else int32,
which is exact up to the mechanism's ``max_summary_rows`` reports; more is refused). ``SumState``
is a pytree, so a state can cross a ``jit`` boundary.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import PRNGKey
from ldptree._xp import float_dtype, int_dtype, is_traced, namespace
from ldptree.protocols import (
    CellEstimates,
    Mechanism,
    SimulatesFromCounts,
    SupportsAggregateSimulation,
    declares,
)


def add_stats(a: Any, b: Any) -> Any:
    """Leaf-by-leaf sum of two statistics pytrees (NumPy on host arrays, JAX on traced ones)."""
    return jax.tree_util.tree_map(lambda x, y: x + y, a, b)


def to_host(x: Any) -> Any:
    """``x`` widened for exact summation: int64/float64 on the host; under a trace the widest
    dtypes JAX enables (:func:`~ldptree._xp.int_dtype`, :func:`~ldptree._xp.float_dtype`)."""
    xp = namespace(x)
    arr = xp.asarray(x)
    if xp.issubdtype(arr.dtype, xp.integer):
        return arr.astype(int_dtype(xp))
    return arr.astype(float_dtype(xp))


def summary_batches(mechanism: Mechanism, reports: Any, n_cells: int) -> Iterator[tuple[int, Any]]:
    """``(m, stats)`` for consecutive batches of ``reports``: ``m`` reports each (at most the
    mechanism's ``max_summary_rows``) and their ``summarize`` statistics, widened by
    :func:`to_host`."""
    leaves = jax.tree_util.tree_leaves(reports)
    if not leaves:
        raise ValueError("reports must be a non-empty pytree of arrays")
    n = int(leaves[0].shape[0])
    step = max(int(getattr(mechanism, "max_summary_rows", n) or n), 1)
    for start in range(0, n, step):
        batch = jax.tree_util.tree_map(lambda a, s=start: a[s : s + step], reports)
        stats = jax.tree_util.tree_map(to_host, mechanism.summarize(batch, n_cells))
        yield min(step, n - start), stats


@attrs.frozen(eq=False)
class SumState:
    """Aggregated statistics of ``n`` reports (``stats`` is ``None`` before the first batch)."""

    n: int = 0
    stats: Any = None


jax.tree_util.register_pytree_node(
    SumState, lambda s: ((s.stats,), s.n), lambda n, children: SumState(n=n, stats=children[0])
)


@attrs.frozen
class SumAggregator:
    """Per-cell sums of ``mechanism``'s statistics over a partition with ``n_cells`` cells."""

    mechanism: Mechanism
    n_cells: int

    def init(self) -> SumState:
        return SumState()

    def update(self, state: SumState, reports: Any) -> SumState:
        for n, stats in summary_batches(self.mechanism, reports, self.n_cells):
            state = self.merge(state, self.from_summary(n, stats))
        return state

    def from_summary(self, n: int, stats: Any) -> SumState:
        """The state of ``n`` holders whose summed statistics are ``stats``
        (:class:`~ldptree.protocols.FoldsSummaries`), widened for exact summation."""
        return SumState(n=n, stats=jax.tree_util.tree_map(to_host, stats))

    def merge(self, a: SumState, b: SumState) -> SumState:
        if a.stats is None:
            return SumState(n=a.n + b.n, stats=b.stats)
        if b.stats is None:
            return SumState(n=a.n + b.n, stats=a.stats)
        if is_traced(a.stats, b.stats) and np.dtype(int_dtype(jnp)).itemsize < 8:
            limit = int(getattr(self.mechanism, "max_summary_rows", 0) or 0)
            if a.n + b.n > limit:
                raise ValueError(
                    f"traced sums of {a.n + b.n} reports may overflow int32 (exact up to "
                    f"max_summary_rows={limit}); trace inside jax.enable_x64(True)"
                )
        return SumState(n=a.n + b.n, stats=add_stats(a.stats, b.stats))

    def finalize(self, state: SumState) -> CellEstimates:
        if state.stats is None:
            raise ValueError("no reports were aggregated; call update with at least one report")
        return self.mechanism.debias(state.stats, state.n)


@attrs.frozen(eq=False)
class CollectedState:
    """The running sums (``total``) and the reports of every chunk, in holder order."""

    total: SumState = SumState()
    reports: tuple[Any, ...] = ()


@attrs.frozen
class ReportCollector:
    """:class:`SumAggregator` that also keeps the reports: ``finalize`` gives the same estimates,
    and :meth:`reports` the concatenated reports of all holders (``O(n)`` memory: a read-out on
    the reports themselves, e.g. DECONV's deconvolution kernel, needs them). The reports are what
    the holders released, so keeping them costs no privacy."""

    mechanism: Mechanism
    n_cells: int

    def _sum(self) -> SumAggregator:
        return SumAggregator(self.mechanism, self.n_cells)

    def init(self) -> CollectedState:
        return CollectedState()

    def update(self, state: CollectedState, reports: Any) -> CollectedState:
        summed = self._sum().update(SumState(), reports)
        return self.merge(state, CollectedState(summed, (reports,)))

    def merge(self, a: CollectedState, b: CollectedState) -> CollectedState:
        return CollectedState(self._sum().merge(a.total, b.total), a.reports + b.reports)

    def finalize(self, state: CollectedState) -> CellEstimates:
        return self._sum().finalize(state.total)

    def reports(self, state: CollectedState) -> Any:
        """All kept reports as one pytree of host arrays (leading holder axis)."""
        if not state.reports:
            raise ValueError("no reports were aggregated; call update with at least one report")
        return jax.tree_util.tree_map(
            lambda *parts: np.concatenate([np.asarray(p) for p in parts]), *state.reports
        )


@attrs.frozen(eq=False)
class SimulatedState:
    """What the records seen so far need for the draw: their ``counts`` per (cell, label level)
    when the mechanism's levels are exact (:class:`~ldptree.protocols.SimulatesFromCounts`),
    else the routed records ``cells``/``labels`` themselves (one array per chunk, in holder
    order); and the release's noise ``key`` (``None`` before the first chunk)."""

    cells: tuple[np.ndarray[Any, Any], ...] = ()
    labels: tuple[np.ndarray[Any, Any], ...] = ()
    key: PRNGKey | None = None
    counts: np.ndarray[Any, Any] | None = None


@attrs.frozen
class SimulatedSumAggregator:
    """A simulation device, not the protocol: the aggregate simulation as an aggregator.

    Instead of privatizing every holder and summing the reports, it keeps what the draw needs
    and at ``finalize`` draws the *sums* of all holders' reports at once with the mechanism's
    ``simulate_summary``, then debiases them: ``finalize(state) = debias(simulate_summary(key,
    cells, labels, L), n)``. A mechanism that :class:`~ldptree.protocols.SimulatesFromCounts`
    (every kit mechanism with class labels) needs only the records' counts per (cell, label
    level): memory ``O(L K)`` whatever the number of holders, the same draws bit for bit.
    Otherwise (real labels, rounded to levels at random) the routed records are kept, ``O(n)``
    memory. The
    summed statistics are drawn from the law of ``sum_i summarize(privatize(record_i))`` (exactly,
    or as closely as that mechanism documents) in ``O(L)`` instead of ``O(n L)`` time. It reads
    the whole private sample, which a curator never does: use it for experiments only
    (``simulation="aggregate"``). ``merge`` concatenates records in order (``a``'s holders first).

    ``update`` (reports) is refused: there are no reports in a simulated round.
    """

    mechanism: Mechanism
    n_cells: int

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.mechanism, SupportsAggregateSimulation):
            raise TypeError(
                f"{type(self.mechanism).__name__} cannot draw aggregate reports (no "
                "simulate_summary); use the per-holder protocol (simulation='per_holder')"
            )

    def init(self) -> SimulatedState:
        return SimulatedState()

    def update_records(
        self, state: SimulatedState, key: PRNGKey, cells: Any, labels: Any, *, first_holder: int
    ) -> SimulatedState:
        del first_holder  # records are kept in order; the draw at finalize is for all of them
        counts = None
        if declares(self.mechanism, SimulatesFromCounts):
            counting = cast(SimulatesFromCounts, self.mechanism)
            counts = counting.record_counts(cells, labels, self.n_cells)
        if counts is not None:
            return self.merge(state, SimulatedState(key=key, counts=counts))
        return self.merge(
            state, SimulatedState((np.asarray(cells),), (np.asarray(labels),), key=key)
        )

    def update(self, state: SimulatedState, reports: Any) -> SimulatedState:
        raise TypeError(
            "SimulatedSumAggregator simulates the holders' side and takes records "
            "(update_records), not reports; use SumAggregator to aggregate reports"
        )

    def merge(self, a: SimulatedState, b: SimulatedState) -> SimulatedState:
        if a.counts is None or b.counts is None:
            counts = a.counts if b.counts is None else b.counts
        else:
            counts = a.counts + b.counts
        return SimulatedState(
            a.cells + b.cells,
            a.labels + b.labels,
            key=a.key if a.key is not None else b.key,
            counts=counts,
        )

    def finalize(self, state: SimulatedState) -> CellEstimates:
        if state.key is None or not (state.cells or state.counts is not None):
            raise ValueError("no records were aggregated; call update_records at least once")
        mechanism = self.mechanism
        assert isinstance(mechanism, SupportsAggregateSimulation)  # checked at construction
        if state.counts is not None:
            if state.cells:
                raise ValueError(
                    f"{type(mechanism).__name__}.record_counts gave counts for some chunks and "
                    "None for others: it must decide by the mechanism, not by the records"
                )
            counting = cast(SimulatesFromCounts, mechanism)
            summary = counting.simulate_counts(state.key, state.counts, self.n_cells)
            return self.mechanism.debias(summary, int(state.counts.sum()))
        cells, labels = np.concatenate(state.cells), np.concatenate(state.labels)
        summary = mechanism.simulate_summary(state.key, cells, labels, self.n_cells)
        return self.mechanism.debias(summary, int(cells.shape[0]))
