"""The classification baselines in the experiment registry: names, grids, the PHIST skip rule."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.baselines import PGLMClassifier, PSGDClassifier
from ldptree.experiments._grids import grid_preset
from ldptree.experiments._methods import DEFAULT_METHODS, PaperGridPHISTClassifier


def test_specs_build_the_right_estimators_from_their_grids() -> None:
    built = {}
    keys = {"phist-c": "PHIST", "pglm": "PGLM", "psgd-l": "PSGD-L", "psgd-n": "PSGD-N"}
    for name, key in keys.items():
        spec = DEFAULT_METHODS.get(name)
        assert spec.task == "classification" and spec.paper_key == key
        points = list(grid_preset(spec.default_grid).points())
        built[name] = [spec.build(8.0, p, seed=0) for p in points]
    assert [m.num_cell for m in built["phist-c"]] == [1, 2, 3, 4, 5, 6]
    assert len(built["pglm"]) == 1 and isinstance(built["pglm"][0], PGLMClassifier)
    for name, model in (("psgd-l", "linear"), ("psgd-n", "mlp")):
        assert [m.lr for m in built[name]] == [1e-5, 1e-3, 1e-1, 1.0]
        assert all(isinstance(m, PSGDClassifier) and m.model == model for m in built[name])


def test_phist_c_refuses_the_points_the_paper_skipped() -> None:
    y = np.array([0, 1] * 10)
    with pytest.raises(ValueError, match="d >= 32"):
        PaperGridPHISTClassifier(num_cell=1).fit(np.zeros((20, 32)), y, X_public=None)
    with pytest.raises(ValueError, match="num_cell"):
        PaperGridPHISTClassifier(num_cell=3).fit(np.zeros((20, 19)), y)  # 3^19 > 2^30
    model = PaperGridPHISTClassifier(epsilon=8.0, num_cell=2, classes=[0, 1], random_state=0)
    assert model.fit(np.random.default_rng(0).uniform(size=(20, 2)), y).predict(
        np.zeros((3, 2))
    ).shape == (3,)
