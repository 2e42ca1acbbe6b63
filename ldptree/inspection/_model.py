"""A fitted tree as data: what prediction needs, plus what a person wants to read.

:func:`tree_model` copies a fitted :class:`~ldptree.LPDTRegressor`, :class:`~ldptree.LPCTClassifier`
or :class:`~ldptree.LPCTPrunedClassifier` into a :class:`TreeModel`: the public scaling box, the
published partition, every leaf's prediction, the debiased private counts, the public
counterparts, which leaves fell back to public values, and the :class:`PrivacyRecord`. Its
:meth:`TreeModel.predict` (and ``predict_proba``) route rows exactly as the estimator does, so
the predictions are the same bit for bit; it is what :func:`~ldptree.inspection.save_model`
writes and :func:`~ldptree.inspection.load_model` reads back.

Per leaf ``j`` (``L`` leaves, ``K`` classes):

* regression: ``values[j]`` the leaf value ``f^(A_j)``; ``public[j]`` the public leaf mean;
* classification: ``values[j, k]`` the class probabilities (``eta`` projected onto the simplex),
  ``leaf_class[j]`` the predicted class code; ``public[j]`` the number of public rows in the leaf;
* ``private_count[j]`` the debiased count ``c^_j`` of private holders (``None`` when no private
  report was collected, e.g. LPCT with ``lam=inf``);
* ``fallback[j]``: the leaf predicts from public data only (LPDT: the debiased count was too
  small for the private ratio; LPCT: ``fallback="prior"`` replaced a non-positive denominator;
  LPCT-prune: the pruning walk chose the public-only estimate, ``lambda = inf``);
* ``cell_node[j]``: the node whose box is the reported cell of leaf ``j``: the leaf itself, or for
  LPCT-prune the ancestor it was pruned to (leaves pruned to one node share its prediction).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ldptree._typing import BoolArray, FloatArray, IntArray
from ldptree.estimators import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree.estimators._composition import route
from ldptree.inspection._privacy import PrivacyRecord
from ldptree.partitions import Partition
from ldptree.partitions._scaling import RangeScaler

#: The estimators a :class:`TreeModel` can be made from.
TREE_ESTIMATORS = (LPDTRegressor, LPCTClassifier, LPCTPrunedClassifier)
TASKS = ("regression", "classification")
OUTSIDE = ("clamp", "zero")


@attrs.frozen(eq=False)
class TreeModel:
    """A fitted ldptree tree as data (module docstring)."""

    estimator: str
    task: str
    feature_names: tuple[str, ...]
    scaler: RangeScaler
    partition: Partition
    outside: str
    values: FloatArray
    public: FloatArray
    private_count: FloatArray | None
    fallback: BoolArray
    cell_node: IntArray
    privacy: PrivacyRecord
    classes: np.ndarray[Any, Any] | None = None
    leaf_class: IntArray | None = None

    def __attrs_post_init__(self) -> None:
        check_consistent(self)

    @property
    def n_features(self) -> int:
        return self.partition.n_features

    @property
    def n_leaves(self) -> int:
        return self.partition.n_leaves

    def _route(self, X: Any) -> tuple[IntArray, BoolArray]:
        names = getattr(X, "columns", None)
        if names is not None and [str(c) for c in names] != list(self.feature_names):
            raise ValueError(
                f"X has columns {[str(c) for c in names]}, but the model was fitted with "
                f"{list(self.feature_names)}"
            )
        return route(X, self.n_features, self.scaler, self.partition)

    def predict(self, X: Any) -> np.ndarray[Any, Any]:
        """Predictions for the rows of ``X`` ``float[n, d]``, equal bit for bit to the fitted
        estimator's: leaf values (regression) or class labels (classification)."""
        cells, inside = self._route(X)
        if self.task == "regression":
            pred = self.values[cells]
            if self.outside == "zero":
                pred = np.where(inside, pred, 0.0)
            return np.asarray(pred, dtype=np.float64)
        assert self.classes is not None and self.leaf_class is not None  # checked at creation
        codes = np.where(inside | (self.outside == "clamp"), self.leaf_class[cells], 0)
        out: np.ndarray[Any, Any] = self.classes[codes]
        return out

    def predict_proba(self, X: Any) -> FloatArray:
        """Class probabilities ``float[n, K]`` (classification only), as the estimator's."""
        if self.task != "classification":
            raise TypeError("predict_proba is for classification trees; this one is a regressor")
        cells, inside = self._route(X)
        inside = inside | (self.outside == "clamp")
        first = np.eye(self.values.shape[1])[0]
        rows: FloatArray = np.where(inside[:, None], self.values[cells], first[None, :])
        return rows


