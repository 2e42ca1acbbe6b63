"""Local randomizers: each holder's record ``(cell, label)`` -> one report.

Every built-in but :class:`LaplaceFeatureLabelMechanism` (which releases the features, not a cell)
is written on the mechanism kit (:class:`KitMechanism`): it declares how the label
enters (:class:`RealLabels`, :class:`ClassLabels`), its releases (each an instance of a release
kind, a :class:`Release` subclass with its own exact sampler, law, sums and likelihood:
:class:`CellRelease`, :class:`LabelRelease` and :class:`IndexRelease` with one exact noise each,
:class:`BitFlip`, :class:`UnaryFlip`, :class:`Geometric`, :class:`KaryResponse` or a finite channel
:class:`MatrixNoise`; :class:`HadamardRelease`, :class:`SubsetRelease`, :class:`LocalHashRelease`)
and its debiasing; sampling, summaries, likelihoods and the report law the accountant certifies
are derived from those declarations. :func:`mechanism_registry` lists every built-in once, with its
task and where the library may use it. The library's mechanisms are compared in the documentation's
mechanism library page.
"""

from ldptree.mechanisms._batch import SummaryJob, summarize_many
from ldptree.mechanisms._channel import MatrixNoise, matrix_noise
from ldptree.mechanisms._choose import (
    MechanismChoice,
    choose_class_mechanism,
    choose_regression_mechanism,
)
from ldptree.mechanisms._duchi import DuchiMechanism, DuchiReport
from ldptree.mechanisms._hr_laplace import HadamardLaplaceMechanism, HadamardLaplaceReport
from ldptree.mechanisms._kit import (
    NULL_LABEL,
    CellRelease,
    ClassLabels,
    HadamardRelease,
    IndexRelease,
    KitMechanism,
    LabelRelease,
    RealLabels,
    cell_indicator,
    debias_indicators,
    label_level,
    label_levels,
)
from ldptree.mechanisms._krr import (
    KRRCellClassMechanism,
    KRRJointMechanism,
    KRRLaplaceMechanism,
    KRRLaplaceReport,
    KRRPairReport,
)
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
from ldptree.mechanisms._local_hash import LocalHashRelease
from ldptree.mechanisms._noise import BitFlip, Geometric, KaryResponse, UnaryFlip
from ldptree.mechanisms._olh import (
    OLHCellClassMechanism,
    OLHCellClassReport,
    OLHLaplaceMechanism,
    OLHLaplaceReport,
)
from ldptree.mechanisms._oue import (
    OUECellClassMechanism,
    OUECellClassReport,
    OUELaplaceMechanism,
    OUELaplaceReport,
)
from ldptree.mechanisms._piecewise import PiecewiseMechanism, PiecewiseReport
from ldptree.mechanisms._registry import (
    Candidate,
    MechanismEntry,
    MechanismRegistry,
    mechanism_registry,
)
from ldptree.mechanisms._release import CellShaped, Release
from ldptree.mechanisms._releases import ItemRelease
from ldptree.mechanisms._rr_laplace import RRLaplaceMechanism, RRLaplaceReport
from ldptree.mechanisms._split import SplitChoice, optimal_split, predicted_error
from ldptree.mechanisms._subset import SubsetRelease
from ldptree.mechanisms._subset_selection import (
    SubsetCellClassMechanism,
    SubsetCellClassReport,
    SubsetLaplaceMechanism,
    SubsetLaplaceReport,
)
from ldptree.mechanisms._variance import (
    CellVariance,
    ExactCellVariance,
    SupportsExactVariance,
    SupportsVariance,
    estimated_cell_variance,
    label_moments,
)

__all__ = [
    "NULL_LABEL",
    "BitFlip",
    "Candidate",
    "CellRelease",
    "CellShaped",
    "CellVariance",
    "ClassLabels",
    "DuchiMechanism",
    "DuchiReport",
    "ExactCellVariance",
    "Geometric",
    "HadamardLaplaceMechanism",
    "HadamardLaplaceReport",
    "HadamardRelease",
    "IndexRelease",
    "ItemRelease",
    "KRRCellClassMechanism",
    "KRRJointMechanism",
    "KRRLaplaceMechanism",
    "KRRLaplaceReport",
    "KRRPairReport",
    "KaryResponse",
    "KitMechanism",
    "LabelRelease",
    "LaplaceCellClassMechanism",
    "LaplaceCellClassReport",
    "LaplaceCellLabelMechanism",
    "LaplaceCellLabelReport",
    "LaplaceFeatureLabelMechanism",
    "LaplaceFeatureLabelReport",
    "LocalHashRelease",
    "MatrixNoise",
    "MechanismChoice",
    "MechanismEntry",
    "MechanismRegistry",
    "OLHCellClassMechanism",
    "OLHCellClassReport",
    "OLHLaplaceMechanism",
    "OLHLaplaceReport",
    "OUECellClassMechanism",
    "OUECellClassReport",
    "OUELaplaceMechanism",
    "OUELaplaceReport",
    "PiecewiseMechanism",
    "PiecewiseReport",
    "RRLaplaceMechanism",
    "RRLaplaceReport",
    "RealLabels",
    "Release",
    "SplitChoice",
    "SubsetCellClassMechanism",
    "SubsetCellClassReport",
    "SubsetLaplaceMechanism",
    "SubsetLaplaceReport",
    "SubsetRelease",
    "SummaryJob",
    "SupportsExactVariance",
    "SupportsVariance",
    "UnaryFlip",
    "cell_indicator",
    "choose_class_mechanism",
    "choose_regression_mechanism",
    "debias_indicators",
    "estimated_cell_variance",
    "kit_built_ins",
    "label_level",
    "label_levels",
    "label_moments",
    "matrix_noise",
    "mechanism_registry",
    "optimal_split",
    "predicted_error",
    "summarize_many",
]


def kit_built_ins() -> dict[str, type[KitMechanism]]:
    """Every built-in mechanism written on the kit, by class name (the publishable entries of
    :func:`mechanism_registry`): each holds its whole configuration in its constructor's fields
    and samples with :meth:`KitMechanism.privatize_words` (what a deployment can publish)."""
    return {e.name: e.mechanism for e in mechanism_registry().select(publishable=True)}
