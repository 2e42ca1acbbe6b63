"""The engine: every round of every estimator, batch, stream, cluster run and collector runs
through :func:`run`.

A :class:`~ldptree.rounds.Round` is fixed before any private value is read. The engine binds
each round's aggregator once, hands the rounds and their source (:class:`~ldptree.rounds.
PrivateRows`: the holders' rows; :class:`~ldptree.rounds.Reports`: reports already released) to
an executor (:mod:`ldptree.rounds._executors`: where the holders' work runs) and finalizes each
aggregator once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from ldptree.protocols import Aggregator, CellEstimates
from ldptree.rounds._executors import Batched, Executor, Job, Threads
from ldptree.rounds._plan import Round
from ldptree.rounds._reports import Reports
from ldptree.rounds._rows import PrivateRows


@attrs.frozen(eq=False)
class RoundResult:
    """A round's estimates (``aggregator.finalize(state)``), its bound aggregator and final
    state (for a read-out that needs more than the estimates, e.g. the reports a
    :class:`~ldptree.rounds.ReportCollector` kept)."""

    estimates: CellEstimates
    aggregator: Aggregator[Any]
    state: Any


def run(
    rounds: Sequence[Round],
    source: PrivateRows | Reports,
    *,
    executor: Executor | None = None,
) -> list[RoundResult]:
    """Run every round over ``source`` (module docstring); results in order. ``executor``
    (default: :class:`~ldptree.rounds.Threads` for one round, :class:`~ldptree.rounds.Batched`
    for several) decides where the pieces run, never what they give. Several rounds read private
    rows again (an array or a memory map; an iterable of chunks is read once)."""
    jobs = [Job.of(r) for r in rounds]
    if not jobs:
        return []
    if executor is None:
        executor = Threads() if len(jobs) == 1 else Batched()
    if isinstance(source, Reports):
        if len(jobs) > 1 and not isinstance(source.parts, tuple):
            raise ValueError(
                "streamed reports (parts given as an iterator) are read once, by one round; "
                "pass the parts as a list or tuple to run several rounds over them"
            )
        states = executor.fold_reports(jobs, source)
    elif isinstance(source, PrivateRows):
        if any(job.key is None for job in jobs):
            raise ValueError(
                "a round over private rows needs its release key (Round(key=...)); key=None is "
                "for reports drawn elsewhere"
            )
        states = executor.fold_rows(jobs, source)
    else:
        raise TypeError(
            f"source must be PrivateRows or Reports, got {type(source).__name__}; wrap arrays "
            "with PrivateRows.of(X, y)"
        )
    return [
        RoundResult(job.aggregator.finalize(state), job.aggregator, state)
        for job, state in zip(jobs, states, strict=True)
    ]
