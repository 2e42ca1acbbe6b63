"""Private ensembles: forests of locally private trees grown on resamples of the public data.

:class:`LPDTForestRegressor` and :class:`LPCTForestClassifier` compose ``n_trees`` copies of an
existing tree estimator (:class:`~ldptree.LPDTRegressor`, :class:`~ldptree.LPCTClassifier`); the
trees' rounds run together through the round engine (:func:`ldptree.rounds.run`).
"""

from ldptree.ensembles._forest import LPCTForestClassifier, LPDTForestRegressor

__all__ = ["LPCTForestClassifier", "LPDTForestRegressor"]
