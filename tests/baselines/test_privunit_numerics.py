"""PrivUnitG on extreme finite inputs: never NaN or inf, same support for every input; and its
release certificate."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree.accounting._release import ReleaseCertificate
from ldptree.baselines import PrivUnitG, PSGDClassifier

F32_MAX = float(np.finfo(np.float32).max)
SUBNORMAL = float(np.finfo(np.float32).smallest_subnormal)

EXTREME = [
    [1e25, 0.0, 0.0],
    [1e25, -3.0, 2.0],
    [1e38, 1e38, -1e38],
    [F32_MAX, F32_MAX, -F32_MAX],
    [F32_MAX, 0.0, 0.0],
    [SUBNORMAL, 0.0, 0.0],
    [SUBNORMAL, -SUBNORMAL, 1e-40],
    [0.0, 0.0, 0.0],
    [1e-30, 2e-30, 0.0],
]


@pytest.mark.parametrize("x", EXTREME)
@pytest.mark.parametrize("clip", [1e-3, 1.0, 1e30])
def test_round_to_sphere_is_a_finite_unit_vector(x, clip):
    mech = PrivUnitG(1.0)
    keys = jax.random.split(jax.random.key(0), 64)
    u = np.asarray(
        jax.vmap(lambda k: mech.round_to_sphere(k, jnp.asarray(x, jnp.float32), clip))(keys)
    )
    assert np.all(np.isfinite(u))
    np.testing.assert_allclose(np.linalg.norm(u.astype(np.float64), axis=1), 1.0, rtol=1e-6)
    z = np.asarray(
        jax.vmap(lambda k: mech.privatize_ball(k, jnp.asarray(x, jnp.float32), clip))(keys)
    )
    assert np.all(np.isfinite(z))


@pytest.mark.parametrize("big", [1e25, 1e38, F32_MAX])
def test_a_huge_coordinate_gives_its_own_direction(big):
    """``x = (big, 0, 0)`` has ``|x| >= clip``: radius 1, so ``u = e_1`` on every draw (the norm
    overflowed to inf and ``x / |x|`` was 0/0 = NaN before)."""
    mech = PrivUnitG(1.0)
    keys = jax.random.split(jax.random.key(1), 32)
    x = jnp.asarray([big, 0.0, 0.0], jnp.float32)
    u = np.asarray(jax.vmap(lambda k: mech.round_to_sphere(k, x, 1.0))(keys))
    np.testing.assert_array_equal(u, np.tile([1.0, 0.0, 0.0], (32, 1)))


def test_non_finite_input_is_the_null_record():
    """Documented rule: a vector with a NaN or inf entry is treated as the zero vector."""
    mech = PrivUnitG(1.0)
    key = jax.random.key(2)
    zero = mech.round_to_sphere(key, jnp.zeros(3, jnp.float32), 1.0)
    for bad in ([jnp.nan, 1.0, 0.0], [jnp.inf, 0.0, 0.0], [-jnp.inf, jnp.inf, 1.0]):
        got = mech.round_to_sphere(key, jnp.asarray(bad, jnp.float32), 1.0)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(zero))


@pytest.mark.parametrize("big", [1e25, 1e38, F32_MAX])
@pytest.mark.slow
def test_psgd_fit_with_one_huge_holder_gives_finite_params(big):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(200, 3))
    y = (X[:, 0] > 0.5).astype(int)
    X[7, 1] = X[8, 1] = big  # finite but huge features, one holder per label
    y[7], y[8] = 0, 1
    Xq = rng.uniform(size=(40, 3))
    yq = (Xq[:, 0] > 0.5).astype(int)
    for model in ("linear", "mlp"):
        fit = PSGDClassifier(epsilon=2.0, lr=0.1, model=model, random_state=0)
        fit.fit(X, y, X_public=Xq, y_public=yq)
        assert all(np.all(np.isfinite(p)) for p in fit.params_)
        assert fit.privacy_certificate_.holds and fit.privacy_.delta == 0.0


@pytest.mark.parametrize("epsilon", [0.01, 1.0, 8.0, 30.0, 1000.0])
def test_certificate_from_the_sampler_constants(epsilon):
    mech = PrivUnitG(epsilon)
    cert = mech.certificate()
    assert isinstance(cert, ReleaseCertificate)
    assert cert.epsilon_claimed == epsilon and cert.delta_claimed == 0.0
    assert cert.holds and cert.epsilon == pytest.approx(epsilon, rel=1e-9, abs=1e-12)
    # continuous (float) sampler: the bound is of the declared law, not pure as sampled
    assert not cert.pure and cert.notes
    assert any("float32" in note for note in cert.notes)


def test_certificate_refutes_a_mismatched_claim():
    mech = PrivUnitG(1.0)
    wrong = PrivUnitG(2.0)
    # constants of eps = 2 claimed as eps = 1: the realised bound is 2 > 1
    cert = mech.certificate(epsilon_claimed=0.5)
    assert not cert.holds and not cert.pure
    assert cert.epsilon == pytest.approx(1.0, rel=1e-9)
    assert wrong.certificate().epsilon == pytest.approx(2.0, rel=1e-9)
    assert math.isfinite(cert.epsilon)
