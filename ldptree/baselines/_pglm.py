"""PGLM (Wang et al., JMLR 2023): non-interactive LDP logistic GLM with public unlabeled data.

Holder ``i`` has ``x_i`` min-max scaled to the public box and clipped to ``[0, 1]^d`` (by the
mechanism, so the guarantee holds for any input), ``x~_i = (1, x_i)`` (intercept, ``d' = d + 1``)
and ``y_i in {0, 1}`` (``classes_[1]`` is 1). It releases once, with Gaussian noise,

    v_i = (upper triangle of x~_i x~_i^T, x~_i y_i) + N(0, S),      D = d'(d'+1)/2 + d' numbers.

**Sensitivity.** Every coordinate of ``v`` lies in ``[0, 1]`` and the ``(0, 0)`` entry is always 1;
the pair ``(x, y) = (0, 0)`` vs ``(1, 1)`` differs by exactly 1 in every other coordinate, so

    Delta_2 = sup ||v(x, y) - v(x', y')||_2 = sqrt(d(d + 3)/2 + d + 1) = sqrt((d^2 + 5d + 2) / 2),

attained. (With ``+-1`` labels the label block's range doubles and the supremum is no longer a
single corner; ``{0, 1}`` keeps it exact, and the curator forms ``+-1`` statistics afterwards.)

**Calibration (default ``mode="correct"``).** ``S = s^2 I`` with ``s = Delta_2 / mu`` and ``mu``
the largest value with ``delta_mu(eps) <= delta``, where for the Gaussian mechanism with
sensitivity-to-noise ratio ``mu`` (Balle and Wang 2018, analytic Gaussian mechanism; exact, valid
for every ``eps > 0``, unlike the classic ``sqrt(2 ln(1.25/delta)) / eps`` that needs ``eps < 1``)

    delta_mu(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu).

``delta`` defaults to ``1 / n_P^2`` where ``n_P`` is the number of private holders: public
metadata in the one-round protocol (the curator counts the reports; docs/privacy.md), so it is
fixed before any private value is seen. Pass ``delta`` to fix it otherwise.

**Curator** (post-processing). ``Sigma^ = sum_i`` (symmetrised upper triangles), ``b^ =
sum_i x~_i y_i`` parts; ``beta01 = Sigma^{-1} b^`` by a symmetric solve; when ``Sigma^`` is singular
to working precision (a noisy sum can be), the minimum-norm least-squares solution (pseudo-inverse)
instead, with ``solver_ = "lstsq"``. The ``+-1``-label OLS is ``beta = 2 beta01 - e_0``
(``sum x~ (2y - 1) = 2 b^ - Sigma^ e_0`` since ``x~_0 = 1``), whose zero level set is the linear
probability model's ``1/2`` level set.

**Scale correction** on public ``X_Q`` (Erdogdu et al.'s scaled least squares):
``y^_Q = X~_Q beta``, Newton on ``F(c) = k c mean(phi2(c y^_Q)) - 1`` with
``F'(c) = k [mean(phi2(c y^)) + mean(c y^ phi3(c y^))]``, 10 steps from ``c = 1``,
``phi2 = s(1 - s)``, ``phi3 = s(1 - s)(1 - 2 s)``, ``s`` the logistic function; ``w = c beta``.
``k = 2`` for ``+-1`` labels (Stein: ``E[x y] = Sigma w E[2 phi2(x.w)]`` for ``y in {-1, 1}``),
``k = 1`` for ``{0, 1}`` (reference). A non-finite or non-positive ``c`` falls back to ``c = 1``.

**Prediction.** ``predict = classes_[1{x~ . w > 0}]`` (the logistic rule), ``predict_proba =
sigmoid(x~ . w)``.

``mode="reference"`` (the authors' reference code): one Gaussian draw on the aggregate,
``sigma^2 = 32 r^4 ln(2.5/delta) / eps^2 * sqrt(n_P)`` with ``r = d'``, noise
``sigma (G + G^T)/sqrt(2)`` on ``Sigma^`` and ``sigma g`` on ``b^`` — the law of per-holder noise
of standard deviation ``sigma / sqrt(n_P)`` (``sqrt(2)`` times that on the diagonal), which is how
it is accounted here; ``{0, 1}`` labels (``beta = beta01``, ``k = 1``), ``predict =
1{x~ . w > 1/2}`` and ``predict_proba`` the linear score (clipped to [0, 1]). Because its per-holder
noise shrinks like ``n_P^{-1/4}`` it misses the claimed ``(eps, delta)`` for large ``n_P``:
``mechanism_.meets_claim`` says whether it holds and ``privacy_`` is the *true* spend (the
smallest ``eps`` at the claimed ``delta``). Features are clipped in both modes (the reference does
not clip, which leaves the sensitivity unbounded).

**Exact release.** The numbers above describe the continuous Gaussian; what is sampled is its
exact discrete counterpart (:meth:`GaussianGLMStatistics.privatize_codes`): each coordinate is
rounded stochastically to a power-of-two grid ``h`` (unbiased; the largest ``h <= 1`` with
``s / h >= 16``, so the rounding adds at most ``1/1024`` of the noise variance) and integer noise
from realised discrete Gaussian tables of scale ``s / h`` (drawn with 64-bit integer comparisons
only; under very weak privacy a sum of eight tables, whose tails reach further) is added. A
holder's report is integer codes, decoded as ``code * h``. Floating-point noise leaked the label:
``(report - candidate) / s`` landed on the float32 grid only for the true label. Here every
candidate has positive likelihood for every report. :meth:`~GaussianGLMStatistics.certificate`
computes ``delta`` at the claimed ``eps`` from the realised tables
(:mod:`ldptree.mechanisms._discrete_gaussian`: the worst pair shifts every non-constant code by
``1 / h``), and the calibration inflates the analytic ``s`` by factors ``1 + 2^-11`` until it
holds; ``delta_at``, ``meets_claim`` and ``spend`` all read that certificate.

Privacy accounting. ``verify_ldp`` certifies pure-eps laws only; a Gaussian release has no finite
pure epsilon. The release is one ``(eps, delta)`` Gaussian mechanism per holder, recorded once in
``privacy_ledger_`` (no composition: one message per holder); its calibration is tested directly
(``tests/baselines/test_pglm.py``: the hockey-stick divergence at the worst-case pair).
"""

