"""Predicted variance of a mechanism's debiased cell estimates, from public quantities only.

A mechanism that implements :class:`SupportsVariance` says, for a partition of ``n_cells`` cells,
how much variance **one holder** adds to a debiased cell count ``c^_j`` and to a debiased label
sum ``s^_j`` (per-class count for class mechanisms), as an upper bound over the holder's record
(in cell ``j`` or not, any label in the declared bound) and over cells. With ``n`` independent
holders the variance of ``c^_j`` is at most ``n * count`` and that of ``s^_j`` at most
``n * label_sum``. These bounds use only the published partition size, epsilon and the declared
label bound, so comparing them (to pick a mechanism or a budget split) costs no privacy.

Many frequency oracles treat the holders of cell ``j`` and the others very differently (optimized
unary encoding keeps the own bit with probability 1/2 whatever epsilon, so an own-cell holder adds
far more variance than an outside one). A mechanism may therefore also bound what a holder
*outside* cell ``j`` adds (``count_outside``, ``label_sum_outside``). For a cell holding a share
``w`` of the ``n`` holders the variance of ``c^_j`` is then at most
``n (w count + (1 - w) count_outside)`` (:meth:`CellVariance.mixed`); the variance-aware choice
uses ``w = 1 / L``.
"""

from __future__ import annotations

import math
from typing import Protocol, runtime_checkable

import attrs

__all__ = ["CellVariance", "SupportsVariance", "indicator_variances", "label_sum_variances"]


@attrs.frozen
class CellVariance:
    """Per-holder variance bounds of the debiased estimates of one cell.

    ``count``: variance one holder adds to ``c^_j``; ``label_sum``: variance one holder adds to
    ``s^_j`` (label units squared for real labels; for class mechanisms, to one per-class count).
    ``count_outside`` / ``label_sum_outside``: the same for a holder outside cell ``j`` only
    (``None``: not given, the worst case applies to every holder). ``label_variance``: for a
    mechanism whose label sum is ``s^_j = sum_i W_ij y~_i`` (a debiased cell indicator ``W``
    times an independent released label ``y~``), a bound on ``Var(y~)``; it lets
    :meth:`mean_error` use the exact form of the error of a cell mean.
    """

    count: float
    label_sum: float
    count_outside: float | None = None
    label_sum_outside: float | None = None
    label_variance: float | None = None

    def mixed(self, share: float) -> tuple[float, float]:
        """Per-holder ``(count, label_sum)`` variance averaged over holders when a cell holds the
        fraction ``share`` of them: ``share * inside + (1 - share) * outside`` (the worst case
        where no outside bound is given)."""
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"share must be in [0, 1], got {share}")
        out_c = self.count if self.count_outside is None else self.count_outside
        out_s = self.label_sum if self.label_sum_outside is None else self.label_sum_outside
        return (
            share * self.count + (1.0 - share) * out_c,
            share * self.label_sum + (1.0 - share) * out_s,
        )

    def mean_error(self, magnitude: float, share: float) -> float:
        """Per-holder bound on ``Var(s^_j - mu c^_j)`` (the error of the cell mean ``s^_j / c^_j``
        is this over ``c_j^2`` by the delta method) when labels lie within ``magnitude`` of the
        cell mean ``mu`` and the cell holds the fraction ``share`` of the holders.

        With ``label_variance`` (``v_y``) and the indicator variances ``v_in = count``,
        ``v_out = count_outside``: ``W (y~ - mu)`` has variance ``v_in D^2 + (v_in + 1) v_y``
        for an own-cell holder and ``v_out (D^2 + v_y)`` for another, ``|D| <= magnitude``.
        Otherwise, by Cauchy-Schwarz, ``(sqrt(V_s) + magnitude sqrt(V_c))^2`` with the averaged
        bounds of :meth:`mixed`.
        """
        if self.label_variance is None:
            count, label_sum = self.mixed(share)
            return float((math.sqrt(label_sum) + magnitude * math.sqrt(count)) ** 2)
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"share must be in [0, 1], got {share}")
        v_in = self.count
        v_out = self.count if self.count_outside is None else self.count_outside
        d2, v_y = magnitude**2, self.label_variance
        return share * (v_in * d2 + (v_in + 1.0) * v_y) + (1.0 - share) * v_out * (d2 + v_y)


def indicator_variances(offset: float, slope: float) -> tuple[float, float]:
    """Variance one holder adds to a debiased indicator ``(Z - offset) / slope`` of a cell, for a
    holder inside the cell (``P(Z = 1) = offset + slope``) and outside (``P(Z = 1) = offset``)."""
    p = offset + slope
    return p * (1.0 - p) / slope**2, offset * (1.0 - offset) / slope**2


def label_sum_variances(
    inside: float, outside: float, magnitude: float, label_variance: float
) -> tuple[float, float]:
    """Variance one holder adds to ``s^_j = sum_i W_ij y~_i`` where ``W_ij`` is the debiased
    indicator (variances ``inside`` / ``outside``) and ``y~_i`` an independent released label
    with mean ``y``, ``|y| <= magnitude`` and variance at most ``label_variance``:
    inside ``(v_in + 1)(y^2 + v_y) - y^2 <= v_in M^2 + (v_in + 1) v_y``; outside
    ``v_out (y^2 + v_y) <= v_out (M^2 + v_y)``."""
    big2 = magnitude**2
    return inside * big2 + (inside + 1.0) * label_variance, outside * (big2 + label_variance)


@runtime_checkable
class SupportsVariance(Protocol):
    """A mechanism that predicts the variance of its debiased cell estimates."""

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds for a partition of ``n_cells`` cells."""
        ...
