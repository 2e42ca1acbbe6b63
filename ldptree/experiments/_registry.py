"""Methods by name: how the runner builds an estimator from a name, a budget and parameters.

A :class:`MethodSpec` says which estimator class a name stands for, which constructor keywords
are fixed for it (``rule="cart"`` makes LPDT-V), its task, its default grid preset and how tables
label it. The runner calls ``spec.build(epsilon, params, seed)``, i.e.
``factory(epsilon=epsilon, random_state=seed, **fixed, **params)``, then
``fit(X, y, X_public=..., y_public=...)`` and ``predict(X)``: the scikit-learn-style contract of
every ldptree estimator, so any estimator following it can be registered.

A :class:`MethodRegistry` is immutable; ``registry.with_method(spec)`` returns an extended copy,
and the default registry lists the built-in methods (:mod:`._methods`). A method whose code has
not landed yet carries a ``requires`` check that returns the reason, and the runner refuses it
before any work with ``NotImplementedError`` stating that reason.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

import attrs

from ldptree.datasets._manifest import TASKS
from ldptree.experiments._describe import callable_label


@runtime_checkable
class Estimator(Protocol):
    """What the runner needs of an estimator (ldptree's scikit-learn-style API)."""

    def fit(self, X: Any, y: Any, *, X_public: Any = None, y_public: Any = None) -> Any: ...

    def predict(self, X: Any) -> Any: ...


def _freeze(value: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(dict(value).items()))


def _check_task(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in TASKS:
        raise ValueError(f"{attribute.name} must be one of {TASKS}, got {value!r}")


def _check_name(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if isinstance(value, str) and ":" in value and value == value.strip():
        return  # a user's method named by its import path, "package.module:Name", as written
    if not isinstance(value, str) or not value or value != value.strip().lower():
        raise ValueError(f"{attribute.name} must be a non-empty lower-case name, got {value!r}")


@attrs.frozen
class MethodSpec:
    """A method the runner can build by name (see the module docstring).

    ``paper_key`` names the method's column in the published tables (:mod:`._published`);
    ``private`` is ``False`` for non-private reference methods (they must still accept
    ``epsilon`` and ignore it); ``public_only`` marks a reference that trains on the public
    sample alone, so that private holders release nothing to it (its rows then record no
    training spend, not an infinite one).
    """

    name: str = attrs.field(validator=_check_name)
    task: str = attrs.field(validator=_check_task)
    factory: Callable[..., Estimator]
    default_grid: str
    label: str
    fixed: tuple[tuple[str, Any], ...] = attrs.field(default=(), converter=_freeze)
    requires: Callable[[], str | None] | None = None
    paper_key: str | None = None
    private: bool = True
    public_only: bool = False

    def check_available(self) -> None:
        """Raise ``NotImplementedError`` with the reason when the method cannot run yet."""
        reason = None if self.requires is None else self.requires()
        if reason is not None:
            raise NotImplementedError(f"method {self.name!r} is not available: {reason}")

    def build(self, epsilon: float, params: Mapping[str, Any], seed: int) -> Estimator:
        """A fresh estimator with the fixed keywords, ``params``, ``epsilon`` and a seed."""
        clash = set(params) & {name for name, _ in self.fixed}
        if clash:
            raise ValueError(
                f"params {sorted(clash)} are fixed by method {self.name!r}; "
                "remove them from the grid"
            )
        return self.factory(epsilon=epsilon, random_state=seed, **dict(self.fixed), **params)

    def describe(self) -> dict[str, Any]:
        factory = (
            callable_label(self.factory)
            if isinstance(self.factory, functools.partial)
            else getattr(self.factory, "__qualname__", type(self.factory).__qualname__)
        )
        return {"name": self.name, "factory": factory, "fixed": repr(self.fixed)}


def _check_specs(_: object, attribute: attrs.Attribute[Any], value: tuple[MethodSpec, ...]) -> None:
    names = [spec.name for spec in value]
    if len(set(names)) != len(names):
        raise ValueError(f"{attribute.name} repeats a method name: {names}")


def _spec_tuple(value: Iterable[MethodSpec]) -> tuple[MethodSpec, ...]:
    return tuple(value)


@attrs.frozen
class MethodRegistry:
    """An immutable name -> :class:`MethodSpec` table."""

    specs: tuple[MethodSpec, ...] = attrs.field(converter=_spec_tuple, validator=_check_specs)

    def names(self) -> tuple[str, ...]:
        return tuple(spec.name for spec in self.specs)

    def get(self, name: str) -> MethodSpec:
        for spec in self.specs:
            if spec.name == name:
                return spec
        raise ValueError(f"method {name!r} is not registered; known methods: {list(self.names())}")

    def with_method(self, spec: MethodSpec, *, replace: bool = False) -> MethodRegistry:
        """A registry with ``spec`` added (or replacing the method of that name if ``replace``)."""
        if not isinstance(spec, MethodSpec):
            raise TypeError(f"spec must be a MethodSpec, got {type(spec).__name__}")
        if spec.name in self.names() and not replace:
            raise ValueError(f"method {spec.name!r} is already registered; pass replace=True")
        kept = tuple(s for s in self.specs if s.name != spec.name)
        return MethodRegistry((*kept, spec))
