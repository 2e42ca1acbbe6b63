"""The one-round protocol on a Dask cluster: the aggregator monoid reduced across workers.

Needs the ``dask`` extra (``pip install "ldptree[dask]"``, which brings ``dask.distributed``);
every function takes a :class:`distributed.Client` the caller has connected.

The curator's statistics form a commutative monoid (:class:`~ldptree.estimators.SumAggregator`):
``init`` is the empty state, ``update`` adds the summary of a batch of reports, ``merge`` adds two
states and ``finalize`` debiases the total into :class:`~ldptree.protocols.CellEstimates`. The
built-in mechanisms' statistics are integers held in int64, so

    finalize(merge(update(init, R_1), merge(update(init, R_2), ...)))

is the same number whatever the partition of the reports ``R = R_1 + R_2 + ...`` and whatever the
tree of merges: a cluster gives the one-process result bit for bit. (A mechanism with floating
statistics would agree only up to the rounding of a different order of additions.)

* :func:`aggregate_reports`: the curator's side. Reports already released by holders, as arrays,
  Dask futures or report files (:func:`save_reports`) spread over workers, are summarised where
  they lie and merged pairwise on the workers; only the small states travel.
* :func:`simulate_round`: the holders' side, simulated. Each chunk of private rows goes to a
  worker with its ``first_holder`` (the index of its first holder), which routes, privatizes and
  summarises it (:func:`~ldptree.estimators.holder_summary`); holder ``i``'s randomness
  depends only on the key and ``i``, so the result equals the in-process
  :func:`~ldptree.estimators.run_round` bit for bit.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

import jax
import numpy as np

from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import check_int
from ldptree.estimators._protocol import holder_summary, release_key, split_chunks
from ldptree.partitions._partition import Partition
from ldptree.protocols import CellEstimates, Mechanism
from ldptree.rounds._aggregators import SumAggregator, SumState


def _dask() -> Any:
    try:
        import distributed
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            'ldptree.distributed needs dask.distributed: pip install "ldptree[dask]"'
        ) from err
    return distributed


def save_reports(path: str | os.PathLike[str], reports: Any) -> None:
    """Write a pytree of report arrays to ``path`` (``.npz``, leaves in pytree order)."""
    leaves = jax.tree_util.tree_leaves(reports)
    if not leaves:
        raise ValueError("reports must be a non-empty pytree of arrays")
    np.savez(path, *[np.asarray(leaf) for leaf in leaves])


def load_reports(path: str | os.PathLike[str], like: Any) -> Any:
    """Reports written by :func:`save_reports`, rebuilt with the pytree structure of ``like``
    (any report of the same mechanism, e.g. one holder's)."""
    treedef = jax.tree_util.tree_structure(like)
    n_leaves = len(jax.tree_util.tree_leaves(like))
    with np.load(path) as data:
        if len(data.files) != n_leaves:
            raise ValueError(
                f"{os.fspath(path)} holds {len(data.files)} arrays but a report of this mechanism "
                f"has {n_leaves}"
            )
        leaves = [data[f"arr_{i}"] for i in range(n_leaves)]
    return jax.tree_util.tree_unflatten(treedef, leaves)


def _summarize(aggregator: SumAggregator, part: Any, like: Any) -> SumState:
    if isinstance(part, str | os.PathLike):
        part = load_reports(part, like)
    return aggregator.update(aggregator.init(), part)


def _reduce(client: Any, aggregator: SumAggregator, states: list[Any]) -> Any:
    """Pairwise merges on the workers, in order, until one state (a future) is left."""
    while len(states) > 1:
        merged = [
            client.submit(aggregator.merge, a, b, pure=False)
            for a, b in zip(states[::2], states[1::2], strict=False)
        ]
        states = merged + states[len(merged) * 2 :]
    return states[0]


def aggregate_reports(
    client: Any,
    aggregator: SumAggregator,
    parts: Sequence[Any],
    *,
    like: Any = None,
    timeout: float | None = None,
) -> CellEstimates:
    """The curator's estimates from reports partitioned across workers.

    ``parts``: report pytrees (``mechanism.privatize`` outputs), Dask futures of them (scatter a
    report as one object: ``client.scatter([reports])[0]``; reports are tuples), or paths of
    report files written by :func:`save_reports` (read by the worker, so on a file system it
    sees; ``like`` is then required: any report of the same mechanism). Each part is summarised
    with ``aggregator.update`` on a worker, the states are merged pairwise with
    ``aggregator.merge`` on the workers, and the total is finalized here. ``timeout`` (seconds)
    bounds the wait for the result.
    """
    distributed = _dask()
    if not isinstance(aggregator, SumAggregator):
        raise TypeError(f"aggregator must be a SumAggregator, got {type(aggregator).__name__}")
    if len(parts) == 0:
        raise ValueError("parts is empty; pass at least one part of reports")
    files = [isinstance(p, str | os.PathLike) for p in parts]
    if any(files) and like is None:
        raise ValueError("like (a report of the mechanism) is required to read report files")
    states = [
        client.submit(_summarize, aggregator, part, like, pure=False)
        if isinstance(part, str | os.PathLike | distributed.Future)
        else client.submit(_summarize, aggregator, client.scatter([part])[0], like, pure=False)
        for part in parts
    ]
    state: SumState = _reduce(client, aggregator, states).result(timeout=timeout)
    return aggregator.finalize(state)


def _chunk_state(
    partition: Partition,
    mechanism: Mechanism,
    key: PRNGKey,
    X_scaled: FloatArray,
    y: np.ndarray[Any, Any],
    first_holder: int,
) -> SumState:
    cells = partition.cells(X_scaled)
    return holder_summary(mechanism, key, cells, y, partition.n_leaves, first_holder=first_holder)


def simulate_round(
    client: Any,
    partition: Partition,
    mechanism: Mechanism,
    chunks: Iterable[tuple[FloatArray, np.ndarray[Any, Any]]],
    *,
    key: PRNGKey,
    chunk_size: int,
    max_pending: int = 8,
    timeout: float | None = None,
) -> CellEstimates:
    """The per-holder round with the holders' work fanned out to the workers.

    ``chunks`` yields ``(X_scaled, labels)`` of consecutive holders (scaled rows and what the
    mechanism takes as labels: real labels or class codes), e.g.
    ``((X[s:s + m], y[s:s + m]) for s in range(0, n, m))``; pieces longer than ``chunk_size`` are
    split. Each piece is sent to a worker with its ``first_holder``; at most ``max_pending``
    pieces are in flight, so the driver reads the data as fast as the workers consume it and
    memory stays bounded. Bit for bit equal to
    :func:`~ldptree.estimators.run_round` with the same ``key`` (module docstring).
    ``timeout`` (seconds) bounds each wait.
    """
    distributed = _dask()
    chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    max_pending = check_int(max_pending, "max_pending", minimum=1)
    key = release_key(key, mechanism, partition)  # the release's noise key, as run_round's
    aggregator = SumAggregator(mechanism=mechanism, n_cells=partition.n_leaves)
    partition_f, mechanism_f = client.scatter([partition, mechanism], broadcast=True)
    states: list[Any] = []  # in holder order
    first_holder = 0
    for X_chunk, y_chunk in split_chunks(chunks, chunk_size):
        while sum(not f.done() for f in states) >= max_pending:
            pending = [f for f in states if not f.done()]
            distributed.wait(pending, timeout=timeout, return_when="FIRST_COMPLETED")
        args = client.scatter([X_chunk, y_chunk], hash=False)
        states.append(
            client.submit(
                _chunk_state, partition_f, mechanism_f, key, *args, first_holder, pure=False
            )
        )
        first_holder += int(X_chunk.shape[0])
    if not states:
        raise ValueError("chunks has no rows; at least one holder is needed")
    state: SumState = _reduce(client, aggregator, states).result(timeout=timeout)
    return aggregator.finalize(state)
