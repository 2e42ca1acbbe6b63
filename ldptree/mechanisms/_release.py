"""What a release kind of the mechanism kit is: one class with its sampler, law, sums,
likelihood and report format.

A kit mechanism's report is a tuple of *releases*, each an instance of a :class:`Release`
subclass. The kit composes them generically: it draws every holder's random words, hands each
release its share, sums the outputs, and asks each release for its part of the report law, the
likelihood and the report's format. A release kind implements

* on the host: :meth:`~Release.check` (its declaration against the labels),
  :meth:`~Release.static` and :meth:`~Release.constants` (what its kernel needs for ``n_cells``
  cells: hashable shape parameters, and arrays passed as traced values so that nearby budgets
  share one compiled program), :meth:`~Release.block` (the channel block it contributes to the
  report law), :meth:`~Release.assemble` (one holder's report from the law's outputs),
  :meth:`~Release.report_log_prob`, :meth:`~Release.field` (shape and output range) and
  :attr:`~Release.abs_bound` (the largest absolute term a report adds to its sums);
* traced, as static methods of its class that read ``static``: :meth:`~Release.words` (random
  words per holder), :meth:`~Release.sample` (the exact sampler: integer thresholds compared with
  the holder's words), :meth:`~Release.sums` and, for a release that marks cells,
  :meth:`~Release.cross_sums` (exact integer sums), :meth:`~Release.sum_bound`, and the report's
  shape (:meth:`~Release.trim`, :meth:`~Release.pad`, :meth:`~Release.stat`).

``role`` says how a release enters the summaries: ``"cell"`` releases mark cells (per-cell
statistics), ``"label"`` releases carry the label; every cell release is cross-summed with every
label release (``stats["cell*label"]``: the per-cell sums of the label release's outputs over the
holders that the cell release marks).

The helpers below are the sums that several kinds share: per-coordinate sums of indicator-like
outputs and their exact cross sums with label outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ldptree._buckets import bucket
from ldptree.accounting._law import Block
from ldptree.mechanisms._labels import MAX_LEVELS, Labels

__all__ = [
    "CellShaped",
    "Kernel",
    "Release",
    "cell_cross_stat",
    "cross_indicator_sums",
    "noise_words",
    "pad_rows",
    "static_bound",
]

#: Integers below this are exact in float32.
FLOAT32_EXACT = 2**24


class Kernel(NamedTuple):
    """The static (shape-fixing) description of one release inside a compiled kernel: the
    release's class, whose static methods run, and what :meth:`Release.static` returned."""

    kind: type[Release]
    static: tuple[Any, ...]


