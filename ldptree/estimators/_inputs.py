"""A fit's inputs: the private and public data checked together, and what the public side
derives from public data alone (the scaling box, the label range).

``check_fit_data`` validates private and public inputs as arrays; ``check_fit_rows`` leaves the
private sample to be read chunk by chunk (:class:`~ldptree.rounds.PrivateRows`: memory maps,
iterables of chunks), never copied as a whole.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ldptree._typing import FloatArray
from ldptree._validation import check_label_bound, check_matrix, check_vector
from ldptree.partitions._builder import MAX_DATA_FREE_DEPTH
from ldptree.partitions._scaling import RangeScaler
from ldptree.rounds._rows import LabelCheck, PrivateRows, private_rows


def check_fit_data(
    X: Any, y: Any, X_public: Any, y_public: Any, *, check_labels: LabelCheck = check_vector
) -> tuple[FloatArray, Any, FloatArray | None, Any]:
    """Validated ``(X, y, X_public, y_public)``; no public data gives ``(.., None, None)``.

    ``check_labels(y, name, n=rows)`` validates both label vectors (real labels by default).
    """
    X_arr = check_matrix(X, "X")
    y_arr = check_labels(y, "y", n=X_arr.shape[0])
    return (X_arr, y_arr, *check_public_data(X_public, y_public, X_arr.shape[1], check_labels))


def check_fit_rows(
    X: Any, y: Any, X_public: Any, y_public: Any, *, check_labels: LabelCheck = check_vector
) -> tuple[PrivateRows, FloatArray | None, Any]:
    """As :func:`check_fit_data`, but the private sample is read chunk by chunk
    (:class:`~ldptree.rounds.PrivateRows`: arrays, memory maps or an iterable of
    ``(X_chunk, y_chunk)`` pairs with ``y=None``), never copied as a whole."""
    rows = private_rows(X, y, check_labels=check_labels)
    return (rows, *check_public_data(X_public, y_public, rows.n_features, check_labels))


def check_public_data(
    X_public: Any, y_public: Any, n_features: int, check_labels: LabelCheck
) -> tuple[FloatArray | None, Any]:
    """Validated ``(X_public, y_public)`` with ``n_features`` columns; ``(None, None)`` if none."""
    if X_public is None:
        if y_public is not None:
            raise ValueError("y_public was given without X_public; pass both or neither")
        return None, None
    Xq = check_matrix(X_public, "X_public", allow_empty=True)
    if Xq.shape[1] != n_features:
        raise ValueError(
            f"X_public has {Xq.shape[1]} features but X has {n_features}; they must match"
        )
    if Xq.shape[0] == 0:
        if y_public is not None:
            raise ValueError(
                "X_public is empty but y_public was given; pass X_public=None and y_public=None "
                "to fit without public data"
            )
        return None, None
    yq = None if y_public is None else check_labels(y_public, "y_public", n=Xq.shape[0])
    return Xq, yq


def check_data_free_depth(max_depth: Any, mechanism_for: Callable[[int], Any], name: Any) -> None:
    """Without public data the partition splits every node down to ``max_depth``: refuse, before
    growing it (minutes at depth 20), a depth whose ``2**max_depth`` cells the mechanism
    ``mechanism_for(n_cells)`` cannot serve, naming ``max_depth``. Depths the partitioner itself
    refuses (``> MAX_DATA_FREE_DEPTH``) and non-integers are left to its message."""
    if isinstance(max_depth, bool) or not isinstance(max_depth, int):
        return
    if not 0 <= max_depth <= MAX_DATA_FREE_DEPTH:
        return
    try:
        mechanism_for(2**max_depth)
    except ValueError as err:
        raise ValueError(
            f"max_depth={max_depth} without public data makes a partition of 2**{max_depth} = "
            f"{2**max_depth:,} cells, which mechanism={name!r} cannot serve ({err}); pass public "
            "data (X_public) or a smaller max_depth"
        ) from None


def fit_scaler(X_public: FloatArray | None, n_features: int, margin: float) -> RangeScaler:
    """Public min-max box, or the unit cube when there is no public data."""
    if X_public is None:
        return RangeScaler.unit(n_features)
    return RangeScaler.fit(X_public, margin=margin)


def resolve_label_bound(label_bound: Any, y_public: FloatArray | None) -> tuple[float, float]:
    """The label range ``(lo, hi)``: ``label_bound`` if given, else the public labels' range;
    never private labels (``ValueError`` when neither can set it). Either way it is rounded
    outward to float32 and must satisfy :func:`~ldptree._validation.check_label_bound`'s limits
    (``|lo|, |hi| <= 2^64``, ``hi - lo >= 2^-64``)."""
    if label_bound is not None:
        return check_label_bound(label_bound, "label_bound")
    if y_public is None:
        raise ValueError(
            "label_bound is required when no public labels are given: pass label_bound=M or "
            "(lo, hi), or y_public (the bound never comes from private labels)"
        )
    lo, hi = float(y_public.min()), float(y_public.max())
    if not lo < hi:
        raise ValueError(
            f"y_public is constant ({lo}), so it cannot set the label range; pass label_bound"
        )
    return check_label_bound((lo, hi), "label_bound (from the range of y_public)")
