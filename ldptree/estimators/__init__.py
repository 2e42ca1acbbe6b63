"""Aggregators, read-outs and the estimators composed from them."""

from ldptree.estimators._aggregate import SumAggregator, SumState
from ldptree.estimators._classes import UnknownClassWarning
from ldptree.estimators._lpct import LPCTClassifier, LPCTPrunedClassifier
from ldptree.estimators._lpdt import LPDTRegressor
from ldptree.estimators._protocol import holder_summary, run_round

__all__ = [
    "LPCTClassifier",
    "LPCTPrunedClassifier",
    "LPDTRegressor",
    "SumAggregator",
    "SumState",
    "UnknownClassWarning",
    "holder_summary",
    "run_round",
]
