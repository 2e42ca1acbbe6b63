"""Aggregators, read-outs and the estimators composed from them."""

from ldptree.estimators._classes import UnknownClassWarning
from ldptree.estimators._fits import ESTIMATOR_NEEDS, check_mechanism_fits
from ldptree.estimators._functional import (
    LeafFit,
    lpct_fit,
    lpct_leaves,
    lpct_pruned_fit,
    lpct_pruned_leaves,
    lpdt_fit,
    lpdt_leaves,
    private_round,
)
from ldptree.estimators._lpct import LPCTClassifier, LPCTPrunedClassifier
from ldptree.estimators._lpdt import LPDTRegressor
from ldptree.estimators._many import PendingFit, RoundPlan, fit_many, run_rounds
from ldptree.estimators._protocol import holder_summary, release_key, run_round
from ldptree.rounds._aggregators import (
    CollectedState,
    ReportCollector,
    SimulatedState,
    SimulatedSumAggregator,
    SumAggregator,
    SumState,
)

__all__ = [
    "ESTIMATOR_NEEDS",
    "CollectedState",
    "LPCTClassifier",
    "LPCTPrunedClassifier",
    "LPDTRegressor",
    "LeafFit",
    "PendingFit",
    "ReportCollector",
    "RoundPlan",
    "SimulatedState",
    "SimulatedSumAggregator",
    "SumAggregator",
    "SumState",
    "UnknownClassWarning",
    "check_mechanism_fits",
    "fit_many",
    "holder_summary",
    "lpct_fit",
    "lpct_leaves",
    "lpct_pruned_fit",
    "lpct_pruned_leaves",
    "lpdt_fit",
    "lpdt_leaves",
    "private_round",
    "release_key",
    "run_round",
    "run_rounds",
]
