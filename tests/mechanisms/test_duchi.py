"""Duchi et al.'s two-point label release with RR cell bits."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldptree.mechanisms import DuchiMechanism, DuchiReport


@pytest.mark.parametrize("label", [-1.0, 0.0, 0.7, 3.0, 5.0])
def test_label_law_is_duchis_with_the_realised_flip(label: float) -> None:
    mech = DuchiMechanism(epsilon=2.0, label_bound=(-1.0, 3.0), budget_split=0.5)
    q = mech.label_noise.flip_prob
    assert 1.0 / (1.0 + math.exp(1.0)) <= q  # rounded towards privacy
    y = min(max(label, -1.0), 3.0)
    want = q + (1.0 - 2.0 * q) * (y + 1.0) / 4.0
    cells = np.zeros(4, dtype=bool)
    cells[0] = True
    report = DuchiReport(bits=cells, sign=np.True_)
    # P(sign = 1 | y) = P(report with sign 1) / P(cell bits), read off the exact likelihood
    both = math.exp(mech.log_prob(report, 0, label, 4))
    other = math.exp(mech.log_prob(DuchiReport(bits=cells, sign=np.False_), 0, label, 4))
    assert math.isclose(both / (both + other), want, rel_tol=1e-12)


def test_released_values_and_variance() -> None:
    mech = DuchiMechanism(epsilon=1.0, label_bound=(-1.0, 3.0))
    q = mech.label_noise.flip_prob
    c = 1.0 / (1.0 - 2.0 * q)  # realised C
    low, high = mech.decode_labels(np.array([0, 1]))
    assert math.isclose(low, 1.0 - 2.0 * c, rel_tol=1e-12)
    assert math.isclose(high, 1.0 + 2.0 * c, rel_tol=1e-12)
    # the worst-case variance (R C / 2)^2, attained at the centre of the bound
    assert math.isclose(mech.label_variance, (2.0 * c) ** 2, rel_tol=1e-12)
    assert mech.labels().levels == 1
