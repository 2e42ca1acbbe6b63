"""Helpers for property tests of mechanisms and estimators, for users' own test suites.

Requires the ``dev`` extra (hypothesis).
"""

from ldptree.testing._strategies import budget_splits, budgets, labelled_cells, partitions
from ldptree.testing._unbiased import assert_unbiased, debiased_runs

__all__ = [
    "assert_unbiased",
    "budget_splits",
    "budgets",
    "debiased_runs",
    "labelled_cells",
    "partitions",
]