from __future__ import annotations

import functools
import math
import warnings
from typing import Any, ClassVar

import attrs
import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
from scipy import optimize, special

from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import (
    as_key,
    check_choice,
    check_epsilon,
    check_features,
    check_int,
    check_positive,
)
from ldptree.accounting import PrivacyLedger, PrivacySpend, ReleaseCertificate
from ldptree.estimators import (
    BaseEstimator,
    ClassifierMixin,
    check_class_labels,
    check_fit_data,
    encode_labels,
    fit_scaler,
    keeps_state_on_error,
    resolve_classes,
)
from ldptree.mechanisms._discrete_gaussian import (
    DiscreteGaussianGroup,
    product_delta,
)
from ldptree.mechanisms._records import check_first_holder
from ldptree.rounds import chunk_rows

__all__ = [
    "GaussianGLMStatistics",
    "PGLMClassifier",
    "gaussian_delta",
    "gaussian_epsilon",
    "gaussian_ratio",
]

_MODES = ("correct", "reference")
_NEWTON_STEPS = 10
#: Released numbers per privatized chunk (holders x D).
_CHUNK_NUMBERS = 1 << 22
#: The grid step is the largest power of two with ``std / step >= _LEVELS_PER_STD`` (and <= 1).
_LEVELS_PER_STD = 16
_MIN_STEP = 2.0**-30
#: Calibration inflates the analytic-Gaussian ``s`` by this factor until the certificate holds.
_INFLATE = 1.0 + 2.0**-11
_MAX_INFLATIONS = 1 << 16


def gaussian_delta(mu: float, epsilon: float) -> float:
    """``delta_mu(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu)`` in log space.

    The exact hockey-stick divergence ``sup_S P(S) - e^eps Q(S)`` between ``N(0, 1)`` and
    ``N(mu, 1)`` (Balle and Wang 2018, Thm 8); ``0`` for ``mu = 0``.
    """
    if mu <= 0.0:
        return 0.0
    a = float(special.log_ndtr(mu / 2.0 - epsilon / mu))
    b = epsilon + float(special.log_ndtr(-mu / 2.0 - epsilon / mu))
    return max(0.0, math.exp(a) * -math.expm1(b - a)) if b < a else 0.0


