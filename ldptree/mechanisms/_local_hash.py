"""Optimized local hashing (OLH, Wang et al. 2017): a random hash of the holder's item and k-ary
randomized response on its value, drawn with integer arithmetic only.

Items are ``(cell, label index)`` pairs (:class:`~ldptree.mechanisms._releases.ItemRelease`):
holder ``i``'s item ``x`` is one of ``d = n_cells * per_cell``, an ``m``-bit integer
(``m = bit_length(d - 1)``). The holder draws ``r`` uniform ``m``-bit masks ``A_0, ..., A_{r-1}``
(the low ``m`` bits of ``r`` words), hashes its item with the linear map over GF(2)

    H_A(x) = sum_l parity(A_l & x) 2^l        in {0, ..., g - 1},  g = 2^r,

and releases ``z`` = ``H_A(x)`` through :class:`~ldptree.mechanisms.KaryResponse` over ``g``
values (kept with probability ``p = T / 2^64``, each other value with ``o = m' / 2^64``, exact
integer counts). The report is the integers ``(A_0, ..., A_{r-1}, z)``: ``r m + r`` bits and
``r + 2`` random words per holder, whatever the number of cells.

Privacy, exactly for the realised law: ``P(A, z | x) = 2^{-r m} P_kary(z | H_A(x))``; the masks
do not depend on the record, so two items have likelihood ratio at most the k-ary response's
realised ratio ``T / m'`` (attained: for ``x != x'`` some mask separates their hashes).

Debiasing. The hash family is universal with exact collisions: for ``x != j``, ``H_A(x) = H_A(j)``
iff ``A (x xor j) = 0``, probability exactly ``2^-r`` (every row's parity with a non-zero vector
is a fair coin). So ``P(H_A(j) = z | x) = p`` for ``j = x`` and
``p / g + (1 - 1/g) o = 1 / g`` otherwise (``T + (g - 1) m' = 2^64``): item ``j``'s indicator
``1{H_A(j) = z}`` has ``offset = 1 / g`` and ``slope = p - 1 / g``. The indicators of different
items are pairwise uncorrelated (the report's law equals that of the affine family
``H_A(x) xor b`` with the offset ``b`` folded into ``z``, which is 3-wise independent), so the
variance of a block of items is the sum of their indicator variances.

``r`` defaults to the value in ``1..20`` with the smallest variance of a debiased item count
(averaged over a holder in the item and outside it, for ``d`` items): for many items ``g`` near
Wang et al.'s ``e^eps + 1`` among powers of two (exact collisions need ``g = 2^r``).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._validation import check_int, to_epsilon
from ldptree.accounting._channels import EqualGapChannel
from ldptree.accounting._law import RecordBlock
from ldptree.mechanisms._exact import PRECISION_BITS
from ldptree.mechanisms._labels import Labels
from ldptree.mechanisms._noise import KaryResponse, sample_noise
from ldptree.mechanisms._release import cross_indicator_sums, pad_rows
from ldptree.mechanisms._releases import ItemRelease, Table, _optional_table, _pad_holders, items

__all__ = ["LocalHashChannel", "LocalHashRelease", "hash_bits", "local_hash"]

#: Largest number of hash bits (``g = 2^20`` values, the k-ary response's support limit).
MAX_HASH_BITS = 20
_LOG2 = math.log(2.0)


def _approx_variance(epsilon: float, r: int, items: int) -> float:
    """Variance of a debiased item count per holder, averaged over a record in the item (share
    ``1 / items``) and outside it, with the unrounded response."""
    g = 2.0**r
    e = math.exp(min(epsilon, 700.0))
    p = e / (e + g - 1.0)
    q = 1.0 / g
    inside, outside = p * (1.0 - p), q * (1.0 - q)
    return (inside + (items - 1) * outside) / (items * (p - q) ** 2)


def hash_bits(epsilon: float, items: int) -> int:
    """``r`` in ``1..MAX_HASH_BITS`` with the smallest variance of a debiased item count over
    ``items`` items (for many items: ``g = 2^r`` near ``e^eps + 1``)."""
    return min(range(1, MAX_HASH_BITS + 1), key=lambda r: (_approx_variance(epsilon, r, items), r))


def local_hash(masks: jax.Array, x: jax.Array) -> jax.Array:
    """``H_A(x) = sum_l parity(A_l & x) 2^l`` (``int32``) for ``uint32`` masks ``[..., r]`` and
    items ``x`` broadcasting against ``masks[..., 0]``."""
    parity = jax.lax.population_count(masks & x[..., None]) & jnp.uint32(1)
    weights = jnp.uint32(1) << jnp.arange(masks.shape[-1], dtype=jnp.uint32)
    out: jax.Array = (parity * weights).sum(axis=-1).astype(jnp.int32)
    return out


@attrs.frozen
class LocalHashChannel(EqualGapChannel):
    """The accountant's view of a local-hashing report: one coordinate whose input is the item
    and whose output is the tuple ``(A_0, ..., A_{r-1}, z)``. Divergences in closed form: ``0``
    between equal items, the k-ary response's realised ratio between different ones, attained
    with a mask that separates their hashes."""

    noise: KaryResponse
    hash_bits: int
    mask_bits: int

    @property
    def offset(self) -> float:
        """``1 / g``: an item other than the holder's matches with this probability."""
        return 1.0 / self.noise.k

    @property
    def slope(self) -> float:
        """``p - 1 / g``."""
        return self.noise.offset + self.noise.slope - self.offset

    @property
    def _gap(self) -> float:
        return self.noise.realised_epsilon

    def log_prob(self, output: Any, value: Any) -> float:
        *masks, z = (int(v) for v in output)
        x, r, m = int(value), self.hash_bits, self.mask_bits
        if len(masks) != r or not all(0 <= a < 1 << m for a in masks):
            return -math.inf
        if not 0 <= z < self.noise.k:
            return -math.inf
        h = sum(((a & x).bit_count() & 1) << level for level, a in enumerate(masks))
        count = self.noise.keep_count if z == h else self.noise.other_count
        if not count:
            return -math.inf
        return math.log(count) - PRECISION_BITS * _LOG2 - r * m * _LOG2

    def _witness(self, a: int, b: int) -> tuple[int, ...]:
        diff = a ^ b
        masks = [diff & -diff] + [0] * (self.hash_bits - 1)  # row 0 separates a from b
        h_a = (masks[0] & a).bit_count() & 1
        h_b = (masks[0] & b).bit_count() & 1
        keep_first = self.noise.keep_count >= self.noise.other_count
        return (*masks, h_a if keep_first else h_b)