class Release:
    """Base class of the kit's release kinds (module docstring)."""

    name: str
    role: ClassVar[str] = "cell"

    # -- host side ---------------------------------------------------------------------------------
    def check(self, labels: Labels) -> None:
        """Raise ``ValueError`` naming the release if its declaration does not fit ``labels``."""

    @property
    def abs_bound(self) -> int:
        """Largest absolute value one report adds to any of this release's sums."""
        raise NotImplementedError

    def static(self, n_cells: int, width: int, labels: Labels) -> tuple[Any, ...]:
        """Hashable shape parameters of the kernel for ``n_cells`` cells padded to ``width``."""
        raise NotImplementedError

    def constants(self, n_cells: int, labels: Labels) -> Any:
        """Arrays the kernel reads (traced: one program serves every value of one shape)."""
        raise NotImplementedError

    def block(self, n_cells: int, labels: Labels) -> Block:
        """This release's part of :meth:`~ldptree.mechanisms.KitMechanism.report_law`."""
        raise NotImplementedError

    def assemble(self, outputs: list[Any], n_cells: int) -> np.ndarray[Any, Any]:
        """One holder's report array from the law's outputs of :meth:`block` (the witness
        outputs of its coordinates, in order)."""
        raise NotImplementedError

    def disassemble(self, report: Any, n_cells: int) -> np.ndarray[Any, Any]:
        """``[n, k]``: the law's outputs of the block's ``k`` coordinates for ``n`` holders'
        report arrays (default: each holder's array flattened, cell-major)."""
        arr = np.asarray(report)
        return arr.reshape(arr.shape[0], -1)

    def report_log_prob(self, out: np.ndarray[Any, Any], cell: int, t: int, n_cells: int) -> float:
        """``log P(out | cell, level t)`` of one holder's report array, exact in float64."""
        raise NotImplementedError

    def field(self, n_cells: int) -> tuple[tuple[int, ...], int, int]:
        """``(shape, lowest, highest)`` of one holder's report array."""
        raise NotImplementedError

    @property
    def can_aggregate(self) -> bool:
        """Whether :meth:`aggregate` can draw this release's sums."""
        return False

    def aggregate(
        self,
        joint: np.ndarray[Any, Any],
        totals: np.ndarray[Any, Any],
        rng: np.random.Generator,
        n: int,
    ) -> np.ndarray[Any, Any]:
        """Sums of ``n`` reports drawn in aggregate from the per-(cell, level) record counts
        ``joint`` (``TypeError`` unless the kind supports it)."""
        raise TypeError(f"a {type(self).__name__} cannot be drawn in aggregate")

    # -- traced side (static methods: the compiled kernel holds the class, not the release) ------
    @staticmethod
    def words(static: tuple[Any, ...]) -> int:
        """32-bit random words one holder consumes."""
        raise NotImplementedError

    @staticmethod
    def sample(
        static: tuple[Any, ...], consts: Any, words: jax.Array, cells: jax.Array, t: jax.Array
    ) -> jax.Array:
        """Outputs ``[rows, C]`` for ``rows`` holders from their words ``[rows, words]``, cells
        and label levels."""
        raise NotImplementedError

    @staticmethod
    def sums(static: tuple[Any, ...], out: jax.Array, valid: jax.Array) -> jax.Array:
        """Exact ``int32`` sums of the valid holders' outputs (padded rows are zero or masked)."""
        raise NotImplementedError

    @staticmethod
    def cross_sums(
        static: tuple[Any, ...], out: jax.Array, rhs: jax.Array, valid: jax.Array, block: int
    ) -> jax.Array:
        """Exact ``int32`` per-cell sums of a label release's outputs ``rhs`` ``[rows, k]``
        (``block``: rows per exact float32 block)."""
        raise NotImplementedError

    @staticmethod
    def sum_bound(static: tuple[Any, ...]) -> int:
        """An upper bound on ``abs_bound`` read off ``static`` (the float32 summary blocks)."""
        raise NotImplementedError

    @staticmethod
    def report_shape(static: tuple[Any, ...], n: int, n_cells: int) -> tuple[int, ...]:
        """Shape of ``n`` holders' report array."""
        raise NotImplementedError

    @staticmethod
    def trim(static: tuple[Any, ...], out: Any, n: int, n_cells: int) -> Any:
        """The report array of the first ``n`` holders from the kernel's padded outputs."""
        raise NotImplementedError

    @staticmethod
    def pad(static: tuple[Any, ...], report: Any, n: int, rows: int, n_cells: int) -> Any:
        """The inverse of :meth:`trim`: ``int32 [rows, C]`` outputs, padded rows zero."""
        raise NotImplementedError

    @staticmethod
    def stat(static: tuple[Any, ...], s: Any, n_cells: int) -> Any:
        """The named statistic from the kernel's flat sums (e.g. ``[n_cells]``)."""
        raise NotImplementedError

    @staticmethod
    def cross_stat(static: tuple[Any, ...], s: Any, n_cells: int, label_width: int) -> Any:
        """The named cross statistic from the kernel's flat cross sums."""
        raise NotImplementedError


