"""What a fitted tree's release cost, as plain data that can be printed and saved.

:class:`PrivacyRecord` copies, from a fitted estimator, the per-holder spend that its certificate
proves (``privacy_``), how it splits over the parts of a report, the mechanism that ran (and why
``mechanism="auto"`` chose it), the certificate's verdict and the ledger of every release. It is
strings and numbers only, so a saved model carries it without pickling any object.
"""

from __future__ import annotations

from typing import Any

import attrs


def _parts(value: Any) -> tuple[tuple[str, float], ...]:
    return tuple((str(name), float(eps)) for name, eps in value)


@attrs.frozen
class PrivacyRecord:
    """The privacy of one fit (module docstring).

    ``epsilon`` and ``delta``: what every private holder's single report costs (the worst-off
    holder; ``0`` when no private report was collected). ``parts``: its split over the report's
    releases. ``mechanism``: the mechanism's ``repr`` (empty without a private release);
    ``choice``: why ``mechanism="auto"`` picked it (empty otherwise); ``certificate``: the
    verdict of :func:`~ldptree.accounting.verify_ldp` on the published partition; ``ledger``: the
    printed :class:`~ldptree.accounting.PrivacyLedger`.
    """

    epsilon: float = attrs.field(converter=float)
    delta: float = attrs.field(converter=float)
    parts: tuple[tuple[str, float], ...] = attrs.field(converter=_parts)
    mechanism: str
    choice: str
    certificate: str
    ledger: str

    @classmethod
    def of(cls, estimator: Any) -> PrivacyRecord:
        """The record of a fitted ldptree estimator (reads ``privacy_``, ``mechanism_``,
        ``mechanism_choice_``, ``privacy_certificate_`` and ``privacy_ledger_``)."""
        spend = estimator.privacy_
        mechanism = getattr(estimator, "mechanism_", None)
        choice = getattr(estimator, "mechanism_choice_", None)
        certificate = getattr(estimator, "privacy_certificate_", None)
        if certificate is not None:
            verdict = str(certificate).splitlines()[0]
        elif mechanism is None:
            verdict = "no private report was collected"
        else:
            verdict = "uncertified (fitted with allow_uncertified=True): epsilon as declared"
        return cls(
            epsilon=spend.epsilon,
            delta=spend.delta,
            parts=spend.parts,
            mechanism="" if mechanism is None else repr(mechanism),
            choice="" if choice is None else choice.describe(),
            certificate=verdict,
            ledger=str(estimator.privacy_ledger_),
        )

    def summary(self) -> str:
        """A few lines for people: the per-holder cost first, then where it comes from."""
        kind = "pure, delta = 0" if self.delta == 0 else f"delta = {self.delta:g}"
        lines = [f"each private holder: epsilon = {self.epsilon:g} ({kind}), one report"]
        if len(self.parts) > 1:
            split = " + ".join(f"{name} {eps:.4g}" for name, eps in self.parts)
            lines.append(f"  report parts: {split}")
        if self.mechanism:
            lines.append(f"  mechanism: {self.mechanism}")
        if self.choice:
            lines.append(f'  chosen by mechanism="auto": {self.choice}')
        lines.append(f"  certificate: {self.certificate}")
        lines.append("  " + self.ledger.replace("\n", "\n  "))
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "epsilon": self.epsilon,
            "delta": self.delta,
            "parts": [[name, eps] for name, eps in self.parts],
            "mechanism": self.mechanism,
            "choice": self.choice,
            "certificate": self.certificate,
            "ledger": self.ledger,
        }

    @classmethod
    def from_dict(cls, value: Any) -> PrivacyRecord:
        """Inverse of :meth:`to_dict`; a malformed value raises ``ValueError`` naming it."""
        names = ("epsilon", "delta", "parts", "mechanism", "choice", "certificate", "ledger")
        if not isinstance(value, dict) or set(value) != set(names):
            raise ValueError(f"model JSON field 'privacy' must be an object with keys {names}")
        for name in ("epsilon", "delta"):
            number = value[name]
            if isinstance(number, bool) or not isinstance(number, int | float) or number < 0:
                raise ValueError(f"model JSON field 'privacy.{name}' must be a number >= 0")
        for name in ("mechanism", "choice", "certificate", "ledger"):
            if not isinstance(value[name], str):
                raise ValueError(f"model JSON field 'privacy.{name}' must be a string")
        parts = value["parts"]
        if not isinstance(parts, list) or not all(
            isinstance(p, list)
            and len(p) == 2
            and isinstance(p[0], str)
            and isinstance(p[1], int | float)
            and not isinstance(p[1], bool)
            for p in parts
        ):
            raise ValueError("model JSON field 'privacy.parts' must be a list of [name, epsilon]")
        return cls(**{name: value[name] for name in names})
