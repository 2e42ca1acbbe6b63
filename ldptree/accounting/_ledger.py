"""``PrivacyLedger``: an immutable record of what every holder has spent, with an optional cap.

Each entry is a release (a :class:`~ldptree.accounting.PrivacySpend`) about either *every* holder
(``holders=None``) or one named *group* of holders; distinct group names denote disjoint sets of
holders (e.g. a holdout split used for private tuning). A holder in group ``g`` pays, by sequential
composition, every all-holders entry plus ``g``'s entries; groups compose in parallel, so the
ledger's :attr:`~PrivacyLedger.total` is the worst-off holder's spend,

    total = max over groups g of sequential(all-holders entries + entries of g).

Post-processing entries are recorded for provenance and cost nothing. A ledger with a ``budget``
refuses (``ValueError``) any entry that would bring the worst-off holder above it, so an estimator
that records each release through the ledger cannot exceed what the user allowed.
"""

from __future__ import annotations

from typing import Any

import attrs

from ldptree.accounting._spend import PrivacySpend

__all__ = ["LedgerEntry", "PrivacyLedger"]


def _check_name(_: object, attribute: attrs.Attribute[str], value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{attribute.name} must be a non-empty string, got {value!r}")


def _check_holders(_: object, attribute: attrs.Attribute[str | None], value: Any) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(
            f"{attribute.name} must be None (every holder) or a group name, got {value!r}"
        )


@attrs.frozen
class LedgerEntry:
    """One release (or a free post-processing step) about ``holders`` (``None``: everyone)."""

    name: str = attrs.field(validator=_check_name)
    spend: PrivacySpend = attrs.field(validator=attrs.validators.instance_of(PrivacySpend))
    holders: str | None = attrs.field(default=None, validator=_check_holders)
    post_processing: bool = False


_FREE = PrivacySpend(epsilon=0.0)


@attrs.frozen
class PrivacyLedger:
    """What each holder has spent so far (module docstring); every method returns a new ledger."""

    budget: PrivacySpend | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.instance_of(PrivacySpend)),
    )
    entries: tuple[LedgerEntry, ...] = ()

    @property
    def groups(self) -> tuple[str, ...]:
        """Named (pairwise disjoint) holder groups, in order of first use."""
        return tuple(dict.fromkeys(e.holders for e in self.entries if e.holders is not None))

    def spent(self, holders: str | None = None) -> PrivacySpend:
        """Spend of a holder in group ``holders`` (``None``: a holder in no named group)."""
        own = [
            attrs.evolve(e.spend, parts=e.spend.parts or ((e.name, e.spend.epsilon),))
            for e in self.entries
            if not e.post_processing and (e.holders is None or e.holders == holders)
        ]
        return PrivacySpend.sequential(*own) if own else _FREE

    @property
    def total(self) -> PrivacySpend:
        """The worst-off holder's spend (parallel composition over groups)."""
        return PrivacySpend.parallel(*(self.spent(g) for g in (None, *self.groups)))

    @property
    def remaining(self) -> PrivacySpend | None:
        """What is left of the budget for the worst-off holder (``None`` without a budget)."""
        if self.budget is None:
            return None
        total = self.total
        return PrivacySpend(
            epsilon=max(0.0, self.budget.epsilon - total.epsilon),
            delta=max(0.0, self.budget.delta - total.delta),
        )

    def record(
        self, name: str, spend: PrivacySpend, *, holders: str | None = None
    ) -> PrivacyLedger:
        """Add a release about ``holders``; ``ValueError`` if it would exceed the budget."""
        entry = LedgerEntry(name=name, spend=spend, holders=holders)
        ledger = attrs.evolve(self, entries=(*self.entries, entry))
        if self.budget is not None and not ledger.total.within(self.budget):
            total = ledger.total
            raise ValueError(
                f"recording {name!r} ({spend}) would bring the worst-off holder to "
                f"epsilon={total.epsilon:.6g}, delta={total.delta:.3g}, above the budget "
                f"epsilon={self.budget.epsilon:.6g}, delta={self.budget.delta:.3g} "
                f"(already spent: {self.total}); lower the release's epsilon or raise the budget"
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

    def post_process(self, name: str, *, holders: str | None = None) -> PrivacyLedger:
        """Record a function of released reports only: free (post-processing)."""
        entry = LedgerEntry(name=name, spend=_FREE, holders=holders, post_processing=True)
        return attrs.evolve(self, entries=(*self.entries, entry))

    def __str__(self) -> str:
        lines = [f"privacy ledger: worst-off holder {self.total}"]
        if self.budget is not None:
            lines[0] += f" of budget {self.budget}"
        for e in self.entries:
            who = "every holder" if e.holders is None else f"group {e.holders!r}"
            what = "post-processing (free)" if e.post_processing else str(e.spend)
            lines.append(f"  {e.name} [{who}]: {what}")
        return "\n".join(lines)
