"""A read-out object (``readout=``, the ReadOut protocol) runs in fit, fit_many, on a memory map
and in the runner; the built-in read-outs as objects equal the named ones bit for bit; clone and
get_params keep the object. Deterministic (fixed seeds): no false-failure rate."""

from __future__ import annotations

import json
import warnings

import attrs
import jax
import numpy as np
import pytest
from sklearn.base import clone

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.datasets import lpdt_uniform
from ldptree.estimators import (
    LeafFit,
    PublicCells,
    RatioReadOut,
    ReadOut,
    ShrinkReadOut,
    fit_many,
    lpct_leaves,
)
from ldptree.experiments import (
    DEFAULT_METHODS,
    Experiment,
    FixedParams,
    MethodSpec,
    SyntheticSource,
    read_records,
    run_experiment,
)


@attrs.frozen
class HalfWay:
    """The private ratio averaged with the public leaf mean (used_fallback: empty cells)."""

    weight: float = 0.5

    def __call__(self, estimates, public: PublicCells) -> LeafFit:
        usable = estimates.count > 0
        safe = np.where(usable, estimates.count, 1.0)
        ratio = np.where(usable, estimates.label_sum / safe, public.label_mean)
        values = self.weight * ratio + (1 - self.weight) * public.label_mean
        return LeafFit(values=values, used_fallback=~usable, estimates=estimates)


def _regression(n: int = 4000, seed: int = 0):
    rng = np.random.default_rng(seed)
    X, Xq = rng.uniform(size=(n, 2)), rng.uniform(size=(300, 2))
    return X, X[:, 0] + 0.1 * rng.normal(size=n), Xq, Xq[:, 0]


SETTINGS = dict(epsilon=2.0, max_depth=3, label_bound=(-0.5, 1.5), random_state=3)


def _fit(**params):
    X, y, Xq, yq = _regression()
    return LPDTRegressor(**SETTINGS, **params).fit(X, y, X_public=Xq, y_public=yq)


def test_the_built_in_read_outs_as_objects_equal_the_named_ones():
    for name, obj in (("ratio", RatioReadOut()), ("shrink", ShrinkReadOut())):
        named, as_object = _fit(readout=name), _fit(readout=obj)
        np.testing.assert_array_equal(as_object.leaf_values_, named.leaf_values_)
        np.testing.assert_array_equal(as_object.used_fallback_, named.used_fallback_)
        assert isinstance(obj, ReadOut) and as_object.readout_ == obj


def test_a_user_read_out_sees_the_public_cells_and_sets_the_leaves():
    model = _fit(readout=HalfWay())
    assert model.readout_ == HalfWay() and model.shrinkage_ is None
    est, mean = model.estimates_, model.public_leaf_mean_
    usable = est.count > 0
    ratio = np.where(usable, est.label_sum / np.where(usable, est.count, 1.0), mean)
    expected = 0.5 * ratio + 0.5 * mean
    np.testing.assert_array_equal(model.leaf_values_, expected)
    cells = model.partition_.cells(model.scaler_.transform(np.full((1, 2), 0.5)))
    np.testing.assert_array_equal(model.predict(np.full((1, 2), 0.5)), expected[np.asarray(cells)])


def test_a_user_read_out_runs_in_fit_many_on_a_memory_map_and_survives_clone(tmp_path):
    X, y, Xq, yq = _regression()
    alone = _fit(readout=HalfWay(0.3))
    np.save(tmp_path / "X.npy", X)
    mapped = np.load(tmp_path / "X.npy", mmap_mode="r")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # same key, same data: no key-reuse warning either
        batch = fit_many(
            [LPDTRegressor(**SETTINGS, readout=HalfWay(0.3)), LPDTRegressor(**SETTINGS)],
            mapped,
            y,
            X_public=Xq,
            y_public=yq,
        )
        cloned = clone(alone)
        assert cloned.get_params()["readout"] == HalfWay(0.3)
        cloned.fit(mapped, y, X_public=Xq, y_public=yq)
    for model in (batch[0], cloned):
        np.testing.assert_array_equal(model.leaf_values_, alone.leaf_values_)
    assert not np.array_equal(batch[1].leaf_values_, alone.leaf_values_)


def _uniform2(n, rng):
    return lpdt_uniform(n, 2, rng)


def test_a_user_read_out_runs_in_the_runner_with_its_true_spend(tmp_path):
    source = SyntheticSource("sine", _uniform2, n_public=200, n_train=900, n_test=300)
    spec = MethodSpec(
        "lpdt-halfway",
        "regression",
        LPDTRegressor,
        "lpdt-quick",
        "half-way",
        fixed={"readout": HalfWay()},
    )
    experiment = Experiment(
        "t",
        [source],
        ["lpdt-halfway"],
        (2.0,),
        1,
        FixedParams({"max_depth": 2}),
        registry=DEFAULT_METHODS.with_method(spec),
    )
    (row,) = read_records(run_experiment(experiment, tmp_path, progress=False))
    assert row.holder_epsilon == 2.0 and json.loads(row.privacy)["groups"] == {"training": 2.0}


