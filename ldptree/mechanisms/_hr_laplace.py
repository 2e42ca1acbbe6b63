"""Hadamard response of the cell plus one geometric label (LPDT), built on the kit.

Holder ``i`` in cell ``j_i`` reports ``2 r_i + b_i``: a uniform row ``r_i`` of the ``K x K``
Sylvester-Hadamard matrix (``K`` the smallest power of two above ``L``) and the bit
``1{H[r_i, j_i + 1] = 1}`` through randomized response with budget ``rho eps``
(:class:`~ldptree.mechanisms.HadamardRelease`), plus the geometric label of
:mod:`~ldptree.mechanisms._geometric_label` with ``(1 - rho) eps``. The report is two integers
(``log2 L + 2`` bits for the cell) drawn from 2 random words for the cell and 3 for the label,
against ``L`` bits and ``L / 2`` words for randomized response on the one-hot vector.

Debiasing. With ``sigma_i = 2 b_i - 1``, ``q'`` the realised flip probability and the kit's exact
integer summaries ``D_j = sum_i sigma_i H[r_i, j + 1]`` and ``E_j = sum_i sigma_i H[r_i, j + 1]
code_i``: ``c^_j = D_j / (1 - 2 q')`` and ``s^_j = (lo D_j + step E_j) / (1 - 2 q')``, unbiased
because ``E[sigma_i H[r_i, j + 1]] = (1 - 2 q') 1{j_i = j}`` and the label is independent of
``(r_i, b_i)`` given the record.

Variance per holder: every term ``W_ij = sigma_i H[r_i, j + 1] / (1 - 2 q')`` is
``+-1 / (1 - 2 q')``, so ``Var c^_j <= v = 1 / (1 - 2 q')^2`` (``v - 1`` for a holder of cell
``j``), about ``(e^{rho eps} + 1)^2 / (e^{rho eps} - 1)^2`` whatever ``L``: the count variance of
one-hot randomized response at *twice* its per-bit budget, with an ``O(1)`` report. The label sum
adds at most ``v M^2 + (v + 1) v_n + step^2 / 4``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import jax

from ldptree._validation import check_int
from ldptree._xp import as_float, namespace
from ldptree.mechanisms._geometric_label import BitPrecision, GeometricLabel
from ldptree.mechanisms._hadamard import HadamardRelease
from ldptree.mechanisms._kit import Release
from ldptree.mechanisms._noise import BitFlip
from ldptree.mechanisms._variance import (
    CellVariance,
    ExactCellVariance,
    check_label_moments,
    indicator_label_variance,
)
from ldptree.protocols import CellEstimates

__all__ = ["HadamardLaplaceMechanism", "HadamardLaplaceReport"]


class HadamardLaplaceReport(NamedTuple):
    """Reports of ``n`` holders: ``cell`` ``int32[n]`` (``2 r + b``) and noisy label levels
    ``code`` ``int32[n]`` (the released label is ``lo + label_step * code``)."""

    cell: jax.Array
    code: jax.Array


@attrs.frozen
class HadamardLaplaceMechanism(GeometricLabel, BitPrecision):
    """Hadamard response of the cell + one exact noisy label (module docstring).

    Parameters
    ----------
    epsilon, label_bound, budget_split:
        As for :class:`RRLaplaceMechanism`.
    precision_bits:
        Width (16, 32 or 64) of the uniform integer realising the bit's flip; ``None`` (default)
        takes the smallest that realises at least 99% of the cell budget.
    """

    report_type = HadamardLaplaceReport

    @property
    def flip(self) -> BitFlip:
        """The randomized response on the Hadamard bit (budget ``rho eps``)."""
        return BitFlip(self.cell_epsilon, self.precision_bits)

    def releases(self) -> tuple[Release, ...]:
        return (
            HadamardRelease("cell", self.cell_epsilon, self.precision_bits),
            self.label_release(),
        )

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        return (("cell (Hadamard response)", self.cell_epsilon), self.label_budget_part())

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and label sums from summed statistics (module docstring)."""
        scale = 1.0 - 2.0 * self.flip.flip_prob
        xp = namespace(stats)
        signed = as_float(stats["cell"], xp)
        cross = as_float(stats["cell*code"], xp)
        labels = self.labels()
        return CellEstimates(
            count=signed / scale,
            label_sum=(labels.bound[0] * signed + labels.step * cross) / scale,
            n=int(n),
        )

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds (module docstring; independent of ``n_cells``)."""
        check_int(n_cells, "n_cells", minimum=1)
        v = 1.0 / (1.0 - 2.0 * self.flip.flip_prob) ** 2
        return CellVariance(count=v, label_sum=self.label_sum_variance(v))

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances: ``W_ij = sigma_i H[r_i, j + 1] / (1 - 2 q')`` is
        ``+-1 / (1 - 2 q')`` with mean ``1{j_i = j}``, so its variance is ``v - 1`` inside and
        ``v = 1 / (1 - 2 q')^2`` outside; the label sum is ``sum_i W_ij y~_i``
        (:func:`~ldptree.mechanisms._variance.indicator_label_variance`). Independent of
        ``n_cells``."""
        check_int(n_cells, "n_cells", minimum=1)
        m1, m2 = check_label_moments(label_mean, label_second_moment)
        v = 1.0 / (1.0 - 2.0 * self.flip.flip_prob) ** 2
        return indicator_label_variance(
            v - 1.0, v, label_mean=m1, label_second_moment=m2, noise_variance=self.label_variance
        )
