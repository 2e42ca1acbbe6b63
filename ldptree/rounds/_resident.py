"""A round resident on the device: the holders' rows cross to the device as they are stored,
and everything after that runs there.

On the host path (:class:`~ldptree.rounds.Threads` on a CPU) each piece is converted to
``float64``, scaled and routed on the host side of JAX, and the fused kernel sums the reports. On
an accelerator that host work is what limits a round. Here a piece's rows (``float32`` rows stay
``float32``: half the bytes) and converted labels are the only transfer, and two compiled programs
run on the device, one after the other, without a copy back in between:

1. **scale and route** (in 64-bit mode): ``(x - lo) / scale`` in ``float64``, the cell of every
   row by the exact integer order-key walk of :meth:`~ldptree.partitions.Partition.key_walk`;
2. **privatize and sum**: the mechanism's fused kernel
   (:class:`~ldptree.protocols.FusedSummary`), block by block, on those cells.

Only the summed statistics come back. The result is the host path's, bit for bit:

* ``float64`` subtraction and division are correctly rounded on every backend XLA targets, so
  ``(x - lo) / scale`` is NumPy's ``(x - lo) / scale`` -- except where a backend flushes
  subnormal numbers to zero (XLA's CPU backend does). A subnormal value can only enter as a
  stored row value, or arise as ``x - lo`` or the quotient; the first program checks all three
  on the *bits* (integer comparisons flush nothing) and reports the piece as suspect. A suspect
  piece is summed again on the host path, exactly. Real data almost never meets this (a
  feature within ``2.2e-308`` of the public minimum); tests build such pieces on purpose.
  A box (``lo``, ``scale``) with a subnormal number runs the whole round on the host.
* Cells are compared as int64 order keys (exact); the kernel is the one the host path runs,
  outside 64-bit mode, with the same key, holder indices and records.

Pieces are larger than on the host (:func:`piece_rows`): the kernel's memory is bounded by its
blocks, not by the piece. A piece is at most the mechanism's ``max_summary_rows`` holders (its
int32 sums are exact up to there).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._buckets import MIN_ROWS, bucket
from ldptree._jax_cache import kernel
from ldptree.mechanisms._kit import blocked_sums
from ldptree.partitions._partition import order_key, walk_keys
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import FusedSummary
from ldptree.rounds._chunks import pad_rows
from ldptree.rounds._plan import Round

#: Holders per piece on an accelerator unless the executor says otherwise (a power of two),
#: lowered for a device whose memory holds fewer (:func:`piece_rows`). Measured on one H200 at
#: 10^8 holders (depth 8): 2^20 rows per piece beat 2^21 and 2^22 (two pieces in flight overlap
#: the host's reading with the device's work; larger pieces fill and drain that pipeline slower).
DEVICE_PIECE_ROWS = 1 << 20
#: Most rows one step of the fused kernel's loop privatizes, on a CPU (as on the host path: a
#: block's intermediates stay in cache) and on an accelerator, where a step must fill the device:
#: on one H200 a piece of 2^21 holders over 256 cells took 68.8 ms in steps of 2^13 rows, 5.7 ms
#: in steps of 2^17 and 3.3 ms in steps of 2^19 (``benchmarks/bench_device.py``); whole fits
#: at 10^8 holders were within noise of each other from 2^17 on, and 2^17 keeps a step's
#: ``rows x cells`` intermediates at 128 MiB.
KERNEL_BLOCK = {"cpu": 1 << 13, "accelerator": 1 << 17}

_F64_TINY_BITS = 0x0010_0000_0000_0000  # the smallest normal float64, as bits
_F32_TINY_BITS = 0x0080_0000


def on_accelerator(devices: list[Any]) -> bool:
    """Whether any of ``devices`` is not a CPU: rounds then run resident by default."""
    return any(getattr(d, "platform", "cpu") != "cpu" for d in devices)


def kernel_block(device: Any) -> int:
    """Most rows per step of the resident kernel's loop on ``device`` (:data:`KERNEL_BLOCK`)."""
    return KERNEL_BLOCK["accelerator" if on_accelerator([device]) else "cpu"]


