"""Discrete Gaussian tables: exact shape checks and the realised (eps, delta) bound."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from ldptree.baselines._pglm import gaussian_delta
from ldptree.mechanisms._discrete_gaussian import (
    DiscreteGaussianGroup,
    discrete_gaussian_law,
    is_symmetric_log_concave,
    product_delta,
)
from ldptree.mechanisms._exact import DyadicLaw


def _exact_delta(p: np.ndarray, shifts: tuple[int, ...], epsilon: float) -> float:
    """Brute-force ``sum_o (P(o) - e^eps Q(o))_+`` over the product output grid."""
    size = p.shape[0]
    span = max(abs(s) for s in shifts)
    axes_p, axes_q = [], []
    for s in shifts:
        pad = np.zeros(size + 2 * span)
        pad_q = np.zeros(size + 2 * span)
        pad[span : span + size] = p
        pad_q[span + s : span + s + size] = p
        axes_p.append(pad)
        axes_q.append(pad_q)
    joint_p, joint_q = axes_p[0], axes_q[0]
    for ap, aq in zip(axes_p[1:], axes_q[1:], strict=True):
        joint_p = np.multiply.outer(joint_p, ap)
        joint_q = np.multiply.outer(joint_q, aq)
    return float(np.sum(np.maximum(joint_p - math.exp(epsilon) * joint_q, 0.0)))


def test_tables_are_symmetric_log_concave_and_centred() -> None:
    for sigma in (0.5, 3.0, 20.0, 300.0):
        law = discrete_gaussian_law(sigma)
        assert is_symmetric_log_concave(law)
        assert law.mean == 0.0
        # the discrete Gaussian's variance is sigma^2 up to e^{-2 pi^2 sigma^2} (not for 0.5)
        assert law.variance == pytest.approx(sigma**2, rel=1e-6) or sigma < 1
        assert min(law.counts) >= 2**14
    with pytest.raises(ValueError, match="sigma"):
        discrete_gaussian_law(0.0)
    broken = DyadicLaw(first=-1, counts=(2**62, 2**62, 2**63))
    assert not is_symmetric_log_concave(broken)


@pytest.mark.parametrize(("parts", "epsilon"), [(1, 0.5), (2, 0.5), (3, 8.0)])
def test_the_all_coordinates_shifted_pair_is_the_worst_and_the_bound_is_tight(
    parts: int, epsilon: float
) -> None:
    # two coordinates, codes in {0, 1, 2}: brute force over every shift vector
    sigma, shift = 1.5, 2
    group = DiscreteGaussianGroup(sigma, 2, shift, parts)
    _, p = group.pmf()
    assert p.sum() == pytest.approx(1.0, abs=1e-14)
    bound = product_delta([group], epsilon)
    values = {
        shifts: _exact_delta(p, shifts, epsilon)
        for shifts in itertools.product(range(-shift, shift + 1), repeat=2)
    }
    worst = max(values.values())
    assert worst == pytest.approx(values[(shift, shift)], rel=1e-12)
    assert worst <= bound
    # one table: loss linear up to rounding, so the bound is tight; a sum of tables is not a
    # discrete Gaussian, and its residue from the linear loss makes the bound a little looser
    assert bound <= worst * (1 + (1e-6 if parts == 1 else 2e-2)) + 1e-15


def test_two_groups_agree_with_one_and_the_continuous_gaussian() -> None:
    one = product_delta([DiscreteGaussianGroup(20.0, 30, 1)], 1.0)
    two = product_delta(
        [DiscreteGaussianGroup(20.0, 10, 1), DiscreteGaussianGroup(20.0, 20, 1)], 1.0
    )
    assert two == pytest.approx(one, rel=1e-8) and two >= one
    # 30 coordinates shifted by 1 at sigma 20: the Gaussian with mu = sqrt(30) / 20
    assert one == pytest.approx(gaussian_delta(math.sqrt(30) / 20.0, 1.0), rel=1e-3)
    with pytest.raises(ValueError, match="groups"):
        product_delta([], 1.0)
