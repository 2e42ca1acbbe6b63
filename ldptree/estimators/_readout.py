"""Read-outs: per-cell predictions from debiased cell estimates (LPDT paper eq. (5)).

``f_j = s^_j / c^_j`` for cells whose estimated private count is large enough; otherwise the
cell falls back to a public estimate (the reference predicts the public leaf mean). The reference
rule is ``c^_j < tau n`` with ``tau = 0`` by default, which only catches negative counts; we also
treat ``c^_j = 0`` as too small (the paper's ``0/0``), since a ratio with a zero denominator is
undefined.

Both read-outs are pure array code (:mod:`ldptree._xp`): NumPy float64 on concrete inputs,
``jax.numpy`` under ``jax.jit``/``jax.vmap``.

**Shrinkage** (our default in :class:`~ldptree.LPDTRegressor`, ``readout="auto"``): the ratio
``r_j = s^_j / c^_j`` is translation equivariant (shifting every label by ``t`` shifts ``s^_j`` by
``t c^_j``), and linearised around the true cell mean ``f_j`` its error is
``(s^_j - f_j c^_j) / c^_j``, whose variance is at most ``n V / c^_j^2``, with ``V`` the variance
one holder adds to the label sum of labels centred in the label bound ``[lo, hi]`` (half-width
``h = (hi - lo) / 2``). Before any report, all we know of ``f_j`` beyond the public leaf mean
``m_j`` is that it lies in ``[lo, hi]``, whose widest spread is a variance of ``h^2``. Weighting the
two by their precisions (the posterior mean for a prior of variance ``h^2`` around ``m_j``)

    f^_j = w_j r_j + (1 - w_j) m_j = (s^_j c^_j + a m_j) / (c^_j^2 + a),
    w_j = c^_j^2 / (c^_j^2 + a),    a = n V / h^2.

``a`` uses only ``n``, the mechanism's variance (epsilon, budget split) and the public label
bound, so it is fixed before any report is seen. The read-out never explodes:
``|s^_j c^_j| / (c^_j^2 + a) <= |s^_j| / (2 sqrt(a))``. It is the reference's ratio where that is
safe: for a cell of fixed probability ``p_j``, ``c^_j ~ n p_j`` so ``w_j = 1 - O(1 / (n p_j^2))``
and ``f^_j`` is the ratio up to ``O(1/n)``.
"""

from __future__ import annotations

import math
from typing import Any, cast

import attrs
import numpy as np

from ldptree._typing import BoolArray, FloatArray
from ldptree._validation import check_choice
from ldptree._xp import bincount, namespace
from ldptree.mechanisms._variance import SupportsVariance
from ldptree.protocols import CellEstimates, LeafFit, Mechanism, PublicCells, ReadOut


def ratio_with_fallback(
    estimates: CellEstimates, fallback: FloatArray, *, min_ratio: float
) -> tuple[FloatArray, BoolArray]:
    """``(values[L], used_fallback[L])``: ``s^/c^`` if ``c^ > min_ratio n``, else ``fallback``."""
    xp = namespace(estimates, fallback)
    usable = estimates.count > min_ratio * estimates.n
    safe = xp.where(usable, estimates.count, 1.0)
    values = xp.where(usable, estimates.label_sum / safe, fallback)
    return values, ~usable


def shrunk_ratio(
    estimates: CellEstimates, fallback: FloatArray, *, min_ratio: float, strength: float
) -> tuple[FloatArray, BoolArray]:
    """``(values[L], used_fallback[L])``: ``(s^ c^ + a m) / (c^^2 + a)`` (module docstring) with
    ``a = strength`` and ``m = fallback`` where ``c^ > min_ratio n``, else ``fallback``."""
    xp = namespace(estimates.count, estimates.label_sum, fallback)
    usable = estimates.count > min_ratio * estimates.n
    if not math.isfinite(strength):
        return xp.asarray(fallback, dtype=estimates.count.dtype), xp.ones_like(usable)
    count = estimates.count
    shrunk = (estimates.label_sum * count + strength * fallback) / (count * count + strength)
    return xp.where(usable, shrunk, fallback), ~usable


def shrinkage_strength(
    mechanism: Mechanism, n_cells: int, n: int, bound: tuple[float, float]
) -> float | None:
    """``a = n V / h^2`` of :func:`shrunk_ratio` from public quantities only; ``None`` when the
    mechanism does not say its variance.

    ``V``: with ``count_variance`` ``v_c`` and ``label_variance`` ``v_y`` (the default randomized
    response + Laplace), ``v_c h^2 + (v_c + 1) v_y``, the per-holder bound of the label sum for
    labels centred in the bound (so at most ``h`` in absolute value); otherwise the
    mechanism's :class:`~ldptree.mechanisms.SupportsVariance` bound of the same quantity
    (:meth:`~ldptree.mechanisms.CellVariance.mean_error` for an own-cell holder).
    ``h = 0`` (a one-point bound) gives ``inf``: the public mean."""
    half = (bound[1] - bound[0]) / 2.0
    variance = holder_variance(mechanism, n_cells, bound)
    if variance is None:
        return None
    return math.inf if half <= 0 else max(n, 1) * variance / half**2


def holder_variance(mechanism: Mechanism, n_cells: int, bound: tuple[float, float]) -> float | None:
    """``V`` of :func:`shrinkage_strength`: the variance one holder adds to a cell's label sum
    of labels centred in ``bound``, as the mechanism states it (``None``: it does not)."""
    half = (bound[1] - bound[0]) / 2.0
    v_c = getattr(mechanism, "count_variance", None)
    v_y = getattr(mechanism, "label_variance", None)
    if isinstance(v_c, float) and isinstance(v_y, float):
        return v_c * half**2 + (v_c + 1.0) * v_y
    if isinstance(mechanism, SupportsVariance):
        # the own-cell bound for labels within h of the cell mean (equal to the line above for
        # randomized response + Laplace)
        return float(mechanism.cell_variance(n_cells).mean_error(half, 1.0))
    return None


