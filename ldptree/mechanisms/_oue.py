"""Optimized unary encoding (OUE) of the cell, with a geometric label (LPDT) or of the
cell-by-class one-hot (LPCT), built on the kit.

OUE (Wang et al., 2017) releases the one-hot vector with *asymmetric* bit noise
(:class:`~ldptree.mechanisms.UnaryFlip`): the holder's own coordinate is released as 1 with
probability ``1/2``, every other coordinate with probability ``q' = T / 2^bits``,
``T = ceil(2^bits / (e^eps_c + 1))`` (rounded up: towards privacy). Two records whose 1 sits in
different coordinates differ in two coordinates, with worst-case ratio
``(1/2) / q' * (1 - q') / (1/2) = (1 - q') / q' <= e^eps_c``.

Compared with symmetric randomized response on the same vector (each bit at ``eps_c / 2``,
variance ``e^{eps_c/2} / (e^{eps_c/2} - 1)^2`` per holder), a holder *outside* cell ``j`` adds
``q' (1 - q') / (1/2 - q')^2 = 4 e^eps_c / (e^eps_c - 1)^2`` (before rounding) to ``Var c^_j``:
3.68 against 3.92 at ``eps_c = 1``, 0.076 against 0.181 at ``eps_c = 4``; a holder *inside* adds
that plus 1. OUE wins whenever cells hold a small share of the holders (many cells).

* :class:`OUELaplaceMechanism` (regression): OUE of the cell one-hot with ``eps_c = rho eps`` plus
  the geometric label of :mod:`~ldptree.mechanisms._geometric_label` with ``(1 - rho) eps``; a
  drop-in for :class:`~ldptree.mechanisms.RRLaplaceMechanism`. With ``I_ij`` the released bits,
  ``q'`` and ``a = 1/2 - q'``: ``c^_j = (C_j - n q') / a`` and
  ``s^_j = (lo (C_j - n q') + step (S_j - q' S)) / a`` (``C_j = sum_i I_ij``,
  ``S_j = sum_i I_ij code_i``, ``S = sum_i code_i``), unbiased.
* :class:`OUECellClassMechanism` (classification): OUE of the ``L x K`` one-hot ``e_j e_k^T`` with
  the whole ``eps``; an undeclared class code is the all-zero record (it then differs from any
  record in one coordinate only). ``V^_jk = (C_jk - n q') / a`` is unbiased for the number of
  holders in cell ``j`` with class ``k``, and ``c^_j = sum_k V^_jk``.

Variance per holder (upper bounds, :meth:`cell_variance`): a debiased bit ``(I - q') / a`` has
variance ``1 / (4 a^2)`` for input 1 and ``q' (1 - q') / a^2`` for input 0.

* regression: ``Var c^_j <= 1 / (4 a^2) = v``; ``Var s^_j <= v M^2 + (v + 1) v_n + step^2 / 4``;
* classification: ``Var V^_jk <= 1 / (4 a^2)``;
  ``Var c^_j <= max(1/4 + (K - 1) q' (1 - q'), K q' (1 - q')) / a^2`` (own row, other row).

Report size: ``L`` bits (``L K`` bits for classes) plus one label integer; random words per
holder: ``L / 2`` (16-bit uniforms, two per word, where they realise 99% of the budget; 32- or
64-bit uniforms otherwise) plus 3 for the label.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import jax
import numpy as np

from ldptree._validation import check_int
from ldptree.mechanisms._geometric_label import BitPrecision, GeometricLabel
from ldptree.mechanisms._kit import (
    CellRelease,
    ClassMechanism,
    Release,
    cell_indicator,
    debias_indicators,
)
from ldptree.mechanisms._noise import UnaryFlip, _check_precision
from ldptree.mechanisms._variance import (
    CellVariance,
    ExactCellVariance,
    check_label_moments,
    indicator_class_variance,
)
from ldptree.protocols import CellEstimates

__all__ = [
    "OUECellClassMechanism",
    "OUECellClassReport",
    "OUELaplaceMechanism",
    "OUELaplaceReport",
]


class OUELaplaceReport(NamedTuple):
    """Reports of ``n`` holders: OUE ``bits`` ``bool[n, L]`` and noisy label levels ``code``
    ``int32[n]`` (the released label is ``lo + label_step * code``)."""

    bits: jax.Array
    code: jax.Array


@attrs.frozen
class OUELaplaceMechanism(GeometricLabel, BitPrecision):
    """Optimized unary encoding of the cell + one exact noisy label (module docstring).

    Parameters
    ----------
    epsilon, label_bound, budget_split:
        As for :class:`RRLaplaceMechanism`.
    precision_bits:
        Width (16, 32 or 64) of the uniform integers realising the bits; ``None`` (default) takes
        the smallest that realises at least 99% of the cell budget.
    """

    report_type = OUELaplaceReport

    @property
    def unary(self) -> UnaryFlip:
        """The OUE bit noise (budget ``rho eps`` for the pair of coordinates a move changes)."""
        return UnaryFlip(self.cell_epsilon, self.precision_bits)

    def releases(self) -> tuple[Release, ...]:
        labels = self.labels()
        return (cell_indicator("bits", self.unary, labels), self.label_release())

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        return (("cell (optimized unary encoding)", self.cell_epsilon), self.label_budget_part())

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and label sums from summed statistics (module docstring)."""
        return self.debias_cells(self.unary, stats, "bits", n)

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds (module docstring; independent of ``n_cells``)."""
        check_int(n_cells, "n_cells", minimum=1)
        return self.indicator_cell_variance(self.unary.offset, self.unary.slope)

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances: the own bit is kept with probability ``1/2``
        (``1 / (4 a^2)``), another is set with ``q'`` (``q'(1 - q') / a^2``); the label sum adds
        ``(v + 1)(m2 + v_n) - m1^2`` inside, ``v (m2 + v_n)`` outside (module docstring of
        :mod:`~ldptree.mechanisms._geometric_label`); independent of ``n_cells``."""
        check_int(n_cells, "n_cells", minimum=1)
        return self.exact_indicator_variance(
            self.unary.offset,
            self.unary.slope,
            label_mean=label_mean,
            label_second_moment=label_second_moment,
        )


