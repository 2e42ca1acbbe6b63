"""The validation holders' release in private tuning (LPDT App. D.2).

Each of ``n_v`` validation holders (disjoint from the training holders) receives the ``k``
candidate models, computes its own losses ``l_i = (l_i1, ..., l_ik)``, clips them to ``[0, B]``
and releases them as **integer codes** with exactly sampled noise:

* **grid**: ``m`` levels (``m = levels``) of step ``h = B / m``; the clipped loss is rounded
  stochastically to ``a = floor(l / h)`` or ``a + 1`` (up with probability ``frac(l / h)``), so
  ``a in {0, ..., m}`` and ``E[a h] = l``;
* **noise**: ``c = clamp(a + Z, -margin, m + margin)`` with ``Z`` the clamped two-sided geometric
  ("discrete Laplace") law of :func:`~ldptree.mechanisms._exact.geometric_noise_law` at
  ``gamma = eps / (k m)``, drawn from 64 uniform bits by integer comparisons only
  (:meth:`~ldptree.mechanisms._exact.DyadicLaw.sample_numpy`);
* **decoding** (curator, post-processing): ``c h``.

**Privacy.** The realised counts give ``P(c | a) <= e^{g |a - b|} P(c | b)`` per coordinate with
``g = chain_ratio(...) <= gamma`` read off the counts. Two holders' code vectors differ by at most
``m`` in each of the ``k`` coordinates (L1 distance ``<= k m``: the ``k`` losses of one record can
all move across the whole range, so no better bound holds in general), and the coordinates'
noises are independent, so the release of the code vector is ``k m g``-LDP, ``<= eps``. The
stochastic rounding happens before the noise and is a mixture over codes, each pair of which is
within ``e^{k m g}``, so the release of the loss vector is too. :func:`loss_release_certificate`
recomputes ``k m g`` from the counts. Unlike textbook ``l + Laplace()`` in floating point, whose
set of possible outputs depends on ``l`` (Mironov's attack), every code in ``[-margin, m +
margin]`` has positive probability under every loss vector.

**Bias.** ``E[c h] = l`` up to the clamp: ``|E[c h] - l| <= h (|E Z| + E[(|Z| - margin)_+])``
(:meth:`LossRelease.bias_bound`, exact from the counts; ``margin`` is chosen so that
``e^{-gamma margin} <= 2^-30``), plus the float rounding of ``l / h``.

**Levels.** ``m`` is the largest count (at most 1024) keeping the noise support ``2 (m + margin)
+ 1`` within ``2^15`` points (at least 1): the rounding variance ``<= h^2 / 4`` is then below
``1 / 2000`` of the noise variance ``~ 2 (k B / eps)^2``. The noise scale in loss units is
``h / gamma = k B / eps``, the Laplace scale of basic composition of ``k`` releases at
``eps / k``.

The paper states the noise as ``M^2 sqrt(k) xi / eps`` "by advanced composition"; that constant
is neither pure ``eps``-LDP nor matched to the ``[0, 4M^2]`` range, so it is reported
(:func:`paper_noise_scale`) but not used.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_int, check_positive
from ldptree.accounting._release import ReleaseCertificate
from ldptree.mechanisms._exact import DyadicLaw, chain_ratio, geometric_noise_law

__all__ = [
    "LossRelease",
    "clamped_release_certificate",
    "loss_release_certificate",
    "noise_scale",
    "paper_noise_scale",
    "privatize_losses",
]

#: Largest half-support ``m + margin`` of the noise (keeps the table small and fast to build).
_MAX_HALF_SUPPORT = 1 << 14
_MAX_LEVELS = 1024
#: ``margin * gamma >= _TAIL_BITS ln 2``: the clamp moves at most ``2^-30`` of the mass.
_TAIL_BITS = 30


def noise_scale(k: int, bound: float, epsilon: float) -> float:
    """Scale ``k B / eps`` of the discrete Laplace noise in loss units (``h / gamma``)."""
    return k * check_positive(bound, "bound") / check_positive(epsilon, "epsilon")


def paper_noise_scale(k: int, bound: float, epsilon: float) -> float:
    """The paper's ``M^2 sqrt(k) / eps`` with ``M^2 = B / 4`` (reported only)."""
    return (bound / 4.0) * math.sqrt(k) / check_positive(epsilon, "epsilon")


def _margin(gamma: float) -> int:
    return math.ceil(_TAIL_BITS * math.log(2.0) / gamma)


def default_levels(k: int, epsilon: float) -> int:
    """Largest ``m <= 1024`` with ``m + margin(eps / (k m)) <= 2^14`` (at least 1)."""
    per_level = 1.0 + _TAIL_BITS * math.log(2.0) * k / epsilon  # (m + margin) / m, about
    return max(1, min(_MAX_LEVELS, int(_MAX_HALF_SUPPORT / per_level)))


