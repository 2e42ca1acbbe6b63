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

Exact variances (:class:`SupportsExactVariance`, every built-in). The bounds above are worst
cases over the holder's label and cell; a holder's exact contribution depends on whether it is in
cell ``j`` and on its label, through the first two moments of the label *as the mechanism encodes
it* (clipped, then rounded at random to the mechanism's levels): ``exact_cell_variance(n_cells,
label_mean=m1, label_second_moment=m2)`` returns :class:`ExactCellVariance`, the per-holder
variances inside and outside the cell, and :func:`label_moments` gives ``(m1, m2)`` for given
labels. :func:`estimated_cell_variance` evaluates them at a round's debiased moments (the
variance a researcher can report beside the estimates, at no privacy cost).
"""

from __future__ import annotations

import functools
import math
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree.protocols import CellEstimates

__all__ = [
    "CellVariance",
    "ExactCellVariance",
    "SupportsExactVariance",
    "SupportsVariance",
    "check_label_moments",
    "estimated_cell_variance",
    "indicator_class_variance",
    "indicator_label_variance",
    "indicator_variances",
    "label_moments",
    "label_sum_variances",
]


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


# -- exact per-holder variances -----------------------------------------------------------------
@attrs.frozen
class ExactCellVariance:
    """The exact variance one holder adds to the debiased estimates of a cell ``j``.

    ``count_inside`` / ``label_sum_inside``: the holder is in cell ``j``; ``count_outside`` /
    ``label_sum_outside``: it is in another cell. Each is ``Var(X)`` for the holder's additive
    contribution ``X`` to ``c^_j`` or ``s^_j`` (the debiasing is affine in summed reports, so
    ``c^_j = sum_i X_i`` over independent holders), over the mechanism's noise *and* the
    holder's label, drawn from a distribution with the moments the variance was asked for
    (:meth:`SupportsExactVariance.exact_cell_variance`). With ``n_in`` holders in the cell
    (label moments ``m_in``) and ``n_out`` others (``m_out``),
    ``Var c^_j = n_in count_inside(m_in) + n_out count_outside(m_out)``, and likewise for
    ``s^_j``.

    Every built-in's contribution has ``E[X | V]`` affine and ``E[X^2 | V]`` quadratic in the
    encoded label ``V``, so each variance is ``A + B m1 + C m2 - 1{inside} m1^2`` for the label
    sum (``E X = m1`` inside, ``0`` outside) and constant for the count: two moments determine
    it exactly. For a mechanism without cells (one cell, everyone inside) the outside
    variances are ``0``.
    """

    count_inside: float
    count_outside: float
    label_sum_inside: float
    label_sum_outside: float


def check_label_moments(
    label_mean: float, label_second_moment: float, *, indicator: bool = False
) -> tuple[float, float]:
    """``(m1, m2)`` as floats; ``ValueError`` unless finite with ``m2 >= m1^2`` (up to rounding)
    and, for a class indicator, ``0 <= m1 <= 1`` and ``m2 = m1``."""
    m1, m2 = float(label_mean), float(label_second_moment)
    if not (math.isfinite(m1) and math.isfinite(m2)):
        raise ValueError(
            f"label moments must be finite, got {label_mean!r}, {label_second_moment!r}"
        )
    if m2 < m1 * m1 - 1e-9 * (1.0 + m1 * m1):
        raise ValueError(
            f"label_second_moment must be >= label_mean^2 (a variance is >= 0), got "
            f"label_mean={m1}, label_second_moment={m2}"
        )
    if indicator and not (0.0 <= m1 <= 1.0 and abs(m2 - m1) <= 1e-9):
        raise ValueError(
            "a class mechanism's label is the 0/1 indicator of the counted class: label_mean "
            f"must be in [0, 1] and label_second_moment equal to it, got {m1}, {m2}"
        )
    return m1, m2


def indicator_label_variance(
    inside: float,
    outside: float,
    *,
    label_mean: float,
    label_second_moment: float,
    noise_variance: float,
) -> ExactCellVariance:
    """Exact variances for ``c^_j = sum_i W_ij`` and ``s^_j = sum_i W_ij y~_i`` where ``W_ij`` is
    a debiased cell indicator (``E W = 1{j_i = j}``, variance ``inside`` / ``outside``) and
    ``y~_i`` a released label independent of ``W`` given the record, with ``E[y~ | V] = V`` and
    ``E[Var(y~ | V)] = noise_variance``.

    With ``g = E[y~^2] = m2 + noise_variance``: inside ``E[W^2] g - m1^2 = (inside + 1) g - m1^2``,
    outside ``outside * g``.
    """
    g = label_second_moment + noise_variance
    return ExactCellVariance(
        count_inside=inside,
        count_outside=outside,
        label_sum_inside=(inside + 1.0) * g - label_mean**2,
        label_sum_outside=outside * g,
    )


def indicator_class_variance(
    count_inside: float, count_outside: float, offset: float, slope: float, share: float
) -> ExactCellVariance:
    """Exact variances for a class mechanism whose count of (cell ``j``, class ``k``) is one
    debiased indicator ``(Z - offset) / slope``, ``P(Z = 1) = offset + slope 1{own item}``.

    A holder of cell ``j`` whose class is ``k`` with probability ``share`` has
    ``Z ~ Bernoulli(P)``, ``P = offset + slope * share`` (a mixture of Bernoullis is one), so it
    adds ``P (1 - P) / slope^2``; a holder of another cell ``offset (1 - offset) / slope^2``. The
    count variances (``count_inside`` / ``count_outside``) depend on the mechanism's joint law.
    """
    p = offset + slope * share
    return ExactCellVariance(
        count_inside=count_inside,
        count_outside=count_outside,
        label_sum_inside=p * (1.0 - p) / slope**2,
        label_sum_outside=offset * (1.0 - offset) / slope**2,
    )


@runtime_checkable
class SupportsExactVariance(Protocol):
    """A mechanism that states the exact variance of its debiased cell estimates."""

    def exact_cell_variance(
        self, n_cells: int, *, label_mean: float, label_second_moment: float
    ) -> ExactCellVariance:
        """Exact per-holder variances for a partition of ``n_cells`` cells when the holder's
        *encoded* label ``V`` has ``E V = label_mean`` and ``E V^2 = label_second_moment``.

        ``V`` is the label as the mechanism reads it: for real labels the label clipped to the
        declared bound and rounded at random to the mechanism's levels (:func:`label_moments`
        computes both moments from labels); for class mechanisms the 0/1 indicator that the
        holder's class is the one a ``label_sum`` entry counts (both moments are the class's
        share).
        """
        ...


def _label_encoding(mechanism: object) -> Any:
    labels = getattr(mechanism, "labels", None)
    if labels is None:
        raise TypeError(f"{type(mechanism).__name__} declares no labels() to read moments from")
    return labels() if callable(labels) else labels


def label_moments(
    mechanism: object, labels: Any, *, label_class: int | None = None
) -> tuple[float, float]:
    """``(E V, E V^2)`` of the encoded label ``V`` of a holder whose label is drawn uniformly
    from ``labels`` (the inputs of :meth:`SupportsExactVariance.exact_cell_variance`).

    Real labels: ``u = (clip(y) - lo) / step`` is rounded to ``floor(u)`` or ``floor(u) + 1`` with
    probabilities ``1 - f`` and ``f`` (``f = frac(u)``), so ``E[V | y] = clip(y)`` and
    ``E[V^2 | y] = clip(y)^2 + step^2 f (1 - f)``; both are averaged over ``labels``. Class
    labels: ``V = 1{y = label_class}``, both moments are the share of ``labels`` equal to
    ``label_class`` (required).
    """
    encoding = _label_encoding(mechanism)
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    if y.size == 0:
        raise ValueError("labels must hold at least one label")
    if getattr(encoding, "integer", False):
        if label_class is None:
            raise ValueError("label_class is required for a class mechanism's labels")
        share = float(np.mean(y == float(label_class)))
        return share, share
    lo, hi = encoding.bound
    clipped = np.clip(y, lo, hi)
    u = (clipped - lo) / encoding.step
    f = u - np.floor(u)
    return float(clipped.mean()), float(np.mean(clipped**2 + encoding.step**2 * f * (1.0 - f)))


def _moment_coefficients(
    mechanism: SupportsExactVariance, n_cells: int, indicator: bool
) -> tuple[ExactCellVariance, ExactCellVariance, ExactCellVariance]:
    """The exact variances at ``(m1, m2) = (0, 0), (0, 1), (1, 1)`` (``(0, 1)`` repeats
    ``(1, 1)`` for a class indicator, whose ``m2 = m1``): three points fix
    ``A + B m1 + C m2 - 1{inside} m1^2`` (:class:`ExactCellVariance`)."""
    at = functools.partial(mechanism.exact_cell_variance, n_cells)
    zero, one = (
        at(label_mean=0.0, label_second_moment=0.0),
        at(label_mean=1.0, label_second_moment=1.0),
    )
    spread = one if indicator else at(label_mean=0.0, label_second_moment=1.0)
    return zero, spread, one


def estimated_cell_variance(
    mechanism: SupportsExactVariance,
    estimates: CellEstimates,
    *,
    label_second_moment: Any = None,
) -> tuple[FloatArray, FloatArray]:
    """Estimated variances of a round's debiased estimates ``(Var c^_j, Var s^_j)`` per cell
    (shapes of ``estimates.count`` and ``estimates.label_sum``): the exact per-holder variances
    (:meth:`SupportsExactVariance.exact_cell_variance`) evaluated at the debiased moments.

    Cell ``j`` holds ``c = clip(c^_j, 0, n)`` holders and the others ``n - c``, so
    ``Var c^_j = c v_in + (n - c) v_out``, and
    ``Var s^_j = c f_in(m1_j, m2_j) + (n - c) f_out(m1'_j, m2'_j)`` with the inside mean
    ``m1_j = s^_j / c^_j`` and the outside mean ``m1'_j = (S^ - s^_j) / (n - c^_j)`` clipped to
    the label bound (``S^`` the total). The released sums carry no second moment of the labels:
    ``label_second_moment`` (a number, or ``float[L]`` per cell, e.g. from public data; the
    outside value is the others' count-weighted mean) defaults to the bound's worst case
    ``max(lo^2, hi^2)``. For class mechanisms the label of entry ``(j, k)`` is the class-``k``
    indicator, whose share ``V^_jk / c^_j`` (clipped to ``[0, 1]``) is both moments.

    The per-holder variances are affine in the moments but for the inside label sum's
    ``-m1^2``, so the estimate is unbiased up to that plug-in term and the clipping; the
    variance is over the noise and over labels drawn from the cells' label distributions.
    Post-processing of the estimates: no privacy cost.
    """
    n = int(estimates.n)
    count = np.clip(np.asarray(estimates.count, dtype=np.float64), 0.0, n)
    sums = np.asarray(estimates.label_sum, dtype=np.float64)
    n_cells = int(count.shape[0])
    encoding = _label_encoding(mechanism)
    indicator = bool(getattr(encoding, "integer", False))
    zero, spread, one = _moment_coefficients(mechanism, n_cells, indicator)
    others = n - count
    var_count = count * zero.count_inside + others * zero.count_outside

    def safe(num: FloatArray, den: FloatArray, fill: float) -> FloatArray:
        out: FloatArray = np.where(den > 0, num / np.where(den > 0, den, 1.0), fill)
        return out

    # inside: A + B m1 + C m2 - m1^2; outside: A' + B' m1 + C' m2
    a_in, a_out = zero.label_sum_inside, zero.label_sum_outside
    c_in, c_out = spread.label_sum_inside - a_in, spread.label_sum_outside - a_out
    b_in = one.label_sum_inside + 1.0 - a_in - c_in
    b_out = one.label_sum_outside - a_out - c_out
    if indicator:
        col = count.reshape((n_cells,) + (1,) * (sums.ndim - 1))
        rest = (n - col).astype(np.float64)
        share = np.clip(safe(sums, col, 0.0), 0.0, 1.0)
        share_out = np.clip(safe(sums.sum(axis=0) - sums, rest, 0.0), 0.0, 1.0)
        inside = a_in + (b_in + c_in) * share - share**2
        outside = a_out + (b_out + c_out) * share_out
        return var_count, col * inside + rest * outside
    lo, hi = encoding.bound
    if label_second_moment is None:
        m2 = np.full(n_cells, max(lo * lo, hi * hi))
    else:
        m2 = np.broadcast_to(np.asarray(label_second_moment, dtype=np.float64), (n_cells,))
        if not np.all(np.isfinite(m2)) or np.any(m2 < 0):
            raise ValueError("label_second_moment must be finite and >= 0")
    m1 = np.clip(safe(sums, count, (lo + hi) / 2.0), lo, hi)
    m1_out = np.clip(safe(sums.sum() - sums, others, (lo + hi) / 2.0), lo, hi)
    m2_out = safe((count * m2).sum() - count * m2, others, float(m2.mean()))
    # a second moment below the squared (clipped) mean is no moment pair: raise it to the mean's
    m2, m2_out = np.maximum(m2, m1**2), np.maximum(m2_out, m1_out**2)
    inside = a_in + b_in * m1 + c_in * m2 - m1**2
    outside = a_out + b_out * m1_out + c_out * m2_out
    return var_count, count * inside + others * outside
