"""DECONV: the Laplace feature/label mechanism, its certificate, and the chunked kernel read-out."""

from __future__ import annotations

import math

import attrs
import jax
import numpy as np
import pytest

from ldptree.accounting import ReportLaw, verify_ldp
from ldptree.baselines import DECONVRegressor
from ldptree.baselines._deconv import deconvolution_sums, deconvolution_weights_log
from ldptree.estimators import fit_many
from ldptree.mechanisms import Geometric, LaplaceFeatureLabelMechanism
from ldptree.rounds import PrivateRows


def _data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    return X, np.sin(4.0 * X[:, 0]) + 0.1 * rng.normal(size=n)


def test_kernel_matches_direct_product() -> None:
    rng = np.random.default_rng(0)
    X, Xn = rng.uniform(size=(5, 3)), rng.normal(0.5, 1.0, size=(7, 3))
    h, b = 0.3, 0.4
    log_mag, sign = deconvolution_weights_log(X, Xn, h, b)
    u = (X[:, None, :] - Xn[None, :, :]) / h
    direct = np.prod(np.exp(-(u**2) / 2) * (1.0 - (b / h) ** 2 * (u**2 - 1.0)), axis=2)
    np.testing.assert_allclose(sign * np.exp(log_mag), direct, rtol=1e-12)


def test_chunked_sums_equal_unchunked() -> None:
    """4000 holders x 600 test points in blocks of 37 x 101 equal one block (float64 order)."""
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(600, 3))
    Xn = rng.uniform(size=(4000, 3)) + rng.laplace(scale=0.3, size=(4000, 3))
    yn = rng.normal(size=4000)
    kw = {"bandwidth": 0.2, "noise_scale": 0.3}
    small = deconvolution_sums(X, Xn, yn, test_chunk=37, holder_chunk=101, **kw)
    whole = deconvolution_sums(X, Xn, yn, test_chunk=600, holder_chunk=4000, **kw)
    for a, b in zip(small, whole, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12 * np.abs(b).max())
    assert np.all(whole[2] > 0)


def test_estimator_predictions_do_not_depend_on_chunks() -> None:
    X, y = _data(600, 2, 2)
    kw = {"X_public": X[:100], "y_public": y[:100]}
    a = DECONVRegressor(8.0, 0.2, test_chunk=13, holder_chunk=50, random_state=3).fit(X, y, **kw)
    b = DECONVRegressor(8.0, 0.2, random_state=3).fit(X, y, **kw)
    np.testing.assert_allclose(a.predict(X[:300]), b.predict(X[:300]), rtol=1e-9)


def test_large_budget_approaches_nadaraya_watson() -> None:
    """With eps = 1e4 the noise is negligible: the fit must explain most of the signal.

    Deterministic given the seeds (noise scale 2e-4 next to bandwidth 0.05)."""
    X, y = _data(2000, 1, 4)
    model = DECONVRegressor(1e4, 0.05, label_bound=(-1.5, 1.5), random_state=0).fit(X, y)
    assert model.score(X[:500], y[:500]) > 0.9


def test_guard_and_parity() -> None:
    X, y = _data(400, 3, 5)
    kw = {"X_public": X[:80], "y_public": y[:80]}
    guarded = DECONVRegressor(1.0, 0.05, random_state=0).fit(X, y, **kw)
    raw = DECONVRegressor(1.0, 0.05, guard="none", random_state=0).fit(X, y, **kw)
    lo, hi = guarded.label_bound_
    pred = guarded.predict(X[:200])
    assert np.all((pred >= lo) & (pred <= hi))
    raw_pred = raw.predict(X[:200])
    assert np.all(np.isfinite(raw_pred))
    # at eps = 1 the unguarded ratio leaves the label range: the failure the guard exists for
    assert np.max(np.abs(raw_pred)) > hi
    assert 0.0 < guarded.guarded_fraction(X[:200]) <= 1.0


