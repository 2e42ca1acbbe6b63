"""Regression predictions are clipped into the label bound by default (``clip_predictions``).

Every label lies in the (public or declared) label bound, so the regression function does too,
and clipping a leaf value into the bound can only bring it closer. The cases below are ones where
the unclipped read-out does leave the bound (a small epsilon and a deep tree), so each check can
fail: the clipped fit's predictions stay inside, and they are exactly the unclipped fit's
predictions clipped (same seed, same reports). Deterministic: fixed seeds.
"""

from __future__ import annotations

import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.baselines import APHISTRegressor, PHISTRegressor
from ldptree.datasets import load_dataset, lpdt_uniform
from ldptree.estimators import clip_to_bound
from ldptree.experiments._guards import disabled_guards
from ldptree.experiments._splits import RandomSplit, impute_from_public


def _outside(pred: np.ndarray, bound: tuple[float, float]) -> int:
    return int(np.sum((pred < bound[0]) | (pred > bound[1])))


def _check_pair(make, X, y, Xq, yq, Xt):
    """Fit with and without clipping; the raw fit leaves the bound, the default does not."""
    clipped = make(True).fit(X, y, X_public=Xq, y_public=yq)
    raw = make(False).fit(X, y, X_public=Xq, y_public=yq)
    bound = clipped.label_bound_
    assert _outside(raw.predict(Xt), bound) > 0  # the case is one that needs clipping
    assert _outside(clipped.predict(Xt), bound) == 0
    np.testing.assert_array_equal(clipped.leaf_values_, np.clip(raw.leaf_values_, *bound))
    np.testing.assert_array_equal(clipped.predict(Xt), np.clip(raw.predict(Xt), *bound))
    return clipped


def test_default_lpdt_predictions_stay_in_the_bound_at_small_epsilon_and_depth():
    """Defaults (read-out-aware mechanism choice and shrunk read-out) at eps = 1, depth 6: the
    predictions stay in the label range, and they are the unclipped fit's clipped (here the
    shrinkage already keeps every raw prediction inside; the ratio read-out below does not)."""
    rng = np.random.default_rng(0)
    X, y = lpdt_uniform(3000, 2, rng)
    Xq, yq = lpdt_uniform(1000, 2, rng)
    Xt, _ = lpdt_uniform(2000, 2, rng)
    model = LPDTRegressor(1.0, 6, 2, random_state=0).fit(X, y, X_public=Xq, y_public=yq)
    raw = LPDTRegressor(1.0, 6, 2, clip_predictions=False, random_state=0)
    raw.fit(X, y, X_public=Xq, y_public=yq)
    assert model.readout_ == "shrink" and disabled_guards(model) == ()
    assert _outside(model.predict(Xt), model.label_bound_) == 0
    np.testing.assert_array_equal(
        model.leaf_values_, np.clip(raw.leaf_values_, *model.label_bound_)
    )


@pytest.mark.parametrize("depth", [4, 8])
def test_papers_ratio_readout_is_clipped_too(depth):
    rng = np.random.default_rng(1)
    X, y = lpdt_uniform(2000, 2, rng)
    Xq, yq = lpdt_uniform(500, 2, rng)
    Xt, _ = lpdt_uniform(1000, 2, rng)
    _check_pair(
        lambda clip: LPDTRegressor(
            0.5, depth, 2, mechanism="paper", readout="ratio", clip_predictions=clip, random_state=3
        ),
        X,
        y,
        Xq,
        yq,
        Xt,
    )


def test_declared_bound_clips_both_ways():
    """A declared bound narrower than the labels: leaf values are clipped at both ends (of the
    bound as resolved: rounded outward to float32, as the mechanism clips labels)."""
    rng = np.random.default_rng(2)
    X, y = lpdt_uniform(2000, 1, rng)
    Xq, yq = lpdt_uniform(300, 1, rng)
    Xt, _ = lpdt_uniform(500, 1, rng)
    model = LPDTRegressor(4.0, 3, label_bound=(0.1, 0.2), random_state=0)
    pred = model.fit(X, y, X_public=Xq, y_public=yq).predict(Xt)
    lo, hi = model.label_bound_
    assert lo == pytest.approx(0.1) and hi == pytest.approx(0.2)
    assert pred.min() == lo and pred.max() == hi


def test_ccpp_deep_tree_at_epsilon_one_stays_in_the_bound(data_dir):
    """The real-data case that left the range: ccpp, a 1:7:2 split, eps = 1, depth 8, with the
    ratio read-out (27% of the raw predictions outside; the default shrunk read-out keeps them
    all inside at this seed)."""
    source = RandomSplit(load_dataset("ccpp_power_plant", data_dir))
    s = impute_from_public(source.draw(np.random.default_rng(0)))
    _check_pair(
        lambda clip: LPDTRegressor(1.0, 8, readout="ratio", clip_predictions=clip, random_state=0),
        s.X_train,
        s.y_train,
        s.X_public,
        s.y_public,
        s.X_test,
    )


@pytest.mark.parametrize("kind", [PHISTRegressor, APHISTRegressor])
def test_histogram_regressors_clip_truncated_cells_into_the_bound(kind):
    """Labels in ``[1, 2]``: a truncated cell predicts the papers' 0, outside the bound, unless
    clipped."""
    rng = np.random.default_rng(4)
    X = rng.uniform(size=(600, 2))
    y = 1.0 + X[:, 0] * X[:, 1]
    Xq = rng.uniform(size=(200, 2))
    yq = 1.0 + Xq[:, 0] * Xq[:, 1]
    Xt = rng.uniform(size=(500, 2))
    model = _check_pair(
        lambda clip: kind(1.0, 4, 0.05, clip_predictions=clip, random_state=0), X, y, Xq, yq, Xt
    )
    assert model.label_bound_[0] > 0 and np.any(model.truncated_)


def test_clip_to_bound_is_the_elementwise_clip():
    values = np.array([-3.0, 0.0, 0.5, 1.0, 7.0])
    np.testing.assert_array_equal(clip_to_bound(values, (0.0, 1.0)), [0.0, 0.0, 0.5, 1.0, 1.0])


@pytest.mark.parametrize("kind", [LPDTRegressor, PHISTRegressor])
@pytest.mark.parametrize("bad", [1, "yes", None])
def test_clip_predictions_must_be_a_bool(kind, bad):
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(50, 2))
    with pytest.raises(TypeError, match="clip_predictions must be True or False"):
        kind(clip_predictions=bad).fit(X, X[:, 0], X_public=X, y_public=X[:, 0])


def test_turning_clipping_off_is_reported_as_a_guard():
    assert disabled_guards(LPDTRegressor(clip_predictions=False)) == (
        "label clipping off (clip_predictions=False)",
    )
    assert disabled_guards(APHISTRegressor(clip_predictions=False)) == (
        "label clipping off (clip_predictions=False)",
    )
    assert disabled_guards(PHISTRegressor()) == ()
