"""The streaming sum aggregator: a commutative monoid over a mechanism's sufficient statistics.

``update`` summarises a batch of reports with ``mechanism.summarize`` (jitted; exact integer sums
for the built-in mechanisms) and adds the result into a host-side state held in int64/float64, so
memory is bounded by one batch whatever the number of holders, and ``merge`` of two states is
plain addition. Integer statistics make the result bitwise identical for any chunking, any order
of ``update`` calls and any tree of ``merge`` calls. The aggregator never sees a raw record.
"""

from __future__ import annotations

from typing import Any

import attrs
import jax
import numpy as np

from ldptree.protocols import CellEstimates, Mechanism


def to_host(x: Any) -> np.ndarray[Any, Any]:
    arr = np.asarray(x)
    if np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    return arr.astype(np.float64)


@attrs.frozen(eq=False)
class SumState:
    """Aggregated statistics of ``n`` reports (``stats`` is ``None`` before the first batch)."""

    n: int = 0
    stats: Any = None


@attrs.frozen
class SumAggregator:
    """Per-cell sums of ``mechanism``'s statistics over a partition with ``n_cells`` cells."""

    mechanism: Mechanism
    n_cells: int

    def init(self) -> SumState:
        return SumState()

    def update(self, state: SumState, reports: Any) -> SumState:
        leaves = jax.tree_util.tree_leaves(reports)
        if not leaves:
            raise ValueError("reports must be a non-empty pytree of arrays")
        n = int(leaves[0].shape[0])
        step = int(getattr(self.mechanism, "max_summary_rows", n) or n)
        for start in range(0, n, max(step, 1)):
            batch = jax.tree_util.tree_map(lambda a, s=start: a[s : s + step], reports)
            summary = jax.tree_util.tree_map(to_host, self.mechanism.summarize(batch, self.n_cells))
            state = self.merge(state, SumState(n=min(step, n - start), stats=summary))
        return state

    def merge(self, a: SumState, b: SumState) -> SumState:
        if a.stats is None:
            return SumState(n=a.n + b.n, stats=b.stats)
        if b.stats is None:
            return SumState(n=a.n + b.n, stats=a.stats)
        return SumState(n=a.n + b.n, stats=jax.tree_util.tree_map(np.add, a.stats, b.stats))

    def finalize(self, state: SumState) -> CellEstimates:
        if state.stats is None:
            raise ValueError("no reports were aggregated; call update with at least one report")
        return self.mechanism.debias(state.stats, state.n)
