"""ldptree: locally differentially private tree estimators that use a small public sample.

Each data holder privatizes its own record before it leaves the holder; a curator grows a tree
partition on public data, every holder reports its (cell, label) once through an eps-LDP
mechanism, and the curator aggregates the reports into per-cell estimates. Three protocols make
that one round, and every estimator is a composition of them:

* :class:`Partitioner` (public data only) -> a :class:`Partition` of the feature box;
* :class:`Mechanism` (the only code that sees private data) -> one eps-LDP report per holder;
* :class:`Aggregator` -> exact streaming sums, read out as :class:`CellEstimates`.

Where to start:

* estimators: :class:`LPDTRegressor` (the LPDT paper), :class:`LPCTClassifier` and
  :class:`LPCTPrunedClassifier` (the LPCT paper); scikit-learn compatible, public data passed as
  ``fit(X, y, X_public=..., y_public=...)``;
* ``ldptree.ensembles``: :class:`~ldptree.ensembles.LPDTForestRegressor` and
  :class:`~ldptree.ensembles.LPCTForestClassifier`, forests of private trees;
* ``ldptree.preprocessing``: ``PublicPipeline``, preprocessing fitted on public data only;
* ``ldptree.mechanisms`` / ``partitions`` / ``rounds``: the holders', public and curator's side;
* ``ldptree.accounting``: privacy spends, ledgers and exact LDP verification;
* ``ldptree.testing``: ``assert_ldp`` / ``assert_unbiased`` and Hypothesis strategies for your
  own mechanisms' tests;
* ``ldptree.inspection``: print, plot, save and load a fitted tree (``export_text``,
  ``plot_tree``, ``privacy_summary``, ``save_model`` / ``load_model``);
* ``ldptree.baselines``: the papers' competitors; ``ldptree.datasets``: simulated and real
  data; ``ldptree.experiments``: the papers' experiments and TOML-configured runs;
* ``ldptree.distributed``: rounds on a Dask cluster (``dask`` extra).

Subpackages are imported on first attribute access (``ldptree.experiments`` works after
``import ldptree``).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ldptree._host_cores import use_host_cores
from ldptree._jax_cache import enable_compilation_cache
from ldptree._validation import NotApplicableError, NotFittedError
from ldptree.estimators import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree.partitions import Partition
from ldptree.protocols import Aggregator, CellEstimates, Mechanism, Partitioner

if TYPE_CHECKING:
    # redundant aliases: re-exported names for type checkers (imported lazily at run time)
    from ldptree import accounting as accounting
    from ldptree import baselines as baselines
    from ldptree import datasets as datasets
    from ldptree import distributed as distributed
    from ldptree import ensembles as ensembles
    from ldptree import estimators as estimators
    from ldptree import experiments as experiments
    from ldptree import inspection as inspection
    from ldptree import mechanisms as mechanisms
    from ldptree import partitions as partitions
    from ldptree import preprocessing as preprocessing
    from ldptree import rounds as rounds
    from ldptree import testing as testing

__version__ = "0.1.0"

_SUBPACKAGES = frozenset(
    {
        "accounting",
        "baselines",
        "datasets",
        "distributed",
        "ensembles",
        "estimators",
        "experiments",
        "inspection",
        "mechanisms",
        "partitions",
        "preprocessing",
        "rounds",
        "testing",
    }
)


def __getattr__(name: str) -> Any:
    """Import a subpackage on first access (``ldptree.datasets`` after ``import ldptree``)."""
    if name in _SUBPACKAGES:
        return importlib.import_module(f"ldptree.{name}")
    raise AttributeError(f"module 'ldptree' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | _SUBPACKAGES)


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
    "use_host_cores",
]