def gaussian_ratio(epsilon: float, delta: float) -> float:
    """The largest ``mu = Delta / s`` with ``delta_mu(eps) <= delta`` (analytic calibration)."""
    lo, hi = 1e-8, 1.0
    while gaussian_delta(hi, epsilon) <= delta:
        lo, hi = hi, 2.0 * hi
    mu: float = optimize.brentq(
        lambda m: math.log(max(gaussian_delta(m, epsilon), 1e-300)) - math.log(delta),
        lo,
        hi,
        xtol=1e-14,
        rtol=1e-13,
    )
    # the returned point must satisfy the inequality, not only be close to the root
    while gaussian_delta(mu, epsilon) > delta:
        mu *= 1.0 - 1e-12
    return mu


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The smallest ``eps >= 0`` with ``delta_mu(eps) <= delta`` (``delta_mu`` decreases in eps)."""
    if gaussian_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gaussian_delta(mu, hi) > delta:
        hi *= 2.0
    eps: float = optimize.brentq(
        lambda e: math.log(max(gaussian_delta(mu, e), 1e-300)) - math.log(delta),
        hi / 2.0 if hi > 1.0 else 0.0,
        hi,
        xtol=1e-12,
    )
    while gaussian_delta(mu, eps) > delta:
        eps *= 1.0 + 1e-12
    return eps


def _triu(n_features: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Row/column indices of the upper triangle (diagonal included) of a ``d' x d'`` matrix."""
    rows, cols = np.triu_indices(n_features + 1)
    return rows, cols


def _check_delta(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, float) and 0.0 < value < 1.0):
        raise ValueError(f"{attribute.name} must lie in (0, 1), got {value!r}")


def _to_floats(value: Any) -> tuple[float, ...]:
    return tuple(float(v) for v in value)


