"""``PrivacyLedger``: an immutable record of what every holder has spent, with optional caps.

Each entry is a release (a :class:`~ldptree.accounting.PrivacySpend`) about a set of holders:
*every* holder (``holders=None``), one named *group* (``holders="validation"``), or a nested group
given as a path of :class:`Group` s (``holders=(Group("tree 3", split="forest"),)``).

Groups are the parts of *splits*: a split of a set of holders is a public, data-independent
assignment of each of them to at most one of its parts, so the parts of one split are pairwise
disjoint. Plain names (``"fold A"``, ``"fold B"``) are parts of the default split ``""``. A group
may itself be split (nested scopes). Two different splits of the same holders are unrelated: a
holder may fall in any part of each. The composition rules are the basic ones, for pure and
approximate DP alike (per holder, epsilons add and deltas add, capped at 1):

* **sequential**: releases about the same holder compose by addition;
* **parallel**: releases about disjoint holders (parts of one split) cost a holder only its own
  part's releases, so a split costs its worst part.

So the worst-off holder of a group ``G`` (:meth:`PrivacyLedger.holder_spend`) pays, from the root
down to ``G``: the entries about each enclosing group, the worst part of every *other* split of
each enclosing group (a holder of ``G`` may lie in any of them), and the worst-off holder of
``G``'s own subtree,

    worst(G) = sequential(entries about G, max over parts P of worst(P) for each split of G),

and the ledger's :attr:`~PrivacyLedger.total` is the worst-off holder of everyone (the root).
Post-processing entries are recorded for provenance and cost nothing.

A ``budget`` caps every holder; :meth:`PrivacyLedger.limit` caps the holders of one group (a
holder is capped by the budget of every group it belongs to). :meth:`PrivacyLedger.record`
refuses (``ValueError``) an entry that would bring any holder above a cap that applies to it, so
an estimator that records each release through the ledger *before* the release cannot exceed
what the user allowed. :meth:`PrivacyLedger.remaining_for` is what a group's holders can still be
charged. A ledger shared by several fits lives in a :class:`~ldptree.accounting.PrivacyAccount`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from ldptree.accounting._spend import PrivacySpend

__all__ = ["Group", "Holders", "LedgerEntry", "PrivacyLedger", "holder_path"]


def _check_text(_: object, attribute: attrs.Attribute[str], value: Any) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{attribute.name} must be a string, got {type(value).__name__}")


def _check_part(_: object, attribute: attrs.Attribute[str], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty string, got {value!r}")


@attrs.frozen
class Group:
    """A group of holders: part ``part`` of the split ``split`` of the enclosing group (parts of
    one split are disjoint; ``split=""`` is the default split of plain group names)."""

    part: str = attrs.field(validator=_check_part)
    split: str = attrs.field(default="", validator=_check_text)

    def __str__(self) -> str:
        return self.part if not self.split else f"{self.split}: {self.part}"


#: Who a release is about: ``None`` (every holder), a group name, or a path of nested groups.
Holders = str | tuple[Group | str, ...] | None
Path = tuple[Group, ...]


def holder_path(holders: Any) -> Path:
    """The path of nested groups ``holders`` names (``()``: every holder); ``ValueError`` on
    anything but ``None``, a non-empty name, or a tuple of groups and names."""
    if holders is None:
        return ()
    if isinstance(holders, str):
        return (Group(holders),) if holders else _bad_holders(holders)
    if isinstance(holders, tuple):
        path: list[Group] = []
        for item in holders:
            if isinstance(item, Group):
                path.append(item)
            elif isinstance(item, str) and item:
                path.append(Group(item))
            else:
                _bad_holders(holders)
        return tuple(path)
    return _bad_holders(holders)


def _bad_holders(value: Any) -> Path:
    raise ValueError(
        "holders must be None (every holder), a group name or a tuple of groups (a nested "
        f"group), got {value!r}"
    )


_check_name = _check_part


def _to_holders(value: Any) -> Any:
    """A name or ``None`` as given; a tuple as a path of :class:`Group` (checked; ``()`` is
    every holder, ``None``)."""
    return (holder_path(value) or None) if isinstance(value, tuple) else value


def _check_holders(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if value is not None and (not isinstance(value, str | tuple) or not value):
        raise ValueError(
            f"{attribute.name} must be None (every holder), a group name or a tuple of groups, "
            f"got {value!r}"
        )


@attrs.frozen
class LedgerEntry:
    """One release (or a free post-processing step) about ``holders`` (``None``: everyone; a
    name; or a path of nested :class:`Group` s)."""

    name: str = attrs.field(validator=_check_name)
    spend: PrivacySpend = attrs.field(validator=attrs.validators.instance_of(PrivacySpend))
    holders: str | Path | None = attrs.field(
        default=None, converter=_to_holders, validator=_check_holders
    )
    post_processing: bool = False

    @property
    def path(self) -> Path:
        return holder_path(self.holders)


_FREE = PrivacySpend(epsilon=0.0)


def _sequential(spends: list[PrivacySpend]) -> PrivacySpend:
    return PrivacySpend.sequential(*spends) if spends else _FREE


def _check_limits(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    for path, budget in value:
        if not isinstance(budget, PrivacySpend) or not path:
            raise ValueError(f"{attribute.name} must be ((group path, PrivacySpend), ...)")


def _where(path: Path) -> str:
    return "every holder" if not path else "group " + " / ".join(repr(str(g)) for g in path)


@attrs.frozen
class PrivacyLedger:
    """What each holder has spent so far (module docstring); every method returns a new ledger."""

    budget: PrivacySpend | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(PrivacySpend)),
    )
    entries: tuple[LedgerEntry, ...] = ()
    #: Budgets of groups (:meth:`limit`): ``((path, budget), ...)``.
    limits: tuple[tuple[Path, PrivacySpend], ...] = attrs.field(default=(), validator=_check_limits)

    @property
    def groups(self) -> tuple[str | Path, ...]:
        """Groups entries were recorded about (names or paths), in order of first use."""
        return tuple(dict.fromkeys(e.holders for e in self.entries if e.holders is not None))

    # -- composition ----------------------------------------------------------------------------
    def _direct(self, path: Path) -> list[PrivacySpend]:
        """The (named) spends of the entries about exactly ``path``."""
        return [
            attrs.evolve(e.spend, parts=e.spend.parts or ((e.name, e.spend.epsilon),))
            for e in self.entries
            if not e.post_processing and e.path == path
        ]

    def _splits(self, path: Path) -> dict[str, list[Group]]:
        """``{split: [its parts]}`` of the groups directly inside ``path``, in order of use."""
        splits: dict[str, list[Group]] = {}
        for e in self.entries:
            p = e.path
            if len(p) > len(path) and p[: len(path)] == path:
                parts = splits.setdefault(p[len(path)].split, [])
                if p[len(path)] not in parts:
                    parts.append(p[len(path)])
        return splits

    def _worst_split(self, path: Path, parts: Iterable[Group]) -> PrivacySpend:
        return PrivacySpend.parallel(*(self._subtree((*path, g)) for g in parts))

    def _subtree(self, path: Path) -> PrivacySpend:
        """The worst-off holder of ``path`` counting only releases about it and its subgroups."""
        own = self._direct(path)
        own += [self._worst_split(path, parts) for parts in self._splits(path).values()]
        return _sequential(own)

    def holder_spend(self, holders: Holders = None) -> PrivacySpend:
        """The worst-off holder of a group (``None``: of everyone, the :attr:`total`): every
        release that can reach one of its holders (module docstring)."""
        path = holder_path(holders)
        spends: list[PrivacySpend] = []
        for depth in range(len(path)):
            outer, inner = path[:depth], path[depth]
            spends += self._direct(outer)
            spends += [
                self._worst_split(outer, parts)
                for split, parts in self._splits(outer).items()
                if split != inner.split
            ]
        spends.append(self._subtree(path))
        return _sequential(spends)

    def spent(self, holders: Holders = None) -> PrivacySpend:
        """Spend of a holder in group ``holders``: :meth:`holder_spend`; ``None``: a holder in
        no named group (only the releases about every holder)."""
        if holders is None:
            return _sequential(self._direct(()))
        return self.holder_spend(holders)

    @property
    def total(self) -> PrivacySpend:
        """The worst-off holder's spend (parallel composition over the parts of each split)."""
        return self.holder_spend(None)

    # -- budgets --------------------------------------------------------------------------------
    @property
    def remaining(self) -> PrivacySpend | None:
        """What is left of the budget for the worst-off holder (``None`` without a budget)."""
        if self.budget is None:
            return None
        return _left(self.budget, self.total)

    def budget_of(self, holders: Holders) -> PrivacySpend | None:
        """The budget :meth:`limit` set on exactly this group (``None``: every holder's)."""
        path = holder_path(holders)
        if not path:
            return self.budget
        own = [b for p, b in self.limits if p == path]
        return own[-1] if own else None

    def _caps(self) -> list[tuple[Path, PrivacySpend]]:
        root = [((), self.budget)] if self.budget is not None else []
        return root + list(self.limits)

    def remaining_for(self, holders: Holders = None) -> PrivacySpend | None:
        """What a release about the group ``holders`` may still spend: the least, over every cap
        on a group that shares holders with it, of the cap minus the worst-off holder they may
        share (this group's when the cap's group contains it; the cap's group's otherwise, which
        is exact for a group inside this one and may under-state what is left for a part of
        another split). Parts of the same split are disjoint and do not constrain each other.
        ``None`` when no cap applies."""
        path = holder_path(holders)
        left: list[PrivacySpend] = []
        for cap_path, cap in self._caps():
            if _disjoint(path, cap_path):
                continue
            if path[: len(cap_path)] == cap_path:  # the cap's group contains this one
                left.append(_left(cap, self.holder_spend(path)))
            else:
                left.append(_left(cap, self.holder_spend(cap_path)))
        if not left:
            return None
        return PrivacySpend(epsilon=min(s.epsilon for s in left), delta=min(s.delta for s in left))

    def limit(self, holders: Holders, budget: PrivacySpend) -> PrivacyLedger:
        """Cap every holder of a group at ``budget`` (``holders=None``: the ledger's ``budget``);
        ``ValueError`` if one of them already spent more."""
        if not isinstance(budget, PrivacySpend):
            raise TypeError(f"budget must be a PrivacySpend, got {type(budget).__name__}")
        path = holder_path(holders)
        if not path:
            ledger = attrs.evolve(self, budget=budget)
        else:
            kept = tuple((p, b) for p, b in self.limits if p != path)
            ledger = attrs.evolve(self, limits=(*kept, (path, budget)))
        spent = self.holder_spend(path)
        if not spent.within(budget):
            raise ValueError(
                f"{_where(path)} already spent {spent}, above the budget {budget} to be set"
            )
        return ledger

    def record(self, name: str, spend: PrivacySpend, *, holders: Holders = None) -> PrivacyLedger:
        """Add a release about ``holders``; ``ValueError`` if it would bring any holder above a
        cap that applies to it (the ledger is then unchanged)."""
        entry = LedgerEntry(name=name, spend=spend, holders=holders)
        ledger = attrs.evolve(self, entries=(*self.entries, entry))
        for path, cap in self._caps():
            after = ledger.holder_spend(path)
            if after.within(cap):
                continue
            raise ValueError(
                f"recording {name!r} ({spend}) would bring the worst-off holder of "
                f"{_where(path)} to epsilon={after.epsilon:.6g}, delta={after.delta:.3g}, above "
                f"the budget epsilon={cap.epsilon:.6g}, delta={cap.delta:.3g} (already spent: "
                f"{self.holder_spend(path)}); lower the release's epsilon or raise the budget"
            )
        return ledger

    def record_parallel(self, name: str, spends: dict[str, PrivacySpend]) -> PrivacyLedger:
        """One release per disjoint group: ``{group name: spend}`` (parallel composition)."""
        if not spends:
            raise ValueError("spends must map at least one group name to a PrivacySpend")
        ledger = self
        for group, spend in spends.items():
            ledger = ledger.record(f"{name} [{group}]", spend, holders=group)
        return ledger

    def post_process(self, name: str, *, holders: Holders = None) -> PrivacyLedger:
        """Record a function of released reports only: free (post-processing)."""
        entry = LedgerEntry(name=name, spend=_FREE, holders=holders, post_processing=True)
        return attrs.evolve(self, entries=(*self.entries, entry))

    def __str__(self) -> str:
        lines = [f"privacy ledger: worst-off holder {self.total}"]
        if self.budget is not None:
            lines[0] += f" of budget {self.budget}"
        for e in self.entries:
            what = "post-processing (free)" if e.post_processing else str(e.spend)
            lines.append(f"  {e.name} [{_where(e.path)}]: {what}")
        for path, cap in self.limits:
            lines.append(f"  budget of {_where(path)}: {cap}")
        return "\n".join(lines)


def _disjoint(a: Path, b: Path) -> bool:
    """Whether two groups have no holder in common: they first differ in two parts of one
    split."""
    for x, y in zip(a, b, strict=False):
        if x != y:
            return x.split == y.split
    return False


def _left(budget: PrivacySpend, spent: PrivacySpend) -> PrivacySpend:
    return PrivacySpend(
        epsilon=max(0.0, budget.epsilon - spent.epsilon),
        delta=max(0.0, budget.delta - spent.delta),
    )
