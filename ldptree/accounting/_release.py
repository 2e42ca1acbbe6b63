"""``ReleaseCertificate``: what a release's privacy claim is, and what its code realises.

A certificate compares a claim ``(epsilon_claimed, delta_claimed)`` with a realised bound
``(epsilon, delta)`` computed from the constants the sampler actually uses:

* ``holds``: ``epsilon <= epsilon_claimed (1 + 1e-9)`` and ``delta <= delta_claimed``;
* ``pure``: ``holds`` and ``delta == 0`` *for the release as sampled*. A certificate of a declared
  law whose sampler is float-based (so not certified as sampled) sets ``pure = False`` and says
  in ``notes`` what it covers and what it does not;
* ``method``: how the bound was obtained; ``notes``: caveats.
"""

from __future__ import annotations

import attrs

__all__ = ["ReleaseCertificate"]


@attrs.frozen
class ReleaseCertificate:
    """A release's claimed and realised ``(epsilon, delta)`` (module docstring)."""

    epsilon_claimed: float
    delta_claimed: float
    epsilon: float
    delta: float
    holds: bool
    pure: bool
    method: str
    notes: tuple[str, ...] = ()
