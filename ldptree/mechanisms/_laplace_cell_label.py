"""Noise on the one-hot cell vector and on ``V = Y U`` for a real label (PHIST), built on the kit.

With label bound ``[lo, hi]`` (centre ``c``), holder ``i`` in cell ``j_i`` with label ``y_i``
encodes ``U_i = e_{j_i} in {0, 1}^L`` and a label vector ``V_i in {0, ..., m}^L`` that holds the
label's level ``t_i`` (``y_i`` clipped and rounded at random to one of ``m + 1`` evenly spaced
levels, unbiasedly) in the record's cell and the centre level ``m / 2`` elsewhere. Every
coordinate is released with independent exact two-sided geometric noise
(:class:`~ldptree.mechanisms.Geometric`): ``U`` at ``eps / 4`` per unit, ``V`` at ``eps / 2`` over
the whole level span. In label units this is the discrete analogue of the PHIST release
``(y_i - c) U_i + Laplace(4 M / eps)^L`` with ``M = (hi - lo) / 2``.

Privacy, as implemented: ``U`` of two records differ in at most two coordinates by one unit each
(``eps / 2``); ``V`` differs in one coordinate by at most ``m`` levels (same cell) or in two
coordinates by ``|t - m/2| + |t' - m/2| <= m`` levels (different cells): ``eps / 2``. The realised
integer counts obey these bounds exactly, so the mechanism is certified pure as sampled.

Debiasing: ``c^_j = sum_i U~_ij`` and ``s^_j = c c^_j + step (sum_i V~_ij - n m / 2)`` are unbiased
for the count and the label sum ``sum_i clip(y_i) 1{j_i = j}`` (symmetric noise, unbiased
rounding), up to the clamp's bias (``e^{-40}`` scale).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import jax
import numpy as np

from ldptree._validation import check_int
from ldptree._xp import as_float, namespace
from ldptree.mechanisms._kit import (
    CellRelease,
    RealLabels,
    RegressionMechanism,
    Release,
    cell_indicator,
    label_levels,
)
from ldptree.mechanisms._noise import Geometric
from ldptree.mechanisms._variance import ExactCellVariance, check_label_moments
from ldptree.protocols import CellEstimates

__all__ = ["LaplaceCellLabelMechanism", "LaplaceCellLabelReport"]


class LaplaceCellLabelReport(NamedTuple):
    """Reports of ``n`` holders as integer codes: ``cell`` and ``label``, both ``int32[n, L]``."""

    cell: jax.Array
    label: jax.Array


@attrs.frozen
class LaplaceCellLabelMechanism(RegressionMechanism):
    """Exact Laplace-like noise on ``U`` and on the label vector ``V`` (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0``; ``eps / 2`` on ``U`` and ``eps / 2`` on ``V``.
    label_bound:
        ``M`` for ``[-M, M]`` or ``(lo, hi)``; labels are clipped into it. Must not come from
        private labels.
    """

    report_type = LaplaceCellLabelReport

    # -- the kit's declarations ----------------------------------------------------------------
    def labels(self) -> RealLabels:
        return RealLabels(self.label_bound, label_levels(self.epsilon / 2.0))

    @property
    def cell_noise(self) -> Geometric:
        return Geometric(self.epsilon / 4.0, span=1)

    @property
    def label_noise(self) -> Geometric:
        return Geometric(self.epsilon / 2.0, span=self.labels().levels)

    def releases(self) -> tuple[Release, ...]:
        labels = self.labels()
        levels = np.arange(labels.size, dtype=np.int32)
        centre = np.full(labels.size, labels.levels // 2, dtype=np.int32)
        return (
            cell_indicator("cell", self.cell_noise, labels),
            CellRelease("label", self.label_noise, on=levels, off=centre),
        )

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        half = self.epsilon / 2.0
        return (("cell one-hot (geometric)", half), ("label x cell one-hot (geometric)", half))

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """``c^ = sum U~``, ``s^ = c c^ + step (sum V~ - n m / 2)`` (module docstring)."""
        labels = self.labels()
        xp = namespace(stats)  # traceable, see ldptree._xp
        count = as_float(stats["cell"], xp)
        centred = as_float(stats["label"], xp) - n * (labels.levels // 2)
        label_sum = labels.center * count + labels.step * centred
        return CellEstimates(count=count, label_sum=label_sum, n=int(n))

    # -- constants -------------------------------------------------------------------------------
    @property
    def label_center(self) -> float:
        return (self.label_bound[0] + self.label_bound[1]) / 2.0

    @property
    def label_half_range(self) -> float:
        """``M = (hi - lo) / 2``."""
        return (self.label_bound[1] - self.label_bound[0]) / 2.0

    @property
    def count_variance(self) -> float:
        """Variance one holder adds to a debiased cell count (one coordinate's noise)."""
        return self.cell_noise.variance(0)

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances. ``c^_j`` reads ``U~_ij = 1{j_i = j} + Z``: the cell noise's
        variance at input 1 inside, 0 outside. A holder's part of ``s^_j`` is
        ``c U~_ij + step (V~_ij - m/2)``: inside ``V + c Z_U + step Z_V`` (``V = lo + step t``),
        variance ``m2 - m1^2 + c^2 var_U(1) + step^2 var_V``; outside ``c Z_U + step Z_V`` at the
        centre level, ``c^2 var_U(0) + step^2 var_V`` (``var_V`` the label noise's, the same for
        every level up to the clamp's ``e^{-40}``-scale effect). Independent of ``n_cells``."""
        check_int(n_cells, "n_cells", minimum=1)
        m1, m2 = check_label_moments(label_mean, label_second_moment)
        labels = self.labels()
        zero, one = self.cell_noise.variance(0), self.cell_noise.variance(1)
        label_noise = labels.step**2 * self.label_noise.variance(labels.levels // 2)
        centre2 = labels.center**2
        return ExactCellVariance(
            count_inside=one,
            count_outside=zero,
            label_sum_inside=m2 - m1**2 + centre2 * one + label_noise,
            label_sum_outside=centre2 * zero + label_noise,
        )
