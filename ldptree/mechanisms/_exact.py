"""Exact samplers: finite laws with dyadic probabilities, drawn with integer arithmetic only.

A :class:`DyadicLaw` is a law on the integers ``first, first + 1, ..., first + m - 1`` whose
probabilities are ``counts[k] / 2^64`` for non-negative Python integers ``counts`` summing to
exactly ``2^64``. A draw takes one uniform 64-bit integer ``u`` and returns the value whose
cumulative interval ``[C_{k-1}, C_k)`` contains it (``C_k = counts[0] + ... + counts[k]``). Each
value is then drawn with probability *exactly* ``counts[k] / 2^64``: the law the accountant reads
(the integer counts) is the law the sampler realises, with no floating point on the holder's side
of the argument. This is what makes a certificate true of the code that runs: textbook
floating-point noise (``y + b * laplace()``) has a support that depends on ``y`` and leaks it
(Mironov, CCS 2012); a dyadic law on a fixed integer support cannot.

Two samplers read the same thresholds: :meth:`DyadicLaw.sample_uniform` (NumPy ``uint64``, for
host-side releases and for holders drawing from the operating system's CSPRNG) and
:func:`search_words` (pure ``jax.numpy`` on two ``uint32`` words per draw, jittable and
vectorisable, for the simulated holders). Both return the same value for the same 64 bits.

:func:`geometric_noise_law` builds the noise of the label and count releases: a symmetric
two-sided geometric ("discrete Laplace") law whose integer counts are rounded so that the
privacy bound holds *exactly* for the realised counts (module note below, and
:func:`chain_ratio`, which re-derives the bound from the counts).
"""

from __future__ import annotations

import decimal
import functools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import FloatArray

__all__ = [
    "PRECISION_BITS",
    "DyadicLaw",
    "chain_ratio",
    "clamped_output_counts",
    "dyadic_law",
    "geometric_noise_law",
    "search_words",
]

#: Every probability is a multiple of ``2^-PRECISION_BITS``; a draw consumes that many bits.
PRECISION_BITS = 64
_TOTAL = 1 << PRECISION_BITS
_MASK32 = (1 << 32) - 1
#: Largest support handled (a binary search of at most 20 steps; far above any built-in's need).
MAX_SUPPORT = 1 << 20


def _to_counts(values: Any) -> tuple[int, ...]:
    return tuple(int(v) for v in values)


