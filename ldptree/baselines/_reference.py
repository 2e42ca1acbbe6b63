"""Non-private reference trees: DT / DT-pub (regression), CT-W / CT-Q (classification).

The papers' references are scikit-learn trees; ours are ldptree's own parts, with no scikit-learn
dependency: :class:`~ldptree.partitions.CartPartitioner` in ``thresholds="exact"`` mode (every
midpoint between consecutive distinct values, the classical CART search; ``"mse"`` for
regression, ``"gini"`` for classification as scikit-learn's default) grown on the *training*
rows, then an exact read-out on the same rows: the leaf mean (regression) or the leaf's majority
class, ties to the smallest class (classification). Features are min-max scaled on the training
rows first (CART is invariant to that monotone map; it only places the tree in ``[0, 1]^d``).

``training`` picks the rows: ``"private"`` (DT: the private training sample in the clear),
``"public"`` (DT-pub, CT-Q: the public sample only), ``"union"`` (CT-W: public and private).
The defaults ``min_samples_split=1`` and ``min_samples_leaf=1`` are scikit-learn's defaults in
the builder's conventions (a node with at most one row, or one distinct row, is a leaf).

These estimators are **not private**: they accept ``epsilon`` (so the runner can call them like
every method) and ignore it, and their ``privacy_`` is :data:`NON_PRIVATE`, a
:class:`NonPrivate` record with ``epsilon = inf`` (``epsilon_`` is ``inf`` too), so no table can
mistake them for private methods.
"""

from __future__ import annotations

import math
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import check_choice, check_int
from ldptree.estimators import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    cell_means,
    check_class_labels,
    check_fit_data,
    encode_labels,
    keeps_state_on_error,
    resolve_classes,
    route,
)
from ldptree.partitions import CartPartitioner, RangeScaler

TRAINING = ("private", "public", "union")


@attrs.frozen
class NonPrivate:
    """The privacy record of a non-private method: ``epsilon = inf`` and why."""

    epsilon: float = math.inf
    note: str = "non-private: trained on raw records"

    def __str__(self) -> str:
        return f"epsilon=inf ({self.note})"


#: ``privacy_`` of every reference tree.
NON_PRIVATE = NonPrivate()


def _training_rows(
    training: str, X: FloatArray, y: Any, Xq: FloatArray | None, yq: Any
) -> tuple[FloatArray, Any]:
    check_choice(training, "training", TRAINING)
    if training == "private":
        return X, y
    if Xq is None or yq is None:
        raise ValueError(f"training={training!r} needs public data: pass X_public and y_public")
    if training == "public":
        return Xq, yq
    return np.concatenate([Xq, X]), np.concatenate([yq, y])


class _ReferenceTree(BaseEstimator):
    epsilon: Any
    max_depth: int
    min_samples_split: int
    min_samples_leaf: int
    training: str
    random_state: Any

    def _grow(self, X: FloatArray, codes: FloatArray, criterion: str) -> np.ndarray[Any, Any]:
        """Fit the scaler and the partition on ``(X, codes)``; return the rows' cells."""
        partitioner = CartPartitioner(
            max_depth=check_int(self.max_depth, "max_depth", minimum=0),
            min_samples_split=check_int(self.min_samples_split, "min_samples_split", minimum=0),
            min_samples_leaf=check_int(self.min_samples_leaf, "min_samples_leaf", minimum=1),
            criterion=criterion,
            thresholds="exact",
        )
        scaler = RangeScaler.fit(X)
        X_scaled = scaler.transform(X)
        partition = partitioner.fit(X_scaled, codes)
        self.n_features_in_ = X.shape[1]
        self.scaler_ = scaler
        self.partition_ = partition
        self.n_training_ = X.shape[0]
        self.epsilon_ = math.inf
        self.privacy_ = NON_PRIVATE
        return np.asarray(partition.cells(X_scaled)).astype(np.int64)

    def _cells(self, X: Any) -> np.ndarray[Any, Any]:
        self._check_fitted("leaf_values_", X)
        cells, _ = route(X, self.n_features_in_, self.scaler_, self.partition_)
        return cells