def piece_rows(r: Round, device: Any, requested: int | None) -> int:
    """Holders per resident piece of round ``r``: ``requested`` if given, else
    :data:`DEVICE_PIECE_ROWS`, halved while four pieces in flight (float64 rows, labels, cells)
    would take more than a quarter of ``device``'s memory limit (when it reports one); rounded
    up to a power of two and capped at the largest power of two within the mechanism's
    ``max_summary_rows``."""
    if requested is not None:
        rows = bucket(requested, MIN_ROWS)
    else:
        rows = DEVICE_PIECE_ROWS
        stats: Any = None
        try:
            stats = device.memory_stats()
        except Exception:  # a backend without memory statistics may raise anything
            stats = None
        limit = int((stats or {}).get("bytes_limit", 0) or 0)
        per_row = 8 * r.partition.n_features + 8
        while limit and rows > MIN_ROWS and 16 * rows * per_row > limit:
            rows //= 2
    exact = int(cast(FusedSummary, r.mechanism).max_summary_rows)
    return min(rows, 1 << (exact.bit_length() - 1))


def _bits(x: jax.Array) -> jax.Array:
    return jax.lax.bitcast_convert_type(x, jnp.int64 if x.dtype == jnp.float64 else jnp.int32)


def _magnitude(bits: jax.Array) -> jax.Array:
    return bits & jnp.asarray(np.iinfo(bits.dtype).max, bits.dtype)


