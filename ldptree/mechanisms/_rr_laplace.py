"""Randomized response on the one-hot cell vector plus one noisy label (LPDT), built on the kit.

With budget split ``rho`` and label bound ``[lo, hi]``, holder ``i`` in cell ``j_i`` with label
``y_i`` releases

* ``Z_i in {0, 1}^L`` with ``Z_ij = U_ij XOR F_ij``, ``U_ij = 1{j = j_i}`` and independent flips
  ``F_ij ~ Bernoulli(q')`` (the LPDT paper's eq. (3) at ``rho = 1/2``): a :class:`BitFlip` of
  budget ``rho eps / 2`` per bit, realised as ``q' = T / 2^bits`` with an integer threshold
  ``T = ceil(q 2^bits)``, ``q = 1 / (1 + e^{rho eps / 2})`` (rounding ``q`` up only lowers the
  realised budget; the width is the smallest of 16/32/64 bits realising at least 99% of it);
* one noisy label code: ``y_i`` clipped to ``[lo, hi]`` and rounded at random to one of
  ``levels + 1`` evenly spaced levels ``t_i`` (unbiasedly), then released as
  ``clamp(t_i + W_i, -margin, levels + margin)`` with ``W_i`` the exact two-sided geometric law of
  budget ``(1 - rho) eps`` over the whole label range (:class:`Geometric`): the discrete analogue
  of the paper's ``Laplace(R / ((1 - rho) eps))``, with variance ``2 e^{-g} / (1 - e^{-g})^2``
  level units, ``g = (1 - rho) eps / levels``, i.e. about ``2 (R / ((1 - rho) eps))^2`` in label
  units. The reference code redraws the label noise per cell (``L`` noisy copies, ``L (1 - rho)
  eps`` spent); one label per holder is what the privacy claim covers.

Privacy (LPDT Thm 3.1, as implemented): two one-hot vectors differ in at most two bits, each with
realised ratio ``(1 - q') / q' <= e^{rho eps / 2}``; two labels' levels differ by at most
``levels``, and the geometric counts are built so that every unit of difference costs at most
``(1 - rho) eps / levels`` *for the realised integer counts*. All randomness is integer
arithmetic on the holder's own Threefry words, so :func:`~ldptree.accounting.verify_ldp`
certifies the mechanism pure as sampled (the law it reads is the law that is drawn).

``levels`` (:func:`label_levels`) is ``2 ceil(2 (1 - rho) eps)`` within ``[2, 64]``: the rounding
adds variance at most ``step^2 / 4``, under 1% of the noise's for ``(1 - rho) eps <= 32``.

Debiasing: with ``a = 1 - 2 q'``, ``n`` reports, ``C_j = sum_i Z_ij``, ``S_j = sum_i Z_ij code_i``
and ``S = sum_i code_i``, ``c^_j = (C_j - n q') / a`` and
``s^_j = (lo (C_j - n q') + step (S_j - q' S)) / a`` are unbiased for the cell count and the label
sum ``sum_i clip(y_i) 1{j_i = j}``, up to the clamp's bias (below ``step * max_bias``, ``e^{-40}``
scale) and float32 rounding of the level position. The LPDT read-out ``s^_j / c^_j`` is the paper's
eq. (5).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import jax

from ldptree._validation import check_int
from ldptree.mechanisms._geometric_label import CellBits, GeometricLabel
from ldptree.mechanisms._kit import (
    Release,
    cell_indicator,
)
from ldptree.mechanisms._variance import CellVariance, ExactCellVariance
from ldptree.protocols import CellEstimates


class RRLaplaceReport(NamedTuple):
    """Reports of ``n`` holders: ``bits`` ``bool[n, L]`` and noisy label levels ``code``
    ``int32[n]`` (the released label is ``lo + label_step * code``)."""

    bits: jax.Array
    code: jax.Array


@attrs.frozen
class RRLaplaceMechanism(GeometricLabel, CellBits):
    """Randomized response on the cell one-hot vector + one exact noisy label (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0``.
    label_bound:
        ``M`` for ``[-M, M]`` or a pair ``(lo, hi)``; must not come from private labels.
    budget_split:
        ``rho in (0, 1)``: share of ``eps`` spent on the cell, the rest on the label.
    precision_bits:
        Width (16, 32 or 64) of the uniform integers realising the flips; ``None`` (default)
        takes the smallest that realises at least 99% of the cell budget (16 bits draw two flips
        per random word).
    """

    report_type = RRLaplaceReport

    # -- the kit's declarations ----------------------------------------------------------------
    def releases(self) -> tuple[Release, ...]:
        labels = self.labels()
        return (
            cell_indicator("bits", self.flips, labels),
            self.label_release(),
        )

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        return (
            ("cell (randomized response)", self.cell_epsilon),
            self.label_budget_part(),
        )

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and label sums from summed statistics (module docstring)."""
        return self.debias_cells(self.flips, stats, "bits", n)

    # -- constants -------------------------------------------------------------------------------
    @property
    def bits(self) -> int:
        """Width of the uniform integers realising the flips (resolves ``precision_bits=None``)."""
        return self.flips.bits

    @property
    def flip_threshold(self) -> int:
        return self.flips.threshold

    @property
    def flip_prob(self) -> float:
        """Realised flip probability ``q' = T / 2^bits``."""
        return self.flips.flip_prob

    @property
    def keep_prob(self) -> float:
        return 1.0 - self.flip_prob

    @property
    def label_center(self) -> float:
        return (self.label_bound[0] + self.label_bound[1]) / 2.0

    @property
    def label_range(self) -> float:
        return self.label_bound[1] - self.label_bound[0]

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds (independent of ``n_cells``).

        ``s^_j = sum_i W_ij y~_i`` with ``W_ij = (Z_ij - q') / (1 - 2q')`` and ``y~_i`` the released
        label, independent given the record, so one holder adds
        ``E[W^2] E[y~^2] - (1{j_i = j} y)^2 <= v_c M^2 + (v_c + 1) v_y`` where ``v_c`` is
        :attr:`count_variance`, ``v_y`` :attr:`label_variance` plus the rounding's ``step^2 / 4``
        and ``M = max(|lo|, |hi|)``; outside cell ``j`` a holder adds only ``v_c (M^2 + v_y)``.
        """
        check_int(n_cells, "n_cells", minimum=1)
        return self.indicator_cell_variance(self.flips.offset, self.flips.slope)

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances (:class:`~ldptree.mechanisms.SupportsExactVariance`):
        ``W_ij = (Z_ij - q') / (1 - 2 q')`` has variance ``v_c`` inside and outside (a flipped
        bit's ``q'(1 - q')`` either way), so the count adds ``v_c`` and the label sum
        ``(v_c + 1)(m2 + v_n) - m1^2`` inside, ``v_c (m2 + v_n)`` outside; independent of
        ``n_cells``."""
        check_int(n_cells, "n_cells", minimum=1)
        return self.exact_indicator_variance(
            self.flips.offset,
            self.flips.slope,
            label_mean=label_mean,
            label_second_moment=label_second_moment,
        )
