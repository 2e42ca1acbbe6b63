"""The random max-edge rule (LPCT-R; the reference code's ``MaxEdgeRandomSplitter``).

A cell is split at the midpoint of one of its longest edges chosen uniformly at random; labels are
not used. Cells are the same dyadic boxes as for the max-edge rule (LPDT Lemma C.6), so the
approximation guarantees of the papers hold, but the choice among tied edges ignores the public
labels. The stopping rules (``min_samples_split``, ``min_samples_leaf``) still read public counts.

Randomness: the ``i``-th proposal made by the builder (nodes are visited depth first, left child
first) draws its edge with ``fold_in(key, i)``, so the partition is a deterministic function of the
public data, the parameters and ``key``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import attrs
import jax
import numpy as np

from ldptree._jax_cache import kernel
from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import as_key
from ldptree.partitions._builder import Node, TreeRule
from ldptree.partitions._max_edge import longest_edges


@attrs.frozen
class RandomMaxEdgePartitioner(TreeRule):
    """Split the midpoint of a uniformly random longest edge (LPCT-R); ``fit`` needs ``key``.

    ``max_depth``, ``min_samples_split`` and ``min_samples_leaf`` are the stopping rules of
    :class:`~ldptree.partitions.TreeRule`. ``y_public`` only enters them (through distinct
    ``[x | y]`` rows), as in the reference builder.
    """

    deterministic: ClassVar[bool] = False

    def _check_inputs(self, X: FloatArray, y: FloatArray | None, key: PRNGKey | None) -> None:
        if key is None:
            raise TypeError(
                "key must be a JAX PRNG key: RandomMaxEdgePartitioner is random, and a fixed key "
                "makes its partition reproducible"
            )

    def _propose(self, node: Node, key: PRNGKey | None) -> Sequence[tuple[int, float]]:
        longest, mids = longest_edges(node.lower, node.upper)
        pick = int(jax.random.randint(as_key(key, "key"), (), 0, longest.shape[0]))
        return [(int(longest[pick]), float(mids[pick]))]

    def _propose_with_index(
        self, node: Node, key: PRNGKey, index: int
    ) -> Sequence[tuple[int, float]]:
        # The same draw as ``_propose(node, fold_in(key, index))``, in one compiled call instead
        # of several eager JAX dispatches per node (most of a small growth; a test compares).
        longest, mids = longest_edges(node.lower, node.upper)
        pick = int(_draw_edge(as_key(key, "key"), np.uint32(index), np.int32(longest.shape[0])))
        return [(int(longest[pick]), float(mids[pick]))]


@kernel
def _draw_edge(key: PRNGKey, index: jax.Array, n_longest: jax.Array) -> jax.Array:
    """``randint(fold_in(key, index), (), 0, n_longest)``: the edge of the ``index``-th node."""
    return jax.random.randint(jax.random.fold_in(key, index), (), 0, n_longest)
