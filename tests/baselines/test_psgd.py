"""PrivUnitG (unbiasedness, the eps bound, the tail sampler) and PSGDClassifier."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

from ldptree.baselines import PrivUnitG, PSGDClassifier
from ldptree.baselines._privunit import ndtri_exp
from ldptree.baselines._psgd import psgd_spend

# Every statistical test below runs once per fixed seed; the stated rate is the chance that a
# correct implementation fails it for a given seed (Bonferroni over its comparisons).
ALPHA = 1e-6


def test_ndtri_exp_matches_scipy_in_both_tails() -> None:
    y = -np.logspace(-9, 4, 400)
    got = np.asarray(ndtri_exp(jnp.asarray(y, dtype=jnp.float32)), dtype=np.float64)
    want = special.ndtri_exp(y.astype(np.float32).astype(np.float64))
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("epsilon", [0.01, 1.0, 8.0, 30.0, 1000.0])
def test_cap_ratio_is_exactly_e_to_the_epsilon(epsilon: float) -> None:
    mech = PrivUnitG(epsilon)
    assert 0 < mech.p < 1 and math.isfinite(mech.gamma) and math.isfinite(mech.scale)
    # sup_z f_u(z) / f_u'(z) = c_max / c_min = p (1 - q) / ((1 - p) q), in log space
    log_ratio = (
        math.log(mech.p) + float(special.log_ndtr(mech.gamma)) - math.log1p(-mech.p) - mech.log_q
    )
    assert log_ratio == pytest.approx(epsilon, rel=1e-9, abs=1e-12)
    if epsilon <= 30:
        on_u, on_minus_u = mech.cap_probabilities()
        assert math.log(on_u / on_minus_u) == pytest.approx(epsilon, rel=1e-9)


EPS1 = PrivUnitG(1.0)
# one compiled sampler per mechanism, shared by the tests (compilation dominates their time)
_privatize = jax.jit(jax.vmap(EPS1.privatize, in_axes=(0, None)))
BALL = PrivUnitG(2.0)
_privatize_ball = jax.jit(jax.vmap(BALL.privatize_ball, in_axes=(0, None)))


def _samples(u: np.ndarray, n: int, seed: int) -> np.ndarray:
    keys = jax.random.split(jax.random.key(seed), n)
    return np.asarray(_privatize(keys, jnp.asarray(u, jnp.float32)), dtype=np.float64)


def test_density_ratio_bound_holds_on_samples_and_is_attained() -> None:
    mech = EPS1
    rng = np.random.default_rng(0)
    u = rng.normal(size=3)
    u /= np.linalg.norm(u)
    z = _samples(u, 4000, seed=1)
    others = rng.normal(size=(20, 3))
    others /= np.linalg.norm(others, axis=1, keepdims=True)
    worst = 0.0
    for v in [*others, -u]:
        gap = mech.log_density(z, u) - mech.log_density(z, v)
        worst = max(worst, float(np.max(np.abs(gap))))
    assert worst <= 1.0 + 1e-9
    gap = mech.log_density(z, u) - mech.log_density(z, -u)
    assert gap.max() == pytest.approx(1.0, abs=1e-9)  # attained on the cap of u


def test_cap_event_frequencies_match_u_and_minus_u() -> None:
    """P(<Z, u> >= s gamma) is p under u and (1 - p) q / (1 - q) under -u (two binomial tests,
    two-sided, each at ALPHA / 2)."""
    mech = EPS1
    u = np.array([0.6, 0.8, 0.0])
    n = 40_000
    for sign, prob in zip((1.0, -1.0), mech.cap_probabilities(), strict=True):
        z = _samples(sign * u, n, seed=2 if sign > 0 else 3)
        hits = int(np.sum(z @ u >= mech.scale * mech.gamma))
        assert stats.binomtest(hits, n, prob).pvalue > ALPHA / 2


def test_tail_draws_follow_the_truncated_normal() -> None:
    """Cap draws of alpha vs N(0,1) | alpha >= gamma, body draws vs alpha < gamma (KS tests at
    ALPHA / 2 each), at eps = 20 where the tail probability q is about 1e-7."""
    mech = PrivUnitG(20.0)
    keys = jax.random.split(jax.random.key(4), 20_000)
    alpha = np.asarray(jax.jit(jax.vmap(mech.sample_alpha))(keys), dtype=np.float64)
    cap = alpha >= mech.gamma
    tail = stats.truncnorm(mech.gamma, np.inf)
    body = stats.truncnorm(-np.inf, mech.gamma)
    assert stats.kstest(alpha[cap], tail.cdf).pvalue > ALPHA / 2
    assert stats.kstest(alpha[~cap], body.cdf).pvalue > ALPHA / 2


@pytest.mark.parametrize("norm", [0.0, 0.3, 5.0])
def test_privatize_ball_is_unbiased_for_the_normalised_input(norm: float) -> None:
    """Mean of 30 000 outputs vs x / max(|x|, 1), per coordinate z-tests with Bonferroni over
    the 4 coordinates (total rate ALPHA)."""
    x = np.array([1.0, -2.0, 0.5, 0.0])
    x = norm * x / np.linalg.norm(x)
    target = x / max(np.linalg.norm(x), 1.0)
    keys = jax.random.split(jax.random.key(int(10 * norm)), 30_000)
    z = np.asarray(_privatize_ball(keys, jnp.asarray(x, jnp.float32)), dtype=np.float64)
    se = z.std(axis=0, ddof=1) / math.sqrt(z.shape[0])
    bound = stats.norm.isf(ALPHA / (2 * x.size))
    assert np.all(np.abs(z.mean(axis=0) - target) <= bound * se)


def _data(n: int, d: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, d))
    y = (X[:, 0] + 0.2 * rng.normal(size=n) > 0.5).astype(int)
    return X, y


def test_privacy_composes_per_holder() -> None:
    """Correct: one eps message per private holder. Reference: one per tensor, k eps in all."""
    for model, mode, k in [
        ("linear", "correct", 1),
        ("mlp", "correct", 1),
        ("linear", "reference", 2),
        ("mlp", "reference", 4),
    ]:
        spend = psgd_spend(2.0, model, mode)
        assert spend.epsilon == pytest.approx(2.0 * k) and spend.delta == 0.0
        assert [eps for _, eps in spend.parts] == [2.0] * k


@pytest.mark.slow
def test_fits_send_one_message_per_holder_learn_and_are_deterministic() -> None:
    X, y = _data(2000, 3, 2)
    Xq, yq = _data(100, 3, 3)
    Xt, yt = _data(1000, 3, 4)
    linear = [
        PSGDClassifier(epsilon=8.0, lr=1.0, random_state=5).fit(X, y, X_public=Xq, y_public=yq)
        for _ in range(2)
    ]
    for a, b in zip(linear[0].params_, linear[1].params_, strict=True):
        np.testing.assert_array_equal(a, b)
    assert linear[0].n_private_steps_ == 2000  # every private holder exactly once
    assert linear[0].messages_per_holder_ == 1 and linear[0].privacy_.epsilon == 8.0
    assert linear[0].score(Xt, yt) > 0.65  # majority rate about 0.5; measured 0.715
    mlp = PSGDClassifier(epsilon=8.0, lr=1.0, model="mlp", mode="reference", random_state=5)
    mlp.fit(X, y, X_public=Xq, y_public=yq)
    assert [p.shape for p in mlp.params_] == [(3, 3), (3,), (3, 1), (1,)]
    assert mlp.messages_per_holder_ == 4 and mlp.privacy_.epsilon == 32.0
    proba = mlp.predict_proba(Xt)
    assert proba.shape == (1000, 2) and np.allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_array_equal(mlp.predict(Xt), (proba[:, 1] > 0.5).astype(int))


def test_bad_input_names_the_argument() -> None:
    X, y = _data(20, 3, 2)
    with pytest.raises(ValueError, match="model"):
        PSGDClassifier(model="cnn").fit(X, y, X_public=X, y_public=y)
    with pytest.raises(ValueError, match="lr"):
        PSGDClassifier(lr=0.0).fit(X, y, X_public=X, y_public=y)
    with pytest.raises(ValueError, match="y_public"):
        PSGDClassifier().fit(X, y, X_public=X)
    with pytest.raises(ValueError, match="classes"):
        PSGDClassifier().fit(X, y)
    with pytest.raises(ValueError, match="above the budget"):
        PSGDClassifier(epsilon=2.0, mode="reference", privacy_budget=3.0).fit(
            X, y, X_public=X, y_public=y
        )


def test_reference_short_input_breaks_the_bound() -> None:
    """Why a short normalised gradient is rounded to the sphere: fed as it is (the reference),
    x = 0.7 u gives the output's u-component the density of W = 0.51 G + 0.7 alpha, whose tail is
    lighter than alpha's, so the log density ratio against the unit input u exceeds eps (and
    grows without bound in w). Deterministic quadrature, no sampling."""
    mech = EPS1
    p, gamma, q = mech.p, mech.gamma, mech.q

    def f_alpha(a: float) -> float:
        weight = p / q if a >= gamma else (1 - p) / (1 - q)
        return float(weight * stats.norm.pdf(a))

    r = 0.7
    c = 1 - r * r

    def f_w(w: float) -> float:
        value, _ = integrate.quad(
            lambda a: f_alpha(a) * stats.norm.pdf((w - r * a) / c) / c,
            -40,
            40,
            points=[gamma],
            limit=400,
        )
        return float(value)

    ratios = [math.log(f_alpha(w) / f_w(w)) for w in (4.0, 6.0)]
    assert ratios[0] > mech.epsilon and ratios[1] > ratios[0] + 1.0