@attrs.frozen
class GaussianGLMStatistics:
    """One holder's Gaussian release of ``(triu(x~ x~^T), x~ y)`` (module docstring).

    ``coordinate_std`` is the per-holder noise standard deviation of each of the ``D`` released
    coordinates (upper triangle in ``np.triu_indices`` order, then the label block). Build it with
    :meth:`calibrated` (correct) or :meth:`reference` (the reference code's noise, per holder).
    """

    epsilon: float = attrs.field(converter=float)
    delta: float = attrs.field(converter=float, validator=_check_delta)
    n_features: int
    coordinate_std: tuple[float, ...] = attrs.field(converter=_to_floats)
    calibration: str = "analytic"
    parts: int = attrs.field(default=1, converter=int)

    @classmethod
    def calibrated(cls, epsilon: float, delta: float, n_features: int) -> GaussianGLMStatistics:
        """Isotropic noise: ``s = Delta_2 / mu(eps, delta)`` (analytic Gaussian mechanism), then
        inflated by factors ``1 + 2^-11`` until the certificate of the *realised* discrete
        Gaussian tables holds (one or two steps in practice)."""
        epsilon = check_positive(epsilon, "epsilon")
        return _calibrated(epsilon, float(delta), check_int(n_features, "n_features", minimum=1))

    @classmethod
    def reference(
        cls, epsilon: float, delta: float, n_features: int, n_holders: int
    ) -> GaussianGLMStatistics:
        """The reference's aggregate noise as per-holder noise (``sigma / sqrt(n_P)`` each)."""
        epsilon = check_positive(epsilon, "epsilon")
        r = n_features + 1
        sigma = math.sqrt(32.0 * r**4 * math.log(2.5 / delta) / epsilon**2 * math.sqrt(n_holders))
        per = sigma / math.sqrt(n_holders)
        rows, cols = _triu(n_features)
        matrix = np.where(rows == cols, math.sqrt(2.0) * per, per)
        std = (*matrix.tolist(), *([per] * (n_features + 1)))
        return cls(epsilon, delta, n_features, std, "reference")

    @property
    def dimension(self) -> int:
        """``D``, released numbers per holder."""
        return _dimension(self.n_features)

    @property
    def sensitivity(self) -> float:
        """``Delta_2`` (attained by ``(x, y) = (0, 0)`` vs ``(1, 1)``)."""
        return math.sqrt(_sensitivity_squared(self.n_features))

    @property
    def ratio(self) -> float:
        """``mu = sup ||S^{-1/2} (v - v')||`` of the continuous Gaussian this release discretises:
        every coordinate differs by at most 1, all at once at the worst-case pair, so it is
        ``sqrt(sum_k [k non-constant] / std_k^2)``. The privacy of what is sampled is
        :meth:`certificate` / :meth:`delta_at`."""
        std = np.asarray(self.coordinate_std)
        weights = np.ones(self.dimension)
        weights[0] = 0.0  # the (0, 0) entry is the constant 1
        return float(math.sqrt(np.sum(weights / std**2)))

    @property
    def step(self) -> float:
        """Grid step ``h``: the largest power of two ``<= 1`` with ``min std / h >= 16``
        (at least ``2^-30``); statistics are rounded to it and the noise lives on it."""
        return _grid_step(min(self.coordinate_std))

    @property
    def levels(self) -> int:
        """``N = 1 / h``: each coordinate's code lies in ``{0, ..., N}``."""
        return round(1.0 / self.step)

    def noise_groups(self) -> tuple[DiscreteGaussianGroup, ...]:
        """The non-constant coordinates grouped by noise table (scale ``std / h``, shift ``N``)."""
        return _groups(self.coordinate_std, self.step, self.parts)

    def delta_at(self, epsilon: float) -> float:
        """Certified ``delta`` of one holder's release at ``epsilon``, computed from the realised
        discrete Gaussian tables (:func:`~ldptree.mechanisms._discrete_gaussian.product_delta`)."""
        return product_delta(self.noise_groups(), float(epsilon))

    def certificate(self) -> ReleaseCertificate:
        """The claim against the ``(epsilon, delta)`` of what :meth:`privatize` samples."""
        groups = self.noise_groups()
        delta = product_delta(groups, self.epsilon, stop_below=self.delta)
        tables = ", ".join(
            f"{g.count} coordinates with scale {g.sigma:.6g} levels (support {g.law.size})"
            for g in groups
        )
        return ReleaseCertificate(
            epsilon_claimed=self.epsilon,
            delta_claimed=self.delta,
            epsilon=self.epsilon,
            delta=delta,
            method="hockey-stick of the realised discrete Gaussian tables at the worst pair",
            notes=(
                f"grid step h = 2^{round(math.log2(self.step))}, codes in 0..{self.levels}",
                f"worst pair: every non-constant code shifted by {self.levels}: {tables}",
                "tables exactly symmetric and log-concave (else delta = 1)",
            ),
        )

    @property
    def meets_claim(self) -> bool:
        """The certificate holds: what is sampled is ``(epsilon, delta)``-LDP."""
        return self.certificate().holds

    @property
    def spend(self) -> PrivacySpend:
        """The certified per-holder spend at the claimed ``delta`` (the claim when it holds)."""
        if self.meets_claim:
            return PrivacySpend(epsilon=self.epsilon, delta=self.delta)
        return PrivacySpend(epsilon=self._epsilon_at(self.delta), delta=self.delta)

    def _epsilon_at(self, delta: float) -> float:
        """Smallest ``eps`` (to a relative ``1e-6``, rounded up) with ``delta_at(eps) <= delta``."""
        lo, hi = 0.0, max(self.epsilon, 1.0)
        while self.delta_at(hi) > delta:
            lo, hi = hi, 2.0 * hi
            if hi > 1e6:
                raise ValueError(f"no epsilon below 1e6 reaches delta={delta!r}")
        while hi - lo > 1e-6 * hi:
            mid = 0.5 * (lo + hi)
            if self.delta_at(mid) <= delta:
                hi = mid
            else:
                lo = mid
        return hi

    def statistic(self, X: Any, y: Any) -> FloatArray:
        """``v(x, y): float[n, D]`` before noise; features clipped to [0, 1], ``y`` in {0, 1}
        (anything else, e.g. ``-1`` for an undeclared label, is the null record ``(0, 0)``)."""
        X = np.clip(np.asarray(X, dtype=np.float64), 0.0, 1.0)
        y = np.asarray(y)
        known = (y == 0) | (y == 1)
        X = np.where(known[:, None], X, 0.0)
        y01 = np.where(y == 1, 1.0, 0.0)
        Xt = np.concatenate([np.ones((X.shape[0], 1)), X], axis=1)
        rows, cols = _triu(self.n_features)
        out: FloatArray = np.concatenate([Xt[:, rows] * Xt[:, cols], Xt * y01[:, None]], axis=1)
        return out

    def privatize_codes(
        self, key: PRNGKey, X: Any, y: Any, *, first_holder: int = 0, pad_to: int = 0
    ) -> np.ndarray[Any, np.dtype[np.int64]]:
        """Integer reports ``int64[n, D]``: ``round_h(v_i) / h + Z_i`` (decoded as ``code * h``).

        Each coordinate ``v`` is rounded stochastically to ``{floor(v/h), floor(v/h) + 1}`` (up
        with probability ``frac(v/h)``, decided by comparing a uniform 32-bit word with
        ``floor(2^32 frac)``: unbiased up to ``2^-32 h``), then ``Z`` is drawn from the realised
        discrete Gaussian table of its coordinate with 64 uniform bits and integer comparisons
        only. Holder ``h``'s bits are ``bits(fold_in(key, h))``; ``pad_to`` draws them for at
        least that many holders (extra rows dropped), so chunks share one compiled sampler.
        """
        stats = self.statistic(X, y)
        n, dim = stats.shape
        scaled = stats / self.step  # exact: the step is a power of two
        base = np.floor(scaled)
        bump = np.floor((scaled - base) * 2.0**32).astype(np.uint64)
        check_first_holder(first_holder, max(n, pad_to))
        holders = jnp.arange(first_holder, first_holder + max(n, pad_to), dtype=jnp.uint32)
        words = np.asarray(_holder_bits(key, holders, dim, self.parts), dtype=np.uint64)[:n]
        codes = base.astype(np.int64) + (words[:, 0] < bump).astype(np.int64)
        std = np.asarray(self.coordinate_std)
        for value in np.unique(std):
            columns = np.flatnonzero(std == value)
            law = DiscreteGaussianGroup(float(value) / self.step, 0, 1, self.parts).law
            for part in range(self.parts):
                hi, lo = words[:, 1 + 2 * part], words[:, 2 + 2 * part]
                uniform = (hi[:, columns] << np.uint64(32)) | lo[:, columns]
                codes[:, columns] += law.sample_uniform(uniform)
        return codes

    def privatize(
        self, key: PRNGKey, X: Any, y: Any, *, first_holder: int = 0, pad_to: int = 0
    ) -> FloatArray:
        """Decoded reports ``code * h: float[n, D]`` of :meth:`privatize_codes`."""
        codes = self.privatize_codes(key, X, y, first_holder=first_holder, pad_to=pad_to)
        out: FloatArray = codes.astype(np.float64) * self.step
        return out


