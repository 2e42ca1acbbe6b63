"""``assert_unbiased``: a statistical check that a mechanism's debiased sums are unbiased.

For a fixed private sample ``(cells, labels)`` the mechanism is run ``repeats`` times with
independent keys; each run is aggregated and debiased. For every cell ``j`` the sample means of
``c^_j`` and ``s^_j`` are compared with the true count and the true sum of *clipped* labels by a
two-sided t-test with a Bonferroni correction over the ``2 L`` statistics. Under the null (exact
unbiasedness) and approximate normality of the means (CLT over holders and repeats), one call
fails with probability at most ``alpha`` (default ``1e-6``); with fixed keys a passing test passes
forever, so the figure is the chance that a given seed is unlucky, not a flakiness rate.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from scipy import stats

from ldptree._typing import FloatArray
from ldptree.protocols import Mechanism
from ldptree.rounds._aggregators import SumAggregator


def debiased_runs(
    mechanism: Mechanism,
    cells: Any,
    labels: Any,
    n_cells: int,
    *,
    key: jax.Array,
    repeats: int,
) -> tuple[FloatArray, FloatArray]:
    """``(counts[repeats, L], label_sums[repeats, L])`` of independent runs of the protocol."""
    aggregator = SumAggregator(mechanism=mechanism, n_cells=n_cells)
    counts = np.empty((repeats, n_cells))
    sums = np.empty((repeats, n_cells))
    for r in range(repeats):
        reports = mechanism.privatize(jax.random.fold_in(key, r), cells, labels, n_cells)
        est = aggregator.finalize(aggregator.update(aggregator.init(), reports))
        counts[r], sums[r] = est.count, est.label_sum
    return counts, sums


def assert_unbiased(
    mechanism: Mechanism,
    cells: Any,
    labels: Any,
    n_cells: int,
    *,
    key: jax.Array,
    label_bound: tuple[float, float],
    repeats: int = 200,
    alpha: float = 1e-6,
) -> None:
    """Raise ``AssertionError`` when some cell's mean estimate is significantly off."""
    if repeats < 10:
        raise ValueError(f"repeats must be >= 10 for a t-test, got {repeats}")
    cells_np = np.asarray(cells, dtype=np.int64)
    clipped = np.clip(np.asarray(labels, dtype=np.float64), *label_bound)
    true_count = np.bincount(cells_np, minlength=n_cells).astype(np.float64)
    true_sum = np.bincount(cells_np, weights=clipped, minlength=n_cells)
    counts, sums = debiased_runs(mechanism, cells, labels, n_cells, key=key, repeats=repeats)
    critical = float(stats.t.ppf(1.0 - alpha / (4.0 * n_cells), repeats - 1))
    for name, runs, truth in (("count", counts, true_count), ("label_sum", sums, true_sum)):
        mean = runs.mean(axis=0)
        se = runs.std(axis=0, ddof=1) / np.sqrt(repeats)
        t_stat = np.abs(mean - truth) / np.where(se > 0, se, np.inf)
        exact_miss = (se == 0) & ~np.isclose(mean, truth, rtol=1e-9, atol=1e-9)
        worst = int(np.argmax(np.where(exact_miss, np.inf, t_stat)))
        if exact_miss.any() or t_stat[worst] > critical:
            raise AssertionError(
                f"{name} of cell {worst} looks biased: mean {mean[worst]:.6g} over {repeats} "
                f"runs vs truth {truth[worst]:.6g} (|t| = {t_stat[worst]:.3g} > {critical:.3g}, "
                f"family-wise false-failure rate {alpha:g})"
            )
