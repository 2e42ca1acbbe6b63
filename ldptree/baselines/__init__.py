"""Competitor baselines built from ldptree's parts (``docs/baselines.md``)."""

from ldptree.baselines._deconv import DECONVRegressor
from ldptree.baselines._grid import MAX_CELLS, GridPartitioner, check_grid_size, uniform_grid
from ldptree.baselines._histogram import APHISTRegressor, PHISTClassifier, PHISTRegressor
from ldptree.baselines._pglm import GaussianGLMStatistics, PGLMClassifier
from ldptree.baselines._privunit import PrivUnitG
from ldptree.baselines._psgd import PSGDClassifier
from ldptree.baselines._reference import NON_PRIVATE, CTClassifier, DTRegressor, NonPrivate

__all__ = [
    "MAX_CELLS",
    "NON_PRIVATE",
    "APHISTRegressor",
    "CTClassifier",
    "DECONVRegressor",
    "DTRegressor",
    "GaussianGLMStatistics",
    "GridPartitioner",
    "NonPrivate",
    "PGLMClassifier",
    "PHISTClassifier",
    "PHISTRegressor",
    "PSGDClassifier",
    "PrivUnitG",
    "check_grid_size",
    "uniform_grid",
]
