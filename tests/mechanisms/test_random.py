"""Holder randomness: the unrolled Threefry equals JAX's, and words depend only on (key, holder)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend.random import threefry_2x32

from ldptree.mechanisms._random import holder_words, key_words, threefry2x32


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
