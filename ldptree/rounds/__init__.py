"""The curator's side (beside :mod:`ldptree.partitions`, the public side, and
:mod:`ldptree.mechanisms`, the holders'): one engine from holders' rows or reports to estimates.

A :class:`Round` is fixed before any private value is read; :func:`run` runs rounds over a source
(:class:`PrivateRows`, or released :class:`Reports`) with an executor (:class:`Serial`,
:class:`Threads`, :class:`Batched`, :class:`Dask`). The aggregators fold reports. A round may
read one part of a public :class:`HolderSplit` of the holders (rounds over disjoint parts compose
in parallel). :func:`certified_spend`, :func:`budget_ledger` and :func:`charged_ledger` charge a
round before it runs.
"""

from ldptree.rounds._aggregators import (
    ReportCollector,
    SimulatedSumAggregator,
    SumAggregator,
    SumState,
)
from ldptree.rounds._charge import budget_ledger, certified_spend, charged_ledger
from ldptree.rounds._chunks import chunk_rows
from ldptree.rounds._dask import Dask
from ldptree.rounds._engine import RoundResult, run
from ldptree.rounds._executors import Batched, Executor, Serial, Threads
from ldptree.rounds._holders import holder_sums, mechanism_labels
from ldptree.rounds._plan import Round, release_key
from ldptree.rounds._reports import Reports, load_reports, save_reports
from ldptree.rounds._rows import PrivateRows, private_rows
from ldptree.rounds._split import HolderPart, HolderSplit

__all__ = [
    "Batched",
    "Dask",
    "Executor",
    "HolderPart",
    "HolderSplit",
    "PrivateRows",
    "ReportCollector",
    "Reports",
    "Round",
    "RoundResult",
    "Serial",
    "SimulatedSumAggregator",
    "SumAggregator",
    "SumState",
    "Threads",
    "budget_ledger",
    "certified_spend",
    "charged_ledger",
    "chunk_rows",
    "holder_sums",
    "load_reports",
    "mechanism_labels",
    "private_rows",
    "release_key",
    "run",
    "save_reports",
]