def axis_names(tree: TreeModel, feature_names: Any) -> tuple[str, ...]:
    """The given ``feature_names`` (one per feature) or else the names ``tree`` was fitted with."""
    names = tree.feature_names if feature_names is None else tuple(map(str, feature_names))
    if len(names) != tree.n_features:
        raise ValueError(
            f"feature_names must have one name per feature ({tree.n_features}), got {len(names)}"
        )
    return names


def check_consistent(model: TreeModel) -> None:
    """Every per-leaf array has one entry per leaf and the names, task and classes agree;
    ``ValueError`` naming the field otherwise (a loaded file is checked the same way)."""
    L, d = model.partition.n_leaves, model.partition.n_features
    if model.task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {model.task!r}")
    if model.outside not in OUTSIDE:
        raise ValueError(f"outside must be one of {OUTSIDE}, got {model.outside!r}")
    if len(model.feature_names) != d or model.scaler.n_features != d:
        raise ValueError(
            f"feature_names and the scaler must have the partition's {d} features, got "
            f"{len(model.feature_names)} and {model.scaler.n_features}"
        )
    shapes: dict[str, tuple[Any, tuple[int, ...]]] = {
        "public": (model.public, (L,)),
        "fallback": (model.fallback, (L,)),
        "cell_node": (model.cell_node, (L,)),
    }
    if model.private_count is not None:
        shapes["private_count"] = (model.private_count, (L,))
    if model.task == "regression":
        shapes["values"] = (model.values, (L,))
    else:
        if model.classes is None or model.leaf_class is None:
            raise ValueError("a classification tree needs classes and leaf_class")
        K = model.classes.shape[0]
        shapes["values"] = (model.values, (L, K))
        shapes["leaf_class"] = (model.leaf_class, (L,))
        if np.any((model.leaf_class < 0) | (model.leaf_class >= K)):
            raise ValueError(f"leaf_class must hold class codes in [0, {K})")
    for name, (array, shape) in shapes.items():
        if np.shape(array) != shape:
            raise ValueError(f"{name} must have shape {shape}, got {np.shape(array)}")
    if np.any((model.cell_node < 0) | (model.cell_node >= model.partition.n_nodes)):
        raise ValueError(f"cell_node must hold node indices in [0, {model.partition.n_nodes})")


def tree_model(model: Any) -> TreeModel:
    """The :class:`TreeModel` of a fitted LPDT, LPCT or LPCT-prune estimator (a
    :class:`TreeModel` is returned as is). Reads only the estimator's public fitted attributes."""
    if isinstance(model, TreeModel):
        return model
    if not isinstance(model, TREE_ESTIMATORS):
        raise TypeError(
            "model must be a fitted LPDTRegressor, LPCTClassifier or LPCTPrunedClassifier (or a "
            f"TreeModel), got {type(model).__name__}"
        )
    if not hasattr(model, "partition_") or not hasattr(model, "privacy_"):
        from ldptree import NotFittedError

        raise NotFittedError(f"this {type(model).__name__} is not fitted yet; call fit first")
    partition: Partition = model.partition_
    names = getattr(model, "feature_names_in_", None)
    feature_names = (
        tuple(str(n) for n in names)
        if names is not None
        else tuple(f"x{k}" for k in range(partition.n_features))
    )
    estimates = model.estimates_
    private_count = None if estimates is None else np.asarray(estimates.count, dtype=np.float64)
    common: dict[str, Any] = {
        "estimator": type(model).__name__,
        "feature_names": feature_names,
        "scaler": model.scaler_,
        "partition": partition,
        "outside": model.outside,
        "private_count": private_count,
        "privacy": PrivacyRecord.of(model),
    }
    leaves = partition.leaf_nodes.astype(np.int64)
    if isinstance(model, LPDTRegressor):
        return TreeModel(
            task="regression",
            values=np.asarray(model.leaf_values_, dtype=np.float64),
            public=np.asarray(model.public_leaf_mean_, dtype=np.float64),
            fallback=np.asarray(model.used_fallback_, dtype=bool),
            cell_node=leaves,
            **common,
        )
    public = np.asarray(model.public_class_counts_, dtype=np.float64).sum(axis=1)
    if isinstance(model, LPCTPrunedClassifier):
        cell_node = np.asarray(model.leaf_node_, dtype=np.int64)
        fallback = np.isinf(np.asarray(model.prune_.lam)[cell_node])
    else:
        cell_node = leaves
        fallback = np.asarray(model.used_fallback_, dtype=bool)
        if np.isinf(model.lam_):
            fallback = np.ones(partition.n_leaves, dtype=bool)
    return TreeModel(
        task="classification",
        values=np.asarray(model.leaf_proba_, dtype=np.float64),
        public=public,
        fallback=fallback,
        cell_node=cell_node,
        classes=np.asarray(model.classes_),
        leaf_class=np.asarray(model.leaf_class_, dtype=np.int64),
        **common,
    )
