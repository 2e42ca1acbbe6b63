"""The estimators, their read-outs, and the building blocks an estimator of one's own is made of
(the baselines are): base classes, input checks, what the public side derives from public data
alone, routing. The machinery that runs a round is :mod:`ldptree.rounds`."""

from ldptree.estimators._base import (
    BaseEstimator,
    ClassifierMixin,
    RegressorMixin,
    keeps_state_on_error,
)
from ldptree.estimators._classes import (
    UnknownClassWarning,
    check_class_labels,
    encode_labels,
    resolve_classes,
)
from ldptree.estimators._composition import (
    check_components,
    check_mechanism,
    route,
    simulates_holders,
)
from ldptree.estimators._fits import ESTIMATOR_NEEDS, check_mechanism_fits
from ldptree.estimators._inputs import check_fit_data, fit_scaler, resolve_label_bound
from ldptree.estimators._lpct import LPCTClassifier, LPCTPrunedClassifier
from ldptree.estimators._lpct_readout import lpct_leaves, private_class_counts
from ldptree.estimators._lpdt import LPDTRegressor
from ldptree.estimators._many import PendingFit, fit_many
from ldptree.estimators._plan import FitPlan, Planned
from ldptree.estimators._prune import lpct_pruned_leaves
from ldptree.estimators._readout import (
    RatioReadOut,
    ShrinkReadOut,
    cell_means,
    clip_to_bound,
    lpdt_leaves,
    ratio_with_fallback,
)
from ldptree.protocols import LeafFit, PublicCells, ReadOut

__all__ = [
    "ESTIMATOR_NEEDS",
    "BaseEstimator",
    "ClassifierMixin",
    "FitPlan",
    "LPCTClassifier",
    "LPCTPrunedClassifier",
    "LPDTRegressor",
    "LeafFit",
    "PendingFit",
    "Planned",
    "PublicCells",
    "RatioReadOut",
    "ReadOut",
    "RegressorMixin",
    "ShrinkReadOut",
    "UnknownClassWarning",
    "cell_means",
    "check_class_labels",
    "check_components",
    "check_fit_data",
    "check_mechanism",
    "check_mechanism_fits",
    "clip_to_bound",
    "encode_labels",
    "fit_many",
    "fit_scaler",
    "keeps_state_on_error",
    "lpct_leaves",
    "lpct_pruned_leaves",
    "lpdt_leaves",
    "private_class_counts",
    "ratio_with_fallback",
    "resolve_classes",
    "resolve_label_bound",
    "route",
    "simulates_holders",
]
