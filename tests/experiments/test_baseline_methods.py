"""The baselines in the runner's default registry, and their grid presets (spec §7.3)."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.experiments import grid_preset
from ldptree.experiments._methods import DEFAULT_METHODS
from ldptree.experiments._tables import _lpdt_lookup


def test_phist_grid_depends_on_dimension() -> None:
    small = grid_preset("phist-real", n_features=21)
    big = grid_preset("phist-real", n_features=22)
    assert small.describe() == {"num_cell": [4, 3, 2, 1], "truncation": [0.01, 0.05]}
    assert big.describe() == {"num_cell": [1], "truncation": [0.01, 0.05]}
    assert grid_preset("phist-real").size == 8
    assert grid_preset("deconv-real").describe() == {
        "bandwidth": [0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 5.0]
    }
    assert grid_preset("dt-real").size == 4
    assert grid_preset("ct-real").describe()["max_depth"][-4:] == [10, 12, 14, 16]


def test_registry_entries() -> None:
    for name, task, private in [
        ("phist", "regression", True),
        ("aphist", "regression", True),
        ("deconv", "regression", True),
        ("deconv-raw", "regression", True),
        ("dt", "regression", False),
        ("dt-pub", "regression", False),
        ("ct-w", "classification", False),
        ("ct-q", "classification", False),
    ]:
        spec = DEFAULT_METHODS.get(name)
        assert (spec.task, spec.private) == (task, private)
    assert _lpdt_lookup("abalone", "dt", 2.0).value == pytest.approx(5.67)
    assert _lpdt_lookup("abalone", "phist", 4.0).value == pytest.approx(10.5)
    assert _lpdt_lookup("abalone", "deconv-raw", 4.0).value == pytest.approx(11.4)


@pytest.mark.parametrize("name", ["phist", "aphist", "deconv", "dt", "dt-pub"])
def test_regression_methods_build_and_fit(name: str) -> None:
    rng = np.random.default_rng(0)
    X, Xq = rng.uniform(size=(200, 2)), rng.uniform(size=(30, 2))
    y, yq = X.sum(axis=1), Xq.sum(axis=1)
    spec = DEFAULT_METHODS.get(name)
    params = next(iter(grid_preset(spec.default_grid, n_features=2).points()))
    model = spec.build(2.0, params, seed=1)
    model.fit(X, y, X_public=Xq, y_public=yq)
    assert np.isfinite(model.predict(X[:10])).all()


@pytest.mark.parametrize("name", ["ct-w", "ct-q"])
def test_classification_references_build_and_fit(name: str) -> None:
    rng = np.random.default_rng(1)
    X, Xq = rng.uniform(size=(100, 2)), rng.uniform(size=(30, 2))
    spec = DEFAULT_METHODS.get(name)
    model = spec.build(1.0, {"max_depth": 2}, seed=0)
    model.fit(X, (X[:, 0] > 0.5).astype(int), X_public=Xq, y_public=(Xq[:, 0] > 0.5).astype(int))
    assert set(np.unique(model.predict(X))) <= {0, 1}
