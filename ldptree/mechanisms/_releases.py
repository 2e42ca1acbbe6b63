"""The kit's table-driven release kinds: one-hot-like cell vectors, label coordinates and k-ary
response on an index.

* :class:`CellRelease`: ``width`` coordinates per cell; the record's own cell reads ``on[t]``,
  every other cell ``off[t]`` (randomized response on the one-hot vector, geometric noise on
  ``U`` and ``V = Y U``), each coordinate through one exact noise;
* :class:`LabelRelease`: ``width`` coordinates reading ``inputs[t]`` (a noisy label);
* :class:`IndexRelease`: one integer, the holder's *item* ``cell * per_cell + label_index[t]``
  through k-ary randomized response over all items (:class:`ItemRelease` is the item part,
  shared with the subset and local-hashing kinds).

Tables are integer arrays ``[levels, width]`` indexed by the label level ``t``
(:mod:`ldptree.mechanisms._labels`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._validation import to_epsilon
from ldptree.accounting._law import CellBlock, IndexBlock, LabelBlock, RecordBlock
from ldptree.mechanisms._channel import MatrixNoise
from ldptree.mechanisms._exact import PRECISION_BITS
from ldptree.mechanisms._labels import Labels
from ldptree.mechanisms._noise import BitFlip, Geometric, KaryResponse, sample_noise
from ldptree.mechanisms._release import (
    CellShaped,
    Release,
    noise_words,
    pad_rows,
    squeeze,
    static_bound,
)

__all__ = [
    "CellRelease",
    "IndexRelease",
    "ItemRelease",
    "LabelRelease",
    "cell_indicator",
    "label_level",
]

Noise = BitFlip | Geometric | MatrixNoise
Table = np.ndarray[Any, np.dtype[np.int32]]


def _table(value: Any) -> Table:
    arr = np.asarray(value)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1 or not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"a release table must be an integer array [levels, width], got {arr!r}")
    out = np.ascontiguousarray(arr, dtype=np.int32)
    out.setflags(write=False)
    return out


def _optional_table(value: Any) -> Table | None:
    return None if value is None else _table(value)


def _check_noise(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, BitFlip | Geometric | MatrixNoise):
        raise TypeError(
            f"{attribute.name} must be a BitFlip, Geometric or MatrixNoise noise, got {value!r}"
        )


def _row(table: Table, labels: Labels) -> Callable[[Any], tuple[int, ...]]:
    def row(label: Any) -> tuple[int, ...]:
        return tuple(int(v) for v in table[labels.index(label)])

    return row


def _check_tables(name: str, noise: Noise, tables: tuple[Table, ...], labels: Labels) -> None:
    domain = set(noise.inputs)
    for table in tables:
        if table.shape[0] != labels.size:
            raise ValueError(
                f"release {name!r}: tables need one row per label level "
                f"({labels.size}), got {table.shape[0]}"
            )
        if not set(np.unique(table).tolist()) <= domain:
            raise ValueError(
                f"release {name!r}: table values must be noise inputs {sorted(domain)}"
            )


def _coordinates_log_prob(noise: Noise, inputs: Any, out: Any) -> float:
    """``sum_k log P(out_k | inputs_k)`` over independent coordinates of one noise."""
    first = -noise.margin if isinstance(noise, Geometric) else 0
    flat_in = np.asarray(inputs).reshape(-1)
    flat_out = np.asarray(out).astype(np.int64).reshape(-1) - first
    total = 0.0
    for a in np.unique(flat_in):
        table = noise.log_probs(int(a))
        idx = flat_out[flat_in == a]
        if (idx < 0).any() or (idx >= table.shape[0]).any():
            return -math.inf
        total += float(table[idx].sum())
    return total


def _output_range(noise: Noise) -> tuple[int, int]:
    return (-noise.margin if isinstance(noise, Geometric) else 0), noise.max_abs_output


def _as_report(noise: Noise, arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return arr.astype(bool) if isinstance(noise, BitFlip) else arr


def _geometric_sums(
    noise: Noise, truth: np.ndarray[Any, Any], rng: np.random.Generator, n: int, width: int
) -> np.ndarray[Any, Any]:
    """``truth`` plus the sum of ``n`` geometric noises per coordinate, drawn in aggregate: the
    difference of two negative binomial ``NB(n, 1 - e^{-gamma})`` draws (exact in law for the
    unclamped, unrounded geometric noise)."""
    if not isinstance(noise, Geometric):
        raise TypeError("the aggregate simulation needs Geometric noise on every release")
    success = -math.expm1(-noise.gamma)
    draws = rng.negative_binomial(n, success, size=(2, *truth.shape))
    out: np.ndarray[Any, Any] = squeeze((truth + draws[0] - draws[1]).astype(np.float64), width)
    return out


# -- cell vectors ----------------------------------------------------------------------------------
class NoiseTables(Release):
    """What the releases of integer tables through one exact noise share (:class:`CellRelease`,
    :class:`LabelRelease`): the tables' check, the output bound, and sums drawn in aggregate
    (geometric noise only) from the noiseless sums :meth:`_truth` of the per-(cell, level)
    record counts."""

    name: str
    noise: Noise

    @property
    def width(self) -> int:
        raise NotImplementedError

    def tables(self) -> tuple[Table, ...]:
        raise NotImplementedError

    def _truth(self, joint: np.ndarray[Any, Any], totals: np.ndarray[Any, Any]) -> Any:
        raise NotImplementedError

    def check(self, labels: Labels) -> None:
        _check_tables(self.name, self.noise, self.tables(), labels)

    @property
    def abs_bound(self) -> int:
        return self.noise.max_abs_output

    @property
    def can_aggregate(self) -> bool:
        return isinstance(self.noise, Geometric)

    def aggregate(
        self,
        joint: np.ndarray[Any, Any],
        totals: np.ndarray[Any, Any],
        rng: np.random.Generator,
        n: int,
    ) -> np.ndarray[Any, Any]:
        truth = self._truth(joint, totals)
        return _geometric_sums(self.noise, truth, rng, n, self.width)


@attrs.frozen(eq=False)
class CellRelease(NoiseTables, CellShaped):
    """``width`` coordinates per cell: the own cell reads ``on[t]``, other cells ``off[t]``.

    Tables are integer arrays ``[levels, width]`` (a 1-d array is one column). Report:
    ``[n, L]`` (``[n, L, width]``); summary: per-coordinate sums ``[L]`` (``[L, width]``).
    """

    name: str
    noise: Noise = attrs.field(validator=_check_noise)
    on: Table = attrs.field(converter=_table)
    off: Table = attrs.field(converter=_table)

    @property
    def width(self) -> int:
        return int(self.on.shape[1])

    def tables(self) -> tuple[Table, ...]:
        return (self.on, self.off)

    def static(self, n_cells: int, width: int, labels: Labels) -> tuple[Any, ...]:
        return (self.noise.static, self.width, width)

    def constants(self, n_cells: int, labels: Labels) -> Any:
        return (self.noise.constants(), pad_rows(self.on), pad_rows(self.off))

    def block(self, n_cells: int, labels: Labels) -> CellBlock:
        return CellBlock(
            self.name,
            self.noise.channel(),
            on=_row(self.on, labels),
            off=_row(self.off, labels),
        )

    def assemble(self, outputs: list[Any], n_cells: int) -> np.ndarray[Any, Any]:
        flat = np.asarray(outputs, dtype=np.int64).reshape(n_cells, self.width)
        return _as_report(self.noise, squeeze(flat, self.width))

    def report_log_prob(self, out: np.ndarray[Any, Any], cell: int, t: int, n_cells: int) -> float:
        inputs = np.broadcast_to(self.off[t], (n_cells, self.width)).copy()
        inputs[cell] = self.on[t]
        return _coordinates_log_prob(self.noise, inputs, out.reshape(n_cells, self.width))

    def field(self, n_cells: int) -> tuple[tuple[int, ...], int, int]:
        shape = (n_cells,) if self.width == 1 else (n_cells, self.width)
        return (shape, *_output_range(self.noise))

    def _truth(self, joint: np.ndarray[Any, Any], totals: np.ndarray[Any, Any]) -> Any:
        return joint @ self.on + (totals[None, :] - joint) @ self.off

    # -- traced --------------------------------------------------------------------------------
    @staticmethod
    def words(static: tuple[Any, ...]) -> int:
        noise, w, width = static
        return noise_words(noise, width * w)

    @staticmethod
    def sample(
        static: tuple[Any, ...], consts: Any, words: jax.Array, cells: jax.Array, t: jax.Array
    ) -> jax.Array:
        noise, w, width = static
        noise_consts, *tables = consts
        on, off = (jnp.asarray(tab)[t] for tab in tables)  # [n, w]
        own = jnp.arange(width)[None, :, None] == cells[:, None, None]
        inputs = jnp.where(own, on[:, None, :], off[:, None, :]).reshape(cells.shape[0], width * w)
        out: jax.Array = sample_noise(noise, noise_consts, words, inputs)
        return out

    @staticmethod
    def sum_bound(static: tuple[Any, ...]) -> int:
        return static_bound(static[0])


# -- label coordinates -----------------------------------------------------------------------------
@attrs.frozen(eq=False)
class LabelRelease(NoiseTables):
    """``width`` coordinates reading ``inputs[t]`` (``[levels, width]``): the label only.
    Report: ``[n]`` (``[n, width]``); summary: the sum over holders (a scalar or ``[width]``)."""

    name: str
    noise: Noise = attrs.field(validator=_check_noise)
    inputs: Table = attrs.field(converter=_table)

    role: ClassVar[str] = "label"

    @property
    def width(self) -> int:
        return int(self.inputs.shape[1])

    def tables(self) -> tuple[Table, ...]:
        return (self.inputs,)

    def static(self, n_cells: int, width: int, labels: Labels) -> tuple[Any, ...]:
        return (self.noise.static, self.width)

    def constants(self, n_cells: int, labels: Labels) -> Any:
        return (self.noise.constants(), pad_rows(self.inputs))

    def block(self, n_cells: int, labels: Labels) -> LabelBlock:
        return LabelBlock(self.name, self.noise.channel(), inputs=_row(self.inputs, labels))

    def assemble(self, outputs: list[Any], n_cells: int) -> np.ndarray[Any, Any]:
        flat = np.asarray(outputs, dtype=np.int64).reshape(self.width)
        return _as_report(self.noise, squeeze(flat, self.width))

    def report_log_prob(self, out: np.ndarray[Any, Any], cell: int, t: int, n_cells: int) -> float:
        return _coordinates_log_prob(self.noise, self.inputs[t], out.reshape(self.width))

    def field(self, n_cells: int) -> tuple[tuple[int, ...], int, int]:
        shape = () if self.width == 1 else (self.width,)
        return (shape, *_output_range(self.noise))

    def _truth(self, joint: np.ndarray[Any, Any], totals: np.ndarray[Any, Any]) -> Any:
        return totals @ self.inputs

    # -- traced --------------------------------------------------------------------------------
    @staticmethod
    def words(static: tuple[Any, ...]) -> int:
        return noise_words(static[0], static[1])

    @staticmethod
    def sample(
        static: tuple[Any, ...], consts: Any, words: jax.Array, cells: jax.Array, t: jax.Array
    ) -> jax.Array:
        noise_consts, table = consts
        out: jax.Array = sample_noise(static[0], noise_consts, words, jnp.asarray(table)[t])
        return out

    @staticmethod
    def sums(static: tuple[Any, ...], out: jax.Array, valid: jax.Array) -> jax.Array:
        return out.astype(jnp.int32).sum(axis=0)

    @staticmethod
    def sum_bound(static: tuple[Any, ...]) -> int:
        return static_bound(static[0])

    @staticmethod
    def report_shape(static: tuple[Any, ...], n: int, n_cells: int) -> tuple[int, ...]:
        return (n,) if static[1] == 1 else (n, static[1])

    @staticmethod
    def trim(static: tuple[Any, ...], out: Any, n: int, n_cells: int) -> Any:
        return squeeze(out[:n], static[1])

    @staticmethod
    def pad(static: tuple[Any, ...], report: Any, n: int, rows: int, n_cells: int) -> Any:
        return _pad_holders(report, n, rows)

    @staticmethod
    def stat(static: tuple[Any, ...], s: Any, n_cells: int) -> Any:
        return squeeze(s, static[1])


def _pad_holders(report: Any, n: int, rows: int) -> Any:
    a = jnp.asarray(report).reshape(n, -1).astype(jnp.int32)
    return jnp.pad(a, ((0, rows - n), (0, 0)))


# -- items: a cell and a label index ---------------------------------------------------------------
class ItemRelease(CellShaped):
    """The *item* part shared by releases over ``(cell, label index)`` pairs: holder ``i``'s item
    is ``cell_i * per_cell + label_index[t_i]`` among ``n_cells * per_cell`` items
    (``label_index=None``: the cell alone, ``per_cell = 1``). Summaries are per item,
    ``[L]`` or ``[L, per_cell]``, and cross sums per item ``[L, (per_cell,) label width]``.

    A subclass has the attribute ``label_index`` (an integer table ``[levels, 1]`` or ``None``).
    """

    label_index: Table | None

    @property
    def width(self) -> int:
        """Items per cell, ``per_cell``."""
        return 1 if self.label_index is None else int(self.label_index.max()) + 1

    def item_table(self, size: int) -> Table:
        """``[size, 1]``: the label index of every level (zeros without ``label_index``)."""
        return np.zeros((size, 1), dtype=np.int32) if self.label_index is None else self.label_index

    def item(self, cell: int, t: int, labels: Labels) -> int:
        """The item of the record ``(cell, level t)``."""
        return int(cell) * self.width + int(self.item_table(labels.size)[t, 0])

    def item_block(self, channel: Any, labels: Labels) -> RecordBlock:
        """The accountant's block: ``channel`` on each record's item."""
        table = self.item_table(labels.size)
        w = self.width

        def inputs(cell: int, label: Any) -> tuple[int, ...]:
            return (int(cell) * w + int(table[labels.index(label), 0]),)

        return RecordBlock(self.name, channel, inputs=inputs)

    def check(self, labels: Labels) -> None:
        table = self.item_table(labels.size)
        if table.shape[0] != labels.size or table.min() < 0:
            raise ValueError(
                f"release {self.name!r}: label_index needs one non-negative entry per label "
                f"level ({labels.size})"
            )

    @property
    def abs_bound(self) -> int:
        return 1  # item counts

    @staticmethod
    def sum_bound(static: tuple[Any, ...]) -> int:
        return 1


def items(table: Any, cells: jax.Array, t: jax.Array, per_cell: int) -> jax.Array:
    """``int32 [n, 1]``: every holder's item ``cell * per_cell + table[t]``."""
    offset = jnp.asarray(table)[t][:, :1]
    out: jax.Array = cells.astype(jnp.int32)[:, None] * per_cell + offset
    return out


