"""The CPU fast paths of the RR + Laplace mechanism compute exactly what the plain code did.

* ``random_words`` (unrolled threefry) equals ``jax.random.bits`` word for word;
* ``privatize`` flips cell ``j`` with the 16-bit field ``j`` of ``[low halves, high halves]`` of
  the holder's ``jax.random.bits`` words (the documented stream), so reports for a key are fixed;
* ``_column_sums`` (blocked narrow-integer sums) equals a plain int32 column sum.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree.mechanisms._bits import random_words
from ldptree.mechanisms._rr_laplace import RRLaplaceMechanism, _column_sums


@pytest.mark.parametrize("n_words", [1, 2, 3, 8, 127, 1000, 4097])
@pytest.mark.parametrize("seed", [0, 1, 12345, 2**32 - 1])
def test_random_words_equal_jax_random_bits(seed: int, n_words: int) -> None:
    key = jax.random.key(seed)
    expected = np.asarray(jax.random.bits(key, (n_words,), dtype=jnp.uint32))
    assert np.array_equal(np.asarray(random_words(key, n_words)), expected)
    jitted = jax.jit(random_words, static_argnums=1)
    assert np.array_equal(np.asarray(jitted(key, n_words)), expected)


def test_random_words_vmapped_over_keys() -> None:
    keys = jax.random.split(jax.random.key(7), 33)
    got = jax.vmap(lambda k: random_words(k, 127))(keys)
    expected = jax.vmap(lambda k: jax.random.bits(k, (127,), dtype=jnp.uint32))(keys)
    assert np.array_equal(np.asarray(got), np.asarray(expected))


def test_random_words_falls_back_for_other_key_impls() -> None:
    key = jax.random.key(3, impl="rbg")
    expected = jax.random.bits(key, (10,), dtype=jnp.uint32)
    assert np.array_equal(np.asarray(random_words(key, 10)), np.asarray(expected))


def _reference_bits(
    mech: RRLaplaceMechanism, key: jax.Array, holder: int, cell: int, n_cells: int
) -> np.ndarray:
    """Report bits of one holder from ``jax.random.bits``, written the plain way."""
    k_bits = jax.random.split(jax.random.fold_in(key, holder), 3)[0]
    per_word = 32 // mech.precision_bits
    n_words = -(-n_cells // per_word)
    words = np.asarray(jax.random.bits(k_bits, (n_words,), dtype=jnp.uint32))
    if per_word == 2:
        words = np.concatenate([words & 0xFFFF, words >> 16])
    flip = words[:n_cells] < mech.flip_threshold
    return np.asarray(flip ^ (np.arange(n_cells) == cell))


@pytest.mark.parametrize("precision_bits", [16, 32])
@pytest.mark.parametrize("n_cells", [1, 2, 3, 16, 253])
def test_privatize_bits_follow_the_documented_stream(precision_bits: int, n_cells: int) -> None:
    mech = RRLaplaceMechanism(
        epsilon=2.0, label_bound=(-1.0, 1.0), budget_split=0.5, precision_bits=precision_bits
    )
    key = jax.random.key(11)
    rng = np.random.default_rng(0)
    cells = rng.integers(0, n_cells, 9)
    first = 1000
    reports = mech.privatize(key, cells, np.zeros(9), n_cells, first_holder=first)
    for i, cell in enumerate(cells):
        expected = _reference_bits(mech, key, first + i, int(cell), n_cells)
        assert np.array_equal(np.asarray(reports.bits[i]), expected)


@pytest.mark.parametrize("bound", [1, 100, 5000, 40000])
@pytest.mark.parametrize("n", [0, 1, 5, 127, 128, 1000])
def test_column_sums_equal_plain_int32_sums(bound: int, n: int) -> None:
    rng = np.random.default_rng(bound + n)
    x = rng.integers(-bound, bound + 1, size=(n, 7)).astype(np.int32)
    if bound == 1:
        x = np.abs(x)
    got = np.asarray(jax.jit(_column_sums, static_argnums=1)(jnp.asarray(x), bound))
    assert got.dtype == np.int32
    assert np.array_equal(got, x.sum(axis=0, dtype=np.int64))


def test_column_sums_at_the_accumulator_limits() -> None:
    # every entry at +bound: the largest block sums the narrow accumulators must hold
    for bound in (1, 127, 128, 255, 32767):
        x = np.full((4096, 3), bound, dtype=np.int32)
        got = np.asarray(_column_sums(jnp.asarray(x), bound))
        assert np.array_equal(got, np.full(3, 4096 * bound))
        got_neg = np.asarray(_column_sums(jnp.asarray(-x), bound))
        assert np.array_equal(got_neg, np.full(3, -4096 * bound))
