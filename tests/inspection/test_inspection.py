"""ldptree.inspection: text and plot of fitted trees in original units, privacy summary, and
persistence (JSON and pickle) with predictions equal bit for bit."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ldptree import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor, NotFittedError
from ldptree.baselines import DTRegressor
from ldptree.inspection import (
    FORMAT,
    TreeModel,
    export_text,
    load_model,
    model_from_json,
    model_to_json,
    plot_tree,
    privacy_summary,
    save_model,
    tree_cells,
    tree_model,
)

RNG = np.random.default_rng(7)
# features far from [0, 1], so that the original units differ from the scaled ones
SHIFT, SCALE = np.array([100.0, -3.0, 0.0]), np.array([50.0, 0.01, 1.0])


def _data(n: int, d: int = 2) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    U = RNG.uniform(size=(n, d))
    y = np.sin(4 * U[:, 0]) + (U[:, 1] if d > 1 else 0) + 0.3 * RNG.normal(size=n)
    return SHIFT[:d] + SCALE[:d] * U, y


X_PUB, Y_PUB = _data(400)
X, Y = _data(4000)
X_NEW = SHIFT[:2] + SCALE[:2] * RNG.uniform(-0.2, 1.2, size=(3000, 2))  # some outside the box
C_PUB, C = (Y_PUB > 1.0).astype(int), (Y > 1.0).astype(int)


@pytest.fixture(scope="module")
def lpdt() -> LPDTRegressor:
    model = LPDTRegressor(epsilon=2.0, max_depth=4, min_samples_leaf=5, random_state=0)
    return model.fit(X, Y, X_public=X_PUB, y_public=Y_PUB)


@pytest.fixture(scope="module")
def lpct() -> LPCTClassifier:
    labels = np.array(["low", "high"])
    model = LPCTClassifier(epsilon=2.0, max_depth=3, fallback="prior", random_state=0)
    return model.fit(X, labels[C], X_public=X_PUB, y_public=labels[C_PUB])


@pytest.fixture(scope="module")
def pruned() -> LPCTPrunedClassifier:
    model = LPCTPrunedClassifier(epsilon=2.0, random_state=0)
    return model.fit(X, C, X_public=X_PUB, y_public=C_PUB)


def _cell_of(model: Any, X_orig: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The leaf each row is routed to, by the estimator's own routing."""
    scaled = model.scaler_.transform(X_orig)
    return np.asarray(model.partition_.cells(scaled))


@pytest.mark.parametrize("name", ["lpdt", "lpct", "pruned"])
def test_cells_are_boxes_in_original_units(name: str, request: pytest.FixtureRequest) -> None:
    """Every row lies in the displayed bounds of the cell its leaf belongs to, and in no other
    (rows within a relative 1e-6 of a bound are skipped: the routing compares in float32)."""
    model = request.getfixturevalue(name)
    tree = tree_model(model)
    cells = tree_cells(tree)
    leaf_to_cell = {leaf: i for i, c in enumerate(cells) for leaf in c.leaves}
    assert sorted(leaf_to_cell) == list(range(model.partition_.n_leaves))
    expected = np.array([leaf_to_cell[int(j)] for j in _cell_of(model, X_NEW)])
    lows = np.stack([c.low for c in cells])
    highs = np.stack([c.high for c in cells])
    inside = np.all((X_NEW[:, None, :] >= lows) & (X_NEW[:, None, :] < highs), axis=2)
    near = np.isclose(X_NEW[:, None, :], lows, rtol=1e-6, atol=1e-9) | np.isclose(
        X_NEW[:, None, :], highs, rtol=1e-6, atol=1e-9
    )
    clear = ~near.any(axis=(1, 2))
    assert clear.sum() > 2900
    for row in np.flatnonzero(clear):
        # a pruned cell is its node's box minus the boxes of the cells it excludes
        candidates = set(np.flatnonzero(inside[row]).tolist())
        owners = [i for i in candidates if not set(cells[i].others) & candidates]
        assert owners == [expected[row]], row


def test_text_export_lists_every_cell_in_original_units(lpdt: LPDTRegressor) -> None:
    text = export_text(lpdt, feature_names=["age", "dose"], privacy=False)
    lines = text.splitlines()
    cell_lines = [line for line in lines if line.startswith("cell")]
    assert len(cell_lines) == lpdt.partition_.n_leaves
    assert "age" in text and "dose" in text and "x0" not in text
    assert f"age in [{X_PUB[:, 0].min():.4g}, {X_PUB[:, 0].max():.4g}]" in lines[1]
    for line, value, fell_back in zip(
        cell_lines, lpdt.leaf_values_, lpdt.used_fallback_, strict=True
    ):
        assert f"value {value:.4g}" in line
        assert ("[public only]" in line) == bool(fell_back)
    counts = [c.private_count for c in tree_cells(tree_model(lpdt))]
    assert np.array_equal(counts, lpdt.estimates_.count)


