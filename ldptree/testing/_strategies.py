"""Hypothesis strategies for users' own property tests: partitions, data, budgets, mechanisms.

``partitions()`` draws trees of any shape: each node independently becomes a leaf or splits a
random feature at a random interior point of its box, up to ``max_depth``; the result is validated
by :meth:`Partition.from_arrays` like any published partition.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from ldptree._typing import FloatArray
from ldptree.mechanisms._rr_laplace import RRLaplaceMechanism
from ldptree.partitions._partition import Partition


@st.composite
def partitions(
    draw: st.DrawFn,
    *,
    min_features: int = 1,
    max_features: int = 5,
    max_depth: int = 5,
    split_probability: float = 0.7,
) -> Partition:
    """Random partitions of ``[0, 1]^d``, ``d`` in ``[min_features, max_features]``."""
    d = draw(st.integers(min_features, max_features))
    feature: list[int] = []
    threshold: list[float] = []
    left: list[int] = []
    right: list[int] = []
    lower: list[FloatArray] = []
    upper: list[FloatArray] = []

    def node(lo: FloatArray, up: FloatArray, depth: int) -> int:
        me = len(feature)
        feature.append(-1)
        threshold.append(np.nan)
        left.append(-1)
        right.append(-1)
        lower.append(lo)
        upper.append(up)
        if depth < max_depth and draw(st.floats(0.0, 1.0)) < split_probability:
            f = draw(st.integers(0, d - 1))
            frac = draw(st.floats(0.05, 0.95))
            t = float(lo[f] + frac * (up[f] - lo[f]))
            up_left, lo_right = up.copy(), lo.copy()
            up_left[f] = lo_right[f] = t
            feature[me], threshold[me] = f, t
            left[me] = node(lo, up_left, depth + 1)
            right[me] = node(lo_right, up, depth + 1)
        return me

    node(np.zeros(d), np.ones(d), 0)
    return Partition.from_arrays(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        lower=np.asarray(lower),
        upper=np.asarray(upper),
    )


def budgets(min_value: float = 1e-2, max_value: float = 50.0) -> st.SearchStrategy[float]:
    """Privacy budgets spread log-uniformly over ``[min_value, max_value]``."""
    lo, hi = np.log(min_value), np.log(max_value)
    return st.floats(0.0, 1.0).map(lambda u: float(np.exp(lo + u * (hi - lo))))


def budget_splits() -> st.SearchStrategy[float]:
    """Budget shares ``rho`` in ``[0.05, 0.95]``."""
    return st.floats(0.05, 0.95)


@st.composite
def labelled_cells(
    draw: st.DrawFn, n_cells: int, *, min_size: int = 1, max_size: int = 200, bound: float = 1.0
) -> tuple[np.ndarray[Any, np.dtype[np.int32]], FloatArray]:
    """A private sample as records ``(cells int32[n], labels float[n])`` with ``|label| <= bound``.

    Labels sometimes exceed the bound by up to 50% so that clipping is exercised.
    """
    n = draw(st.integers(min_size, max_size))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    cells = rng.integers(0, n_cells, size=n).astype(np.int32)
    labels = rng.uniform(-1.5 * bound, 1.5 * bound, size=n)
    return cells, labels


def label_bounds(max_magnitude: float = 100.0) -> st.SearchStrategy[tuple[float, float]]:
    """Label ranges ``(lo, hi)`` with ``lo < hi``, centred anywhere, widths over many decades."""

    @st.composite
    def draw_bound(draw: st.DrawFn) -> tuple[float, float]:
        centre = draw(st.floats(-max_magnitude, max_magnitude))
        width = draw(st.floats(-3.0, 3.0).map(lambda e: 10.0**e))
        return (centre - width / 2.0, centre + width / 2.0)

    return draw_bound()


@st.composite
def records(
    draw: st.DrawFn, n_cells: int, *, label_bound: tuple[float, float] = (-1.0, 1.0)
) -> tuple[int, float]:
    """One holder's record ``(cell, label)``; the label may exceed ``label_bound`` by 50%."""
    lo, hi = label_bound
    pad = 0.5 * (hi - lo)
    return draw(st.integers(0, n_cells - 1)), draw(st.floats(lo - pad, hi + pad))


@st.composite
def rr_laplace_mechanisms(
    draw: st.DrawFn, *, min_epsilon: float = 1e-2, max_epsilon: float = 50.0
) -> RRLaplaceMechanism:
    """:class:`~ldptree.mechanisms.RRLaplaceMechanism` with random budget, split, label range
    and flip precision (16 bits falls back to automatic where the cell budget is too small)."""
    params = {
        "epsilon": draw(budgets(min_epsilon, max_epsilon)),
        "label_bound": draw(label_bounds()),
        "budget_split": draw(budget_splits()),
    }
    bits = draw(st.sampled_from([None, 16, 32]))
    try:
        return RRLaplaceMechanism(**params, precision_bits=bits)
    except ValueError:
        return RRLaplaceMechanism(**params, precision_bits=None)
