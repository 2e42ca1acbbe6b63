"""Label bounds: rounded outward to float32 and refused where derived constants would leave the
normal float32 range (a subnormal grid step flushes to zero and makes the release deterministic)."""

from __future__ import annotations

import hashlib
import secrets

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ldptree import LPDTRegressor, _validation
from ldptree._validation import as_key, key_from_entropy, to_label_bound
from ldptree.estimators._inputs import resolve_label_bound
from ldptree.mechanisms import (
    LaplaceCellLabelMechanism,
    LaplaceFeatureLabelMechanism,
    RRLaplaceMechanism,
)

MECHANISMS = [
    lambda b: RRLaplaceMechanism(epsilon=1.0, label_bound=b),
    lambda b: LaplaceCellLabelMechanism(epsilon=1.0, label_bound=b),
    lambda b: LaplaceFeatureLabelMechanism(epsilon=1.0, n_features=2, label_bound=b),
]


@pytest.mark.parametrize("make", MECHANISMS)
@pytest.mark.parametrize("bound", [(0.0, 5e-38), (0.0, 1e30), (-1e30, 0.0), 1e-30, 2.0**65])
def test_mechanisms_refuse_label_bounds_outside_the_normal_float32_range(make, bound):
    with pytest.raises(ValueError, match="label_bound"):
        make(bound)


def test_lpdt_refuses_a_subnormal_label_range():
    rng = np.random.default_rng(0)
    X = rng.random((50, 2))
    y = rng.random(50) * 1e-38
    with pytest.raises(ValueError, match="label_bound"):
        LPDTRegressor(epsilon=1.0, label_bound=(0.0, 5e-38), random_state=0).fit(X, y)
    # the public labels' range goes through the same rule
    with pytest.raises(ValueError, match="label_bound"):
        LPDTRegressor(epsilon=1.0, random_state=0).fit(X, y, X_public=X, y_public=y)


def test_label_bounds_are_rounded_outward_to_float32():
    lo, hi = to_label_bound((-0.1, 0.1))
    assert np.float32(lo) == lo and np.float32(hi) == hi  # representable
    assert lo <= -0.1 and hi >= 0.1  # outward
    assert np.nextafter(np.float32(lo), np.float32(0)) > -0.1  # the nearest such value
    assert np.nextafter(np.float32(hi), np.float32(0)) < 0.1
    assert to_label_bound(3.0) == (-3.0, 3.0)  # representable values are kept
    assert resolve_label_bound((0.0, 0.1), None) == (0.0, float(np.float32(0.1)))
    assert float(np.float32(0.1)) > 0.1  # so that the line above is the upward rounding
    # the limits themselves are allowed
    assert to_label_bound((-(2.0**64), 2.0**64)) == (-(2.0**64), 2.0**64)
    assert to_label_bound((0.0, 2.0**-64)) == (0.0, 2.0**-64)


def test_fresh_keys_come_from_256_bits_of_os_entropy(monkeypatch: pytest.MonkeyPatch) -> None:
    """``random_state=None`` hashes 32 bytes of OS entropy (SHA-256) to the 64-bit key."""
    asked: list[int] = []

    def fake(n: int) -> bytes:
        asked.append(n)
        return bytes(range(n))

    monkeypatch.setattr(_validation.secrets, "token_bytes", fake)
    key = as_key(None)
    assert asked == [32]
    digest = hashlib.sha256(bytes(range(32))).digest()
    expected = np.frombuffer(digest[:8], dtype="<u4")
    np.testing.assert_array_equal(np.asarray(jax.random.key_data(key)), expected)
    np.testing.assert_array_equal(
        np.asarray(jax.random.key_data(key_from_entropy(bytes(range(32))))), expected
    )
    monkeypatch.undo()
    assert not np.array_equal(
        np.asarray(jax.random.key_data(as_key(None))),
        np.asarray(jax.random.key_data(as_key(None))),
    )  # two fresh 64-bit keys collide with probability 2^-64
    with pytest.raises(ValueError, match="128 bits"):
        key_from_entropy(secrets.token_bytes(8))


@given(
    seed=st.one_of(
        st.integers(0, 2**32 - 1),
        st.integers(2**32 - 8, 2**32 - 1),
        st.integers(2**31 - 4, 2**31 + 4),
    )
)
def test_int_seeds_give_jax_random_keys_bit_for_bit(seed: int) -> None:
    """``as_key(seed)`` builds ``jax.random.key(seed)``'s key data on the host."""
    key, expected = as_key(seed), jax.random.key(seed)
    assert key.dtype == expected.dtype and key.shape == ()
    np.testing.assert_array_equal(
        np.asarray(jax.random.key_data(key)), np.asarray(jax.random.key_data(expected))
    )
