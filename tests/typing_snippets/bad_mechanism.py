"""Mismatched user mechanisms and components: each marked line is a type error under --strict."""

from typing import NamedTuple

import jax

from ldptree import CellEstimates, LPCTClassifier, LPDTRegressor
from ldptree.accounting import verify_ldp


class Report(NamedTuple):
    cell: jax.Array


class SummarizesOtherReports:
    """summarize takes a dict, but privatize returns a Report."""

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
        return Report(cells)

    def summarize(self, reports: dict[str, jax.Array], n_cells: int) -> jax.Array:
        return reports["cell"]

    def debias(self, stats: jax.Array, n: int) -> CellEstimates:
        raise NotImplementedError

    def log_prob(self, report: Report, cell: int, label: float, n_cells: int) -> float:
        return 0.0


class DebiasesOtherStats:
    """debias takes a list, but summarize returns an array."""

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
        return Report(cells)

    def summarize(self, reports: Report, n_cells: int) -> jax.Array:
        return reports.cell

    def debias(self, stats: list[int], n: int) -> CellEstimates:
        raise NotImplementedError

    def log_prob(self, report: Report, cell: int, label: float, n_cells: int) -> float:
        return 0.0


LPDTRegressor(mechanism=SummarizesOtherReports())  # error: ReportT
LPCTClassifier(mechanism=DebiasesOtherStats())  # error: StatsT
LPCTClassifier(rule=42)  # error: rule
verify_ldp(DebiasesOtherStats(), n_cells=2)  # error: no report_law
wrong: str = LPDTRegressor(epsilon=1.0).privacy_.epsilon  # error: fitted
