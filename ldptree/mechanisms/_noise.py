"""Exact noise primitives of the mechanism kit: each releases one integer coordinate.

A noise takes an integer *input* ``a`` from a finite domain and releases an integer *output* drawn
with integer arithmetic only, so the law the accountant reads (integer counts out of ``2^bits``)
is the law that is sampled:

* :class:`BitFlip`: randomized response on a bit, ``P(out != a) = q' = T / 2^bits`` with an
  integer threshold ``T = ceil(q 2^bits)`` (``q = 1 / (1 + e^eps)``) realised by comparing a
  ``bits``-bit uniform integer with ``T``. Rounding ``q`` up can only lower the realised budget
  ``log((1 - q') / q')``; the width (16, 32 or 64 bits) is the smallest that realises at least
  ``MIN_REALISED`` of the claim, so nothing is silently wasted. (Exception: 64-bit integers cannot
  realise a ratio above ``2^64``, so a single bit's budget above ``64 ln 2 ~ 44.4`` is realised as
  about 44.4: less privacy loss than claimed, never more.)
* :class:`UnaryFlip`: the bit of optimized unary encoding, ``P(1 | 1) = 1/2`` exactly and
  ``P(1 | 0) = T / 2^bits`` with :class:`BitFlip`'s threshold (rounded up, so a pair of swapped
  coordinates costs at most ``epsilon``).
* :class:`KaryResponse`: k-ary randomized response, ``out = (a + Z) mod k`` with
  ``P(Z = 0) = T / 2^64`` and ``P(Z = z) = m / 2^64`` for each ``z != 0``, ``T + (k - 1) m = 2^64``
  and ``m = ceil(2^64 / (e^eps + k - 1))`` (rounded up: the realised ratio ``T / m <= e^eps``).
* :class:`Geometric`: ``out = clamp(a + Z, -margin, span + margin)`` for ``a in {0, ..., span}``,
  with ``Z`` the two-sided geometric ("discrete Laplace") law of
  :func:`~ldptree.mechanisms._exact.geometric_noise_law`, whose 64-bit counts are rounded so that
  inputs ``a, b`` satisfy ``P(out | a) <= e^{g |a - b|} P(out | b)`` with ``g <= eps / span``
  *exactly for the realised counts*; ``g`` is re-derived from the counts
  (:func:`~ldptree.mechanisms._exact.chain_ratio`) and reported as
  :attr:`Geometric.realised_epsilon` ``= g span``. (The same 64-bit ceiling applies: over one
  coordinate the realised ratio cannot exceed about ``e^{44}``.)

Both expose the same four things, read by the kit: ``channel()`` (the exact law as an accountant
:class:`~ldptree.accounting.FiniteChannel`), ``log_probs(a)`` (float64 log-probabilities of every
output), ``mean(a)`` / ``variance(a)`` (exact moments, for debiasing), and a jittable sampler
``sample(static, consts, words, inputs)`` over ``uint32`` words, with the constants passed as
traced values so one compiled program serves every epsilon of the same shape.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any, NamedTuple

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._buckets import bucket
from ldptree._typing import FloatArray
from ldptree._validation import check_int, to_epsilon
from ldptree.accounting._channels import FiniteChannel
from ldptree.mechanisms._exact import (
    MAX_SUPPORT,
    PRECISION_BITS,
    DyadicLaw,
    chain_ratio,
    clamped_output_counts,
    exp_below,
    float_ratio_below,
    geometric_noise_law,
)

__all__ = ["MIN_REALISED", "BitFlip", "Geometric", "KaryResponse", "Noise", "UnaryFlip"]

#: A noise realises at least this share of its claimed budget (the rest would be wasted privacy).
MIN_REALISED = 0.999
#: Clamp margin of :class:`Geometric`, in units of ``1 / gamma`` (tail mass ``~ e^{-40}``).
CLAMP_UNITS = 40.0
#: Smallest margin accepted where the support limit caps it (tail mass ``~ e^{-20}``).
MIN_CLAMP_UNITS = 20.0
_LOG2 = math.log(2.0)
#: Smallest padded threshold table: one compiled sampler serves every law up to this size.
_MIN_TABLE = 1024


def _proven(threshold: int, bits: int, epsilon: float) -> bool:
    """``(2^bits - T) / T <= e^eps``, decided in rationals against a proven lower bound of
    ``e^eps`` (:func:`~ldptree.mechanisms._exact.exp_below`)."""
    r = exp_below(epsilon)
    return bool((2**bits - threshold) * r.denominator <= threshold * r.numerator)


@functools.lru_cache(maxsize=4096)
def _flip_threshold(epsilon: float, bits: int) -> int:
    """The flip threshold ``T``: the float ``ceil(q 2^bits)`` (``q = 1 / (1 + e^eps)``) where it
    is proven to realise at most ``epsilon`` (:func:`_proven`), else the smallest ``T`` that
    provably does, ``ceil(2^bits / (1 + r))`` for a rational ``r <= e^eps``. Either way the
    realised ratio ``(2^bits - T) / T`` is at most ``e^eps`` in exact arithmetic: rounding only
    lowers the budget."""
    # q = e^-eps / (1 + e^-eps): a large eps cannot overflow
    q = math.exp(-epsilon) / (1.0 + math.exp(-epsilon))
    threshold = max(1, math.ceil(q * 2.0**bits))
    if _proven(threshold, bits, epsilon):
        return threshold
    r = exp_below(epsilon)
    total = 1 << bits
    return max(1, -((-total * r.denominator) // (r.denominator + r.numerator)))


def _flip_epsilon(threshold: int, bits: int) -> float:
    """``log((2^bits - T) / T)`` as ``log1p`` of the exact integer difference over ``T``
    (relative accuracy, also at tiny budgets)."""
    return math.log1p((2**bits - 2 * threshold) / threshold)


def _check_precision(_: object, attribute: attrs.Attribute[int | None], value: int | None) -> None:
    if value not in (None, 16, 32, 64):
        raise ValueError(f"{attribute.name} must be None (automatic), 16, 32 or 64, got {value!r}")


def _to_span(value: Any) -> int:
    return check_int(value, "span", minimum=1)


def _to_k(value: Any) -> int:
    return check_int(value, "k", minimum=1)


class Noise:
    """Marker base of the kit's noises (documentation and ``isinstance`` checks only)."""


