"""One round of the protocol as an immutable value: what the curator publishes and the key its
holders draw with, set up before any private row is read."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Iterator
from typing import Any

import attrs
import jax
import numpy as np

from ldptree._typing import PRNGKey
from ldptree._validation import check_int
from ldptree.accounting._reuse import watch_key_use
from ldptree.mechanisms._random import fold_in
from ldptree.partitions._partition import Partition
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import Aggregator, AggregatorFactory, Mechanism
from ldptree.rounds._aggregators import SumAggregator
from ldptree.rounds._chunks import Piece, pieces, rebatch
from ldptree.rounds._rows import PrivateRows
from ldptree.rounds._split import HolderPart

#: Holders per piece unless the round says otherwise (memory ``O(chunk_size * n_cells)``).
DEFAULT_CHUNK = 65536


def release_key(key: PRNGKey, mechanism: Any, partition: Partition | None = None) -> PRNGKey:
    """The noise key of one release: ``key`` with a digest of what identifies the release (the
    published partition's arrays and the mechanism's parameters) folded in.

    Fits that reuse a ``random_state`` on the same holders but publish a different partition or
    mechanism then draw independent noise (with shared noise, comparing the two reports would
    cancel it: the XOR of two randomized-response vectors reveals both cells); the same
    configuration still reproduces bit for bit. This protects simulations from accidental reuse;
    a deployment draws each holder's randomness from the operating system (``ldptree.protocol``).
    """
    digest = hashlib.blake2b(repr(mechanism).encode(), digest_size=4)
    if partition is not None:
        for leaf in jax.tree_util.tree_leaves(partition):
            digest.update(np.ascontiguousarray(np.asarray(leaf)).tobytes())
    return fold_in(key, int.from_bytes(digest.digest(), "little"))


def _chunk(value: Any) -> int:
    return check_int(value, "chunk_size", minimum=1)


@attrs.frozen(eq=False)
class Round:
    """One round: rows scaled by ``scaler`` (``None``: already scaled), routed through the
    published ``partition``, labels converted by ``labels`` (e.g. classes to codes; ``None``: as
    they are), privatized by ``mechanism`` and folded by ``aggregator(mechanism, n_cells)``,
    ``chunk_size`` holders per piece. ``key`` is the *release* key (:func:`release_key` of a
    fit's noise key): holder ``i`` draws from ``key`` and ``i`` alone (``None``: reports drawn
    elsewhere). ``holders`` (a :class:`~ldptree.rounds.HolderPart` of a public split) restricts
    the round to one part of the holders, numbered within the part (``None``: every holder).
    Under ``jax.jit`` a round over every holder is built inside the traced function."""

    partition: Partition
    mechanism: Mechanism
    key: PRNGKey | None = None
    aggregator: AggregatorFactory = SumAggregator
    scaler: RangeScaler | None = None
    labels: Callable[[Any], Any] | None = None
    chunk_size: int = attrs.field(default=DEFAULT_CHUNK, converter=_chunk)
    holders: HolderPart | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.instance_of(HolderPart))
    )

    @property
    def n_cells(self) -> int:
        return self.partition.n_leaves

    @property
    def every_holder(self) -> bool:
        """Whether the round's holders are every row of its source, in order."""
        h = self.holders
        return h is None or (h.split.n_parts == 1 and not h.complement)

    def bind(self) -> Aggregator[Any]:
        """The round's aggregator, bound to its mechanism and number of cells."""
        return self.aggregator(self.mechanism, self.n_cells)

    def pieces(self, source: PrivateRows, *, watch: bool = True) -> Iterator[Piece]:
        """``(scaled rows, converted labels)`` of at most ``chunk_size`` holders, in holder
        order, read from ``source``. With ``watch`` (and a release key) the pieces pass through
        :func:`~ldptree.accounting.watch_key_use`, which warns when this key privatized other
        data before; a caller that shares one read among rounds watches each key itself."""
        scale, convert = self.scaler, self.labels
        chunks = source.chunks(self.chunk_size)
        if self.holders is not None and not self.every_holder:
            chunks = rebatch(self.holders.select(chunks), self.chunk_size)
        raw = (
            (X if scale is None else scale.transform(X), y if convert is None else convert(y))
            for X, y in chunks
        )
        out = pieces(raw, self.chunk_size)
        return watch_key_use(self.key, out) if watch and self.key is not None else out

    def rows_id(self) -> Hashable:
        """Rounds with equal ids read the same pieces from one source (same scaling, label
        conversion, chunk size and holders), so their pieces can be read once for all."""
        s = self.scaler
        bounds = None if s is None else np.asarray(s.lo).tobytes() + np.asarray(s.hi).tobytes()
        return (bounds, self.labels, self.chunk_size, self.holders)