def _grid_step(std: float) -> float:
    if not (math.isfinite(std) and std > 0.0):
        raise ValueError(f"coordinate_std must be finite and positive, got {std!r}")
    return max(_MIN_STEP, min(1.0, 2.0 ** math.floor(math.log2(std / _LEVELS_PER_STD))))


def _groups(std: tuple[float, ...], step: float, parts: int) -> tuple[DiscreteGaussianGroup, ...]:
    """Non-constant coordinates (all but the first) grouped by their noise scale in levels."""
    values, counts = np.unique(np.asarray(std[1:]), return_counts=True)
    shift = round(1.0 / step)
    return tuple(
        DiscreteGaussianGroup(float(v) / step, int(c), shift, parts)
        for v, c in zip(values, counts, strict=True)
    )


#: Parts tried by the calibration: one table, or a sum of eight (reaches further into the tails).
_PARTS = (1, 8)


@functools.lru_cache(maxsize=64)
def _calibrated(epsilon: float, delta: float, n_features: int) -> GaussianGLMStatistics:
    """The smallest ``s`` (to a factor ``1 + 2^-11``) at or above the analytic-Gaussian one whose
    realised noise is certified: doubling steps up from it, then bisection on the exponent. One
    table is used if it certifies within 2% of the analytic ``s``; otherwise a sum of eight if
    that certifies a smaller ``s`` (weak privacy: a per-coordinate shift of several sd, or very
    many coordinates at a small ``delta``, beyond what one 64-bit table's tails can certify)."""
    dim = _dimension(n_features)
    start = math.sqrt(_sensitivity_squared(n_features)) / gaussian_ratio(epsilon, delta)
    best: GaussianGLMStatistics | None = None
    for parts in _PARTS:

        def build(power: int, parts: int = parts) -> GaussianGLMStatistics:
            std = start * _INFLATE**power
            return GaussianGLMStatistics(
                epsilon, delta, n_features, (std,) * dim, "analytic", parts
            )

        power = _smallest_power(build)
        if power is not None and (
            best is None or build(power).coordinate_std[0] < best.coordinate_std[0]
        ):
            best = build(power)
        if best is not None and best.coordinate_std[0] <= start * _INFLATE**40:
            break  # within 2% of the analytic Gaussian: not worth a sum of tables
    if best is None:
        raise ValueError(
            f"could not calibrate discrete Gaussian noise for epsilon={epsilon}, "
            f"delta={delta}, n_features={n_features}"
        )
    return best


