"""The grid Laplace law: normalisation, exact mean, privacy ratio, and the sampler against it."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from ldptree.mechanisms import GridLaplace, RRLaplaceMechanism
from ldptree.mechanisms._grid_laplace import sample_codes


def _pmf(grid: GridLaplace, mu: float) -> tuple[np.ndarray, np.ndarray]:
    codes = np.arange(-grid.limit, grid.limit + 1)
    return codes, np.exp(grid.log_probs(codes, np.full(codes.shape, mu)))


@pytest.mark.parametrize("scale", [0.004, 2.0, 37.0])
@pytest.mark.parametrize("value", [0.0, 1.0, 0.3])
def test_law_is_normalised_and_mean_is_exact(scale: float, value: float) -> None:
    grid = GridLaplace.for_range(scale, reach=1.0)
    mu = value / grid.step
    codes, p = _pmf(grid, mu)
    assert p.sum() == pytest.approx(1.0, abs=1e-9)
    assert (codes * p).sum() == pytest.approx(grid.mean(mu), abs=1e-6 * grid.beta)
    assert grid.mean(0.0) == 0.0  # symmetric: the null value stays unbiased


@pytest.mark.parametrize("scale", [0.5, 2.0, 40.0])
def test_likelihood_ratio_of_a_unit_shift_is_at_most_exp_one_over_b(scale: float) -> None:
    # Every code, including the clamped ends: the post-processed law keeps the Laplace ratio.
    grid = GridLaplace.for_range(scale, reach=1.0)
    codes = np.arange(-grid.limit, grid.limit + 1)
    zero = grid.log_probs(codes, np.zeros(codes.shape))
    one = grid.log_probs(codes, np.full(codes.shape, 1.0 / grid.step))
    assert np.max(np.abs(zero - one)) <= 1.0 / scale + 1e-9


@pytest.mark.parametrize("value", [1.0, 0.3])  # on the grid (LPCT) and between points (RR label)
def test_sampler_matches_the_law(value: float) -> None:
    # Pearson chi-square over codes with expected count >= 20, 400k draws; the threshold is the
    # chi-square quantile at 1 - 1e-6 (Wilson-Hilferty), so a correct sampler fails w.p. ~1e-6.
    grid = GridLaplace.for_range(2.0, reach=1.0)
    n = 400_000
    mu = value / grid.step
    draws = np.asarray(sample_codes(jax.random.key(7), np.full(n, mu), grid.beta, grid.limit))
    codes, p = _pmf(grid, mu)
    observed = np.bincount(draws + grid.limit, minlength=codes.size)
    expected = n * p
    keep = expected >= 20
    pooled_obs = np.append(observed[keep], observed[~keep].sum())
    pooled_exp = np.append(expected[keep], expected[~keep].sum())
    chi2 = float(np.sum((pooled_obs - pooled_exp) ** 2 / pooled_exp))
    dof = pooled_obs.size - 1
    z = 4.753  # standard normal quantile at 1 - 1e-6
    limit = dof * (1 - 2 / (9 * dof) + z * math.sqrt(2 / (9 * dof))) ** 3
    assert chi2 < limit


def test_rr_label_likelihood_is_the_grid_law_after_clipping_and_centring() -> None:
    mech = RRLaplaceMechanism(epsilon=1.0, label_bound=(0.0, 4.0))
    grid = mech.label_grid
    codes = np.arange(-grid.limit, grid.limit + 1)
    total = sum(math.exp(mech.label_log_prob(int(c), 9.0)) for c in codes)  # clipped to 4
    assert total == pytest.approx(1.0, abs=1e-9)
    assert mech.label_log_prob(5, 9.0) == pytest.approx(grid.log_prob(5, 2.0 / grid.step))
