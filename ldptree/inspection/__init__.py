"""Reading, drawing and saving fitted trees.

* :func:`export_text` prints a fitted :class:`~ldptree.LPDTRegressor`,
  :class:`~ldptree.LPCTClassifier` or :class:`~ldptree.LPCTPrunedClassifier` cell by cell in the
  features' original units (the public scaling undone): bounds, prediction, debiased private
  count, public counterpart, and which cells fell back to public values; then its privacy;
* :func:`plot_tree` draws the cells as intervals (one feature) or boxes (two features);
* :func:`privacy_summary` prints epsilon per holder, the mechanism, its certificate and the
  ledger;
* :func:`save_model` / :func:`load_model` write and read a versioned JSON file from which
  loading executes no code; the loaded :class:`TreeModel` predicts bit for bit as the estimator.
  A fitted estimator also pickles (``pickle.dumps(model)``), for Python-only use with the same
  ldptree version (unpickling runs code: only load pickles you trust).
"""

from ldptree.inspection._cells import CellView, tree_cells
from ldptree.inspection._json import FORMAT, load_model, model_from_json, model_to_json, save_model
from ldptree.inspection._model import TreeModel, tree_model
from ldptree.inspection._plot import plot_tree
from ldptree.inspection._privacy import PrivacyRecord
from ldptree.inspection._text import export_text, privacy_summary

__all__ = [
    "FORMAT",
    "CellView",
    "PrivacyRecord",
    "TreeModel",
    "export_text",
    "load_model",
    "model_from_json",
    "model_to_json",
    "plot_tree",
    "privacy_summary",
    "save_model",
    "tree_cells",
    "tree_model",
]
