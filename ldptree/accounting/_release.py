"""What is true of a sampled release: the claimed budget next to the one computed from the law.

A :class:`ReleaseCertificate` is built by a release from the *realised* integer tables of its
noise (the counts the sampler reads), never from the textbook law it approximates. It records the
claim, the computed ``(epsilon, delta)``, and whether the claim holds: ``epsilon <= claimed`` and
``delta <= claimed`` up to a relative ``1e-9`` (the slack covers the float rounding of logarithms
and sums in the computation, which are themselves pushed towards privacy where it matters).
"""

from __future__ import annotations

import math

import attrs

__all__ = ["ReleaseCertificate"]

#: Relative slack of ``holds`` (computed value may exceed the claim by this factor).
RELATIVE_SLACK = 1e-9


def _to_notes(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, tuple | list):
        raise TypeError(f"notes must be a tuple of strings, got {value!r}")
    return tuple(str(v) for v in value)


def _check_budget(_: object, attribute: attrs.Attribute[float], value: float) -> None:
    if math.isnan(value) or value < 0.0:
        raise ValueError(f"{attribute.name} must be a number >= 0 (inf allowed), got {value!r}")


def _within(value: float, claim: float) -> bool:
    return value <= claim * (1.0 + RELATIVE_SLACK)


@attrs.frozen
class ReleaseCertificate:
    """Claimed and realised ``(epsilon, delta)`` of one holder's release.

    ``holds`` is ``epsilon <= epsilon_claimed`` and ``delta <= delta_claimed`` (each up to a
    relative ``1e-9``); ``pure`` is ``holds`` with ``delta == 0`` and ``covers_sampler``.
    ``method`` names how the realised values were computed and ``notes`` gives the quantities
    behind them.
    """

    epsilon_claimed: float = attrs.field(converter=float, validator=_check_budget)
    delta_claimed: float = attrs.field(converter=float, validator=_check_budget)
    epsilon: float = attrs.field(converter=float, validator=_check_budget)
    delta: float = attrs.field(converter=float, validator=_check_budget)
    method: str = attrs.field(validator=attrs.validators.instance_of(str))
    notes: tuple[str, ...] = attrs.field(default=(), converter=_to_notes)
    #: ``False`` when the computation covers a declared law but not the (floating-point) sampler
    #: that realises it; ``notes`` then say what is and is not covered.
    covers_sampler: bool = attrs.field(default=True, validator=attrs.validators.instance_of(bool))

    @property
    def holds(self) -> bool:
        """The realised ``(epsilon, delta)`` is within the claim (relative slack ``1e-9``)."""
        return _within(self.epsilon, self.epsilon_claimed) and _within(
            self.delta, self.delta_claimed
        )

    @property
    def pure(self) -> bool:
        """``holds``, ``delta == 0`` and the computation covers the sampler: the release is pure
        ``epsilon_claimed``-LDP as sampled."""
        return self.holds and self.delta == 0.0 and self.covers_sampler