@attrs.frozen(eq=False)
class IndexRelease(ItemRelease):
    """One coordinate: the item ``cell * per_cell + label_index[t]`` through k-ary randomized
    response (:class:`KaryResponse`) over all ``k = n_cells * per_cell`` items, with budget
    ``epsilon``. The report is one integer per holder (``O(log L)`` bits instead of ``L``); its
    summary is the per-item count ``[L]`` (``[L, per_cell]``), and its cross sums with label
    releases are per-item sums of their outputs. Two random words per holder (one 64-bit
    uniform): one index, never ``L`` bits.
    """

    name: str
    epsilon: float = attrs.field(converter=to_epsilon)
    label_index: Table | None = attrs.field(default=None, converter=_optional_table)

    def noise(self, n_cells: int) -> KaryResponse:
        """The k-ary response over ``n_cells * per_cell`` items."""
        return KaryResponse(self.epsilon, int(n_cells) * self.width)

    def tables(self, size: int) -> tuple[Table, ...]:
        return (self.item_table(size),)

    def static(self, n_cells: int, width: int, labels: Labels) -> tuple[Any, ...]:
        return (self.noise(n_cells).static, self.width, width)

    def constants(self, n_cells: int, labels: Labels) -> Any:
        return (self.noise(n_cells).constants(), pad_rows(self.item_table(labels.size)))

    def block(self, n_cells: int, labels: Labels) -> IndexBlock:
        noise = self.noise(n_cells)
        shift = PRECISION_BITS * math.log(2.0)
        table = self.item_table(labels.size)

        def label_index(label: Any) -> int:
            return int(table[labels.index(label), 0])

        other = math.log(noise.other_count) - shift if noise.other_count else -math.inf
        return IndexBlock(
            self.name,
            log_keep=math.log(noise.keep_count) - shift,
            log_other=other,
            per_cell=self.width,
            label_index=label_index,
            counts=(noise.keep_count, noise.other_count, 1 << PRECISION_BITS),
        )

    def assemble(self, outputs: list[Any], n_cells: int) -> np.ndarray[Any, Any]:
        return np.asarray(outputs, dtype=np.int64).reshape(())

    def report_log_prob(self, out: np.ndarray[Any, Any], cell: int, t: int, n_cells: int) -> float:
        noise = self.noise(n_cells)
        index = cell * self.width + int(self.item_table(t + 1)[t, 0])
        value = int(np.asarray(out).reshape(-1)[0])
        if not 0 <= value < noise.k:
            return -math.inf
        count = noise.keep_count if value == index else noise.other_count
        return math.log(count) - PRECISION_BITS * math.log(2.0) if count else -math.inf

    def field(self, n_cells: int) -> tuple[tuple[int, ...], int, int]:
        return ((), 0, self.noise(n_cells).k - 1)

    # -- traced --------------------------------------------------------------------------------
    @staticmethod
    def words(static: tuple[Any, ...]) -> int:
        return noise_words(static[0], 1)

    @staticmethod
    def sample(
        static: tuple[Any, ...], consts: Any, words: jax.Array, cells: jax.Array, t: jax.Array
    ) -> jax.Array:
        noise_consts, table = consts
        out: jax.Array = sample_noise(
            static[0], noise_consts, words, items(table, cells, t, static[1])
        )
        return out

    @staticmethod
    def sums(static: tuple[Any, ...], out: jax.Array, valid: jax.Array) -> jax.Array:
        size = static[1] * static[2]
        return jax.ops.segment_sum(valid.astype(jnp.int32), out[:, 0], size)

    @staticmethod
    def cross_sums(
        static: tuple[Any, ...], out: jax.Array, rhs: jax.Array, valid: jax.Array, block: int
    ) -> jax.Array:
        weights = jnp.where(valid[:, None], rhs, 0)
        return jax.ops.segment_sum(weights, out[:, 0], static[1] * static[2]).reshape(-1)

    @staticmethod
    def report_shape(static: tuple[Any, ...], n: int, n_cells: int) -> tuple[int, ...]:
        return (n,)

    @staticmethod
    def trim(static: tuple[Any, ...], out: Any, n: int, n_cells: int) -> Any:
        return out[:n, 0]

    @staticmethod
    def pad(static: tuple[Any, ...], report: Any, n: int, rows: int, n_cells: int) -> Any:
        return _pad_holders(report, n, rows)


# -- helpers ---------------------------------------------------------------------------------------
def cell_indicator(name: str, noise: Noise, labels: Labels) -> CellRelease:
    """The one-hot cell vector: input 1 in the record's cell and 0 elsewhere, whatever the label."""
    return CellRelease(
        name, noise, on=np.ones(labels.size, np.int32), off=np.zeros(labels.size, np.int32)
    )


def label_level(name: str, noise: Noise, labels: Labels) -> LabelRelease:
    """One coordinate carrying the label's level ``t`` itself (``noise`` spans the levels)."""
    return LabelRelease(name, noise, inputs=np.arange(labels.size))
