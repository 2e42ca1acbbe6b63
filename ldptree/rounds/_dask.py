"""The round on a Dask cluster (the ``dask`` extra: ``pip install "ldptree[dask]"``).

Each piece of private rows goes to a worker with its first holder's index, which routes,
privatizes and folds it into an aggregator state; released reports (pytrees, futures, or report
files read where a worker sees them) are folded with ``update`` where they lie. States are merged
pairwise on the workers, in holder order; only the small states travel. Holder ``i``'s
randomness depends only on the key and ``i`` and the built-in statistics are exact integers, so
a cluster gives the one-process result bit for bit. A simulation device's records are routed in
this process.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ldptree._validation import check_int
from ldptree.protocols import Aggregator
from ldptree.rounds._executors import Job, Serial, piece_reports, piece_summary
from ldptree.rounds._reports import Reports, is_file, load_reports
from ldptree.rounds._rows import PrivateRows


def dask_distributed() -> Any:
    """The ``distributed`` module, or an ``ImportError`` naming the extra to install."""
    try:
        import distributed
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            'running rounds on Dask needs dask.distributed: pip install "ldptree[dask]"'
        ) from err
    return distributed


def _reports_state(job: Job, X: Any, y: Any, first: int) -> Any:
    return job.aggregator.update(job.aggregator.init(), piece_reports(job, X, y, first))


def _part_state(aggregator: Aggregator[Any], part: Any, like: Any) -> Any:
    reports = load_reports(part, like) if is_file(part) else part
    return aggregator.update(aggregator.init(), reports)


def _reduce(client: Any, aggregator: Aggregator[Any], states: list[Any]) -> Any:
    """Pairwise merges on the workers, in order, until one state (a future) is left."""
    while len(states) > 1:
        merged = [
            client.submit(aggregator.merge, a, b, pure=False)
            for a, b in zip(states[::2], states[1::2], strict=False)
        ]
        states = merged + states[len(merged) * 2 :]
    return states[0]


def _max_pending(value: Any) -> int:
    return check_int(value, "max_pending", minimum=1)


@attrs.frozen
class Dask(Serial):
    """Pieces on the workers of ``client`` (module docstring). At most ``max_pending`` pieces
    are in flight, so the driver reads the rows as fast as the workers consume them and memory
    stays bounded; ``timeout`` (seconds) bounds each wait."""

    client: Any
    max_pending: int = attrs.field(default=8, converter=_max_pending)
    timeout: float | None = None

    def fold(self, job: Job, source: PrivateRows) -> Any:
        if job.mode == "records":
            return super().fold(job, source)
        distributed = dask_distributed()
        client, r = self.client, job.round
        work = piece_summary if job.mode == "summaries" else _reports_state
        (job_f,) = client.scatter([job], broadcast=True)
        states: list[Any] = []  # in holder order
        first = 0
        for X, y in r.pieces(source):
            while sum(not f.done() for f in states) >= self.max_pending:
                pending = [f for f in states if not f.done()]
                distributed.wait(pending, timeout=self.timeout, return_when="FIRST_COMPLETED")
            args = client.scatter([X, y], hash=False)
            states.append(client.submit(work, job_f, *args, first, pure=False))
            first += int(X.shape[0])
        if not states:
            raise ValueError("the source has no rows; at least one holder is needed")
        return _reduce(client, job.aggregator, states).result(timeout=self.timeout)

    def fold_reports(self, jobs: Sequence[Job], source: Reports) -> list[Any]:
        distributed = dask_distributed()
        client, out = self.client, []
        for job in jobs:
            states = [
                client.submit(_part_state, job.aggregator, part, source.like, pure=False)
                if is_file(part) or isinstance(part, distributed.Future)
                else client.submit(
                    _part_state, job.aggregator, client.scatter([part])[0], source.like, pure=False
                )
                for part in source.parts
            ]
            out.append(_reduce(client, job.aggregator, states).result(timeout=self.timeout))
        return out
