"""How a holder's label enters the kit: as an integer *level* from a finite set.

* :class:`RealLabels` clips a real label to a declared bound and rounds it at random to one of
  ``levels + 1`` evenly spaced levels, unbiasedly;
* :class:`ClassLabels` takes class codes ``0..K-1`` and maps every other code to a null level.

Why levels make a certificate cover every real label: the report's law given a real label ``y``
is a mixture ``sum_t w_t(y) P(. | t)`` over levels. For any two labels and any report ``s``,
``P(s | y) <= max_t P(s | t)`` and ``P(s | y') >= min_t P(s | t)``, so the log-likelihood ratio of
two real labels never exceeds the largest ratio between two levels; enumerating the finitely many
levels is therefore a proof for all real labels, whatever the rounding probabilities are (they are
float32 arithmetic and affect only unbiasedness, never privacy).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_int, to_label_bound
from ldptree.mechanisms._random import unit_halfopen

__all__ = [
    "MAX_LEVELS",
    "NULL_LABEL",
    "ClassLabels",
    "Labels",
    "RealLabels",
    "encode_levels",
    "label_levels",
]

#: The label the report law uses for "any class code outside 0..K-1" (the null level).
NULL_LABEL = -1
#: Largest number of label levels :func:`label_levels` chooses.
MAX_LEVELS = 64


def _to_levels(value: Any) -> int:
    levels = check_int(value, "levels", minimum=1)
    if levels % 2 and levels != 1:
        raise ValueError(f"levels must be 1 or even (the centre is a level), got {levels}")
    return levels


def _to_n_classes(value: Any) -> int:
    return check_int(value, "n_classes", minimum=2)


def label_levels(epsilon: float) -> int:
    """Levels for a real label released with budget ``epsilon``: ``2 ceil(2 epsilon)`` in
    ``[2, MAX_LEVELS]``. Rounding to levels adds variance at most ``step^2 / 4``, below 1% of the
    geometric noise's ``~ 2 (levels / epsilon)^2 step^2`` while ``epsilon <= MAX_LEVELS / 2``."""
    return min(MAX_LEVELS, max(2, 2 * math.ceil(2.0 * float(epsilon))))


