"""Class labels of the classifiers: validation, the class policy, and encoding to class codes.

Policy (privacy first). The set of classes ``classes_`` is public: it comes from the public labels
and/or the user's ``classes`` argument, **never from private labels**, because the set of values
present in private data is itself private (a rare class reveals that some holder has it). Hence:

* ``classes=None``: ``classes_`` = the sorted distinct values of ``y_public``; at least two needed.
* ``classes`` given: ``classes_`` = the sorted declared values; public labels outside it are an
  error (they are public, so saying so leaks nothing).
* A class declared or seen in public but absent from the private sample is fine: its private
  counts are simply noise around 0.
* A private label outside ``classes_`` is encoded as code ``-1``; the mechanism releases such a
  record as the *null record* (pure noise), so it neither crashes the fit nor reveals itself beyond
  the eps-LDP report (see :mod:`ldptree.mechanisms._laplace_cell_class`). A deployment's holders
  do this locally and tell nobody; a *simulation*, which holds every private label, warns once
  (:class:`UnknownClassWarning`, no count, no values) when ``y`` has such labels, so that public
  classes disjoint from the private ones do not pass unnoticed.

Labels may be any hashable discrete values: integers, booleans, strings, integer-valued floats, or
objects (``classes_`` is sorted when the labels can be ordered, else in order of first appearance
in ``classes`` or ``y_public``). Floats with a fractional part, NaN/None, complex numbers and
unhashable objects are rejected with an error naming the argument; so are string labels against
numeric classes (a dtype-level mistake, not a property of the private values).
"""

from __future__ import annotations

import numbers
import warnings
from typing import Any

import numpy as np

from ldptree._typing import Int32Array
from ldptree._validation import check_column


class UnknownClassWarning(UserWarning):
    """A simulation's private labels include values outside ``classes_`` (module docstring)."""


_NUMERIC = "biuf"
_TEXT = "US"


def check_class_labels(y: Any, name: str, *, n: int | None = None) -> np.ndarray[Any, Any]:
    """``y`` as a 1-d array of discrete class labels, or raise naming ``name``."""
    if y is None:
        raise TypeError(f"{name} must be a 1-d array of class labels, got None")
    try:
        arr = np.asarray(y)
    except (TypeError, ValueError) as err:
        raise TypeError(f"{name} must be a 1-d array of class labels: {err}") from None
    arr = check_column(arr, name, n=n)
    kind = arr.dtype.kind
    if kind in "biu" or kind in _TEXT:
        return arr
    if kind == "f":
        _check_float_labels(arr, name)
        return arr
    if kind == "O":
        for value in arr.tolist():
            _check_object_label(value, name)
        return arr
    raise TypeError(
        f"{name} has dtype {arr.dtype}; class labels must be integers, booleans, strings, "
        "integer-valued floats or hashable objects"
    )


def _check_float_labels(arr: np.ndarray[Any, Any], name: str) -> None:
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} contains NaN or infinite values; class labels must be finite")
    if np.any(arr != np.round(arr)):
        raise ValueError(
            f"{name} has non-integer float values; class labels must be discrete (integers, "
            "strings, booleans or integer-valued floats). For a continuous target use "
            "LPDTRegressor"
        )


def _check_object_label(value: Any, name: str) -> None:
    if value is None:
        raise ValueError(f"{name} contains None; every row needs a class label")
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral):
        _check_float_labels(np.asarray([float(value)]), name)
    try:
        hash(value)
    except TypeError:
        raise TypeError(
            f"{name} contains an unhashable label of type {type(value).__name__}"
        ) from None


def _sorted_unique(arr: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Distinct labels, sorted when they can be ordered, else in order of first appearance."""
    try:
        return np.unique(arr)
    except TypeError:
        distinct = list(dict.fromkeys(arr.tolist()))
        out = np.empty(len(distinct), dtype=object)
        out[:] = distinct
        return out


def resolve_classes(classes: Any, y_public: np.ndarray[Any, Any] | None) -> np.ndarray[Any, Any]:
    """``classes_`` from the declared ``classes`` and/or the public labels (module policy)."""
    if classes is not None:
        declared = check_class_labels(classes, "classes")
        resolved = _sorted_unique(declared)
        if resolved.shape[0] != declared.shape[0]:
            raise ValueError("classes contains duplicate values; list each class once")
        if resolved.shape[0] < 2:
            raise ValueError(f"classes must list at least two classes, got {resolved.tolist()}")
        if y_public is not None:
            _check_compatible(y_public, resolved, "y_public")
            unknown = _sorted_unique(y_public[encode_labels(y_public, resolved, "y_public") < 0])
            if unknown.size:
                raise ValueError(
                    f"y_public contains labels {unknown.tolist()[:5]} that are not in classes; "
                    "add them to classes"
                )
        return resolved
    if y_public is None:
        raise ValueError(
            "classes is required when no public labels (y_public) are given: the set of classes "
            "must not be learned from private labels, so declare it, e.g. classes=[0, 1]"
        )
    resolved = _sorted_unique(y_public)
    if resolved.shape[0] < 2:
        raise ValueError(
            f"y_public contains only one class ({resolved.tolist()}); a classifier needs at least "
            "two. Declare every class with classes=[...] (classes are never learned from the "
            "private labels)"
        )
    return resolved


def _check_compatible(y: np.ndarray[Any, Any], classes: np.ndarray[Any, Any], name: str) -> None:
    kinds = {y.dtype.kind, classes.dtype.kind}
    if kinds & set(_TEXT) and kinds & set(_NUMERIC):
        raise TypeError(
            f"{name} has {y.dtype} labels but classes_ are {classes.dtype}; use the same label "
            "type (e.g. all strings or all integers)"
        )


def encode_labels(
    y: np.ndarray[Any, Any], classes: np.ndarray[Any, Any], name: str = "y"
) -> Int32Array:
    """Class codes ``int32[n]``: the index of each label in ``classes``, ``-1`` if absent.

    For the private labels (``name="y"``) a code ``-1`` raises one :class:`UnknownClassWarning`
    (module docstring)."""
    codes = _encode(y, classes, name)
    if name == "y" and codes.size and int(codes.min()) < 0:
        warnings.warn(
            f"y holds labels that are not among the classes {classes.tolist()[:10]} (from "
            "y_public/classes); those holders release the null record (pure noise, no label). "
            "If the public classes are wrong, declare every class with classes=[...]",
            UnknownClassWarning,
            stacklevel=3,
        )
    return codes


def _encode(y: np.ndarray[Any, Any], classes: np.ndarray[Any, Any], name: str) -> Int32Array:
    _check_compatible(y, classes, name)
    same_family = (y.dtype.kind in _NUMERIC and classes.dtype.kind in _NUMERIC) or (
        y.dtype.kind in _TEXT and classes.dtype.kind in _TEXT
    )
    if same_family:
        pos = np.clip(np.searchsorted(classes, y), 0, classes.shape[0] - 1)
        codes = np.where(classes[pos] == y, pos, -1)
        return codes.astype(np.int32)
    lookup = {value: i for i, value in enumerate(classes.tolist())}
    return np.fromiter((lookup.get(v, -1) for v in y.tolist()), dtype=np.int32, count=y.shape[0])
