"""scikit-learn conventions without the dependency: parameters are the constructor's arguments,
fitted state ends in ``_``, and ``get_params``/``set_params`` read and write the former.

Estimators are the one mutable layer of the package (their users expect ``set_params``); every
component they build during ``fit`` is immutable.
"""

from __future__ import annotations

import inspect
from typing import Any

from ldptree._validation import NotFittedError


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
