"""Hadamard response: the kit's release of the cell as one row of a Hadamard matrix and one bit.

With ``L`` cells let ``K`` be the smallest power of two above ``L`` and ``H`` the ``K x K``
Sylvester-Hadamard matrix, ``H[r, c] = (-1)^{popcount(r & c)}``. Its columns are orthogonal:
``sum_r H[r, c] H[r, c'] = K 1{c = c'}``, and column ``0`` is all ones, so cell ``j`` uses column
``j + 1``. Holder ``i`` in cell ``j_i``

1. draws a row ``r_i`` uniformly from ``{0, ..., K - 1}`` (the low bits of one 32-bit word: exact,
   ``K`` is a power of two),
2. releases the bit ``b_i = 1{H[r_i, j_i + 1] = 1}`` through :class:`~ldptree.mechanisms.BitFlip`
   (randomized response with an integer threshold, ``q' = T / 2^bits >= 1 / (1 + e^eps)``),

and reports the single integer ``2 r_i + b_i`` in ``[0, 2K)``: ``log2 L + 2`` bits and two random
words, whatever ``L``.

Privacy. ``P(r, b | j) = (1 / K) P(b | H[r, j + 1])``: the row carries no information and the bit's
ratio is at most ``(1 - q') / q' <= e^eps``, attained for any two cells (some row separates their
columns), so the report is ``eps``-LDP exactly for the realised integer law. The accountant reads
it as one coordinate whose input is the cell (:class:`HadamardChannel`, divergences in closed form
so that certifying many cells stays cheap).

Summaries. With ``sigma_i = 2 b_i - 1``, ``E[sigma_i | r_i] = (1 - 2 q') H[r_i, j_i + 1]``, so
``E[sigma_i H[r_i, j + 1]] = (1 - 2 q') E_r[H[r, j_i + 1] H[r, j + 1]] = (1 - 2 q') 1{j_i = j}``.
The kit sums ``D_j = sum_i sigma_i H[r_i, j + 1]`` for every cell (and ``sum_i sigma_i H[r_i, j + 1]
x_i`` for every label release ``x``) exactly in integers: per-row sums of ``sigma_i`` (segment sums)
followed by one fast Walsh-Hadamard transform (``K log K`` integer additions). Then
``c^_j = D_j / (1 - 2 q')`` is unbiased, and each holder's term ``sigma_i H[r_i, j + 1] /
(1 - 2 q')`` is ``+-1 / (1 - 2 q')``: variance at most ``1 / (1 - 2 q')^2`` per holder.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_int, to_epsilon
from ldptree.accounting._channels import Divergences, FiniteChannel
from ldptree.accounting._law import RecordBlock
from ldptree.mechanisms._labels import Labels
from ldptree.mechanisms._noise import BitFlip, sample_noise
from ldptree.mechanisms._release import Release, cell_cross_stat, noise_words

__all__ = ["HadamardChannel", "HadamardRelease", "hadamard_order"]


def hadamard_order(n_cells: int) -> int:
    """``K``: the smallest power of two above ``n_cells`` (so columns ``1..L`` exist)."""
    return 1 << check_int(n_cells, "n_cells", minimum=1).bit_length()


def plus_bit(row: int, column: int) -> int:
    """``1{H[row, column] = +1}`` for the Sylvester-Hadamard matrix."""
    return 1 - (int(row & column).bit_count() & 1)


@attrs.frozen(eq=False)
class HadamardChannel(FiniteChannel):
    """The law of the report ``2 r + b`` given the cell ``c``: ``P = P(b | plus_bit(r, c + 1)) /
    K``. Divergences are in closed form: ``0`` between equal cells, ``log((1 - q') / q')`` between
    different cells, with a witness row separating their columns."""

    def divergences(self, inputs: Any) -> Divergences:
        cells = [int(c) for c in inputs]
        n = len(cells)
        row0 = np.asarray(self.log_probs(cells[0]), dtype=np.float64) if n else np.zeros(2)
        gap = float(row0.max() - row0.min())
        value = np.full((n, n), gap)
        np.fill_diagonal(value, 0.0)
        columns = np.asarray(cells, dtype=np.int64) + 1
        diff = columns[:, None] ^ columns[None, :]
        # the lowest differing bit r is a row where the two columns differ (row 0 if equal); the
        # witness is the bit that row's entry keeps under the first cell
        r = diff & -diff
        witness = 2 * r + ((columns[:, None] & r) == 0)
        return Divergences(
            value=value, witness=tuple(tuple(row) for row in witness.tolist()), exact=True
        )


@attrs.frozen(eq=False)
class HadamardRelease(Release):
    """One coordinate per holder: ``2 r + b``, Hadamard response of the cell with budget
    ``epsilon`` (module docstring). Its summary is ``D_j`` for every cell ``j`` (``int[L]``), its
    cross sums with a label release ``x`` are ``sum_i sigma_i H[r_i, j + 1] x_i``.

    ``packed=True`` draws one random word instead of two where the law allows it: with a 16-bit
    flip and ``K <= 2^16`` rows, the row is the word's low bits and the flip's uniform its high 16
    bits (independent and uniform, so the law is the same); otherwise two words as by default.
    The reports differ from the default's for the same key.
    """

    name: str
    epsilon: float = attrs.field(converter=to_epsilon)
    precision_bits: int | None = None
    packed: bool = attrs.field(default=False, converter=bool)

    @property
    def width(self) -> int:
        return 1

    @property
    def flip(self) -> BitFlip:
        """The randomized response on the bit (the whole ``epsilon``)."""
        return BitFlip(self.epsilon, self.precision_bits)

    @property
    def abs_bound(self) -> int:
        return 1  # signs

    def static(self, n_cells: int, width: int, labels: Labels) -> tuple[Any, ...]:
        order, bits = hadamard_order(n_cells), self.flip.bits
        if self.packed and bits == 16 and order <= 1 << 16:
            return ("hadamard", order, bits, "packed")
        return ("hadamard", order, bits)

    def constants(self, n_cells: int, labels: Labels) -> Any:
        return self.flip.constants()

    def block(self, n_cells: int, labels: Labels) -> RecordBlock:
        return RecordBlock(self.name, self.channel(n_cells), inputs=_cell_only)

    def assemble(self, outputs: list[Any], n_cells: int) -> np.ndarray[Any, Any]:
        return np.asarray(outputs, dtype=np.int64).reshape(())

    def log_prob(self, value: int, cell: int, n_cells: int) -> float:
        """``log P(2 r + b | cell)`` (``-inf`` outside ``[0, 2K)``)."""
        k = hadamard_order(n_cells)
        if not 0 <= value < 2 * k:
            return -math.inf
        r, b = divmod(int(value), 2)
        return float(self.flip.log_probs(plus_bit(r, cell + 1))[b]) - math.log(k)

    def report_log_prob(self, out: Any, cell: int, t: int, n_cells: int) -> float:
        return self.log_prob(int(np.asarray(out).reshape(-1)[0]), cell, n_cells)

    def field(self, n_cells: int) -> tuple[tuple[int, ...], int, int]:
        return ((), 0, 2 * hadamard_order(n_cells) - 1)

    def channel(self, n_cells: int) -> HadamardChannel:
        """The accountant's view: one coordinate whose input is the cell."""
        k = hadamard_order(n_cells)
        flips = {a: self.flip.log_probs(a) for a in (0, 1)}
        rows = np.arange(k)

        def log_probs(cell: Any) -> FloatArray:
            plus = np.asarray([plus_bit(int(r), int(cell) + 1) for r in rows])
            out = np.empty(2 * k)
            out[0::2] = np.where(plus == 1, flips[1][0], flips[0][0])
            out[1::2] = np.where(plus == 1, flips[1][1], flips[0][1])
            result: FloatArray = out - math.log(k)
            return result

        return HadamardChannel(outputs=tuple(range(2 * k)), log_probs=log_probs)

    # -- traced --------------------------------------------------------------------------------
    @staticmethod
    def words(static: tuple[Any, ...]) -> int:
        if static[3:] == ("packed",):
            return 1  # the row in the low bits, the flip's uniform in the high 16
        return 1 + noise_words(("bits", static[2]), 1)  # the row, then the bit's flip

    @staticmethod
    def sample(
        static: tuple[Any, ...], consts: Any, words: jax.Array, cells: jax.Array, t: jax.Array
    ) -> jax.Array:
        return sample_hadamard(static, consts, words, cells)

    @staticmethod
    def sums(static: tuple[Any, ...], out: jax.Array, valid: jax.Array) -> jax.Array:
        return hadamard_sums(out[:, 0], valid, static[1])

    @staticmethod
    def cross_sums(
        static: tuple[Any, ...], out: jax.Array, rhs: jax.Array, valid: jax.Array, block: int
    ) -> jax.Array:
        return hadamard_sums(out[:, 0], valid, static[1], rhs).reshape(-1)

    @staticmethod
    def sum_bound(static: tuple[Any, ...]) -> int:
        return 1

    @staticmethod
    def report_shape(static: tuple[Any, ...], n: int, n_cells: int) -> tuple[int, ...]:
        return (n,)

    @staticmethod
    def trim(static: tuple[Any, ...], out: Any, n: int, n_cells: int) -> Any:
        return out[:n, 0]

    @staticmethod
    def pad(static: tuple[Any, ...], report: Any, n: int, rows: int, n_cells: int) -> Any:
        a = jnp.asarray(report).reshape(n, -1).astype(jnp.int32)
        return jnp.pad(a, ((0, rows - n), (0, 0)))

    @staticmethod
    def stat(static: tuple[Any, ...], s: Any, n_cells: int) -> Any:
        return s[:n_cells]

    @staticmethod
    def cross_stat(static: tuple[Any, ...], s: Any, n_cells: int, label_width: int) -> Any:
        return cell_cross_stat(s, -1, 1, label_width, n_cells)


def _cell_only(cell: int, t: Any) -> tuple[int, ...]:
    return (int(cell),)


def sample_hadamard(
    static: tuple[Any, ...], consts: Any, words: jax.Array, cells: jax.Array
) -> jax.Array:
    """``int32[n, 1]`` reports ``2 r + b`` from ``words [n, W]`` (row from word 0, the bit's flip
    from the rest) for ``cells [n]``."""
    order, bits = static[1], static[2]
    row = words[:, 0] & jnp.uint32(order - 1)
    column = cells.astype(jnp.uint32) + jnp.uint32(1)
    plus = (jax.lax.population_count(row & column) & jnp.uint32(1)) == 0
    if static[3:] == ("packed",):  # the flip: the high 16 bits below the 16-bit threshold
        b = ((words[:, 0] >> 16) < consts[0]) ^ plus
        out_packed: jax.Array = row.astype(jnp.int32)[:, None] * 2 + b.astype(jnp.int32)[:, None]
        return out_packed
    b = sample_noise(("bits", bits), consts, words[:, 1:], plus[:, None].astype(jnp.int32))
    out: jax.Array = row.astype(jnp.int32)[:, None] * 2 + b.astype(jnp.int32)
    return out


def walsh_hadamard(x: jax.Array) -> jax.Array:
    """``H x`` along axis 0 (length a power of two) by the fast transform, in ``x``'s dtype."""
    k = x.shape[0]
    rest = x.shape[1:]
    h = 1
    while h < k:
        y = x.reshape(k // (2 * h), 2, h, *rest)
        x = jnp.stack([y[:, 0] + y[:, 1], y[:, 0] - y[:, 1]], axis=1).reshape(k, *rest)
        h *= 2
    return x


def hadamard_sums(
    values: jax.Array, valid: jax.Array, order: int, weights: jax.Array | None = None
) -> jax.Array:
    """``sum_i sigma_i H[r_i, c] w_i`` for ``c = 1..K-1`` (rows ``[K - 1]`` or ``[K - 1, w]``)
    from reports ``values = 2 r + b`` of valid holders; ``w_i = 1`` without ``weights``."""
    rows = values >> 1
    sign = jnp.where(valid, 2 * (values & 1) - 1, 0).astype(jnp.int32)
    terms = sign if weights is None else sign[:, None] * weights
    per_row = jax.ops.segment_sum(terms, rows, order)
    return walsh_hadamard(per_row)[1:]
