"""A user mechanism whose privatize/summarize/debias types fit together: type-checks cleanly."""

from typing import NamedTuple

import jax

from ldptree import CellEstimates, LPCTClassifier, LPDTRegressor
from ldptree.accounting import ReportLaw, verify_ldp
from ldptree.partitions import Partition
from ldptree.rounds import Round


class Report(NamedTuple):
    cell: jax.Array
    label: jax.Array


class Sums(NamedTuple):
    cell: jax.Array
    label: jax.Array


class Good:
    epsilon: float = 1.0

    def privatize(
        self,
        key: jax.Array,
        cells: jax.Array,
        labels: jax.Array,
        n_cells: int,
        *,
        first_holder: int = 0,
    ) -> Report:
        return Report(cells, labels)

    def summarize(self, reports: Report, n_cells: int) -> Sums:
        return Sums(reports.cell, reports.label)

    def debias(self, stats: Sums, n: int) -> CellEstimates:
        raise NotImplementedError

    def log_prob(self, report: Report, cell: int, label: float, n_cells: int) -> float:
        return 0.0


class Verifiable(Good):
    def report_law(self, n_cells: int) -> ReportLaw:
        raise NotImplementedError


LPDTRegressor(mechanism=Good(), rule="cart")
LPCTClassifier(mechanism=Good(), rule="max_edge")
verify_ldp(Verifiable(), n_cells=4)
Round(partition=Partition.trivial(2), mechanism=Good())  # the engine takes any Mechanism


def fitted_attributes(model: LPDTRegressor, classifier: LPCTClassifier) -> float:
    """Fitted attributes are typed: a cell count, a spend, a label bound."""
    cells: int = model.partition_.n_leaves
    low, high = model.label_bound_
    spent: float = model.privacy_.epsilon + classifier.privacy_.epsilon
    return cells + low + high + spent
