"""DECONV: deconvolution kernel regression on Laplace-privatized features and labels.

Farokhi (2020) treats locally private regression as a measurement-error problem. As a
composition, through the same round as every estimator: the trivial partition (one cell) x
:class:`~ldptree.mechanisms.LaplaceFeatureLabelMechanism` (each holder releases
``X~_i = clip(x_i) + Lap(b_X)^d`` and ``Y~_i = clip(y_i) + Lap(b_Y)``; ``b_X = 2 d / eps`` and
``b_Y = 2 R / eps = 4 M / eps`` at the default even split, sensitivities ``d`` and ``R`` derived
there) x an aggregator that keeps the reports
(:class:`~ldptree.rounds.ReportCollector`) x a curator-side Nadaraya-Watson
read-out with the *deconvolution kernel* of Laplace errors:

    m^(x) = sum_i Y~_i W_i(x) / sum_i W_i(x),    W_i(x) = prod_k K*((x_k - X~_ik) / h),
    K*(u) = phi(u) [1 - (b_X / h)^2 (u^2 - 1)].

Why this ``K*``: a Laplace error has characteristic function ``1 / (1 + b^2 t^2)``, so the
deconvolution kernel ``(1 / 2 pi) int e^{-itu} phi_K(t) (1 + b^2 t^2 / h^2) dt`` of a base kernel
``K`` is ``K - (b / h)^2 K''``; for the Gaussian ``phi`` (``phi'' = (u^2 - 1) phi``) that is ``K*``.
``E[W_i(x) | x_i]`` is then the ordinary Gaussian-kernel weight of the *clean* point, which is what
makes the estimator consistent; the price is that ``K*`` takes both signs with magnitude
``~ (b / h)^2 u^2`` per coordinate, so the denominator is a small difference of huge terms.

Numerics: ``W_i`` spans hundreds of orders of magnitude (``u`` is ``O(b_X / h)``), so it is
computed as ``sign * exp(log|W_i|)`` and both sums are accumulated relative to the running
maximum of ``log|W_i|`` per test point (a streaming log-sum-exp over holder chunks; the common
factor cancels in the ratio). Float64 throughout.

Memory: prediction is ``O(n n_test d)`` time; it runs over blocks of ``test_chunk`` test points
x ``holder_chunk`` holders, holding about six ``float64[test_chunk, holder_chunk]`` arrays at once,
i.e. at most ``48 * test_chunk * holder_chunk`` bytes (48 MiB at the defaults 256 x 4096) besides
the ``n (d + 1)`` released values; the result does not depend on the chunk sizes beyond float64
summation order.

Guard (``guard``): the denominator estimates the density of ``x`` (times a positive constant), so
where it is non-positive, or small next to the total absolute weight ``sum_i |W_i(x)|`` (the sum
is dominated by cancellation: ``den <= denominator_floor * sum_i |W_i|``), the ratio is noise
amplified without bound. ``guard="public_mean"`` (default) predicts the public label mean there
and clips every prediction into the label bound (the regression function lies in it, so clipping
never increases a squared error). ``guard="none"`` is the paper's estimator as stated, without
either safeguard: it reproduces the paper's huge MSEs (up to ``1e10``), which is what
an unguarded ratio does. Correct behaviour is the default; parity is the named option (the
``deconv-raw`` method of the runner). An exactly zero denominator, which the scaled sums make
practically impossible, gets the fallback in both modes so that predictions stay finite.

Privacy: the scaling box comes from public data and the label bound from public labels or the
user; the only private release is each holder's report, recorded in ``privacy_ledger_``. The
kernel read-out is post-processing of the reports.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import (
    as_key,
    check_choice,
    check_epsilon,
    check_features,
    check_int,
    check_open_unit,
    check_positive,
    check_real,
)
from ldptree._xp import float_dtype, namespace
from ldptree.accounting import LedgerScope, PrivacyAccount
from ldptree.estimators import (
    BaseEstimator,
    FitPlan,
    Planned,
    RegressorMixin,
    fit_scaler,
    resolve_label_bound,
)
from ldptree.mechanisms import LaplaceFeatureLabelMechanism
from ldptree.partitions import Partition
from ldptree.protocols import CellEstimates
from ldptree.rounds import ReportCollector, Round, certified_spend, charged_ledger, release_key

GUARDS = ("public_mean", "none")
#: Allowed ``bandwidth`` range (on features scaled to ``[0, 1]``).
BANDWIDTH_RANGE = (1e-6, 1e6)


def deconvolution_weights_log(
    X: FloatArray, X_noisy: FloatArray, bandwidth: float, noise_scale: float
) -> tuple[FloatArray, FloatArray]:
    """``(log|W|, sign W)``, both ``float64[T, H]``, of ``W_ti = prod_k K*((x_tk - X~_ik) / h)``
    for test points ``X`` ``[T, d]`` and released points ``X_noisy`` ``[H, d]`` (module doc),
    without the constant ``(2 pi)^{-d/2}`` (it cancels in the ratio).

    The polynomial factors are multiplied directly in groups of coordinates small enough that
    no group's product can overflow float64, and one logarithm is taken per group, which is
    several times faster than a logarithm per coordinate. The group size depends on the data's
    range, so traced inputs (``jax.jit``/``jax.vmap``, computed in ``jax.numpy``) take one
    logarithm per coordinate, which agrees with the host to float64 rounding.
    """
    xp = namespace(X, X_noisy)
    r2 = (noise_scale / bandwidth) ** 2
    log_mag = xp.zeros((X.shape[0], X_noisy.shape[0]), dtype=float_dtype(xp))
    sign = xp.ones_like(log_mag)
    if X_noisy.shape[0] == 0 or X.shape[0] == 0:
        return log_mag, sign
    group = 1
    if xp is np:
        # |1 - r2 (u^2 - 1)| <= 1 + r2 (1 + u_max^2): a group of g factors stays below 1e300
        spread = float(np.max(np.abs(X_noisy))) + float(np.max(np.abs(X))) + 1.0
        per_factor = np.log10(1.0 + r2 * (1.0 + (spread / bandwidth) ** 2))
        group = max(1, int(300.0 // max(per_factor, 1e-300)))
    with np.errstate(divide="ignore", under="ignore"):
        for g0 in range(0, X.shape[1], group):
            product = xp.ones_like(log_mag)
            for k in range(g0, min(g0 + group, X.shape[1])):
                u2 = xp.square((X[:, k, None] - X_noisy[None, :, k]) / bandwidth)
                log_mag -= 0.5 * u2
                product *= 1.0 - r2 * (u2 - 1.0)
            log_mag += xp.log(xp.abs(product))
            sign *= xp.sign(product)
    return log_mag, sign


def deconvolution_sums(
    X: FloatArray,
    X_noisy: FloatArray,
    y_noisy: FloatArray,
    *,
    bandwidth: float,
    noise_scale: float,
    test_chunk: int,
    holder_chunk: int,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(numerator, denominator, absolute)`` per test point, each ``float64[T]`` and scaled by a
    common positive factor per point: ``sum_i Y~_i W_i``, ``sum_i W_i``, ``sum_i |W_i|``.

    Blocks of ``test_chunk`` x ``holder_chunk`` (memory bound in the module docstring); over
    holder blocks the sums are rescaled to the running maximum of ``log|W|`` (streaming
    log-sum-exp), so no term underflows to zero unless it is ``e^-745`` below the largest.
    Traceable (``jax.jit``/``jax.vmap``; the block loops are over static shapes).
    """
    xp = namespace(X, X_noisy, y_noisy)
    dtype = float_dtype(xp)
    n_test = X.shape[0]
    blocks: list[tuple[Any, Any, Any]] = []
    for t0 in range(0, n_test, test_chunk):
        rows = slice(t0, min(t0 + test_chunk, n_test))
        top = xp.full(rows.stop - rows.start, -np.inf, dtype=dtype)
        n_, d_, a_ = (xp.zeros(rows.stop - rows.start, dtype=dtype) for _ in range(3))
        for h0 in range(0, X_noisy.shape[0], holder_chunk):
            cols = slice(h0, h0 + holder_chunk)
            log_mag, sign = deconvolution_weights_log(
                X[rows], X_noisy[cols], bandwidth, noise_scale
            )
            new_top = xp.maximum(top, log_mag.max(axis=1))
            # exp(-inf - finite) = 0: the first block rescales empty sums harmlessly
            with np.errstate(invalid="ignore"):
                rescale = xp.where(xp.isneginf(top), 0.0, xp.exp(top - new_top))
            weights = sign * xp.exp(log_mag - new_top[:, None])
            n_ = n_ * rescale + weights @ y_noisy[cols]
            d_ = d_ * rescale + weights.sum(axis=1)
            a_ = a_ * rescale + xp.abs(weights).sum(axis=1)
            top = new_top
        blocks.append((n_, d_, a_))
    if not blocks:
        empty = xp.zeros(0, dtype=dtype)
        return empty, empty, empty
    num, den, absolute = (xp.concatenate([b[i] for b in blocks]) for i in range(3))
    return num, den, absolute


