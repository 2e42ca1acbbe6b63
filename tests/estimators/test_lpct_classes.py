"""The class policy: classes come from public labels and/or the user, never from private ones."""

from __future__ import annotations

import numpy as np
import pytest

from ldptree.estimators._classes import check_class_labels, encode_labels, resolve_classes


def test_classes_come_from_public_labels_sorted() -> None:
    classes = resolve_classes(None, np.array(["b", "a", "b", "c"]))
    assert classes.tolist() == ["a", "b", "c"]


def test_declared_classes_may_add_classes_public_data_lacks() -> None:
    classes = resolve_classes([2, 0, 1], np.array([0, 1, 1]))
    assert classes.tolist() == [0, 1, 2]


def test_public_labels_outside_declared_classes_are_an_error_naming_y_public() -> None:
    with pytest.raises(ValueError, match="y_public"):
        resolve_classes([0, 1], np.array([0, 1, 2]))


def test_single_public_class_without_declared_classes_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"y_public.*only one class.*classes="):
        resolve_classes(None, np.array([1, 1, 1]))


def test_no_public_labels_needs_declared_classes() -> None:
    with pytest.raises(ValueError, match="classes is required"):
        resolve_classes(None, None)
    assert resolve_classes(["no", "yes"], None).tolist() == ["no", "yes"]


@pytest.mark.parametrize(
    ("classes", "error", "match"),
    [([1, 1, 2], ValueError, "duplicate"), ([1], ValueError, "at least two")],
)
def test_bad_declared_classes_are_named(classes: list[object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        resolve_classes(classes, None)


def test_unknown_private_labels_encode_to_minus_one() -> None:
    classes = np.array(["a", "b"])
    codes = encode_labels(np.array(["b", "z", "a"]), classes)
    assert codes.tolist() == [1, -1, 0]


def test_any_hashable_labels_work_unorderable_ones_in_order_of_appearance() -> None:
    public = np.empty(3, dtype=object)
    public[:] = [frozenset({1}), "x", frozenset({1})]
    classes = resolve_classes(None, public)
    assert classes.tolist() == [frozenset({1}), "x"]
    private = np.empty(3, dtype=object)
    private[:] = ["x", frozenset({2}), frozenset({1})]
    assert encode_labels(private, classes).tolist() == [1, -1, 0]


def test_numeric_labels_of_different_dtypes_match() -> None:
    assert encode_labels(np.array([1.0, 0.0, 2.0]), np.array([0, 1])).tolist() == [1, 0, -1]
    assert encode_labels(np.array([True, False]), np.array([0, 1])).tolist() == [1, 0]


def test_string_labels_against_numeric_classes_are_a_type_error_naming_y() -> None:
    with pytest.raises(TypeError, match="y has"):
        encode_labels(np.array(["0", "1"]), np.array([0, 1]), "y")


@pytest.mark.parametrize(
    ("labels", "error", "match"),
    [
        (np.array([0.0, 0.5]), ValueError, "non-integer"),
        (np.array([0.0, np.nan]), ValueError, "NaN"),
        (np.array([1 + 1j, 2j]), TypeError, "dtype"),
        (np.array([[0, 1], [1, 0]]), ValueError, "1-d"),
        (np.array([1, None], dtype=object), ValueError, "None"),
        (np.array([[1], [2, 3]], dtype=object), TypeError, "unhashable"),
        (None, TypeError, "None"),
    ],
)
def test_wrong_label_kinds_are_rejected_naming_the_argument(
    labels: object, error: type, match: str
) -> None:
    with pytest.raises(error, match=match) as info:
        check_class_labels(labels, "y_public")
    assert "y_public" in str(info.value)


def test_label_length_must_match_rows() -> None:
    with pytest.raises(ValueError, match="y has length 2 but X has 3"):
        check_class_labels([0, 1], "y", n=3)
