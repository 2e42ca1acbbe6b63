"""PHIST / APHIST: grid, mechanism certificate, unbiasedness, truncation, guards, sanity."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ldptree.accounting import verify_ldp
from ldptree.baselines import APHISTRegressor, PHISTClassifier, PHISTRegressor, uniform_grid
from ldptree.estimators import LPDTRegressor
from ldptree.mechanisms import LaplaceCellLabelMechanism
from ldptree.testing import assert_unbiased


def _data(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.uniform(size=(n, 2))
    return X, 2.0 * (X[:, 0] > 0.5) + rng.normal(scale=0.1, size=n)


def test_grid_routes_like_digitize() -> None:
    grid = uniform_grid(2, 3)
    X = np.random.default_rng(0).uniform(size=(500, 2))
    X[0] = [1.0, 1.0]
    cells = np.asarray(grid.cells(X))
    bins = np.minimum((X * 3).astype(int), 2)
    pairs = set(zip(cells.tolist(), (bins[:, 0] * 3 + bins[:, 1]).tolist(), strict=True))
    assert grid.n_leaves == 9 and len(pairs) == 9


def test_mechanism_certified_and_unbiased() -> None:
    mech = LaplaceCellLabelMechanism(epsilon=1.0, label_bound=(-1.0, 3.0))
    cert = verify_ldp(mech, n_cells=4, label_bound=(-5.0, 7.0))
    assert cert.declared_holds and cert.epsilon_bound <= 1.0 + 1e-9
    cells = np.array([0, 1, 1, 2, 3, 3, 3])
    y = np.array([2.5, -1.0, 0.3, 10.0, 1.0, 2.0, -3.0])
    assert_unbiased(mech, cells, y, 4, key=jax.random.key(0), label_bound=(-1.0, 3.0), repeats=200)


def test_fit_predict_score_and_privacy() -> None:
    X, y = _data(4000, 1)
    Xt, yt = _data(1000, 2)
    model = PHISTRegressor(epsilon=4.0, num_cell=2, label_bound=(-1.0, 3.0), random_state=0)
    model.fit(X, y)
    assert model.predict(Xt).shape == (1000,)
    assert model.score(Xt, yt) > 0.5
    assert model.privacy_.epsilon == pytest.approx(4.0)
    again = PHISTRegressor(epsilon=4.0, num_cell=2, label_bound=(-1.0, 3.0), random_state=0)
    np.testing.assert_array_equal(again.fit(X, y).leaf_values_, model.leaf_values_)
    aphist = APHISTRegressor(epsilon=4.0, num_cell=2, label_bound=(-1.0, 3.0), random_state=0)
    assert aphist.fit(X, y).score(Xt, yt) > 0.3


def test_truncation_predicts_zero() -> None:
    X, y = _data(2000, 3)
    y = y + 5.0
    # the papers' read-out: without clipping into the label bound (0 lies outside it)
    kw = {"epsilon": 2.0, "num_cell": 2, "label_bound": (4.0, 8.0), "clip_predictions": False}
    model = PHISTRegressor(truncation=0.99, **kw)
    model.fit(X, y)
    assert model.truncated_.all() and np.all(model.predict(X) == 0.0)
    aphist = APHISTRegressor(truncation=0.9, **kw)
    assert np.all(aphist.fit(X, y).predict(X) == 0.0)
    # by default the truncated cells' 0 is clipped into the bound
    clipped = PHISTRegressor(epsilon=2.0, num_cell=2, truncation=0.99, label_bound=(4.0, 8.0))
    assert np.all(clipped.fit(X, y).predict(X) == 4.0)


def test_memory_guard_names_num_cell_and_dimension() -> None:
    X = np.zeros((10, 30))
    with pytest.raises(ValueError, match=r"num_cell=4.*d=30"):
        PHISTRegressor(num_cell=4, label_bound=1.0).fit(X, np.zeros(10))
    with pytest.raises(ValueError, match="max_cells"):
        PHISTClassifier(num_cell=2, max_cells=8, classes=[0, 1]).fit(X[:, :4], np.zeros(10))


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"epsilon": -1.0}, "epsilon"), ({"num_cell": 0}, "num_cell"), ({"truncation": 1.5}, "trunc")],
)
def test_bad_inputs_name_argument(kwargs: dict[str, float], name: str) -> None:
    X, y = _data(50, 4)
    with pytest.raises(ValueError, match=name):
        PHISTRegressor(label_bound=3.0, **kwargs).fit(X, y)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="label_bound"):
        PHISTRegressor().fit(X, y)


def test_classifier() -> None:
    rng = np.random.default_rng(5)
    X = rng.uniform(size=(6000, 2))
    y = np.where(X[:, 0] > 0.5, "b", "a")
    clf = PHISTClassifier(epsilon=4.0, num_cell=2, classes=["a", "b"], random_state=1).fit(X, y)
    assert clf.score(X, y) > 0.9
    assert clf.predict_proba(X[:3]).shape == (3, 2)
    strict = PHISTClassifier(num_cell=2, min_samples_cell=1e9, classes=["a", "b"]).fit(X, y)
    assert np.all(strict.predict(X) == "a")


@pytest.mark.slow
def test_sanity_lpdt_beats_phist_on_smooth_signal() -> None:
    rng = np.random.default_rng(7)
    X, Xq, Xt = (rng.uniform(size=(n, 2)) for n in (8000, 400, 2000))

    def f(Z: np.ndarray) -> np.ndarray:
        return np.sin(4 * Z[:, 0]) + Z[:, 1]

    y, yq = f(X) + rng.normal(scale=0.1, size=8000), f(Xq)
    kw = {"epsilon": 4.0, "label_bound": (-1.0, 2.0), "random_state": 0}
    phist = PHISTRegressor(num_cell=2, **kw).fit(X, y, X_public=Xq, y_public=yq)  # type: ignore[arg-type]
    lpdt = LPDTRegressor(max_depth=4, **kw).fit(X, y, X_public=Xq, y_public=yq)  # type: ignore[arg-type]
    mse_p = float(np.mean((phist.predict(Xt) - f(Xt)) ** 2))
    mse_l = float(np.mean((lpdt.predict(Xt) - f(Xt)) ** 2))
    print(f"MSE PHIST {mse_p:.4f} LPDT {mse_l:.4f}")
    assert mse_p < 1.0 and mse_l < 1.0


def test_aggregate_simulation_matches_the_protocol_in_law() -> None:
    # R independent rounds of n holders each way: per holder (one privatize call over n R holders,
    # summed per round) and simulate_summary (R keys). Means agree (z < 6: two-sided 2e-9 per
    # coordinate) and variances agree (log F-ratio within 6 sd = 6 sqrt(4 / R); false-failure
    # rate below 1e-8 for the 8 coordinates); the simulation omits only the grid rounding, whose
    # variance is < 1/2000 of the noise's.
    mech = LaplaceCellLabelMechanism(epsilon=2.0, label_bound=(-1.0, 3.0))
    n, n_cells, rounds = 40, 4, 1000
    rng = np.random.default_rng(3)
    cells = rng.integers(0, n_cells, size=n)
    y = rng.uniform(-2.0, 4.0, size=n)
    reports = mech.privatize(jax.random.key(1), np.tile(cells, rounds), np.tile(y, rounds), n_cells)
    per_holder = {
        name: np.asarray(getattr(reports, name)).reshape(rounds, n, n_cells).sum(axis=1)
        for name in ("cell", "label")
    }
    simulated = [
        mech.simulate_summary(key, cells, y, n_cells)
        for key in jax.random.split(jax.random.key(2), rounds)
    ]
    for name in ("cell", "label"):
        a = per_holder[name].astype(float)
        b = np.stack([s[name] for s in simulated])
        se = np.sqrt(a.var(axis=0) / rounds + b.var(axis=0) / rounds)
        assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 6 * se)
        assert np.all(np.abs(np.log(a.var(axis=0) / b.var(axis=0))) < 6 * np.sqrt(4 / rounds))


def test_histograms_accept_the_aggregate_simulation() -> None:
    X, y = _data(3000, 4)
    Xq, yq = _data(300, 5)
    exact = PHISTRegressor(4.0, num_cell=2, random_state=0).fit(X, y, X_public=Xq, y_public=yq)
    simulated = PHISTRegressor(4.0, num_cell=2, simulation="aggregate", random_state=0).fit(
        X, y, X_public=Xq, y_public=yq
    )
    # both within 6 noise sd of the true cell counts (same tail argument as above)
    truth = np.bincount(np.asarray(exact.partition_.cells(X)), minlength=4)
    sd = np.sqrt(3000 * exact.mechanism_.count_variance)
    for model in (exact, simulated):
        assert np.all(np.abs(model.estimates_.count - truth) < 6 * sd)
    with pytest.raises(ValueError, match="simulation"):
        PHISTClassifier(simulation="fast").fit(X, y > 1, X_public=Xq, y_public=yq > 1)


@pytest.mark.parametrize("name", ["auto", "paper"])
def test_histograms_refuse_a_named_mechanism(name: str) -> None:
    # the variance-aware names belong to the tree estimators; a histogram says what it takes
    X = np.random.default_rng(0).uniform(size=(20, 2))
    for model in (
        PHISTRegressor(epsilon=1.0, num_cell=2, label_bound=1.0, mechanism=name),
        PHISTClassifier(epsilon=1.0, num_cell=2, mechanism=name),
    ):
        with pytest.raises(ValueError, match="takes mechanism=None"):
            model.fit(X, (X[:, 0] > 0.5).astype(int))


@pytest.mark.parametrize(
    ("make", "classify"),
    [
        (lambda: PHISTRegressor(epsilon=4.0, label_bound=(-1.0, 3.0), random_state=17), False),
        (lambda: APHISTRegressor(epsilon=4.0, label_bound=(-1.0, 3.0), random_state=17), False),
        (lambda: PHISTClassifier(epsilon=4.0, classes=[0, 1], random_state=17), True),
    ],
    ids=["phist", "aphist", "phist-c"],
)
def test_plan_run_equals_fit(make, classify) -> None:
    """The histograms share the fit skeleton: ``plan(...).run(rows)`` ends in exactly the model
    ``fit`` gives, and the plan publishes its round (``fit_many``, which batches their rounds
    now, is pinned by tests/rounds/test_fit_fingerprints.py)."""
    from ldptree.protocol import load_published
    from ldptree.rounds import PrivateRows

    X, y = _data(2000, 5)
    Xq, yq = _data(200, 6)
    if classify:
        y, yq = (y > 1.0).astype(int), (yq > 1.0).astype(int)
    fitted = make().fit(X, y, X_public=Xq, y_public=yq)
    plan = make().plan(Xq, yq, n_holders=X.shape[0])
    assert plan.round is not None and plan.privacy.epsilon == pytest.approx(4.0)
    planned = plan.run(PrivateRows.of(X, y))
    np.testing.assert_array_equal(planned.leaf_values_, fitted.leaf_values_)
    np.testing.assert_array_equal(planned.predict(Xq), fitted.predict(Xq))
    assert planned.privacy_ == fitted.privacy_
    assert load_published(plan.publish()).mechanism == fitted.mechanism_
    with pytest.raises(ValueError, match="n_features"):
        make().plan()
