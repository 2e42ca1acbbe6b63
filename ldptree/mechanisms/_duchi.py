"""Duchi et al.'s mechanism for a bounded label, with randomized response on the cell (LPDT).

Duchi, Jordan and Wainwright's one-dimensional mechanism releases a label ``y in [-1, 1]`` as
``+C`` with probability ``1/2 + y (e^eps - 1) / (2 (e^eps + 1))`` and ``-C`` otherwise,
``C = (e^eps + 1) / (e^eps - 1)``: an unbiased two-point release. It is exactly randomized response
on a random rounding of ``y`` to the bound's ends, which is how it is built here, with integer
arithmetic only:

* the label is clipped to ``[lo, hi]`` and rounded to ``t in {0, 1}`` (``lo`` or ``hi``) with
  ``P(t = 1) = (clip(y) - lo) / (hi - lo)`` (:class:`RealLabels` with ``levels = 1``);
* the bit ``t`` goes through a :class:`BitFlip` of budget ``(1 - rho) eps``: flip probability
  ``q_y' = T / 2^bits >= 1 / (1 + e^{(1 - rho) eps})`` (rounded towards privacy).

Then ``P(code = 1 | y) = q_y' + (1 - 2 q_y') (clip(y) - lo) / (hi - lo)``, Duchi's law with the
realised flip probability, and the released label ``y~ = lo' + step' code`` with
``step' = (hi - lo) / (1 - 2 q_y')`` and ``lo' = lo - step' q_y'`` takes the two values
``(lo + hi) / 2 -+ (hi - lo) C' / 2``, ``C' = 1 / (1 - 2 q_y')`` (``C`` for the realised law),
and is unbiased for ``clip(y)``. Its variance is
``((hi - lo) C' / 2)^2 - (clip(y) - (lo + hi) / 2)^2``, at most ``v_y = ((hi - lo) C' / 2)^2``
(:meth:`RRLabelMechanism.label_variance` gives exactly
this: ``step'^2 q_y'(1 - q_y') + (hi - lo)^2 / 4``).

The cell is the one-hot vector through randomized response with budget ``rho eps``, and the
debiasing and per-holder variance bounds are :mod:`ldptree.mechanisms._rr_label`'s:
``v_c = q'(1 - q') / (1 - 2 q')^2`` for the count and ``v_c M^2 + (v_c + 1) v_y`` for the label sum.
Compared with the geometric label of :class:`RRLaplaceMechanism` (variance about
``2 ((hi - lo) / ((1 - rho) eps))^2``), Duchi's label wins at small label budgets: at
``(1 - rho) eps = 0.5`` its variance is ``(R / 2)^2 C^2 ~ 4.1 R^2`` against ``~ 8 R^2``.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs
import jax

from ldptree.mechanisms._kit import RealLabels
from ldptree.mechanisms._noise import BitFlip
from ldptree.mechanisms._rr_label import RRLabelMechanism

__all__ = ["DuchiMechanism", "DuchiReport"]


class DuchiReport(NamedTuple):
    """Reports of ``n`` holders: ``bits`` ``bool[n, L]`` and the label bit ``sign`` ``bool[n]``
    (``True`` for ``+C``; :meth:`DuchiMechanism.decode_labels` gives the released values)."""

    bits: jax.Array
    sign: jax.Array


@attrs.frozen
class DuchiMechanism(RRLabelMechanism):
    """Randomized response on the cell one-hot vector + Duchi et al.'s two-point label (module
    docstring).

    Parameters
    ----------
    epsilon, label_bound:
        As for :class:`RRLaplaceMechanism`.
    budget_split:
        ``rho in (0, 1)``: share of ``eps`` spent on the cell, the rest on the label
        (:func:`~ldptree.mechanisms.optimal_split` computes one from public quantities).
    precision_bits:
        Width (16, 32 or 64) of the uniform integers realising the cell flips; ``None`` (default)
        takes the smallest that realises at least 99% of the cell budget.
    """

    report_type = DuchiReport
    label_name = "sign"

    def labels(self) -> RealLabels:
        return RealLabels(self.label_bound, 1)

    @property
    def label_noise(self) -> BitFlip:
        """Randomized response on the rounded label bit (budget ``(1 - rho) eps``)."""
        return BitFlip(self.label_epsilon)
