"""Discrete Gaussian noise on an integer grid, drawn exactly, and its realised ``(eps, delta)``.

**The law.** :func:`discrete_gaussian_law` tabulates ``w(z) = exp(-z^2 / (2 sigma^2))`` on
``|z| <= L``, normalises and rounds it to a :class:`~ldptree.mechanisms._exact.DyadicLaw`
(``floor(2^64 p)``, remainder to the mode ``z = 0``). ``L`` is the largest width whose end counts
are still at least ``2^b`` with ``2^b >= max(2^14, 16 sigma^2)``: large enough that the floor
rounding (relative error ``< 2^-b``) cannot break the discrete log-concavity of the Gaussian
(``w(z)^2 / (w(z-1) w(z+1)) = e^{1/sigma^2}``). What is sampled is the table; everything below is
computed from its integer counts ``c``.

**The release and its worst case.** A vector ``a in {0, ..., N}^n`` (integer codes) is released as
``a + Z`` with independent coordinates ``Z_j`` drawn from tables ``c_j``. For one coordinate the
pair of output laws at codes ``a, a'`` is, up to a shift of the output, ``(c, c(. - s))`` with
``s = a' - a``. If ``c`` is symmetric and log-concave (both checked exactly on the integers), the
family ``c(. - s)`` has a monotone likelihood ratio, so the most powerful tests between shifts are
threshold tests, and a threshold test's type-II error ``P(Z < t - s)`` only falls as ``|s|``
grows: the trade-off curve of shift ``s`` lies above that of shift ``N`` for ``|s| <= N``, i.e. the
pair at shift ``s`` is a garbling (post-processing) of the pair at shift ``N``. Garblings compose
over independent coordinates, so **the worst pair of inputs is every coordinate shifted by N**, and
``(eps, delta)`` for that product bounds every pair.

**The hockey stick of the product.** ``delta(eps) = sum_o (P(o) - e^eps Q(o))_+`` with ``P`` the
product of ``c_j`` and ``Q`` of ``c_j(. - N)``. Write the realised loss of one coordinate as
``l(z) = log c(z) - log c(z - N) = (N^2 - 2 N z) / (2 sigma^2) + e(z)``: linear in ``z`` (the
ideal Gaussian's loss) plus a rounding residue ``e``. For a count floor ``2^k`` let ``G_k`` be the
outputs where both counts are at least ``2^k`` and ``eta_k = max_{G_k} e`` (computed from the
counts, rounded up). Then on outputs with every coordinate in ``G_k`` the total loss is at most
``sum_j eta_k + N^2 / (2 sigma_j^2) - (N / sigma_j^2) z_j``, a linear function of the per-group sums
``S_g = sum_{j in g} z_j``, whose law is the convolution power of ``c`` restricted to ``G_k``; the
other outputs contribute at most their ``P``-mass ``1 - prod_j (1 - m_j)``. Since ``(1 - e^{eps -
l})_+`` increases with ``l``,

    delta(eps) <= 1 - prod_j (1 - m_j) + sum_S P(S) (1 - exp(eps - L_bound(S)))_+,

for every ``k``; a few ``k`` are tried and the smallest bound (or, given a claim, the first one
within it) is reported.

**Sums of tables.** One 64-bit table spans about ``+- 8`` standard deviations. When a coordinate's
worst shift is several standard deviations (very weak privacy), or very many coordinates must
keep the outputs that are impossible under the other input below a small ``delta``, that width
binds. A :class:`DiscreteGaussianGroup` with ``parts > 1`` adds ``parts`` independent tables of
scale ``sigma / sqrt(parts)``: symmetric and log-concave again (a convolution of log-concave
sequences is log-concave, so the worst-pair argument holds), reaching ``sqrt(parts)`` times
further in standard deviations. Its law is the convolution of the tables in float64 (non-negative
sums, relative error below ``1e-13``, covered by the residue's slack), and lower count floors
(down to ``2^-214``) are tried for it. Every term is a sum of non-negative
floats (relative rounding error far below the ``1e-9`` slack of a certificate's ``holds``); the
convolution powers are direct sums unless one step would exceed ``5e7`` multiply-adds (hundreds
of coordinates), where they use the FFT, whose error (about ``1e-16`` of the largest entry per
entry) is then the one approximation in the bound. By
the symmetry of ``c`` the reverse direction (``Q`` against ``P``) is the same pair reflected.
At most two distinct tables (groups of coordinates) are supported.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import attrs
import numpy as np
import scipy.signal

from ldptree._typing import FloatArray
from ldptree.mechanisms._exact import MAX_SUPPORT, PRECISION_BITS, DyadicLaw, dyadic_law

__all__ = [
    "DiscreteGaussianGroup",
    "discrete_gaussian_law",
    "is_symmetric_log_concave",
    "product_delta",
]

#: Smallest end count of a table is at least ``2^MIN_COUNT_BITS`` (and ``16 sigma^2``).
MIN_COUNT_BITS = 14
#: Count floors ``2^k`` tried for the region where the loss is bounded linearly.
_FLOOR_BITS = (14, 26, 38, 50)
#: Further floors (``2^-214 .. 2^-64``) for sums of several tables, tried after the others.
_DEEP_FLOOR_BITS = (-150, -100, -64, -32, 0)


def _count_bits(sigma: float) -> int:
    return max(MIN_COUNT_BITS, math.ceil(math.log2(16.0 * sigma * sigma)))


@functools.lru_cache(maxsize=64)
def discrete_gaussian_law(sigma: float) -> DyadicLaw:
    """The realised discrete Gaussian table of scale ``sigma`` (module docstring).

    ``P(z) = c(z) / 2^64`` on ``-L .. L`` with ``c`` the dyadic rounding of ``exp(-z^2 / (2
    sigma^2))`` normalised on that range; ``L`` keeps every count above ``2^b`` (module note).
    """
    if not (isinstance(sigma, float | int) and math.isfinite(sigma) and 0.25 <= sigma <= 2**14):
        raise ValueError(f"sigma must be a finite number in [0.25, 2^14], got {sigma!r}")
    sigma = float(sigma)
    bits = _count_bits(sigma)
    norm = math.sqrt(2.0 * math.pi) * sigma + 1.0  # >= the sum of w over the integers
    # w(z) / norm >= 2^(bits - 64) <=> z^2 <= 2 sigma^2 ((64 - bits) ln 2 - ln norm)
    room = (PRECISION_BITS - bits - 1) * math.log(2.0) - math.log(norm)
    if room <= 0.0:
        raise ValueError(f"sigma={sigma!r} is too large for {PRECISION_BITS}-bit counts")
    width = math.floor(sigma * math.sqrt(2.0 * room))
    if 2 * width + 1 > MAX_SUPPORT:
        raise ValueError(f"sigma={sigma!r} needs {2 * width + 1} support points")
    z = np.arange(-width, width + 1, dtype=np.float64)
    w = np.exp(-(z * z) / (2.0 * sigma * sigma))
    return dyadic_law(w / w.sum(), first=-width)


def is_symmetric_log_concave(law: DyadicLaw) -> bool:
    """Exact integer check: ``c(z) = c(-z)``, all counts positive, ``c_k^2 >= c_{k-1} c_{k+1}``."""
    c = law.counts
    if law.first != -(law.size // 2) or law.size % 2 == 0 or min(c) <= 0:
        return False
    if any(c[i] != c[-1 - i] for i in range(law.size // 2)):
        return False
    return all(c[i] * c[i] >= c[i - 1] * c[i + 1] for i in range(1, law.size - 1))


@attrs.frozen
class DiscreteGaussianGroup:
    """``count`` coordinates sharing the noise of scale ``sigma``; worst shift ``shift``.

    The noise of each coordinate is the sum of ``parts`` independent tables of scale
    ``sigma / sqrt(parts)`` (``parts = 1``: one table). A sum spans ``parts`` times one table's
    width in ``sqrt(parts)`` times its standard deviation, so it reaches further into the tails
    (module note on weak privacy); it is symmetric and log-concave when each table is (the
    convolution of log-concave sequences is log-concave).
    """

    sigma: float = attrs.field(converter=float)
    count: int = attrs.field(converter=int)
    shift: int = attrs.field(converter=int)
    parts: int = attrs.field(default=1, converter=int)

    def __attrs_post_init__(self) -> None:
        if not 1 <= self.parts <= 16:
            raise ValueError(f"parts must lie in 1..16, got {self.parts}")

    @property
    def law(self) -> DyadicLaw:
        """The realised table of one part (cached), scale ``sigma / sqrt(parts)``."""
        return discrete_gaussian_law(self.sigma / math.sqrt(self.parts))

    def pmf(self) -> tuple[int, FloatArray]:
        """``(first, p)``: the law of the sum of the parts, ``p[i] = P(first + i)`` (float64:
        exact dyadic values for one part; non-negative convolution sums for several, relative
        error below ``1e-13``)."""
        law = self.law
        one = np.asarray([math.ldexp(float(c), -PRECISION_BITS) for c in law.counts])
        return self.parts * law.first, _power(one, self.parts)


#: Above this many multiply-adds a convolution uses the FFT (module note on its error).
_DIRECT_WORK = 50_000_000


def _convolve(a: FloatArray, b: FloatArray) -> FloatArray:
    if a.shape[0] * b.shape[0] <= _DIRECT_WORK:
        return np.convolve(a, b)
    out: FloatArray = np.maximum(scipy.signal.fftconvolve(a, b), 0.0)
    return out


def _power(pmf: FloatArray, n: int) -> FloatArray:
    """``pmf`` convolved with itself ``n`` times (by squaring)."""
    out = np.ones(1)
    base = pmf
    while n:
        if n & 1:
            out = _convolve(out, base)
        n >>= 1
        if n:
            base = _convolve(base, base)
    return out


@attrs.frozen
class _GroupLoss:
    """Law of the linear loss bound of one group on its good region: ``L(S) = offset - slope S``
    with ``S`` the group sum (``pmf`` over ``S = first, first + 1, ...``); ``bad`` the P-mass off
    the good region of one coordinate."""

    pmf: FloatArray
    first: int
    slope: float
    offset: float
    log_good: float  # count * log1p(-bad)

    def loss(self) -> FloatArray:
        s = self.first + np.arange(self.pmf.shape[0], dtype=np.float64)
        out: FloatArray = self.offset - self.slope * s
        return out


@functools.lru_cache(maxsize=256)
def _group_loss(group: DiscreteGaussianGroup, floor_bits: int) -> _GroupLoss | None:
    n, shift = group.count, group.shift
    if n == 0 or shift == 0:
        return _GroupLoss(np.ones(1), 0, 0.0, 0.0, 0.0)
    first, p = group.pmf()
    floor = math.ldexp(1.0, floor_bits - PRECISION_BITS)
    sigma2 = group.sigma * group.sigma
    # outputs z = first + i with P(z) = p[i] and Q(z) = P(z - shift) = p[i - shift]
    index = np.arange(shift, p.shape[0])
    good = index[(p[shift:] >= floor) & (p[:-shift] >= floor)]
    if good.shape[0] == 0 or good[-1] - good[0] + 1 != good.shape[0]:
        return None  # empty, or not contiguous: the table is not log-concave
    lo, hi = int(good[0]), int(good[-1])
    z = first + good.astype(np.float64)
    residue = (
        np.log(p[good])
        - np.log(p[good - shift])
        - (shift * shift - 2.0 * shift * z) / (2.0 * sigma2)
    )
    # float logs (and, for several parts, the convolution's relative 1e-13) rounded up
    worst = float(np.max(residue)) + 1e-12 * (1.0 + float(np.max(np.abs(np.log(p[good])))))
    bad = (float(np.sum(p[:lo])) + float(np.sum(p[hi + 1 :]))) * (1.0 + 1e-12)
    return _GroupLoss(
        pmf=_power(p[lo : hi + 1], n),
        first=n * (first + lo),
        slope=shift / sigma2,
        offset=n * (max(worst, 0.0) + shift * shift / (2.0 * sigma2)),
        log_good=n * math.log1p(-bad) if bad < 1.0 else -math.inf,
    )


def _hockey(a: _GroupLoss, b: _GroupLoss, epsilon: float) -> float:
    """``sum P_a P_b (1 - exp(eps - L_a - L_b))_+``.

    One group (``b`` trivial): a direct sum of non-negative terms ``p (-expm1(eps - L))``. Two
    groups: for each ``S_b``, the terms of ``a`` with ``L_a > t = eps - L_b`` are a prefix (``L_a``
    decreases in ``S_a``), summed as ``P_a(prefix) - e^t sum_prefix p_a e^{-L_a}`` from cumulative
    sums; the difference loses at most a few ulps of its sides, covered by adding 64 ulps of
    both sides (weighted like the terms) to the result.
    """
    la, lb = a.loss(), b.loss()
    if la.shape[0] < lb.shape[0]:
        a, b, la, lb = b, a, lb, la
    if lb.shape[0] == 1:
        excess = la + lb[0] - epsilon
        gain = -np.expm1(-np.maximum(excess, 0.0))
        return float(b.pmf[0] * np.sum(a.pmf * gain))
    with np.errstate(divide="ignore"):
        weights = np.exp(np.log(a.pmf) - la)
    p_cum = np.concatenate([[0.0], np.cumsum(a.pmf)])
    w_cum = np.concatenate([[0.0], np.cumsum(weights)])
    t = epsilon - lb
    count = np.searchsorted(-la, -t, side="left")  # #{i : L_a[i] > t}
    with np.errstate(divide="ignore", over="ignore"):
        paid = np.exp(t + np.log(w_cum[count]))
    inner = p_cum[count] - paid
    # each difference is off by at most a few ulps of its larger side (cumulative sums of
    # non-negative terms, one exp/log): 64 ulps of both sides, weighted like the terms
    allowance = 64.0 * 2.0**-53 * float(np.sum(b.pmf * (p_cum[count] + paid)))
    return float(np.sum(b.pmf * np.maximum(inner, 0.0))) + allowance


def product_delta(
    groups: Sequence[DiscreteGaussianGroup], epsilon: float, *, stop_below: float = 0.0
) -> float:
    """Upper bound on ``delta(eps)`` of the worst pair for the product of the groups' tables.

    The smallest bound over the count floors, tried in turn; with ``stop_below``, the first one
    at or below it is returned (still a valid bound: what a check against a claim needs, at a
    fraction of the cost for many coordinates). Returns ``1.0`` when a table fails the exact
    symmetry/log-concavity check (the worst-pair reduction then does not apply).
    """
    if not 1 <= len(groups) <= 2:
        raise ValueError(f"groups must hold one or two DiscreteGaussianGroup, got {len(groups)}")
    if not all(is_symmetric_log_concave(g.law) for g in groups):
        return 1.0
    best = 1.0
    deep = max(g.parts for g in groups) > 1  # sums reach far below one table's 2^-50
    for bits in _FLOOR_BITS + (_DEEP_FLOOR_BITS if deep else ()):
        losses = [_group_loss(g, bits) for g in groups]
        if any(part is None for part in losses):
            continue
        parts = [p for p in losses if p is not None]
        trivial = _GroupLoss(np.ones(1), 0, 0.0, 0.0, 0.0)
        first, second = parts[0], parts[1] if len(parts) == 2 else trivial
        bad = -math.expm1(first.log_good + second.log_good)
        value = (bad + _hockey(first, second, epsilon)) * (1.0 + 1e-12)
        best = min(best, value)
        if best <= stop_below:
            break
    return min(1.0, best)