def test_the_built_in_read_out_objects_run_under_jit():
    model = _fit()
    public = PublicCells(
        partition=model.partition_,
        mechanism=model.mechanism_,
        counts=np.zeros(8),
        label_mean=model.public_leaf_mean_,
        label_bound=model.label_bound_,
    )
    readout = ShrinkReadOut()
    eager = readout(model.estimates_, public)
    with jax.enable_x64(True):
        traced = jax.jit(lambda e: readout(e, public))(model.estimates_)
    np.testing.assert_allclose(traced.values, eager.values, rtol=1e-12)
    np.testing.assert_array_equal(eager.values, model.leaf_values_)  # readout="auto" is shrink


@attrs.frozen
class Weighted:
    lam: float

    def __call__(self, estimates, public: PublicCells) -> LeafFit:
        return lpct_leaves(estimates, public.class_counts, lam=self.lam, fallback="prior")


def test_a_classifier_takes_a_read_out_object():
    rng = np.random.default_rng(1)
    X, Xq = rng.uniform(size=(3000, 2)), rng.uniform(size=(300, 2))
    y, yq = (X[:, 0] > 0.5).astype(int), (Xq[:, 0] > 0.5).astype(int)
    common = dict(epsilon=2.0, max_depth=3, fallback="prior", random_state=0)
    named = LPCTClassifier(lam=0.7, **common).fit(X, y, X_public=Xq, y_public=yq)
    mine = LPCTClassifier(readout=Weighted(0.7), lam=np.inf, **common)
    mine.fit(X, y, X_public=Xq, y_public=yq)  # lam is not used: the round is collected
    np.testing.assert_array_equal(mine.leaf_eta_, named.leaf_eta_)
    assert mine.readout_ == Weighted(0.7) and named.readout_ == "weighted"
    with pytest.raises(ValueError, match="no path over lam"):
        mine.predict_proba_path(Xq, [0.5])


def test_bad_read_outs_are_refused_by_name():
    X, y, Xq, yq = _regression(n=500)
    with pytest.raises(TypeError, match="readout must be one of"):
        LPDTRegressor(readout=42).fit(X, y, X_public=Xq, y_public=yq)
    with pytest.raises(TypeError, match=r"pass an instance, readout=HalfWay\(\)"):
        LPDTRegressor(readout=HalfWay).fit(X, y, X_public=Xq, y_public=yq)
    with pytest.raises(ValueError, match="readout"):
        LPDTRegressor(readout="nope").fit(X, y, X_public=Xq, y_public=yq)
    with pytest.raises(ValueError, match="min_private_ratio='auto' applies to the built-in"):
        LPDTRegressor(readout=HalfWay(), min_private_ratio="auto").fit(
            X, y, X_public=Xq, y_public=yq
        )
    with pytest.raises(TypeError, match="must return a LeafFit"):
        LPDTRegressor(readout=lambda e, p: e.count).fit(X, y, X_public=Xq, y_public=yq)
    short = lambda e, p: LeafFit(values=e.count[:1], used_fallback=e.count[:1] > 0, estimates=e)  # noqa: E731
    with pytest.raises(ValueError, match="values of shape"):
        LPDTRegressor(readout=short).fit(X, y, X_public=Xq, y_public=yq)


def test_a_user_read_out_on_dask(dask_client):
    from ldptree.rounds import Dask

    X, y, Xq, yq = _regression()
    alone = _fit(readout=HalfWay(0.3))
    (model,) = fit_many(
        [LPDTRegressor(**SETTINGS, readout=HalfWay(0.3))],
        X,
        y,
        X_public=Xq,
        y_public=yq,
        executor=Dask(dask_client, timeout=120),
    )
    np.testing.assert_array_equal(model.leaf_values_, alone.leaf_values_)


class Doubled(LPDTRegressor):
    """A variant that changes ``fit`` (not the staged fit): fit_many must run its own fit."""

    def fit(self, X, y=None, *, X_public=None, y_public=None):
        super().fit(X, y, X_public=X_public, y_public=y_public)
        self.leaf_values_ = 2 * self.leaf_values_
        return self


def test_fit_many_never_replaces_an_overridden_fit_by_the_staged_one():
    X, y, Xq, yq = _regression()
    (model,) = fit_many([Doubled(**SETTINGS)], X, y, X_public=Xq, y_public=yq)
    np.testing.assert_array_equal(model.leaf_values_, 2 * _fit().leaf_values_)