@attrs.frozen
class BitFlip(Noise):
    """Randomized response on one bit with an exactly realised flip probability.

    ``epsilon`` is the budget of one bit: ``log((1 - q') / q') <= epsilon`` for the realised
    ``q' = T / 2^bits``. ``precision_bits=None`` takes the smallest of 16, 32, 64 bits that realises
    at least ``MIN_REALISED * epsilon`` (16 bits pack two flips in one 32-bit word).
    """

    epsilon: float = attrs.field(converter=to_epsilon)
    precision_bits: int | None = attrs.field(default=None, validator=_check_precision)

    _input_name = "a bit channel"  # what the channel's input check calls it

    def __attrs_post_init__(self) -> None:
        if _flip_threshold(self.epsilon, self.bits) >= 2 ** (self.bits - 1):
            raise ValueError(
                f"a bit budget of {self.epsilon:.3g} is too small to realise a flip probability "
                f"below 1/2 with {self.bits}-bit uniforms; raise epsilon or precision_bits"
            )

    @property
    def bits(self) -> int:
        """Width of the uniform integers compared with the threshold."""
        if self.precision_bits is not None:
            return self.precision_bits
        for bits in (16, 32, 64):
            t = _flip_threshold(self.epsilon, bits)
            if t < 2 ** (bits - 1) and _flip_epsilon(t, bits) >= MIN_REALISED * self.epsilon:
                return bits
        return 64

    @property
    def threshold(self) -> int:
        """``T = ceil(q 2^bits)``: a flip happens when the uniform integer is below ``T``."""
        return _flip_threshold(self.epsilon, self.bits)

    @property
    def flip_prob(self) -> float:
        """Realised ``q' = T / 2^bits``."""
        return self.threshold / 2.0**self.bits

    @property
    def realised_epsilon(self) -> float:
        """``log((2^bits - T) / T)``: the budget one bit really spends (``<= epsilon``)."""
        return _flip_epsilon(self.threshold, self.bits)

    # -- the law ---------------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[int, ...]:
        return (0, 1)

    @property
    def max_abs_output(self) -> int:
        return 1

    def log_probs(self, a: int) -> FloatArray:
        """``[log P(0 | a), log P(1 | a)]`` from the integer threshold."""
        total, t = 2**self.bits, self.threshold
        keep, flip = math.log(total - t) - self.bits * _LOG2, math.log(t) - self.bits * _LOG2
        return np.array([keep, flip] if a == 0 else [flip, keep])

    def counts(self, a: int) -> tuple[int, int]:
        """``(count of output 0, count of output 1)`` out of ``2^bits`` for input ``a``."""
        keep, flip = 2**self.bits - self.threshold, self.threshold
        return (keep, flip) if a == 0 else (flip, keep)

    def channel(self) -> FiniteChannel:
        def log_probs(a: Any) -> FloatArray:
            if a not in (0, 1):
                raise ValueError(f"{self._input_name}'s input must be 0 or 1, got {a!r}")
            return self.log_probs(int(a))

        return FiniteChannel(
            outputs=(0, 1), log_probs=log_probs, counts=self.counts, total=2**self.bits
        )

    def mean(self, a: int) -> float:
        """``E[out | a] = q' + (1 - 2 q') a``."""
        q = self.flip_prob
        return q + (1.0 - 2.0 * q) * a

    @property
    def offset(self) -> float:
        """``q'``: ``E[out | a] = offset + slope a`` exactly."""
        return self.flip_prob

    @property
    def slope(self) -> float:
        return 1.0 - 2.0 * self.flip_prob

    def variance(self, a: int) -> float:
        q = self.flip_prob
        return q * (1.0 - q)

    # -- the sampler -----------------------------------------------------------------------------
    def words(self, n_coords: int) -> int:
        """32-bit words one holder consumes for ``n_coords`` flips."""
        if self.bits == 16:
            return -(-n_coords // 2)
        return n_coords * (self.bits // 32)

    @property
    def static(self) -> tuple[Any, ...]:
        return ("bits", self.bits)

    def constants(self) -> tuple[Any, ...]:
        t = self.threshold
        if self.bits == 64:
            return (np.uint32(t >> 32), np.uint32(t & 0xFFFFFFFF))
        return (np.uint32(t),)


@attrs.frozen
class UnaryFlip(BitFlip):
    """The bit of optimized unary encoding: an input 1 is released as 1 with probability exactly
    ``1/2``; an input 0 is released as 1 with probability ``q' = T / 2^bits``, the threshold of
    :class:`BitFlip` (``T = ceil(2^bits / (1 + e^eps))``, rounded up).

    ``epsilon`` is the budget of a *pair* of coordinates that swap inputs (a one-hot 1 moving to
    another coordinate): the worst output (1 where the 1 was, 0 where it went) has ratio
    ``(1/2) / q' * (1 - q') / (1/2) = (1 - q') / q' <= e^eps``, the same realised budget as
    :class:`BitFlip`'s bit (:attr:`realised_epsilon`). One coordinate alone costs
    ``max(log(1 / (2 q')), log(2 (1 - q')))``, less. Both probabilities are integer thresholds
    compared with the same uniform integer, so the law is exact.

    ``E[out | a] = q' + (1/2 - q') a`` (``offset = q'``, ``slope = 1/2 - q'``), variance ``1/4``
    for ``a = 1`` and ``q' (1 - q')`` for ``a = 0``.
    """

    _input_name = "a unary bit"

    @property
    def keep_one(self) -> int:
        """``2^(bits - 1)``: an input 1 is released as 1 when the uniform integer is below it."""
        return 1 << (self.bits - 1)

    def log_probs(self, a: int) -> FloatArray:
        """``[log P(0 | a), log P(1 | a)]`` from the integer thresholds."""
        if a == 1:
            return np.array([-_LOG2, -_LOG2])
        total, t = 2**self.bits, self.threshold
        return np.array([math.log(total - t), math.log(t)]) - self.bits * _LOG2

    def counts(self, a: int) -> tuple[int, int]:
        """``(count of output 0, count of output 1)`` out of ``2^bits`` for input ``a``."""
        if a == 1:
            return (self.keep_one, self.keep_one)
        return (2**self.bits - self.threshold, self.threshold)

    def mean(self, a: int) -> float:
        return self.offset + self.slope * a

    @property
    def slope(self) -> float:
        return 0.5 - self.flip_prob

    def variance(self, a: int) -> float:
        q = self.flip_prob
        return 0.25 if a == 1 else q * (1.0 - q)

    @property
    def indicator_variance(self) -> float:
        """Variance one holder adds to a debiased indicator ``(out - q') / (1/2 - q')``, at worst
        (input 1): ``1 / (4 (1/2 - q')^2)``."""
        return 0.25 / self.slope**2

    @property
    def static(self) -> tuple[Any, ...]:
        return ("bits", self.bits, "unary")

    def constants(self) -> tuple[Any, ...]:
        t, one = self.threshold, self.keep_one
        if self.bits == 64:
            halves = (t >> 32, t & 0xFFFFFFFF, one >> 32, one & 0xFFFFFFFF)
            return tuple(np.uint32(v) for v in halves)
        return (np.uint32(t), np.uint32(one))


#: The geometric law is built for ``gamma (1 - SLACK)`` so that its certified ratio, whose
#: logarithms are rounded up, stays at or below the claim.
SLACK = 1e-9


@functools.lru_cache(maxsize=256)
def _geometric(gamma: float, span: int, margin: int) -> tuple[DyadicLaw, float]:
    law = geometric_noise_law(gamma * (1.0 - SLACK), span, margin)
    return law, chain_ratio(law, span, margin)


def _margin(gamma: float, span: int) -> int:
    margin = max(2, math.ceil(CLAMP_UNITS / gamma))
    return min(margin, (MAX_SUPPORT - 1) // 2 - span)


@attrs.frozen
class Geometric(Noise):
    """``clamp(a + Z, -margin, span + margin)`` for integer ``a in {0, ..., span}``.

    ``epsilon`` is the budget of moving the input across the whole span: the noise is calibrated to
    ``gamma = epsilon / span`` per unit, ``Z`` has ``P(z) ~ e^{-gamma |z|}`` (variance about
    ``2 e^{-gamma} / (1 - e^{-gamma})^2``, i.e. ``2 / gamma^2`` for small ``gamma``: the discrete
    Laplace law of scale ``span / epsilon``), and the clamp margin is ``CLAMP_UNITS / gamma`` units,
    so the clamp moves the mean by less than :attr:`max_bias` (computed exactly from the counts).
    Where ``2^20`` support values cannot hold that margin, it is capped, down to
    ``MIN_CLAMP_UNITS / gamma``; smaller ``gamma`` is refused.
    """

    epsilon: float = attrs.field(converter=to_epsilon)
    span: int = attrs.field(default=1, converter=_to_span)

    def __attrs_post_init__(self) -> None:
        if not self.gamma >= 2.0**-30:
            raise ValueError(
                f"epsilon / span = {self.gamma:.3g} is too small for a 64-bit geometric law; "
                "raise epsilon or lower span"
            )
        if self.margin < MIN_CLAMP_UNITS / self.gamma:
            raise ValueError(
                f"epsilon / span = {self.gamma:.3g} needs a support wider than {MAX_SUPPORT} "
                "values; raise epsilon or lower span"
            )

    @property
    def gamma(self) -> float:
        """Calibrated per-unit budget ``epsilon / span``."""
        return self.epsilon / self.span

    @property
    def margin(self) -> int:
        return _margin(self.gamma, self.span)

    @property
    def law(self) -> DyadicLaw:
        """The noise ``Z`` on ``[-(span + margin), span + margin]`` (integer counts)."""
        return _geometric(self.gamma, self.span, self.margin)[0]

    @property
    def per_unit(self) -> float:
        """Certified ``g``: ``P(out | a) <= e^{g |a - b|} P(out | b)`` for the realised counts."""
        return _geometric(self.gamma, self.span, self.margin)[1]

    @property
    def realised_epsilon(self) -> float:
        """``g span``: the budget the coordinate really spends over the whole span."""
        return self.per_unit * self.span

    # -- the law ---------------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[int, ...]:
        return tuple(range(self.span + 1))

    @property
    def outputs(self) -> tuple[int, ...]:
        return tuple(range(-self.margin, self.span + self.margin + 1))

    @property
    def max_abs_output(self) -> int:
        return self.span + self.margin

    def counts(self, a: int) -> tuple[int, ...]:
        """Exact integer counts (out of ``2^64``) of every output for input ``a``."""
        return _output_counts(self, int(a))

    def log_probs(self, a: int) -> FloatArray:
        """``log(counts) - 64 log 2``; each count is converted to float64 first (relative error
        ``2^-53``, so each log-probability is within ``3e-16`` of the exact value)."""
        return _log_probs(self, int(a))

    def channel(self) -> FiniteChannel:
        def checked(a: Any) -> int:
            if a not in range(self.span + 1):
                raise ValueError(f"a geometric input must be an integer in [0, {self.span}]")
            return int(a)

        return FiniteChannel(
            outputs=self.outputs,
            log_probs=lambda a: self.log_probs(checked(a)),
            counts=lambda a: self.counts(checked(a)),
            total=1 << PRECISION_BITS,
        )

    def mean(self, a: int) -> float:
        """``E[out | a]`` computed exactly from the counts (``a`` up to :attr:`max_bias`)."""
        return float(_moments(self, int(a))[0])

    def variance(self, a: int) -> float:
        m1, m2 = _moments(self, int(a))
        return float(m2 - m1 * m1)

    @property
    def offset(self) -> float:
        """``E[out | a] = offset + slope a`` up to :attr:`max_bias` (the noise is symmetric)."""
        return 0.0

    @property
    def slope(self) -> float:
        return 1.0

    @property
    def max_bias(self) -> float:
        """``max_a |E[out | a] - a|``: the clamp's effect on the mean, exact from the counts."""
        return max(abs(self.mean(a) - a) for a in (0, self.span))

    # -- the sampler -----------------------------------------------------------------------------
    def words(self, n_coords: int) -> int:
        return 2 * n_coords

    @property
    def static(self) -> tuple[Any, ...]:
        return ("geometric", bucket(self.law.size - 1, _MIN_TABLE))

    def constants(self) -> tuple[Any, ...]:
        hi, lo = self.law.threshold_words()
        size = bucket(self.law.size - 1, _MIN_TABLE)
        pad = size - hi.shape[0]
        return (
            np.pad(hi, (0, pad), constant_values=np.uint32(0xFFFFFFFF)),
            np.pad(lo, (0, pad), constant_values=np.uint32(0xFFFFFFFF)),
            np.int32(hi.shape[0]),
            np.int32(self.law.first),
            np.int32(-self.margin),
            np.int32(self.span + self.margin),
        )


@functools.lru_cache(maxsize=4096)
def _output_counts(noise: Geometric, a: int) -> tuple[int, ...]:
    if a not in range(noise.span + 1):
        raise ValueError(f"a geometric input must be an integer in [0, {noise.span}], got {a}")
    return clamped_output_counts(noise.law, a, -noise.margin, noise.span + noise.margin)


@functools.lru_cache(maxsize=4096)
def _log_probs(noise: Geometric, a: int) -> FloatArray:
    counts = np.asarray([float(c) for c in noise.counts(a)])
    with np.errstate(divide="ignore"):
        out: FloatArray = np.log(counts) - PRECISION_BITS * _LOG2
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=4096)
def _moments(noise: Geometric, a: int) -> tuple[Fraction, Fraction]:
    counts = noise.counts(a)
    total = 1 << PRECISION_BITS
    m1 = Fraction(sum(c * (k - noise.margin) for k, c in enumerate(counts)), total)
    m2 = Fraction(sum(c * (k - noise.margin) ** 2 for k, c in enumerate(counts)), total)
    return m1, m2


@attrs.frozen
class KaryResponse(Noise):
    """k-ary randomized response on ``{0, ..., k - 1}``: keep the input with probability
    ``T / 2^64``, else report each other value with probability ``m / 2^64`` (module docstring).

    ``E[1{out = j} | a] = offset + slope 1{a = j}`` with ``offset = m / 2^64`` and
    ``slope = (T - m) / 2^64``, exactly.
    """

    epsilon: float = attrs.field(converter=to_epsilon)
    k: int = attrs.field(converter=_to_k)

    def __attrs_post_init__(self) -> None:
        if self.k > MAX_SUPPORT:
            raise ValueError(f"k must be at most {MAX_SUPPORT}, got {self.k}")

    @property
    def other_count(self) -> int:
        """``m = ceil(2^64 / (e^eps + k - 1))``, computed so that ``T / m <= e^eps`` exactly."""
        return _kary_counts(self.epsilon, self.k)[1]

    @property
    def keep_count(self) -> int:
        return _kary_counts(self.epsilon, self.k)[0]

    @property
    def law(self) -> DyadicLaw:
        """The shift ``Z`` on ``{0, ..., k - 1}``."""
        return _kary_law(self.epsilon, self.k)

    @property
    def realised_epsilon(self) -> float:
        """``log(T / m)`` (``0`` when ``k = 1``: a single cell reveals nothing)."""
        if self.k == 1:
            return 0.0
        # log1p of the exact integer gap: log(T) - log(m) loses ~1e-14 to cancellation, twice a
        # tiny budget (2^-48), which would certify a ratio above the claim
        keep, other = self.keep_count, self.other_count
        return math.log1p((keep - other) / other)

    @property
    def offset(self) -> float:
        return math.ldexp(float(self.other_count), -PRECISION_BITS) if self.k > 1 else 0.0

    @property
    def slope(self) -> float:
        if self.k == 1:
            return 1.0
        return math.ldexp(float(self.keep_count - self.other_count), -PRECISION_BITS)

    @property
    def indicator_variance(self) -> float:
        """Variance one holder adds to a debiased count: ``p (1 - p) / slope^2`` at worst, where
        ``p`` is the larger indicator mean (keep)."""
        p = self.offset + self.slope
        q = self.offset
        return max(p * (1 - p), q * (1 - q)) / self.slope**2

    @property
    def inputs(self) -> tuple[int, ...]:
        return tuple(range(self.k))

    @property
    def max_abs_output(self) -> int:
        return self.k - 1

    def words(self, n_coords: int) -> int:
        return 2 * n_coords

    @property
    def static(self) -> tuple[Any, ...]:
        return ("kary", bucket(self.k, 2))

    def constants(self) -> tuple[Any, ...]:
        hi, lo = self.law.threshold_words()
        size = bucket(self.k, 2)
        pad = size - hi.shape[0]
        return (
            np.pad(hi, (0, pad), constant_values=np.uint32(0xFFFFFFFF)),
            np.pad(lo, (0, pad), constant_values=np.uint32(0xFFFFFFFF)),
            np.int32(hi.shape[0]),
            np.int32(self.k),
        )


@functools.lru_cache(maxsize=256)
def _kary_counts(epsilon: float, k: int) -> tuple[int, int]:
    total = 1 << PRECISION_BITS
    if k == 1:
        return total, 0
    # m = ceil(total / (e^eps + k - 1)) with e^eps rounded down to a rational proven below it
    # (float_ratio_below), so m >= total / (e^eps + k - 1) and T = total - (k - 1) m <= e^eps m
    # holds exactly.
    ratio = float_ratio_below(epsilon)
    denominator = ratio + (k - 1)
    m = -((-total * denominator.denominator) // denominator.numerator)
    m = max(m, 1)
    keep = total - (k - 1) * m
    if not keep >= m:
        raise ValueError(f"epsilon={epsilon} is too small to realise k-ary response over {k}")
    return keep, m


@functools.lru_cache(maxsize=64)
def _kary_law(epsilon: float, k: int) -> DyadicLaw:
    keep, m = _kary_counts(epsilon, k)
    return DyadicLaw(first=0, counts=(keep, *([m] * (k - 1))))


class _Search(NamedTuple):
    t_hi: Any
    t_lo: Any
    valid: Any


def search_padded(
    search: _Search, hi: jax.Array, lo: jax.Array, row: jax.Array | None = None
) -> jax.Array:
    """``#{k < valid : C_k <= u}`` for ``u = hi 2^32 + lo`` over padded thresholds.

    A branch-free binary lifting (``log2`` of the padded size steps), every step a gather and a
    lexicographic comparison of 32-bit halves; ``valid`` may be traced, so one program serves
    every table of the same padded size. With ``row`` (integers shaped like ``hi``) the tables are
    ``[rows, size]`` and each draw searches its own row ``C_{row, k}``. The steps are a loop,
    not unrolled: the same comparisons, with about half the program for XLA to compile.
    """
    size = int(search.t_hi.shape[-1])
    top = max(size, 1).bit_length()  # steps 2^top, 2^(top-1), ..., 1
    t_hi, t_lo = jnp.asarray(search.t_hi), jnp.asarray(search.t_lo)  # indexed by traced steps

    def lift(i: jax.Array, count: jax.Array) -> jax.Array:
        probe = count + jnp.left_shift(jnp.int32(1), top - i)
        index = jnp.clip(probe, 1, size) - 1
        if row is None:
            th, tl = t_hi[index], t_lo[index]
        else:
            th, tl = t_hi[row, index], t_lo[row, index]
        below = (th < hi) | ((th == hi) & (tl <= lo))
        return jnp.where((probe <= search.valid) & below, probe, count)

    count: jax.Array = jax.lax.fori_loop(0, top + 1, lift, jnp.zeros(hi.shape, dtype=jnp.int32))
    return count


def _below(bits: int, words: jax.Array, n_coords: int, threshold: Any) -> jax.Array:
    """``u < T`` for one ``bits``-bit uniform integer ``u`` per coordinate (16-bit: two per word;
    64-bit: ``T`` as its high and low 32-bit halves)."""
    if bits == 16:
        w = words[:, : -(-n_coords // 2)]
        low = jnp.uint32(0xFFFF)
        below: jax.Array = jnp.concatenate([(w & low) < threshold[0], (w >> 16) < threshold[0]], 1)
        return below[:, :n_coords]
    if bits == 32:
        below = words[:, :n_coords] < threshold[0]
        return below
    hi, lo = words[:, :n_coords], words[:, n_coords : 2 * n_coords]
    below = (hi < threshold[0]) | ((hi == threshold[0]) & (lo < threshold[1]))
    return below


def sample_noise(static: tuple[Any, ...], consts: Any, words: jax.Array, inputs: jax.Array) -> Any:
    """Outputs ``[n, C]`` of a noise for integer ``inputs [n, C]`` from ``words [n, W]``.

    ``static`` and ``consts`` come from the noise's ``static`` and ``constants()``. Pure
    ``jax.numpy``; the word layout is fixed per noise kind (see :meth:`BitFlip.words`).
    """
    n_coords = inputs.shape[1]
    if static[0] == "bits":
        if static[2:] == ("unary",):  # UnaryFlip: out = 1{u < T_a}, one threshold per input
            per = len(consts) // 2
            zero = _below(static[1], words, n_coords, consts[:per])
            one = _below(static[1], words, n_coords, consts[per:])
            return jnp.where(inputs == 1, one, zero)
        return _below(static[1], words, n_coords, consts) ^ (inputs == 1)
    if static[0] == "matrix":  # MatrixNoise (_channel.py): a row of cumulative counts per input
        t_hi, t_lo, valid = consts
        hi = words[:, :n_coords]
        lo = words[:, n_coords : 2 * n_coords] if static[2] == 64 else jnp.zeros_like(hi)
        return search_padded(_Search(t_hi, t_lo, valid), hi, lo, row=inputs)
    if static[0] == "kary":
        t_hi, t_lo, valid, k = consts
        hi, lo = words[:, :n_coords], words[:, n_coords : 2 * n_coords]
        z = search_padded(_Search(t_hi, t_lo, valid), hi, lo)
        return (inputs + z) % k
    t_hi, t_lo, valid, first, low, high = consts
    hi, lo = words[:, :n_coords], words[:, n_coords : 2 * n_coords]
    z = search_padded(_Search(t_hi, t_lo, valid), hi, lo) + first
    return jnp.clip(inputs + z, low, high)
