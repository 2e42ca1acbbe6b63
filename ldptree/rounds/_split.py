"""A public split of the holders among rounds: each holder answers exactly one of them.

Holder ``i`` (its index in arrival order) belongs to part

    part(i) = splitmix64(seed + i) mod n_parts,

a fixed function of the public ``seed`` and of ``i`` alone: the assignment is public and
independent of every private value, so a holder's reports to the rounds it is *not* assigned to
do not exist, and the rounds compose in parallel (each holder pays one round's epsilon). It needs
no ``n`` up front (streams work) and does not depend on how rows are cut into chunks. Part sizes
are multinomial (each holder lands in a part with probability ``1 / n_parts``).

A :class:`~ldptree.rounds.Round` with ``holders=HolderPart(split, p)`` reads only part ``p``'s
holders; they are numbered ``0, 1, ...`` within the part (their noise is drawn from the round's
release key and that number, as for any round). ``HolderPart(split, p, complement=True)`` is every
holder *outside* part ``p`` (e.g. a first round on part 0 and a second round on all the others:
still disjoint, so still parallel).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import attrs
import numpy as np

from ldptree._validation import check_int
from ldptree.rounds._chunks import Piece

__all__ = ["HolderPart", "HolderSplit"]

_MASK = (1 << 64) - 1


def _seed(_: object, attribute: attrs.Attribute[int], value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= _MASK:
        raise ValueError(f"{attribute.name} must be an integer in [0, 2^64), got {value!r}")


def _parts(value: Any) -> int:
    return check_int(value, "n_parts", minimum=1)


def splitmix64(x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The splitmix64 finaliser of ``uint64`` values (a bijection that mixes every bit)."""
    with np.errstate(over="ignore"):
        z = x + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return z ^ (z >> np.uint64(31))


@attrs.frozen
class HolderSplit:
    """The assignment of holders to ``n_parts`` parts (module docstring)."""

    n_parts: int = attrs.field(converter=_parts)
    seed: int = attrs.field(default=0, validator=_seed)

    def parts_of(self, first: int, m: int) -> np.ndarray[Any, Any]:
        """``int64[m]``: the parts of holders ``first, ..., first + m - 1``."""
        if self.n_parts == 1:
            return np.zeros(m, dtype=np.int64)
        index = np.arange(first, first + m, dtype=np.uint64)
        with np.errstate(over="ignore"):
            mixed = splitmix64(index + np.uint64(self.seed))
        return (mixed % np.uint64(self.n_parts)).astype(np.int64)

    def sizes(self, n: int) -> np.ndarray[Any, Any]:
        """``int64[n_parts]``: how many of holders ``0..n-1`` each part has."""
        counts = np.zeros(self.n_parts, dtype=np.int64)
        step = 1 << 20
        for first in range(0, n, step):
            parts = self.parts_of(first, min(step, n - first))
            counts += np.bincount(parts, minlength=self.n_parts)
        return counts

    def part(self, index: int) -> HolderPart:
        return HolderPart(self, index)

    @property
    def name(self) -> str:
        """A name that identifies the assignment (equal names: equal parts), for the ledger."""
        return f"holder split {self.seed:016x} into {self.n_parts}"


@attrs.frozen
class HolderPart:
    """Part ``index`` of a :class:`HolderSplit`: the holders a round reads (``complement``:
    every holder outside part ``index`` instead)."""

    split: HolderSplit = attrs.field(validator=attrs.validators.instance_of(HolderSplit))
    index: int = attrs.field()
    complement: bool = attrs.field(
        default=False, kw_only=True, validator=attrs.validators.instance_of(bool)
    )

    @index.validator
    def _check_index(self, attribute: attrs.Attribute[int], value: Any) -> None:
        if check_int(value, attribute.name, minimum=0) >= self.split.n_parts:
            raise ValueError(f"index must be < n_parts={self.split.n_parts}, got {value}")

    def select(self, chunks: Iterable[Piece]) -> Iterator[Piece]:
        """The rows of this part's holders from consecutive chunks of every holder, in order
        (possibly empty pieces; the caller regroups them)."""
        first = 0
        for X, y in chunks:
            m = int(X.shape[0])
            if self.split.n_parts == 1 and not self.complement:
                yield X, y
            else:
                keep = (self.split.parts_of(first, m) == self.index) != self.complement
                yield np.asarray(X)[keep], np.asarray(y)[keep]
            first += m

    def size(self, n: int) -> int:
        """How many of holders ``0..n-1`` this part has."""
        own = int(self.split.sizes(n)[self.index])
        return n - own if self.complement else own
