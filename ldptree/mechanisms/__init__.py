"""Local randomizers: each holder's record ``(cell, label)`` -> one report."""

from ldptree.mechanisms._laplace_cell_class import (
    LaplaceCellClassMechanism,
    LaplaceCellClassReport,
)
from ldptree.mechanisms._laplace_cell_label import (
    LaplaceCellLabelMechanism,
    LaplaceCellLabelReport,
)
from ldptree.mechanisms._laplace_features import (
    LaplaceFeatureLabelMechanism,
    LaplaceFeatureLabelReport,
)
from ldptree.mechanisms._rr_laplace import RRLaplaceMechanism, RRLaplaceReport

__all__ = [
    "LaplaceCellClassMechanism",
    "LaplaceCellClassReport",
    "LaplaceCellLabelMechanism",
    "LaplaceCellLabelReport",
    "LaplaceFeatureLabelMechanism",
    "LaplaceFeatureLabelReport",
    "RRLaplaceMechanism",
    "RRLaplaceReport",
]