@attrs.frozen
class LossRelease:
    """The release of ``k`` clipped losses in ``[0, bound]`` at ``epsilon`` (module docstring)."""

    k: int = attrs.field(converter=int)
    bound: float = attrs.field(converter=float)
    epsilon: float = attrs.field(converter=float)
    levels: int = attrs.field(converter=int)

    def __attrs_post_init__(self) -> None:
        check_int(self.k, "k", minimum=1)
        check_positive(self.bound, "bound")
        check_positive(self.epsilon, "epsilon")
        check_int(self.levels, "levels", minimum=1)

    @classmethod
    def create(cls, k: int, bound: float, epsilon: float, levels: int | None = None) -> LossRelease:
        """The release with ``levels`` grid levels (default :func:`default_levels`)."""
        k = check_int(k, "k", minimum=1)
        epsilon = check_positive(epsilon, "epsilon")
        return cls(k, bound, epsilon, default_levels(k, epsilon) if levels is None else levels)

    @property
    def gamma(self) -> float:
        """Per-level noise parameter ``eps / (k m)``."""
        return self.epsilon / (self.k * self.levels)

    @property
    def margin(self) -> int:
        """Codes are clamped to ``[-margin, m + margin]``; ``e^{-gamma margin} <= 2^-30``."""
        return _margin(self.gamma)

    @property
    def step(self) -> float:
        """Grid step ``h = B / m`` in loss units."""
        return self.bound / self.levels

    @property
    def noise(self) -> DyadicLaw:
        """The realised noise table (cached by :func:`geometric_noise_law`)."""
        return geometric_noise_law(self.gamma, self.levels, self.margin)

    def certificate(self) -> ReleaseCertificate:
        """Pure-``eps`` certificate of the realised counts (:func:`clamped_release_certificate`)."""
        return clamped_release_certificate(
            self.noise, self.levels, self.margin, self.k, self.epsilon
        )

    def bias_bound(self) -> float:
        """``h (|E Z| + E[(|Z| - margin)_+])``: bounds ``|E[c h] - l|`` (exact from the counts)."""
        return self.step * _clamp_bias_levels(self.noise, self.margin)

    def codes(
        self, losses: FloatArray, rng: np.random.Generator
    ) -> np.ndarray[tuple[int, ...], np.dtype[np.int64]]:
        """Integer codes ``int64[n_v, k]`` of the losses (rounding, then exact noise)."""
        losses = _check_losses(losses, self.k)
        scaled = np.clip(losses, 0.0, self.bound) / self.step
        base = np.minimum(np.floor(scaled), self.levels)
        up = rng.random(size=losses.shape) < (scaled - base)
        grid = base.astype(np.int64) + up.astype(np.int64)
        noise = self.noise.sample_numpy(rng, size=losses.shape)
        out: np.ndarray[tuple[int, ...], np.dtype[np.int64]] = np.clip(
            grid + noise, -self.margin, self.levels + self.margin
        )
        return out

    def decode(self, codes: np.ndarray[tuple[int, ...], np.dtype[np.int64]]) -> FloatArray:
        """``c h``: the curator's estimate of each loss (unbiased up to :meth:`bias_bound`)."""
        out: FloatArray = np.asarray(codes, dtype=np.float64) * self.step
        return out


def _check_losses(losses: FloatArray, k: int | None = None) -> FloatArray:
    losses = np.asarray(losses, dtype=np.float64)
    if losses.ndim != 2 or losses.shape[1] == 0:
        raise ValueError(f"losses must be float[n_v, k] with k >= 1, got shape {losses.shape}")
    if k is not None and losses.shape[1] != k:
        raise ValueError(f"losses must have k = {k} columns, got {losses.shape[1]}")
    if not np.all(np.isfinite(losses)):
        raise ValueError("losses contains NaN or infinite values")
    return losses


@functools.lru_cache(maxsize=64)
def _clamp_bias_levels(noise: DyadicLaw, margin: int) -> float:
    counts = noise.counts
    total = 1 << 64
    mean = Fraction(sum(c * (noise.first + i) for i, c in enumerate(counts)), total)
    excess = sum(c * max(0, abs(noise.first + i) - margin) for i, c in enumerate(counts))
    bound = abs(mean) + Fraction(excess, total)
    return float(bound) * (1.0 + 2.0**-50)  # rounded up


def clamped_release_certificate(
    noise: DyadicLaw, levels: int, margin: int, coordinates: int, epsilon_claimed: float
) -> ReleaseCertificate:
    """Pure certificate of ``coordinates`` independent releases ``clamp(a + Z, -margin, levels +
    margin)``, ``a in {0, ..., levels}``: ``eps = coordinates * levels * chain_ratio(...)``
    (the L1 distance of two code vectors is at most ``coordinates * levels``)."""
    g = chain_ratio(noise, levels, margin)
    epsilon = coordinates * levels * g
    return ReleaseCertificate(
        epsilon_claimed=epsilon_claimed,
        delta_claimed=0.0,
        epsilon=epsilon,
        delta=0.0,
        method="chain ratio of the realised clamped geometric counts times the L1 sensitivity",
        notes=(
            f"per-level log-ratio g = {g!r} read off the counts (logs rounded up)",
            f"L1 sensitivity {coordinates} coordinates x {levels} levels",
            f"codes clamped to [{-margin}, {levels + margin}], all positive under every input",
        ),
    )


def loss_release_certificate(
    k: int, bound: float, epsilon: float, *, levels: int | None = None
) -> ReleaseCertificate:
    """The certificate of :func:`privatize_losses` for ``k`` losses in ``[0, bound]``."""
    return LossRelease.create(k, bound, epsilon, levels).certificate()


def privatize_losses(
    losses: FloatArray,
    *,
    bound: float,
    epsilon: float,
    rng: np.random.Generator,
    levels: int | None = None,
) -> FloatArray:
    """Each row is one validation holder's ``k`` losses; returns their ``eps``-LDP release,
    decoded to loss units (``code * B / m``; module docstring)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    losses = _check_losses(losses)
    release = LossRelease.create(losses.shape[1], bound, epsilon, levels)
    return release.decode(release.codes(losses, rng))
