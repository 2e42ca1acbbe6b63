"""Reports the holders already released, as a source of the round: a collector's store, report
files, or (on a cluster) futures of reports.

The curator's side needs nothing but the reports: the engine folds them into the round's
aggregator with ``update``, exactly as it folds the reports it draws itself, so estimates from a
deployment's collector, from files and from the in-process round agree bit for bit on the same
reports.
"""

from __future__ import annotations

import os
from typing import Any

import attrs
import jax
import numpy as np


def save_reports(path: str | os.PathLike[str], reports: Any) -> None:
    """Write a pytree of report arrays to ``path`` (``.npz``, leaves in pytree order)."""
    leaves = jax.tree_util.tree_leaves(reports)
    if not leaves:
        raise ValueError("reports must be a non-empty pytree of arrays")
    np.savez(path, *[np.asarray(leaf) for leaf in leaves])


def load_reports(path: str | os.PathLike[str], like: Any) -> Any:
    """Reports written by :func:`save_reports`, rebuilt with the pytree structure of ``like``
    (any report of the same mechanism, e.g. one holder's)."""
    treedef = jax.tree_util.tree_structure(like)
    n_leaves = len(jax.tree_util.tree_leaves(like))
    with np.load(path) as data:
        if len(data.files) != n_leaves:
            raise ValueError(
                f"{os.fspath(path)} holds {len(data.files)} arrays but a report of this mechanism "
                f"has {n_leaves}"
            )
        leaves = [data[f"arr_{i}"] for i in range(n_leaves)]
    return jax.tree_util.tree_unflatten(treedef, leaves)


def is_file(part: Any) -> bool:
    """Whether ``part`` names a report file (a path) rather than holding reports."""
    return isinstance(part, str | os.PathLike)


def _parts(parts: Any) -> Any:
    """A list or tuple of parts as a tuple; any other iterable (e.g. a store's batches, read one
    at a time) as it is."""
    return tuple(parts) if isinstance(parts, list | tuple) else parts


@attrs.frozen(eq=False)
class Reports:
    """Released reports in parts, in holder order, each folded with the aggregator's ``update``:
    report pytrees (as ``mechanism.privatize`` returns them), paths of files written by
    :func:`save_reports` (``like``, any report of the mechanism, is then required) or, for the
    :class:`~ldptree.rounds.Dask` executor, futures (``client.scatter([reports])[0]``).

    ``parts`` given as a list or tuple can be read by several rounds; any other iterable (a
    generator of batches streamed from a store, so that memory holds one batch) is read once,
    by one round."""

    parts: Any = attrs.field(converter=_parts)
    like: Any = None

    def __attrs_post_init__(self) -> None:
        if not isinstance(self.parts, tuple):
            return  # streamed: read (and checked) as it is folded
        if not self.parts:
            raise ValueError("parts is empty; pass at least one part of reports")
        if self.like is None and any(is_file(part) for part in self.parts):
            raise ValueError("like (a report of the mechanism) is required to read report files")

    def load(self, part: Any) -> Any:
        """The reports of one part (a file is read here)."""
        return load_reports(part, self.like) if is_file(part) else part