class DTRegressor(RegressorMixin, _ReferenceTree):
    """Non-private CART regression tree (LPDT paper's ``DT``; ``training="public"``: ``DT-pub``).

    Parameters
    ----------
    epsilon:
        Accepted and ignored (non-private; module docstring).
    max_depth:
        Tree depth (the paper's grid ``{1, 2, 3, 4}``).
    min_samples_split, min_samples_leaf:
        The builder's stopping rules (defaults as scikit-learn's).
    training:
        ``"private"`` (default, DT), ``"public"`` (DT-pub) or ``"union"``.
    random_state:
        Accepted and ignored (the tree is deterministic).

    Attributes
    ----------
    partition_, scaler_, leaf_values_ (training leaf means), n_training_, epsilon_ (``inf``),
    privacy_ (:data:`NON_PRIVATE`), n_features_in_
    """

    def __init__(
        self,
        epsilon: Any = None,
        max_depth: int = 4,
        *,
        min_samples_split: int = 1,
        min_samples_leaf: int = 1,
        training: str = "private",
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    @keeps_state_on_error
    def fit(self, X: Any, y: Any, *, X_public: Any = None, y_public: Any = None) -> DTRegressor:
        """Grow CART on the chosen rows and store exact leaf means."""
        y = self._check_fit_input(X, y)
        X_arr, y_arr, Xq, yq = check_fit_data(X, y, X_public, y_public)
        X_fit, y_fit = _training_rows(self.training, X_arr, y_arr, Xq, yq)
        cells = self._grow(X_fit, y_fit, "mse")
        n_leaves = self.partition_.n_leaves
        self.leaf_values_ = cell_means(cells, y_fit, n_leaves, float(np.mean(y_fit)))
        return self

    def predict(self, X: Any) -> FloatArray:
        """Leaf means ``float[n]``; rows outside the training box go to the boundary leaf."""
        cells = self._cells(X)
        return np.asarray(self.leaf_values_[cells], dtype=np.float64)


class CTClassifier(ClassifierMixin, _ReferenceTree):
    """Non-private CART classification tree (LPCT paper's ``CT-W`` on public and private rows,
    ``training="union"``, default; ``CT-Q`` on public rows, ``training="public"``).

    Parameters
    ----------
    epsilon, random_state:
        Accepted and ignored (non-private, deterministic).
    max_depth:
        Tree depth (the paper's grid ``{1..8, 10, 12, 14, 16}``).
    min_samples_split, min_samples_leaf:
        The builder's stopping rules (defaults as scikit-learn's).
    criterion:
        ``"gini"`` (scikit-learn's default) or ``"entropy"``.
    training:
        ``"union"`` (CT-W), ``"public"`` (CT-Q) or ``"private"``.
    classes:
        All class labels, if the training rows do not show every class.

    Attributes
    ----------
    classes_, partition_, scaler_, leaf_counts_ (``float[L, K]``), leaf_values_ (majority class
    codes), n_training_, epsilon_ (``inf``), privacy_ (:data:`NON_PRIVATE`), n_features_in_
    """

    def __init__(
        self,
        epsilon: Any = None,
        max_depth: int = 4,
        *,
        min_samples_split: int = 1,
        min_samples_leaf: int = 1,
        criterion: str = "gini",
        training: str = "union",
        classes: Any = None,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    @keeps_state_on_error
    def fit(self, X: Any, y: Any, *, X_public: Any = None, y_public: Any = None) -> CTClassifier:
        """Grow CART on the chosen rows and store exact leaf class counts."""
        if self.criterion not in ("gini", "entropy"):
            raise ValueError(f"criterion must be 'gini' or 'entropy', got {self.criterion!r}")
        y = self._check_fit_input(X, y)
        X_arr, y_arr, Xq, yq = check_fit_data(
            X, y, X_public, y_public, check_labels=check_class_labels
        )
        X_fit, y_fit = _training_rows(self.training, X_arr, y_arr, Xq, yq)
        # non-private: the classes may come from the training rows themselves
        classes = resolve_classes(self.classes, y_fit)
        codes = encode_labels(y_fit, classes, "y")
        if np.any(codes < 0):
            raise ValueError("y contains labels outside classes; list every class in classes=")
        cells = self._grow(X_fit, codes.astype(np.float64), self.criterion)
        n_leaves, n_classes = self.partition_.n_leaves, classes.shape[0]
        counts = np.zeros((n_leaves, n_classes))
        np.add.at(counts, (cells, codes), 1.0)
        self.classes_ = classes
        self.leaf_counts_ = counts
        # argmax takes the first maximum: ties go to the smallest class, as scikit-learn
        self.leaf_values_ = np.argmax(counts, axis=1)
        return self

    def predict_proba(self, X: Any) -> FloatArray:
        """Training class frequencies of each row's leaf, ``float[n, K]``."""
        cells = self._cells(X)
        counts = self.leaf_counts_[cells]
        totals = counts.sum(axis=1, keepdims=True)
        out: FloatArray = counts / np.maximum(totals, 1.0)
        return out

    def predict(self, X: Any) -> np.ndarray[Any, Any]:
        """The leaf's majority class."""
        cells = self._cells(X)
        labels: np.ndarray[Any, Any] = self.classes_[self.leaf_values_[cells]]
        return labels


__all__ = ["NON_PRIVATE", "TRAINING", "CTClassifier", "DTRegressor", "NonPrivate"]
