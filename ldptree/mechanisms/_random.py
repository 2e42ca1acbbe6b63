"""Per-holder random words: the one source of randomness of every built-in mechanism.

Holder ``h`` gets the words ``threefry2x32(key, (h, 0)), threefry2x32(key, (h, 1)), ...``, both
output halves of each hash in turn. They depend only on the key and the holder's global index,
so a holder's report is the same whether the population is privatized at once or in chunks, and
two holders never share randomness.

The hash is Threefry-2x32 (20 rounds; Salmon et al. 2011), the function behind
``jax.extend.random.threefry_2x32``, written out with its rounds unrolled: JAX lowers its own
version on CPU as a rolled loop that materialises the state arrays five times (about 30 ns per
word on a 2-core x86 machine), while the unrolled rounds fuse into one vectorised loop, about 8x
faster. A test pins the two to equal outputs.

Holder indices are 32-bit: at most ``2^32`` holders per key, indices ``0 .. 2^32 - 1``. Every
built-in ``privatize``/``privatize_summarize`` refuses a concrete ``first_holder`` whose range
``first_holder .. first_holder + n - 1`` leaves ``[0, 2^32)`` (``_records.check_first_holder``): a
wrapped index would give holder ``2^32 + i`` the randomness of holder ``i``, two holders sharing
noise. A *traced* ``first_holder`` (inside the caller's ``jit``) cannot be checked: there the
caller must keep ``first_holder + n <= 2^32`` itself.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from ldptree._typing import PRNGKey

#: Threefry-2x32 rotation constants, alternating every four rounds.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
#: Key-schedule parity constant of Threefry.
_PARITY = 0x1BD11BDA


def _rotate_left(x: jax.Array, r: int) -> jax.Array:
    rotated: jax.Array = (x << jnp.uint32(r)) | (x >> jnp.uint32(32 - r))
    return rotated


def threefry2x32(
    k0: jax.Array, k1: jax.Array, x0: jax.Array, x1: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """The 20-round Threefry-2x32 block function on ``uint32`` arrays, unrolled."""
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


def key_words(key: PRNGKey) -> jax.Array:
    """The ``uint32[2]`` threefry key data of ``key`` (``TypeError`` for other PRNG impls)."""
    if not isinstance(key, jax.Array):
        raise TypeError(
            f"key must be a JAX PRNG key such as jax.random.key(0), got {type(key).__name__}"
        )
    data = jax.random.key_data(key) if jnp.issubdtype(key.dtype, jax.dtypes.prng_key) else key
    if data.shape != (2,) or data.dtype != jnp.uint32:
        raise TypeError(
            "key must be a threefry2x32 JAX key (jax.random.key(seed)), got key data of shape "
            f"{data.shape} and dtype {data.dtype}"
        )
    return data


def holder_words(
    key_data: jax.Array, first_holder: jax.Array, n_holders: int, n_words: int
) -> jax.Array:
    """``uint32[n_holders, n_words]`` words of holders ``first_holder, first_holder + 1, ...``."""
    n_pairs = -(-n_words // 2)
    holders = jnp.asarray(first_holder, dtype=jnp.uint32) + jnp.arange(n_holders, dtype=jnp.uint32)
    hi = jnp.broadcast_to(holders[:, None], (n_holders, n_pairs))
    lo = jnp.broadcast_to(jnp.arange(n_pairs, dtype=jnp.uint32)[None, :], (n_holders, n_pairs))
    out0, out1 = threefry2x32(key_data[0], key_data[1], hi, lo)
    # interleaved, so that a holder's first k words do not depend on how many are drawn
    words: jax.Array = jnp.stack([out0, out1], axis=-1).reshape(n_holders, 2 * n_pairs)
    return words[:, :n_words]


def unit_halfopen(words: jax.Array) -> jax.Array:
    """``m 2^-24`` from the high 24 bits ``m``: float32 in ``[0, 1)``, exact."""
    u: jax.Array = (words >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)
    return u