def _to_bits(value: Any) -> int | None:
    if value is None:
        return None
    bits = check_int(value, "hash_bits", minimum=1)
    if bits > MAX_HASH_BITS:
        raise ValueError(f"hash_bits must be at most {MAX_HASH_BITS}, got {bits}")
    return bits


@functools.lru_cache(maxsize=256)
def _noise(epsilon: float, bits: int) -> KaryResponse:
    return KaryResponse(epsilon, 1 << bits)


@functools.lru_cache(maxsize=256)
def _default_bits(epsilon: float, items: int) -> int:
    return hash_bits(epsilon, items)


@attrs.frozen(eq=False)
class LocalHashRelease(ItemRelease):
    """Optimized local hashing of the holder's item with budget ``epsilon`` (module docstring):
    ``bits`` is ``r`` (``None``: :func:`hash_bits` for the budget and item count). Report
    ``int32 [n, r + 1]`` (the masks, then the response); summary: per-item counts of
    ``H_A(j) = z`` (``[L]`` or ``[L, per_cell]``) and per-item sums of every label release's
    outputs over those holders."""

    name: str
    epsilon: float = attrs.field(converter=to_epsilon)
    bits: int | None = attrs.field(default=None, converter=_to_bits)
    label_index: Table | None = attrs.field(default=None, converter=_optional_table)

    def hash_bits(self, n_cells: int) -> int:
        """``r``: the hash has ``g = 2^r`` values."""
        if self.bits is not None:
            return self.bits
        return _default_bits(self.epsilon, check_int(n_cells, "n_cells", minimum=1) * self.width)

    def mask_bits(self, n_cells: int) -> int:
        """``m``: bits of the largest item, ``bit_length(n_cells * per_cell - 1)``."""
        return (check_int(n_cells, "n_cells", minimum=1) * self.width - 1).bit_length()

    def channel(self, n_cells: int) -> LocalHashChannel:
        """The exact law over ``n_cells * per_cell`` items (its ``offset`` and ``slope`` are the
        indicators' means)."""
        bits = self.hash_bits(n_cells)
        return LocalHashChannel(_noise(self.epsilon, bits), bits, self.mask_bits(n_cells))

    def static(self, n_cells: int, width: int, labels: Labels) -> tuple[Any, ...]:
        law = self.channel(n_cells)
        return ("local-hash", self.width, width, law.hash_bits, law.noise.static)

    def constants(self, n_cells: int, labels: Labels) -> Any:
        mask = np.uint32((1 << self.mask_bits(n_cells)) - 1)
        noise = self.channel(n_cells).noise
        return (noise.constants(), mask, pad_rows(self.item_table(labels.size)))

    def block(self, n_cells: int, labels: Labels) -> RecordBlock:
        return self.item_block(self.channel(n_cells), labels)

    def assemble(self, outputs: list[Any], n_cells: int) -> np.ndarray[Any, Any]:
        (report,) = outputs
        return np.asarray(report, dtype=np.int32)

    def disassemble(self, report: Any, n_cells: int) -> np.ndarray[Any, Any]:
        """``[n, 1]``: every holder's report as the tuple ``(A_0, ..., A_{r-1}, z)``."""
        rows = np.asarray(report)
        out = np.empty((rows.shape[0], 1), dtype=object)
        for i, row in enumerate(rows):
            out[i, 0] = tuple(int(v) for v in row)
        return out

    def report_log_prob(self, out: np.ndarray[Any, Any], cell: int, t: int, n_cells: int) -> float:
        flat = np.asarray(out).reshape(-1)
        if flat.size != self.hash_bits(n_cells) + 1:
            return -math.inf
        x = cell * self.width + int(self.item_table(t + 1)[t, 0])
        return self.channel(n_cells).log_prob(tuple(int(v) for v in flat), x)

    def field(self, n_cells: int) -> tuple[tuple[int, ...], int, int]:
        law = self.channel(n_cells)
        top = max((1 << law.mask_bits) - 1, law.noise.k - 1)
        return ((law.hash_bits + 1,), 0, top)

    # -- traced --------------------------------------------------------------------------------
    @staticmethod
    def words(static: tuple[Any, ...]) -> int:
        return int(static[3]) + 2  # the masks, then one 64-bit uniform for the response

    @staticmethod
    def sample(
        static: tuple[Any, ...], consts: Any, words: jax.Array, cells: jax.Array, t: jax.Array
    ) -> jax.Array:
        r, noise = static[3], static[4]
        noise_consts, mask, table = consts
        x = items(table, cells, t, static[1])  # [n, 1]
        masks = words[:, :r] & mask
        h = local_hash(masks, x[:, 0].astype(jnp.uint32))
        z = sample_noise(noise, noise_consts, words[:, r : r + 2], h[:, None])
        return jnp.concatenate([masks.astype(jnp.int32), z.astype(jnp.int32)], axis=1)

    @staticmethod
    def _indicators(static: tuple[Any, ...], out: jax.Array, valid: jax.Array) -> jax.Array:
        """``[rows, width * per_cell]``: ``1{H_A(j) = z}`` for every item column ``j``."""
        r, columns = static[3], static[1] * static[2]
        masks = out[:, None, :r].astype(jnp.uint32)
        j = jnp.arange(columns, dtype=jnp.uint32)[None, :]
        match: jax.Array = local_hash(masks, j) == out[:, r : r + 1]
        return match & valid[:, None]

    @staticmethod
    def sums(static: tuple[Any, ...], out: jax.Array, valid: jax.Array) -> jax.Array:
        ind = LocalHashRelease._indicators(static, out, valid)
        return ind.astype(jnp.int32).sum(axis=0)

    @staticmethod
    def cross_sums(
        static: tuple[Any, ...], out: jax.Array, rhs: jax.Array, valid: jax.Array, block: int
    ) -> jax.Array:
        ind = LocalHashRelease._indicators(static, out, valid)
        return cross_indicator_sums(ind, rhs, block)

    @staticmethod
    def report_shape(static: tuple[Any, ...], n: int, n_cells: int) -> tuple[int, ...]:
        return (n, int(static[3]) + 1)

    @staticmethod
    def trim(static: tuple[Any, ...], out: Any, n: int, n_cells: int) -> Any:
        return out[:n]

    @staticmethod
    def pad(static: tuple[Any, ...], report: Any, n: int, rows: int, n_cells: int) -> Any:
        return _pad_holders(report, n, rows)
