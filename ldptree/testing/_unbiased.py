"""``assert_unbiased``: a statistical check, with stated power, that a mechanism's debiased sums
are unbiased.

For a fixed private sample ``(cells, labels)`` the mechanism is run ``R`` times with independent
keys; each run is aggregated and debiased. For every cell ``j`` the sample means of the count
``c^_j`` and the label sum ``s^_j`` are compared with the true count ``c_j`` and the true sum of
*clipped* labels ``s_j`` by a two-sided t-test, with a Bonferroni correction over the ``2 L``
statistics. Under the null (exact unbiasedness) and approximate normality of the means (CLT over
holders and runs), one call fails with probability at most ``alpha`` (default ``1e-6``); with a
fixed key a passing check passes forever, so the figure is the chance that a given seed is
unlucky, not a flakiness rate.

**Power: the default design.** A check can only catch a bias that is large against the noise of
the runs' mean, and a debiasing error only shows on labels away from the centre of the bound
(an error in ``(y - m) / (1 - 2q)`` vanishes at ``y = m``). Called without ``cells`` and
``labels``, the check builds its own design:

* ``L = n_cells`` cells (default 2) holding shares ``1 : 2 : ... : L`` of the holders (uneven, so
  that a wrong flip probability biases the counts);
* labels off-centre, at the end of ``label_bound = [lo, hi]`` of larger absolute value: with
  ``m`` the centre and ``h`` the half-width, 70 % uniform within ``0.1 h`` of that end and 30 %
  beyond it by ``h`` (clipped by the mechanism: clipping is checked too); for a class mechanism
  (its ``labels()`` are ``ClassLabels``) 85 % of the labels are that end's class code and 15 % the
  other's;
* sizes chosen for the power: a pilot of 200 runs of 2,000 holders (its own keys) measures the
  per-holder variance of every statistic; from its upper 99.5 % confidence bound the check takes
  ``R`` runs of ``n`` holders such that a bias of ``detect`` (default 5 %) of a statistic's
  *scale* fails the test with probability at least ``power`` (default 0.99). The scale of a
  count is the true count ``c_j``; of a label sum, the true sum measured from the bound's centre,
  ``|s_j - m c_j|`` (for class codes, whose sums count the holders of a class, from the lower
  end: ``|s_j - lo c_j|``).

So with the defaults the check catches, with probability at least 0.99 (normal approximation;
plus at most the 0.5 % chance that the pilot underestimates the noise), an error of 5 % in the
debiasing of the centred labels (or of the raw label sums, which are at least as large here),
and a wrong flip probability whenever it moves a cell's count by 5 % (a count debiased with
flip probability ``q'`` instead of ``q`` is off by ``(q - q') (n / c_j - 2) / (1 - 2q')`` of
``c_j``: with the design's shares, a flip probability off by ``0.05 (1 - 2q')``, e.g. 0.012 for
:class:`~ldptree.mechanisms.RRLaplaceMechanism` at ``eps = 2``, where ``q = 0.378``). The cost
``R n`` grows like the mechanism's per-holder variance, i.e. like ``1 / eps^2`` for small
budgets; above ``max_reports`` holder reports the check refuses with ``ValueError`` and says
which ``detect`` it could afford.

With ``cells`` and ``labels`` given, the check runs that design ``repeats`` times (default 200)
and reports the bias it could detect (:attr:`UnbiasedCheck.detectable`).
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import jax
import numpy as np
from scipy import stats

from ldptree._typing import FloatArray
from ldptree._validation import check_int, check_open_unit, check_positive
from ldptree.estimators._aggregate import SumAggregator
from ldptree.mechanisms import ClassLabels
from ldptree.protocols import Mechanism

#: Pilot of the default design: runs and holders per run.
PILOT_RUNS = 200
PILOT_HOLDERS = 2000
#: Runs of the default design (more only when a run would exceed ``MAX_HOLDERS``).
DESIGN_RUNS = 50
MAX_HOLDERS = 1_000_000
#: The pilot's variance is inflated to this upper confidence bound.
PILOT_CONFIDENCE = 0.995


@attrs.frozen
class UnbiasedCheck:
    """What a passing :func:`assert_unbiased` ran: ``repeats`` runs of ``n_holders`` holders
    in ``n_cells`` cells, at family-wise false-failure rate ``alpha``; ``detectable``: the
    smallest bias, relative to a statistic's scale (module docstring), that the runs detect with
    probability ``power`` for every statistic, estimated from the runs' own spread (so it
    scatters by about ``1 / sqrt(2 repeats)`` around what the design planned)."""

    n_holders: int
    n_cells: int
    repeats: int
    alpha: float
    power: float
    detectable: float


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


def unbiased_design(
    mechanism: Mechanism, n_holders: int, n_cells: int, label_bound: tuple[float, float]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The default design's ``(cells, labels)`` for ``n_holders`` holders (module docstring)."""
    lo, hi = float(label_bound[0]), float(label_bound[1])
    shares = np.arange(1, n_cells + 1, dtype=np.float64)
    sizes = np.floor(n_holders * shares / shares.sum()).astype(np.int64)
    sizes[-1] += n_holders - sizes.sum()
    cells = np.repeat(np.arange(n_cells), sizes)
    # deterministic labels (the design is not random): positions within each cell
    u = (np.arange(n_holders) * 0.6180339887498949) % 1.0
    end, other = (hi, lo) if abs(hi) >= abs(lo) else (lo, hi)
    if _is_class(mechanism):
        codes: np.ndarray[Any, Any] = np.where(u < 0.85, end, other).astype(np.int64)
        return cells, codes
    h, inward = (hi - lo) / 2.0, np.sign(other - end)
    near = end + inward * 0.1 * h * (u / 0.7)
    labels: FloatArray = np.where(u < 0.7, near, end - inward * h)  # 30 % are clipped to end
    return cells, labels


