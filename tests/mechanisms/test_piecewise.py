"""The discretised piecewise mechanism with RR cell bits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldptree.mechanisms import PiecewiseMechanism
from ldptree.mechanisms._piecewise import piecewise_levels, piecewise_matrix


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_matrix_is_a_moving_window_with_ratio_e_eps(eps: float) -> None:
    p = piecewise_matrix(eps, 8)
    high, low = p.max(), p.min()
    assert math.isclose(high / low, math.exp(eps), rel_tol=1e-12)
    width = int((p[0] == high).sum())
    for t in range(9):  # level t's window is outputs t .. t + width - 1
        assert np.array_equal(np.flatnonzero(p[t] == high), np.arange(t, t + width))
    assert np.allclose(p.sum(axis=1), 1.0)


@pytest.mark.parametrize("eps", [1.0, 2.0, 4.0, 8.0])
def test_worst_case_variance_beats_the_continuous_mechanism(eps: float) -> None:
    """The discretised law (with its rounding to levels) is no worse than Wang et al.'s
    continuous worst case ``1/(e^{eps/2} - 1) + (e^{eps/2} + 3) / (3 (e^{eps/2} - 1)^2)``."""
    mech = PiecewiseMechanism(epsilon=2.0 * eps, label_bound=(-1.0, 1.0))
    e = math.exp(eps / 2.0)
    continuous = 1.0 / (e - 1.0) + (e + 3.0) / (3.0 * (e - 1.0) ** 2)
    assert mech.label_variance <= continuous
    assert mech.label_noise.max_bias < 1e-12


def test_levels() -> None:
    assert (
        piecewise_levels(0.01) == 2 and piecewise_levels(0.5) == 8 and piecewise_levels(1.0) == 16
    )
    assert piecewise_levels(100.0) == 64