def clip_to_bound(values: Any, bound: tuple[float, float]) -> Any:
    """``min(max(v, lo), hi)`` elementwise: read-out values clipped into the label bound
    ``[lo, hi]``. The regression function lies in the bound (every label does), so clipping a
    value can only bring it closer: ``|clip(v) - f| <= |v - f|`` for every ``f`` in ``[lo, hi]``.
    Post-processing of the release, no privacy cost."""
    xp = namespace(values)
    return xp.clip(values, bound[0], bound[1])


def cell_means(cells: np.ndarray, y: FloatArray, n_cells: int, default: float) -> FloatArray:
    """Mean of ``y`` per cell (``default`` for cells with no rows): public leaf means."""
    xp = namespace(cells, y)
    counts = bincount(xp, cells, n_cells)
    sums = bincount(xp, cells, n_cells, weights=y)
    means: FloatArray = xp.where(counts > 0, sums / xp.maximum(counts, 1), default)
    return means


def lpdt_leaves(
    estimates: CellEstimates, public_mean: Any, *, min_ratio: float, strength: float = 0.0
) -> LeafFit:
    """LPDT's read-out: ``s^_j / c^_j`` (``strength = 0``, the reference) or the shrunk ratio
    ``(s^_j c^_j + a m_j) / (c^_j^2 + a)`` with ``a = strength`` and ``m = public_mean``
    (:func:`~ldptree.estimators._readout.shrunk_ratio`) where ``c^_j > min_ratio n``, else
    ``public_mean[j]``."""
    if strength == 0.0:
        values, fallback = ratio_with_fallback(estimates, public_mean, min_ratio=min_ratio)
    else:
        values, fallback = shrunk_ratio(
            estimates, public_mean, min_ratio=min_ratio, strength=strength
        )
    return LeafFit(values=values, used_fallback=fallback, estimates=estimates)


@attrs.frozen
class RatioReadOut:
    """The reference read-out as a :class:`~ldptree.protocols.ReadOut`: ``s^_j / c^_j`` where
    ``c^_j > min_ratio n``, else the public leaf mean (:func:`lpdt_leaves` with
    ``strength = 0``); ``readout="ratio"`` of :class:`~ldptree.LPDTRegressor`."""

    min_ratio: float = 0.0

    def __call__(self, estimates: CellEstimates, public: PublicCells) -> LeafFit:
        return lpdt_leaves(estimates, _fallback(public), min_ratio=self.min_ratio)


@attrs.frozen
class ShrinkReadOut:
    """The shrunk ratio as a :class:`~ldptree.protocols.ReadOut` (module docstring):
    ``(s^_j c^_j + a m_j) / (c^_j^2 + a)`` with ``a = n V / h^2`` from the public
    ``holder_variance`` ``V`` and ``label_bound`` (``a = 0``, the ratio, when ``V`` is unknown);
    ``readout="shrink"`` of :class:`~ldptree.LPDTRegressor`."""

    min_ratio: float = 0.0

    def strength(self, public: PublicCells, n: int) -> float:
        """``a`` for ``n`` reports (public: ``n``, the mechanism's variance, the bound)."""
        if public.label_bound is None:
            return 0.0
        found = shrinkage_strength(public.mechanism, public.n_cells, n, public.label_bound)
        return found or 0.0

    def __call__(self, estimates: CellEstimates, public: PublicCells) -> LeafFit:
        strength = self.strength(public, estimates.n)
        return lpdt_leaves(
            estimates, _fallback(public), min_ratio=self.min_ratio, strength=strength
        )


def _fallback(public: PublicCells) -> FloatArray:
    if public.label_mean is None:
        raise ValueError("this read-out is for regression: public.label_mean is needed")
    return public.label_mean


def check_readout(readout: Any, names: tuple[str, ...]) -> ReadOut | None:
    """``None`` for a built-in read-out named in ``names``; a :class:`~ldptree.protocols.ReadOut`
    object (anything callable) as it is; else a ``ValueError`` (unknown name) or ``TypeError``."""
    if isinstance(readout, str):
        check_choice(readout, "readout", names)
        return None
    if isinstance(readout, type):
        raise TypeError(
            f"readout={readout.__name__} is a class; pass an instance, readout={readout.__name__}()"
        )
    if not callable(readout):
        raise TypeError(
            f"readout must be one of {names} or a ReadOut (a callable (estimates, public) -> "
            f"LeafFit), got {type(readout).__name__}"
        )
    return cast(ReadOut, readout)


def checked_leaves(leaves: Any, shape: tuple[int, ...]) -> LeafFit:
    """A read-out object's result, refused (``TypeError``/``ValueError``) unless it is a
    :class:`~ldptree.protocols.LeafFit` of ``values`` with ``shape`` and ``used_fallback`` with
    one entry per leaf."""
    if not isinstance(leaves, LeafFit):
        raise TypeError(f"a read-out must return a LeafFit, got {type(leaves).__name__}")
    values = np.asarray(leaves.values, dtype=np.float64)
    fallback = np.asarray(leaves.used_fallback, dtype=bool)
    if values.shape != shape or fallback.shape != shape[:1]:
        raise ValueError(
            f"a read-out must return values of shape {shape} and used_fallback of shape "
            f"{shape[:1]}, got {values.shape} and {fallback.shape}"
        )
    return LeafFit(values=values, used_fallback=fallback, estimates=leaves.estimates)