def _is_class(mechanism: Mechanism) -> bool:
    labels_of = getattr(mechanism, "labels", None)
    return callable(labels_of) and isinstance(labels_of(), ClassLabels)


def _truth(
    mechanism: Mechanism,
    cells: np.ndarray[Any, Any],
    labels: Any,
    n_cells: int,
    label_bound: tuple[float, float],
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """True counts, true sums of clipped labels, and the label sums' scale (module docstring)."""
    clipped = np.clip(np.asarray(labels, dtype=np.float64), *label_bound)
    count: FloatArray = np.bincount(cells, minlength=n_cells).astype(np.float64)
    label_sum: FloatArray = np.bincount(cells, weights=clipped, minlength=n_cells).astype(float)
    origin = label_bound[0] if _is_class(mechanism) else (label_bound[0] + label_bound[1]) / 2.0
    scale: FloatArray = np.abs(label_sum - origin * count)
    return count, label_sum, scale


def _critical(alpha: float, n_cells: int, repeats: int) -> float:
    return float(stats.t.ppf(1.0 - alpha / (4.0 * n_cells), repeats - 1))


def _plan(
    mechanism: Mechanism,
    n_cells: int,
    label_bound: tuple[float, float],
    *,
    key: jax.Array,
    alpha: float,
    detect: float,
    power: float,
    max_reports: int,
) -> tuple[int, int]:
    """``(repeats, holders per run)`` of the default design from the pilot (module docstring)."""
    cells, labels = unbiased_design(mechanism, PILOT_HOLDERS, n_cells, label_bound)
    count, _, label_scale = _truth(mechanism, cells, labels, n_cells, label_bound)
    runs = debiased_runs(mechanism, cells, labels, n_cells, key=key, repeats=PILOT_RUNS)
    inflate = (PILOT_RUNS - 1) / stats.chi2.ppf(1.0 - PILOT_CONFIDENCE, PILOT_RUNS - 1)
    # per holder: variance of a run's statistic / n, and the scale of the statistic / n
    per_holder = np.concatenate([r.var(axis=0, ddof=1) for r in runs]) * inflate / PILOT_HOLDERS
    scale = np.concatenate([count, label_scale]) / PILOT_HOLDERS
    if np.any(scale <= 0):
        raise ValueError("the design has a statistic of scale 0; widen label_bound")
    z = _critical(alpha, n_cells, DESIGN_RUNS) + float(stats.norm.ppf(power))
    reports = math.ceil(float(np.max(z**2 * per_holder / (detect * scale) ** 2)))
    if reports > max_reports:
        affordable = detect * math.sqrt(reports / max_reports)
        raise ValueError(
            f"detecting a bias of detect={detect:g} with power={power:g} needs {reports:,} "
            f"holder reports for this mechanism (its noise per holder is large), more than "
            f"max_reports={max_reports:,}; pass detect={affordable:.2g} or a larger max_reports"
        )
    repeats = max(DESIGN_RUNS, math.ceil(reports / MAX_HOLDERS))
    holders = max(math.ceil(reports / repeats), 100 * n_cells)
    return repeats, holders


def assert_unbiased(
    mechanism: Mechanism,
    cells: Any = None,
    labels: Any = None,
    n_cells: int | None = None,
    *,
    key: jax.Array,
    label_bound: tuple[float, float],
    repeats: int | None = None,
    alpha: float = 1e-6,
    detect: float = 0.05,
    power: float = 0.99,
    max_reports: int = 60_000_000,
) -> UnbiasedCheck:
    """Raise ``AssertionError`` when some cell's mean estimate is significantly off; return what
    was run (module docstring).

    Without ``cells`` and ``labels`` the default design is built (``n_cells`` cells, default 2)
    with the sizes that detect a relative bias ``detect`` with probability ``power``;
    with them, ``repeats`` runs (default 200) of the given sample."""
    alpha = check_open_unit(alpha, "alpha")
    power = check_open_unit(power, "power")
    detect = check_positive(detect, "detect")
    bound = (float(label_bound[0]), float(label_bound[1]))
    if not bound[0] < bound[1]:
        raise ValueError(f"label_bound must be (lo, hi) with lo < hi, got {label_bound!r}")
    if (cells is None) != (labels is None):
        raise ValueError("pass both cells and labels (your design), or neither (the default)")
    if cells is None:
        if repeats is not None:
            raise ValueError("repeats is chosen by the default design; pass cells and labels")
        n_cells = check_int(2 if n_cells is None else n_cells, "n_cells", minimum=2)
        pilot, key = jax.random.split(key)
        repeats, holders = _plan(
            mechanism,
            n_cells,
            bound,
            key=pilot,
            alpha=alpha,
            detect=detect,
            power=power,
            max_reports=check_int(max_reports, "max_reports", minimum=1),
        )
        cells, labels = unbiased_design(mechanism, holders, n_cells, bound)
    else:
        if n_cells is None:
            raise ValueError("n_cells is required with your own cells and labels")
        n_cells = check_int(n_cells, "n_cells", minimum=1)
        repeats = 200 if repeats is None else repeats
    if repeats < 10:
        raise ValueError(f"repeats must be >= 10 for a t-test, got {repeats}")
    cells_np = np.asarray(cells, dtype=np.int64)
    true_count, true_sum, label_scale = _truth(mechanism, cells_np, labels, n_cells, bound)
    counts, sums = debiased_runs(mechanism, cells, labels, n_cells, key=key, repeats=repeats)
    critical = _critical(alpha, n_cells, repeats)
    detectable = 0.0
    for name, runs, truth, scale in (
        ("count", counts, true_count, true_count),
        ("label_sum", sums, true_sum, label_scale),
    ):
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
        reach = (critical + float(stats.norm.ppf(power))) * se
        with np.errstate(divide="ignore", invalid="ignore"):
            relative = np.where(scale > 0, reach / scale, np.inf)
        detectable = max(detectable, float(np.max(relative)))
    return UnbiasedCheck(
        n_holders=int(cells_np.shape[0]),
        n_cells=n_cells,
        repeats=repeats,
        alpha=alpha,
        power=power,
        detectable=detectable,
    )
