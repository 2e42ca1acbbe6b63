"""Randomized response on the cell one-hot vector plus one bounded-label release: the shared part
of the label mechanisms that drop into LPDT (:class:`DuchiMechanism`,
:class:`PiecewiseMechanism`).

Holder ``i`` in cell ``j_i`` with label ``y_i`` releases

* ``Z_i in {0, 1}^L``: every bit of the one-hot cell vector through a :class:`BitFlip` of budget
  ``rho eps / 2`` (two one-hot vectors differ in two bits), exactly as
  :class:`~ldptree.mechanisms.RRLaplaceMechanism` does;
* one label code: ``y_i`` clipped to ``[lo, hi]``, rounded at random to a level ``t_i``
  (:class:`~ldptree.mechanisms.RealLabels`, unbiased), then released through a *label noise* of
  budget ``(1 - rho) eps`` over the whole level range whose mean is affine in the level:
  ``E[code | t] = o_y + a_y t`` exactly for the realised law (``offset`` and ``slope``).

Debiasing. With ``q'`` the realised flip probability, ``a = 1 - 2 q'``, ``C_j = sum_i Z_ij``,
``S_j = sum_i Z_ij code_i`` and ``S = sum_i code_i``: ``E[Z_ij code_i] = (q' + a 1_ij)(o_y + a_y
t_i)`` and ``E[code_i] = o_y + a_y t_i``, so ``E[S_j - q' S] = a (o_y c_j + a_y T_j)`` with
``T_j = sum_{i in j} t_i``. Hence ``c^_j = (C_j - n q') / a`` and

    s^_j = lo' c^_j + step' (S_j - q' S) / a,    lo' = lo - step o_y / a_y,  step' = step / a_y,

are unbiased for the count and the label sum (:func:`debias_indicators` with ``lo'``, ``step'``).
Equivalently ``s^_j = sum_i W_ij y~_i`` with ``W_ij = (Z_ij - q') / a`` and the released label
``y~_i = lo' + step' code_i``, unbiased for ``clip(y_i)``.

Variance (per holder, :meth:`cell_variance`). ``v_c = q'(1 - q') / a^2`` for the count. For the
label, ``Var(y~ | y) <= v_y = step'^2 max_t Var(code | t) + step^2 / 4`` (a label between two
levels mixes them: the mixture adds at most ``step^2 / 4``); ``W`` and ``y~`` are independent given
the record, so one holder adds ``E[W^2] E[y~^2] - (1_ij y)^2 = v_c y^2 + (v_c + 1_ij) v_y <=
v_c M^2 + (v_c + 1) v_y`` to ``s^_j`` (``M = max(|lo|, |hi|)``).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ldptree._validation import check_int
from ldptree.mechanisms._channel import MatrixNoise
from ldptree.mechanisms._geometric_label import CellBits
from ldptree.mechanisms._kit import (
    RealLabels,
    Release,
    cell_indicator,
    debias_indicators,
    label_level,
)
from ldptree.mechanisms._noise import BitFlip
from ldptree.mechanisms._variance import (
    CellVariance,
    ExactCellVariance,
    check_label_moments,
    indicator_label_variance,
    label_sum_variances,
)
from ldptree.protocols import CellEstimates

LabelNoise = BitFlip | MatrixNoise


@attrs.frozen
class RRLabelMechanism(CellBits):
    """Cell bits + one label code through :meth:`label_noise` (module docstring). Subclasses
    implement :meth:`labels`, :attr:`label_noise` and name the label release ``label_name``."""

    label_name = "code"

    # -- to implement ----------------------------------------------------------------------------
    def labels(self) -> RealLabels:
        raise NotImplementedError

    @property
    def label_noise(self) -> LabelNoise:
        raise NotImplementedError

    # -- the kit's declarations ------------------------------------------------------------------
    def releases(self) -> tuple[Release, ...]:
        labels = self.labels()
        return (
            cell_indicator("bits", self.flips, labels),
            label_level(self.label_name, self.label_noise, labels),
        )

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        return (
            ("cell (randomized response)", self.cell_epsilon),
            (f"label ({type(self).__name__})", self.label_epsilon),
        )

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and label sums from summed statistics (module docstring)."""
        lo, step = self.label_affine
        return debias_indicators(
            self.flips,
            stats["bits"],
            n,
            cross=stats[f"bits*{self.label_name}"],
            total=stats[self.label_name],
            lo=lo,
            step=step,
        )

    # -- constants -------------------------------------------------------------------------------
    @property
    def label_affine(self) -> tuple[float, float]:
        """``(lo', step')``: the released label is ``y~ = lo' + step' code``, unbiased for the
        clipped label (``lo' = lo - step o_y / a_y``, ``step' = step / a_y``)."""
        labels = self.labels()
        noise = self.label_noise
        step = labels.step / noise.slope
        return labels.bound[0] - step * noise.offset, step

    def decode_labels(self, code: Any) -> np.ndarray[Any, np.dtype[np.float64]]:
        """Released labels ``y~ = lo' + step' code`` (unbiased for the clipped labels)."""
        lo, step = self.label_affine
        out: np.ndarray[Any, np.dtype[np.float64]] = lo + step * np.asarray(code, np.float64)
        return out

    @property
    def label_variance(self) -> float:
        """``v_y``: an upper bound on ``Var(y~ | y)`` over every label (module docstring), exact
        from the realised counts."""
        labels = self.labels()
        noise = self.label_noise
        step = self.label_affine[1]
        worst = max(noise.variance(t) for t in range(labels.size))
        return step**2 * worst + labels.step**2 / 4.0

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder bounds ``v_c`` and ``v_c M^2 + (v_c + 1) v_y`` (module docstring);
        independent of ``n_cells``."""
        check_int(n_cells, "n_cells", minimum=1)
        v_c, v_y = self.count_variance, self.label_variance
        big = max(abs(self.label_bound[0]), abs(self.label_bound[1]))
        inside, outside = label_sum_variances(v_c, v_c, big, v_y)
        return CellVariance(
            count=v_c, label_sum=inside, label_sum_outside=outside, label_variance=v_y
        )

    def label_noise_moments(self) -> tuple[float, float, float]:
        """``(c0, c1, c2)`` with ``Var(y~ | V) = c0 + c1 V + c2 V^2`` at every level value ``V``
        (label units, from the realised counts).

        The bit flip's variance is the same at both levels (a constant); the discretised
        piecewise law's window slides one output per level, so ``E[o | t]`` is affine and
        ``E[o^2 | t]`` quadratic in ``t``: its variance is a quadratic in ``V``. The fit is
        exact for the float law; the realised 64-bit counts move it by ``~1e-15``."""
        labels = self.labels()
        values = labels.decode(np.arange(labels.size))
        step = self.label_affine[1]
        var = np.array([step**2 * self.label_noise.variance(t) for t in range(labels.size)])
        c2, c1, c0 = np.polyfit(values, var, deg=2) if labels.size > 2 else (0.0, 0.0, var.mean())
        return float(c0), float(c1), float(c2)

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances: ``W_ij`` has variance ``v_c`` inside and outside, and
        ``s^_j = sum_i W_ij y~_i`` with ``E[Var(y~ | V)] = c0 + c1 m1 + c2 m2``
        (:meth:`label_noise_moments`,
        :func:`~ldptree.mechanisms._variance.indicator_label_variance`); independent of
        ``n_cells``."""
        check_int(n_cells, "n_cells", minimum=1)
        m1, m2 = check_label_moments(label_mean, label_second_moment)
        c0, c1, c2 = self.label_noise_moments()
        v_c = self.count_variance
        return indicator_label_variance(
            v_c, v_c, label_mean=m1, label_second_moment=m2, noise_variance=c0 + c1 * m1 + c2 * m2
        )
