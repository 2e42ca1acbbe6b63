"""Dyadic laws: exact counts, privacy of the clamped geometric release, samplers that agree."""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from ldptree.mechanisms._exact import (
    PRECISION_BITS,
    DyadicLaw,
    chain_ratio,
    clamped_output_counts,
    dyadic_law,
    geometric_noise_law,
    search_words,
)

TOTAL = 2**PRECISION_BITS


def _split(u: np.ndarray) -> tuple[jax.Array, jax.Array]:
    hi = (u >> np.uint64(32)).astype(np.uint32)
    lo = (u & np.uint64(2**32 - 1)).astype(np.uint32)
    return jnp.asarray(hi), jnp.asarray(lo)


def _exact_divergence(noise: DyadicLaw, a: int, b: int, span: int, margin: int) -> float:
    pa = clamped_output_counts(noise, a, -margin, span + margin)
    pb = clamped_output_counts(noise, b, -margin, span + margin)
    worst = -math.inf
    for x, y in zip(pa, pb, strict=True):
        if x and not y:
            return math.inf
        if x and y:
            worst = max(worst, math.log(x) - math.log(y))
    return worst


@settings(max_examples=25, deadline=None)
@given(
    gamma=st.floats(0.01, 3.0),
    span=st.integers(1, 12),
    margin=st.integers(1, 60),
)
def test_clamped_release_is_pure_for_every_pair(gamma: float, span: int, margin: int) -> None:
    noise = geometric_noise_law(gamma, span, margin)
    assert sum(noise.counts) == TOTAL
    g = chain_ratio(noise, span, margin)
    assert g <= gamma + 1e-12  # logs are rounded up by ~1e-14
    for a in range(span + 1):
        for b in range(span + 1):
            if a != b:
                d = _exact_divergence(noise, a, b, span, margin)
                assert d <= g * abs(a - b) + 1e-12


def test_interior_counts_are_symmetric_and_decreasing() -> None:
    noise = geometric_noise_law(0.25, 8, 160)
    q = noise.counts[1:-1]
    assert q == q[::-1]
    half = q[len(q) // 2 :]
    assert all(x >= y for x, y in itertools.pairwise(half))


@pytest.mark.parametrize("eps", [0.005, 0.5, 8.0, 25.0])
def test_label_release_bound_is_tight(eps: float) -> None:
    # The grid of the label release: N steps, gamma = eps / N; the certified bound is within
    # float rounding of eps and the exact divergence between the extreme labels attains it
    # (up to what 64-bit probabilities can represent: ratios below about e^44).
    span = max(1, math.ceil(16 * eps))
    gamma = eps / span
    margin = math.ceil(40 / gamma)
    noise = geometric_noise_law(gamma, span, margin)
    bound = chain_ratio(noise, span, margin) * span
    assert eps * (1 - 1e-9) <= bound <= eps * (1 + 1e-9)
    assert _exact_divergence(noise, 0, span, span, margin) >= 0.99 * eps
    ideal = 2 * math.exp(-gamma) / (1 - math.exp(-gamma)) ** 2
    assert noise.variance == pytest.approx(ideal, rel=1e-6)
    assert abs(noise.mean) < 1e-12


def test_numpy_and_jax_samplers_agree_on_every_boundary() -> None:
    noise = geometric_noise_law(1 / 16, 16, 640)
    th = noise.thresholds()
    edges = np.concatenate([th[::37], th[::37] - np.uint64(1)])
    u = np.concatenate(
        [
            np.array([0, TOTAL - 1], dtype=np.uint64),
            edges,
            np.random.default_rng(0).integers(0, TOTAL, 20000, dtype=np.uint64),
        ]
    )
    host = noise.sample_uniform(u)
    device = np.asarray(jax.jit(noise.sample_words)(*_split(u)))
    np.testing.assert_array_equal(host, device)
    assert host.min() >= noise.first and host.max() < noise.first + noise.size


def test_search_words_vmaps_with_traced_thresholds() -> None:
    law = dyadic_law([0.125, 0.25, 0.5, 0.125], first=-1)
    t_hi, t_lo = (jnp.asarray(w) for w in law.threshold_words())
    u = np.random.default_rng(1).integers(0, TOTAL, (3, 50), dtype=np.uint64)
    hi, lo = _split(u)
    out = jax.jit(jax.vmap(search_words, in_axes=(None, None, 0, 0)))(t_hi, t_lo, hi, lo)
    np.testing.assert_array_equal(np.asarray(out) - 1, law.sample_uniform(u))


def test_sampled_frequencies_match_the_counts() -> None:
    # Chi-square goodness of fit at level 1e-6 (false-failure rate 1e-6, fixed seed).
    law = dyadic_law([0.1, 0.2, 0.3, 0.25, 0.15], first=3)
    draws = law.sample_numpy(np.random.default_rng(7), 200_000)
    observed = np.bincount(draws - 3, minlength=5)
    result = stats.chisquare(observed, law.probabilities * draws.size)
    assert result.pvalue > 1e-6


def test_dyadic_law_validates() -> None:
    with pytest.raises(ValueError, match="sum to 2"):
        DyadicLaw(first=0, counts=(1, 2))
    with pytest.raises(ValueError, match="non-negative"):
        DyadicLaw(first=0, counts=(TOTAL + 1, -1))
    with pytest.raises(ValueError, match="sum to 1"):
        dyadic_law([0.5, 0.4])
    with pytest.raises(ValueError, match="finite"):
        dyadic_law([float("nan"), 1.0])
    with pytest.raises(ValueError, match="gamma"):
        geometric_noise_law(0.0, 1, 1)
    with pytest.raises(ValueError, match="span"):
        geometric_noise_law(0.5, 0, 1)
    with pytest.raises(TypeError, match="uint64"):
        dyadic_law([1.0]).sample_uniform(np.array([1, 2]))
    with pytest.raises(TypeError, match="Generator"):
        dyadic_law([1.0]).sample_numpy(0)  # type: ignore[arg-type]
