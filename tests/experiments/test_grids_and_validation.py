"""Grid presets, seeds, splits, imputation and the validation holders' release."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.experiments import (
    Grid,
    Split,
    derive_seed,
    grid_names,
    grid_preset,
    impute_from_public,
    privatize_losses,
)
from ldptree.experiments._private_validation import noise_scale, paper_noise_scale


def test_presets_match_the_spec():
    real = grid_preset("lpdt-real")
    assert real.size == 132
    first = next(real.points())
    assert first == {"max_depth": 1, "min_samples_leaf": 2, "budget_split": 0.3}
    assert grid_preset("lpdt-taxi").describe()["max_depth"] == [4, 6, 8, 10]
    lpct = grid_preset("lpct-real", n_private=2054)  # floor(log2 2054 - 1) = 10 leaf sizes
    assert lpct.describe()["min_samples_leaf"] == [2**i for i in range(10)]
    with pytest.raises(ValueError, match="n_private"):
        grid_preset("lpct-real")
    with pytest.raises(ValueError, match="not a grid preset"):
        grid_preset("nope")
    assert {"lpdt-quick", "lpdt-private", "lpdt-depth", "lpdt-leaf"} <= set(grid_names())


def test_custom_grid_order_and_checks():
    grid = Grid({"a": [1, 2], "b": ["x", "y", "z"]})
    assert grid.size == 6 and list(grid.points())[1] == {"a": 1, "b": "y"}
    with pytest.raises(ValueError, match="no values"):
        Grid({"a": []})


def test_seeds_are_stable_and_distinct():
    assert derive_seed(0, "split", "concrete", 3) == derive_seed(0, "split", "concrete", 3)
    seeds = {derive_seed(0, "split", "concrete", r) for r in range(100)}
    assert len(seeds) == 100
    assert derive_seed(1, "split", "concrete", 3) != derive_seed(0, "split", "concrete", 3)


def test_imputation_uses_public_rows_only():
    Xq = np.array([[1.0, np.nan], [3.0, 5.0], [np.nan, 7.0]])
    X = np.array([[np.nan, 100.0], [1000.0, np.nan]])
    Xt = np.array([[np.nan, np.nan]])
    y = np.zeros(3)
    out = impute_from_public(Split(Xq, y, X, y[:2], Xt, y[:1]))
    np.testing.assert_array_equal(out.X_public, [[1, 6], [3, 5], [2, 7]])
    np.testing.assert_array_equal(out.X_train, [[2, 100], [1000, 6]])
    np.testing.assert_array_equal(out.X_test, [[2, 6]])
    # private values do not move the fill values
    X2 = np.array([[np.nan, -1e9], [-1e9, np.nan]])
    again = impute_from_public(Split(Xq, y, X2, y[:2], Xt, y[:1]))
    np.testing.assert_array_equal(again.X_train[[0, 1], [0, 1]], [2, 6])


def test_validation_release_clips_and_uses_the_exact_scale():
    # B = 4 M^2 with M = 2; k = 5 grid points; eps = 2: scale 4 * 4 * 5 / 2 = 40
    assert noise_scale(5, 16.0, 2.0) == 40.0
    assert paper_noise_scale(5, 16.0, 2.0) == pytest.approx(4 * np.sqrt(5) / 2)
    losses = np.full((20000, 5), 1000.0)  # clipped to B = 16
    out = privatize_losses(losses, bound=16.0, epsilon=2.0, rng=np.random.default_rng(0))
    noise = out - 16.0
    # Laplace(40): mean 0, mean |x| = 40; with 1e5 draws the sd of the estimates is ~0.2
    assert abs(noise.mean()) < 1.0 and abs(np.abs(noise).mean() - 40.0) < 1.0
    with pytest.raises(ValueError, match="losses"):
        privatize_losses(np.ones(3), bound=1.0, epsilon=1.0, rng=np.random.default_rng(0))
