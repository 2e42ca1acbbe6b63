"""Where :mod:`ldptree.protocol` finds the certificate cache (it moved to
:mod:`ldptree.rounds._charge`, the curator's charge for a round)."""

from ldptree.rounds._charge import certify

__all__ = ["certify"]
