"""scikit-learn conventions for every ldptree estimator.

The estimators subclass scikit-learn's :class:`sklearn.base.BaseEstimator` and its regressor /
classifier mixins, so ``clone``, ``cross_val_score``, ``GridSearchCV``, ``Pipeline`` and
metadata routing work on them: parameters are the constructor's arguments, fitted state ends in
``_``, and ``fit(X, y, *, X_public=None, y_public=None)`` takes the public sample as fit
parameters (with routing enabled, request them with ``set_fit_request(X_public=True,
y_public=True)``).

Components that are immutable ``attrs`` objects (a ``mechanism`` or a ``rule`` partitioner) take
part in nested parameters: ``get_params(deep=True)`` lists ``mechanism__epsilon`` and
``set_params(mechanism__epsilon=2.0)`` replaces the mechanism by an evolved copy (the original,
possibly shared, object is never mutated).

Estimators are the one mutable layer of the package (their users expect ``set_params``); every
component they build during ``fit`` is immutable.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

import attrs
import numpy as np
from sklearn.base import BaseEstimator as _SkBaseEstimator
from sklearn.base import ClassifierMixin as _SkClassifierMixin
from sklearn.base import RegressorMixin as _SkRegressorMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.utils import Tags
from sklearn.utils.validation import validate_data

from ldptree._validation import NotFittedError, check_not_masked, check_real_dtype, check_vector
from ldptree.estimators._classes import check_class_labels, encode_labels
from ldptree.preprocessing._warn import warn_if_private_preprocessing
from ldptree.rounds._rows import is_chunk_stream, is_memory_mapped

_Fit = TypeVar("_Fit", bound=Callable[..., Any])


def keeps_state_on_error(fit: _Fit) -> _Fit:
    """``fit`` that leaves the estimator exactly as it was when it raises: a refused refit (bad
    input, a refused mechanism, a bad value met in a streamed chunk, an interrupt) keeps the
    previous fit whole, never half of a new one (attributes are restored, not patched)."""

    @functools.wraps(fit)
    def guarded(self: Any, *args: Any, **kwargs: Any) -> Any:
        before = dict(self.__dict__)
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            raise

    return cast(_Fit, guarded)


def _init_fields(component: Any) -> dict[str, Any]:
    """``{init argument: current value}`` of an attrs instance (its nested parameters)."""
    return {
        field.alias: getattr(component, field.name)
        for field in attrs.fields(type(component))
        if field.init
    }


class BaseEstimator(_SkBaseEstimator):
    """Parameter plumbing shared by all estimators (scikit-learn's, plus attrs components)."""

    def _keep(self, params: dict[str, Any]) -> None:
        """Keep the constructor's arguments (``__init__``'s ``locals()``) as attributes of the
        same names, unchecked: scikit-learn's convention (they are validated by ``fit``)."""
        for name, value in params.items():  # only the parameters: _keep is called first
            if name != "self":
                setattr(self, name, value)

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters; with ``deep``, also ``<component>__<field>`` for
        estimator and attrs components (e.g. ``mechanism__epsilon``)."""
        params: dict[str, Any] = super().get_params(deep=deep)
        if deep:
            for name in self._get_param_names():
                value = getattr(self, name)
                if attrs.has(type(value)):
                    params.update({f"{name}__{key}": v for key, v in _init_fields(value).items()})
        return params

    def set_params(self, **params: Any) -> BaseEstimator:
        """Set parameters; ``<component>__<field>`` on an attrs component evolves a copy of it.
        Unknown names raise ``ValueError``."""
        nested: dict[str, dict[str, Any]] = {}
        plain: dict[str, Any] = {}
        for key, value in params.items():
            name, delim, sub = key.partition("__")
            if delim and attrs.has(type(getattr(self, name, None))):
                nested.setdefault(name, {})[sub] = value
            else:
                plain[key] = value
        super().set_params(**plain)
        for name, changes in nested.items():
            component = getattr(self, name)
            unknown = sorted(set(changes) - set(_init_fields(component)))
            if unknown:
                raise ValueError(
                    f"invalid parameter(s) {unknown} for {name} ({type(component).__name__}); "
                    f"valid are {sorted(_init_fields(component))}"
                )
            setattr(self, name, attrs.evolve(component, **changes))
        return self

    def __sklearn_tags__(self) -> Tags:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = False
        # With random_state=None every fit draws fresh privacy noise (that is the point of LDP).
        tags.non_deterministic = getattr(self, "random_state", 0) is None
        return tags

    def _check_fit_input(self, X: Any, y: Any) -> Any:
        """scikit-learn's checks of the private ``X`` (2-d, real, finite, dense, at least one
        feature) and that ``y`` is given; records ``n_features_in_`` (and feature names).
        Returns ``y``, a column vector ``(n, 1)`` flattened with a ``DataConversionWarning``.

        Private data read chunk by chunk are not read here: for a memory-mapped ``X`` only its
        shape is checked here (the round checks its values chunk by chunk as it reads them),
        and an iterable of ``(X_chunk, y_chunk)`` pairs (``y=None``) is left to the round
        entirely (:mod:`ldptree.rounds._rows`); ``fit`` records ``n_features_in_`` then."""
        if is_chunk_stream(X, y):
            warn_if_private_preprocessing(self)
            if hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return None
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y is None"
            )
        check_real_dtype(X, "X")
        check_not_masked(y, "y")
        validate_data(self, X, reset=True, skip_check_array=is_memory_mapped(X))
        warn_if_private_preprocessing(self)
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected; flattening it",
                DataConversionWarning,
                stacklevel=3,
            )
            return y_arr.ravel()
        return y_arr

    def _check_fitted(self, attribute: str, X: Any = None) -> None:
        """Raise :class:`~ldptree.NotFittedError` before ``fit``; if ``X`` is given, check it
        as scikit-learn does (same number of features as in ``fit``)."""
        if not hasattr(self, attribute):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, y) before using it"
            )
        if X is not None:
            validate_data(self, X, reset=False)


class RegressorMixin(_SkRegressorMixin):
    """``score`` for regressors: ``R^2 = 1 - SS_res / SS_tot`` (as scikit-learn)."""

    def predict(self, X: Any) -> Any:  # every regressor defines it
        raise NotImplementedError

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Coefficient of determination ``R^2 = 1 - SS_res / SS_tot`` (1 or 0 if ``y`` is
        constant, by whether the prediction is exact), optionally ``sample_weight``-weighted."""
        pred = np.asarray(self.predict(X), dtype=np.float64)
        y_arr = check_vector(y, "y", n=pred.shape[0])
        w = _weights(sample_weight, pred.shape[0])
        mean = float(np.sum(w * y_arr) / np.sum(w))
        ss_res = float(np.sum(w * (y_arr - pred) ** 2))
        ss_tot = float(np.sum(w * (y_arr - mean) ** 2))
        if ss_tot == 0.0:
            return 1.0 if ss_res == 0.0 else 0.0
        return 1.0 - ss_res / ss_tot


class ClassifierMixin(_SkClassifierMixin):
    """``score`` for classifiers: accuracy against ``classes_``."""

    classes_: np.ndarray[Any, Any]

    def predict(self, X: Any) -> Any:  # every classifier defines it
        raise NotImplementedError

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Accuracy: the (optionally ``sample_weight``-weighted) fraction of rows whose
        predicted class equals ``y``."""
        pred = np.asarray(self.predict(X))
        truth = check_class_labels(y, "y", n=pred.shape[0])
        hits = encode_labels(truth, self.classes_, "y") == encode_labels(pred, self.classes_, "y")
        w = _weights(sample_weight, pred.shape[0])
        return float(np.sum(w * hits) / np.sum(w))


def _weights(sample_weight: Any, n: int) -> np.ndarray[Any, Any]:
    """Row weights: ones, or ``sample_weight`` checked non-negative with a positive sum."""
    if sample_weight is None:
        return np.ones(n)
    w = check_vector(sample_weight, "sample_weight", n=n)
    if np.any(w < 0) or not np.sum(w) > 0:
        raise ValueError("sample_weight must be non-negative with a positive sum")
    return w
