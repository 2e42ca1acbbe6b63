"""ldptree: locally differentially private tree estimators with public data."""

from ldptree._jax_cache import enable_compilation_cache
from ldptree._validation import NotApplicableError, NotFittedError
from ldptree.estimators import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree.partitions import Partition
from ldptree.protocols import Aggregator, CellEstimates, Mechanism, Partitioner

__version__ = "0.1.0"

__all__ = [
    "Aggregator",
    "CellEstimates",
    "LPCTClassifier",
    "LPCTPrunedClassifier",
    "LPDTRegressor",
    "Mechanism",
    "NotApplicableError",
    "NotFittedError",
    "Partition",
    "Partitioner",
    "__version__",
    "enable_compilation_cache",
]
