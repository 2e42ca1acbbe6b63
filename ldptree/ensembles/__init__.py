"""Private ensembles and multi-round designs composed of the tree estimators.

:class:`LPDTForestRegressor` and :class:`LPCTForestClassifier` compose ``n_trees`` copies of an
existing tree estimator (:class:`~ldptree.LPDTRegressor`, :class:`~ldptree.LPCTClassifier`); the
trees' rounds run together through the round engine (:func:`ldptree.rounds.run`).
:class:`LPDTTwoRoundRegressor` refines a deep public partition with private counts from some
holders, then fits an :class:`~ldptree.LPDTRegressor` on the chosen partition with the others.
"""

from ldptree.ensembles._forest import LPCTForestClassifier, LPDTForestRegressor
from ldptree.ensembles._two_round import LPDTTwoRoundRegressor

__all__ = ["LPCTForestClassifier", "LPDTForestRegressor", "LPDTTwoRoundRegressor"]