def _smallest_power(build: Any) -> int | None:
    """Smallest ``p >= 0`` with ``build(p).certificate().holds`` (doubling, then bisection)."""
    if build(0).certificate().holds:
        return 0
    low, high = 0, 1
    while not build(high).certificate().holds:
        low, high = high, 2 * high
        if high > _MAX_INFLATIONS:
            return None
    while high - low > 1:
        mid = (low + high) // 2
        if build(mid).certificate().holds:
            high = mid
        else:
            low = mid
    return high


def _dimension(n_features: int) -> int:
    dp = n_features + 1
    return dp * (dp + 1) // 2 + dp


def _sensitivity_squared(n_features: int) -> float:
    return (n_features**2 + 5 * n_features + 2) / 2.0


@functools.partial(jax.jit, static_argnames=("dim", "parts"))
def _holder_bits(key: PRNGKey, holders: jax.Array, dim: int, parts: int) -> jax.Array:
    """``uint32[n, 1 + 2 parts, dim]`` uniform words of each holder, from its own key
    ``fold_in(key, h)``: one for the stochastic rounding, then two (high, low) per 64-bit draw
    of each noise part."""
    out: jax.Array = jax.vmap(
        lambda h: jax.random.bits(jax.random.fold_in(key, h), (1 + 2 * parts, dim), jnp.uint32)
    )(holders)
    return out


def _phi2(t: FloatArray) -> FloatArray:
    s = special.expit(t)
    out: FloatArray = s * (1.0 - s)
    return out


def scale_correction(scores: FloatArray, k: float) -> tuple[float, bool]:
    """Newton on ``F(c) = k c mean(phi2(c t)) - 1`` from ``c = 1`` (module docstring).

    Returns ``(c, converged)``; ``converged`` is ``False`` when ``c`` came out non-finite.
    """
    c = 1.0
    with np.errstate(all="ignore"):
        for _ in range(_NEWTON_STEPS):
            ct = c * scores
            p2 = _phi2(ct)
            p3 = p2 * (1.0 - 2.0 * special.expit(ct))
            f = k * c * float(np.mean(p2)) - 1.0
            df = k * (float(np.mean(p2)) + float(np.mean(ct * p3)))
            if not (math.isfinite(c) and math.isfinite(df)) or df == 0.0:
                return c, False
            c = c - f / df
    return c, bool(np.isfinite(c))


