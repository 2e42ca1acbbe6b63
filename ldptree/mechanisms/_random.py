"""Per-holder random words: the one source of randomness of every built-in mechanism.

Holder ``h`` gets words ``W_h = threefry2x32(key, (h, 0)), threefry2x32(key, (h, 1)), ...`` (both
output halves of each hash are used). They depend only on the key and the holder's global index,
so a holder's report is the same whether the population is privatized at once or in chunks, and
two holders never share randomness. One explicit threefry call per batch keeps the compiled
program small (XLA needs about 0.3 s for it, against seconds for nested ``fold_in``/``split``).

Holder indices are 32-bit: at most ``2^32`` holders per key.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax.extend.random import threefry_2x32

from ldptree._typing import PRNGKey


def key_words(key: PRNGKey) -> jax.Array:
    """The ``uint32[2]`` threefry key data of ``key`` (``TypeError`` for other PRNG impls)."""
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
    out = threefry_2x32(key_data, jnp.concatenate([hi.ravel(), lo.ravel()]))
    words = jnp.concatenate(
        [
            out[: n_holders * n_pairs].reshape(n_holders, n_pairs),
            out[n_holders * n_pairs :].reshape(n_holders, n_pairs),
        ],
        axis=1,
    )
    return words[:, :n_words]


def unit_open(words: jax.Array) -> jax.Array:
    """``(m + 1/2) 2^-23`` from the low 23 bits ``m``: float32 in ``(0, 1)``, exact."""
    m = (words & jnp.uint32(0x7FFFFF)).astype(jnp.float32)
    u: jax.Array = (m + 0.5) * jnp.float32(2.0**-23)
    return u


def unit_halfopen(words: jax.Array) -> jax.Array:
    """``m 2^-24`` from the high 24 bits ``m``: float32 in ``[0, 1)``, exact."""
    u: jax.Array = (words >> 8).astype(jnp.float32) * jnp.float32(2.0**-24)
    return u


def laplace(words: jax.Array) -> jax.Array:
    """Standard Laplace variates: sign from bit 31 times ``-log V``, ``V`` = :func:`unit_open`.

    ``|xi|`` takes the ``2^23`` values ``-log((m + 1/2) 2^-23)``, so the realised support is
    bounded by ``24 ln 2 ~ 16.6`` (the accountant's floating-point caveat).
    """
    sign = jnp.where(words >> 31 == 1, jnp.float32(1.0), jnp.float32(-1.0))
    return sign * -jnp.log(unit_open(words))
