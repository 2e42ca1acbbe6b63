"""Min-max scaling estimated on public data."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.partitions import RangeScaler


def test_public_box_maps_onto_unit_cube():
    Xq = np.array([[1.0, -2.0, 5.0], [3.0, 2.0, 5.0], [2.0, 0.0, 5.0]])
    s = RangeScaler.fit(Xq)
    Z = s.transform(Xq)
    np.testing.assert_allclose(Z.min(axis=0)[:2], 0.0)
    np.testing.assert_allclose(Z.max(axis=0)[:2], 1.0)
    # a constant public column gets scale 1 (x - min), as scikit-learn's MinMaxScaler
    np.testing.assert_allclose(Z[:, 2], 0.0)
    assert s.inside(Z).all()
    assert not s.inside(s.transform(np.array([[0.0, 0.0, 5.0]]))).any()


def test_margin_widens_the_box():
    s = RangeScaler.fit(np.array([[0.0], [10.0]]), margin=0.1)
    np.testing.assert_allclose([s.lo[0], s.hi[0]], [-1.0, 11.0])


def test_unit_is_identity():
    X = np.random.default_rng(0).uniform(size=(5, 2))
    np.testing.assert_array_equal(RangeScaler.unit(2).transform(X), X)


def test_bad_inputs():
    with pytest.raises(ValueError, match="X_public"):
        RangeScaler.fit(np.empty((0, 2)))
    with pytest.raises(ValueError, match="margin"):
        RangeScaler.fit(np.zeros((2, 2)), margin=-1.0)
