"""One holder's whole release across several rounds: the per-round certificates and the rule
that composes them.

A release made of rounds (the trees of a forest, the rounds of a multi-round design) is certified
round by round (:func:`~ldptree.accounting.verify_ldp` of each round's mechanism for its
published partition) and composed by the basic rules, for pure and approximate DP alike:

* ``"parallel"``: a public, data-independent assignment gives each holder exactly one round, so
  a holder's release is that round's report: ``epsilon = max_r epsilon_r``, ``delta = max_r
  delta_r``;
* ``"sequential"``: every holder answers every round with independent noise:
  ``epsilon = sum_r epsilon_r``, ``delta = min(1, sum_r delta_r)``.

``holds`` is true when every round's certificate holds (a round run uncertified, with
``allow_uncertified=True``, has no certificate and makes it false; a round that released
nothing needs none).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

import attrs

from ldptree.accounting._spend import PrivacySpend
from ldptree.accounting._verify import LDPCertificate

__all__ = ["CompositionCertificate"]

Rule = Literal["parallel", "sequential"]


def _check_rule(_: object, attribute: attrs.Attribute[str], value: Any) -> None:
    if value not in ("parallel", "sequential"):
        raise ValueError(f"{attribute.name} must be 'parallel' or 'sequential', got {value!r}")


def _check_rounds(_: object, attribute: attrs.Attribute[Any], value: Any) -> None:
    if not value:
        raise ValueError(f"{attribute.name} must name at least one round")


def _as_tuple(value: Iterable[Any]) -> tuple[Any, ...]:
    return tuple(value)


@attrs.frozen
class CompositionCertificate:
    """A holder's whole release: ``rule`` over the rounds' charged ``spends`` and their
    ``certificates`` (``None``: a round run uncertified), named by ``rounds`` (module
    docstring)."""

    rule: Rule = attrs.field(validator=_check_rule)
    rounds: tuple[str, ...] = attrs.field(converter=_as_tuple, validator=_check_rounds)
    spends: tuple[PrivacySpend, ...] = attrs.field(converter=_as_tuple)
    certificates: tuple[LDPCertificate | None, ...] = attrs.field(converter=_as_tuple)

    def __attrs_post_init__(self) -> None:
        if not len(self.rounds) == len(self.spends) == len(self.certificates):
            raise ValueError("rounds, spends and certificates must have one entry per round")

    @property
    def spend(self) -> PrivacySpend:
        """One holder's composed ``(epsilon, delta)``."""
        if self.rule == "parallel":
            return PrivacySpend.parallel(*self.spends)
        return PrivacySpend.sequential(*self.spends)

    @property
    def epsilon(self) -> float:
        return self.spend.epsilon

    @property
    def delta(self) -> float:
        return self.spend.delta

    @property
    def holds(self) -> bool:
        """Every round's mechanism is certified for its partition (and so the composition); a
        round that released nothing (spend 0, no certificate) needs none."""
        return all(
            c.holds if c is not None else s == PrivacySpend(0.0)
            for c, s in zip(self.certificates, self.spends, strict=True)
        )

    def describe(self) -> str:
        how = (
            "each holder answers exactly one round (public, data-independent assignment): "
            "parallel composition, epsilon = max over rounds"
            if self.rule == "parallel"
            else "every holder answers every round with independent noise: sequential "
            "composition, epsilon = sum over rounds"
        )
        lines = [f"one holder's release: {self.spend}; {how}"]
        for name, spend, cert in zip(self.rounds, self.spends, self.certificates, strict=True):
            status = "UNCERTIFIED" if cert is None else cert.status
            lines.append(f"  {name}: {spend} [{status}]")
        return "\n".join(lines)