def test_privacy_record_and_label_bound_source() -> None:
    X, y = _data(300, 2, 6)
    model = DECONVRegressor(3.0, 0.5, random_state=0).fit(X, y, X_public=X[:30], y_public=y[:30])
    assert model.privacy_.epsilon == pytest.approx(3.0)
    # the public range, rounded outward to float32
    lo, hi = model.label_bound_
    assert lo <= y[:30].min() and hi >= y[:30].max()
    assert (lo, hi) == pytest.approx((y[:30].min(), y[:30].max()), rel=1e-7)
    # the exact discrete noise has (within 2%) the variance of Laplace(2 d / eps), resp.
    # Laplace(2 R / eps), the paper's scales
    assert model.mechanism_.feature_scale == pytest.approx(2 * 2 / 3.0, rel=0.02)
    assert model.mechanism_.label_scale == pytest.approx(2 * np.ptp(y[:30]) / 3.0, rel=0.02)
    with pytest.raises(ValueError, match="label_bound"):
        DECONVRegressor(1.0).fit(X, y)
    with pytest.raises(ValueError, match="guard"):
        DECONVRegressor(1.0, guard="nope", label_bound=1.0).fit(X, y)
    with pytest.raises(ValueError, match="bandwidth"):
        DECONVRegressor(1.0, -1.0, label_bound=1.0).fit(X, y)
    with pytest.raises(ValueError, match="budget"):
        DECONVRegressor(2.0, label_bound=1.0, privacy_budget=1.0).fit(X, y)


def _same_fit(a: DECONVRegressor, b: DECONVRegressor, X: np.ndarray) -> None:
    np.testing.assert_array_equal(a.noisy_features_, b.noisy_features_)
    np.testing.assert_array_equal(a.noisy_labels_, b.noisy_labels_)
    np.testing.assert_array_equal(a.estimates_.label_sum, b.estimates_.label_sum)
    assert a.estimates_.n == b.estimates_.n and a.fallback_ == b.fallback_
    assert a.privacy_ == b.privacy_ and a.label_bound_ == b.label_bound_
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_fit_many_and_plan_give_the_fit() -> None:
    """DECONV is on the fit skeleton: ``fit_many`` of two DECONV fits (their rounds run
    together), ``plan(...).run(rows)`` and a fit over chunks each end bit for bit in the model
    ``fit`` gives."""
    X, y = _data(300, 2, 6)
    kw = {"X_public": X[:30], "y_public": y[:30]}
    makes = [
        lambda: DECONVRegressor(3.0, 0.5, chunk_size=70, random_state=0),
        lambda: DECONVRegressor(1.0, 0.2, feature_share=0.3, random_state=1),
    ]
    alone = [make().fit(X, y, **kw) for make in makes]
    together = fit_many([make() for make in makes], X, y, **kw)
    for a, b in zip(alone, together, strict=True):
        _same_fit(a, b, X[:50])
    assert not np.array_equal(alone[0].noisy_labels_, alone[1].noisy_labels_)
    plan = makes[0]().plan(X[:30], y[:30], n_holders=300)
    assert plan.round is not None and plan.privacy.epsilon == pytest.approx(3.0)
    assert plan.partition.n_leaves == 1 and plan.mechanism == alone[0].mechanism_
    _same_fit(plan.run(PrivateRows.of(X, y)), alone[0], X[:50])
    # as every skeleton fit, the private rows may arrive as (X_chunk, y_chunk) pairs
    chunks = ((X[i : i + 50], y[i : i + 50]) for i in range(0, 300, 50))
    _same_fit(makes[0]().fit(chunks, None, **kw), alone[0], X[:50])
    with pytest.raises(ValueError, match="released reports"):
        makes[0]().plan(X[:30], y[:30]).finish(alone[0].estimates_)


@pytest.mark.parametrize("epsilon, d, share", [(4.0, 8, 0.5), (0.7, 3, 0.3)])
def test_certificate_holds_at_claim(epsilon: float, d: int, share: float) -> None:
    mech = LaplaceFeatureLabelMechanism(
        epsilon=epsilon, n_features=d, label_bound=(-2.0, 5.0), feature_share=share
    )
    cert = verify_ldp(mech, n_cells=1)
    assert cert.declared_holds and cert.exact and cert.pure
    assert cert.epsilon_bound == pytest.approx(epsilon, rel=1e-8)
    assert dict(cert.witness.parts)["features"] == pytest.approx(share * epsilon, rel=1e-8)
    assert cert.witness.features is not None
    # exact integer sampling: no floating-point caveat is left
    assert cert.delta == 0.0 and cert.sampled == ()


