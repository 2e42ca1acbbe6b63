"""PGLM: the per-holder Gaussian release (sensitivity, calibration), the curator, the API."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
import scipy.linalg
from scipy import integrate, stats

from ldptree.baselines import PGLMClassifier
from ldptree.baselines._pglm import (
    GaussianGLMStatistics,
    _solve,
    gaussian_delta,
    gaussian_epsilon,
    gaussian_ratio,
    scale_correction,
)
from ldptree.mechanisms._discrete_gaussian import discrete_gaussian_law


def _worst_pair(d: int) -> tuple[np.ndarray, np.ndarray]:
    return np.array([np.zeros(d), np.ones(d)]), np.array([0, 1])


@pytest.mark.parametrize("d", [1, 3, 8])
def test_sensitivity_is_attained_by_the_corner_pair_and_bounds_every_pair(d: int) -> None:
    mech = GaussianGLMStatistics.calibrated(1.0, 1e-6, d)
    X, y = _worst_pair(d)
    v = mech.statistic(X, y)
    assert v.shape == (2, mech.dimension) == (2, (d + 1) * (d + 2) // 2 + d + 1)
    assert np.linalg.norm(v[0] - v[1]) == pytest.approx(mech.sensitivity, rel=1e-12)
    # any records, features far outside the box, undeclared labels (-1): never above Delta_2
    rng = np.random.default_rng(0)
    Xa = rng.uniform(-2.0, 3.0, size=(400, d))
    ya = rng.choice([0, 1, -1], size=400)
    va = mech.statistic(Xa, ya)
    gaps = np.linalg.norm(va[:200] - va[200:], axis=1)
    assert gaps.max() <= mech.sensitivity * (1 + 1e-12)


def _hockey_stick(mu: float, epsilon: float) -> float:
    """``sup_S P(S) - e^eps Q(S)`` for ``P = N(0, 1)``, ``Q = N(mu, 1)`` by quadrature: the
    integrand ``phi(t) - e^eps phi(t - mu)`` is positive exactly for ``t < mu/2 - eps/mu``."""
    top = mu / 2.0 - epsilon / mu
    value, _ = integrate.quad(
        lambda t: stats.norm.pdf(t) - math.exp(epsilon) * stats.norm.pdf(t - mu),
        -math.inf,
        top,
        epsabs=1e-300,
        epsrel=1e-10,
        limit=200,
    )
    return float(value)


@pytest.mark.parametrize(
    ("epsilon", "delta", "d"), [(0.5, 1e-5, 2), (1.0, 1e-6, 8), (8.0, 2.4e-7, 8)]
)
def test_calibrated_release_meets_the_gaussian_inequality_at_the_worst_pair(
    epsilon: float, delta: float, d: int
) -> None:
    mech = GaussianGLMStatistics.calibrated(epsilon, delta, d)
    X, y = _worst_pair(d)
    v = mech.statistic(X, y)
    # the privacy loss of N(v, S) vs N(v', S) is 1-d along S^{-1/2}(v - v'): ratio mu
    mu = float(np.linalg.norm((v[0] - v[1]) / np.asarray(mech.coordinate_std)))
    assert mu == pytest.approx(mech.ratio, rel=1e-12)
    numeric = _hockey_stick(mu, epsilon)
    assert numeric <= delta * (1 + 1e-6)
    # the analytic s is inflated by a few factors 1 + 2^-11 until the realised discrete tables are
    # certified, so the continuous Gaussian it discretises is within a few percent of the claim
    assert numeric >= delta * 0.97
    assert gaussian_delta(mu, epsilon) == pytest.approx(numeric, rel=1e-6)
    assert mech.meets_claim and mech.spend.epsilon == epsilon and mech.spend.delta == delta
    cert = mech.certificate()
    assert cert.holds and cert.delta <= delta * (1 + 1e-9)
    assert cert.delta >= delta * 0.95  # tight: within a calibration step of the claim


def test_analytic_ratio_and_epsilon_are_inverse() -> None:
    for epsilon, delta in [(0.1, 1e-3), (2.0, 1e-8), (20.0, 1e-12)]:
        mu = gaussian_ratio(epsilon, delta)
        assert gaussian_delta(mu, epsilon) <= delta
        assert gaussian_delta(mu * 1.001, epsilon) > delta
        assert gaussian_epsilon(mu, delta) == pytest.approx(epsilon, rel=1e-6)


def test_reference_noise_is_flagged_when_it_misses_the_claim() -> None:
    # sigma^2 ~ sqrt(n): per-holder noise shrinks like n^{-1/4}, so the claim fails for large n
    bad = GaussianGLMStatistics.reference(1.0, 1e-12, 1, 10**6)
    assert not bad.meets_claim
    assert bad.delta_at(1.0) > 1e-12
    # the continuous Gaussian's epsilon at delta is 3.3715; the realised tables' is certified a
    # little above it (their truncation: at delta = 1e-12 the tail outside a 64-bit table counts)
    assert bad.spend.epsilon == pytest.approx(3.3715, rel=1e-2)
    assert bad.spend.epsilon >= 3.3715
    assert bad.delta_at(bad.spend.epsilon) <= 1e-12
    assert _hockey_stick(bad.ratio, bad.spend.epsilon) <= 1e-12 * (1 + 1e-6)
    # at the diabetes size (d = 8, n = 2054, eps = 8) its huge constant 32 r^4 over-covers
    ok = GaussianGLMStatistics.reference(8.0, 1 / 2054**2, 8, 2054)
    assert ok.meets_claim and ok.spend.epsilon == 8.0


def _logistic_data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    w = np.linspace(-3.0, 3.0, d)
    y = (rng.uniform(size=n) < 1 / (1 + np.exp(-(X - 0.5) @ w * 2))).astype(int)
    return X, y


def test_weak_privacy_fit_is_ols_and_scale_corrected() -> None:
    # exact 64-bit discrete Gaussian tables cannot certify a per-coordinate shift beyond a few
    # standard deviations, so even eps = 1e7 keeps noise of s ~ 0.5 per coordinate: check the
    # curator's algebra exactly and the noisy Gram matrix statistically
    X, y = _logistic_data(3000, 3, 1)
    Xq, yq = _logistic_data(300, 3, 2)
    model = PGLMClassifier(epsilon=1e7, random_state=0).fit(X, y, X_public=Xq, y_public=yq)
    lo, hi = Xq.min(0), Xq.max(0)
    Z = np.c_[np.ones(len(X)), np.clip((X - lo) / (hi - lo), 0, 1)]
    s = model.mechanism_.coordinate_std[0]
    assert s < 0.6
    # each Gram entry is the exact sum plus n independent noises of sd <= sqrt(s^2 + h^2 / 4):
    # 6 sd bounds all 16 entries but with probability < 16 * 2e-9
    sd = math.sqrt(len(X) * (s**2 + model.mechanism_.step**2 / 4))
    assert np.all(np.abs(model.gram_ - Z.T @ Z) < 6 * sd)
    assert np.all(np.abs(model.moment_ - Z.T @ y) < 6 * sd)
    beta01 = np.linalg.solve(model.gram_, model.moment_)
    np.testing.assert_allclose(model.beta_ols_, 2 * beta01 - np.eye(4)[0], rtol=1e-8, atol=1e-10)
    assert model.solver_ == "solve"
    np.testing.assert_allclose(model.coef_, model.scale_ * model.beta_ols_, rtol=1e-12)
    Xq_t = np.c_[np.ones(len(Xq)), np.clip((Xq - lo) / (hi - lo), 0, 1)]
    if model.scale_converged_:
        p2 = 1 / (1 + np.exp(-model.scale_ * (Xq_t @ model.beta_ols_)))
        assert 2 * model.scale_ * np.mean(p2 * (1 - p2)) == pytest.approx(1.0, abs=1e-6)
    else:
        assert model.scale_ == 1.0
    # the scale correction itself, on the noiseless OLS: Newton solves 2 c mean(phi2(c t)) = 1
    ols = np.linalg.lstsq(Z, 2 * y - 1, rcond=None)[0]
    c, converged = scale_correction(Xq_t @ ols, 2.0)
    p2 = 1 / (1 + np.exp(-c * (Xq_t @ ols)))
    assert converged and c > 0 and 2 * c * np.mean(p2 * (1 - p2)) == pytest.approx(1.0, abs=1e-6)
    proba = model.predict_proba(X)
    np.testing.assert_array_equal(model.predict(X), (proba[:, 1] > 0.5).astype(int))


def test_privacy_record_and_budget() -> None:
    X, y = _logistic_data(400, 2, 3)
    model = PGLMClassifier(epsilon=2.0, random_state=0).fit(X, y, X_public=X[:50], y_public=y[:50])
    assert model.privacy_.epsilon == 2.0 and model.privacy_.delta == pytest.approx(1 / 400**2)
    assert (model.privacy_.epsilon, model.privacy_.delta) == (2.0, model.privacy_claim_.delta)
    with pytest.raises(ValueError, match="above the budget"):
        PGLMClassifier(epsilon=2.0, privacy_budget=1.0).fit(X, y, X_public=X, y_public=y)
    with pytest.raises(ValueError, match="above the budget"):
        PGLMClassifier(epsilon=1.0, delta=1e-3, privacy_budget=(1.0, 1e-4)).fit(
            X, y, X_public=X, y_public=y
        )


def test_reference_mode_accounts_the_true_spend_and_thresholds_at_half() -> None:
    X, y = _logistic_data(500, 2, 4)
    model = PGLMClassifier(epsilon=1.0, delta=1e-3, mode="reference", random_state=0)
    model.fit(X, y, X_public=X[:100], y_public=y[:100])
    np.testing.assert_array_equal(model.predict(X), (model.decision_function(X) > 0.5).astype(int))
    assert model.privacy_claim_.epsilon == 1.0
    if model.mechanism_.meets_claim:
        assert model.privacy_.epsilon == 1.0
    else:
        assert model.privacy_.epsilon > 1.0


def test_result_does_not_depend_on_chunking() -> None:
    X, y = _logistic_data(300, 2, 5)
    fits = [
        PGLMClassifier(epsilon=4.0, chunk_size=c, random_state=7).fit(
            X, y, X_public=X[:40], y_public=y[:40]
        )
        for c in (7, 1000)
    ]
    np.testing.assert_allclose(fits[0].gram_, fits[1].gram_, rtol=1e-12)
    np.testing.assert_allclose(fits[0].coef_, fits[1].coef_, rtol=1e-9)


def test_singular_gram_falls_back_to_least_squares() -> None:
    gram = np.array([[2.0, 1.0], [1.0, 0.5]])  # rank 1
    beta, solver = _solve(gram, np.array([1.0, 0.5]))
    assert solver == "lstsq"
    np.testing.assert_allclose(gram @ beta, [1.0, 0.5], atol=1e-12)
    assert scipy.linalg.norm(beta) < 1.0  # the minimum-norm solution, not a blow-up
    # ill-conditioned to working precision (SciPy warns): also the pseudo-inverse
    _, solver = _solve(np.array([[1.0, 1.0], [1.0, 1.0 + 4.5e-16]]), np.array([1.0, 1.0]))
    assert solver == "lstsq"
    # end to end at a tiny budget: Sigma^ is dominated by noise (often indefinite), no crash
    X, y = _logistic_data(200, 3, 6)
    model = PGLMClassifier(epsilon=0.05, random_state=0).fit(X, y, X_public=X[:30], y_public=y[:30])
    assert np.all(np.isfinite(model.coef_)) and model.predict(X).shape == (200,)


def test_bad_input_names_the_argument() -> None:
    X, y = _logistic_data(50, 2, 7)
    with pytest.raises(ValueError, match="X_public"):
        PGLMClassifier().fit(X, y)
    with pytest.raises(ValueError, match="mode"):
        PGLMClassifier(mode="paper").fit(X, y, X_public=X, y_public=y)
    with pytest.raises(ValueError, match="delta"):
        PGLMClassifier(delta=1.5).fit(X, y, X_public=X, y_public=y)
    with pytest.raises(ValueError, match="epsilon"):
        PGLMClassifier(epsilon=0.0).fit(X, y, X_public=X, y_public=y)
    with pytest.raises(ValueError, match="binary"):
        PGLMClassifier().fit(X, y, X_public=X, y_public=np.arange(50) % 3)


def _old_float_release(mech: GaussianGLMStatistics, v: np.ndarray, seed: int) -> np.ndarray:
    """The textbook release this module used before: float32 N(0, 1) scaled by a float64 sd."""
    noise = np.random.default_rng(seed).standard_normal(v.shape, dtype=np.float32)
    return v + noise.astype(np.float64) * np.asarray(mech.coordinate_std)


def _on_float32_grid(z: np.ndarray) -> np.ndarray:
    return np.all(np.abs(z - z.astype(np.float32).astype(np.float64)) <= 1e-12 * np.abs(z), axis=1)


def test_label_attack_fails_on_the_integer_release() -> None:
    # For each holder (features known to the attacker), try both labels and keep those under
    # which the report has positive probability. On the old float release the true label alone
    # puts (report - v) / sd on the float32 grid: recovered for every holder. On the integer
    # release every candidate label has positive likelihood for every report.
    d, n = 3, 300
    mech = GaussianGLMStatistics.calibrated(1.0, 1e-6, d)
    rng = np.random.default_rng(0)
    X, y = rng.uniform(size=(n, d)), rng.integers(0, 2, size=n)
    candidates = [mech.statistic(X, np.full(n, label)) for label in (0, 1)]
    std = np.asarray(mech.coordinate_std)
    old = _old_float_release(mech, mech.statistic(X, y), seed=1)
    fits = np.stack([_on_float32_grid((old - v) / std) for v in candidates], axis=1)
    assert np.all(fits[np.arange(n), y]) and not np.any(fits[np.arange(n), 1 - y])  # leaked

    codes = mech.privatize_codes(jax.random.PRNGKey(3), X, y)
    # support of each coordinate's noise (a sum of `parts` tables of scale sd / sqrt(parts))
    tables = [discrete_gaussian_law(float(s) / mech.step / math.sqrt(mech.parts)) for s in std]
    lo = np.asarray([mech.parts * t.first for t in tables])
    hi = np.asarray([mech.parts * (t.first + t.size - 1) for t in tables])
    for v in candidates:
        scaled = v / mech.step
        base = np.floor(scaled)
        can_round = [(base, np.ones_like(base, bool)), (base + 1, scaled > base)]
        # positive likelihood: some reachable rounded code a with code - a in the table support
        ok = np.zeros_like(codes, bool)
        for a, reachable in can_round:
            z = codes - a
            ok |= reachable & (z >= lo) & (z <= hi)
        assert np.all(ok)


@pytest.mark.parametrize("epsilon", [0.5, 1.0, 8.0])
@pytest.mark.parametrize("d", [2, 8])
def test_certificate_holds_at_several_budgets(epsilon: float, d: int) -> None:
    delta = 1.0 / 2054**2
    cert = GaussianGLMStatistics.calibrated(epsilon, delta, d).certificate()
    assert cert.holds and not cert.pure
    assert cert.epsilon == epsilon and cert.delta <= delta * (1 + 1e-9)
    assert (cert.epsilon_claimed, cert.delta_claimed) == (epsilon, delta)


def test_default_fit_is_certified_and_over_claim_refused() -> None:
    X, y = _logistic_data(400, 2, 3)
    model = PGLMClassifier(epsilon=1.0, random_state=0).fit(X, y, X_public=X[:50], y_public=y[:50])
    assert model.mechanism_.certificate().holds and model.mechanism_.meets_claim
    # halve the noise, keep the claim: refused, and the spend is the true (larger) epsilon
    mech = model.mechanism_
    half = GaussianGLMStatistics(
        mech.epsilon, mech.delta, mech.n_features, [s / 2 for s in mech.coordinate_std]
    )
    cert = half.certificate()
    assert not cert.holds and cert.delta > mech.delta
    assert not half.meets_claim and half.spend.epsilon > mech.epsilon


def test_realised_delta_tracks_the_continuous_gaussian() -> None:
    # the realised tables' certified delta is within 1% of the analytic Gaussian's at the same s
    for epsilon, delta, d in [(1.0, 1e-6, 8), (0.5, 1e-5, 2)]:
        mu = gaussian_ratio(epsilon, delta)
        s = math.sqrt((d * d + 5 * d + 2) / 2) / mu
        dim = (d + 1) * (d + 2) // 2 + d + 1
        mech = GaussianGLMStatistics(epsilon, delta, d, (s,) * dim)
        assert mech.delta_at(epsilon) == pytest.approx(delta, rel=1e-2)


def test_weak_privacy_uses_a_sum_of_tables_at_the_analytic_scale() -> None:
    # eps = 1000 on 2054 holders (the diabetes "non-private" budget): one 64-bit table cannot
    # certify a shift of 5.5 sd; the sum of eight tables does, at the analytic Gaussian's sd
    mech = GaussianGLMStatistics.calibrated(1000.0, 1 / 2054**2, 8)
    analytic = math.sqrt((64 + 40 + 2) / 2) / gaussian_ratio(1000.0, 1 / 2054**2)
    assert mech.parts == 8 and mech.certificate().holds
    assert analytic <= mech.coordinate_std[0] <= analytic * 1.005
    one = GaussianGLMStatistics(1000.0, 1 / 2054**2, 8, mech.coordinate_std)
    assert not one.certificate().holds  # the same sd with one table is refused
