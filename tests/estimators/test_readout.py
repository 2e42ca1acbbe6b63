"""Read-outs: the shrinkage default is public-only, bounded, and the ratio where that is safe."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.datasets import lpdt_uniform
from ldptree.estimators._readout import shrinkage_strength, shrunk_ratio
from ldptree.protocols import CellEstimates


@pytest.fixture(scope="module")
def small():
    """300 holders on a depth-5 tree (32 cells, ~9 holders each) at eps = 2: several noisy
    counts are small and positive, which is where the reference's ratio explodes."""
    rng = np.random.default_rng(3)
    X, y = lpdt_uniform(300, 2, rng)
    Xq, yq = lpdt_uniform(400, 2, rng)
    Xt, yt = lpdt_uniform(2000, 2, rng)
    return X, y, Xq, yq, Xt, yt


def _fit(data, **kw):
    X, y, Xq, yq, *_ = data
    # the read-outs themselves, before the leaf values are clipped into the label bound
    params = {
        "epsilon": 2.0,
        "max_depth": 5,
        "min_samples_leaf": 5,
        "clip_predictions": False,
        "random_state": 0,
        **kw,
    }
    return LPDTRegressor(**params).fit(X, y, X_public=Xq, y_public=yq)


@pytest.mark.parametrize("mechanism", ["auto", "paper"])
def test_shrinkage_uses_public_quantities_only(small, mechanism):
    X, y, Xq, yq, *_ = small
    a = _fit(small, mechanism=mechanism)
    permuted = np.random.default_rng(1).permutation(y)
    b = _fit((X, permuted, Xq, yq), mechanism=mechanism)
    c = _fit((X[::-1], y[::-1] * 0.0 + yq.mean(), Xq, yq), random_state=5, mechanism=mechanism)
    assert a.readout_ == "shrink" and a.shrinkage_ > 0
    # same n, mechanism and public bound -> same a, whatever the private labels or rows (the
    # default's choice of mechanism reads public data and n only, so it is the same too)
    assert a.mechanism_ == b.mechanism_ == c.mechanism_
    assert a.shrinkage_ == b.shrinkage_ == c.shrinkage_
    assert not np.array_equal(a.estimates_.label_sum, b.estimates_.label_sum)
    if mechanism == "paper":  # the papers' mechanism's strength, written out
        mech = a.mechanism_
        lo, hi = a.label_bound_
        h = (hi - lo) / 2
        v_c = mech.count_variance
        expected = 300 * (v_c * h**2 + (v_c + 1) * mech.label_variance)
        assert a.shrinkage_ == pytest.approx(expected / h**2, rel=1e-12)


def test_default_does_not_explode_where_the_ratio_does(small):
    *_, Xt, yt = small
    ratio = _fit(small, readout="ratio")
    guarded = _fit(small)
    lo, hi = ratio.label_bound_
    width = hi - lo
    # same reports: the read-out is the only difference
    np.testing.assert_array_equal(ratio.estimates_.count, guarded.estimates_.count)
    assert np.max(np.abs(ratio.leaf_values_)) > 3 * width  # the reference's ratio explodes
    assert np.all(np.abs(guarded.leaf_values_ - guarded.public_leaf_mean_) <= width)
    mse_ratio = np.mean((ratio.predict(Xt) - yt) ** 2)
    mse_guarded = np.mean((guarded.predict(Xt) - yt) ** 2)
    assert mse_guarded < mse_ratio / 5, (mse_guarded, mse_ratio)


def test_ratio_readout_is_the_reference(small):
    m = _fit(small, readout="ratio")
    c, s = m.estimates_.count, m.estimates_.label_sum
    expected = np.where(c > 0, s / np.where(c > 0, c, 1.0), m.public_leaf_mean_)
    np.testing.assert_array_equal(m.leaf_values_, expected)
    assert m.readout_ == "ratio" and m.shrinkage_ == 0.0


def test_shrinkage_is_the_ratio_in_well_filled_cells():
    """Two cells of 20,000 holders each at eps = 8: ``w_j = c^2 / (c^2 + a)`` is within 1e-3
    of 1, so the read-outs agree to a thousandth of the label range."""
    rng = np.random.default_rng(0)
    X, y = lpdt_uniform(40000, 1, rng)
    Xq, yq = lpdt_uniform(200, 1, rng)
    kw = {"epsilon": 8.0, "max_depth": 1, "random_state": 0}
    a = LPDTRegressor(**kw).fit(X, y, X_public=Xq, y_public=yq)
    b = LPDTRegressor(readout="ratio", **kw).fit(X, y, X_public=Xq, y_public=yq)
    weights = a.estimates_.count**2 / (a.estimates_.count**2 + a.shrinkage_)
    assert np.all(weights > 1 - 1e-3)
    lo, hi = a.label_bound_
    np.testing.assert_allclose(a.leaf_values_, b.leaf_values_, atol=1e-3 * (hi - lo))


def test_shrunk_ratio_formula_and_fallback():
    est = CellEstimates(
        count=np.array([-1.0, 0.5, 10.0]), label_sum=np.array([3.0, 4.0, 20.0]), n=100
    )
    public = np.array([1.0, 1.0, 1.0])
    values, fell = shrunk_ratio(est, public, min_ratio=0.0, strength=4.0)
    assert fell.tolist() == [True, False, False]
    np.testing.assert_allclose(values, [1.0, (2.0 + 4.0) / 4.25, (200.0 + 4.0) / 104.0])
    values, fell = shrunk_ratio(est, public, min_ratio=0.0, strength=math.inf)
    assert fell.all() and values.tolist() == [1.0, 1.0, 1.0]


def test_bad_readout_and_a_mechanism_without_variance(small):
    X, y, Xq, yq, *_ = small
    with pytest.raises(ValueError, match="readout"):
        LPDTRegressor(readout="median").fit(X, y, X_public=Xq, y_public=yq)

    class Opaque:
        """A mechanism that says nothing about its variance."""

    assert shrinkage_strength(Opaque(), 4, 100, (0.0, 1.0)) is None  # type: ignore[arg-type]
