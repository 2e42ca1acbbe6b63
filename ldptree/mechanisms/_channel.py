"""An exact finite channel: any row-stochastic matrix as a kit noise, rounded towards privacy.

:class:`MatrixNoise` releases an integer input ``a in {0, ..., T - 1}`` as an output
``o in {0, ..., O - 1}`` with probability ``P(o | a) = N[a, o] / 2^bits`` for integer counts
``N`` (each row sums to exactly ``2^bits``, ``bits`` 32 or 64). A draw compares one uniform
``bits``-bit integer ``u`` with the row's cumulative counts ``C[a, k] = N[a, 0] + ... + N[a, k]``
and returns ``#{k < O - 1 : C[a, k] <= u}``, so each output is drawn with probability exactly
``N[a, o] / 2^bits``: the law the accountant reads (the integers) is the law that is sampled.

:func:`matrix_noise` builds the counts from a float matrix ``P[a, o]`` whose columns satisfy
``P[a, o] <= e^eps P[b, o]`` (``eps`` the budget of any change of the input), *rounding towards
privacy*: with a rational ``r <= e^eps``,

1. ``N[a, o] = floor(2^bits P[a, o])``;
2. per column, every entry is capped at ``floor(r m_o)`` with ``m_o = min_a N[a, o]``, so every
   ratio in the column is at most ``r``;
3. each row's missing mass (a few counts per column) is added to the row's entries, largest
   ``P`` first, each up to its column's cap: raising an entry to at most ``r m_o`` keeps every
   ratio of the column at most ``r`` (the column minimum can only grow).

The result is then checked from the integers alone (``max_a N[a, o] <= r min_a N[a, o]`` for
every column, exact integer arithmetic), and :attr:`MatrixNoise.realised_epsilon` reports the
largest column log-ratio (rounded up). A column whose smallest entry rounds to zero is emptied
(that output is never released), never left with an infinite ratio.

Moments (:meth:`MatrixNoise.mean`, :meth:`MatrixNoise.variance`) are exact rationals computed
from the counts, with the output index as the value; a mechanism that needs an affine mean
``E[o | a] = offset + slope a`` reads :attr:`MatrixNoise.offset`, :attr:`MatrixNoise.slope`
(the line through the two end inputs' exact means) and :attr:`MatrixNoise.max_bias` (the largest
exact deviation from that line), so its debiasing comes from the realised matrix, not from the
float matrix it was built from.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction
from typing import Any

import attrs
import numpy as np

from ldptree._buckets import bucket
from ldptree._typing import FloatArray
from ldptree._validation import check_int, to_epsilon
from ldptree.accounting._channels import FiniteChannel
from ldptree.mechanisms._exact import _max_log_ratio, float_ratio_below
from ldptree.mechanisms._noise import Noise

__all__ = ["MAX_OUTPUTS", "MatrixNoise", "matrix_noise"]

#: Largest number of outputs (and of inputs) of a :class:`MatrixNoise`.
MAX_OUTPUTS = 4096
_LOG2 = math.log(2.0)


def _to_counts(value: Any) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(int(c) for c in row) for row in value)


def _check_bits(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value not in (32, 64):
        raise ValueError(f"{attribute.name} must be 32 or 64, got {value!r}")


def _ratio_below(epsilon: float) -> Fraction:
    """A rational ``r <= e^epsilon``, proven (:func:`._exact.float_ratio_below`)."""
    return float_ratio_below(epsilon)


@attrs.frozen(eq=False)
class MatrixNoise(Noise):
    """Integer counts ``counts[a][o]`` out of ``2^bits`` (module docstring); build one with
    :func:`matrix_noise` to round a float matrix towards privacy."""

    counts: tuple[tuple[int, ...], ...] = attrs.field(converter=_to_counts)
    bits: int = attrs.field(default=64, validator=_check_bits)

    def __attrs_post_init__(self) -> None:
        rows = len(self.counts)
        widths = {len(row) for row in self.counts}
        if rows < 1 or len(widths) != 1:
            raise ValueError("counts must be a non-empty matrix with rows of equal length")
        width = widths.pop()
        if not (2 <= width <= MAX_OUTPUTS and rows <= MAX_OUTPUTS):
            raise ValueError(
                f"counts must have 1..{MAX_OUTPUTS} rows and 2..{MAX_OUTPUTS} columns, "
                f"got {rows} x {width}"
            )
        for a, row in enumerate(self.counts):
            if min(row) < 0 or sum(row) != 1 << self.bits:
                raise ValueError(
                    f"counts row {a} must be non-negative integers summing to 2^{self.bits}"
                )

    # -- the law ---------------------------------------------------------------------------------
    @property
    def inputs(self) -> tuple[int, ...]:
        return tuple(range(len(self.counts)))

    @property
    def outputs(self) -> tuple[int, ...]:
        return tuple(range(len(self.counts[0])))

    @property
    def max_abs_output(self) -> int:
        return len(self.counts[0]) - 1

    @property
    def realised_epsilon(self) -> float:
        """``max_o log(max_a N[a, o] / min_a N[a, o])`` over the columns, rounded up (``inf`` if a
        column mixes zero and positive counts)."""
        return _realised_epsilon(self)

    def log_probs(self, a: int) -> FloatArray:
        """``log N[a, o] - bits log 2`` for every output (``-inf`` for zero counts)."""
        return _log_probs(self, int(a))

    def channel(self) -> FiniteChannel:
        def log_probs(a: Any) -> FloatArray:
            if a not in self.inputs:
                raise ValueError(
                    f"a matrix noise's input must be an integer in [0, {len(self.inputs) - 1}]"
                )
            return self.log_probs(int(a))

        def counts(a: Any) -> tuple[int, ...]:
            if a not in self.inputs:
                raise ValueError(
                    f"a matrix noise's input must be an integer in [0, {len(self.inputs) - 1}]"
                )
            return self.counts[int(a)]

        return FiniteChannel(
            outputs=self.outputs, log_probs=log_probs, counts=counts, total=1 << self.bits
        )

    def mean(self, a: int) -> float:
        """``E[o | a]``, exact from the counts, rounded to float64."""
        return float(_moments(self, int(a))[0])

    def variance(self, a: int) -> float:
        """``Var[o | a]``, exact from the counts, rounded to float64."""
        m1, m2 = _moments(self, int(a))
        return float(m2 - m1 * m1)

    @property
    def offset(self) -> float:
        """``E[o | 0]``: with :attr:`slope`, the line through the end inputs' exact means."""
        return float(_moments(self, 0)[0])

    @property
    def slope(self) -> float:
        """``(E[o | T - 1] - E[o | 0]) / (T - 1)`` (``1`` for a single input)."""
        last = len(self.counts) - 1
        if last == 0:
            return 1.0
        return float((_moments(self, last)[0] - _moments(self, 0)[0]) / last)

    @property
    def max_bias(self) -> float:
        """``max_a |E[o | a] - offset - slope a|``, exact from the counts: how far the realised
        means are from affine in the input."""
        return _max_bias(self)

    # -- the sampler -----------------------------------------------------------------------------
    def words(self, n_coords: int) -> int:
        return n_coords * (self.bits // 32)

    @property
    def static(self) -> tuple[Any, ...]:
        return ("matrix", bucket(len(self.counts[0]) - 1, 2), self.bits)

    def constants(self) -> tuple[Any, ...]:
        """``(hi, lo, valid)``: the cumulative counts as ``uint32[rows, columns]`` halves (rows and
        columns padded to powers of two; 32-bit laws have ``lo = 0``) and ``O - 1``."""
        return _constants(self)


@functools.lru_cache(maxsize=256)
def _constants(noise: MatrixNoise) -> tuple[Any, ...]:
    width = len(noise.counts[0]) - 1
    rows, cols = bucket(len(noise.counts)), bucket(width, 2)
    hi = np.full((rows, cols), 0xFFFFFFFF, dtype=np.uint32)
    lo = np.full((rows, cols), 0xFFFFFFFF, dtype=np.uint32)
    for a, row in enumerate(noise.counts):
        cumulative = np.cumsum(np.asarray(row[:-1], dtype=object))
        if noise.bits == 64:
            hi[a, :width] = [int(c) >> 32 for c in cumulative]
            lo[a, :width] = [int(c) & 0xFFFFFFFF for c in cumulative]
        else:
            hi[a, :width] = [int(c) for c in cumulative]
            lo[a, :width] = 0
    return (hi, lo, np.int32(width))


@functools.lru_cache(maxsize=256)
def _realised_epsilon(noise: MatrixNoise) -> float:
    table = np.asarray(noise.counts, dtype=object)
    return _max_log_ratio(table.max(axis=0), table.min(axis=0))


@functools.lru_cache(maxsize=4096)
def _log_probs(noise: MatrixNoise, a: int) -> FloatArray:
    if a not in range(len(noise.counts)):
        raise ValueError(f"a matrix noise's input must be in [0, {len(noise.counts) - 1}], got {a}")
    shift = noise.bits * _LOG2
    out = np.asarray([math.log(c) - shift if c else -math.inf for c in noise.counts[a]])
    out.setflags(write=False)
    return out


@functools.lru_cache(maxsize=4096)
def _moments(noise: MatrixNoise, a: int) -> tuple[Fraction, Fraction]:
    row = noise.counts[a]
    total = 1 << noise.bits
    m1 = Fraction(sum(c * o for o, c in enumerate(row)), total)
    m2 = Fraction(sum(c * o * o for o, c in enumerate(row)), total)
    return m1, m2


@functools.lru_cache(maxsize=256)
def _max_bias(noise: MatrixNoise) -> float:
    last = len(noise.counts) - 1
    first = _moments(noise, 0)[0]
    if last == 0:
        return 0.0
    slope = (_moments(noise, last)[0] - first) / last
    return float(max(abs(_moments(noise, a)[0] - first - slope * a) for a in range(last + 1)))


def matrix_noise(probabilities: Any, epsilon: float, *, bits: int = 64) -> MatrixNoise:
    """The exact :class:`MatrixNoise` nearest ``probabilities`` (``[T, O]``, rows summing to one)
    whose every column ratio is at most ``e^epsilon`` *for the realised integer counts* (module
    docstring: floor, cap each column at ``r`` times its minimum, refill each row under the caps).

    Raises ``ValueError`` when ``probabilities`` is not row-stochastic, when a column's float ratio
    already exceeds ``e^epsilon`` (beyond ``1e-9`` relative), or when a row cannot be refilled
    under the caps (``bits`` too small for the matrix).
    """
    eps = to_epsilon(epsilon)
    bits = check_int(bits, "bits", minimum=32)
    if bits not in (32, 64):
        raise ValueError(f"bits must be 32 or 64, got {bits}")
    p = np.asarray(probabilities, dtype=np.float64)
    if p.ndim != 2 or p.shape[0] < 1 or p.shape[1] < 2:
        raise ValueError(f"probabilities must be a [inputs, outputs] matrix, got shape {p.shape}")
    if not np.all(np.isfinite(p)) or (p < 0).any():
        raise ValueError("probabilities must be finite and non-negative")
    if np.abs(p.sum(axis=1) - 1.0).max() > 1e-9:
        raise ValueError("every row of probabilities must sum to 1 (within 1e-9)")
    high, low = p.max(axis=0), p.min(axis=0)
    # e^eps overflows float64 beyond eps ~ 709; no float matrix has a larger column ratio
    ratio = math.exp(min(eps, 700.0))
    if ((low == 0) & (high > 0)).any() or (high > ratio * low * (1 + 1e-9)).any():
        raise ValueError(
            f"probabilities has a column whose ratio exceeds e^epsilon = e^{eps:.6g}; "
            "it cannot be realised at this epsilon"
        )
    return _build(tuple(map(tuple, p.tolist())), eps, bits)


@functools.lru_cache(maxsize=64)
def _build(p: tuple[tuple[float, ...], ...], epsilon: float, bits: int) -> MatrixNoise:
    total = 1 << bits
    ratio = _ratio_below(epsilon)
    counts = [[int(math.ldexp(v, bits)) for v in row] for row in p]
    width = len(counts[0])
    caps = []
    for o in range(width):
        smallest = min(row[o] for row in counts)
        caps.append(smallest * ratio.numerator // ratio.denominator)
    for a, row in enumerate(counts):
        row[:] = [min(c, cap) for c, cap in zip(row, caps, strict=True)]
        missing = total - sum(row)
        for o in sorted(range(width), key=lambda k: -p[a][k]):
            if missing == 0:
                break
            add = min(missing, caps[o] - row[o])
            row[o] += add
            missing -= add
        if missing:
            raise ValueError(
                f"cannot realise row {a} under the privacy caps with {bits}-bit counts; "
                "use bits=64 or a matrix further from the bound"
            )
    for o in range(width):
        column = [row[o] for row in counts]
        if max(column) * ratio.denominator > ratio.numerator * min(column):
            raise RuntimeError("a realised column exceeds e^epsilon")  # pragma: no cover
    return MatrixNoise(counts, bits)
