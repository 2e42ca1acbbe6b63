"""Channels: the law of one report coordinate given its input, and its max-divergences.

A mechanism's report is a product of independent coordinates (:mod:`ldptree.accounting._law`);
each coordinate is released by a *channel* ``P(s | a)`` whose input ``a`` is a function of the
holder's record. The accountant needs, for the finitely many inputs a coordinate can receive, the
max-divergences

    D(a, b) = sup_s log P(s | a) / P(s | b)      (+inf when some s has P(s | a) > 0 = P(s | b)),

with an output ``s`` attaining them. Because the coordinates are independent, the log-likelihood
ratio of a whole report is the sum of the coordinates' ratios, and since each coordinate's output
can be chosen separately, ``sup_s`` of the sum is the sum of the ``D``'s: exact, with no
enumeration of the product space.

Channels provided here:

* :class:`FiniteChannel`: a finite output set and exact log-probabilities; ``D`` by enumeration in
  float64 log space (exact up to float64 rounding of the given log-probabilities).
* :func:`binary_channel`: randomized response on one bit (a :class:`FiniteChannel`).
* :func:`grid_laplace_channel`: ``Laplace(beta)`` at location ``mu``, stochastically rounded to the
  integers and clamped to ``[-K, K]`` (a :class:`FiniteChannel` over the ``2K + 1`` codes).
* :class:`LaplaceChannel`: the continuous Laplace law; ``D`` in closed form.

A channel whose divergence is a convex function of the difference of (real) inputs declares
``convex_in_location``; the accountant then needs only the extreme labels (see
:func:`~ldptree.accounting.verify_ldp`). A channel may carry a :class:`Sampling`: how the law its
sampler *realises* deviates from the declared law (e.g. bounded-support floating-point noise).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

import attrs
import numpy as np

from ldptree._typing import FloatArray

__all__ = [
    "Channel",
    "Divergences",
    "FiniteChannel",
    "LaplaceChannel",
    "Sampling",
    "binary_channel",
    "grid_laplace_channel",
]

#: Largest allowed ``|log sum_s P(s | a)|`` of a finite channel's declared log-probabilities.
NORMALISATION_TOLERANCE = 1e-9


@attrs.frozen(eq=False)
class Divergences:
    """Max-divergences between the inputs ``a_0, ..., a_{n-1}`` of one channel.

    ``value[i, j]`` is a certified upper bound on ``sup_s log P(s | a_i) / P(s | a_j)``;
    ``witness[i][j]`` is an output ``s`` attaining it (``exact``) or approaching it.
    """

    value: FloatArray
    witness: tuple[tuple[Any, ...], ...]
    exact: bool


class EqualGapChannel:
    """Base of a channel whose every pair of distinct inputs is :attr:`_gap` apart, attained at
    the output :meth:`_witness` ``(a, b)`` (the item channels: local hashing, k-subset
    selection): exact divergences in closed form, not convex in the location, sampled exactly."""

    __slots__ = ()

    @property
    def _gap(self) -> float:
        raise NotImplementedError

    def _witness(self, a: int, b: int) -> tuple[int, ...]:
        raise NotImplementedError

    @property
    def convex_in_location(self) -> bool:
        return False

    @property
    def sampling(self) -> None:
        return None

    def divergences(self, inputs: Any) -> Divergences:
        items_ = [int(x) for x in inputs]
        gap = self._gap
        value: FloatArray = np.asarray(
            [[0.0 if a == b else gap for b in items_] for a in items_], dtype=np.float64
        )
        witness = tuple(tuple(self._witness(a, b) for b in items_) for a in items_)
        return Divergences(value=value, witness=witness, exact=True)


@runtime_checkable
class Sampling(Protocol):
    """How a channel's *sampler* deviates from its declared law (floating-point realisation).

    * ``note``: one line for the certificate (what is realised and why it differs).
    * ``tv_bound(inputs)``: a certified upper bound on the total-variation distance between the
      sampled and the declared law of the coordinate, uniform over the given inputs. It turns a
      pure-epsilon guarantee of the declared law into ``(eps, tau (1 + e^D))`` for the sampler.
    * ``unreachable(a, b)``: an output the sampler produces with positive probability from input
      ``a`` and never from input ``b`` (a proof that pure epsilon fails as sampled), or ``None``.
    * ``exact_delta(a, b, epsilon)``: the sampled law's ``sum_s max(0, P(s|a) - e^eps P(s|b))``
      computed exactly where the sampler's law is enumerable, else ``None``.
    """

    @property
    def note(self) -> str: ...

    def tv_bound(self, inputs: Sequence[Any]) -> float: ...

    def unreachable(self, a: Any, b: Any) -> Any: ...

    def exact_delta(self, a: Any, b: Any, epsilon: float) -> float | None: ...


@runtime_checkable
class Channel(Protocol):
    """The law of one report coordinate given its input (module docstring)."""

    @property
    def convex_in_location(self) -> bool:
        """Inputs are reals and ``D(a, b) = f(a - b)`` with ``f`` convex."""
        ...

    @property
    def sampling(self) -> Sampling | None:
        """Deviation of the realised sampler from the declared law (``None``: exact sampler)."""
        ...

    def divergences(self, inputs: Sequence[Any]) -> Divergences:
        """Max-divergences between every ordered pair of ``inputs``."""
        ...

    def log_prob(self, output: Any, value: Any) -> float:
        """``log P(output | value)`` (a log-density for continuous outputs)."""
        ...


def as_tuple(values: Iterable[Any]) -> tuple[Any, ...]:
    """attrs converter: any iterable to a tuple."""
    return tuple(values)


def _divergence_matrix(log_probs: FloatArray) -> tuple[FloatArray, np.ndarray[Any, Any]]:
    """``D[i, j] = max_s (lp[i, s] - lp[j, s])`` over ``s`` with ``lp[i, s] > -inf`` (``+inf``
    when such an ``s`` has ``lp[j, s] = -inf``), and a maximising ``s`` (among ties, the one
    most likely under input ``i``, so that witnesses are typical reports)."""
    a = log_probs[:, None, :]
    b = log_probs[None, :, :]
    with np.errstate(invalid="ignore"):
        diff = np.where(np.isneginf(a), -np.inf, np.where(np.isneginf(b), np.inf, a - b))
    value: FloatArray = diff.max(axis=2)
    slack = 1e-12 * np.maximum(1.0, np.where(np.isfinite(value), np.abs(value), 0.0))
    ties = diff >= (value - slack)[:, :, None]
    arg = np.argmax(np.where(ties, np.broadcast_to(a, diff.shape), -np.inf), axis=2)
    return value, arg


def _count_divergence_matrix(
    counts: list[tuple[int, ...]],
) -> tuple[FloatArray, np.ndarray[Any, Any]]:
    """:func:`_divergence_matrix` from integer counts: ``D[i, j] = max_s log(c_i(s) / c_j(s))``
    computed as ``log1p((c_i - c_j) / c_j)`` with the difference exact in integers, so ``D`` has a
    small *relative* error (a few ulps) even when it is tiny (a difference of two float64
    logarithms near ``-0.7`` is only accurate to ``~1e-16`` absolute)."""
    n, width = len(counts), len(counts[0]) if counts else 0
    value = np.zeros((n, n))
    arg = np.zeros((n, n), dtype=np.int64)
    if not n:
        return value, arg
    if max(max(row) for row in counts) >= 1 << 64:  # a one-output law: nothing to compare
        table = np.asarray([[math.log(c) if c else -math.inf for c in row] for row in counts])
        return _divergence_matrix(table)
    c = np.asarray(counts, dtype=np.uint64)
    as_float = c.astype(np.float64)
    for i in range(n):
        a, b = c[i][None, :], c
        up = a >= b
        # uint64 differences wrap where negative; each side is read only where it is not
        magnitude = np.where(up, a - b, b - a).astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(up, magnitude, -magnitude) / as_float
            logs = np.log1p(ratio)
        logs = np.where(b == 0, np.where(a > 0, np.inf, -np.inf), logs)
        logs = np.where(a == 0, -np.inf, logs)
        best = logs.max(axis=1)
        value[i] = np.where(np.isfinite(best) | np.isposinf(best), best, 0.0)
        slack = 1e-12 * np.maximum(1.0, np.where(np.isfinite(best), np.abs(best), 0.0))
        ties = logs >= (best - slack)[:, None]
        arg[i] = np.argmax(np.where(ties, np.broadcast_to(as_float[i], (n, width)), -1.0), axis=1)
    return value, arg


@attrs.frozen(eq=False)
class FiniteChannel:
    """A channel with the finite output set ``outputs`` and exact log-probabilities.

    ``log_probs(a)`` returns ``float64[len(outputs)]``: ``log P(outputs[k] | a)`` (``-inf`` for
    impossible outputs). They must sum to one (checked to ``1e-9`` in log space), so a
    mis-normalised description cannot pass for a private one.

    An *integer-count* law also gives ``counts(a)`` (non-negative integers, one per output) and
    their ``total``: ``P(outputs[k] | a) = counts(a)[k] / total``. Then the sums are checked
    *exactly* (``sum(counts(a)) == total``), ``log_probs`` is checked against the counts, and the
    divergences are computed from the integers with a small relative error
    (:func:`_count_divergence_matrix`), so a tiny budget is certified as accurately as a large
    one. Every noise of the mechanism kit describes itself this way.
    """

    outputs: tuple[Any, ...] = attrs.field(converter=as_tuple)
    log_probs: Callable[[Any], Any]
    convex_in_location: bool = False
    sampling: Sampling | None = None
    counts: Callable[[Any], Sequence[int]] | None = None
    total: int | None = None

    def __attrs_post_init__(self) -> None:
        if (self.counts is None) != (self.total is None):
            raise ValueError("counts and total must be given together (an integer-count law)")
        if self.total is not None and (not isinstance(self.total, int) or self.total < 1):
            raise ValueError(f"total must be a positive int, got {self.total!r}")

    def count_row(self, a: Any) -> tuple[int, ...]:
        """``counts(a)``, checked: one non-negative integer per output, summing to ``total``."""
        assert self.counts is not None and self.total is not None
        row = tuple(self.counts(a))
        if len(row) != len(self.outputs) or not all(
            isinstance(c, int | np.integer) and not isinstance(c, bool) and c >= 0 for c in row
        ):
            raise ValueError(
                f"counts({a!r}) must be {len(self.outputs)} non-negative integers, got {row!r}"
            )
        row = tuple(int(c) for c in row)
        if sum(row) != self.total:
            raise ValueError(
                f"counts({a!r}) sum to {sum(row)}, not to total={self.total}: not a law"
            )
        return row

    def table(self, inputs: Sequence[Any]) -> FloatArray:
        """``float64[len(inputs), len(outputs)]`` log-probabilities, validated."""
        rows = []
        for a in inputs:
            row = np.asarray(self.log_probs(a), dtype=np.float64)
            if row.shape != (len(self.outputs),):
                raise ValueError(
                    f"log_probs({a!r}) must have shape ({len(self.outputs)},), got {row.shape}"
                )
            if np.isnan(row).any() or np.isposinf(row).any():
                raise ValueError(f"log_probs({a!r}) contains NaN or +inf")
            total = float(np.logaddexp.reduce(row))
            if not abs(total) <= NORMALISATION_TOLERANCE:
                raise ValueError(
                    f"log_probs({a!r}) is not normalised: log of the total probability is "
                    f"{total:.3g} (must be 0 within {NORMALISATION_TOLERANCE:g})"
                )
            if self.counts is not None:
                assert self.total is not None
                exact = self.count_row(a)
                log_total = math.log(self.total)
                expected = np.asarray([math.log(c) - log_total if c else -math.inf for c in exact])
                finite = np.isfinite(expected)
                if not (
                    np.array_equal(finite, np.isfinite(row))
                    and np.all(np.abs(row[finite] - expected[finite]) <= 1e-12 * (1.0 + log_total))
                ):
                    raise ValueError(f"log_probs({a!r}) disagrees with counts({a!r}) / total")
            rows.append(row)
        return np.stack(rows) if rows else np.empty((0, len(self.outputs)))

    def divergences(self, inputs: Sequence[Any]) -> Divergences:
        table = self.table(inputs)
        if self.counts is not None:
            value, arg = _count_divergence_matrix([self.count_row(a) for a in inputs])
        else:
            value, arg = _divergence_matrix(table)
        witness = tuple(tuple(self.outputs[int(k)] for k in row) for row in arg)
        return Divergences(value=value, witness=witness, exact=True)

    def log_prob(self, output: Any, value: Any) -> float:
        row = np.asarray(self.log_probs(value), dtype=np.float64)
        return float(row[self.outputs.index(output)])


def binary_channel(flip_prob: float, *, sampling: Sampling | None = None) -> FiniteChannel:
    """Randomized response on a bit: ``P(s != a) = flip_prob`` for inputs and outputs in {0, 1}.

    ``D(0, 1) = D(1, 0) = |log((1 - q) / q)|``, attained at ``s = 0`` resp. ``s = 1`` (or the
    reverse when ``q > 1/2``).
    """
    q = float(flip_prob)
    if not 0.0 < q < 1.0:
        raise ValueError(f"flip_prob must lie strictly between 0 and 1, got {q}")
    keep, flip = math.log1p(-q), math.log(q)

    def log_probs(a: Any) -> FloatArray:
        if a not in (0, 1):
            raise ValueError(f"a bit channel's input must be 0 or 1, got {a!r}")
        return np.array([keep, flip] if a == 0 else [flip, keep])

    return FiniteChannel(outputs=(0, 1), log_probs=log_probs, sampling=sampling)


def grid_laplace_log_probs(beta: float, limit: int, mu: float) -> FloatArray:
    """``log P(code | mu)`` for all ``code in [-K, K]`` of ``clamp(SR(mu + beta xi), -K, K)``.

    ``SR`` is stochastic rounding (``floor(v + W)``, ``W ~ U[0, 1)``) and ``xi ~ Laplace(1)``.
    Rounding convolves the Laplace density with the triangle ``max(0, 1 - |t|)``; with
    ``t = code - mu`` and ``e(s) = exp(-|s| / beta)``:

    * ``|t| < 1``: ``beta/2 (e(t+1) - 2 e(t) + e(t-1)) + 1 - |t|``;
    * ``|t| >= 1``: ``A e(t)`` with ``A = beta (cosh(1/beta) - 1) = 2 beta sinh^2(1/(2 beta))``;
    * end codes ``|code| = K`` (needs ``|mu| + 1 <= K``): the tail ``beta/2 (e^{1/beta} - 1) e(t)``.
    """
    if not abs(mu) + 1.0 <= limit:
        raise ValueError(f"location {mu} is too close to the clamp limit {limit}")
    codes = np.arange(-limit, limit + 1, dtype=np.float64)
    t = codes - mu
    far = -np.abs(t) / beta
    body = math.log(2.0 * beta) + 2.0 * math.log(math.sinh(0.5 / beta)) + far
    near = np.abs(t) < 1.0
    if near.any():
        tn = t[near]
        second = (
            np.exp(-np.abs(tn + 1.0) / beta)
            - 2.0 * np.exp(-np.abs(tn) / beta)
            + np.exp(-np.abs(tn - 1.0) / beta)
        )
        body[near] = np.log(beta / 2.0 * second + (1.0 - np.abs(tn)))
    end = math.log(beta / 2.0 * math.expm1(1.0 / beta)) + far
    body[0], body[-1] = end[0], end[-1]
    return body


def grid_laplace_channel(
    beta: float, limit: int, *, sampling: Sampling | None = None
) -> FiniteChannel:
    """``Laplace(beta)`` at location ``mu`` (grid units), stochastically rounded to the integers and
    clamped to ``[-K, K]`` (:func:`grid_laplace_log_probs`); inputs are locations ``mu``.

    Divergence: rounding and clamping are post-processing of ``mu + beta xi``, so
    ``D(mu, mu') <= |mu - mu'| / beta``; codes ``c >= max(mu, mu') + 1`` (there is one: the clamp
    lies at least one step beyond every location) have ratio exactly ``e^{(mu - mu')/beta}``, so
    ``D(mu, mu') = |mu - mu'| / beta``: convex in ``mu - mu'``. The accountant still computes it by
    enumerating the codes.
    """
    if not (beta > 0.0 and math.isfinite(beta)):
        raise ValueError(f"beta must be a positive finite scale, got {beta}")
    if int(limit) < 2:
        raise ValueError(f"limit must be >= 2, got {limit}")
    k_lim = int(limit)
    return FiniteChannel(
        outputs=tuple(range(-k_lim, k_lim + 1)),
        log_probs=lambda mu: grid_laplace_log_probs(beta, k_lim, float(mu)),
        convex_in_location=True,
        sampling=sampling,
    )


@attrs.frozen
class LaplaceChannel:
    """Continuous ``Laplace(scale)`` noise added to a real input (its location).

    ``D(a, b) = |a - b| / scale`` (the density ratio ``e^{(|s - b| - |s - a|)/scale}`` is largest,
    and constant, for ``s`` beyond ``a`` on the side away from ``b``), attained at ``s = a``.
    """

    scale: float
    sampling: Sampling | None = None

    def __attrs_post_init__(self) -> None:
        if not (self.scale > 0.0 and math.isfinite(self.scale)):
            raise ValueError(f"scale must be a positive finite number, got {self.scale}")

    @property
    def convex_in_location(self) -> bool:
        return True

    def divergences(self, inputs: Sequence[Any]) -> Divergences:
        x = np.asarray([float(a) for a in inputs], dtype=np.float64)
        value: FloatArray = np.abs(x[:, None] - x[None, :]) / self.scale
        witness = tuple(tuple(float(a) for _ in x) for a in x)
        return Divergences(value=value, witness=witness, exact=True)

    def log_prob(self, output: Any, value: Any) -> float:
        return -math.log(2.0 * self.scale) - abs(float(output) - float(value)) / self.scale