class PGLMClassifier(ClassifierMixin, BaseEstimator):
    """PGLM, binary logistic GLM (Wang et al. 2023); the math is in the module docstring.

    Parameters
    ----------
    epsilon:
        Per-holder ``eps > 0`` of the one Gaussian release.
    delta:
        Per-holder ``delta`` in (0, 1); ``None``: ``1 / n_P^2`` (``n_P`` = number of private
        holders, public metadata).
    mode:
        ``"correct"`` (per-holder analytic Gaussian calibration, ``+-1`` OLS, rule ``x.w > 0``) or
        ``"reference"`` (the reference code's noise, ``{0, 1}`` OLS and rule ``x.w > 1/2``).
    classes:
        The two class labels if ``y_public`` does not show both (never learned from private y).
    chunk_size:
        Holders privatized per batch (capped so that a batch holds at most ``2^22`` numbers).
    privacy_budget:
        Optional cap: an epsilon, or ``(epsilon, delta)``; a release above it raises before any
        private row is privatized.
    random_state:
        ``None``, an int seed or a JAX key; drives all privacy noise.

    Attributes
    ----------
    classes_, scaler_, mechanism_ (:class:`GaussianGLMStatistics`), delta_, gram_ (``Sigma^``),
    moment_ (``b^``), solver_ (``"solve"`` or ``"lstsq"``), beta_ols_, scale_, scale_converged_,
    coef_ (``w``, intercept first), privacy_, privacy_claim_, privacy_ledger_, n_features_in_
    """

    #: Not the one round (:class:`~ldptree.protocols.OwnRoundEstimator`).
    private_round: ClassVar[str] = (
        "non-interactive: one Gaussian (epsilon, delta) release per holder of the GLM sufficient "
        "statistics (triu(x x^T), x y), summed and solved by the curator; not per-cell estimates"
    )

    def __init__(
        self,
        epsilon: float = 1.0,
        delta: float | None = None,
        *,
        mode: str = "correct",
        classes: Any = None,
        chunk_size: int = 65536,
        privacy_budget: float | tuple[float, float] | None = None,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    @keeps_state_on_error
    def fit(self, X: Any, y: Any, *, X_public: Any = None, y_public: Any = None) -> PGLMClassifier:
        """One Gaussian release per holder, then OLS, scale correction on public X."""
        epsilon = check_epsilon(self.epsilon, "epsilon")
        check_choice(self.mode, "mode", _MODES)
        chunk = check_int(self.chunk_size, "chunk_size", minimum=1)
        X_arr, y_raw, Xq, yq = check_fit_data(
            X, y, X_public, y_public, check_labels=check_class_labels
        )
        if Xq is None:
            raise ValueError(
                "PGLMClassifier needs public features X_public (unlabeled is enough): its scaling "
                "box and the scale correction of the OLS estimate are computed on them"
            )
        classes = resolve_classes(self.classes, yq)
        if classes.shape[0] != 2:
            raise ValueError(
                f"PGLMClassifier is binary, but there are {classes.shape[0]} classes (from "
                "y_public/classes)"
            )
        n, d = X_arr.shape
        delta = _resolve_delta(self.delta, n)
        if self.mode == "correct":
            mechanism = GaussianGLMStatistics.calibrated(epsilon, delta, d)
        else:
            mechanism = GaussianGLMStatistics.reference(epsilon, delta, d, n)
        ledger = _budget(self.privacy_budget).record("one Gaussian release", mechanism.spend)

        scaler = fit_scaler(Xq, d, 0.0)
        codes = encode_labels(y_raw, classes, "y")
        Xs = scaler.transform(X_arr)
        key = as_key(self.random_state)
        summed = np.zeros(mechanism.dimension, dtype=np.int64)
        numbers = mechanism.dimension * mechanism.parts  # released per holder
        step = chunk_rows(chunk, numbers=numbers, budget=_CHUNK_NUMBERS, cap=True)
        for start in range(0, n, step):
            reports = mechanism.privatize_codes(
                key,
                Xs[start : start + step],
                codes[start : start + step],
                first_holder=start,
                pad_to=min(step, n),
            )
            summed += reports.sum(axis=0)
        gram, moment = _unpack(summed.astype(np.float64) * mechanism.step, d)
        beta01, solver = _solve(gram, moment)
        if self.mode == "correct":
            beta = 2.0 * beta01
            beta[0] -= 1.0
            k = 2.0
        else:
            beta, k = beta01, 1.0
        Xq_t = _design(np.clip(scaler.transform(Xq), 0.0, 1.0))
        c, converged = scale_correction(Xq_t @ beta, k)
        if not converged or (self.mode == "correct" and c <= 0.0):
            c, converged = 1.0, False

        self.classes_ = classes
        self.n_features_in_ = d
        self.scaler_ = scaler
        self.mechanism_ = mechanism
        self.delta_ = delta
        self.gram_, self.moment_, self.solver_ = gram, moment, solver
        self.beta_ols_ = beta
        self.scale_, self.scale_converged_ = float(c), converged
        self.coef_ = c * beta
        self.privacy_claim_ = PrivacySpend(epsilon=epsilon, delta=delta)
        self.privacy_ledger_ = ledger.post_process("OLS, scale correction, prediction")
        self.privacy_ = ledger.total
        return self

    def decision_function(self, X: Any) -> FloatArray:
        """The linear score ``x~ . w: float[n]`` (features scaled and clipped to the box)."""
        self._check_fitted("coef_")
        X_arr = check_features(X, self.n_features_in_)
        out: FloatArray = _design(np.clip(self.scaler_.transform(X_arr), 0.0, 1.0)) @ self.coef_
        return out

    def predict_proba(self, X: Any) -> FloatArray:
        """``float[n, 2]``: ``sigmoid(x~.w)`` (correct) or the clipped linear score (reference)."""
        score = self.decision_function(X)
        p1 = special.expit(score) if self.mode == "correct" else np.clip(score, 0.0, 1.0)
        return np.stack([1.0 - p1, p1], axis=1)

    def predict(self, X: Any) -> np.ndarray[Any, Any]:
        """``classes_[1{x~.w > 0}]`` (correct) or ``classes_[1{x~.w > 1/2}]`` (reference)."""
        threshold = 0.0 if self.mode == "correct" else 0.5
        labels: np.ndarray[Any, Any] = self.classes_[
            (self.decision_function(X) > threshold).astype(int)
        ]
        return labels


#: The default ``delta = 1 / n_P^2`` needs at least this many holders (``delta <= 0.01``).
MIN_DEFAULT_DELTA_HOLDERS = 10


def _resolve_delta(delta: Any, n: int) -> float:
    if delta is None:
        if n < MIN_DEFAULT_DELTA_HOLDERS:
            raise ValueError(
                f"delta=None means delta = 1 / n_P^2, which is {1.0 / float(n) ** 2:.3g} for "
                f"n_P = {n} private holders: a delta above 0.01 guarantees next to nothing. "
                f"With fewer than {MIN_DEFAULT_DELTA_HOLDERS} holders pass delta explicitly"
            )
        return 1.0 / float(n) ** 2
    if isinstance(delta, bool) or not isinstance(delta, int | float) or not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be a number in (0, 1) or None (1 / n_P^2), got {delta!r}")
    return float(delta)


def _budget(privacy_budget: Any) -> PrivacyLedger:
    """A ledger capped at ``epsilon`` (any delta) or at ``(epsilon, delta)``; ``None``: no cap."""
    if privacy_budget is None:
        return PrivacyLedger()
    if isinstance(privacy_budget, tuple):
        if len(privacy_budget) != 2:
            raise ValueError(
                f"privacy_budget must be an epsilon or (epsilon, delta), got {privacy_budget!r}"
            )
        eps, delta = privacy_budget
        return PrivacyLedger(
            budget=PrivacySpend(epsilon=check_positive(eps, "privacy_budget"), delta=delta)
        )
    return PrivacyLedger(
        budget=PrivacySpend(epsilon=check_positive(privacy_budget, "privacy_budget"), delta=1.0)
    )


def _design(X01: FloatArray) -> FloatArray:
    out: FloatArray = np.concatenate([np.ones((X01.shape[0], 1)), X01], axis=1)
    return out


def _unpack(total: FloatArray, n_features: int) -> tuple[FloatArray, FloatArray]:
    """``(Sigma^ [d', d'], b^ [d'])`` from the summed reports (triangle mirrored)."""
    rows, cols = _triu(n_features)
    dp = n_features + 1
    gram = np.zeros((dp, dp))
    gram[rows, cols] = total[: rows.shape[0]]
    gram[cols, rows] = total[: rows.shape[0]]
    return gram, total[rows.shape[0] :].copy()


def _solve(gram: FloatArray, moment: FloatArray) -> tuple[FloatArray, str]:
    """``Sigma^{-1} b^`` by a symmetric solve; the pseudo-inverse solution when ``Sigma^`` is
    singular or ill-conditioned to working precision (SciPy's ``LinAlgWarning``)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.linalg.LinAlgWarning)
            beta: FloatArray = scipy.linalg.solve(gram, moment, assume_a="sym")
        if np.all(np.isfinite(beta)):
            return beta, "solve"
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgWarning):
        pass
    fallback: FloatArray = np.asarray(np.linalg.lstsq(gram, moment, rcond=None)[0], np.float64)
    return fallback, "lstsq"