def scaled_exactly(
    X: jax.Array, lo: jax.Array, scale: jax.Array, valid: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``(scaled, suspect)``: ``(X - lo) / scale`` in float64, and whether a row that ``valid``
    marks as a holder may differ from the IEEE result there (module docstring). Traced, under
    64-bit mode; ``X`` float32 or float64."""
    tiny = _F64_TINY_BITS if X.dtype == jnp.float64 else _F32_TINY_BITS
    stored = _magnitude(_bits(X))
    x = X.astype(jnp.float64)
    diff = x - lo
    out = diff / scale
    diff_mag, out_mag = _magnitude(_bits(diff)), _magnitude(_bits(out))
    suspect = (
        ((stored > 0) & (stored < tiny))  # a subnormal stored value
        # x - lo subnormal or flushed to zero where x != lo (order keys: -0.0 equals +0.0)
        | ((diff_mag < _F64_TINY_BITS) & (order_key(_bits(x)) != order_key(_bits(lo))))
        | ((out_mag < _F64_TINY_BITS) & (diff_mag >= _F64_TINY_BITS))  # a subnormal quotient
    )
    return out, jnp.any(suspect & valid[:, None])


@kernel
def _resident_cells(
    walk: tuple[jax.Array, ...], lo: jax.Array, scale: jax.Array, X: jax.Array, n_valid: jax.Array
) -> tuple[jax.Array, jax.Array]:
    # the scale-and-route program (under 64-bit mode): cells, and whether the piece is suspect
    valid = jnp.arange(X.shape[0]) < n_valid
    scaled, suspect = scaled_exactly(X, lo, scale, valid)
    cells = walk_keys(walk, order_key(_bits(scaled)))
    return cells.astype(jnp.int32), suspect


@kernel(static_argnums=(0, 1, 2))
def _resident_sums(
    summary_kernel: Callable[..., tuple[jax.Array, ...]], spec: Any, most: int, *args: Any
) -> tuple[jax.Array, ...]:
    # the privatize-and-sum program: the kit's blocked loop around the mechanism's kernel
    return blocked_sums(summary_kernel, spec, most, *args)


@attrs.frozen(eq=False)
class ResidentRound:
    """One round's constants on the device side, fixed before its first piece: the fused
    kernel's description and constants, the tree's walk and the box. :meth:`sums` gives a
    piece's named statistics, or ``None`` for a suspect piece (module docstring)."""

    mechanism: FusedSummary
    n_cells: int
    rows: int
    spec: Any
    consts: Any
    key_data: Any
    label_dtype: np.dtype[Any]
    walk: tuple[Any, ...]
    lo: np.ndarray[Any, Any]
    scale: np.ndarray[Any, Any]
    #: Most rows per step of the kernel's loop (:data:`KERNEL_BLOCK` of the device's kind).
    block: int = KERNEL_BLOCK["cpu"]

    @staticmethod
    def box(r: Round) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """``(lo, scale)`` of round ``r``'s scaling as float64 (the unit box unscaled)."""
        scaler = r.scaler or RangeScaler.unit(r.partition.n_features)
        return np.asarray(scaler.lo, dtype=np.float64), np.asarray(scaler.scale, dtype=np.float64)

    @classmethod
    def fits(cls, r: Round) -> bool:
        """Whether round ``r`` (its mechanism has :class:`~ldptree.protocols.FusedSummary`) can
        run resident: its box has no subnormal number and its mechanism's sums are exact for
        pieces of at least :data:`~ldptree._buckets.MIN_ROWS` holders."""
        if int(cast(FusedSummary, r.mechanism).max_summary_rows) < MIN_ROWS:
            return False
        box = np.concatenate(cls.box(r))
        return not bool(np.any((box != 0) & (np.abs(box) < np.finfo(np.float64).tiny)))

    @classmethod
    def of(
        cls, r: Round, key: Any, rows: int, labels: Any, *, block: int = KERNEL_BLOCK["cpu"]
    ) -> ResidentRound:
        """The resident form of round ``r`` (:meth:`fits`) with pieces of at most ``rows``
        holders (:func:`piece_rows`), labels like ``labels`` (as the mechanism takes them) and
        at most ``block`` rows per step of the kernel's loop (:func:`kernel_block`)."""
        mechanism = cast(FusedSummary, r.mechanism)
        lo, scale = cls.box(r)
        probe = np.zeros(MIN_ROWS, dtype=np.int32)
        spec, consts, args = mechanism.summary_inputs(
            key, probe, np.zeros(MIN_ROWS, dtype=np.asarray(labels).dtype), r.n_cells, 0, MIN_ROWS
        )
        return cls(
            mechanism=mechanism,
            n_cells=r.n_cells,
            rows=rows,
            spec=spec,
            consts=consts,
            key_data=args[0],
            label_dtype=np.asarray(args[2]).dtype,
            walk=r.partition.key_walk(),
            lo=lo,
            scale=scale,
            block=block,
        )

    def padded(self, m: int, first: int) -> int:
        """The compiled length of a piece of ``m`` holders from holder ``first`` on: a short
        piece after full ones is padded to their length (the kernel's loop skips the padding's
        blocks); a lone short round gets its own power of two."""
        return self.rows if first > 0 or m > self.rows // 2 else bucket(m, MIN_ROWS)

    def prepare(self, rows: int) -> None:
        """Compile (or load) the privatize-and-sum program for pieces of ``rows`` (padded)
        holders without running it or reading a record: a round's first piece compiles it
        beside its scale-and-route program."""
        cells = jax.device_put(np.zeros(rows, dtype=np.int32))
        labels = jax.device_put(np.zeros(rows, dtype=self.label_dtype))
        _resident_sums.prepare(*self._kernel_args(cells, labels, 0, 0))

    def _kernel_args(self, cells: Any, labels: Any, first: int, n_valid: int) -> tuple[Any, ...]:
        return (
            self.mechanism.summary_kernel,
            self.spec,
            self.block,
            self.consts,
            self.key_data,
            cells,
            labels,
            np.uint32(first),
            np.int32(n_valid),
        )

    def sums(self, X: Any, labels: Any, first: int) -> Any | None:
        """The named statistics of holders ``first, first + 1, ...`` with stored rows ``X``
        (float32 or float64, unscaled) and labels as the mechanism takes them; ``None`` when
        the piece is suspect."""
        m = int(X.shape[0])
        rows = self.padded(m, first)
        labels_dev = jax.device_put(pad_rows(np.asarray(labels, dtype=self.label_dtype), rows))
        n_valid = np.int32(m)
        with jax.enable_x64(True):  # this thread only: float64 rows, int64 order keys
            # (outside 64-bit mode a transfer would round float64 rows to float32)
            X_dev = jax.device_put(pad_rows(X, rows))
            cells, suspect = _resident_cells(self.walk, self.lo, self.scale, X_dev, n_valid)
        sums = _resident_sums(*self._kernel_args(cells, labels_dev, first, m))
        if bool(suspect):
            return None
        return self.mechanism.summary_stats(self.spec, sums, self.n_cells)
