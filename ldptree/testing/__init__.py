"""Helpers for property tests of mechanisms and estimators, for users' own test suites.

* :func:`assert_ldp` and :func:`assert_unbiased` / :func:`debiased_runs` check a mechanism's
  privacy and unbiasedness (NumPy and SciPy only); ``assert_unbiased``'s default design
  detects a 5 % bias with probability 0.99 and returns an :class:`UnbiasedCheck`;
* :func:`expected_failed_checks` lists the scikit-learn estimator checks that contradict local
  privacy by design, with the reason;
* the Hypothesis strategies (:func:`partitions`, :func:`budgets`, :func:`records`, ...) need
  ``hypothesis``: ``pip install 'ldptree[testing]'`` (the ``dev`` extra has it too). Importing
  ``ldptree.testing`` works without it; using a strategy then raises an ``ImportError`` saying so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ldptree.accounting._sampler import check_sampler
from ldptree.testing._ldp import assert_ldp
from ldptree.testing._sklearn import expected_failed_checks
from ldptree.testing._unbiased import UnbiasedCheck, assert_unbiased, debiased_runs

if TYPE_CHECKING:
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

_STRATEGIES = frozenset(
    {
        "budget_splits",
        "budgets",
        "label_bounds",
        "labelled_cells",
        "partitions",
        "records",
        "rr_laplace_mechanisms",
    }
)


#: The generated per-mechanism suite (it runs Hypothesis-drawn partitions).
_SUITE = frozenset(
    {
        "BUILT_INS",
        "NOT_BUILT_INS",
        "BuiltIn",
        "MechanismCheck",
        "built_in_mechanisms",
        "mechanism_checks",
        "pytest_params",
    }
)


def __getattr__(name: str) -> Any:
    """The Hypothesis strategies and the generated suite, imported on first use (hypothesis is an
    optional extra)."""
    if name not in _STRATEGIES | _SUITE:
        raise AttributeError(f"module 'ldptree.testing' has no attribute {name!r}")
    try:
        from ldptree.testing import _strategies, _suite
    except ModuleNotFoundError as err:
        if err.name != "hypothesis":
            raise
        raise ImportError(
            f"ldptree.testing.{name} needs the 'hypothesis' package: "
            "pip install 'ldptree[testing]' (or the 'dev' extra)"
        ) from err
    return getattr(_suite if name in _SUITE else _strategies, name)


__all__ = [
    "BUILT_INS",
    "NOT_BUILT_INS",
    "BuiltIn",
    "MechanismCheck",
    "UnbiasedCheck",
    "assert_ldp",
    "assert_unbiased",
    "budget_splits",
    "budgets",
    "built_in_mechanisms",
    "check_sampler",
    "debiased_runs",
    "expected_failed_checks",
    "label_bounds",
    "labelled_cells",
    "mechanism_checks",
    "partitions",
    "pytest_params",
    "records",
    "rr_laplace_mechanisms",
]
