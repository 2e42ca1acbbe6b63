"""Noise on the one-hot cell vector and on the cell-by-class vector (LPCT), built on the kit.

Holder ``i`` in cell ``j_i`` with class code ``y_i`` encodes its record as

* ``U_i = e_{j_i} in {0, 1}^L`` (the cell one-hot), and
* binary (``K = 2``, the LPCT paper's form): ``V_i = 1{y_i = 1} U_i in {0, 1}^L``, i.e. ``V = Y U``;
* multi-class (``K >= 3``, ours): ``V_i = e_{j_i} e_{y_i}^T in {0, 1}^{L x K}``;

and releases every coordinate ``v`` of ``U_i`` and ``V_i`` as ``clamp(v + Z, -margin, 1 + margin)``
with independent exact two-sided geometric noise ``Z`` of ``eps / 4`` per unit
(:class:`~ldptree.mechanisms.Geometric` with span 1): the discrete analogue of the paper's
``Laplace(4 / eps)`` (LPCT paper Prop. 2; the mechanism of Berrett & Butucea and of PHIST), with
variance ``2 e^{-eps/4} / (1 - e^{-eps/4})^2`` per coordinate (below the Laplace law's
``2 (4 / eps)^2``).

Privacy, as implemented. Two records give one-hot ``U`` that differ in at most two coordinates,
so the realised counts (built so that a unit shift costs at most ``eps / 4`` exactly) bound the
ratio of ``U~`` by ``e^{eps/2}``; ``V`` has at most one non-zero entry in both forms, so ``V~``
also costs ``eps / 2``. A class code outside ``0..K-1`` (a label the curator did not declare) is
encoded as the *null record* ``U = 0, V = 0``: the holder still sends a full report, the
sensitivities stay ``<= 2`` on the extended record space, and the curator cannot tell it from a
genuine record beyond what the report allows. Every draw is integer arithmetic on the holder's
own words, so
:func:`~ldptree.accounting.verify_ldp` certifies the mechanism pure as sampled.

Debiasing: the noise is symmetric, so ``c^_j = sum_i U~_ij`` and ``s^_j = sum_i V~_ij`` are
unbiased for the cell count and the class-1 count (binary, ``float[L]``) or the per-class counts
(``float[L, K]``), up to the clamp's bias (``Geometric.max_bias`` per report, ``e^{-40}`` scale).

Simulation (labelled as such): :meth:`simulate_summary` draws the per-coordinate sums of ``n``
reports directly (true sums plus differences of negative binomial draws, exact in law for the
unclamped geometric noise) in ``O(L K)`` instead of ``O(n L K)``.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import attrs
import jax
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_int
from ldptree._xp import as_float, namespace
from ldptree.mechanisms._kit import NULL_LABEL, CellRelease, ClassMechanism, Release
from ldptree.mechanisms._noise import Geometric
from ldptree.mechanisms._variance import CellVariance, ExactCellVariance, check_label_moments
from ldptree.protocols import CellEstimates

__all__ = ["NULL_LABEL", "LaplaceCellClassMechanism", "LaplaceCellClassReport"]


class LaplaceCellClassReport(NamedTuple):
    """Reports of ``n`` holders as integer codes: ``cell`` ``int32[n, L]`` and ``label``
    ``int32[n, L]`` (binary) or ``int32[n, L, K]`` (multi-class)."""

    cell: jax.Array
    label: jax.Array


@attrs.frozen
class LaplaceCellClassMechanism(ClassMechanism):
    """Exact Laplace-like noise on ``U`` and on ``V = onehot(y) (x) U`` (module docstring).

    Parameters
    ----------
    epsilon:
        Whole per-holder budget ``eps > 0``; ``eps / 2`` on ``U`` and ``eps / 2`` on ``V``.
    n_classes:
        ``K >= 2``. Labels are class codes ``0..K-1``; other codes are released as the null
        record. ``K = 2`` uses the paper's binary form ``V = Y U``.
    """

    report_type = LaplaceCellClassReport

    # -- the kit's declarations ----------------------------------------------------------------
    @property
    def noise(self) -> Geometric:
        """Each coordinate's noise: ``eps / 4`` per unit (two coordinates move per release)."""
        return Geometric(self.epsilon / 4.0, span=1)

    def releases(self) -> tuple[Release, ...]:
        k = self.n_classes
        declared = np.arange(k + 1) < k  # the null level k releases the null record
        if self.label_width == 1:
            label_on = (np.arange(k + 1) == 1)[:, None]
        else:
            label_on = np.eye(k + 1, k, dtype=bool)
        zeros = np.zeros((k + 1, self.label_width), dtype=np.int32)
        return (
            CellRelease("cell", self.noise, on=declared.astype(np.int32), off=zeros[:, :1]),
            CellRelease("label", self.noise, on=label_on.astype(np.int32), off=zeros),
        )

    def budget_parts(self) -> tuple[tuple[str, float], ...]:
        half = self.epsilon / 2.0
        return (("cell one-hot (geometric)", half), ("cell x class one-hot (geometric)", half))

    def debias(self, stats: dict[str, Any], n: int) -> CellEstimates:
        """Unbiased cell counts and class counts from summed codes of ``n`` reports (the codes'
        noise is centred, so the sums are the estimates; traceable, see :mod:`ldptree._xp`)."""
        xp = namespace(stats)
        return CellEstimates(
            count=as_float(stats["cell"], xp), label_sum=as_float(stats["label"], xp), n=int(n)
        )

    # -- constants -------------------------------------------------------------------------------
    @property
    def label_width(self) -> int:
        """Label coordinates per cell: 1 (binary form) or ``K``."""
        return 1 if self.n_classes == 2 else self.n_classes

    @property
    def count_variance(self) -> float:
        """Variance one holder adds to a debiased cell count (one coordinate's noise)."""
        return self.noise.variance(0)

    def cell_variance(self, n_cells: int) -> CellVariance:
        """Per-holder variance bounds: one coordinate's noise for the count and for each class
        count (the record's own indicators are fixed given the record; independent of
        ``n_cells``)."""
        check_int(n_cells, "n_cells", minimum=1)
        v = self.noise.variance(0)
        return CellVariance(count=v, label_sum=v)

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances: a coordinate released as ``clamp(u + Z)`` adds the noise's
        variance at input ``u`` (exact from the counts). ``c^_j`` reads ``u = 1`` for a holder of
        cell ``j`` with a declared class, ``0`` otherwise; a class-``k`` coordinate (class 1 in
        the binary form) reads ``u = Y``, ``Y`` the indicator of class ``k`` with mean
        ``p = label_mean``: ``p var(1) + (1 - p) var(0) + p (1 - p)`` inside, ``var(0)`` outside.
        Independent of ``n_cells``."""
        check_int(n_cells, "n_cells", minimum=1)
        p, _ = check_label_moments(label_mean, label_second_moment, indicator=True)
        zero, one = self.noise.variance(0), self.noise.variance(1)
        return ExactCellVariance(
            count_inside=one,
            count_outside=zero,
            label_sum_inside=p * one + (1.0 - p) * zero + p * (1.0 - p),
            label_sum_outside=zero,
        )

    def report_width(self, n_cells: int) -> int:
        """Numbers released per holder: ``L (1 + K)`` (``2 L`` when binary)."""
        return n_cells * (1 + self.label_width)

    def encode(self, cell: int, label: int, n_cells: int) -> tuple[FloatArray, FloatArray]:
        """The record's noiseless release ``(U float[L], V float[L] or float[L, K])``."""
        u = np.zeros(n_cells)
        v = np.zeros((n_cells, self.label_width))
        if 0 <= int(label) < self.n_classes:
            u[int(cell)] = 1.0
            if self.label_width > 1:
                v[int(cell), int(label)] = 1.0
            elif int(label) == 1:
                v[int(cell), 0] = 1.0
        return u, (v[:, 0] if self.label_width == 1 else v)
