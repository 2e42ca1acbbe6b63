"""``mechanism="auto"`` under the shrinkage read-out (``ldptree.estimators._shrunk_choice``)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldptree import LPDTRegressor
from ldptree.datasets import lpdt_uniform
from ldptree.estimators._shrunk_choice import public_mean_variance, shrunk_choice, shrunk_error
from ldptree.mechanisms import choose_regression_mechanism


def test_shrunk_error_is_the_delta_method_without_shrinkage_and_count_noise() -> None:
    # a = 0 and a count noise negligible against c: n E[(D / c^)^2] -> n * n v_D / c^2 = L^2 v_D
    n, n_cells, v_sum = 10**9, 16, 3.0
    got = shrunk_error(n, n_cells, 1e-6, v_sum, 0.0, 0.0, 0.25)
    assert got == pytest.approx(n_cells**2 * v_sum, rel=1e-3)


def test_shrunk_error_is_the_public_means_where_the_read_out_ignores_the_reports() -> None:
    assert shrunk_error(1000, 8, 5.0, 5.0, math.inf, 0.0, 0.3) == pytest.approx(1000 * 0.3)
    # every count below the fallback threshold: the public mean again
    assert shrunk_error(1000, 8, 1e-9, 5.0, 1.0, 1e9, 0.3) == pytest.approx(1000 * 0.3)
    # with swamping count noise, stronger shrinkage is better
    weak, strong = (shrunk_error(20_000, 16, 900.0, 900.0, a, 0.0, 0.3) for a in (1e6, 1e9))
    assert strong < weak


def test_public_mean_variance_is_the_mean_sampling_variance_of_the_leaf_means() -> None:
    labels = np.array([0.0, 2.0, 1.0, 1.0, 1.0, 5.0])
    cells = np.array([0, 0, 1, 1, 1, 2])  # cell 2 has one row: left out
    expected = np.mean([2.0 / 2, 0.0 / 3])
    assert public_mean_variance(labels, cells, 3) == pytest.approx(expected)
    assert public_mean_variance(labels[:1], cells[:1], 3) is None


def test_shrunk_choice_ranks_the_exact_candidates_and_the_paper() -> None:
    rng = np.random.default_rng(3)
    cells = rng.integers(0, 16, 400)
    labels = np.linspace(-0.8, 0.8, 16)[cells] + rng.uniform(-0.2, 0.2, 400)
    base = choose_regression_mechanism(
        16, 0.25, (-1.0, 1.0), public_labels=labels, public_cells=cells
    )
    choice = shrunk_choice(
        base,
        n_cells=16,
        epsilon=0.25,
        bound=(-1.0, 1.0),
        n=20_000,
        public_labels=labels,
        public_cells=cells,
        strength=lambda m: 1e8,
        floor=lambda m: 0.0,
    )
    assert choice.basis == "exact-shrink"
    keys = [(name, rho) for name, rho, _ in choice.candidates]
    assert ("rr-laplace", 0.5) in keys and len(keys) == len(base.candidates) + 1
    errors = [e for _, _, e in choice.candidates]
    assert errors == sorted(errors) and choice.predicted == errors[0]
    assert choice.mechanism.label_bound == (-1.0, 1.0)


def test_lpdt_auto_uses_the_read_out_it_will_run() -> None:
    rng = np.random.default_rng(0)
    X, y = lpdt_uniform(3000, 2, rng)
    Xq, yq = lpdt_uniform(400, 2, rng)
    fit = {"X_public": Xq, "y_public": yq}
    shrink = LPDTRegressor(0.5, 3, random_state=0).fit(X, y, **fit)
    ratio = LPDTRegressor(0.5, 3, readout="ratio", random_state=0).fit(X, y, **fit)
    assert shrink.mechanism_choice_.basis == "exact-shrink"
    assert ratio.mechanism_choice_.basis == "exact"
    assert shrink.mechanism_ == shrink.mechanism_choice_.mechanism
    assert (
        LPDTRegressor(0.5, 3, mechanism="paper", random_state=0).fit(X, y, **fit).mechanism_choice_
        is None
    )
