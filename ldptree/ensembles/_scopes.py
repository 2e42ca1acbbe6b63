"""What the built-in composed estimators (forests, two rounds) share: their ``fit`` and the
checks of their member and rows, a public seed for their holder split, and the caller's ledger
scope, charged with the estimator's own entries."""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Self, TypeVar

import jax
import numpy as np
from sklearn.base import clone

from ldptree.accounting import LedgerScope, PrivacyAccount
from ldptree.accounting._ledger import Holders
from ldptree.estimators._base import BaseEstimator, ClassifierMixin, keeps_state_on_error
from ldptree.rounds import budget_ledger
from ldptree.rounds._rows import is_chunk_stream

#: The estimator a composed estimator is made of (an LPDT or LPCT estimator).
TreeT = TypeVar("TreeT", bound=BaseEstimator)


class Composed(BaseEstimator, Generic[TreeT]):
    """A composed estimator of ``TreeT`` members: ``fit`` is ``_fit`` (the composition's work)
    on the private ``(X, y)`` and the public ``(X_public, y_public)``, leaving the estimator as
    it was if it raises; a classifier then takes its members' ``classes_``."""

    _tree_type: type[TreeT]
    #: Whether a member must be exactly ``TreeT`` (``False``: a subclass will do).
    _exact_member: ClassVar[bool] = False
    #: What the refusal of a member with its own ``privacy_budget`` says to do instead.
    _budget_hint: ClassVar[str]

    @keeps_state_on_error
    def fit(self, X: Any, y: Any = None, *, X_public: Any = None, y_public: Any = None) -> Self:
        """Fit the members and their rounds on the private ``(X, y)`` (an array or a memory
        map: the rows are read more than once) with the public ``(X_public, y_public)``
        (module docstring)."""
        member = self._fit(X, y, X_public, y_public)
        if isinstance(self, ClassifierMixin):
            self.classes_ = member.classes_
        return self

    def _fit(self, X: Any, y: Any, X_public: Any, y_public: Any) -> TreeT:
        """The fit's work; returns one fitted member."""
        raise NotImplementedError

    def _template(self) -> Any:
        """A copy of the unfitted member ``estimator`` (``None``: ``TreeT()``), refused when it
        is not a ``TreeT`` or has a budget of its own (the composition charges its members)."""
        kind = self._tree_type
        tree = kind() if self.estimator is None else self.estimator
        fits = type(tree) is kind if self._exact_member else isinstance(tree, kind)
        if not fits:
            raise TypeError(
                f"estimator must be an unfitted {kind.__name__} (or None), got "
                f"{type(tree).__name__}"
            )
        if tree.privacy_budget is not None:
            raise ValueError(f"estimator.privacy_budget must be None: {self._budget_hint}")
        return clone(tree)

    @staticmethod
    def _check_rereadable(X: Any, y: Any, why: str) -> None:
        """``TypeError`` when the private rows are an iterable of chunks, which is read once
        (``why``: who reads them more than once)."""
        if is_chunk_stream(X, y):
            raise TypeError(f"{why}: X must be an array or a memory map, not an iterable of chunks")


def holder_seed(key: Any) -> int:
    """A 64-bit seed from a JAX key (the holder split's public seed)."""
    words = np.asarray(jax.random.key_data(key), dtype=np.uint64).ravel()
    return int((words[0] << np.uint64(32)) | words[1])


def outer_scope(privacy_budget: Any) -> LedgerScope | None:
    """The caller's scope when ``privacy_budget`` is an account or a scope; ``None`` for a
    number (checked: ``> 0``) or ``None``."""
    if isinstance(privacy_budget, PrivacyAccount):
        return privacy_budget.scope()
    if isinstance(privacy_budget, LedgerScope):
        return privacy_budget
    budget_ledger(privacy_budget)  # a number > 0 or None, else ValueError/TypeError
    return None


def under(scope: LedgerScope, holders: Holders) -> Holders:
    """``holders`` of the estimator's own ledger, as a group inside ``scope``."""
    inner = () if holders is None else holders
    assert isinstance(inner, tuple)  # the estimator's ledger records scopes' paths
    return (*scope.path, *inner)


def mirror(account: PrivacyAccount, start: int, outer: LedgerScope | None) -> None:
    """Charge the caller's scope ``outer`` (if any) with the entries ``account`` recorded from
    ``start`` on, each under its own group."""
    if outer is None:
        return
    entries = account.ledger.entries[start:]
    outer.account.charge_all([(e.name, e.spend, under(outer, e.holders)) for e in entries])
