"""The streaming sum aggregator: a commutative monoid over a mechanism's sufficient statistics.

``update`` summarises a batch of reports with ``mechanism.summarize`` (jitted; exact integer sums
for the built-in mechanisms) and adds the result into a host-side state held in int64/float64, so
memory is bounded by one batch whatever the number of holders, and ``merge`` of two states is
plain addition. Integer statistics make the result bitwise identical for any chunking, any order
of ``update`` calls and any tree of ``merge`` calls. The aggregator never sees a raw record.

Under ``jax.jit``/``jax.vmap`` (traced reports or states) the same code runs in ``jax.numpy``:
sums are held in JAX's widest enabled integer (int64 inside ``jax.enable_x64(True)``, else int32,
which is exact up to the mechanism's ``max_summary_rows`` reports; more is refused). ``SumState``
is a pytree, so a state can cross a ``jit`` boundary.
"""

from __future__ import annotations

from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._xp import float_dtype, int_dtype, is_traced, namespace
from ldptree.protocols import CellEstimates, Mechanism


def _add(a: Any, b: Any) -> Any:
    return a + b  # np.add on host arrays, jnp.add on traced ones


def to_host(x: Any) -> Any:
    """``x`` widened for exact summation: int64/float64 on the host; under a trace the widest
    dtypes JAX enables (:func:`~ldptree._xp.int_dtype`, :func:`~ldptree._xp.float_dtype`)."""
    xp = namespace(x)
    arr = xp.asarray(x)
    if xp.issubdtype(arr.dtype, xp.integer):
        return arr.astype(int_dtype(xp))
    return arr.astype(float_dtype(xp))


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
        if is_traced(a.stats, b.stats) and np.dtype(int_dtype(jnp)).itemsize < 8:
            limit = int(getattr(self.mechanism, "max_summary_rows", 0) or 0)
            if a.n + b.n > limit:
                raise ValueError(
                    f"traced sums of {a.n + b.n} reports may overflow int32 (exact up to "
                    f"max_summary_rows={limit}); trace inside jax.enable_x64(True)"
                )
        return SumState(n=a.n + b.n, stats=jax.tree_util.tree_map(_add, a.stats, b.stats))

    def finalize(self, state: SumState) -> CellEstimates:
        if state.stats is None:
            raise ValueError("no reports were aggregated; call update with at least one report")
        return self.mechanism.debias(state.stats, state.n)
