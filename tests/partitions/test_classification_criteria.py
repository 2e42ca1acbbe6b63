"""Classification criteria (entropy, Gini; binary and multi-class) and the vectorised gain sweep."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ldptree.partitions import CRITERIA, MaxEdgePartitioner
from ldptree.partitions._criteria import check_criterion_labels, gain, split_gains


def test_entropy_is_log2_information_of_the_class_frequencies() -> None:
    y = np.array([0, 0, 1, 2], dtype=float)  # p = (1/2, 1/4, 1/4)
    expected = -(0.5 * math.log2(0.5) + 2 * 0.25 * math.log2(0.25))
    assert CRITERIA["entropy"](y) == pytest.approx(4 * expected)


def test_gini_binary_is_2p1mp_and_multiclass_is_one_minus_sum_of_squares() -> None:
    binary = np.array([1, 1, 1, 0], dtype=float)
    assert CRITERIA["gini"](binary) == pytest.approx(4 * 2 * 0.75 * 0.25)
    three = np.array([0, 1, 2, 2], dtype=float)
    assert CRITERIA["gini"](three) == pytest.approx(4 * (1 - (0.25**2 + 0.25**2 + 0.5**2)))


@pytest.mark.parametrize("name", ["entropy", "gini", "mse"])
def test_pure_or_empty_cells_have_zero_impurity(name: str) -> None:
    assert CRITERIA[name](np.zeros(0)) == 0.0
    assert CRITERIA[name](np.full(5, 2.0)) == pytest.approx(0.0, abs=1e-12)


def test_mse_is_stable_for_large_label_offsets() -> None:
    y = 1e9 + np.array([0.0, 1.0, 2.0])
    assert CRITERIA["mse"](y) == pytest.approx(2.0, rel=1e-9)


@settings(max_examples=60)
@given(
    name=st.sampled_from(["entropy", "gini", "mse"]),
    seed=st.integers(0, 2**31 - 1),
    m=st.integers(1, 40),
    n_classes=st.integers(2, 4),
)
def test_sweep_equals_one_mask_per_threshold(name: str, seed: int, m: int, n_classes: int) -> None:
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 6, m) / 5.0  # ties on purpose
    y = rng.integers(0, n_classes, m).astype(float)
    thresholds = np.concatenate([np.unique(x), [-1.0, 0.55, 2.0]])
    swept = split_gains(CRITERIA[name], x, y, thresholds)
    masked = [gain(CRITERIA[name], y, x < t) for t in thresholds]
    np.testing.assert_allclose(swept, masked, rtol=1e-9, atol=1e-12)
    assert np.all(swept >= -1e-12)


def test_classification_criteria_reject_labels_that_are_not_class_codes() -> None:
    with pytest.raises(ValueError, match="y_public"):
        check_criterion_labels(CRITERIA["gini"], np.array([0.0, 0.5]), "y_public")
    with pytest.raises(ValueError, match="y_public"):
        MaxEdgePartitioner(criterion="entropy").fit(np.eye(2), np.array([-1.0, 1.0]))
    check_criterion_labels(CRITERIA["mse"], np.array([0.3, -2.0]), "y_public")  # regression: any


def test_unknown_criterion_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match="criterion"):
        MaxEdgePartitioner(criterion="variance")


@pytest.mark.parametrize("name", ["entropy", "gini"])
def test_max_edge_picks_the_longest_edge_that_separates_classes(name: str) -> None:
    rng = np.random.default_rng(0)
    X = rng.random((200, 2))
    y = (X[:, 1] >= 0.5).astype(float)  # only feature 1 is informative
    partition = MaxEdgePartitioner(max_depth=1, criterion=name).fit(X, y)
    assert partition.feature[0] == 1
    assert partition.threshold[0] == 0.5


def test_three_class_labels_drive_the_split() -> None:
    rng = np.random.default_rng(1)
    X = rng.random((300, 2))
    y = np.floor(X[:, 0] * 3).clip(0, 2)  # three bands along feature 0
    partition = MaxEdgePartitioner(max_depth=1, criterion="gini").fit(X, y)
    assert partition.feature[0] == 0
