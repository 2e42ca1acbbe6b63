"""The random max-edge rule (LPCT-R; spec §2.5, reference ``MaxEdgeRandomSplitter``).

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
from itertools import count
from typing import Any

import attrs
import jax

from ldptree._typing import FloatArray, PRNGKey
from ldptree._validation import as_key
from ldptree.partitions._builder import TreeRule
from ldptree.partitions._max_edge import longest_edges
from ldptree.partitions._partition import Partition


@attrs.frozen
class RandomMaxEdgePartitioner(TreeRule):
    """Split the midpoint of a uniformly random longest edge (LPCT-R).

    Parameters
    ----------
    max_depth, min_samples_split, min_samples_leaf:
        Stopping rules, see :class:`~ldptree.partitions.TreeRule`.
    """

    def fit(self, X_public: Any, y_public: Any = None, *, key: PRNGKey | None = None) -> Partition:
        """Grow the partition on public rows scaled to ``[0, 1]^d``; ``key`` is required.

        ``y_public`` only enters the stopping rule through distinct ``[x | y]`` rows, as in the
        reference builder.
        """
        if key is None:
            raise TypeError(
                "key must be a JAX PRNG key: RandomMaxEdgePartitioner is random, and a fixed key "
                "makes its partition reproducible"
            )
        base = as_key(key, "key")
        X, y = self._public_data(X_public, y_public, None)
        proposal = count()

        def propose(
            X_node: FloatArray,
            y_node: FloatArray | None,
            lower: FloatArray,
            upper: FloatArray,
            depth: int,
        ) -> Sequence[tuple[int, float]]:
            longest, mids = longest_edges(lower, upper)
            pick = int(
                jax.random.randint(
                    jax.random.fold_in(base, next(proposal)), (), 0, longest.shape[0]
                )
            )
            return [(int(longest[pick]), float(mids[pick]))]

        return self._grow(X, y, propose)