class OUECellClassReport(NamedTuple):
    """Reports of ``n`` holders: OUE ``bits`` ``bool[n, L, K]`` of the cell-by-class one-hot."""

    bits: jax.Array


@attrs.frozen
class OUECellClassMechanism(ClassMechanism):
    """Optimized unary encoding of the cell-by-class one-hot (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0``.
    n_classes:
        ``K >= 2``; class codes outside ``0..K-1`` are released as the all-zero record.
    precision_bits:
        As for :class:`OUELaplaceMechanism`.
    """

    precision_bits: int | None = attrs.field(default=None, validator=_check_precision)

    report_type = OUECellClassReport

    @property
    def unary(self) -> UnaryFlip:
        """The OUE bit noise (budget ``eps`` for the pair of coordinates a move changes)."""
        return UnaryFlip(self.epsilon, self.precision_bits)

    def releases(self) -> tuple[Release, ...]:
        k = self.n_classes
        on = np.eye(k + 1, k, dtype=np.int32)  # the null level k is the all-zero row
        return (CellRelease("bits", self.unary, on=on, off=np.zeros_like(on)),)

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        return (("cell x class (optimized unary encoding)", self.epsilon),)

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Per-(cell, class) counts ``float[L, K]`` and their row sums (module docstring)."""
        est = debias_indicators(self.unary, stats["bits"], n)
        count = est.count  # float64 NumPy on concrete sums, jax.numpy under a trace
        return CellEstimates(count=count.sum(axis=1), label_sum=count, n=int(n))

    def report_width(self, n_cells: int) -> int:
        """Numbers released per holder: ``L K``."""
        return int(n_cells) * self.n_classes

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds (module docstring; independent of ``n_cells``)."""
        check_int(n_cells, "n_cells", minimum=1)
        noise, k = self.unary, self.n_classes
        q = noise.flip_prob
        off = q * (1.0 - q)
        count = max(0.25 + (k - 1) * off, k * off) / noise.slope**2
        return CellVariance(
            count=count,
            label_sum=noise.indicator_variance,
            count_outside=k * off / noise.slope**2,
            label_sum_outside=off / noise.slope**2,
        )

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances (the bits are independent): ``c^_j`` adds
        ``(1/4 + (K - 1) q'(1 - q')) / a^2`` for a holder of cell ``j`` with a declared class and
        ``K q'(1 - q') / a^2`` otherwise; ``V^_jk`` is one debiased bit
        (:func:`~ldptree.mechanisms._variance.indicator_class_variance`, ``label_mean`` the
        share of class ``k``)."""
        check_int(n_cells, "n_cells", minimum=1)
        share, _ = check_label_moments(label_mean, label_second_moment, indicator=True)
        noise, k = self.unary, self.n_classes
        off = noise.flip_prob * (1.0 - noise.flip_prob)
        return indicator_class_variance(
            (0.25 + (k - 1) * off) / noise.slope**2,
            k * off / noise.slope**2,
            noise.offset,
            noise.slope,
            share,
        )
