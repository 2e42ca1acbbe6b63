"""The curator's side of the protocol: one round from holders' rows or reports to cell estimates.

Beside :mod:`ldptree.partitions` (the public side: what the curator publishes) and
:mod:`ldptree.mechanisms` (the holders' side: what each holder releases), this package is what the
curator runs: the aggregators that fold reports, the private rows read chunk by chunk, and the
charge of a round to the privacy ledger.
"""

from ldptree.rounds._aggregators import (
    CollectedState,
    ReportCollector,
    SimulatedState,
    SimulatedSumAggregator,
    SumAggregator,
    SumState,
)
from ldptree.rounds._charge import CertifiedSpend, budget_ledger, certified_spend
from ldptree.rounds._rows import PrivateRows, private_rows

__all__ = [
    "CertifiedSpend",
    "CollectedState",
    "PrivateRows",
    "ReportCollector",
    "SimulatedState",
    "SimulatedSumAggregator",
    "SumAggregator",
    "SumState",
    "budget_ledger",
    "certified_spend",
    "private_rows",
]
