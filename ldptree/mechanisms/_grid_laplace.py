"""Laplace noise released on a power-of-two grid: the law, its exact mean, and a tail-faithful
sampler shared by the mechanisms.

A value ``x`` (in grid units ``mu = x / Delta``) is released as the integer code

    code = clamp(floor(mu + beta * xi + W), -K, K),    xi ~ Laplace(1), W ~ Uniform[0, 1),

i.e. ``x + b xi`` (``b = beta Delta``) rounded *stochastically* to the grid ``Delta Z`` and clamped.
Rounding and clamping are post-processing of the Laplace release, so privacy is that of
``Laplace(b)``; the grid makes every curator-side sum an exact integer (identical in any chunking
or order) and the report space finite (so a likelihood can be evaluated exactly).

Law (``t = code - mu``, ``e(s) = exp(-|s| / beta)``): stochastic rounding convolves the Laplace
density with the triangle ``max(0, 1 - |t|)``, so for ``|code| < K``

    P(code) = beta/2 (e(t + 1) - 2 e(t) + e(t - 1)) + max(0, 1 - |t|),

which is ``A e(t)`` with ``A = beta (cosh(1/beta) - 1)`` once ``|t| >= 1``; the end codes carry the
tails ``beta/2 (e^{1/beta} - 1) e(t)``. The mean of the clamped code is ``mu`` minus the clamped
excess, in closed form (:meth:`GridLaplace.mean`), so estimators can debias exactly.

Sampler: ``jax.random.laplace`` draws a float32 uniform with 23 random bits, so its magnitude is
capped near 15 scales and its tail beyond ~8 scales is coarsely quantised: the realised likelihood
ratio there is far from ``e^{1/b}`` (the floating-point pitfall of Mironov, CCS 2012).
:func:`sample_codes` draws the magnitude from a 64-bit uniform instead: near magnitude ``E`` the
attainable values are at most ``max(1e-7, 2^-64 e^E)`` apart, i.e. more than 50000 per grid step
up to ``E = 30`` (a grid step is at least ``1/32`` scale). With the clamp at ``T = 30`` scales
(:data:`TAIL_SCALES`) every code's realised probability therefore matches
:meth:`GridLaplace.log_prob` up to the float32 evaluation of ``log`` (relative error ~``1e-4``); the
clamped end codes collect the rest, ``e^{-30} ~ 1e-13`` of the mass.
"""

from __future__ import annotations

import math

import attrs
import jax
import jax.numpy as jnp
import numpy as np

from ldptree._typing import FloatArray, IntArray

#: Clamp of the released codes, in noise scales beyond the largest encoded value (see above).
TAIL_SCALES = 30.0


