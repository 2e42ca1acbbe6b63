"""A privacy ledger shared by many fits, and scopes of it: budgets that compose.

:class:`~ldptree.accounting.PrivacyLedger` is an immutable value; a :class:`PrivacyAccount` holds
the current ledger of one population of holders so that separate fits (estimators, rounds, the
trees of a forest) charge the same record. It is the one mutable object of the accounting (a
reference to the latest ledger, replaced under a lock), and copying it (``copy.deepcopy``, hence
scikit-learn's ``clone``) returns the account itself: a cloned estimator charges the same
account, never a private copy that would forget what was spent.

A :class:`LedgerScope` is an immutable view of a group of the account's holders: ``account.
scope()`` is everyone; ``scope.group("holdout")`` a group inside it (sibling groups are
disjoint); ``scope.split("forest", 8)`` the 8 disjoint parts of one public assignment of the
scope's holders. An estimator built with ``privacy_budget=scope`` charges its release to the
scope's holders before any private row is privatized; the charge is refused (``ValueError``,
nothing released, the account unchanged) when it would bring a holder of the scope, or of a group
inside it, above a budget that applies to them. Composition rules: the ledger's module docstring
(basic sequential composition of pure and approximate DP for the same holders; parallel
composition over the disjoint parts of a split).

A charge stays recorded if the fit fails after it: the account may over-state what was
released, never under-state it. A pickled account (sent to another process, saved with a model)
is a copy of the record at that time, no longer shared.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import attrs

from ldptree._validation import check_positive
from ldptree.accounting._ledger import Group, Holders, Path, PrivacyLedger, holder_path
from ldptree.accounting._spend import PrivacySpend

__all__ = ["LedgerScope", "PrivacyAccount", "as_budget"]


def as_budget(value: Any, name: str = "budget") -> PrivacySpend | None:
    """A budget: ``None`` (no cap), an epsilon (delta capped at 1, i.e. not capped) or a
    :class:`~ldptree.accounting.PrivacySpend`."""
    if value is None or isinstance(value, PrivacySpend):
        return value
    return PrivacySpend(epsilon=check_positive(value, name), delta=1.0)


class PrivacyAccount:
    """The shared ledger of one population of holders (module docstring).

    ``budget``: every holder's cap (an epsilon, a :class:`~ldptree.accounting.PrivacySpend` or
    ``None``)."""

    def __init__(self, budget: float | PrivacySpend | None = None) -> None:
        self._ledger = PrivacyLedger(budget=as_budget(budget))
        self._lock = threading.Lock()

    @property
    def ledger(self) -> PrivacyLedger:
        """The current (immutable) ledger."""
        return self._ledger

    def charge(self, name: str, spend: PrivacySpend, *, holders: Holders = None) -> None:
        """Record a release about ``holders``; ``ValueError`` (account unchanged) over a cap."""
        with self._lock:
            self._ledger = self._ledger.record(name, spend, holders=holders)

    def charge_all(self, releases: Sequence[tuple[str, PrivacySpend, Holders]]) -> None:
        """Record several releases ``(name, spend, holders)`` at once: all of them, or none
        (``ValueError``, account unchanged) when one would bring a holder above a cap."""
        with self._lock:
            ledger = self._ledger
            for name, spend, holders in releases:
                ledger = ledger.record(name, spend, holders=holders)
            self._ledger = ledger

    def limit(self, holders: Holders, budget: float | PrivacySpend) -> None:
        """Cap every holder of a group (``ValueError`` if one already spent more)."""
        cap = as_budget(budget)
        assert cap is not None  # as_budget(number) is a spend
        with self._lock:
            self._ledger = self._ledger.limit(holders, cap)

    def scope(self, *groups: str | Group) -> LedgerScope:
        """The scope of a group (no argument: every holder; several: nested groups)."""
        return LedgerScope(self, holder_path(tuple(groups)))

    def __deepcopy__(self, memo: dict[int, Any]) -> PrivacyAccount:
        return self  # a handle on one shared record (module docstring)

    def __copy__(self) -> PrivacyAccount:
        return self

    def __getstate__(self) -> dict[str, Any]:
        # pickling (another process, a saved model) copies the record: the copy is not shared
        return {"ledger": self._ledger}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self._ledger = state["ledger"]
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PrivacyAccount(worst-off holder {self._ledger.total})"


def _check_account(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not isinstance(value, PrivacyAccount):
        raise TypeError(f"{attribute.name} must be a PrivacyAccount, got {type(value).__name__}")


@attrs.frozen
class LedgerScope:
    """A group of an account's holders (module docstring): ``path`` from every holder down;
    ``label`` (optional) prefixes the names of the releases charged through this scope."""

    account: PrivacyAccount = attrs.field(validator=_check_account)
    path: Path = attrs.field(default=(), converter=holder_path)
    label: str = attrs.field(default="", validator=attrs.validators.instance_of(str))

    def labelled(self, label: str) -> LedgerScope:
        """The same holders, with ``label`` naming the releases charged through it."""
        return attrs.evolve(self, label=label)

    def group(self, name: str, *, budget: float | PrivacySpend | None = None) -> LedgerScope:
        """The group ``name`` inside this scope (sibling names are disjoint), capped at
        ``budget`` when given."""
        scope = LedgerScope(self.account, (*self.path, Group(name)))
        if budget is not None:
            scope.limit(budget)
        return scope

    def split(self, name: str, parts: int | tuple[str, ...]) -> tuple[LedgerScope, ...]:
        """The disjoint parts of the split ``name`` of this scope's holders (a public assignment
        of each holder to one part): ``parts`` names them, or counts them (``"0"``, ``"1"``,
        ...). Another split of the same holders is unrelated to this one (a holder may fall in
        any part of each), so the ledger composes different splits sequentially."""
        if isinstance(parts, int) and not isinstance(parts, bool):
            if parts < 1:
                raise ValueError(f"parts must be >= 1, got {parts}")
            names: tuple[str, ...] = tuple(str(i) for i in range(parts))
        elif isinstance(parts, tuple) and parts and all(isinstance(p, str) for p in parts):
            names = parts
        else:
            raise ValueError(f"parts must be a count >= 1 or a tuple of names, got {parts!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"parts must have distinct names, got {names!r}")
        return tuple(LedgerScope(self.account, (*self.path, Group(p, split=name))) for p in names)

    def charge(self, name: str, spend: PrivacySpend) -> None:
        """Record a release about this scope's holders (``ValueError`` over a cap)."""
        named = f"{self.label}: {name}" if self.label else name
        self.account.charge(named, spend, holders=self.path)

    def limit(self, budget: float | PrivacySpend) -> None:
        """Cap every holder of this scope."""
        self.account.limit(self.path, budget)

    @property
    def ledger(self) -> PrivacyLedger:
        return self.account.ledger

    @property
    def spent(self) -> PrivacySpend:
        """The worst-off holder of this scope (:meth:`PrivacyLedger.holder_spend`)."""
        return self.account.ledger.holder_spend(self.path)

    @property
    def remaining(self) -> PrivacySpend | None:
        """What a release about this scope may still spend (``None``: uncapped)."""
        return self.account.ledger.remaining_for(self.path)