def test_text_export_marks_fallbacks_and_pruned_cells(
    lpdt: LPDTRegressor, pruned: LPCTPrunedClassifier
) -> None:
    guarded = LPDTRegressor(
        epsilon=0.5, max_depth=6, min_samples_leaf=2, min_private_ratio="auto", random_state=0
    ).fit(X[:800], Y[:800], X_public=X_PUB, y_public=Y_PUB)
    assert guarded.used_fallback_.any() and not guarded.used_fallback_.all()
    text = export_text(guarded)
    assert text.count("[public only]") == int(guarded.used_fallback_.sum())
    tree = tree_model(pruned)
    text = export_text(pruned)
    n_cells = len(set(pruned.leaf_node_.tolist()))
    assert f"{pruned.partition_.n_leaves} leaves pruned to {n_cells} cells" in text
    public_only = np.isinf(pruned.prune_.lam[np.unique(pruned.leaf_node_)])
    assert text.count("[public only]") == int(public_only.sum())
    assert np.array_equal(tree.fallback, np.isinf(pruned.prune_.lam[pruned.leaf_node_]))


def test_privacy_summary_states_epsilon_mechanism_and_certificate(lpct: LPCTClassifier) -> None:
    summary = privacy_summary(lpct)
    assert summary.startswith("each private holder: epsilon = 2 (pure, delta = 0)")
    assert repr(lpct.mechanism_) in summary
    assert "HOLDS" in summary and lpct.privacy_certificate_.holds
    assert lpct.mechanism_choice_.describe() in summary
    assert "privacy: " + summary in export_text(lpct)
    public_only = LPCTClassifier(epsilon=2.0, max_depth=2, lam=np.inf, random_state=0)
    public_only.fit(X, C, X_public=X_PUB, y_public=C_PUB)
    assert "no private report was collected" in privacy_summary(public_only)
    assert "no private reports" in export_text(public_only)


@pytest.mark.parametrize("name", ["lpdt", "lpct", "pruned"])
def test_json_round_trip_predicts_bit_for_bit(
    name: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    model = request.getfixturevalue(name)
    loaded = load_model(save_model(model, tmp_path / "model.json"))
    assert isinstance(loaded, TreeModel)
    expected = model.predict(X_NEW)
    got = loaded.predict(X_NEW)
    assert got.dtype == expected.dtype and np.array_equal(got, expected)
    if name != "lpdt":
        assert np.array_equal(loaded.predict_proba(X_NEW), model.predict_proba(X_NEW))
    assert export_text(loaded) == export_text(model)
    assert model_to_json(loaded) == model_to_json(model)


def test_json_keeps_the_outside_rule() -> None:
    model = LPDTRegressor(epsilon=2.0, max_depth=3, outside="zero", random_state=1)
    model.fit(X, Y, X_public=X_PUB, y_public=Y_PUB)
    loaded = model_from_json(model_to_json(model))
    assert loaded.outside == "zero"
    assert np.array_equal(loaded.predict(X_NEW), model.predict(X_NEW))
    assert np.any(loaded.predict(X_NEW) == 0.0)  # rows outside the public box


def test_json_keeps_the_feature_names() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(X, columns=["a", "b"])
    public = pd.DataFrame(X_PUB, columns=["a", "b"])
    model = LPDTRegressor(epsilon=2.0, max_depth=3, random_state=1)
    model.fit(frame, Y, X_public=public, y_public=Y_PUB)
    loaded = model_from_json(model_to_json(model))
    new = pd.DataFrame(X_NEW, columns=["a", "b"])
    assert np.array_equal(loaded.predict(new), model.predict(new))
    assert loaded.feature_names == ("a", "b")
    assert "a in [" in export_text(loaded)
    with pytest.raises(ValueError, match="columns"):
        loaded.predict(pd.DataFrame(X_NEW, columns=["b", "a"]))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda p: p.update(format="ldptree.tree/0"), "format"),
        (lambda p: p.update(extra=1), "unknown"),
        (lambda p: p.pop("values"), "missing"),
        (lambda p: p.update(values=[1.0] * len(p["values"])), "float.hex"),
        (lambda p: p.update(values=p["values"][:-1]), "values must have shape"),
        (lambda p: p.update(fallback=[1] * len(p["fallback"])), "true/false"),
        (lambda p: p.update(outside="wrap"), "outside"),
        (lambda p: p["partition"].update(left=[5]), "partition"),
        (lambda p: p.update(cell_node=[10**6] * len(p["cell_node"])), "cell_node"),
        (lambda p: p["privacy"].update(epsilon="8"), "privacy.epsilon"),
        (lambda p: p["scaler"].update(lo=["inf"] * 2), "scaler"),
    ],
)
def test_json_refuses_malformed_files(lpdt: LPDTRegressor, edit: Any, message: str) -> None:
    payload = json.loads(model_to_json(lpdt))
    edit(payload)
    with pytest.raises(ValueError, match=message):
        model_from_json(json.dumps(payload))


