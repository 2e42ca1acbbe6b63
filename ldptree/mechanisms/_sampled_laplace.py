"""What the holder sampler realises for a stochastically rounded Laplace coordinate.

:func:`ldptree.mechanisms._random.laplace` draws ``xi = s x_m`` from one 32-bit word: a sign ``s``
(bit 31) and ``x_m = -log((m + 1/2) 2^-23)`` evaluated in float32 for the low 23 bits ``m``, each of
the ``2^24`` values with probability ``2^-24``. A coordinate at location ``mu`` (grid units) is
released as ``floor(mu + beta xi + u)`` with ``u = k 2^-24`` from 24 more bits, in float32, then
clamped to ``[-K, K]``. The declared law (what ``log_prob`` and the accountant use) is the ideal
one: ``xi ~ Laplace(1)``, ``u ~ U[0, 1)``, exact arithmetic, float64 constants. Differences:

* **Bounded support.** ``|xi| <= x_0 = 24 log 2 ~ 16.64``, so codes beyond ``mu +- (beta x_0 + 1)``
  are never released: two inputs whose reachable code ranges differ make pure epsilon fail as
  sampled (:meth:`Float32LaplaceSampling.unreachable` exhibits such a code).
* **Total variation** to the declared law (:meth:`Float32LaplaceSampling.tv_bound`), by a chain of
  couplings (rounding and clamping are Markov kernels, which never increase total variation, and the
  rounding kernel moves at most ``|v - v'|`` of mass when its input moves from ``v`` to ``v'``):

  1. noise values: couple ``m = floor(V 2^23)`` with the ideal ``-log V``; given ``m``,
     ``E|x_m - (-log V)| <= |x_m - x*_m| + a_m`` where ``x*_m`` is the exact midpoint value and
     ``a_m = (m + 1) log1p(1/(2m + 1)) + m log1p(-1/(2m + 1))``
     (``= E_w |log((m + w)/(m + 1/2))|``), so
     ``tau_1 = sum_m 2^-23 min(1, beta (|x_m - x*_m| + a_m))``;
  2. arithmetic: each float32 operation errs by at most ``2^-24`` relative, so the computed
     ``fl(fl(mu + fl(beta xi)) + u)`` is within ``eta = 2^-24 (3.001 beta |xi| + 2 |mu| + 1.001)``
     of ``mu + beta xi + u`` (also with a fused multiply-add), and the floor changes only when
     ``mu + beta xi + u`` lies within ``eta`` of an integer: probability ``<= 2 eta + 2^-23`` over
     the ``u`` grid; the grid ``u`` itself is within ``2^-24`` of a continuous uniform:
     ``tau_2 = 2^-23 (3.001 beta E|xi| + 2 max|mu| + 1.001) + 3 2^-24``;
  3. constants: the sampler's float32 scale and location differ from the declared float64 ones;
     ``TV(Lap(mu, b), Lap(mu + h, b)) = 1 - e^{-h / (2b)} <= h / (2b)`` and the scale change has
     the closed-form total variation of two centred Laplace laws: ``tau_3``.

  With ``tau = tau_1 + tau_2 + tau_3`` the accountant's composition gives ``delta`` (see
  :func:`~ldptree.accounting.verify_ldp`). This bound is loose (first order, every coupling error
  counted in full); :meth:`Float32LaplaceSampling.exact_delta` computes the sampled law's delta at
  a given input pair by enumerating all ``2^24`` noise values (arithmetic taken as exact there).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import FloatArray
from ldptree.mechanisms._random import laplace

__all__ = ["Float32LaplaceSampling", "realised_magnitudes"]

_MANTISSA = 2**23


@functools.cache
def realised_magnitudes() -> FloatArray:
    """``x_m`` for ``m = 0 .. 2^23 - 1`` exactly as the sampler computes them (float32 values)."""
    words = jnp.arange(_MANTISSA, dtype=jnp.uint32) | jnp.uint32(1 << 31)
    values = np.asarray(jax.jit(laplace)(words), dtype=np.float64)
    values.setflags(write=False)
    return values


@functools.cache
def _noise_terms() -> tuple[FloatArray, float]:
    """``|x_m - x*_m| + a_m`` for every ``m`` (step 1) and ``E|xi|`` of the sampled noise."""
    x = realised_magnitudes()
    m = np.arange(_MANTISSA, dtype=np.float64)
    midpoint = 23.0 * math.log(2.0) - np.log(m + 0.5)
    step = 1.0 / (2.0 * m + 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a = (m + 1.0) * np.log1p(step) + m * np.log1p(-step)
    a[0] = math.log(2.0)  # m = 0: E_w |log(2 w)|
    terms = np.abs(x - midpoint) + a
    terms.setflags(write=False)
    return terms, float(x.mean())


@functools.lru_cache(maxsize=256)
def _noise_tv(beta_used: float) -> float:
    """Step 1 of the module docstring: ``sum_m 2^-23 min(1, beta (|x_m - x*_m| + a_m))``."""
    terms, _ = _noise_terms()
    return float(np.minimum(1.0, beta_used * terms).sum()) / _MANTISSA


def _scale_tv(b: float, c: float) -> float:
    """Total variation between centred ``Laplace(b)`` and ``Laplace(c)``."""
    if b == c:
        return 0.0
    lo, hi = min(b, c), max(b, c)
    cross = math.log(hi / lo) * lo * hi / (hi - lo)
    return math.exp(-cross / hi) - math.exp(-cross / lo)


def _f32(x: Any) -> np.float32:
    return np.float32(x)


@attrs.frozen
class Float32LaplaceSampling:
    """The sampling caveat of a grid-Laplace coordinate drawn by ``_random.laplace`` (module doc).

    ``beta`` is the declared scale in grid units, ``beta_used`` the float32 value the sampler
    multiplies by, ``location_error`` a bound on ``|mu_sampler - mu_declared|`` over all labels,
    ``locate`` maps a declared location to the sampler's float32 location, and ``limit`` is the
    clamp ``K``.
    """

    beta: float
    beta_used: float
    location_error: float
    limit: int
    locate: Callable[[float], float]

    @property
    def note(self) -> str:
        return (
            "float32 Laplace noise from 23-bit uniforms: |xi| <= 24 log 2 = 16.64 scales "
            "(bounded support), 2^24 noise values, float32 arithmetic"
        )

    def tv_bound(self, inputs: Sequence[Any]) -> float:
        mu_max = max((abs(float(a)) for a in inputs), default=0.0) + self.location_error
        reach = mu_max + self.beta_used * realised_magnitudes()[0] + 1.0
        if reach >= self.limit:
            return 1.0  # the clamp may be reached: no bound from this analysis
        _, mean_abs = _noise_terms()
        tau_noise = _noise_tv(self.beta_used)
        tau_arith = (3.001 * self.beta_used * mean_abs + 2.0 * mu_max + 1.001) / _MANTISSA
        tau_arith += 3.0 * 2.0**-24
        tau_const = self.location_error / (2.0 * self.beta) + _scale_tv(self.beta, self.beta_used)
        return (tau_noise + tau_arith + tau_const) * (1.0 + 1e-9)

    def _reach(self, mu: float, upper: bool) -> list[int]:
        """Extreme codes reachable from ``mu`` under float32 arithmetic with and without FMA."""
        x0 = realised_magnitudes()[0] * (1.0 if upper else -1.0)
        m = _f32(self.locate(mu))
        b = _f32(self.beta_used)
        u = _f32(1.0 - 2.0**-24) if upper else _f32(0.0)
        separate = _f32(m + _f32(b * _f32(x0)))
        fused = _f32(float(m) + float(b) * float(_f32(x0)))
        return [math.floor(float(_f32(v + u))) for v in (separate, fused)]

    def unreachable(self, a: Any, b: Any) -> Any:
        mu_a, mu_b = float(a), float(b)
        if mu_a == mu_b:
            return None
        upper = mu_a > mu_b
        ends_a, ends_b = self._reach(mu_a, upper), self._reach(mu_b, upper)
        if upper and min(ends_a) > max(ends_b):
            return min(ends_a)
        if not upper and max(ends_a) < min(ends_b):
            return max(ends_a)
        return None

    def law(self, mu: float) -> tuple[int, FloatArray]:
        """``(first code, probabilities)`` of the sampled law at declared location ``mu``: all
        ``2^24`` noise values and ``2^24`` rounding uniforms, arithmetic taken as exact."""
        x = realised_magnitudes()
        loc = float(self.locate(mu))
        beta = float(_f32(self.beta_used))
        probs: FloatArray | None = None
        first = 0
        for sign in (1.0, -1.0):
            v = loc + beta * sign * x
            base = np.floor(v)
            frac = v - base
            up = (2.0**24 - np.ceil((1.0 - frac) * 2.0**24)) / 2.0**24
            lo = int(base.min())
            idx = (base - lo).astype(np.int64)
            size = int(idx.max()) + 2
            part: FloatArray = np.bincount(idx, weights=1.0 - up, minlength=size).astype(np.float64)
            part[1:] += np.bincount(idx, weights=up, minlength=size)[: size - 1]
            part /= 2.0**24
            if probs is None:
                probs, first = part, lo
            else:
                start = min(first, lo)
                stop = max(first + probs.size, lo + part.size)
                merged = np.zeros(stop - start)
                merged[first - start : first - start + probs.size] += probs
                merged[lo - start : lo - start + part.size] += part
                probs, first = merged, start
        assert probs is not None
        return first, probs

    def exact_delta(self, a: Any, b: Any, epsilon: float) -> float | None:
        first_a, pa = self.law(float(a))
        first_b, pb = self.law(float(b))
        start = min(first_a, first_b)
        stop = max(first_a + pa.size, first_b + pb.size)
        grid_a = np.zeros(stop - start)
        grid_b = np.zeros(stop - start)
        grid_a[first_a - start : first_a - start + pa.size] = pa
        grid_b[first_b - start : first_b - start + pb.size] = pb
        return float(np.maximum(0.0, grid_a - math.exp(epsilon) * grid_b).sum())
