"""Test metrics and the per-holder losses private tuning releases.

* regression: ``MSE = (1/n) sum_i (f(X_i) - Y_i)^2`` (lower is better); a validation holder's
  loss is ``(f(X_i) - Y_i)^2`` clipped to ``[0, B]`` with ``B = (hi - lo)^2 = 4 M^2`` for the
  public label range ``[lo, hi]`` (the label bound the estimators use);
* classification: accuracy ``(1/n) sum_i 1{f(X_i) = Y_i}`` (higher is better); the loss is the
  0/1 error, ``B = 1``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray


def _squared(pred: Any, y: Any) -> FloatArray:
    diff = np.asarray(pred, dtype=np.float64) - np.asarray(y, dtype=np.float64)
    out: FloatArray = diff**2
    return out


def _zero_one(pred: Any, y: Any) -> FloatArray:
    out: FloatArray = (np.asarray(pred) != np.asarray(y)).astype(np.float64)
    return out


def _range_squared(y_public: Any) -> float:
    y = np.asarray(y_public, dtype=np.float64)
    return float((y.max() - y.min()) ** 2)


def _one(y_public: Any) -> float:
    del y_public
    return 1.0


@attrs.frozen
class Metric:
    """A test metric with its pointwise loss and the public bound ``B`` on that loss."""

    name: str
    higher_is_better: bool
    loss: Callable[[Any, Any], FloatArray]
    loss_bound: Callable[[Any], float]

    def score(self, pred: Any, y: Any) -> float:
        losses = self.loss(pred, y)
        return float(1.0 - losses.mean()) if self.higher_is_better else float(losses.mean())


MSE = Metric("mse", higher_is_better=False, loss=_squared, loss_bound=_range_squared)
ACCURACY = Metric("accuracy", higher_is_better=True, loss=_zero_one, loss_bound=_one)
METRICS = {"regression": MSE, "classification": ACCURACY}
