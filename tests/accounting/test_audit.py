"""audit_ldp: accepts the built-in, refutes a 2x over-claim, validates input.

False-failure rates: an audit at confidence ``c`` refutes a correct claim with probability at most
``1 - c`` (Clopper–Pearson bounds, Bonferroni over the tested events, events chosen on a separate
split). Keys are fixed, so each test is deterministic; ``1 - c`` is the chance that a given key is
unlucky.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import jax
import pytest

from ldptree.accounting import audit_ldp
from ldptree.accounting._binomial import binomial_lower, binomial_upper
from ldptree.mechanisms import RRLaplaceMechanism


@attrs.frozen
class OverClaiming:
    """Releases what RRLaplaceMechanism(2 eps) releases but claims eps: real epsilon = 2x claim."""

    epsilon: float
    label_bound: float = 1.0

    @property
    def inner(self) -> RRLaplaceMechanism:
        return RRLaplaceMechanism(epsilon=2.0 * self.epsilon, label_bound=self.label_bound)

    def privatize(self, key: Any, cells: Any, labels: Any, n_cells: int, **kw: Any) -> Any:
        return self.inner.privatize(key, cells, labels, n_cells, **kw)

    def summarize(self, reports: Any, n_cells: int) -> Any:
        return self.inner.summarize(reports, n_cells)

    def debias(self, stats: Any, n: int) -> Any:
        return self.inner.debias(stats, n)

    def log_prob(self, report: Any, cell: int, label: float, n_cells: int) -> float:
        return self.inner.log_prob(report, cell, label, n_cells)


@pytest.mark.slow
@pytest.mark.parametrize(("epsilon", "n_samples"), [(1.0, 200_000), (0.2, 1_000_000)])
def test_refutes_a_mechanism_whose_real_epsilon_is_twice_its_claim(
    epsilon: float, n_samples: int
) -> None:
    result = audit_ldp(
        OverClaiming(epsilon),
        n_cells=4,
        label_bound=1.0,
        key=jax.random.key(11),
        n_samples=n_samples,
        confidence=0.999,
    )
    assert result.refuted, str(result)
    assert epsilon < result.epsilon_lower <= 2.0 * epsilon


@pytest.mark.parametrize(
    ("epsilon", "rho", "n_cells"), [(1.0, 0.5, 4), (4.0, 0.3, 2), (0.3, 0.7, 3)]
)
def test_never_refutes_the_built_in(epsilon: float, rho: float, n_cells: int) -> None:
    mech = RRLaplaceMechanism(epsilon=epsilon, label_bound=(-1.0, 2.0), budget_split=rho)
    result = audit_ldp(
        mech, n_cells=n_cells, label_bound=(-3.0, 4.0), key=jax.random.key(5), n_samples=200_000
    )
    assert not result.refuted, str(result)
    assert 0.0 <= result.epsilon_lower <= epsilon


def test_audit_lower_bound_is_close_to_the_truth_at_moderate_budget() -> None:
    """The event choice is near-optimal: at eps = 2 the bound is within 15% of the truth."""
    mech = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0, budget_split=0.5)
    result = audit_ldp(mech, n_cells=2, label_bound=1.0, key=jax.random.key(3), n_samples=400_000)
    assert 0.85 * 2.0 < result.epsilon_lower <= 2.0


def test_clopper_pearson_bounds() -> None:
    assert binomial_lower(0, 10, 0.05) == 0.0 and binomial_upper(10, 10, 0.05) == 1.0
    # k = 0: the upper bound solves (1 - p)^n = a
    assert binomial_upper(0, 100, 0.05) == pytest.approx(1.0 - 0.05 ** (1 / 100), rel=1e-9)
    lo, hi = binomial_lower(50, 100, 0.025), binomial_upper(50, 100, 0.025)
    assert 0.39 < lo < 0.5 < hi < 0.61
    with pytest.raises(ValueError, match="k <= n"):
        binomial_lower(11, 10, 0.05)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_samples": 10}, "too few"),
        ({"confidence": 1.0}, "confidence"),
        ({"delta": -0.1}, "delta"),
        ({"selection_fraction": 0.0}, "selection_fraction"),
        ({"label_bound": None}, "label_bound"),
    ],
)
def test_bad_arguments_name_the_argument(kwargs: dict, match: str) -> None:  # type: ignore[type-arg]
    args: dict[str, Any] = {
        "n_cells": 2,
        "label_bound": 1.0,
        "key": jax.random.key(0),
        "n_samples": 1000,
    }
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        audit_ldp(RRLaplaceMechanism(epsilon=1.0, label_bound=1.0), **args)


def test_delta_weakens_the_bound() -> None:
    mech = OverClaiming(1.0)
    pure = audit_ldp(mech, n_cells=2, label_bound=1.0, key=jax.random.key(2), n_samples=50_000)
    approx = audit_ldp(
        mech, n_cells=2, label_bound=1.0, key=jax.random.key(2), n_samples=50_000, delta=0.05
    )
    assert approx.epsilon_lower < pure.epsilon_lower
    assert math.isfinite(pure.epsilon_lower)
