"""The piecewise mechanism (Wang et al., 2019) for a bounded label, discretised onto an output grid
and released exactly through a :class:`~ldptree.mechanisms.MatrixNoise`; with randomized response
on the cell (LPDT).

Wang et al.'s piecewise mechanism releases ``y in [-1, 1]`` as a value in ``[-C, C]``,
``C = (e^{eps/2} + 1) / (e^{eps/2} - 1)``, with density ``p`` on a window ``[l(y), r(y)]`` of
width ``C - 1`` centred at ``(C + 1) y / 2`` and ``p e^{-eps}`` elsewhere: unbiased, with variance
``y^2 / (e^{eps/2} - 1) + (e^{eps/2} + 3) / (3 (e^{eps/2} - 1)^2)``, below Duchi's at large budgets.

Discretised here on a grid of ``K = T + w`` outputs, for label levels ``t in {0, ..., T}``
(:class:`RealLabels`, ``T`` even): level ``t``'s window is the outputs ``t, ..., t + w - 1`` and

    P(o | t) = h          for o in the window,    h e^{-eps}    elsewhere,
    h = 1 / (w + (K - w) e^{-eps}),

so every column's ratio is ``e^eps`` at most, and the window moves one output per level as the
continuous window moves linearly in ``y``. ``E[o | t] = h (1 - e^{-eps}) w (t + (w - 1) / 2) +
h e^{-eps} K (K - 1) / 2`` is affine in ``t``. The window width ``w`` is *computed*, not tuned:
the ``w in {1, ..., T}`` minimising the worst-case variance of the debiased release (the discrete
counterpart of Wang et al.'s width ratio ``(C - 1) / (C + 1) = e^{-eps/2}``).

The float matrix is realised as 64-bit integer counts rounded towards privacy
(:func:`~ldptree.mechanisms.matrix_noise`), and everything is read from the realised counts: the
affine map ``E[o | t] = o_y + a_y t`` (``offset``, ``slope``; the realised means deviate from it by
``max_bias``, below ``1e-15`` outputs) and the variances. The released label is
``y~ = lo' + step' o`` with ``step' = step / a_y`` and ``lo' = lo - step' o_y``, unbiased for the
clipped label; ``Var(y~ | y) <= v_y = step'^2 max_t Var(o | t) + step^2 / 4`` (the last term
is the rounding to levels). Debiasing and the per-holder bounds ``v_c`` and
``v_c M^2 + (v_c + 1) v_y`` are :mod:`ldptree.mechanisms._rr_label`'s.

Levels: ``T = piecewise_levels(eps_y)`` ``= min(64, max(2, 2 ceil(8 eps_y)))``: enough that the
rounding's ``step^2 / 4`` stays a few percent of the release's variance up to ``eps_y ~ 4``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import attrs
import jax
import numpy as np

from ldptree._typing import FloatArray
from ldptree.mechanisms._channel import MatrixNoise, matrix_noise
from ldptree.mechanisms._kit import MAX_LEVELS, RealLabels
from ldptree.mechanisms._rr_label import RRLabelMechanism

__all__ = ["PiecewiseMechanism", "PiecewiseReport", "piecewise_levels", "piecewise_matrix"]


def piecewise_levels(epsilon: float) -> int:
    """``T = 2 ceil(8 epsilon)`` label levels within ``[2, 64]`` (module docstring)."""
    return min(MAX_LEVELS, max(2, 2 * math.ceil(8.0 * float(epsilon))))


def _window_matrix(epsilon: float, levels: int, width: int) -> FloatArray:
    outputs = levels + width
    low = math.exp(-epsilon)
    h = 1.0 / (width + (outputs - width) * low)
    p = np.full((levels + 1, outputs), h * low)
    for t in range(levels + 1):
        p[t, t : t + width] = h
    return p


def _worst_variance(p: FloatArray) -> float:
    """``max_t Var(y~ | t)`` in level units for the affine debiasing of ``p`` (float64)."""
    o = np.arange(p.shape[1], dtype=np.float64)
    mean = p @ o
    var = p @ o**2 - mean**2
    slope = (mean[-1] - mean[0]) / (p.shape[0] - 1)
    return float(var.max() / slope**2)


def piecewise_matrix(epsilon: float, levels: int) -> FloatArray:
    """The discretised piecewise mechanism's float matrix ``[levels + 1, levels + w]`` with the
    window width ``w`` minimising the worst-case variance (module docstring)."""
    widths = range(1, levels + 1)
    best = min(widths, key=lambda w: _worst_variance(_window_matrix(epsilon, levels, w)))
    return _window_matrix(epsilon, levels, best)


#: Largest label budget the discretised matrix is built for: 64-bit counts cannot hold the
#: ``e^{-eps}`` entries of a larger one, so a larger budget is realised as this one (less privacy
#: loss than claimed, never more, as for every 64-bit noise beyond about ``e^44``).
MAX_MATRIX_EPSILON = 40.0


@functools.lru_cache(maxsize=64)
def _noise(epsilon: float, levels: int) -> MatrixNoise:
    built = min(float(epsilon), MAX_MATRIX_EPSILON)
    return matrix_noise(piecewise_matrix(built, levels), built)


class PiecewiseReport(NamedTuple):
    """Reports of ``n`` holders: ``bits`` ``bool[n, L]`` and the output grid index ``code``
    ``int32[n]`` (:meth:`PiecewiseMechanism.decode_labels` gives the released values)."""

    bits: jax.Array
    code: jax.Array


@attrs.frozen
class PiecewiseMechanism(RRLabelMechanism):
    """Randomized response on the cell one-hot vector + the discretised piecewise mechanism on
    the label (module docstring).

    Parameters
    ----------
    epsilon, label_bound, budget_split, precision_bits:
        As for :class:`DuchiMechanism`.
    """

    report_type = PiecewiseReport

    def labels(self) -> RealLabels:
        return RealLabels(self.label_bound, piecewise_levels(self.label_epsilon))

    @property
    def label_noise(self) -> MatrixNoise:
        """The realised discretised piecewise law (budget ``(1 - rho) eps``, 64-bit counts)."""
        return _noise(self.label_epsilon, self.labels().levels)
