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

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import PRNGKey

#: Host ``uint32`` word arrays.
Words = np.ndarray[Any, np.dtype[np.uint32]]
#: The PRNG implementation whose keys the host functions derive.
_THREEFRY = "threefry2x32"

#: Threefry-2x32 rotation constants, alternating every four rounds.
_ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
#: Key-schedule parity constant of Threefry.
_PARITY = 0x1BD11BDA


def _rounds(k0: Any, k1: Any, x0: Any, x1: Any, u32: Callable[[int], Any]) -> tuple[Any, Any]:
    # The 20 rounds, on JAX arrays (``u32 = jnp.uint32``) or NumPy arrays (``u32 = np.uint32``):
    # both wrap modulo 2^32 and compute the same words.
    keys = (k0, k1, k0 ^ k1 ^ u32(_PARITY))
    x0 = x0 + keys[0]
    x1 = x1 + keys[1]
    for step in range(5):
        for r in _ROTATIONS[step % 2]:
            x0 = x0 + x1
            x1 = x0 ^ ((x1 << u32(r)) | (x1 >> u32(32 - r)))
        x0 = x0 + keys[(step + 1) % 3]
        x1 = x1 + keys[(step + 2) % 3] + u32(step + 1)
    return x0, x1


def threefry2x32(
    k0: jax.Array, k1: jax.Array, x0: jax.Array, x1: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """The 20-round Threefry-2x32 block function on ``uint32`` arrays, unrolled."""
    out: tuple[jax.Array, jax.Array] = _rounds(k0, k1, x0, x1, jnp.uint32)
    return out


def threefry2x32_host(k0: int, k1: int, x0: Any, x1: Any) -> tuple[Words, Words]:
    """:func:`threefry2x32` in NumPy for the key ``(k0, k1)`` and ``uint32`` counter arrays
    ``x0, x1`` of one shape: the same words, computed on the host with no device dispatch."""
    a = np.array(x0, dtype=np.uint32, ndmin=1)
    b = np.array(x1, dtype=np.uint32, ndmin=1)
    key = np.array([k0, k1], dtype=np.uint32)  # 1-d, so NumPy wraps silently like uint32 arrays
    out: tuple[Words, Words] = _rounds(key[0:1], key[1:2], a, b, np.uint32)
    return out


# -- keys on the host --------------------------------------------------------------------------
# A fit derives a few keys (from the seed, a split, a fold-in) before any holder's word is drawn.
# Through jax.random each is a small jitted program, and the first call of each in a process
# traces, lowers and looks it up in the compilation cache (milliseconds each, on the critical
# path of a cold fit). The same key data follow from a handful of Threefry hashes: for a
# threefry2x32 key ``k``, JAX defines
#
# * ``key(seed)`` for ``0 <= seed < 2^32`` as the key data ``(0, seed)`` (built so by
#   ``ldptree._validation.as_key``);
# * ``fold_in(k, d)`` for ``0 <= d < 2^32`` as ``threefry2x32(k, (0, d))``;
# * ``split(k, num)`` as ``threefry2x32(k, (0, i))`` for key ``i`` when the flag
#   ``jax_threefry_partitionable`` is on (the default), else as the ``(num, 2)`` reshape of
#   ``concat(threefry2x32(k, (c_0, c_1)))`` with counters ``c = 0, 1, ..., 2 num - 1`` split in
#   halves ``c_0 = 0 .. num - 1``, ``c_1 = num .. 2 num - 1``.
#
# The functions below compute them in NumPy and wrap the data (no dispatch); tests compare them
# with jax.random bit for bit. Keys of another PRNG implementation, raw key data and traced keys
# go through jax.random unchanged.


def _host_words(key: Any) -> Words | None:
    """The ``uint32[2]`` data of a concrete, scalar threefry2x32 key, on the host; else None."""
    if (
        not isinstance(key, jax.Array)
        or isinstance(key, jax.core.Tracer)
        or key.shape != ()
        or not jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
        or str(jax.random.key_impl(key)) != _THREEFRY
    ):
        return None
    return np.asarray(jax.random.key_data(key), dtype=np.uint32)


def _wrap(data: Any) -> PRNGKey:
    words = jax.device_put(np.asarray(data, dtype=np.uint32))  # a transfer, not a jitted program
    key: jax.Array = jax.random.wrap_key_data(words, impl=_THREEFRY)
    return key


def fold_in(key: PRNGKey, data: int) -> PRNGKey:
    """``jax.random.fold_in(key, data)`` for an int ``0 <= data < 2^32``, on the host for a
    concrete threefry2x32 key: ``threefry2x32(key, (0, data))``."""
    if not 0 <= data < 2**32:
        raise ValueError(f"data must lie in [0, 2**32), got {data}")
    words = _host_words(key)
    if words is None:
        folded: jax.Array = jax.random.fold_in(key, data)
        return folded
    out0, out1 = threefry2x32_host(int(words[0]), int(words[1]), 0, data)
    return _wrap([out0[0], out1[0]])


def split(key: PRNGKey, num: int = 2) -> tuple[PRNGKey, ...]:
    """The ``num`` keys of ``jax.random.split(key, num)``, on the host for a concrete
    threefry2x32 key (under the installed JAX's ``jax_threefry_partitionable`` setting)."""
    if num < 1:
        raise ValueError(f"num must be >= 1, got {num}")
    words = _host_words(key)
    if words is None:
        return tuple(jax.random.split(key, num))
    k0, k1 = int(words[0]), int(words[1])
    counters = np.arange(2 * num, dtype=np.uint32)
    if getattr(jax.config, "jax_threefry_partitionable", True):  # untyped option
        out0, out1 = threefry2x32_host(k0, k1, np.zeros(num), counters[:num])
        data = np.stack([out0, out1], axis=1)
    else:
        data = np.concatenate(threefry2x32_host(k0, k1, counters[:num], counters[num:]))
        data = data.reshape(num, 2)
    return tuple(_wrap(row) for row in data)


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
