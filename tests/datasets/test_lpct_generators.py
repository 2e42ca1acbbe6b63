"""The LPCT synthetic P/Q pairs."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ldptree.datasets import lpct_bayes_accuracy, lpct_eta, make_lpct_pair, sample_lpct


def test_eta_matches_the_reference_formula_at_hand_picked_points() -> None:
    X = np.array([[0.9, 0.5], [0.1, 0.5], [0.33, 0.7], [0.5, 1.0]])
    g = abs(1.5 * 0.5 - 0.5) * abs(1.5 * 0.9 - 0.5) * 1.0
    assert lpct_eta(X)[0] == pytest.approx(0.5 + 0.4 * g**0.1)
    g1 = abs(1.5 * 0.5 - 0.5) * abs(1.5 * 0.1 - 0.5) * 1.0
    assert lpct_eta(X)[1] == pytest.approx(0.5 - 0.4 * g1**0.1)  # sign flips left of 0.33
    assert lpct_eta(X)[2] == 0.5  # numpy sign is 0 on the line x_1 = 0.33
    assert lpct_eta(X)[3] == 0.5  # g = 0 on the boundary x_2 = 1


@pytest.mark.parametrize("gamma", [0.5, 2.0, 5.0])
def test_relative_signal_exponent_identity(gamma: float) -> None:
    X = np.random.default_rng(0).random((500, 2))
    signal_p = np.abs(lpct_eta(X) - 0.5)
    signal_q = np.abs(lpct_eta(X, exponent=0.1 * gamma) - 0.5)
    np.testing.assert_allclose(signal_q, 0.4 * (signal_p / 0.4) ** gamma, atol=1e-12)
    same_side = np.sign(lpct_eta(X) - 0.5) == np.sign(lpct_eta(X, exponent=0.1 * gamma) - 0.5)
    assert same_side.all()  # the Bayes classifiers of P and Q agree


def test_six_dimensional_pair_is_the_product_of_three_planar_signals() -> None:
    X = np.random.default_rng(1).random((100, 6))
    expected = 0.5 + np.prod([lpct_eta(X[:, k : k + 2]) - 0.5 for k in (0, 2, 4)], axis=0)
    np.testing.assert_allclose(lpct_eta(X), expected)


def test_labels_follow_eta() -> None:
    # 200k draws: the mean label is within 5 standard errors of E eta (normal tail ~6e-7).
    X, y = sample_lpct(200_000, rng=np.random.default_rng(3))
    eta = lpct_eta(X)
    se = math.sqrt(np.mean(eta * (1 - eta)) / y.size)
    assert abs(y.mean() - eta.mean()) < 5 * se
    assert set(np.unique(y)) == {0, 1}


def test_same_seed_same_sample_and_shapes() -> None:
    a = make_lpct_pair(100, 20, gamma=0.5, d=6, n_test=30, rng=7)
    b = make_lpct_pair(100, 20, gamma=0.5, d=6, n_test=30, rng=np.random.default_rng(7))
    for x, z in zip(a, b, strict=True):
        np.testing.assert_array_equal(x, z)
    assert a.X_private.shape == (100, 6) and a.X_public.shape == (20, 6)
    assert a.X_test.shape == (30, 6) and a.y_test.shape == (30,)


def test_bayes_accuracy_of_the_planar_pair() -> None:
    # Monte Carlo with 200k points: standard error < 0.001.
    assert 0.78 < lpct_bayes_accuracy(n=200_000, rng=0) < 0.795


@pytest.mark.parametrize(
    ("call", "error", "name"),
    [
        (lambda: sample_lpct(-1, rng=0), ValueError, "n"),
        (lambda: sample_lpct(5, d=3, rng=0), ValueError, "d"),
        (lambda: sample_lpct(5, gamma=0.0, rng=0), ValueError, "gamma"),
        (lambda: sample_lpct(5, rng="seed"), TypeError, "rng"),
        (lambda: lpct_eta(np.zeros((2, 3))), ValueError, "X"),
    ],
)
def test_bad_arguments_are_named(call: object, error: type, name: str) -> None:
    with pytest.raises(error, match=name):
        call()  # type: ignore[operator]
