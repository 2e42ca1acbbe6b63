"""The baselines in the runner's default registry, and their grid presets."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree import NotApplicableError
from ldptree.experiments import (
    Experiment,
    Grid,
    OracleTuning,
    SyntheticSource,
    grid_preset,
    read_records,
    run_experiment,
)
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


def _wide(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    X = rng.uniform(size=(n, 40))
    return X, (X[:, 0] > 0.5).astype(int)


def test_a_refused_histogram_grid_is_not_applicable_instead_of_a_crash(tmp_path, capsys):
    # 40 features: phist-c refuses every grid point (the LPCT paper's rule d < 32), so its cell
    # is "not applicable" (no rows, one stderr line saying why) and the other method still runs
    wide = SyntheticSource(
        "wide", _wide, n_public=100, n_train=400, n_test=100, task="classification"
    )
    tuning = OracleTuning({"ct-q": Grid({"max_depth": (1,)})})
    experiment = Experiment("t", [wide], ["phist-c", "ct-q"], (8.0,), 1, tuning)
    rows = read_records(run_experiment(experiment, tmp_path, progress=False))
    assert {r.method for r in rows} == {"ct-q"}
    assert "not applicable: phist-c on wide" in capsys.readouterr().err
    with pytest.raises(NotApplicableError, match="num_cell"):
        DEFAULT_METHODS.get("phist").build(2.0, {"num_cell": 4}, 0).fit(
            np.zeros((10, 12)), np.zeros(10), X_public=np.eye(12)[:2], y_public=[0.0, 1.0]
        )