@attrs.frozen
class RealLabels:
    """Real labels, clipped to ``bound = (lo, hi)`` and rounded at random to a level.

    Level ``t in {0, ..., levels}`` stands for the value ``lo + t step`` with
    ``step = (hi - lo) / levels``; a label at ``u = (clip(y) - lo) / step`` goes to ``floor(u)`` or
    ``floor(u) + 1`` with probabilities ``1 - frac(u)`` and ``frac(u)``, so
    ``E[lo + t step] = clip(y)`` (up to float32 rounding of ``u``) and the rounding adds variance at
    most ``step^2 / 4``. ``levels`` is even so that the centre ``(lo + hi) / 2`` is a level, or
    ``1``: the two ends of the bound only (a two-point label such as Duchi et al.'s, where the
    centre enters as the fair mixture of the ends and no release needs a centre level).
    """

    bound: tuple[float, float] = attrs.field(converter=to_label_bound)
    levels: int = attrs.field(converter=_to_levels)

    integer: ClassVar[bool] = False
    words: ClassVar[int] = 1

    @property
    def size(self) -> int:
        return self.levels + 1

    @property
    def step(self) -> float:
        return (self.bound[1] - self.bound[0]) / self.levels

    @property
    def center(self) -> float:
        return (self.bound[0] + self.bound[1]) / 2.0

    def domain(self) -> tuple[float, ...]:
        """Representative labels of the levels, ``lo + t step`` (the accountant's label domain)."""
        return tuple(self.value(t) for t in range(self.size))

    def value(self, t: int) -> float:
        return self.bound[0] + t * self.step if t < self.levels else self.bound[1]

    def index(self, label: Any) -> int:
        """The level of a representative label (exact for :meth:`domain` values)."""
        u = (min(max(float(label), self.bound[0]), self.bound[1]) - self.bound[0]) / self.step
        return min(max(round(u), 0), self.levels)

    def weights(self, label: Any) -> list[tuple[int, float]]:
        """``[(level, probability)]`` of the rounding of one label (float64)."""
        lo, hi = self.bound
        u = (min(max(float(label), lo), hi) - lo) / self.step
        base = min(math.floor(u), self.levels)
        frac = u - base
        if frac <= 0.0 or base == self.levels:
            return [(base, 1.0)]
        return [(base, 1.0 - frac), (base + 1, frac)]

    def static(self) -> tuple[Any, ...]:
        return ("real",)

    def constants(self) -> tuple[Any, ...]:
        lo, hi = self.bound
        return (np.float32(lo), np.float32(hi), np.float32(self.step), np.float32(self.levels))

    def decode(self, level: Any) -> FloatArray:
        """Values ``lo + level step`` of (noisy) level codes, as float64."""
        out: FloatArray = self.bound[0] + self.step * np.asarray(level, dtype=np.float64)
        return out

    def host_levels(self, labels: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
        """Levels of real labels drawn on the host with ``rng`` (the aggregate simulation)."""
        lo, hi = self.bound
        u = (np.clip(np.asarray(labels).astype(np.float64), lo, hi) - lo) / self.step
        levels: np.ndarray[Any, Any] = np.minimum(np.floor(u + rng.random(u.shape[0])), self.levels)
        return levels.astype(np.int64)


@attrs.frozen
class ClassLabels:
    """Class codes ``0..K-1``; any other code becomes the null level ``K`` (``NULL_LABEL``)."""

    n_classes: int = attrs.field(converter=_to_n_classes)

    integer: ClassVar[bool] = True
    words: ClassVar[int] = 0

    @property
    def size(self) -> int:
        return self.n_classes + 1

    def domain(self) -> tuple[int, ...]:
        return (*range(self.n_classes), NULL_LABEL)

    def index(self, label: Any) -> int:
        code = int(label)
        return code if 0 <= code < self.n_classes else self.n_classes

    def weights(self, label: Any) -> list[tuple[int, float]]:
        return [(self.index(label), 1.0)]

    def static(self) -> tuple[Any, ...]:
        return ("class",)

    def constants(self) -> tuple[Any, ...]:
        return (np.int32(self.n_classes),)

    def host_levels(self, labels: Any, rng: np.random.Generator) -> np.ndarray[Any, Any]:
        """Levels of class codes (the null level for undeclared codes); ``rng`` is unused."""
        raw = np.asarray(labels)
        levels: np.ndarray[Any, Any] = np.where(
            (raw >= 0) & (raw < self.n_classes), raw, self.n_classes
        )
        return levels


Labels = RealLabels | ClassLabels


def encode_levels(consts: Any, values: jax.Array, word: jax.Array) -> jax.Array:
    """Real values to random levels with :meth:`RealLabels.constants` ``(lo, hi, step, levels)``:
    ``floor(u + W)`` for ``u = (clip(v) - lo) / step`` and a uniform ``W`` from ``word``."""
    lo, hi, step, levels = consts
    # a NaN would survive clip and leak through a deterministic level: treat it as the centre
    y = jnp.where(jnp.isnan(values), (lo + hi) / 2, values)
    u = (jnp.clip(y, lo, hi) - lo) / step
    t = jnp.floor(u + unit_halfopen(word))
    return jnp.clip(t, 0, levels).astype(jnp.int32)


def encode(static: tuple[Any, ...], consts: Any, labels: jax.Array, word: Any) -> jax.Array:
    """Every holder's level: class codes (undeclared ones to the null level ``K``) or real labels
    rounded at random with ``word`` (``None`` for class labels, which draw no word)."""
    if static[0] == "class":
        (k,) = consts
        return jnp.where((labels >= 0) & (labels < k), labels, k).astype(jnp.int32)
    assert word is not None
    return encode_levels(consts, labels, word)
