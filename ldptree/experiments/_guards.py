"""Which protective defaults a configuration turns off, so that results say so.

Some estimators have a safeguard on by default that a configuration can switch off for parity
with a paper:

* :class:`~ldptree.LPDTRegressor`: ``readout="ratio"`` with ``min_private_ratio=0`` is the
  reference's unguarded ratio ``s^_j / c^_j``, which explodes in a cell whose debiased count is
  small and positive (the default ``readout="auto"`` shrinks towards the public leaf mean;
  a positive or ``"auto"`` ``min_private_ratio`` falls back to it);
* :class:`~ldptree.baselines.DECONVRegressor`: ``guard="none"`` drops the public fallback and
  the clipping of predictions into the label bound;
* :class:`~ldptree.LPDTRegressor` and the histogram regressors
  (:class:`~ldptree.baselines.PHISTRegressor`, :class:`~ldptree.baselines.APHISTRegressor`):
  ``clip_predictions=False`` drops the clipping of leaf values into the label bound.

:func:`disabled_guards` names them for one estimator; the runner stores the text in every
result row (``guards``), prints it once per method and run, and the tables mark the column.
"""

from __future__ import annotations

from typing import Any

from ldptree.baselines import DECONVRegressor, PHISTRegressor
from ldptree.estimators import LPDTRegressor


def disabled_guards(estimator: Any) -> tuple[str, ...]:
    """The protective settings ``estimator`` (unfitted is fine) runs without, in words."""
    off = []
    if (
        isinstance(estimator, LPDTRegressor)
        and estimator.readout == "ratio"
        and not isinstance(estimator.min_private_ratio, str)
        and estimator.min_private_ratio == 0
    ):
        off.append("read-out guard off (readout='ratio', min_private_ratio=0)")
    if isinstance(estimator, DECONVRegressor) and estimator.guard == "none":
        off.append("guard and label clipping off (guard='none')")
    if isinstance(estimator, (LPDTRegressor, PHISTRegressor)) and not estimator.clip_predictions:
        off.append("label clipping off (clip_predictions=False)")
    return tuple(off)
