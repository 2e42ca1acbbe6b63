"""A fitted tree as a picture: its cells as intervals or boxes in the features' original units.

* one feature (``d = 1``, or ``features=(k,)``): each cell is a horizontal segment over its
  interval at its prediction (regression: the leaf value; classification: the probability of
  ``classes[-1]``), drawn dashed where the cell fell back to public values;
* two features (``features=(k, m)``, default the first two): each cell is a box coloured by its
  prediction, hatched where it fell back to public values.

With more features than drawn, the picture is the slice through the others at ``at`` (one value
per feature in original units; default the centre of the public box): the cells containing the
slice tile the drawn plane exactly. The plotted range is the public feature box.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ldptree._typing import BoolArray, FloatArray
from ldptree.inspection._cells import node_bounds
from ldptree.inspection._model import TreeModel, axis_names, tree_model


def _axes(ax: Any) -> Any:
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(6, 4))[1]


def _check_features(features: Any, d: int) -> tuple[int, ...]:
    chosen = tuple(range(min(d, 2))) if features is None else tuple(features)
    if not 1 <= len(chosen) <= 2 or len(set(chosen)) != len(chosen):
        raise ValueError(f"features must name one or two distinct features, got {features!r}")
    for k in chosen:
        if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 0 <= k < d:
            raise ValueError(f"features must be feature indices in [0, {d}), got {features!r}")
    return tuple(int(k) for k in chosen)


def _slice_point(model: TreeModel, at: Any) -> FloatArray:
    lo, scale = model.scaler.lo, model.scaler.scale
    point: FloatArray = (
        lo + scale / 2 if at is None else np.asarray(at, dtype=np.float64).reshape(-1)
    )
    if point.shape != (model.n_features,) or not np.all(np.isfinite(point)):
        raise ValueError(
            f"at must hold one finite value per feature ({model.n_features}), got {at!r}"
        )
    return point


def _in_slice(
    model: TreeModel,
    features: tuple[int, ...],
    point: FloatArray,
    low: FloatArray,
    high: FloatArray,
) -> BoolArray:
    """Which nodes' boxes (``low``, ``high``) contain the slice through the features not drawn,
    fixed at ``point``."""
    keep = np.ones(low.shape[0], dtype=bool)
    for k in set(range(model.n_features)) - set(features):
        keep &= (low[:, k] <= point[k]) & (point[k] < high[:, k])
    return keep


def plot_tree(
    model: Any, *, features: Any = None, at: Any = None, feature_names: Any = None, ax: Any = None
) -> Any:
    """Draw a fitted LPDT / LPCT / LPCT-prune estimator or
    :class:`~ldptree.inspection.TreeModel` (module docstring) on ``ax`` (a new figure if
    ``None``) and return the matplotlib axes. ``feature_names`` label the axes (default: the
    names the model was fitted with, else ``x0, x1, ...``)."""
    tree = tree_model(model)
    chosen = _check_features(features, tree.n_features)
    names = axis_names(tree, feature_names)
    point = _slice_point(tree, at)
    others = [k for k in range(tree.n_features) if k not in chosen]
    where = " at " + ", ".join(f"{names[k]} = {point[k]:.4g}" for k in others) if others else ""
    # drawn leaf by leaf (exact also for LPCT-prune, whose cells need not be boxes); the leaves
    # of one pruned cell share its prediction
    all_low, all_high = node_bounds(tree)
    leaves = tree.partition.leaf_nodes
    keep = _in_slice(tree, chosen, point, all_low[leaves], all_high[leaves])
    low, high = all_low[leaves[keep]], all_high[leaves[keep]]
    fallback = tree.fallback[keep]
    if tree.task == "regression":
        values, what = tree.values[keep], "prediction"
    else:
        assert tree.classes is not None
        values, what = tree.values[keep, -1], f"P(class {tree.classes[-1]})"
    n_cells = len(set(tree.cell_node[keep].tolist()))
    pruned = len(set(tree.cell_node.tolist())) != tree.n_leaves
    box_lo = tree.scaler.lo
    box_hi = tree.scaler.lo + tree.scaler.scale
    low, high = np.maximum(low, box_lo), np.minimum(high, box_hi)
    ax = _axes(ax)
    if len(chosen) == 1:
        (k,) = chosen
        for j in range(values.shape[0]):
            style = "--" if fallback[j] else "-"
            ax.plot([low[j, k], high[j, k]], [values[j]] * 2, style, color="tab:red", lw=2)
        ax.set_xlim(box_lo[k], box_hi[k])
        ax.set_xlabel(names[k])
        ax.set_ylabel(what)
        ax.set_title(f"{tree.estimator}: {n_cells} cells{where} (dashed: public only)")
        return ax
    import matplotlib as mpl
    from matplotlib.patches import Rectangle

    k, m = chosen
    norm = mpl.colors.Normalize(float(values.min()), float(values.max()))
    cmap = mpl.colormaps["viridis"]
    for j in range(values.shape[0]):
        color = cmap(norm(values[j]))
        ax.add_patch(
            Rectangle(
                (low[j, k], low[j, m]),
                high[j, k] - low[j, k],
                high[j, m] - low[j, m],
                facecolor=color,
                edgecolor=color if pruned else "white",  # a pruned cell's leaves look as one
                hatch="//" if fallback[j] else None,
            )
        )
    ax.set_xlim(box_lo[k], box_hi[k])
    ax.set_ylim(box_lo[m], box_hi[m])
    ax.set_xlabel(names[k])
    ax.set_ylabel(names[m])
    ax.figure.colorbar(mpl.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax, label=what)
    ax.set_title(f"{tree.estimator}: {n_cells} cells{where} (hatched: public only)")
    return ax