class CellShaped(Release):
    """A cell-marking release whose kernel outputs are ``[rows, width * w]``, cell-major: ``w``
    coordinates for each of the ``width`` padded cells (``static[1] == w``,
    ``static[2] == width``). Report ``[n, L]`` (``[n, L, w]``); own sums per coordinate,
    ``[L]`` (``[L, w]``); cross sums per coordinate. A kind whose outputs are indicators of the
    cells (or of ``(cell, label index)`` items) gets its sums and report format from here."""

    @staticmethod
    def sums(static: tuple[Any, ...], out: jax.Array, valid: jax.Array) -> jax.Array:
        return out.astype(jnp.int32).sum(axis=0)

    @staticmethod
    def cross_sums(
        static: tuple[Any, ...], out: jax.Array, rhs: jax.Array, valid: jax.Array, block: int
    ) -> jax.Array:
        return cross_indicator_sums(out, rhs, block)

    @staticmethod
    def report_shape(static: tuple[Any, ...], n: int, n_cells: int) -> tuple[int, ...]:
        w = static[1]
        return (n, n_cells) if w == 1 else (n, n_cells, w)

    @staticmethod
    def trim(static: tuple[Any, ...], out: Any, n: int, n_cells: int) -> Any:
        w, width = static[1], static[2]
        return squeeze(out.reshape(out.shape[0], width, w)[:n, :n_cells], w)

    @staticmethod
    def pad(static: tuple[Any, ...], report: Any, n: int, rows: int, n_cells: int) -> Any:
        w, width = static[1], static[2]
        a = jnp.asarray(report).reshape(n, -1).astype(jnp.int32).reshape(n, n_cells, w)
        a = jnp.pad(a, ((0, rows - n), (0, width - n_cells), (0, 0)))
        return a.reshape(rows, width * w)

    @staticmethod
    def stat(static: tuple[Any, ...], s: Any, n_cells: int) -> Any:
        w, width = static[1], static[2]
        return squeeze(s.reshape(width, w)[:n_cells], w)

    @staticmethod
    def cross_stat(static: tuple[Any, ...], s: Any, n_cells: int, label_width: int) -> Any:
        return cell_cross_stat(s, static[2], static[1], label_width, n_cells)


# -- shared helpers --------------------------------------------------------------------------------
def noise_words(noise: tuple[Any, ...], coords: int) -> int:
    """32-bit words per holder for ``coords`` coordinates of a noise with static description
    ``noise`` (16-bit flips pack two per word, 64-bit uniforms take two words)."""
    if noise[0] == "bits":
        return -(-coords // 2) if noise[1] == 16 else coords * (noise[1] // 32)
    if noise[0] == "matrix":
        return coords * (int(noise[2]) // 32)
    return 2 * coords


def static_bound(noise: tuple[Any, ...]) -> int:
    """An upper bound on a noise's absolute outputs read off its static description."""
    return 1 if noise[0] == "bits" else int(noise[1])


def pad_rows(table: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """A table padded with zero rows (never indexed) to a bucket of rows, so that the number of
    label levels does not change the compiled program's shapes."""
    rows = bucket(table.shape[0], 2 * MAX_LEVELS)
    return np.pad(table, ((0, rows - table.shape[0]), (0, 0)))


def squeeze(s: Any, width: int) -> Any:
    """``s[..., 0]`` for one-column statistics."""
    return s[..., 0] if width == 1 else s


def cell_cross_stat(s: Any, width: int, per_cell: int, label_width: int, n_cells: int) -> Any:
    """Flat cross sums ``[width * per_cell * label_width]`` as ``[n_cells, (per_cell,)
    (label_width)]``: the axes of width one dropped."""
    s = s.reshape(width, per_cell, label_width)[:n_cells]
    if label_width == 1:
        s = s[:, :, 0]
    return s[:, 0] if per_cell == 1 else s


def cross_indicator_sums(lhs: jax.Array, rhs: jax.Array, block: int) -> jax.Array:
    """``sum_i lhs[i, c] rhs[i, k]`` for every coordinate ``c`` and label column ``k``, exact.

    With one label column: an ``int32`` product summed over rows (exact: every partial sum is at
    most ``max_summary_rows`` times the pair's bound, below ``2^31``). With a wider label release:
    blocked float32 matmuls whose products and sums stay integers below ``2^24`` within a block of
    ``block`` rows (hence exact), the blocks then added in ``int32``.
    """
    if rhs.shape[1] == 1:
        return (lhs.astype(jnp.int32) * rhs).sum(axis=0)
    rows = lhs.shape[0]
    size = min(block, rows)
    g = rows // size
    a = lhs.astype(jnp.float32).reshape(g, size, -1)
    b = rhs.astype(jnp.float32).reshape(g, size, -1)
    per_block = jnp.einsum("gbw,gbk->gwk", a, b)
    out: jax.Array = per_block.astype(jnp.int32).sum(axis=0).reshape(-1)
    return out


def summary_block(bounds: Sequence[int], cross: Sequence[tuple[int, int]]) -> int:
    """Rows per exact float32 block of the cross sums: a power of two with ``rows x`` the largest
    term below ``2^24``."""
    largest = max([max(bounds)] + [bounds[i] * bounds[k] for i, k in cross])
    return 1 << max(0, ((FLOAT32_EXACT - 1) // largest).bit_length() - 1)
