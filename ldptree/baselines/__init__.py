"""Competitor baselines built from ldptree's parts (issue #5; ``docs/baselines.md``)."""

from ldptree.baselines._grid import MAX_CELLS, check_grid_size, uniform_grid
from ldptree.baselines._histogram import APHISTRegressor, PHISTClassifier, PHISTRegressor

__all__ = [
    "MAX_CELLS",
    "APHISTRegressor",
    "PHISTClassifier",
    "PHISTRegressor",
    "check_grid_size",
    "uniform_grid",
]
