"""The holders' side of one piece of a round: each holder's record in, its report or the
piece's summed reports out. The only code of the curator's package that reads private values,
and only through the mechanism."""

from __future__ import annotations

from typing import Any, cast

import jax
import numpy as np

from ldptree._typing import FloatArray, PRNGKey
from ldptree.protocols import FusedSummary, Mechanism, declares
from ldptree.rounds._aggregators import add_stats, summary_batches, to_host


def mechanism_labels(y: Any, *, host: bool = False) -> Any:
    """Labels as the holders pass them to the mechanism: real labels as float32 (its
    arithmetic, rounded to nearest as on the device), class codes as integers (JAX's canonical
    integer type once on the device). A JAX array; with ``host=True`` concrete labels stay a
    NumPy array (no device transfer). Traced labels stay traced."""
    traced = isinstance(y, jax.core.Tracer)
    # concrete labels are converted on the host (jnp.asarray would trace a program per shape)
    out = jax.numpy.asarray(y) if traced else np.asarray(y)
    if jax.numpy.issubdtype(out.dtype, jax.numpy.floating):
        out = out.astype(np.float32)
    return out if traced or host else jax.device_put(out)


def record_fields(mechanism: Mechanism, X_piece: FloatArray) -> dict[str, Any]:
    """The extra per-holder inputs the mechanism declares in ``record_fields`` (see
    :mod:`~ldptree.estimators._fits`): the round can supply ``features``, the holder's scaled
    feature vector (a mechanism releasing it runs on the trivial partition)."""
    names = field_names(mechanism)
    unknown = [name for name in names if name != "features"]
    if unknown:
        raise TypeError(
            f"{type(mechanism).__name__} needs record fields {unknown} that the round cannot "
            "supply (it supplies the cell, the label and features=)"
        )
    return {"features": X_piece} if names else {}


def field_names(mechanism: Mechanism) -> tuple[str, ...]:
    """The mechanism's declared ``record_fields`` (none: ``()``)."""
    return tuple(getattr(mechanism, "record_fields", ()))


def holder_sums(
    mechanism: Mechanism,
    key: PRNGKey,
    cells: Any,
    y: Any,
    n_cells: int,
    *,
    first_holder: int,
    holders: int | None = None,
) -> Any:
    """The summed reports (leaves widened for exact sums) of holders ``first_holder, ...``, one
    per row, through the mechanism's fused kernel when it has one (:class:`~ldptree.protocols.
    FusedSummary`) and the piece fits it, else ``summarize(privatize(...))``. ``holders``
    (default: every row) counts the holders when later rows only pad the piece to a compiled
    length. Depends only on ``key``, the holder indices and the records, so pieces may be
    summed anywhere (another thread, process or machine) and merged."""
    # a fused kernel checks and pads records on the host: a device copy would be copied back
    fused = declares(mechanism, FusedSummary)
    labels = mechanism_labels(y, host=fused)
    rows = int(labels.shape[0])
    m = rows if holders is None else holders
    if fused and m <= cast(FusedSummary, mechanism).max_summary_rows:
        extra = {"n_holders": m} if m < rows else {}
        stats = cast(FusedSummary, mechanism).privatize_summarize(
            key, cells, labels, n_cells, first_holder=first_holder, **extra
        )
        return jax.tree_util.tree_map(to_host, stats)
    if m < rows:  # a mechanism without the fused kernel sees the holders only
        cells, labels = cells[:m], labels[:m]
    reports = mechanism.privatize(key, cells, labels, n_cells, first_holder=first_holder)
    total = None
    for _, stats in summary_batches(mechanism, reports, n_cells):
        total = stats if total is None else add_stats(total, stats)
    return total
