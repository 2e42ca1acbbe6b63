"""scikit-learn conventions without the dependency: parameters are the constructor's arguments,
fitted state ends in ``_``, and ``get_params``/``set_params`` read and write the former.

Estimators are the one mutable layer of the package (their users expect ``set_params``); every
component they build during ``fit`` is immutable.
"""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np

from ldptree._validation import NotFittedError, check_vector
from ldptree.estimators._classes import check_class_labels, encode_labels


class BaseEstimator:
    """Parameter plumbing shared by all estimators."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [
            name
            for name, p in sig.parameters.items()
            if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
        ]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor's parameters and their current values."""
        del deep
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> BaseEstimator:
        """Set constructor parameters; unknown names raise ``ValueError``."""
        valid = set(self._param_names())
        for name, value in params.items():
            if name not in valid:
                raise ValueError(
                    f"invalid parameter {name!r} for {type(self).__name__}; "
                    f"valid parameters are {sorted(valid)}"
                )
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        sig = inspect.signature(type(self).__init__)
        changed = [
            f"{name}={value!r}"
            for name, value in self.get_params().items()
            if sig.parameters[name].default is inspect.Parameter.empty
            or (value is not sig.parameters[name].default and value != sig.parameters[name].default)
        ]
        return f"{type(self).__name__}({', '.join(changed)})"

    def _check_fitted(self, attribute: str) -> None:
        if not hasattr(self, attribute):
            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet; call fit(X, y) before using it"
            )


class RegressorMixin:
    """``score`` for regressors: ``R^2 = 1 - SS_res / SS_tot`` (as scikit-learn)."""

    def predict(self, X: Any) -> Any:  # every regressor defines it
        raise NotImplementedError

    def score(self, X: Any, y: Any) -> float:
        """Coefficient of determination ``R^2 = 1 - SS_res / SS_tot`` (1 or 0 if ``y`` is
        constant, by whether the prediction is exact)."""
        pred = np.asarray(self.predict(X), dtype=np.float64)
        y_arr = check_vector(y, "y", n=pred.shape[0])
        ss_res = float(np.sum((y_arr - pred) ** 2))
        ss_tot = float(np.sum((y_arr - y_arr.mean()) ** 2))
        if ss_tot == 0.0:
            return 1.0 if ss_res == 0.0 else 0.0
        return 1.0 - ss_res / ss_tot


class ClassifierMixin:
    """``score`` for classifiers: accuracy against ``classes_``."""

    classes_: np.ndarray[Any, Any]

    def predict(self, X: Any) -> Any:  # every classifier defines it
        raise NotImplementedError

    def score(self, X: Any, y: Any) -> float:
        """Accuracy: the fraction of rows whose predicted class equals ``y``."""
        pred = np.asarray(self.predict(X))
        truth = check_class_labels(y, "y", n=pred.shape[0])
        hits = encode_labels(truth, self.classes_, "y") == encode_labels(pred, self.classes_, "y")
        return float(np.mean(hits))
