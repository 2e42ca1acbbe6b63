"""Shared behaviour of the cell-bits + bounded-label mechanisms (Duchi, piecewise)."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from hypothesis import given, settings

from ldptree.accounting import verify_ldp
from ldptree.estimators import LPDTRegressor
from ldptree.mechanisms import CellVariance, DuchiMechanism, PiecewiseMechanism
from ldptree.testing import budget_splits, budgets

CLASSES = [DuchiMechanism, PiecewiseMechanism]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("eps", [0.1, 1.0, 8.0])
def test_certified_pure_as_implemented(cls, eps: float) -> None:
    mech = cls(epsilon=eps, label_bound=(-1.0, 3.0), budget_split=0.4)
    cert = verify_ldp(mech, n_cells=6, label_bound=(-9.0, 11.0))
    assert cert.pure and cert.epsilon_bound <= eps * (1 + 1e-9)
    # both releases spend (nearly) what they claim: nothing is silently wasted
    assert cert.epsilon_bound >= 0.99 * eps
    assert mech.label_noise.realised_epsilon <= mech.label_epsilon * (1 + 1e-12)


@pytest.mark.parametrize("cls", CLASSES)
@settings(max_examples=15, deadline=None)
@given(eps=budgets(1e-2, 40.0), rho=budget_splits())
def test_releases_never_spend_more_than_claimed(cls, eps: float, rho: float) -> None:
    mech = cls(epsilon=eps, label_bound=(-1.0, 3.0), budget_split=rho)
    # two one-hot vectors differ in two bits; the label release spans every level
    assert 2.0 * mech.flips.realised_epsilon <= mech.cell_epsilon * (1 + 1e-12)
    assert mech.label_noise.realised_epsilon <= mech.label_epsilon * (1 + 1e-12)
    assert math.isclose(mech.spend.epsilon, sum(e for _, e in mech.spend.parts), rel_tol=1e-12)


@pytest.mark.parametrize("cls", CLASSES)
def test_released_labels_are_unbiased_for_every_level(cls) -> None:
    """Exact: E[lo' + step' code | t] from the realised law equals the level's value."""
    mech = cls(epsilon=3.0, label_bound=(-1.0, 3.0))
    labels, noise = mech.labels(), mech.label_noise
    lo, step = mech.label_affine
    for t in range(labels.size):
        assert abs(lo + step * noise.mean(t) - labels.value(t)) < 1e-9


@pytest.mark.parametrize("cls", CLASSES)
def test_cell_variance_bounds_the_empirical_variance_of_debiased_estimates(cls) -> None:
    """Monte Carlo over 400 independent runs of 2,000 holders at the label bound's extreme: the
    empirical variances of c^_j and s^_j stay below the predicted bound times 1.25 (a 400-sample
    variance exceeds 1.25 times its mean with probability < 1e-3), and the label-sum bound is
    within a factor 3 of what is observed (not vacuous)."""
    mech = cls(epsilon=2.0, label_bound=(-1.0, 3.0))
    bound = mech.cell_variance(4)
    assert isinstance(bound, CellVariance) and bound.count == mech.count_variance
    n = 2000
    cells = jax.numpy.zeros(n, dtype=jax.numpy.int32)
    labels = jax.numpy.full(n, 3.0, dtype=jax.numpy.float32)
    counts, sums = [], []
    for r in range(400):
        est = mech.debias(mech.privatize_summarize(jax.random.key(r), cells, labels, 4), n)
        counts.append(float(est.count[0]))
        sums.append(float(est.label_sum[0]))
    assert np.var(counts) <= 1.25 * n * bound.count
    assert np.var(sums) <= 1.25 * n * bound.label_sum
    assert np.var(sums) >= n * bound.label_sum / 3.0


@pytest.mark.parametrize("cls", CLASSES)
def test_drops_into_lpdt(cls) -> None:
    rng = np.random.default_rng(0)
    X = rng.random((3000, 2))
    y = np.where(X[:, 0] > 0.5, 0.8, -0.8) + 0.1 * rng.normal(size=3000)
    Xq, yq = X[:200], np.clip(y[:200], -1.0, 1.0)
    mech = cls(epsilon=4.0, label_bound=(-1.0, 1.0))
    fit = LPDTRegressor(epsilon=4.0, max_depth=1, mechanism=mech, random_state=0)
    fit.fit(X, y, X_public=Xq, y_public=yq)
    assert fit.privacy_certificate_.pure
    pred = fit.predict(np.array([[0.1, 0.5], [0.9, 0.5]]))
    assert pred[0] < 0.0 < pred[1]


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ValueError, match="budget_split"):
        DuchiMechanism(epsilon=1.0, label_bound=1.0, budget_split=1.0)
    with pytest.raises(ValueError, match="precision_bits"):
        PiecewiseMechanism(epsilon=1.0, label_bound=1.0, precision_bits=8)
    with pytest.raises(TypeError, match="n_cells"):
        DuchiMechanism(epsilon=1.0, label_bound=1.0).cell_variance(2.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", CLASSES)
def test_threefry_words_reproduce_privatize_and_fields_cover_the_outputs(cls) -> None:
    from ldptree.mechanisms._random import holder_words, key_words

    mech = cls(epsilon=3.0, label_bound=(-1.0, 3.0))
    rng = np.random.default_rng(3)
    n, n_cells = 29, 5
    cells = rng.integers(0, n_cells, n).astype(np.int32)
    labels = rng.normal(1.0, 2.0, n).astype(np.float32)
    key = jax.random.key(5)
    words = np.asarray(holder_words(key_words(key), np.uint32(8), n, mech.words_per_holder(5)))
    expected = mech.privatize(key, cells, labels, n_cells, first_holder=8)
    got = mech.privatize_words(words, cells, labels, n_cells)
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    fields = {name: rest for name, *rest in mech.report_fields(n_cells)}
    top = fields[mech.label_name][2]
    assert top == mech.label_noise.max_abs_output and fields["bits"] == [(n_cells,), 0, 1]
    assert int(np.asarray(got[1]).min()) >= 0 and int(np.asarray(got[1]).max()) <= top
