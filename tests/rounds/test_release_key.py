"""Reusing a random_state never reuses noise across different releases."""

from __future__ import annotations

import jax
import numpy as np

from ldptree import LPDTRegressor
from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner
from ldptree.rounds import release_key


def _words(key: jax.Array) -> np.ndarray:
    return np.asarray(jax.random.key_data(key))


def test_release_key_separates_partitions_and_mechanisms() -> None:
    rng = np.random.default_rng(0)
    Xq = rng.uniform(size=(400, 2))
    yq = Xq[:, 0] + rng.normal(size=400)
    shallow = MaxEdgePartitioner(max_depth=2).fit(Xq, yq)
    deep = MaxEdgePartitioner(max_depth=3).fit(Xq, yq)
    mech = RRLaplaceMechanism(epsilon=2.0, label_bound=3.0)
    other = RRLaplaceMechanism(epsilon=2.0, label_bound=3.0, budget_split=0.4)
    key = jax.random.key(0)
    base = _words(release_key(key, mech, shallow))
    # the same release reproduces its key; any other release gets another one
    np.testing.assert_array_equal(base, _words(release_key(key, mech, shallow)))
    np.testing.assert_array_equal(
        base, _words(release_key(key, mech, MaxEdgePartitioner(max_depth=2).fit(Xq, yq)))
    )
    for changed in (
        release_key(key, mech, deep),
        release_key(key, other, shallow),
        release_key(key, mech),
        release_key(jax.random.key(1), mech, shallow),
    ):
        assert not np.array_equal(base, _words(changed))


def test_same_configuration_reproduces_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(3000, 2))
    y = np.sin(4 * X[:, 0]) + rng.normal(scale=0.3, size=3000)
    fit = {"X_public": X[:300], "y_public": y[:300]}
    a = LPDTRegressor(epsilon=2.0, max_depth=2, random_state=0).fit(X, y, **fit)
    b = LPDTRegressor(epsilon=2.0, max_depth=2, random_state=0).fit(X, y, **fit)
    np.testing.assert_array_equal(a.estimates_.count, b.estimates_.count)
    np.testing.assert_array_equal(a.estimates_.label_sum, b.estimates_.label_sum)
