"""PrivUnitG (Asi, Feldman and Talwar 2022): an unbiased eps-LDP release of a unit vector.

Input: a unit vector ``u`` in ``R^D``. Output::

    Z = s * (g - <g, u> u + alpha u),    g ~ N(0, I_D),
    alpha ~ N(0, 1) conditioned on alpha >= gamma       with probability p   (the "cap"),
    alpha ~ N(0, 1) conditioned on alpha <  gamma       with probability 1 - p,

with ``q = P(N(0, 1) >= gamma) = 1 / (1 + e^eps (1 - p) / p)`` and ``s = 1 / E[alpha]``,

    E[alpha] = p phi(gamma) / q - (1 - p) phi(gamma) / (1 - q)

(``phi``/``Phi`` the standard normal density and CDF). ``p`` minimises ``s`` over
``{0.01, ..., 0.99}`` as in the reference code.

**Unbiased.** ``E[g - <g, u> u] = 0`` and ``alpha`` is independent of ``g``, so
``E[Z] = s E[alpha] u = u``.

**Privacy.** ``g - <g, u> u`` is the part of ``g`` orthogonal to ``u``, a standard normal on the
orthogonal complement, independent of ``alpha``; so ``Z / s`` has density
``prod_i phi(z_i) * c(<z, u>)`` with ``c(w) = p / q`` for ``w >= gamma`` and ``(1 - p) / (1 - q)``
below. The density depends on ``u`` only through ``c``, so for any two unit inputs and any output

    f_u(z) / f_u'(z) <= (p / q) / ((1 - p) / (1 - q)) = p (1 - q) / ((1 - p) q) = e^eps

by the choice of ``q``; the bound is attained by the cap event ``{<Z, u> >= s gamma}``, whose
probability is ``p`` under ``u`` and ``(1 - p) q / (1 - q)`` under ``-u``
(:func:`cap_probabilities`). The argument needs a *unit* input: for ``0 < |x| < 1`` the
component of ``Z`` along ``x`` has lighter-than-Gaussian tails and the ratio is unbounded
(``docs/baselines.md``), which is why :meth:`PrivUnitG.privatize_ball` rounds a short input to
the sphere at random first.

**Certificate.** :meth:`PrivUnitG.certificate` recomputes the realised bound
``log(p (1 - q) / ((1 - p) q))`` from the constants the sampler uses. The cap coin is exact as
sampled: ``p`` is rounded to the grid ``2^-23 Z`` at construction, and ``U < p`` for ``U``
uniform on that grid (JAX's float32 uniform) has probability exactly ``p``. The conditional
normals and ``g`` are float32 draws of continuous laws, which the certificate does not cover
(its ``notes`` say so), so it never claims pure epsilon *as sampled*.

**Extreme inputs.** :meth:`PrivUnitG.round_to_sphere` never forms ``|x|`` of an unscaled
vector: it divides by ``m = max_i |x_i|`` first, so the scaled vector has entries in ``[-1, 1]``
and norm in ``[1, sqrt(D)]`` up to rounding (a huge ``m > 2^64`` is first scaled by the exact
power of two ``2^-64``: XLA divides through the reciprocal ``1 / m``, flushed to zero above
``2^126``). The radius is 1 when ``m >= C``, else ``min(1, |x / m| (m / C))``: exact for huge
values, and no product can overflow. For *any* finite input the direction is a finite unit
vector. An input with a NaN or infinite entry, or with ``m`` below float32's smallest normal
number (``2^-126``, which XLA may flush to zero), is treated as the zero vector (a uniformly
random direction). Every input thus gets an output law of the same form, so one record can
never make the release deterministic or NaN.

Numerics. Constants are computed once in float64 (SciPy) in log space, so any ``eps`` (also
``1000``) gives finite ``gamma`` and ``s`` (the reference caps ``q`` at ``1 / (4 10^8)`` for
``eps >= 20``). Both conditional normals are drawn by the inverse CDF (the tail in log space,
:func:`ndtri_exp`, when ``q`` is below float32's range), exact up to float32 rounding and stable
far in the tail; no rejection loop.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr, ndtri
from scipy import special

from ldptree._typing import PRNGKey
from ldptree._validation import check_positive
from ldptree.accounting import ReleaseCertificate

__all__ = ["PrivUnitG", "ndtri_exp"]

#: The reference's grid for the cap probability ``p``.
P_GRID = tuple(round(0.01 * k, 2) for k in range(1, 100))
_LOG_HALF = math.log(0.5)
_NEWTON_STEPS = 4
#: Below this ``log q`` the tail sampler works in log space (``e^-80`` is near float32's floor).
_LOG_Q_DIRECT = -80.0
#: Inputs with ``max |x_i|`` above this are scaled by ``2^-64`` before dividing by the maximum.
_PRESCALE_ABOVE = 2.0**64


def _constants(epsilon: float, p: float) -> tuple[float, float, float]:
    """``(gamma, log q, scale s)`` in float64 for cap probability ``p``."""
    log_q = float(special.log_expit(math.log(p / (1.0 - p)) - epsilon))
    gamma = -float(special.ndtri_exp(log_q))
    log_phi = -0.5 * gamma * gamma - 0.5 * math.log(2.0 * math.pi)
    log_one_minus_q = float(special.log_ndtr(gamma))
    mean_alpha = math.exp(log_phi + math.log(p) - log_q) - math.exp(
        log_phi + math.log1p(-p) - log_one_minus_q
    )
    return gamma, log_q, 1.0 / mean_alpha


#: The grid of JAX's float32 uniform variates: ``P(U < p) = p`` exactly for ``p`` on it.
_COIN_GRID = 2.0**23


def _coin(p: float) -> float:
    """``p`` rounded to the nearest point of ``2^-23 Z`` inside ``(0, 1)``."""
    k = min(max(round(p * _COIN_GRID), 1), int(_COIN_GRID) - 1)
    return k / _COIN_GRID


def _to_epsilon(value: Any) -> float:
    return check_positive(value, "epsilon")


@attrs.frozen
class PrivUnitG:
    """PrivUnitG at budget ``epsilon`` (module docstring); constants fixed at construction.

    ``cap_probability`` (``p``) defaults to the reference's choice, the grid value minimising the
    scale ``s``; the one used is ``p``, rounded to the coin's grid ``2^-23 Z``.
    """

    epsilon: float = attrs.field(converter=_to_epsilon)
    cap_probability: float | None = None
    p: float = attrs.field(init=False)
    gamma: float = attrs.field(init=False)
    log_q: float = attrs.field(init=False)
    scale: float = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        p = self.cap_probability
        if p is None:
            p = min(P_GRID, key=lambda c: _constants(self.epsilon, c)[2])
        elif not 0.0 < p < 1.0:
            raise ValueError(f"cap_probability must lie in (0, 1), got {p!r}")
        p = _coin(p)  # the cap coin as sampled (module docstring)
        gamma, log_q, scale = _constants(self.epsilon, p)
        object.__setattr__(self, "p", p)
        object.__setattr__(self, "gamma", gamma)
        object.__setattr__(self, "log_q", log_q)
        object.__setattr__(self, "scale", scale)

    @property
    def q(self) -> float:
        """``P(N(0, 1) >= gamma)``."""
        return math.exp(self.log_q)

    def cap_probabilities(self) -> tuple[float, float]:
        """``(P(cap | u), P(cap | -u))`` for the cap event ``{<Z, u> >= s gamma}``.

        Their ratio is ``e^eps``: the worst case of the density ratio, attained on an event.
        """
        body = math.exp(math.log1p(-self.p) + self.log_q - float(special.log_ndtr(self.gamma)))
        return self.p, body

    def realised_epsilon(self) -> float:
        """``log(p (1 - q) / ((1 - p) q))`` from the constants the sampler uses (float64)."""
        return (
            math.log(self.p)
            - math.log1p(-self.p)
            + float(special.log_ndtr(self.gamma))
            - self.log_q
        )

    def certificate(self, epsilon_claimed: float | None = None) -> ReleaseCertificate:
        """The realised bound of one message against the claim (``epsilon`` by default).

        ``holds`` when :meth:`realised_epsilon` ``<= epsilon_claimed (1 + 1e-9)`` (the claim is
        ``(epsilon_claimed, 0)``). ``pure`` is ``False``: the bound is of the declared
        continuous law with the sampled cap coin, not of the float32 draws (module docstring).
        """
        claim = (
            self.epsilon
            if epsilon_claimed is None
            else check_positive(epsilon_claimed, "epsilon_claimed")
        )
        realised = self.realised_epsilon()
        return ReleaseCertificate(
            epsilon_claimed=claim,
            delta_claimed=0.0,
            epsilon=realised,
            delta=0.0,
            covers_sampler=False,
            method="PrivUnitG cap ratio p (1 - q) / ((1 - p) q) from the sampler's constants",
            notes=(
                f"covers the declared law: cap coin p = {self.p!r} (exact as sampled: a float32 "
                f"uniform on 2^-23 Z is below p with probability p), threshold gamma = "
                f"{self.gamma!r}, q = P(N(0,1) >= gamma) = exp({self.log_q!r}), in float64",
                "does not cover the float32 sampler of the continuous parts (the Gaussian g and "
                "the inverse-CDF draws of the conditional normals): their rounding is not "
                "certified, so this is not a pure-epsilon certificate of the release as sampled",
                "valid for unit inputs; privatize_ball rounds any input to the sphere first",
            ),
        )

    def log_density(self, z: Any, u: Any) -> np.ndarray[Any, Any]:
        """``log f_u(z)`` (float64, NumPy) of outputs ``z: float[m, D]`` for a unit ``u: [D]``."""
        z = np.asarray(z, dtype=np.float64) / self.scale
        u = np.asarray(u, dtype=np.float64)
        dim = z.shape[-1]
        gaussian = -0.5 * np.sum(z * z, axis=-1) - 0.5 * dim * math.log(2.0 * math.pi)
        cap = z @ u >= self.gamma
        log_c = np.where(
            cap,
            math.log(self.p) - self.log_q,
            math.log1p(-self.p) - float(special.log_ndtr(self.gamma)),
        )
        result: np.ndarray[Any, Any] = gaussian + log_c - dim * math.log(self.scale)
        return result

    def sample_alpha(self, key: PRNGKey) -> jax.Array:
        """One draw of ``alpha`` (float32): the mixture of the two conditional normals.

        Tail: ``P(N >= alpha) = U q``; body: ``P(N < alpha) = U (1 - q)``, ``U`` uniform. Float32
        ``ndtri`` is accurate (relative ``2e-7``) down to ``1e-37``; below that (``q < 1e-35``,
        ``eps`` above about 80) the tail goes through :func:`ndtri_exp` in log space. The branch
        is on a constant, so the compiled step holds one of the two.
        """
        k_cap, k_u = jax.random.split(key)
        cap = jax.random.uniform(k_cap) < self.p
        tiny = jnp.float32(np.finfo(np.float32).tiny)
        u = jax.random.uniform(k_u, minval=tiny)
        if self.log_q > _LOG_Q_DIRECT:
            tail = -ndtri(jnp.maximum(u * jnp.float32(self.q), tiny))
        else:
            tail = -ndtri_exp(jnp.log(u) + jnp.float32(self.log_q))
        body = ndtri(jnp.maximum(u * jnp.float32(-math.expm1(self.log_q)), tiny))
        gamma = jnp.float32(self.gamma)
        # float32 rounding must not move a draw across gamma (the density is discontinuous there)
        tail = jnp.maximum(tail, gamma)
        body = jnp.minimum(body, jnp.nextafter(gamma, jnp.float32(-jnp.inf)))
        return jnp.where(cap, tail, body)

    def privatize(self, key: PRNGKey, u: jax.Array) -> jax.Array:
        """``Z`` for a unit vector ``u: float[D]`` (jittable; ``u`` must have norm 1)."""
        k_g, k_alpha = jax.random.split(key)
        g = jax.random.normal(k_g, u.shape, dtype=u.dtype)
        alpha = self.sample_alpha(k_alpha)
        out: jax.Array = self.scale * (g - jnp.dot(g, u) * u + alpha * u)
        return out

    def privatize_ball(self, key: PRNGKey, x: jax.Array, clip: float = 1.0) -> jax.Array:
        """``Z`` unbiased for the normalised input ``x_bar = x / max(|x|, clip)`` (norm <= 1).

        The holder first rounds ``x_bar`` to the sphere at random: ``u = +x_bar / |x_bar|`` with
        probability ``(1 + |x_bar|) / 2``, else ``-x_bar / |x_bar|`` (a uniformly random direction
        when ``x = 0``), so ``E[u] = x_bar``; then it releases ``PrivUnitG(u)``, hence
        ``E[Z] = x_bar``. Privacy: the output law is a mixture over unit inputs ``u``, each
        within ``e^eps`` of every other unit input's law, so ``f_x(z) <= max_u f_u(z) <=
        e^eps min_u f_u(z) <= e^eps f_x'(z)``: eps-LDP for every ``x``. (The reference feeds a
        short ``x_bar`` to PrivUnitG unrounded: unbiased, but then the guarantee fails.)
        """
        k_round, k_priv = jax.random.split(key)
        return self.privatize(k_priv, self.round_to_sphere(k_round, x, clip))

    def round_to_sphere(self, key: PRNGKey, x: jax.Array, clip: float = 1.0) -> jax.Array:
        """The unit vector ``u`` of :meth:`privatize_ball`: ``E[u] = x / max(|x|, clip)``.

        Finite for every input (module docstring, "Extreme inputs"): with ``m = max_i |x_i|``,
        ``|x| = m |x / m|`` is never formed; the radius is ``min(1, |x / m| (m / clip))``. An
        input with a non-finite entry or with ``m < 2^-126`` is the zero vector (random
        direction).
        """
        k_dir, k_sign = jax.random.split(key)
        x = jnp.asarray(x)
        tiny = jnp.asarray(np.finfo(np.float32).tiny, x.dtype)
        m = jnp.max(jnp.abs(x))
        usable = jnp.all(jnp.isfinite(x)) & (m >= tiny)
        # XLA divides by multiplying with the reciprocal, and 1 / m is subnormal (flushed to 0)
        # for m > 2^126: pre-scale huge inputs by the exact power of two 2^-64 first
        big = m > _PRESCALE_ABOVE
        x_pre = jnp.where(big, x * jnp.asarray(2.0**-64, x.dtype), x)
        m_pre = jnp.where(usable, jnp.where(big, m * jnp.asarray(2.0**-64, x.dtype), m), 1.0)
        scaled = jnp.where(usable, x_pre / m_pre, 0.0)  # entries in [-1, 1], the largest ~ +-1
        scaled_norm = jnp.where(usable, jnp.linalg.norm(scaled), 1.0)  # about [1, sqrt(D)]
        clip_arr = jnp.asarray(clip, x.dtype)
        radius = jnp.where(
            usable & (m < clip_arr),
            jnp.minimum(scaled_norm * (jnp.where(usable, m, 0.0) / clip_arr), 1.0),
            jnp.where(usable, 1.0, 0.0),
        )
        random_dir = jax.random.normal(k_dir, x.shape, dtype=x.dtype)
        direction = jnp.where(usable, scaled / scaled_norm, random_dir)
        # renormalise in float32 so that |u| = 1 to rounding (|direction| >= 1/sqrt(D) here,
        # and a standard normal draw of norm below 2^-126 has probability 0 in float32)
        direction = direction / jnp.linalg.norm(direction)
        sign = jnp.where(jax.random.uniform(k_sign) < (1.0 + radius) / 2.0, 1.0, -1.0)
        out: jax.Array = sign * direction
        return out


def ndtri_exp(y: jax.Array) -> jax.Array:
    """``Phi^{-1}(e^y)`` for ``y <= 0`` in float32, accurate far in both tails.

    ``y > log 1/2``: ``-Phi^{-1}(-expm1(y))`` (no cancellation near ``y = 0``). Otherwise
    ``Phi^{-1}(e^y)`` where ``e^y`` is a normal float32, else the start ``-sqrt(-2 y)``, then
    Newton steps on ``log Phi(t) = y``: ``log Phi`` is increasing and concave, so from a start
    left of the root the iterates increase monotonically to it (tangents lie above the curve).
    """
    y = jnp.asarray(y, dtype=jnp.float32)
    upper = -ndtri(-jnp.expm1(jnp.minimum(y, 0.0)))
    tiny = math.log(float(np.finfo(np.float32).tiny)) + 1.0
    start = jnp.where(y > tiny, ndtri(jnp.exp(jnp.maximum(y, tiny))), -jnp.sqrt(-2.0 * y))
    t = jnp.minimum(start, 0.0)
    for _ in range(_NEWTON_STEPS):
        log_cdf = log_ndtr(t)
        log_pdf = -0.5 * t * t - 0.5 * math.log(2.0 * math.pi)
        t = t - (log_cdf - y) * jnp.exp(log_cdf - log_pdf)
    out: jax.Array = jnp.where(y > _LOG_HALF, upper, t)
    return out
