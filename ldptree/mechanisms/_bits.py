"""Uniform 32-bit words from a JAX key, bit-identical to ``jax.random.bits`` but faster on CPU.

``jax.random.bits(key, (n,), uint32)`` for a threefry2x32 key in JAX's default partitionable mode
is ``x0 ^ x1`` where ``(x0, x1) = threefry2x32(key, (0, i))`` for counters ``i = 0..n-1`` (the
counter is a 64-bit iota split into high and low words). On CPU, JAX lowers the 20-round hash as
a rolled ``while`` loop of five 4-round steps, so XLA materialises the full ``(x0, x1)`` arrays
five times; for the ``n x L`` flip words of randomized response that loop dominated the fit
(about 30 ns per word). Writing the same rounds unrolled lets XLA fuse the whole hash into one
vectorised loop (about 8x faster on a 2-core x86 machine).

The result is the same function of the key, so every report is unchanged; ``random_words`` falls
back to ``jax.random.bits`` for any other key implementation or with
``jax_threefry_partitionable`` off, and a unit test pins the equality to ``jax.random.bits``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ldptree._typing import PRNGKey

#: Threefry-2x32 rotation constants (Salmon et al. 2011), alternating every four rounds.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
#: Key-schedule parity constant of Threefry.
_PARITY = 0x1BD11BDA


def _rotate_left(x: jax.Array, r: int) -> jax.Array:
    rotated: jax.Array = (x << jnp.uint32(r)) | (x >> jnp.uint32(32 - r))
    return rotated


def threefry2x32(
    k0: jax.Array, k1: jax.Array, x0: jax.Array, x1: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """The 20-round Threefry-2x32 block function on ``uint32`` arrays, written out unrolled."""
    keys = (k0, k1, k0 ^ k1 ^ jnp.uint32(_PARITY))
    x0 = x0 + keys[0]
    x1 = x1 + keys[1]
    for step in range(5):
        for r in _ROTATIONS[step % 2]:
            x0 = x0 + x1
            x1 = x0 ^ _rotate_left(x1, r)
        x0 = x0 + keys[(step + 1) % 3]
        x1 = x1 + keys[(step + 2) % 3] + jnp.uint32(step + 1)
    return x0, x1


def _is_threefry(key: PRNGKey) -> bool:
    return bool(
        jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
        and "threefry2x32" in str(jax.random.key_impl(key))
        and getattr(jax.config, "jax_threefry_partitionable", False)
    )


def random_words(key: PRNGKey, n_words: int) -> jax.Array:
    """``uint32[n_words]`` equal to ``jax.random.bits(key, (n_words,), dtype=jnp.uint32)``."""
    if not _is_threefry(key) or n_words >= 2**32:
        words: jax.Array = jax.random.bits(key, (n_words,), dtype=jnp.uint32)
        return words
    k = jax.random.key_data(key)
    counter = jnp.arange(n_words, dtype=jnp.uint32)
    x0, x1 = threefry2x32(k[0], k[1], jnp.zeros_like(counter), counter)
    return x0 ^ x1
