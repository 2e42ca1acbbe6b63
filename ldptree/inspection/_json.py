"""Saving a fitted tree as versioned JSON, and loading it without executing code.

``save_model(model, path)`` writes the :class:`~ldptree.inspection.TreeModel` of a fitted
estimator; ``load_model(path)`` reads it back with :func:`json.loads` and checks every field, so a
file can hold nothing but numbers, strings and lists (unlike a pickle, loading one runs no code
from it). Floats are written as ``float.hex`` strings, so every number, and hence every
prediction, is restored bit for bit. The format is named and versioned (``FORMAT``); a file of
another format or version is refused with a ``ValueError``.

Fields: ``format``; ``estimator``, ``task``, ``outside``, ``feature_names``; ``scaler``
(``lo``, ``hi``); ``partition`` (:meth:`~ldptree.Partition.to_json`, itself validated on load);
the per-leaf ``values``, ``public``, ``private_count`` (or ``null``), ``fallback``,
``cell_node``; for classification ``classes`` (``dtype`` and ``values``) and ``leaf_class``; and
``privacy`` (:class:`~ldptree.inspection.PrivacyRecord`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from ldptree._typing import FloatArray
from ldptree.inspection._model import TreeModel, tree_model
from ldptree.inspection._privacy import PrivacyRecord
from ldptree.partitions import Partition
from ldptree.partitions._scaling import RangeScaler

FORMAT = "ldptree.tree/1"
_FIELDS = {
    "format",
    "estimator",
    "task",
    "outside",
    "feature_names",
    "scaler",
    "partition",
    "values",
    "public",
    "private_count",
    "fallback",
    "cell_node",
    "classes",
    "leaf_class",
    "privacy",
}
#: Class label dtypes a file may hold (kinds of :class:`numpy.dtype`): booleans, integers,
#: floats, strings; an ``object`` array of strings is written as strings and read back as such.
_CLASS_KINDS = "biufUO"


def _hexes(a: Any) -> Any:
    array = np.asarray(a, dtype=np.float64)
    if array.ndim == 0:
        return float(array).hex()
    return [_hexes(row) for row in array]


def _floats(value: Any, name: str, shape_rank: int) -> FloatArray:
    def convert(item: Any, rank: int) -> Any:
        if rank == 0:
            if isinstance(item, str):
                try:
                    return float.fromhex(item)
                except (ValueError, OverflowError):
                    pass
            raise ValueError(f"model JSON field {name!r} must hold float.hex strings, got {item!r}")
        if not isinstance(item, list):
            raise ValueError(f"model JSON field {name!r} must be a {rank}-level list")
        return [convert(v, rank - 1) for v in item]

    converted = convert(value, shape_rank)
    try:
        return np.asarray(converted, dtype=np.float64)
    except ValueError:  # ragged rows
        raise ValueError(f"model JSON field {name!r} has rows of different lengths") from None


def _ints(value: Any, name: str) -> np.ndarray[Any, Any]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        raise ValueError(f"model JSON field {name!r} must be a list of integers")
    return np.asarray(value, dtype=np.int64)


def _bools(value: Any, name: str) -> np.ndarray[Any, Any]:
    if not isinstance(value, list) or not all(isinstance(v, bool) for v in value):
        raise ValueError(f"model JSON field {name!r} must be a list of true/false")
    return np.asarray(value, dtype=bool)


def _string(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValueError(f"model JSON field {name!r} must be a string, got {value!r}")
    return value


def _classes_to_json(classes: np.ndarray[Any, Any]) -> dict[str, Any]:
    kind = classes.dtype.kind
    if kind not in _CLASS_KINDS or (kind == "O" and not all(isinstance(c, str) for c in classes)):
        raise TypeError(
            f"classes of dtype {classes.dtype} cannot be saved as JSON (booleans, integers, "
            "floats and strings can); use pickle for this model"
        )
    values = _hexes(classes) if kind == "f" else classes.tolist()
    return {"dtype": classes.dtype.str, "values": values}


def _classes_from_json(value: Any) -> np.ndarray[Any, Any]:
    if not isinstance(value, dict) or set(value) != {"dtype", "values"}:
        raise ValueError("model JSON field 'classes' must be an object with 'dtype' and 'values'")
    try:
        dtype = np.dtype(_string(value["dtype"], "classes.dtype"))
    except TypeError:
        raise ValueError(
            f"model JSON field 'classes.dtype' is not a dtype: {value['dtype']!r}"
        ) from None
    if dtype.kind not in _CLASS_KINDS:
        raise ValueError(f"model JSON field 'classes.dtype' must be of kind {_CLASS_KINDS!r}")
    values = value["values"]
    if dtype.kind == "f":
        return _floats(values, "classes.values", 1).astype(dtype)
    allowed: tuple[type, ...] = {"b": (bool,), "U": (str,), "O": (str,)}.get(dtype.kind, (int,))
    if not isinstance(values, list) or not all(
        isinstance(v, allowed) and (bool in allowed or not isinstance(v, bool)) for v in values
    ):
        raise ValueError(f"model JSON field 'classes.values' must hold {dtype.kind}-kind values")
    return np.asarray(values, dtype=dtype)


def model_to_json(model: Any) -> str:
    """The JSON text of a fitted estimator or :class:`~ldptree.inspection.TreeModel`."""
    tree = tree_model(model)
    payload = {
        "format": FORMAT,
        "estimator": tree.estimator,
        "task": tree.task,
        "outside": tree.outside,
        "feature_names": list(tree.feature_names),
        "scaler": {"lo": _hexes(tree.scaler.lo), "hi": _hexes(tree.scaler.hi)},
        "partition": json.loads(tree.partition.to_json()),
        "values": _hexes(tree.values),
        "public": _hexes(tree.public),
        "private_count": None if tree.private_count is None else _hexes(tree.private_count),
        "fallback": [bool(v) for v in tree.fallback],
        "cell_node": [int(v) for v in tree.cell_node],
        "classes": None if tree.classes is None else _classes_to_json(tree.classes),
        "leaf_class": None if tree.leaf_class is None else [int(v) for v in tree.leaf_class],
        "privacy": tree.privacy.to_dict(),
    }
    return json.dumps(payload, indent=1)


def model_from_json(text: str | bytes) -> TreeModel:
    """Inverse of :func:`model_to_json`; malformed text raises ``ValueError`` naming the field."""
    if not isinstance(text, str | bytes | bytearray):
        raise TypeError(f"text must be a JSON string, got {type(text).__name__}")
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError) as err:
        raise ValueError(f"text is not valid JSON (or nests too deeply): {err}") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT:
        found = payload.get("format") if isinstance(payload, dict) else None
        raise ValueError(f"not an ldptree tree file: format {found!r}, expected {FORMAT!r}")
    if set(payload) != _FIELDS:
        raise ValueError(
            f"model JSON fields must be {sorted(_FIELDS)}; missing "
            f"{sorted(_FIELDS - set(payload))}, unknown {sorted(set(payload) - _FIELDS)}"
        )
    task = _string(payload["task"], "task")
    names = payload["feature_names"]
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError("model JSON field 'feature_names' must be a list of strings")
    scaler = payload["scaler"]
    if not isinstance(scaler, dict) or set(scaler) != {"lo", "hi"}:
        raise ValueError("model JSON field 'scaler' must be an object with 'lo' and 'hi'")
    lo, hi = _floats(scaler["lo"], "scaler.lo", 1), _floats(scaler["hi"], "scaler.hi", 1)
    if lo.shape != hi.shape or not (np.all(np.isfinite(lo)) and np.all(lo < hi)):
        raise ValueError(
            "model JSON fields 'scaler.lo' and 'scaler.hi' must have equal lengths, finite "
            "values and lo < hi"
        )
    classification = task == "classification"
    classes, leaf_class = None, None
    if classification:
        classes = _classes_from_json(payload["classes"])
        leaf_class = _ints(payload["leaf_class"], "leaf_class")
    count = payload["private_count"]
    try:
        partition = Partition.from_json(json.dumps(payload["partition"]))
    except ValueError as err:
        raise ValueError(f"model JSON field 'partition': {err}") from None
    return TreeModel(
        estimator=_string(payload["estimator"], "estimator"),
        task=task,
        feature_names=tuple(names),
        scaler=RangeScaler(lo=lo, hi=hi),
        partition=partition,
        outside=_string(payload["outside"], "outside"),
        values=_floats(payload["values"], "values", 2 if classification else 1),
        public=_floats(payload["public"], "public", 1),
        private_count=None if count is None else _floats(count, "private_count", 1),
        fallback=_bools(payload["fallback"], "fallback"),
        cell_node=_ints(payload["cell_node"], "cell_node"),
        privacy=PrivacyRecord.from_dict(payload["privacy"]),
        classes=classes,
        leaf_class=leaf_class,
    )


def save_model(model: Any, path: str | os.PathLike[str]) -> Path:
    """Write ``model`` (a fitted LPDT / LPCT / LPCT-prune estimator or a
    :class:`~ldptree.inspection.TreeModel`) to ``path`` as JSON (module docstring)."""
    target = Path(path)
    target.write_text(model_to_json(model) + "\n", encoding="utf-8")
    return target


def load_model(path: str | os.PathLike[str]) -> TreeModel:
    """The :class:`~ldptree.inspection.TreeModel` saved at ``path``; its ``predict`` equals the
    saved estimator's bit for bit. Reading executes no code from the file."""
    return model_from_json(Path(path).read_text(encoding="utf-8"))
