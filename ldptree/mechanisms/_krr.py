"""k-ary randomized response (k-RR) on the cell index, on (cell, label level) pairs and on
(cell, class) pairs, built on the kit (:class:`~ldptree.mechanisms.IndexRelease`).

Each holder releases one integer: its index ``i`` among ``k`` values, kept with probability
``T / 2^64`` and replaced by each other value with probability ``m / 2^64``,
``m = ceil(2^64 / (e^eps_i + k - 1))`` (:class:`~ldptree.mechanisms.KaryResponse`, rounded up:
towards privacy; the realised ratio ``T / m <= e^eps_i``). With ``o = m / 2^64`` and
``a = (T - m) / 2^64`` the indicator of value ``v`` has mean ``o + a 1{v = i}``, so
``N^_v = (C_v - n o) / a`` is unbiased for the number of holders whose index is ``v``
(``C_v`` reports of ``v`` among ``n``); one holder adds at most
``v_k = max(p (1 - p), o (1 - o)) / a^2`` (``p = o + a``) to its variance
(:attr:`KaryResponse.indicator_variance`).

* :class:`KRRLaplaceMechanism` (regression): k-RR on the cell (``k = L``, budget ``rho eps``) plus
  the geometric label of :mod:`~ldptree.mechanisms._geometric_label` (``(1 - rho) eps``). Counts
  ``c^_j = N^_j``, label sums ``s^_j = (lo (C_j - n o) + step (S_j - o S)) / a`` with
  ``S_j = sum_{i reports j} code_i``; ``Var c^_j <= v_k``,
  ``Var s^_j <= v_k M^2 + (v_k + 1) v_n + step^2 / 4`` per holder.
* :class:`KRRJointMechanism` (regression): k-RR on the pair ``(cell, t)`` of the cell and the
  label's random level (``k = L (levels + 1)``, the whole ``eps``; no label noise). With
  ``N^_jt`` the debiased pair counts and ``value(t) = lo + step t``: ``c^_j = sum_t N^_jt`` and
  ``s^_j = sum_t value(t) N^_jt``, unbiased because the level is an unbiased rounding of the
  clipped label. Per holder, with ``m = levels + 1`` values per cell, the report falls in cell
  ``j``'s block with probability ``P = a 1{j = j_i} + m o``, so ``Var c^_j <= max P (1 - P) / a^2``
  over the two cases, and ``s^_j + o sum_t value(t) / a = value(t_R) 1{R in j} / a``
  gives ``Var s^_j <= M^2 (a + m o) / a^2``.
* :class:`KRRCellClassMechanism` (classification): k-RR on the pair ``(cell, class)``
  (``k = L (K + 1)``, the whole ``eps``); an undeclared class code is the extra value ``K`` of its
  cell and is counted nowhere. ``V^_jk = N^_jk`` (``float[L, K]``), ``c^_j = sum_{k < K} N^_jk``;
  ``Var V^_jk <= v_k`` and ``Var c^_j <= max P (1 - P) / a^2`` with ``P = a 1{j = j_i} + K o``.

Report size: one integer in ``[0, k)`` (``ceil(log2 k)`` bits) instead of ``L`` bits, plus a label
integer for :class:`KRRLaplaceMechanism`. Random words per holder: 2 for the index (one 64-bit
uniform), 1 for the label's rounding, 2 for the label noise. Count variance grows like
``k / e^eps_i``: k-RR wins when ``k`` is small against ``e^eps_i`` (few cells or large budgets),
unary encodings (``~ 4 e^eps / (e^eps - 1)^2`` whatever ``L``) when it is large.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import jax
import numpy as np

from ldptree._validation import check_int
from ldptree._xp import as_float, namespace
from ldptree.mechanisms._item_mechanisms import ItemCellLabel
from ldptree.mechanisms._kit import (
    ClassMechanism,
    IndexRelease,
    KitMechanism,
    RealLabels,
    RegressionMechanism,
    Release,
    _to_levels,
)
from ldptree.mechanisms._noise import KaryResponse
from ldptree.mechanisms._variance import (
    CellVariance,
    ExactCellVariance,
    check_label_moments,
    indicator_class_variance,
    indicator_variances,
)
from ldptree.protocols import CellEstimates

__all__ = [
    "KRRCellClassMechanism",
    "KRRJointMechanism",
    "KRRLaplaceMechanism",
    "KRRLaplaceReport",
    "KRRPairReport",
]


def _debiased(noise: KaryResponse, counts: Any, n: int) -> Any:
    """``N^_v = (C_v - n o) / a`` for every value ``v`` (float64 NumPy on concrete counts,
    ``jax.numpy`` on traced ones: :mod:`ldptree._xp`)."""
    return (as_float(counts, namespace(counts)) - n * noise.offset) / noise.slope


def _bernoulli_variance(noise: KaryResponse, p: float) -> float:
    """``p (1 - p) / a^2``: the variance one holder adds to ``(B - E0) / a`` for a Bernoulli
    ``B`` with ``P(B = 1) = p``."""
    return p * (1.0 - p) / noise.slope**2


def _block_variance(noise: KaryResponse, per_cell: int) -> float:
    """``max P (1 - P) / a^2`` over ``P in {a + per_cell o, per_cell o}``: the variance one holder
    adds to ``(1{report in a cell's block of per_cell values} - per_cell o) / a``."""
    inside = noise.slope + per_cell * noise.offset
    outside = per_cell * noise.offset
    return max(inside * (1.0 - inside), outside * (1.0 - outside)) / noise.slope**2


class KRRLaplaceReport(NamedTuple):
    """Reports of ``n`` holders: k-RR cell indices ``cell`` ``int32[n]`` and noisy label levels
    ``code`` ``int32[n]`` (the released label is ``lo + label_step * code``)."""

    cell: jax.Array
    code: jax.Array


@attrs.frozen
class KRRLaplaceMechanism(ItemCellLabel, KitMechanism):
    """k-ary randomized response on the cell index + one exact noisy label (module docstring).

    Parameters
    ----------
    epsilon, label_bound, budget_split:
        As for :class:`RRLaplaceMechanism`.
    """

    report_type = KRRLaplaceReport
    item_kind = "k-ary randomized response"

    @property
    def cell_release(self) -> IndexRelease:
        """The k-RR cell index (budget ``rho eps``)."""
        return IndexRelease("cell", self.cell_epsilon)

    def cell_noise(self, n_cells: int) -> KaryResponse:
        """The k-RR over ``n_cells`` cells (budget ``rho eps``)."""
        return KaryResponse(self.cell_epsilon, check_int(n_cells, "n_cells", minimum=1))

    def item_law(self, n_cells: int) -> KaryResponse:
        return self.cell_noise(n_cells)


class KRRPairReport(NamedTuple):
    """Reports of ``n`` holders: one k-RR index ``pair`` ``int32[n]`` per holder, the value
    ``cell * per_cell + label index``."""

    pair: jax.Array


@attrs.frozen
class KRRJointMechanism(RegressionMechanism):
    """k-ary randomized response on the pair (cell, label level) (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0`` (one release).
    label_bound:
        ``M`` for ``[-M, M]`` or a pair ``(lo, hi)``; must not come from private labels.
    levels:
        Even number ``>= 2`` of label steps (``levels + 1`` label values per cell): more levels
        lower the rounding's variance (at most ``step^2 / 4``) but raise ``k = L (levels + 1)``.
    """

    levels: int = attrs.field(default=2, converter=_to_levels)

    report_type = KRRPairReport

    def labels(self) -> RealLabels:
        return RealLabels(self.label_bound, self.levels)

    def pair_noise(self, n_cells: int) -> KaryResponse:
        """The k-RR over ``n_cells (levels + 1)`` pairs."""
        return KaryResponse(
            self.epsilon, check_int(n_cells, "n_cells", minimum=1) * (self.levels + 1)
        )

    def releases(self) -> tuple[Release, ...]:
        size = self.levels + 1
        return (IndexRelease("pair", self.epsilon, label_index=np.arange(size)),)

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Counts ``sum_t N^_jt`` and label sums ``sum_t value(t) N^_jt`` (module docstring)."""
        counts = stats["pair"]
        pairs = _debiased(self.pair_noise(np.shape(counts)[0]), counts, n)
        values = self.labels().decode(np.arange(self.levels + 1))
        return CellEstimates(count=pairs.sum(axis=1), label_sum=pairs @ values, n=int(n))

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds for ``n_cells`` cells (module docstring)."""
        noise = self.pair_noise(n_cells)
        per_cell = self.levels + 1
        big = max(abs(self.label_bound[0]), abs(self.label_bound[1]))
        inside = noise.slope + per_cell * noise.offset
        outside = per_cell * noise.offset
        return CellVariance(
            count=_block_variance(noise, per_cell),
            label_sum=big**2 * inside / noise.slope**2,
            count_outside=outside * (1.0 - outside) / noise.slope**2,
            label_sum_outside=big**2 * outside / noise.slope**2,
        )

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances. The report ``R`` is the own pair with probability
        ``o + a`` and any other with ``o``, so for ``f(R)`` of the report ``E f(R) = o sum f + a
        f(own)``. With ``m = levels + 1`` values per cell, ``S1 = sum_t value(t)`` and
        ``S2 = sum_t value(t)^2``: the block indicator of cell ``j`` is Bernoulli with
        ``P = a 1{j_i = j} + m o`` (count ``P (1 - P) / a^2``), and
        ``a s^_j``-contribution ``value(t_R) 1{R in j}`` (up to a constant) has mean
        ``a 1{j_i = j} m1 + o S1`` and second moment ``a 1{j_i = j} m2 + o S2``, so the label
        sum adds ``(a m2 + o S2 - (a m1 + o S1)^2) / a^2`` inside and
        ``(o S2 - (o S1)^2) / a^2`` outside."""
        m1, m2 = check_label_moments(label_mean, label_second_moment)
        noise = self.pair_noise(n_cells)
        o, a = noise.offset, noise.slope
        values = self.labels().decode(np.arange(self.levels + 1))
        s1, s2 = float(values.sum()), float((values**2).sum())
        per_cell = self.levels + 1
        return ExactCellVariance(
            count_inside=_bernoulli_variance(noise, a + per_cell * o),
            count_outside=_bernoulli_variance(noise, per_cell * o),
            label_sum_inside=(a * m2 + o * s2 - (a * m1 + o * s1) ** 2) / a**2,
            label_sum_outside=(o * s2 - (o * s1) ** 2) / a**2,
        )


@attrs.frozen
class KRRCellClassMechanism(ClassMechanism):
    """k-ary randomized response on the pair (cell, class) (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0`` (one release).
    n_classes:
        ``K >= 2``; class codes outside ``0..K-1`` report the extra value ``K`` of their cell.
    """

    report_type = KRRPairReport

    def pair_noise(self, n_cells: int) -> KaryResponse:
        """The k-RR over ``n_cells (K + 1)`` pairs."""
        return KaryResponse(
            self.epsilon, check_int(n_cells, "n_cells", minimum=1) * (self.n_classes + 1)
        )

    def releases(self) -> tuple[Release, ...]:
        return (IndexRelease("pair", self.epsilon, label_index=np.arange(self.n_classes + 1)),)

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Per-(cell, class) counts ``float[L, K]`` and their row sums (module docstring)."""
        counts = stats["pair"]
        pairs = _debiased(self.pair_noise(np.shape(counts)[0]), counts, n)[:, : self.n_classes]
        return CellEstimates(count=pairs.sum(axis=1), label_sum=pairs, n=int(n))

    def report_width(self, n_cells: int) -> int:
        """Numbers released per holder: 1."""
        return 1

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds for ``n_cells`` cells (module docstring)."""
        noise = self.pair_noise(n_cells)
        block = self.n_classes * noise.offset
        return CellVariance(
            count=_block_variance(noise, self.n_classes),
            label_sum=noise.indicator_variance,
            count_outside=block * (1.0 - block) / noise.slope**2,
            label_sum_outside=indicator_variances(noise.offset, noise.slope)[1],
        )

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances: the block of cell ``j``'s ``K`` declared classes holds the
        report with probability ``P = a 1{j_i = j} + K o`` (count ``P (1 - P) / a^2``, a holder
        with an undeclared class counting as outside); ``V^_jk`` is one debiased indicator
        (:func:`~ldptree.mechanisms._variance.indicator_class_variance`)."""
        share, _ = check_label_moments(label_mean, label_second_moment, indicator=True)
        noise = self.pair_noise(n_cells)
        o, a, k = noise.offset, noise.slope, self.n_classes
        return indicator_class_variance(
            _bernoulli_variance(noise, a + k * o), _bernoulli_variance(noise, k * o), o, a, share
        )