def test_json_classes_keep_their_type(lpct: LPCTClassifier) -> None:
    payload = json.loads(model_to_json(lpct))
    assert payload["format"] == FORMAT
    assert payload["classes"]["values"] == list(lpct.classes_)
    payload["classes"] = {"dtype": "<i8", "values": ["low", "high"]}
    with pytest.raises(ValueError, match=r"classes\.values"):
        model_from_json(json.dumps(payload))
    floats = LPCTClassifier(epsilon=2.0, max_depth=2, random_state=0)
    floats.fit(X, C * 2.0 + 1, X_public=X_PUB, y_public=C_PUB * 2.0 + 1)
    loaded = model_from_json(model_to_json(floats))
    assert loaded.predict(X_NEW).dtype == np.float64
    assert np.array_equal(loaded.predict(X_NEW), floats.predict(X_NEW))


def test_only_fitted_tree_estimators_are_inspected() -> None:
    with pytest.raises(NotFittedError):
        export_text(LPDTRegressor())
    dt = DTRegressor().fit(X, Y, X_public=X_PUB, y_public=Y_PUB)
    with pytest.raises(TypeError, match="LPDTRegressor, LPCTClassifier or LPCTPrunedClassifier"):
        tree_model(dt)
    with pytest.raises(ValueError, match="feature_names"):
        export_text(LPDTRegressor(label_bound=3.0).fit(X, Y), feature_names=["a"])


def test_plot_draws_every_cell(lpdt: LPDTRegressor, pruned: LPCTPrunedClassifier) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = plot_tree(lpdt)
    assert len(ax.patches) == lpdt.partition_.n_leaves  # two features: one box per cell
    assert ax.get_xlim() == pytest.approx((X_PUB[:, 0].min(), X_PUB[:, 0].max()))
    ax = plot_tree(lpdt, features=(1,))
    # one feature: the cells crossing the slice through x0 at the box centre, as segments
    centre = tree_model(lpdt).scaler.lo[0] + tree_model(lpdt).scaler.scale[0] / 2
    crossing = {c for c in tree_cells(tree_model(lpdt)) if c.low[0] <= centre < c.high[0]}
    assert len(ax.lines) == len(crossing)
    ax = plot_tree(pruned)
    assert len(ax.patches) == pruned.partition_.n_leaves
    with pytest.raises(ValueError, match="features"):
        plot_tree(lpdt, features=(0, 0))
    with pytest.raises(ValueError, match="at must hold"):
        plot_tree(lpdt, features=(0,), at=[1.0])
    plt.close("all")


def test_three_features_plot_a_slice() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    X3, y3 = _data(3000, d=3)
    Xq3, yq3 = _data(300, d=3)
    model = LPDTRegressor(epsilon=4.0, max_depth=5, random_state=0).fit(
        X3, y3, X_public=Xq3, y_public=yq3
    )
    at = Xq3.mean(axis=0)
    ax = plot_tree(model, features=(0, 1), at=at)
    lows = np.stack([c.low for c in tree_cells(tree_model(model))])
    highs = np.stack([c.high for c in tree_cells(tree_model(model))])
    expected = np.sum((lows[:, 2] <= at[2]) & (at[2] < highs[:, 2]))
    assert 0 < len(ax.patches) == expected < model.partition_.n_leaves
    plt.close("all")


_PICKLE_WRITER = """
import pickle, sys
import numpy as np
from ldptree import LPDTRegressor
rng = np.random.default_rng(3)
X, Xq = rng.uniform(size=(2000, 2)), rng.uniform(size=(200, 2))
y, yq = X.sum(axis=1) + rng.normal(size=2000), Xq.sum(axis=1)
model = LPDTRegressor(epsilon=2.0, max_depth=3, random_state=0).fit(X, y, X_public=Xq, y_public=yq)
X_new = rng.uniform(-0.5, 1.5, size=(500, 2))
np.save(sys.argv[2], X_new)
np.save(sys.argv[3], model.predict(X_new))
with open(sys.argv[1], "wb") as f:
    pickle.dump(model, f)
"""
_PICKLE_READER = """
import pickle, sys
import numpy as np
with open(sys.argv[1], "rb") as f:
    model = pickle.load(f)
np.save(sys.argv[3], model.predict(np.load(sys.argv[2])))
"""


@pytest.mark.slow
def test_pickle_across_processes(tmp_path: Path) -> None:
    """A model pickled in one process predicts the same bits in another."""
    files = [str(tmp_path / name) for name in ("model.pkl", "X.npy", "a.npy", "b.npy")]
    for script, outputs in ((_PICKLE_WRITER, files[:3]), (_PICKLE_READER, [*files[:2], files[3]])):
        subprocess.run([sys.executable, "-c", script, *outputs], check=True, timeout=300)
    assert np.array_equal(np.load(files[2]), np.load(files[3]))
    with open(files[0], "rb") as f:
        model = pickle.load(f)
    assert np.array_equal(tree_model(model).predict(np.load(files[1])), np.load(files[2]))


def test_inspection_emits_no_warning(lpdt: LPDTRegressor, tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        text = export_text(lpdt)
        predicted = load_model(save_model(lpdt, tmp_path / "m.json")).predict(X_NEW)
    assert [str(w.message) for w in caught] == []
    assert text and np.array_equal(predicted, lpdt.predict(X_NEW))