@attrs.frozen(eq=False)
class DyadicLaw:
    """A finite law on ``first, ..., first + m - 1`` with ``P(first + k) = counts[k] / 2^64``.

    ``counts`` are non-negative integers summing to exactly ``2^64`` (checked). Derived arrays
    (thresholds, probabilities) are computed once at construction; the object is immutable.
    """

    first: int = attrs.field(converter=int)
    counts: tuple[int, ...] = attrs.field(converter=_to_counts)
    _thresholds: np.ndarray[Any, np.dtype[np.uint64]] = attrs.field(init=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if not 1 <= len(self.counts) <= MAX_SUPPORT:
            raise ValueError(
                f"counts must have between 1 and {MAX_SUPPORT} entries, got {len(self.counts)}"
            )
        if min(self.counts) < 0:
            raise ValueError("counts must be non-negative integers")
        total = sum(self.counts)
        if total != _TOTAL:
            raise ValueError(f"counts must sum to 2^{PRECISION_BITS} exactly, got {total}")
        if not (self.first >= -(2**31) and self.first + len(self.counts) <= 2**31):
            raise ValueError("the support must lie within the int32 range")
        cumulative = np.cumsum(np.asarray(self.counts[:-1], dtype=object))
        thresholds = np.asarray(cumulative, dtype=np.uint64)
        thresholds.setflags(write=False)
        object.__setattr__(self, "_thresholds", thresholds)

    # -- the law ---------------------------------------------------------------------------------
    @property
    def size(self) -> int:
        """Number of support points ``m``."""
        return len(self.counts)

    @property
    def values(self) -> np.ndarray[Any, np.dtype[np.int64]]:
        """``int64[m]``: the support ``first, ..., first + m - 1``."""
        return np.arange(self.first, self.first + self.size, dtype=np.int64)

    @property
    def probabilities(self) -> FloatArray:
        """``float64[m]``: ``counts / 2^64`` (each correctly rounded from the exact ratio)."""
        return np.asarray([math.ldexp(float(c), -PRECISION_BITS) for c in self.counts])

    @property
    def log_probabilities(self) -> FloatArray:
        """``float64[m]``: ``log(counts) - 64 log 2`` (``-inf`` for zero counts).

        ``math.log`` of a Python integer is accurate to about one float64 rounding, so these are
        the exact log-probabilities up to a relative ``1e-15``.
        """
        shift = PRECISION_BITS * math.log(2.0)
        return np.asarray([math.log(c) - shift if c else -math.inf for c in self.counts])

    @property
    def mean(self) -> float:
        """``E[X]`` computed exactly from the counts, then rounded to float64."""
        exact = Fraction(sum(c * k for k, c in enumerate(self.counts)), _TOTAL) + self.first
        return float(exact)

    @property
    def variance(self) -> float:
        """``Var[X]`` computed exactly from the counts, then rounded to float64."""
        m1 = Fraction(sum(c * k for k, c in enumerate(self.counts)), _TOTAL)
        m2 = Fraction(sum(c * k * k for k, c in enumerate(self.counts)), _TOTAL)
        return float(m2 - m1 * m1)

    # -- samplers --------------------------------------------------------------------------------
    def thresholds(self) -> np.ndarray[Any, np.dtype[np.uint64]]:
        """``uint64[m - 1]``: the cumulative counts ``C_0, ..., C_{m-2}`` (read-only)."""
        return self._thresholds

    def threshold_words(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """``(hi, lo)``: the thresholds as two ``uint32[m - 1]`` arrays (:func:`search_words`)."""
        t = self._thresholds
        return (t >> np.uint64(32)).astype(np.uint32), (t & np.uint64(_MASK32)).astype(np.uint32)

    def sample_uniform(self, u: Any) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Values for uniform ``uint64`` draws ``u`` (any shape): ``first + #{k : C_k <= u}``."""
        words = np.asarray(u)
        if words.dtype != np.uint64:
            raise TypeError(f"u must be a uint64 array of uniform draws, got dtype {words.dtype}")
        index = np.searchsorted(self._thresholds, words, side="right")
        return index.astype(np.int64) + self.first

    def sample_numpy(self, rng: np.random.Generator, size: Any = None) -> Any:
        """Draws from a NumPy generator (64 uniform bits per draw)."""
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
        u = rng.integers(0, _TOTAL, size=size, dtype=np.uint64)
        return self.sample_uniform(np.asarray(u, dtype=np.uint64))

    def sample_words(self, hi: jax.Array, lo: jax.Array) -> jax.Array:
        """``int32`` values for uniform 32-bit word pairs ``(hi, lo)`` (pure ``jax.numpy``)."""
        t_hi, t_lo = self.threshold_words()
        index = search_words(jnp.asarray(t_hi), jnp.asarray(t_lo), hi, lo)
        values: jax.Array = index + jnp.int32(self.first)
        return values


def search_words(t_hi: jax.Array, t_lo: jax.Array, hi: jax.Array, lo: jax.Array) -> jax.Array:
    """``#{k : C_k <= u}`` for ``u = hi 2^32 + lo`` and thresholds ``C_k = t_hi[k] 2^32 + t_lo[k]``.

    Pure ``jax.numpy`` (the thresholds may be traced arguments): a branch-free binary lifting with
    ``ceil(log2(m))`` steps, each a gather and a lexicographic comparison of 32-bit halves, so it
    jits, vectorises over any shape of ``(hi, lo)`` and never needs 64-bit integers on the device.
    """
    m = int(t_hi.shape[0])
    hi = jnp.asarray(hi, dtype=jnp.uint32)
    lo = jnp.asarray(lo, dtype=jnp.uint32)
    count = jnp.zeros(hi.shape, dtype=jnp.int32)
    step = 1 << max(m, 1).bit_length()
    while step:
        probe = count + step
        index = jnp.clip(probe, 1, max(m, 1)) - 1
        th, tl = t_hi[index], t_lo[index]
        below = (th < hi) | ((th == hi) & (tl <= lo))
        count = jnp.where((probe <= m) & below, probe, count)
        step >>= 1
    return count


# -- constructions -------------------------------------------------------------------------------
def dyadic_law(probabilities: Sequence[float] | FloatArray, first: int = 0) -> DyadicLaw:
    """The dyadic law nearest below ``probabilities``: ``floor(2^64 p_k)``, remainder to the mode.

    For laws whose privacy is computed afterwards *from the realised counts* (e.g. a discrete
    Gaussian whose ``(epsilon, delta)`` is the exact hockey-stick divergence of the realised
    tables). It does not by itself round towards privacy; :func:`geometric_noise_law` does.
    """
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"probabilities must be a non-empty 1-d array, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or (p < 0).any():
        raise ValueError("probabilities must be finite and non-negative")
    if abs(float(p.sum()) - 1.0) > 1e-9:
        raise ValueError(f"probabilities must sum to 1 (within 1e-9), got {float(p.sum())!r}")
    counts = [int(math.ldexp(float(v), PRECISION_BITS)) for v in p]
    mode = int(np.argmax(p))
    counts[mode] += _TOTAL - sum(counts)
    if counts[mode] < 0:
        raise ValueError("probabilities sum above 1 by more than the mode's mass")
    return DyadicLaw(first=first, counts=tuple(counts))


#: Decimal digits of :func:`exp_bounds` (its interval is ``e^x (1 +- 10^-39)``).
EXP_DIGITS = 40
#: :func:`exp_below` reads ``e^x`` for ``x`` at most this (a larger ``x`` gets the bound at it:
#: still below ``e^x``, and far beyond any ratio 64-bit counts can realise).
EXP_CAP = 1000.0


@functools.lru_cache(maxsize=4096)
def exp_bounds(x: float) -> tuple[Fraction, Fraction]:
    """Rationals ``lo <= e^x <= hi``, proven: :meth:`decimal.Decimal.exp` is correctly rounded
    (half-even) at ``EXP_DIGITS`` digits, so the exact value lies within one unit of its last
    digit of the result; ``x`` is converted exactly. The bounds are ``e^x (1 +- ~10^-39)``."""
    if not math.isfinite(x):
        raise ValueError(f"x must be finite, got {x!r}")
    with decimal.localcontext() as ctx:
        ctx.prec = EXP_DIGITS
        ctx.Emax = decimal.MAX_EMAX
        ctx.Emin = decimal.MIN_EMIN
        value = decimal.Decimal(x).exp()
        unit = decimal.Decimal(1).scaleb(value.adjusted() - EXP_DIGITS + 1)
    exact, step = Fraction(value), Fraction(unit)
    return exact - step, exact + step


def exp_below(x: float) -> Fraction:
    """A proven rational lower bound of ``e^x`` (:func:`exp_bounds`, ``x`` capped at
    ``EXP_CAP``)."""
    return exp_bounds(min(float(x), EXP_CAP))[0]


def float_ratio_below(x: float) -> Fraction:
    """A rational ``r <= e^x``: the float ``exp(x)`` moved one ulp down when that is *proven*
    below ``e^x`` (:func:`exp_bounds`; always, with a libm accurate to an ulp), else
    :func:`exp_below`. Keeping the float where it is proven keeps the counts built from it
    unchanged; the proof makes "rounding only lowers the budget" hold whatever the libm."""
    if x >= 700.0:
        return exp_below(x)
    r = Fraction(math.nextafter(math.exp(x), 0.0))
    lower = exp_below(x)
    return r if r <= lower else lower


def _ratio_upper(gamma: float) -> Fraction:
    """A rational ``r_up >= e^{-gamma}`` and ``< 1``: the float ``exp`` moved up two ulps where
    that is proven above ``e^{-gamma}`` (:func:`exp_bounds`), else the proven upper bound."""
    r = math.nextafter(math.nextafter(math.exp(-gamma), 1.0), 1.0)
    if not r < 1.0:
        raise ValueError(f"gamma={gamma!r} is too small to represent e^-gamma below 1")
    # e^-gamma <= e^-min(gamma, 800): the bound at 800 is cheap and already below any float r
    upper = exp_bounds(-min(float(gamma), 800.0))[1]
    return Fraction(r) if Fraction(r) >= upper else upper


def _half_sequence(q0: int, r: Fraction, length: int) -> list[int]:
    """``Q(0) = q0`` and ``Q(k) = ceil(Q(k-1) r)`` for ``k < length``."""
    out = [q0]
    num = r.numerator
    shift = r.denominator.bit_length() - 1
    dyadic = r.denominator == 1 << shift
    last = q0
    for _ in range(length - 1):
        last = -((-last * num) >> shift) if dyadic else -((-last * num) // r.denominator)
        out.append(last)
    return out


def _lump(last: int, r: Fraction) -> int:
    """Smallest end mass with ``lump >= last r / (1 - r)`` (the tail the clamp collects)."""
    tail = Fraction(last) * r / (1 - r)
    return -((-tail.numerator) // tail.denominator)


def _total(q0: int, r: Fraction, t: int) -> int:
    half = _half_sequence(q0, r, t)
    return half[0] + 2 * sum(half[1:]) + 2 * _lump(half[-1], r)


@functools.lru_cache(maxsize=512)
def geometric_noise_law(gamma: float, span: int, margin: int) -> DyadicLaw:
    """Symmetric integer noise ``Z`` on ``[-T, T]``, ``T = span + margin``, for a clamped release.

    Intended use: an integer input ``a in {0, ..., span}`` is released as
    ``clamp(a + Z, -margin, span + margin)``. The counts ``Q`` are built so that this release has
    log-likelihood ratio at most ``gamma |a - b|`` between any inputs ``a, b``, *exactly* for the
    realised counts:

    * ``Q(k) = ceil(Q(k - 1) r)`` with a rational ``r >= e^{-gamma}``, so that
      ``Q(k - 1) / Q(k) <= e^{gamma}`` for ``0 < k < T`` and ``Q(-k) = Q(k)``: interior outputs
      (never reached through ``|Z| = T``) have ratio ``<= e^{gamma}`` per unit shift;
    * the end masses ``Q(+-T) >= Q(T - 1) r / (1 - r)``, so that by induction every tail sum
      ``S_k = sum_{z >= k} Q(z)`` satisfies ``S_k >= Q(k - 1) r / (1 - r)`` and the clamped end
      outputs, whose probabilities are tail sums, have ratio ``S_{k-1} / S_k <= 1 / r``;
    * ``Q(0)`` is the largest integer for which the counts fit in ``2^64``; the remainder (a few
      counts) is added to the end masses, which can only lower the tail ratios.

    The law approximates the two-sided geometric law with ``P(z) ~ e^{-gamma |z|}``
    (variance ``~ 2 e^{-gamma} / (1 - e^{-gamma})^2``); choose ``margin`` so that ``e^{-gamma
    margin}`` is negligible (the clamp then biases the release by at most that mass times the
    span). ``gamma`` must be at least ``2^-40`` and ``gamma * PRECISION_BITS``-bit counts resolve
    ratios up to about ``e^{40}`` per step; :func:`chain_ratio` reports the realised bound.
    """
    if not (isinstance(gamma, float | int) and math.isfinite(gamma) and gamma >= 2.0**-40):
        raise ValueError(f"gamma must be a finite number >= 2^-40, got {gamma!r}")
    span, margin = int(span), int(margin)
    if span < 1 or margin < 1:
        raise ValueError(f"span and margin must be >= 1, got span={span}, margin={margin}")
    t = span + margin
    if 2 * t + 1 > MAX_SUPPORT:
        raise ValueError(f"support 2 * (span + margin) + 1 = {2 * t + 1} exceeds {MAX_SUPPORT}")
    r = _ratio_upper(float(gamma))
    # Largest q0 whose counts fit: the total is non-decreasing in q0; bisect from a float guess.
    # The total grows by about (1 + r) / (1 - r) per unit of q0 and each ceiling adds less than
    # one count per term, so the float guess is within a few multiples of t: bracket it tightly.
    guess = int(_TOTAL * (1.0 - float(r)) / (1.0 + float(r)))
    slack = 4 * t + 64
    lo, hi = max(1, guess - slack), guess + slack
    while lo > 1 and _total(lo, r, t) > _TOTAL:
        lo = max(1, lo - 2 * (hi - lo))
    while _total(hi, r, t) <= _TOTAL:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _total(mid, r, t) <= _TOTAL:
            lo = mid
        else:
            hi = mid
    half = _half_sequence(lo, r, t)
    end = _lump(half[-1], r)
    remainder = _TOTAL - (half[0] + 2 * sum(half[1:]) + 2 * end)
    low_end, high_end = end + remainder // 2, end + remainder - remainder // 2
    counts = [low_end, *reversed(half[1:]), *half, high_end]
    return DyadicLaw(first=-t, counts=tuple(counts))


def clamped_output_counts(noise: DyadicLaw, a: int, low: int, high: int) -> tuple[int, ...]:
    """Integer counts of ``clamp(a + Z, low, high)`` over ``low .. high`` (out of ``2^64``).

    The exact law of the released code for input ``a``: interior codes take ``Q(code - a)``, the
    two end codes collect the tails. Requires the noise support to cover the clamp range.
    """
    a, low, high = int(a), int(low), int(high)
    first, last = noise.first + a, noise.first + noise.size - 1 + a
    if not (first <= low and high <= last and low < high):
        raise ValueError(
            f"noise support [{first}, {last}] around a={a} must cover the clamp [{low}, {high}]"
        )
    counts = noise.counts
    lo_idx, hi_idx = low - first, high - first
    out = [sum(counts[: lo_idx + 1]), *counts[lo_idx + 1 : hi_idx], sum(counts[hi_idx:])]
    return tuple(out)


def _max_log_ratio(p0: Any, p1: Any) -> float:
    """``max |log(p0 / p1)|`` over integer arrays (object dtype), rounded up.

    Computed as ``log1p((p0 - p1) / p1)`` with the difference exact in integers, so the result
    has a small *relative* error (a few ulps); ``1e-14`` relative covers it. ``inf`` when one side
    is zero and the other is not.
    """
    zero0, zero1 = p0 == 0, p1 == 0
    if (zero0 != zero1).any():
        return math.inf
    keep = ~(zero0 & zero1)
    if not keep.any():
        return 0.0
    a, b = p0[keep], p1[keep]
    up = np.asarray([float(x) for x in (a - b)]) / np.asarray([float(x) for x in b])
    down = np.asarray([float(x) for x in (b - a)]) / np.asarray([float(x) for x in a])
    with np.errstate(divide="ignore"):  # log1p(-1) = -inf where one side is tiny: never the max
        worst = max(float(np.log1p(up).max()), float(np.log1p(down).max()))
    return worst * (1.0 + 1e-14) + 1e-300


def chain_ratio(noise: DyadicLaw, span: int, margin: int) -> float:
    """Certified per-unit bound ``g`` with ``P(c | a) <= e^{g |a - b|} P(c | b)`` for the release
    ``clamp(a + Z, -margin, span + margin)``, ``a, b in {0, ..., span}``, read off the counts.

    ``g`` is the largest of: ``log Q(z) / Q(z')`` over adjacent noise values ``z, z'`` that reach
    interior codes, and ``log S / S'`` over adjacent tail sums that reach the two end codes (exact
    integer ratios, logarithms rounded up: :func:`_max_log_ratio`). A shift by ``|a - b|`` units
    is a chain of unit shifts, so ``g |a - b|`` bounds every output's ratio. Returns ``inf`` if
    some reachable output has probability zero under one input and not the other.
    """
    span, margin = int(span), int(margin)
    q = np.asarray(noise.counts, dtype=object)
    offset = -noise.first  # index of z = 0
    # Interior codes c in (-margin, span + margin) are reached by z = c - a with a in [0, span]:
    # z ranges over (-margin - span, span + margin); unit shifts compare z and z + 1 there.
    inner = q[-margin - span + 1 + offset : span + margin - 1 + offset + 1]
    worst = _max_log_ratio(inner[:-1], inner[1:])
    # End codes: P(top | a) = S(span + margin - a), P(bottom | a) = S'(-margin - a).
    suffix = np.cumsum(q[::-1])[::-1]  # suffix[i] = sum q[i:]
    prefix = np.cumsum(q)  # prefix[i] = sum q[: i + 1]
    a = np.arange(span)
    top = _max_log_ratio(suffix[span + margin - a + offset], suffix[span + margin - a - 1 + offset])
    bottom = _max_log_ratio(prefix[-margin - a + offset], prefix[-margin - a - 1 + offset])
    return max(worst, top, bottom)
