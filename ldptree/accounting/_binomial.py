"""Exact (Clopper–Pearson) one-sided confidence bounds for a binomial proportion.

For ``k`` successes in ``n`` trials, ``P(p >= lower(k, n, a)) >= 1 - a`` and
``P(p <= upper(k, n, a)) >= 1 - a`` for every true ``p``: the bounds invert the binomial tails
(``lower`` is the ``a`` quantile of ``Beta(k, n - k + 1)``, ``upper`` the ``1 - a`` quantile of
``Beta(k + 1, n - k)``), so their coverage is exact-or-conservative at any sample size.
"""

from __future__ import annotations

from scipy import stats


def _check(k: int, n: int, a: float) -> None:
    if not 0 <= k <= n or n < 1:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if not 0.0 < a < 1.0:
        raise ValueError(f"the error level must lie in (0, 1), got {a}")


def binomial_lower(k: int, n: int, a: float) -> float:
    """One-sided lower confidence bound on ``p`` at level ``1 - a``."""
    _check(k, n, a)
    return 0.0 if k == 0 else float(stats.beta.ppf(a, k, n - k + 1))


def binomial_upper(k: int, n: int, a: float) -> float:
    """One-sided upper confidence bound on ``p`` at level ``1 - a``."""
    _check(k, n, a)
    return 1.0 if k == n else float(stats.beta.ppf(1.0 - a, k + 1, n - k))
