"""What a release spends: a mechanism's privacy map evaluated, with its sequential parts.

Composition rules (for one holder, pure or approximate LDP):

* **sequential** (:meth:`PrivacySpend.sequential`): releases about the same holder computed with
  independent randomness — a budget split between the parts of one report, a second round, a
  tuning query — compose to ``(sum eps_i, sum delta_i)`` (basic composition: the likelihood ratio
  of the joint release is the product of the parts' ratios, and each part's ``delta`` mass is
  charged once);
* **parallel** (:meth:`PrivacySpend.parallel`): releases about *disjoint* groups of holders cost
  each holder only its own group's release: ``(max eps_i, max delta_i)``;
* **post-processing** costs nothing: any function of released reports (aggregation, debiasing,
  pruning, read-outs) is ``(0, 0)``.
"""

from __future__ import annotations

import math
from typing import Any

import attrs

__all__ = ["PrivacySpend", "spend_of"]


def _check_epsilon(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and math.isfinite(value) and value >= 0.0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value!r}")


def _check_delta(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if not (isinstance(value, int | float) and 0.0 <= value <= 1.0):
        raise ValueError(f"{attribute.name} must lie in [0, 1], got {value!r}")


def _check_parts(
    _: object, attribute: attrs.Attribute[tuple[tuple[str, float], ...]], value: Any
) -> None:
    for part in value:
        if not (
            isinstance(part, tuple)
            and len(part) == 2
            and isinstance(part[0], str)
            and isinstance(part[1], int | float)
            and part[1] >= 0.0
        ):
            raise ValueError(f"{attribute.name} must hold (name, epsilon >= 0) pairs, got {part!r}")


def _to_parts(value: Any) -> tuple[tuple[str, float], ...]:
    try:
        return tuple((name, float(eps)) for name, eps in value)
    except (TypeError, ValueError):
        raise ValueError(f"parts must hold (name, epsilon) pairs, got {value!r}") from None


@attrs.frozen
class PrivacySpend:
    """Per-holder privacy loss of one release: ``(epsilon, delta)``-LDP.

    ``parts`` lists the sub-releases that compose sequentially into it, as ``(name, epsilon)``;
    their epsilons add up to ``epsilon`` (basic composition of independent parts).
    """

    epsilon: float = attrs.field(converter=float, validator=_check_epsilon)
    delta: float = attrs.field(default=0.0, converter=float, validator=_check_delta)
    parts: tuple[tuple[str, float], ...] = attrs.field(
        default=(), converter=_to_parts, validator=_check_parts
    )

    def __attrs_post_init__(self) -> None:
        if self.parts:
            total = math.fsum(e for _, e in self.parts)
            if abs(total - self.epsilon) > 1e-9 * max(1.0, self.epsilon):
                raise ValueError(
                    f"parts add up to epsilon={total:.12g}, not epsilon={self.epsilon:.12g}"
                )

    @classmethod
    def sequential(cls, *spends: PrivacySpend) -> PrivacySpend:
        """Basic sequential composition of one holder's independent releases (module doc)."""
        _check_spends(spends)
        parts: list[tuple[str, float]] = []
        for spend in spends:
            parts.extend(spend.parts or (("release", spend.epsilon),))
        return cls(
            epsilon=math.fsum(s.epsilon for s in spends),
            delta=min(1.0, math.fsum(s.delta for s in spends)),
            parts=tuple(parts) if any(s.parts for s in spends) else (),
        )

    @classmethod
    def parallel(cls, *spends: PrivacySpend) -> PrivacySpend:
        """Releases about disjoint holders: each holder pays one of them (module doc)."""
        _check_spends(spends)
        worst = max(spends, key=lambda s: (s.epsilon, s.delta))
        return cls(epsilon=worst.epsilon, delta=max(s.delta for s in spends), parts=worst.parts)

    def within(self, budget: PrivacySpend) -> bool:
        """``epsilon <= budget.epsilon`` and ``delta <= budget.delta`` (to float rounding)."""
        return self.epsilon <= budget.epsilon * (1.0 + 1e-12) and self.delta <= budget.delta + 1e-15

    def __str__(self) -> str:
        detail = ", ".join(f"{name}: {eps:.6g}" for name, eps in self.parts)
        head = f"epsilon={self.epsilon:.6g}" + (f", delta={self.delta:.3g}" if self.delta else "")
        return f"{head} ({detail})" if detail else head


def _check_spends(spends: tuple[Any, ...]) -> None:
    if not spends:
        raise ValueError("compose at least one PrivacySpend")
    for spend in spends:
        if not isinstance(spend, PrivacySpend):
            raise TypeError(f"expected PrivacySpend, got {type(spend).__name__}")


def spend_of(mechanism: Any) -> PrivacySpend:
    """A mechanism's declared privacy map: its ``spend`` if it has one, else ``(epsilon, 0)``.

    A declaration, not a proof: estimators charge what :func:`~ldptree.accounting.verify_ldp`
    certifies and use a declared ``spend`` only as the breakdown into parts of that epsilon.
    """
    spend = getattr(mechanism, "spend", None)
    if isinstance(spend, PrivacySpend):
        return spend
    return PrivacySpend(epsilon=float(mechanism.epsilon))
