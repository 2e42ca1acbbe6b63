"""A fitted tree as text: one line per cell, in the features' original units.

``export_text(model)`` prints a header (estimator, number of cells, the public feature box and
what happens outside it), one line per reported cell (:func:`~ldptree.inspection.tree_cells`):
its bounds as ``low <= name < high`` for the features a split constrains, the prediction, the
debiased private count, the public counterpart, and ``public only`` where the cell fell back to
public values; then the privacy summary (:meth:`~ldptree.inspection.PrivacyRecord.summary`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldptree.inspection._cells import CellView, tree_cells
from ldptree.inspection._model import TreeModel, axis_names, tree_model


def _number(value: float, decimals: int) -> str:
    return f"{value:.{decimals}g}"


def _condition(cell: CellView, names: tuple[str, ...], decimals: int) -> str:
    parts = []
    for k, low, high in cell.bounds():
        name = names[k]
        if np.isfinite(low) and np.isfinite(high):
            parts.append(f"{_number(low, decimals)} <= {name} < {_number(high, decimals)}")
        elif np.isfinite(low):
            parts.append(f"{name} >= {_number(low, decimals)}")
        else:
            parts.append(f"{name} < {_number(high, decimals)}")
    return ", ".join(parts) or "every point"


def _prediction(cell: CellView, model: TreeModel, decimals: int) -> str:
    if model.task == "regression":
        return f"value {_number(cell.value, decimals)}"
    assert model.classes is not None
    probabilities = ", ".join(
        f"{c}: {_number(p, decimals)}" for c, p in zip(model.classes, cell.value, strict=True)
    )
    return f"class {cell.label} (p = {probabilities})"


def _counts(cell: CellView, model: TreeModel, decimals: int) -> str:
    private = (
        "no private reports"
        if cell.private_count is None
        else f"debiased private count {_number(cell.private_count, decimals)}"
    )
    public = (
        f"public mean {_number(cell.public, decimals)}"
        if model.task == "regression"
        else f"public rows {cell.public:g}"
    )
    return f"{private}, {public}"


def export_text(
    model: Any, *, feature_names: Any = None, decimals: int = 4, privacy: bool = True
) -> str:
    """The text view of a fitted LPDT / LPCT / LPCT-prune estimator or
    :class:`~ldptree.inspection.TreeModel` (module docstring).

    ``feature_names``: one name per feature (default: the names the model was fitted with, else
    ``x0, x1, ...``); ``decimals``: significant digits; ``privacy``: append the privacy summary.
    """
    tree = tree_model(model)
    names = axis_names(tree, feature_names)
    if not isinstance(decimals, int) or isinstance(decimals, bool) or decimals < 1:
        raise ValueError(f"decimals must be an integer >= 1, got {decimals!r}")
    cells = tree_cells(tree)
    box = ", ".join(
        f"{name} in [{_number(lo, decimals)}, {_number(lo + s, decimals)}]"
        for name, lo, s in zip(names, tree.scaler.lo, tree.scaler.scale, strict=True)
    )
    beyond = (
        "rows outside it go to the nearest cell"
        if tree.outside == "clamp"
        else "rows outside it predict 0 (regression) or the first class"
    )
    unit = "cells" if len(cells) != 1 else "cell"
    lines = [
        f"{tree.estimator}: {len(cells)} {unit} (partition depth {tree.partition.depth}), "
        "bounds in original units",
        f"public feature box: {box}; {beyond}",
    ]
    if len(cells) != tree.n_leaves:
        lines.append(f"{tree.n_leaves} leaves pruned to {len(cells)} cells")
    width = len(str(len(cells) - 1))
    for index, cell in enumerate(cells):
        note = "  [public only]" if cell.fallback else ""
        leaves = (
            f"{len(cell.leaves)} leaf" if len(cell.leaves) == 1 else f"{len(cell.leaves)} leaves"
        )
        pruned = "" if len(cells) == tree.n_leaves else f" (node {cell.node}, {leaves})"
        where = _condition(cell, names, decimals)
        if cell.others:
            where += ", outside cells " + ", ".join(map(str, cell.others))
        lines.append(
            f"cell {index:>{width}}{pruned}: {where} -> "
            f"{_prediction(cell, tree, decimals)}; {_counts(cell, tree, decimals)}{note}"
        )
    if privacy:
        lines += ["", "privacy: " + tree.privacy.summary()]
    return "\n".join(lines)


def privacy_summary(model: Any) -> str:
    """The privacy of a fitted estimator or :class:`~ldptree.inspection.TreeModel`: epsilon
    per holder (and its delta), how it splits, the mechanism, the certificate and the ledger."""
    return tree_model(model).privacy.summary()
