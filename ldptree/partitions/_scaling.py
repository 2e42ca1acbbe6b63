"""Min-max scaling to ``[0, 1]^d`` estimated from public data only.

Per feature ``k`` the box is ``[lo_k, hi_k]`` with ``lo_k = min_i X^Q_ik`` and
``hi_k = max_i X^Q_ik`` (optionally widened by ``margin * (hi_k - lo_k)`` on each side), and a
point maps to ``(x_k - lo_k) / (hi_k - lo_k)``; a constant public column gets scale 1. The box
never depends on private data, so publishing it costs no privacy.

Points outside the public box: during private attribution they are routed by the partition's
threshold comparisons, which is the same as clamping them into the cube (the reference behaviour).
At prediction time the estimator's ``outside`` option chooses between the same clamping
(``"clamp"``, our default) and the papers' rule of predicting 0 (``"zero"``, LPDT §3.2).
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ldptree._typing import BoolArray, FloatArray
from ldptree._validation import check_matrix, check_real


@attrs.frozen(eq=False)
class RangeScaler:
    """An affine map of the box ``[lo, hi]`` onto ``[0, 1]^d``."""

    lo: FloatArray
    hi: FloatArray

    @classmethod
    def fit(cls, X_public: Any, *, margin: float = 0.0) -> RangeScaler:
        """Estimate the box from public rows ``float[n_q, d]`` (``n_q >= 1``)."""
        X = check_matrix(X_public, "X_public")
        margin = check_real(margin, "margin")
        if margin < 0:
            raise ValueError(f"margin must be >= 0, got {margin}")
        lo, hi = X.min(axis=0), X.max(axis=0)
        with np.errstate(over="ignore", invalid="ignore"):
            pad = margin * (hi - lo)
            box_lo, box_hi = lo - pad, hi + pad
            width = box_hi - box_lo
        if not (np.all(np.isfinite(width)) and np.all(np.isfinite(pad))):
            column = int(np.argmin(np.isfinite(width) & np.isfinite(pad)))
            raise ValueError(
                f"X_public column {column} spans [{float(lo[column])!r}, {float(hi[column])!r}], "
                f"whose width (widened by margin={margin}) overflows float64; rescale the features"
            )
        return cls(lo=box_lo, hi=box_hi)

    @classmethod
    def unit(cls, n_features: int) -> RangeScaler:
        """The identity map: data already live in ``[0, 1]^d`` (the no-public-data convention)."""
        return cls(lo=np.zeros(n_features), hi=np.ones(n_features))

    @property
    def n_features(self) -> int:
        return int(self.lo.shape[0])

    @property
    def scale(self) -> FloatArray:
        width = self.hi - self.lo
        return np.where(width > 0, width, 1.0)

    def transform(self, X: FloatArray) -> FloatArray:
        """Map ``float[n, d]`` into unit-cube coordinates (no clipping)."""
        return (X - self.lo) / self.scale

    def inside(self, X_scaled: FloatArray) -> BoolArray:
        """Rows of already-scaled data lying in the closed unit cube: ``bool[n]``."""
        inside: BoolArray = np.all((X_scaled >= 0.0) & (X_scaled <= 1.0), axis=1)
        return inside
