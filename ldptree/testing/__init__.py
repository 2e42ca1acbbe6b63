"""Helpers for property tests of mechanisms and estimators, for users' own test suites.

Requires the ``dev`` extra (hypothesis).
"""

from ldptree.testing._ldp import assert_ldp
from ldptree.testing._strategies import (
    budget_splits,
    budgets,
    label_bounds,
    labelled_cells,
    partitions,
    records,
    rr_laplace_mechanisms,
)
from ldptree.testing._unbiased import assert_unbiased, debiased_runs

__all__ = [
    "assert_ldp",
    "assert_unbiased",
    "budget_splits",
    "budgets",
    "debiased_runs",
    "label_bounds",
    "labelled_cells",
    "partitions",
    "records",
    "rr_laplace_mechanisms",
]