@attrs.frozen
class GridLaplace:
    """``Laplace(scale)`` released on the grid ``step * Z`` and clamped to ``|code| <= limit``."""

    scale: float
    step: float
    limit: int

    @classmethod
    def for_range(
        cls, scale: float, reach: float, *, tail_scales: float = TAIL_SCALES, max_step: float = 1.0
    ) -> GridLaplace:
        """Grid for values with ``|x| <= reach``: ``Delta = min(max_step, 2^(floor(log2 b) - 4))``
        (so ``b / 32 < Delta <= b / 16`` unless capped) and ``K Delta >= reach + tail_scales b``.

        With ``max_step = 1`` every integer value lies on the grid.
        """
        step = min(max_step, 2.0 ** (math.floor(math.log2(scale)) - 4))
        return cls(scale=scale, step=step, limit=math.ceil((reach + tail_scales * scale) / step))

    @property
    def beta(self) -> float:
        """Noise scale in grid units, ``b / Delta``."""
        return self.scale / self.step

    def log_prob(self, code: int, mu: float) -> float:
        """``log P(code | mu)`` for a value at ``mu`` grid units (``|mu| + 1 <= limit``)."""
        return float(self.log_probs(np.asarray([code]), np.asarray([mu], dtype=np.float64))[0])

    def log_probs(self, codes: IntArray, mu: FloatArray) -> FloatArray:
        """Element-wise ``log P(codes | mu)`` (float64, any matching shapes)."""
        beta, k_lim = self.beta, self.limit
        codes = np.asarray(codes, dtype=np.int64)
        t = codes - np.asarray(mu, dtype=np.float64)
        far = -np.abs(t) / beta
        near = np.abs(t) < 1.0
        with np.errstate(divide="ignore"):
            # inside one grid step the triangle kernel overlaps the peak: no closed exponent
            peak = np.log(
                beta
                / 2.0
                * (
                    np.exp(-np.abs(t + 1) / beta)
                    - 2.0 * np.exp(far)
                    + np.exp(-np.abs(t - 1) / beta)
                )
                + np.maximum(0.0, 1.0 - np.abs(t))
            )
        body = np.where(near, peak, math.log(beta * (math.cosh(1.0 / beta) - 1.0)) + far)
        end = math.log(beta / 2.0 * math.expm1(1.0 / beta)) + far
        out: FloatArray = np.where(
            np.abs(codes) > k_lim, -np.inf, np.where(np.abs(codes) == k_lim, end, body)
        )
        return out

    def mean(self, mu: float) -> float:
        """Exact ``E[code | mu]`` of the clamped release (``|mu| + 1 <= limit``).

        ``mu`` minus the excess beyond ``K`` plus the excess below ``-K``; each is
        ``A e^{-d / beta} r / (1 - r)^2`` with ``r = e^{-1/beta}`` and ``d`` the distance from
        ``mu`` to the clamp.
        """
        beta, k_lim = self.beta, self.limit
        r = math.exp(-1.0 / beta)
        a = beta * (math.cosh(1.0 / beta) - 1.0)
        factor = a * r / (1.0 - r) ** 2
        upper = factor * math.exp(-(k_lim - mu) / beta)
        lower = factor * math.exp(-(k_lim + mu) / beta)
        return mu - upper + lower


def sample_codes(
    key: jax.Array, mu: jax.Array, beta: float | jax.Array, limit: int | jax.Array
) -> jax.Array:
    """Codes ``clamp(floor(mu + beta xi + W), -limit, limit)`` for values ``mu`` (grid units).

    Three 32-bit words per coordinate. Two make a 64-bit uniform ``x = m_1 + (m_2 + 1) 2^-32`` in
    units of ``2^-32``, whose float32 value keeps ~24 significant bits *relative to its size*, so
    the magnitude ``E = 32 log 2 - log x`` has absolute resolution ~``1e-7`` wherever it lands, up
    to ``44`` scales. The third gives the sign (top bit) and the rounding uniform (24 bits). The
    integer part of ``mu`` is added in integer arithmetic (``floor(j + s) = j + floor(s)``), so the
    float arithmetic only sees the noise and the fractional part, never a large value.
    """
    mu = jnp.asarray(mu, dtype=jnp.float32)
    words = jax.random.bits(key, (3, *mu.shape), dtype=jnp.uint32)
    fine = (words[1].astype(jnp.float32) + 1.0) * jnp.float32(2.0**-32)
    x = words[0].astype(jnp.float32) + fine
    magnitude = jnp.float32(32.0 * math.log(2.0)) - jnp.log(x)
    negative = (words[2] >> 31).astype(jnp.bool_)
    uniform = (words[2] & jnp.uint32(0xFFFFFF)).astype(jnp.float32) * jnp.float32(2.0**-24)
    noise = jnp.where(negative, -magnitude, magnitude) * jnp.asarray(beta, dtype=jnp.float32)
    whole = jnp.floor(mu)
    rounded = jnp.floor((mu - whole) + noise + uniform)
    codes = whole.astype(jnp.int32) + rounded.astype(jnp.int32)
    clamped: jax.Array = jnp.clip(codes, -limit, limit)
    return clamped
