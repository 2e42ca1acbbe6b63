"""k-subset selection: each holder reports ``k`` items, its own one with a raised probability
(the subset selection of Ye & Barg and Wang et al.), drawn with integer arithmetic only.

Items are ``(cell, label index)`` pairs (:class:`~ldptree.mechanisms._releases.ItemRelease`):
holder ``i``'s item ``x_i`` is one of ``d = n_cells * per_cell``. The report is the indicator
vector of a set ``S`` of items (``bool [n, L]`` or ``[n, L, per_cell]``), drawn as follows from
the holder's words:

1. a 64-bit uniform integer ``u`` (two words) decides whether ``x`` is in ``S``: ``u < T``, with
   probability exactly ``p = T / 2^64``; the other items to report are then ``K = k - 1`` if
   ``u < T``, else ``K = k``;
2. the ``d - 1`` other items, in index order, are selected one by one (selection sampling): the
   ``i``-th is taken with probability ``need / b_i``, ``need`` the items still to take and
   ``b_i = d - 1 - i`` the items left, which makes the selected set a uniformly random
   ``K``-subset of the others, exactly. Step ``i`` reads one 32-bit word ``w``: it is accepted
   when ``w < R_i = b_i floor(2^32 / b_i)``, and then ``w mod b_i`` is exactly uniform on
   ``[0, b_i)`` and the item is taken when it is below ``need``. If any step is rejected the
   report is the empty set (the *null* report). The steps' moduli are ``1, ..., d - 1`` whatever
   the record, so the null report's probability does not depend on it.

The law is therefore exact: with ``c1 = C(d - 1, k - 1)``, ``c0 = C(d - 1, k)`` and
``P_nt = prod_{b=1}^{d-1} R_b / 2^32`` (no step rejected),

    P(S | x) = P_nt p / c1          for |S| = k, x in S,
    P(S | x) = P_nt (1 - p) / c0    for |S| = k, x not in S,
    P(null | x) = 1 - P_nt          (the same for every x),

so two items ``x != x'`` have likelihood ratio at most ``p c0 / ((1 - p) c1) =
T (d - k) / ((2^64 - T) k)``. ``T`` is the largest integer keeping this ratio at or below a
rational ``r <= e^eps`` (rounded towards privacy), so the realised budget
:attr:`SubsetLaw.realised_epsilon` never exceeds the claim; the reverse ratio is below one since
``p >= k / d``. The null report costs nothing: its probability does not depend on the record.

Debiasing. Item ``j``'s indicator has mean ``offset + slope 1{x = j}`` with
``offset = P_nt (p (k - 1) + (1 - p) k) / (d - 1)`` and ``slope = P_nt p - offset`` (exact
rationals), so ``(C_j - n offset) / slope`` is unbiased for the number of holders whose item is
``j``. ``k`` defaults to the integer near ``d / (e^eps + 1)`` with the smallest variance of that
estimate (Wang et al.'s optimum).

Cost: ``d_pad + 1`` random words per holder (``d_pad`` the padded item count) and a sequential
pass over the items; the report is ``d`` bits with ``k`` ones.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._buckets import bucket
from ldptree._validation import check_int, to_epsilon
from ldptree.accounting._channels import EqualGapChannel
from ldptree.accounting._law import RecordBlock
from ldptree.mechanisms._labels import Labels
from ldptree.mechanisms._release import pad_rows, squeeze
from ldptree.mechanisms._releases import ItemRelease, Table, _optional_table, items

__all__ = ["SubsetChannel", "SubsetLaw", "SubsetRelease", "subset_size"]

_TOTAL = 1 << 64
#: Selection steps read 32-bit uniform words.
_WORD_BITS = 32


def _ratio_below(epsilon: float) -> Fraction:
    """A rational ``r <= e^epsilon`` (the float ``exp`` moved one ulp down)."""
    if epsilon >= 700.0:
        return Fraction(2**1000)
    return Fraction(math.nextafter(math.exp(epsilon), 0.0))


def _log(value: Fraction) -> float:
    """``log(value)`` for a positive rational, accurate for huge numerators and denominators."""
    return math.log(value.numerator) - math.log(value.denominator)


def _approx_variance(epsilon: float, d: int, k: int) -> float:
    """Variance of a debiased item count per outside holder, with the unrounded ``p``."""
    e = math.exp(min(epsilon, 700.0))
    p = k * e / (k * e + d - k)
    q = (p * (k - 1) + (1.0 - p) * k) / (d - 1)
    return q * (1.0 - q) / (p - q) ** 2


def subset_size(epsilon: float, d: int) -> int:
    """The ``k`` near ``d / (e^eps + 1)`` (within two) with the smallest variance of a debiased
    item count for an outside holder; ``1`` for ``d <= 2``."""
    if d <= 2:
        return 1
    centre = d / (math.exp(min(epsilon, 700.0)) + 1.0)
    low, high = max(1, math.floor(centre) - 2), min(d - 1, math.ceil(centre) + 2)
    return min(range(low, high + 1), key=lambda k: (_approx_variance(epsilon, d, k), k))


@attrs.frozen
class SubsetLaw:
    """The exact law of a k-subset report over ``d`` items (module docstring)."""

    epsilon: float
    d: int
    k: int

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.k <= max(1, self.d - 1):
            raise ValueError(
                f"the subset size must lie in [1, {max(1, self.d - 1)}] for {self.d} items, "
                f"got {self.k}"
            )
        if self.d > 1 and not self.reverse_ok:
            raise ValueError(
                f"epsilon={self.epsilon} is too small to realise subset selection over {self.d}"
            )

    @functools.cached_property
    def threshold(self) -> int:
        """``T``: the largest integer with ``T (d - k) <= r (2^64 - T) k`` (``2^64 - 1`` for one
        item, where nothing can be learned)."""
        d, k = self.d, self.k
        if d == 1:
            return _TOTAL - 1
        r = _ratio_below(self.epsilon)
        # T (d - k) den <= num (2^64 - T) k  <=>  T <= num k 2^64 / ((d - k) den + num k)
        num, den = r.numerator, r.denominator
        t = (num * k * _TOTAL) // ((d - k) * den + num * k)
        return min(t, _TOTAL - 1)

    @property
    def p(self) -> Fraction:
        """``P(x in S | not null) = T / 2^64``."""
        return Fraction(self.threshold, _TOTAL)

    @property
    def reverse_ok(self) -> bool:
        """``p >= k / d``: a record's own item is never less likely in ``S`` than another's."""
        return self.threshold * self.d >= self.k * _TOTAL

    @functools.cached_property
    def distinct(self) -> Fraction:
        """``P_nt``: no selection step is rejected, ``prod_{b=1}^{d-1} R_b / 2^32``."""
        space = 1 << _WORD_BITS
        out = Fraction(1)
        for b in range(1, self.d):
            out *= Fraction(b * (space // b), space)
        return out

    @property
    def c1(self) -> int:
        return math.comb(self.d - 1, self.k - 1)

    @property
    def c0(self) -> int:
        return math.comb(self.d - 1, self.k)

    @functools.cached_property
    def set_probabilities(self) -> tuple[Fraction, Fraction, Fraction]:
        """``(P(S | x) for x in S, for x not in S, P(null))`` (module docstring; with one item
        the "out" draw reports the empty set)."""
        p, nt = self.p, self.distinct
        inside = nt * p / self.c1
        if self.c0 == 0:
            return inside, Fraction(0), 1 - nt + nt * (1 - p)
        return inside, nt * (1 - p) / self.c0, 1 - nt

    @property
    def realised_epsilon(self) -> float:
        """``log(T (d - k) / ((2^64 - T) k))``: the largest log-ratio between two items."""
        if self.d == 1:
            return 0.0
        return _log(
            Fraction(self.threshold * (self.d - self.k), (_TOTAL - self.threshold) * self.k)
        )

    @functools.cached_property
    def indicator(self) -> tuple[Fraction, Fraction]:
        """``(offset, slope)``: ``P(j in S | x) = offset + slope 1{x = j}``, exact."""
        p, nt, d, k = self.p, self.distinct, self.d, self.k
        offset = Fraction(0) if d == 1 else nt * (p * (k - 1) + (1 - p) * k) / (d - 1)
        return offset, nt * p - offset

    @property
    def offset(self) -> float:
        return float(self.indicator[0])

    @property
    def slope(self) -> float:
        return float(self.indicator[1])

    def block_variance(self, size: int, inside: bool) -> float:
        """``Var(sum_{a in B} Z_a)`` for a block ``B`` of ``size`` items that holds the record's
        item (``inside``) or not: from the exact pair probabilities of ``S``."""
        d, k, p, nt = self.d, self.k, self.p, self.distinct
        others = size - 1 if inside else size
        if d == 1:
            own, mean_others, pairs = p, Fraction(0), Fraction(0)
        else:
            one = (p * (k - 1) + (1 - p) * k) / (d - 1)  # P(other in S | not null)
            two = (
                (p * (k - 1) * (k - 2) + (1 - p) * k * (k - 1)) / ((d - 1) * (d - 2))
                if d > 2
                else Fraction(0)
            )
            own = p
            mean_others = others * one
            pairs = others * (others - 1) * two
        mean = mean_others + (own if inside else 0)
        second = mean + pairs  # E[Y^2] = E[Y] + sum over ordered pairs
        if inside and d > 1:
            second += 2 * others * p * Fraction(k - 1, d - 1)  # the own item with another
        return float(nt * second - (nt * mean) ** 2)

    def log_prob(self, members: tuple[int, ...], x: int) -> float:
        """``log P(S | x)`` of the set with sorted ``members`` (``()``: the null report)."""
        inside, outside, null = self.set_probabilities
        if not members:
            return _log(null) if null else -math.inf
        if len(members) != self.k or len(set(members)) != self.k:
            return -math.inf
        if min(members) < 0 or max(members) >= self.d:
            return -math.inf
        prob = inside if x in members else outside
        return _log(prob) if prob else -math.inf


@functools.lru_cache(maxsize=256)
def _law(epsilon: float, d: int, k: int) -> SubsetLaw:
    return SubsetLaw(epsilon, d, k)


@attrs.frozen(eq=False)
class SubsetChannel(EqualGapChannel):
    """The accountant's view of a k-subset report: one coordinate whose input is the item and
    whose output is the sorted tuple of reported items. Divergences in closed form: ``0``
    between equal items, :attr:`SubsetLaw.realised_epsilon` between different ones, attained at
    a set holding the first item and not the second."""

    law: SubsetLaw

    @property
    def _gap(self) -> float:
        return self.law.realised_epsilon

    def _witness(self, a: int, b: int) -> tuple[int, ...]:
        rest = [i for i in range(self.law.d) if i not in (a, b)][: self.law.k - 1]
        return tuple(sorted((a, *rest)))

    def log_prob(self, output: Any, value: Any) -> float:
        return self.law.log_prob(tuple(sorted(int(i) for i in output)), int(value))


def _to_size(value: Any) -> int | None:
    return None if value is None else check_int(value, "size", minimum=1)


@attrs.frozen(eq=False)
class SubsetRelease(ItemRelease):
    """A k-subset of the ``n_cells * per_cell`` items, the holder's own item favoured with budget
    ``epsilon`` (module docstring). ``size`` is ``k`` (``None``: :func:`subset_size` for the
    item count; at most ``d - 1`` is used, a larger size would reveal nothing). Report
    ``bool [n, L]`` (``[n, L, per_cell]``); summary: per-item counts, and per-item sums of every
    label release's outputs."""

    name: str
    epsilon: float = attrs.field(converter=to_epsilon)
    size: int | None = attrs.field(default=None, converter=_to_size)
    label_index: Table | None = attrs.field(default=None, converter=_optional_table)

    def law(self, n_cells: int) -> SubsetLaw:
        """The exact law over ``n_cells * per_cell`` items."""
        d = check_int(n_cells, "n_cells", minimum=1) * self.width
        k = subset_size(self.epsilon, d) if self.size is None else min(self.size, max(1, d - 1))
        return _law(self.epsilon, d, k)

    def static(self, n_cells: int, width: int, labels: Labels) -> tuple[Any, ...]:
        return ("subset", self.width, width)

    def constants(self, n_cells: int, labels: Labels) -> Any:
        law = self.law(n_cells)
        t = law.threshold
        member = (np.uint32(t >> 32), np.uint32(t & 0xFFFFFFFF), np.int32(law.k), np.int32(law.d))
        return (
            member,
            _steps(law.d, bucket(n_cells) * self.width),
            pad_rows(self.item_table(labels.size)),
        )

    def block(self, n_cells: int, labels: Labels) -> RecordBlock:
        return self.item_block(SubsetChannel(self.law(n_cells)), labels)

    def assemble(self, outputs: list[Any], n_cells: int) -> np.ndarray[Any, Any]:
        (members,) = outputs
        bits = np.zeros(n_cells * self.width, dtype=bool)
        bits[list(members)] = True
        return np.asarray(squeeze(bits.reshape(n_cells, self.width), self.width))

    def disassemble(self, report: Any, n_cells: int) -> np.ndarray[Any, Any]:
        """``[n, 1]``: every holder's set as the sorted tuple of its items (the law's output)."""
        rows = np.asarray(report).reshape(np.shape(report)[0], -1)
        out = np.empty((rows.shape[0], 1), dtype=object)
        for i, row in enumerate(rows):
            out[i, 0] = tuple(int(j) for j in np.flatnonzero(row))
        return out

    def report_log_prob(self, out: np.ndarray[Any, Any], cell: int, t: int, n_cells: int) -> float:
        flat = np.asarray(out).reshape(-1)
        if flat.size != n_cells * self.width:
            return -math.inf
        members = tuple(int(i) for i in np.flatnonzero(flat))
        return self.law(n_cells).log_prob(
            members, cell * self.width + int(self.item_table(t + 1)[t, 0])
        )

    def field(self, n_cells: int) -> tuple[tuple[int, ...], int, int]:
        shape = (n_cells,) if self.width == 1 else (n_cells, self.width)
        return (shape, 0, 1)

    # -- traced --------------------------------------------------------------------------------
    @staticmethod
    def words(static: tuple[Any, ...]) -> int:
        # membership (64 bits), then one word per selection step
        return 1 + int(static[1]) * int(static[2])

    @staticmethod
    def sample(
        static: tuple[Any, ...], consts: Any, words: jax.Array, cells: jax.Array, t: jax.Array
    ) -> jax.Array:
        (t_hi, t_lo, k, d), (moduli, limits), table = consts
        columns = static[1] * static[2]
        x = items(table, cells, t, static[1])  # [n, 1]
        member = (words[:, 0] < t_hi) | ((words[:, 0] == t_hi) & (words[:, 1] < t_lo))
        need = jnp.where(member, k - 1, k)  # other items to take

        def step(need: jax.Array, inputs: tuple[jax.Array, ...]) -> Any:
            word, modulus, limit, real = inputs
            accepted = word <= limit
            drawn = word % jnp.maximum(modulus, jnp.uint32(1))  # beyond the items: masked
            take = accepted & real & (drawn.astype(jnp.int32) < need)
            return need - take, (take, ~accepted & real)

        # step i: the i-th other item (index order), word 2 + i, modulus d - 1 - i
        steps = (words[:, 2:].T, moduli[:, None], limits[:, None], moduli[:, None] > 0)
        _, (taken, rejected) = jax.lax.scan(step, need, steps)
        col = jnp.arange(columns, dtype=jnp.int32)[None, :]
        if columns > 1:
            index = jnp.clip(col - (col > x), 0, columns - 2)  # the step of each other column
            others = jnp.take_along_axis(taken.T, index, axis=1)
        else:
            others = jnp.zeros((cells.shape[0], 1), dtype=bool)
        chosen = jnp.where(col == x, member[:, None], others) & (col < d)
        out: jax.Array = chosen & ~jnp.any(rejected, axis=0)[:, None]
        return out


def _steps(d: int, columns: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``(moduli, limits)``, ``uint32[columns - 1]``: step ``i``'s modulus ``b_i = d - 1 - i``
    and its largest accepted word ``R_i - 1`` (``b_i = 0``: no step, beyond the real items)."""
    size = max(columns - 1, 0)
    moduli = np.zeros(size, dtype=np.uint32)
    limits = np.zeros(size, dtype=np.uint32)
    for i in range(min(size, d - 1)):
        b = d - 1 - i
        moduli[i] = b
        limits[i] = b * ((1 << _WORD_BITS) // b) - 1
    return moduli, limits
