"""Local randomizers: each holder's record ``(cell, label)`` -> one report."""

from ldptree.mechanisms._rr_laplace import RRLaplaceMechanism, RRLaplaceReport

__all__ = ["RRLaplaceMechanism", "RRLaplaceReport"]
