"""The cells of a fitted tree in the features' original units.

The partition lives in the unit cube: a row ``x`` is scaled to ``z_k = (x_k - lo_k) / s_k`` with
the public box ``[lo, lo + s]`` and routed by ``z_f < t`` (left) or ``z_f >= t`` (right) at each
split. In original units that split is ``x_f < lo_f + t s_f``. A cell is the conjunction of the
splits on its path, so each feature is either unconstrained or bounded by an interval
``[low, high)`` whose ends come from splits (an end without a split is open: with
``outside="clamp"`` a row beyond the public box is routed as if on its edge).

:func:`tree_cells` lists one :class:`CellView` per reported cell: per leaf, or for LPCT-prune per
node the leaves were pruned to (the leaves of one such node share its prediction). Pruning walks
up from each leaf separately, so some leaves inside a node's box may have stopped at another
node: the cell is then its node's box except the parts that belong to the cells in ``others``.
"""

from __future__ import annotations

from typing import Any

import attrs
import numpy as np

from ldptree._typing import FloatArray
from ldptree.inspection._model import TreeModel


@attrs.frozen(eq=False)
class CellView:
    """One reported cell (module docstring).

    ``low[k]`` / ``high[k]``: the bounds of feature ``k`` in original units (``-inf`` / ``inf``
    where no split bounds it); ``leaves``: the partition's leaves in the cell; ``value``: the
    prediction (regression) or the class probabilities (classification); ``label``: the
    predicted class (classification, else ``None``); ``private_count``: the debiased number of
    private holders (``None`` without a private release); ``public``: the public leaf mean
    (regression) or the number of public rows (classification); ``fallback``: predicted from
    public data only; ``others``: the indices of the cells owning leaves inside this cell's box
    (empty unless pruned), whose parts the cell excludes.
    """

    node: int
    leaves: tuple[int, ...]
    others: tuple[int, ...]
    low: FloatArray
    high: FloatArray
    value: Any
    label: Any
    private_count: float | None
    public: float
    fallback: bool

    def bounds(self) -> list[tuple[int, float, float]]:
        """``(feature, low, high)`` for every feature a split constrains."""
        return [
            (k, float(lo), float(hi))
            for k, (lo, hi) in enumerate(zip(self.low, self.high, strict=True))
            if np.isfinite(lo) or np.isfinite(hi)
        ]


def node_bounds(model: TreeModel) -> tuple[FloatArray, FloatArray]:
    """``(low, high)`` ``float[n_nodes, d]``: every node's box from its path's splits, in
    original units, ``-inf`` / ``inf`` where no split bounds a feature."""
    p = model.partition
    low = np.full((p.n_nodes, p.n_features), -np.inf)
    high = np.full((p.n_nodes, p.n_features), np.inf)
    lo, scale = model.scaler.lo, model.scaler.scale
    order = [0]
    for node in order:  # breadth-first over the nodes (public and few), never over rows
        left, right = int(p.left[node]), int(p.right[node])
        if left < 0:
            continue
        f = int(p.feature[node])
        cut = float(lo[f] + float(p.threshold[node]) * scale[f])
        for child in (left, right):
            low[child], high[child] = low[node], high[node]
        high[left, f] = cut
        low[right, f] = cut
        order += [left, right]
    return low, high


def _leaves_below(model: TreeModel) -> dict[int, set[int]]:
    """``{node: the leaves (by leaf id) in its subtree}``."""
    p = model.partition
    below: dict[int, set[int]] = {}
    stack: list[tuple[int, tuple[int, ...]]] = [
        (0, ())
    ]  # (node, its ancestors), depth-first over the (few, public) nodes
    while stack:
        node, path = stack.pop()
        if p.left[node] < 0:
            for owner in (*path, node):
                below.setdefault(owner, set()).add(int(p.leaf_id[node]))
            continue
        stack += [(int(p.left[node]), (*path, node)), (int(p.right[node]), (*path, node))]
    return below


def tree_cells(model: TreeModel) -> list[CellView]:
    """The reported cells of ``model`` in node order, i.e. by leaf id when not pruned (module
    docstring)."""
    low, high = node_bounds(model)
    nodes = sorted({int(n) for n in model.cell_node})
    index = {node: i for i, node in enumerate(nodes)}
    below = _leaves_below(model) if len(nodes) != model.n_leaves else {}
    cells = []
    for node in nodes:
        leaves = np.flatnonzero(model.cell_node == node)
        others = {index[int(model.cell_node[j])] for j in below.get(node, ())} - {index[node]}
        first = int(leaves[0])
        count = None if model.private_count is None else float(model.private_count[leaves].sum())
        if model.task == "regression":
            value: Any = float(model.values[first])
            label: Any = None
            public = float(model.public[first])
        else:
            assert model.classes is not None and model.leaf_class is not None
            value = model.values[first].copy()
            label = model.classes[int(model.leaf_class[first])]
            public = float(model.public[leaves].sum())
        cells.append(
            CellView(
                node=node,
                leaves=tuple(int(j) for j in leaves),
                others=tuple(sorted(others)),
                low=low[node],
                high=high[node],
                value=value,
                label=label,
                private_count=count,
                public=public,
                fallback=bool(model.fallback[first]),
            )
        )
    return cells
