"""Private ensembles and multi-round designs composed of the tree estimators.

:class:`LPDTForestRegressor` and :class:`LPCTForestClassifier` compose ``n_trees`` copies of an
existing tree estimator (:class:`~ldptree.LPDTRegressor`, :class:`~ldptree.LPCTClassifier`); the
trees' rounds run together through the round engine (:func:`ldptree.rounds.run`).
:class:`LPDTTwoRoundRegressor` and :class:`LPCTTwoRoundClassifier` refine a deep public partition
with private counts from some holders, then fit an :class:`~ldptree.LPDTRegressor` /
:class:`~ldptree.LPCTClassifier` on the chosen partition with the others.
"""

from ldptree.ensembles._forest import LPCTForestClassifier, LPDTForestRegressor
from ldptree.ensembles._two_round import LPCTTwoRoundClassifier, LPDTTwoRoundRegressor

__all__ = [
    "LPCTForestClassifier",
    "LPCTTwoRoundClassifier",
    "LPDTForestRegressor",
    "LPDTTwoRoundRegressor",
]
