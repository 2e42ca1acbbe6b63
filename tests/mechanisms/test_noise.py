"""The kit's exact noises: realised budgets, exact laws, and samplers that draw those laws."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy import stats

from ldptree.mechanisms import BitFlip, Geometric
from ldptree.mechanisms._noise import MIN_REALISED, sample_noise
from ldptree.mechanisms._random import holder_words, key_words

KEY = jax.random.key(20261124)


@pytest.mark.parametrize("epsilon", [0.0025, 0.25, 1.0, 4.0, 12.5, 25.0, 40.0])
def test_bit_flips_realise_their_claim_without_waste(epsilon):
    noise = BitFlip(epsilon)
    assert MIN_REALISED * epsilon <= noise.realised_epsilon <= epsilon
    q = 1.0 / (1.0 + math.exp(epsilon))
    assert noise.flip_prob >= q  # rounded towards privacy


def test_bit_budgets_beyond_64_bits_are_realised_lower_not_higher():
    noise = BitFlip(50.0)
    assert noise.bits == 64 and 44.0 < noise.realised_epsilon <= 64 * math.log(2.0)


@pytest.mark.parametrize(("epsilon", "span"), [(0.005, 2), (0.5, 1), (2.0, 8), (25.0, 64)])
def test_geometric_realised_ratio_is_certified_from_the_counts(epsilon, span):
    noise = Geometric(epsilon, span=span)
    assert MIN_REALISED * epsilon <= noise.realised_epsilon <= epsilon
    # exact divergence between the two ends of the span, from the integer counts
    lo, hi = noise.counts(0), noise.counts(span)
    worst = max(math.log(a) - math.log(b) for a, b in zip(lo, hi, strict=True))
    assert worst <= noise.realised_epsilon * (1 + 1e-12)
    assert sum(lo) == 2**64 and sum(hi) == 2**64
    assert noise.max_bias < 1e-9


def _draw(noise, inputs, n):
    words = holder_words(key_words(KEY), np.uint32(0), n, noise.words(inputs.shape[1]))
    return np.asarray(sample_noise(noise.static, noise.constants(), words, inputs))


@pytest.mark.parametrize(
    "noise", [BitFlip(1.0), BitFlip(1.0, 32), BitFlip(30.0), Geometric(1.5, 4)]
)
def test_sampler_draws_the_declared_law(noise):
    """Chi-square of 40,000 draws per input against the exact law; false-failure rate 1e-6 per
    input for this fixed key."""
    n = 40_000
    for a in noise.inputs[:: max(1, len(noise.inputs) - 1)]:
        out = _draw(noise, np.full((n, 1), a, dtype=np.int32), n)[:, 0].astype(np.int64)
        probs = np.exp(noise.log_probs(a))
        first = 0 if isinstance(noise, BitFlip) else -noise.margin
        observed = np.bincount(out - first, minlength=probs.size)
        keep = probs * n >= 5  # pool the far tails into one bin
        exp_counts = np.append(probs[keep] * n, probs[~keep].sum() * n)
        obs_counts = np.append(observed[keep], observed[~keep].sum())
        if exp_counts[-1] == 0:
            exp_counts, obs_counts = exp_counts[:-1], obs_counts[:-1]
        assert obs_counts.sum() == n
        assert stats.chisquare(obs_counts, exp_counts * n / exp_counts.sum()).pvalue > 1e-6


def test_bad_parameters_name_the_argument():
    with pytest.raises(ValueError, match="epsilon"):
        BitFlip(0.0)
    with pytest.raises(ValueError, match="precision_bits"):
        BitFlip(1.0, 8)
    with pytest.raises(ValueError, match="span"):
        Geometric(1.0, span=0)
    with pytest.raises(ValueError, match="too small"):
        Geometric(1e-9, span=4)
