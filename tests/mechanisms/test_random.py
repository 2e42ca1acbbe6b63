"""Holder randomness: the unrolled Threefry equals JAX's, and words depend only on (key, holder)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from jax.extend.random import threefry_2x32

from ldptree.mechanisms._random import (
    fold_in,
    holder_words,
    key_words,
    split,
    threefry2x32,
    threefry2x32_host,
)

# 32-bit words, with the edges (0, 2^31 and the top of the range) drawn often
WORDS = st.one_of(
    st.integers(0, 2**32 - 1),
    st.integers(2**32 - 8, 2**32 - 1),
    st.integers(2**31 - 4, 2**31 + 4),
    st.integers(0, 8),
)


def _data(key: jax.Array) -> np.ndarray:
    return np.asarray(jax.random.key_data(key))


@pytest.mark.parametrize("seed", [0, 1, 2**31 + 5])
def test_unrolled_threefry_equals_jax_threefry(seed):
    kd = key_words(jax.random.key(seed))
    rng = np.random.default_rng(seed)
    x0 = jnp.asarray(rng.integers(0, 2**32, size=257, dtype=np.uint32))
    x1 = jnp.asarray(rng.integers(0, 2**32, size=257, dtype=np.uint32))
    expected = np.asarray(threefry_2x32(kd, jnp.concatenate([x0, x1])))
    got0, got1 = jax.jit(threefry2x32)(kd[0], kd[1], x0, x1)
    np.testing.assert_array_equal(np.concatenate([got0, got1]), expected)


def test_holder_words_depend_only_on_key_and_holder_index():
    kd = key_words(jax.random.key(3))
    whole = np.asarray(holder_words(kd, jnp.uint32(0), 100, 9))
    tail = np.asarray(holder_words(kd, jnp.uint32(40), 60, 9))
    np.testing.assert_array_equal(whole[40:], tail)
    # fewer words per holder are a prefix of more words
    np.testing.assert_array_equal(np.asarray(holder_words(kd, jnp.uint32(0), 100, 4)), whole[:, :4])
    # another key gives other words
    other = np.asarray(holder_words(key_words(jax.random.key(4)), jnp.uint32(0), 100, 9))
    assert (other != whole).mean() > 0.99


def test_key_words_rejects_other_prng_implementations():
    with pytest.raises(TypeError, match="threefry2x32"):
        key_words(jax.random.key(0, impl="rbg"))


@given(k0=WORDS, k1=WORDS, x0=st.lists(WORDS, min_size=1, max_size=5), x1=WORDS)
def test_host_threefry_equals_the_unrolled_jax_threefry(k0, k1, x0, x1):
    counters = np.asarray(x0, dtype=np.uint32)
    other = np.full(counters.shape, x1, dtype=np.uint32)
    host = threefry2x32_host(k0, k1, counters, other)
    dev = threefry2x32(jnp.uint32(k0), jnp.uint32(k1), jnp.asarray(counters), jnp.asarray(other))
    for h, d in zip(host, dev, strict=True):
        assert h.dtype == np.uint32
        np.testing.assert_array_equal(h, np.asarray(d))


@given(seed=WORDS, data=WORDS)
def test_host_fold_in_equals_jax_fold_in_bit_for_bit(seed, data):
    key = jax.random.key(seed)
    folded = fold_in(key, data)
    assert folded.dtype == key.dtype and folded.shape == ()
    np.testing.assert_array_equal(_data(folded), _data(jax.random.fold_in(key, data)))


@pytest.mark.parametrize("partitionable", [True, False])
@given(seed=WORDS, num=st.integers(1, 5))
def test_host_split_equals_jax_split_bit_for_bit(partitionable, seed, num):
    key = jax.random.key(seed)
    with jax.threefry_partitionable(partitionable):
        ours = split(key, num)
        theirs = jax.random.split(key, num)
    assert len(ours) == num
    for a, b in zip(ours, theirs, strict=True):
        assert a.dtype == key.dtype
        np.testing.assert_array_equal(_data(a), _data(b))


def test_host_keys_fall_back_to_jax_random_for_other_keys():
    rbg = jax.random.key(3, impl="rbg")
    np.testing.assert_array_equal(_data(fold_in(rbg, 9)), _data(jax.random.fold_in(rbg, 9)))
    for a, b in zip(split(rbg, 3), jax.random.split(rbg, 3), strict=True):
        np.testing.assert_array_equal(_data(a), _data(b))
    raw = jax.random.key_data(jax.random.key(5))  # legacy raw key data
    np.testing.assert_array_equal(np.asarray(fold_in(raw, 2)), jax.random.fold_in(raw, 2))
    traced = jax.jit(lambda k: jax.random.key_data(fold_in(k, 4)))(jax.random.key(5))
    np.testing.assert_array_equal(traced, _data(jax.random.fold_in(jax.random.key(5), 4)))


def test_host_keys_refuse_values_outside_their_range():
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="data"):
        fold_in(key, 2**32)
    with pytest.raises(ValueError, match="data"):
        fold_in(key, -1)
    with pytest.raises(ValueError, match="num"):
        split(key, 0)
