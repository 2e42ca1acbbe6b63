"""The label half shared by regression mechanisms that split ``eps`` into a cell part and a label.

A mechanism with budget ``eps``, split ``rho`` and label bound ``[lo, hi]`` releases the holder's
cell through some channel with budget ``rho eps`` and its label exactly as
:class:`~ldptree.mechanisms.RRLaplaceMechanism` does: clipped, rounded at random (unbiasedly) to
one of ``levels + 1`` levels ``t`` (``levels = label_levels((1 - rho) eps)``, step
``(hi - lo) / levels``), then ``code = clamp(t + W, -margin, levels + margin)`` with ``W`` the exact
two-sided geometric law of budget ``(1 - rho) eps`` over the whole level span. The released label
``y~ = lo + step code`` has mean ``clip(y)`` (up to the clamp's ``e^{-40}``-scale bias) and, given
the record, is independent of the cell channel.

Debiasing a cell channel whose per-cell indicator ``I_j`` has mean ``offset + slope 1{j = j_i}``
(:func:`~ldptree.mechanisms.debias_indicators`): ``W_ij = (I_ij - offset) / slope``,
``c^_j = sum_i W_ij`` and ``s^_j = sum_i W_ij y~_i``.

Variance of ``s^_j`` per holder (:meth:`GeometricLabel.label_sum_variance`). ``W`` and ``y~`` are
independent given the record; with ``v_own``/``v_other`` the variance of ``W`` for a holder in /
out of cell ``j`` and ``v = max(v_own, v_other)``, ``v_n`` the geometric noise's variance in label
units, ``V = value(T)`` the random level's value (``E V = clip(y)``, ``E V^2 <= M^2`` with
``M = max(|lo|, |hi|)`` and ``Var V <= step^2 / 4``):

* own cell: ``(v_own + 1) (E V^2 + v_n) - y^2 <= v M^2 + step^2 / 4 + (v + 1) v_n``;
* other cell: ``v_other (E V^2 + v_n) <= v M^2 + v v_n``;

so one holder adds at most ``v M^2 + (v + 1) v_n + step^2 / 4``.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ldptree._validation import to_budget_split
from ldptree.mechanisms._kit import (
    Indicator,
    LabelRelease,
    RealLabels,
    RegressionMechanism,
    debias_indicators,
    label_level,
    label_levels,
)
from ldptree.mechanisms._noise import BitFlip, Geometric, _check_precision
from ldptree.mechanisms._variance import (
    CellVariance,
    ExactCellVariance,
    check_label_moments,
    indicator_label_variance,
    indicator_variances,
    label_sum_variances,
)
from ldptree.protocols import CellEstimates

__all__ = ["BitPrecision", "CellBits", "GeometricLabel", "SplitBudget"]


@attrs.frozen
class SplitBudget(RegressionMechanism):
    """Base of a regression kit mechanism with the fields ``epsilon``, ``label_bound`` and
    ``budget_split`` (first, in this order; a subclass adds its own after them): ``rho eps`` for
    the cell release, ``(1 - rho) eps`` for the label release; its releases are checked when it
    is constructed. :class:`~ldptree.mechanisms.RRLaplaceMechanism` documents the fields."""

    budget_split: float = attrs.field(default=0.5, converter=to_budget_split)

    @property
    def cell_epsilon(self) -> float:
        """Budget claimed for the cell report: ``rho eps``."""
        return self.budget_split * self.epsilon

    @property
    def label_epsilon(self) -> float:
        """Budget claimed for the label report: ``(1 - rho) eps``."""
        return (1.0 - self.budget_split) * self.epsilon


@attrs.frozen
class BitPrecision(SplitBudget):
    """A split-budget mechanism whose cell noise draws uniform integers of width
    ``precision_bits`` (16, 32, 64 or ``None``: the smallest realising at least 99% of the cell
    budget), a field after ``budget_split``."""

    precision_bits: int | None = attrs.field(default=None, validator=_check_precision)


@attrs.frozen  # (no fields) an attrs base keeps a subclass's inherited fields in order
class CellBits(BitPrecision):
    """The one-hot cell vector through randomized response on every bit (budget ``rho eps / 2``
    per bit: two one-hot vectors differ in two bits)."""

    @property
    def flips(self) -> BitFlip:
        """The randomized response on each cell bit (budget ``rho eps / 2``)."""
        return BitFlip(self.cell_epsilon / 2.0, self.precision_bits)

    @property
    def count_variance(self) -> float:
        """Variance one holder adds to a debiased cell count: ``q'(1 - q') / (1 - 2q')^2``."""
        q = self.flips.flip_prob
        return q * (1.0 - q) / (1.0 - 2.0 * q) ** 2


@attrs.frozen  # (no fields) an attrs base keeps a subclass's inherited fields in order
class GeometricLabel(SplitBudget):
    """Base of a split-budget mechanism whose label is the geometric release (module
    docstring): the label's levels, its geometric release ``"code"``, the budget parts,
    the debiasing of an indicator cell channel and the label-sum variance bound."""

    def labels(self) -> RealLabels:
        return RealLabels(self.label_bound, label_levels(self.label_epsilon))

    @property
    def label_noise(self) -> Geometric:
        """The label's geometric noise over the whole level span (budget ``(1 - rho) eps``)."""
        return Geometric(self.label_epsilon, span=self.labels().levels)

    def label_release(self) -> LabelRelease:
        """The noisy level ``"code"``."""
        return label_level("code", self.label_noise, self.labels())

    @property
    def label_step(self) -> float:
        """Label units per level: ``(hi - lo) / levels``."""
        return self.labels().step

    @property
    def label_variance(self) -> float:
        """``v_n``: the geometric noise's variance in label units (exact from its counts)."""
        return self.label_step**2 * self.label_noise.variance(0)

    def indicator_cell_variance(self, offset: float, slope: float) -> CellVariance:
        """Inside and outside per-holder bounds for a cell channel whose indicator of cell ``j``
        has mean ``offset + slope 1{j_i = j}`` (count, and label sum with the released label's
        variance ``v_n + step^2 / 4``)."""
        inside, outside = indicator_variances(offset, slope)
        big = max(abs(self.label_bound[0]), abs(self.label_bound[1]))
        v_y = self.label_variance + self.label_step**2 / 4.0
        s_in, s_out = label_sum_variances(max(inside, outside), outside, big, v_y)
        return CellVariance(
            count=max(inside, outside),
            label_sum=s_in,
            count_outside=outside,
            label_sum_outside=s_out,
            label_variance=v_y,
        )

    def exact_indicator_variance(
        self, offset: float, slope: float, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances for a cell channel whose indicator of cell ``j`` is
        Bernoulli with mean ``offset + slope 1{j_i = j}`` (:func:`indicator_variances`) and the
        geometric label (:func:`~ldptree.mechanisms._variance.indicator_label_variance` with
        ``E[Var(y~ | V)] = v_n``, the same for every level up to the clamp's ``e^{-40}``-scale
        effect)."""
        m1, m2 = check_label_moments(label_mean, label_second_moment)
        inside, outside = indicator_variances(offset, slope)
        return indicator_label_variance(
            inside,
            outside,
            label_mean=m1,
            label_second_moment=m2,
            noise_variance=self.label_variance,
        )

    def label_sum_variance(self, v: float) -> float:
        """``v M^2 + (v + 1) v_n + step^2 / 4`` for a cell channel whose debiased indicator has
        variance at most ``v`` (module docstring)."""
        big = max(abs(self.label_bound[0]), abs(self.label_bound[1]))
        return v * big**2 + (v + 1.0) * self.label_variance + self.label_step**2 / 4.0

    def label_budget_part(self) -> tuple[str, float]:
        return ("label (geometric)", self.label_epsilon)

    def debias_cells(
        self, noise: Indicator, stats: dict[str, Any], cell: str, n: int
    ) -> CellEstimates:
        """Counts and label sums from the indicator release ``cell`` and its cross sums with
        ``"code"`` (module docstring)."""
        labels = self.labels()
        return debias_indicators(
            noise,
            stats[cell],
            n,
            cross=stats[f"{cell}*code"],
            total=stats["code"],
            lo=labels.bound[0],
            step=labels.step,
        )

    def decode_labels(self, code: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Released labels ``lo + label_step * code`` as float64."""
        return self.labels().decode(code)
