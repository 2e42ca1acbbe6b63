"""Helpers for property tests of mechanisms and estimators, for users' own test suites.

Requires the ``dev`` extra (hypothesis).
"""

from ldptree.accounting._sampler import check_sampler
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
from ldptree.testing._suite import (
    BUILT_INS,
    NOT_BUILT_INS,
    BuiltIn,
    MechanismCheck,
    built_in_mechanisms,
    mechanism_checks,
    pytest_params,
)
from ldptree.testing._unbiased import assert_unbiased, debiased_runs

__all__ = [
    "BUILT_INS",
    "NOT_BUILT_INS",
    "BuiltIn",
    "MechanismCheck",
    "assert_ldp",
    "assert_unbiased",
    "budget_splits",
    "budgets",
    "built_in_mechanisms",
    "check_sampler",
    "debiased_runs",
    "label_bounds",
    "labelled_cells",
    "mechanism_checks",
    "partitions",
    "pytest_params",
    "records",
    "rr_laplace_mechanisms",
]
