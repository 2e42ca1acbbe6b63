"""optimal_split: the cell/label budget split computed from public quantities."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ldptree.mechanisms import (
    DuchiMechanism,
    LaplaceCellClassMechanism,
    PiecewiseMechanism,
    RRLaplaceMechanism,
    SplitChoice,
    optimal_split,
    predicted_error,
)

CLASSES = [RRLaplaceMechanism, DuchiMechanism, PiecewiseMechanism]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("eps", [0.5, 2.0, 8.0])
def test_split_beats_or_ties_the_default_in_predicted_error(cls, eps: float) -> None:
    choice = optimal_split(cls, 8, eps, (-1.0, 3.0))
    assert isinstance(choice, SplitChoice)
    assert choice.predicted <= choice.predicted_half
    assert all(choice.predicted <= value for _, value in choice.evaluated)
    # the returned mechanism is the family at the chosen split with the caller's bound
    assert isinstance(choice.mechanism, cls)
    assert choice.mechanism.budget_split == choice.budget_split
    assert choice.mechanism.label_bound == (-1.0, 3.0)
    # refined below the grid's spacing: a neighbour 0.005 away predicts no less
    for rho in (choice.budget_split - 0.005, choice.budget_split + 0.005):
        mech = cls(epsilon=eps, label_bound=(-2.0, 2.0), budget_split=rho)
        assert predicted_error(mech, 8, (-2.0, 2.0)) >= choice.predicted * (1 - 1e-12)


def test_split_ignores_where_the_bound_sits() -> None:
    a = optimal_split(DuchiMechanism, 4, 4.0, (-1.0, 1.0))
    b = optimal_split(DuchiMechanism, 4, 4.0, (9.0, 11.0))
    assert a.budget_split == b.budget_split
    c = optimal_split(DuchiMechanism, 4, 4.0, (9.0, 11.0), shift_invariant=False)
    assert c.budget_split > b.budget_split  # a far-off bound weighs the count more


def test_predicted_error_is_the_documented_bound() -> None:
    mech = RRLaplaceMechanism(epsilon=2.0, label_bound=(-1.0, 3.0))
    v = mech.cell_variance(5)
    want = 25 * (math.sqrt(v.label_sum) + 3.0 * math.sqrt(v.count)) ** 2
    assert math.isclose(predicted_error(mech, 5, (-1.0, 3.0)), want, rel_tol=1e-12)


def test_bad_arguments_are_named() -> None:
    with pytest.raises(TypeError, match="factory"):
        optimal_split(3, 4, 1.0, 1.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="grid"):
        optimal_split(DuchiMechanism, 4, 1.0, 1.0, grid=[0.3, 1.2])
    with pytest.raises(ValueError, match="grid"):
        optimal_split(DuchiMechanism, 4, 1.0, 1.0, grid=[0.5])
    with pytest.raises(ValueError, match="n_cells"):
        optimal_split(DuchiMechanism, 0, 1.0, 1.0)
    with pytest.raises(TypeError, match="shift_invariant"):
        optimal_split(DuchiMechanism, 4, 1.0, 1.0, shift_invariant=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="cell_variance"):
        predicted_error(LaplaceCellClassMechanism(epsilon=1.0, n_classes=3), 4, 1.0)


@pytest.mark.slow
def test_split_beats_the_default_in_realised_error_of_cell_means() -> None:
    """Duchi at eps = 8 over 4 cells of 8,000 holders: the computed split (about 0.65, predicted
    error ratio 0.855) has a lower mean squared error of the cell means s^/c^ than 0.5 over 1,500
    runs each. Measured: realised ratio 0.876 (log -0.13) with standard error 0.026 for the log
    (from the runs' spread), so with an unlucky seed the test fails with probability about 3e-7
    (five standard errors)."""
    eps, n_cells, n = 8.0, 4, 8000
    choice = optimal_split(DuchiMechanism, n_cells, eps, (-1.0, 1.0))
    assert 0.6 < choice.budget_split < 0.7
    assert choice.predicted < 0.9 * choice.predicted_half
    rng = np.random.default_rng(0)
    cells_np = rng.integers(0, n_cells, n)
    y = np.array([-0.6, -0.2, 0.3, 0.7])[cells_np] + rng.uniform(-0.3, 0.3, n)
    truth = np.array([y[cells_np == j].mean() for j in range(n_cells)])
    cells, labels = jnp.asarray(cells_np, jnp.int32), jnp.asarray(y, jnp.float32)

    def mse(mech: DuchiMechanism, seed: int) -> float:
        errors = []
        for r in range(1500):
            key = jax.random.fold_in(jax.random.key(seed), r)
            est = mech.debias(mech.privatize_summarize(key, cells, labels, n_cells), n)
            errors.append(np.asarray(est.label_sum) / np.asarray(est.count) - truth)
        return float(np.mean(np.square(errors)))

    half = DuchiMechanism(epsilon=eps, label_bound=(-1.0, 1.0))
    assert mse(choice.mechanism, 1) < mse(half, 2)