@attrs.frozen
class _TooLittleFeatureNoise(LaplaceFeatureLabelMechanism):
    """Mutant: feature noise calibrated to sensitivity 1 instead of d (a classic slip)."""

    @property
    def feature_noise(self) -> Geometric:
        return Geometric(self.feature_epsilon, span=self.feature_levels)


@attrs.frozen
class _NoLevels(LaplaceFeatureLabelMechanism):
    """Mutant: declares its features as entering directly (no levels) through a channel that is
    not convex in its input, so the box corners would prove nothing."""

    def report_law(self, n_cells: int) -> ReportLaw:
        law = super().report_law(n_cells)
        features, *rest = law.blocks
        return attrs.evolve(law, blocks=(attrs.evolve(features, levels=None), *rest))


def test_certificate_rejects_too_small_noise() -> None:
    mech = _TooLittleFeatureNoise(epsilon=2.0, n_features=4, label_bound=(0.0, 1.0))
    cert = verify_ldp(mech, n_cells=1)
    assert not cert.holds
    assert cert.epsilon_bound == pytest.approx(1.0 + 4 * 1.0, rel=1e-8)  # label 1 + features d


def test_certificate_refuses_undeclared_shape() -> None:
    mech = _NoLevels(epsilon=2.0, n_features=2, label_bound=(0.0, 1.0))
    with pytest.raises(ValueError, match="convex"):
        verify_ldp(mech, n_cells=1)


@pytest.mark.slow
def test_mechanism_reports_are_chunk_invariant_and_unbiased() -> None:
    mech = LaplaceFeatureLabelMechanism(epsilon=2.0, n_features=3, label_bound=(0.0, 10.0))
    rng = np.random.default_rng(7)
    x, y = rng.uniform(size=(4096, 3)), rng.uniform(0, 10, size=4096)
    key = jax.random.key(11)
    whole = mech.privatize(key, np.zeros(4096, np.int32), y, 1, features=x)
    tail = mech.privatize(
        key, np.zeros(2048, np.int32), y[2048:], 1, features=x[2048:], first_holder=2048
    )
    np.testing.assert_array_equal(np.asarray(tail.features), np.asarray(whole.features)[2048:])
    np.testing.assert_array_equal(np.asarray(tail.label), np.asarray(whole.label)[2048:])
    # mean error of 12288 feature releases, sd sqrt(2) b_X / sqrt(12288) = 0.058: |mean| < 0.3
    # fails with probability < 1e-6 (5 sd); the sd estimate is within 5% w.p. > 1 - 1e-6
    err = mech.decode_features(whole.features) - x
    assert abs(err.mean()) < 0.3
    assert err.std() == pytest.approx(math.sqrt(2) * mech.feature_scale, rel=0.05)
    est = mech.debias(mech.summarize(whole, 1), 4096)
    # label total: sd sqrt(2 n) b_Y; 5 sd
    assert abs(est.label_sum[0] - y.sum()) < 5 * math.sqrt(2 * 4096) * mech.label_scale
    with pytest.raises(ValueError, match="n_cells"):
        mech.privatize(key, np.zeros(3, np.int32), y[:3], 2, features=x[:3])
    with pytest.raises(ValueError, match="features"):
        mech.privatize(key, np.zeros(3, np.int32), y[:3], 1)


def test_sums_under_jit_match_the_host() -> None:
    """Traced (one logarithm per coordinate, float64 under x64) vs host (grouped logarithms): the
    weights agree to float64 rounding, so every sum agrees to 1e-10 of the total absolute weight
    (the denominator is a difference of large terms; its error scales with ``sum |W|``)."""
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(50, 4))
    Xn = rng.uniform(size=(300, 4)) + rng.laplace(scale=0.3, size=(300, 4))
    yn = rng.normal(size=300)
    kw = {"bandwidth": 0.2, "noise_scale": 0.3, "test_chunk": 16, "holder_chunk": 128}
    host = deconvolution_sums(X, Xn, yn, **kw)
    with jax.enable_x64(True):
        traced = jax.jit(lambda a, b, c: deconvolution_sums(a, b, c, **kw))(X, Xn, yn)
    for t, h in zip(traced, host, strict=True):
        assert np.asarray(t).shape == (50,)
        np.testing.assert_allclose(np.asarray(t), h, rtol=0, atol=1e-10 * host[2].max())