@attrs.frozen(eq=False)
class _Released(CellEstimates):
    """The one cell's estimates with every holder's report, in holder order: what the kernel
    read-out reads (the reports are what the holders released, so keeping them is free)."""

    reports: Any


@attrs.frozen
class _KeepReports(ReportCollector):
    """:class:`~ldptree.rounds.ReportCollector` whose estimates carry the kept reports, so that
    the plan's read-out (which sees only the round's estimates) can read them."""

    def finalize(self, state: Any) -> _Released:
        total = ReportCollector.finalize(self, state)
        return _Released(total.count, total.label_sum, total.n, self.reports(state))


class DECONVRegressor(RegressorMixin, Planned, BaseEstimator):
    """Deconvolution kernel regression on locally private releases (Farokhi 2020; module doc).

    Parameters
    ----------
    epsilon:
        Per-holder budget ``eps > 0`` (``feature_share * eps`` on the features, the rest on the
        label).
    bandwidth:
        ``h > 0`` of the Gaussian base kernel, in scaled feature units (the paper's grid
        ``{0.02, 0.05, 0.1, 0.2, 0.5, 1, 5}``).
    feature_share:
        ``phi in (0, 1)``; our default split is 1/2 (the sources do not give one).
    label_bound:
        ``M`` or ``(lo, hi)``; ``None`` takes ``[min, max]`` of ``y_public`` (never private
        labels).
    guard:
        ``"public_mean"`` (default: fallback where the denominator is not safely positive, and
        clipping into the label bound) or ``"none"`` (the paper's unguarded ratio, for parity).
    denominator_floor:
        ``tau >= 0``: with the guard, points with ``den <= tau sum_i |W_i|`` use the fallback.
    test_chunk, holder_chunk:
        Block sizes of the kernel sums (memory ``<= 48 test_chunk holder_chunk`` bytes).
    chunk_size:
        Holders privatized per batch.
    privacy_budget:
        Optional cap on the epsilon this fit may spend, or a shared
        :class:`~ldptree.accounting.LedgerScope` charged before the release (as for
        :class:`~ldptree.LPDTRegressor`).
    random_state:
        ``None``, an int seed or a JAX key; drives all privacy noise.

    Attributes
    ----------
    mechanism_, scaler_, label_bound_, noisy_features_ (``float[n, d]``, released, scaled
    units), noisy_labels_ (``float[n]``), fallback_ (public label mean, else the released labels'
    mean), estimates_ (one-cell label total), privacy_ (certified epsilon, delta as sampled),
    privacy_certificate_, privacy_ledger_, n_features_in_
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        bandwidth: float = 0.5,
        *,
        feature_share: float = 0.5,
        label_bound: float | tuple[float, float] | None = None,
        guard: str = "public_mean",
        denominator_floor: float = 0.05,
        test_chunk: int = 256,
        holder_chunk: int = 4096,
        chunk_size: int = 65536,
        privacy_budget: float | LedgerScope | PrivacyAccount | None = None,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    def _check_read_out(self) -> tuple[float, float, int, int]:
        h = check_positive(self.bandwidth, "bandwidth")
        if not BANDWIDTH_RANGE[0] <= h <= BANDWIDTH_RANGE[1]:
            raise ValueError(
                f"bandwidth must lie in [1e-6, 1e6] (features are scaled to [0, 1], and the "
                f"kernel's (noise scale / bandwidth)^2 must stay finite), got {h!r}"
            )
        floor = check_real(self.denominator_floor, "denominator_floor")
        if floor < 0:
            raise ValueError(f"denominator_floor must be >= 0, got {floor}")
        check_choice(self.guard, "guard", GUARDS)
        test_chunk = check_int(self.test_chunk, "test_chunk", minimum=1)
        holder_chunk = check_int(self.holder_chunk, "holder_chunk", minimum=1)
        return h, floor, test_chunk, holder_chunk

    def _settings(self) -> tuple[float, float, int]:
        epsilon = check_epsilon(self.epsilon, "epsilon")
        share = check_open_unit(self.feature_share, "feature_share")
        chunk = check_int(self.chunk_size, "chunk_size", minimum=1)
        self._check_read_out()
        return epsilon, share, chunk

    def _plan(self, settings: Any, Xq: Any, yq: Any, d: int, n: int | None) -> FitPlan[Any]:
        """Each holder releases its noisy features and label; the curator keeps the releases."""
        epsilon, share, chunk = settings
        bound = resolve_label_bound(self.label_bound, yq)
        mechanism = LaplaceFeatureLabelMechanism(
            epsilon=epsilon, n_features=d, label_bound=bound, feature_share=share
        )
        charge = certified_spend(mechanism, n_cells=1, label_bound=bound)
        ledger = charged_ledger(self.privacy_budget, charge)
        scaler = fit_scaler(Xq, d, 0.0)
        # the round of every estimator: the trivial partition, each holder's (features, label)
        # released by the mechanism, the reports kept by the aggregator for the kernel read-out
        partition = Partition.trivial(d)
        round_ = Round(
            partition=partition,
            mechanism=mechanism,
            key=release_key(as_key(self.random_state), mechanism, partition),
            aggregator=_KeepReports,
            scaler=scaler,
            chunk_size=chunk,
        )

        def finish(estimates: CellEstimates | None) -> DECONVRegressor:
            if not isinstance(estimates, _Released):
                raise ValueError(
                    "DECONV's read-out needs the released reports: pass the estimates of the "
                    "plan's own round (plan.run or plan.collect)"
                )
            self.n_features_in_ = d
            self.scaler_ = scaler
            self.mechanism_ = mechanism
            self.label_bound_ = bound
            self.noisy_features_ = mechanism.decode_features(estimates.reports.features)
            self.noisy_labels_ = mechanism.decode_labels(estimates.reports.label)
            self.estimates_ = CellEstimates(estimates.count, estimates.label_sum, estimates.n)
            # the public label mean, else (no public labels) the released labels' mean
            self.fallback_ = float((self.noisy_labels_ if yq is None else yq).mean())
            return self

        read_out = ledger.post_process("deconvolution kernel read-out")
        return FitPlan.of_round(round_, charge.certificate, read_out, n, finish)

    def _sums(self, X: Any) -> tuple[FloatArray, FloatArray, FloatArray]:
        self._check_fitted("noisy_features_", X)
        h, _, test_chunk, holder_chunk = self._check_read_out()
        X_arr = check_features(X, self.n_features_in_)
        # holders' features were clipped into the box before release; test points alike
        X_scaled = np.clip(self.scaler_.transform(X_arr), 0.0, 1.0)
        return deconvolution_sums(
            X_scaled,
            self.noisy_features_,
            self.noisy_labels_,
            bandwidth=h,
            noise_scale=self.mechanism_.feature_scale,
            test_chunk=test_chunk,
            holder_chunk=holder_chunk,
        )

    def predict(self, X: Any) -> FloatArray:
        """``m^(x)`` per row ``float[n]`` (guarded unless ``guard="none"``; module docstring)."""
        num, den, absolute = self._sums(X)
        _, floor, _, _ = self._check_read_out()
        unsafe = den == 0.0 if self.guard == "none" else den <= floor * absolute
        ratio = num / np.where(unsafe, 1.0, den)
        pred = np.where(unsafe, self.fallback_, ratio)
        if self.guard != "none":
            pred = np.clip(pred, *self.label_bound_)
        return np.asarray(pred, dtype=np.float64)

    def guarded_fraction(self, X: Any) -> float:
        """Share of rows of ``X`` whose prediction the guard replaces by the fallback."""
        num, den, absolute = self._sums(X)
        del num
        _, floor, _, _ = self._check_read_out()
        return float(np.mean(den <= floor * absolute))


__all__ = ["GUARDS", "DECONVRegressor", "deconvolution_sums", "deconvolution_weights_log"]
