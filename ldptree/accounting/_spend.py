"""What a release spends: a mechanism's privacy map evaluated, with its sequential parts."""

from __future__ import annotations

import attrs


@attrs.frozen
class PrivacySpend:
    """Per-holder privacy loss of one release: ``(epsilon, delta)``-LDP.

    ``parts`` lists the sub-releases that compose sequentially into it, as ``(name, epsilon)``;
    their epsilons add up to ``epsilon`` (basic composition of independent parts).
    """

    epsilon: float
    delta: float = 0.0
    parts: tuple[tuple[str, float], ...] = ()

    def __str__(self) -> str:
        detail = ", ".join(f"{name}: {eps:.6g}" for name, eps in self.parts)
        head = f"epsilon={self.epsilon:.6g}" + (f", delta={self.delta:.3g}" if self.delta else "")
        return f"{head} ({detail})" if detail else head
