"""A user's method and data generator named in a TOML file by import path
(``"package.module:Name"``).

* A **method**: ``Name`` is a :class:`~ldptree.experiments.MethodSpec` (used as it is: its name,
  task, default grid and flags), or an estimator class deriving from scikit-learn's (or
  ldptree's) ``RegressorMixin`` or ``ClassifierMixin``, which gives its task; the method is then
  named by its import path, built as ``Name(epsilon=..., random_state=..., **params)``, private,
  and has no default grid (the oracle and private modes need ``tuning.grids`` for it).
* A **data generator**: ``Name(n, rng) -> (X, y)``, ``n`` rows drawn with the
  ``numpy.random.Generator`` ``rng``; it is called once on two rows when the file is read, so a
  wrong signature or return value fails before any experiment runs.

Every error names the path and what was expected.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import numpy as np
from sklearn.base import ClassifierMixin, RegressorMixin

from ldptree.experiments._registry import MethodSpec

_PATH = re.compile(r"^[A-Za-z_][\w]*(\.[A-Za-z_]\w*)*:[A-Za-z_]\w*$")


def is_import_path(text: Any) -> bool:
    """Whether ``text`` has the form ``"package.module:Name"``."""
    return isinstance(text, str) and ":" in text


def import_object(text: str, where: str) -> Any:
    """The object ``Name`` of the module ``package.module`` named by ``text``."""
    if not _PATH.match(text):
        raise ValueError(f"{where} must be an import path 'package.module:Name', got {text!r}")
    module_name, name = text.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise ValueError(f"{where}: cannot import module {module_name!r} ({err})") from None
    if not hasattr(module, name):
        raise ValueError(f"{where}: module {module_name!r} has no attribute {name!r}")
    return getattr(module, name)


def user_method(text: str, where: str) -> MethodSpec:
    """The :class:`MethodSpec` of the import path ``text`` (module docstring)."""
    obj = import_object(text, where)
    if isinstance(obj, MethodSpec):
        return obj
    if isinstance(obj, type) and issubclass(obj, RegressorMixin | ClassifierMixin):
        task = "regression" if issubclass(obj, RegressorMixin) else "classification"
        return MethodSpec(text, task, obj, default_grid="", label=obj.__name__)
    raise TypeError(
        f"{where}: {text!r} must name a MethodSpec or an estimator class deriving from "
        f"RegressorMixin or ClassifierMixin (its task), got {type(obj).__name__}"
    )


def user_generator(text: str, where: str) -> Any:
    """The data generator of the import path ``text``, checked on two rows (module docstring)."""
    generator = import_object(text, where)
    if not callable(generator):
        raise TypeError(f"{where}: {text!r} must name a function (n, rng) -> (X, y)")
    try:
        out = generator(2, np.random.default_rng(0))
    except TypeError as err:
        raise TypeError(
            f"{where}: {text!r} must be callable as generator(n, rng) -> (X, y): {err}"
        ) from None
    if not isinstance(out, tuple) or len(out) != 2:
        raise TypeError(f"{where}: {text!r}(n, rng) must return a pair (X, y), got {out!r:.80}")
    X, y = (np.asarray(part) for part in out)
    if X.ndim != 2 or X.shape[0] != 2 or y.shape != (2,):
        raise ValueError(
            f"{where}: {text!r}(2, rng) must return X of shape (2, d) and y of shape (2,), got "
            f"{X.shape} and {y.shape}"
        )
    return generator
