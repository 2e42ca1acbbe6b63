"""The fast builder grows exactly the partitions of a plain transcription of the reference rules.

The transcription below is the straightforward per-node algorithm (every node re-sorts its
points, masks its rows, counts distinct rows with ``np.unique``): the builder's inherited sorted
views, hashed row ids and lean impurity sums must not change a single node, tie-break or
threshold bit. Partitions are compared through their exact JSON.
"""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

from ldptree.partitions import (
    CRITERIA,
    CartPartitioner,
    MaxEdgePartitioner,
    Partition,
    RandomMaxEdgePartitioner,
)
from ldptree.partitions._builder import distinct_row_ids, rank_candidates, stable_argsort_rows
from ldptree.partitions._cart import sorted_quantiles


def _impurity(name: str, y: np.ndarray) -> float:
    """``m I(y)`` straight from the per-point statistics (summed row after row)."""
    if y.size == 0:
        return 0.0
    criterion = CRITERIA[name]
    return float(criterion.from_stats(np.ascontiguousarray(criterion.stats(y)).sum(axis=0)))


def _sweep(name: str, x: np.ndarray, y: np.ndarray, thresholds: np.ndarray) -> np.ndarray:
    """Gains of ``{x < t}`` by one sort and one cumulative sum (the reference's sweep)."""
    criterion = CRITERIA[name]
    order = np.argsort(x, kind="stable")
    stats = criterion.stats(y)[order]
    cumulative = np.vstack([np.zeros((1, stats.shape[1])), np.cumsum(stats, axis=0)])
    left = cumulative[np.searchsorted(x[order], thresholds, side="left")]
    right = cumulative[-1] - left
    parent = criterion.from_stats(cumulative[-1])
    gains: np.ndarray = (
        parent - criterion.from_stats(left) - criterion.from_stats(right)
    ) / y.shape[0]
    return gains


def _propose(rule, X, y, lower, upper, key):
    width = upper - lower
    longest = np.flatnonzero(width == width.max())
    mids = (lower[longest] + upper[longest]) / 2.0
    if isinstance(rule, RandomMaxEdgePartitioner):
        pick = int(jax.random.randint(key, (), 0, longest.shape[0]))
        return [(int(longest[pick]), float(mids[pick]))]
    if isinstance(rule, MaxEdgePartitioner):
        deltas = np.zeros(longest.shape[0])
        if y is not None and y.shape[0]:
            parent = _impurity(rule.criterion, y)
            for i, (k, t) in enumerate(zip(longest, mids, strict=True)):
                go = X[:, k] < t
                children = _impurity(rule.criterion, y[go]) + _impurity(rule.criterion, y[~go])
                deltas[i] = (parent - children) / y.shape[0]
        return [(int(longest[i]), float(mids[i])) for i in rank_candidates(deltas, rule.threshold)]
    if y is None or y.shape[0] == 0:
        return []
    deltas, split_at = np.zeros(X.shape[1]), np.full(X.shape[1], np.nan)
    for k in range(X.shape[1]):
        unique = np.unique(X[:, k])
        if rule.thresholds == "exact":
            thresholds = (unique[:-1] + unique[1:]) / 2.0
        else:
            levels = (2.0 * np.arange(rule.search_number) + 1.0) / (2.0 * rule.search_number)
            thresholds = np.unique(np.quantile(unique, levels))
        if thresholds.size == 0:
            continue
        gains = _sweep(rule.criterion, X[:, k], y, thresholds)
        best = int(np.argmax(gains))
        if gains[best] > 0.0 and gains[best] >= rule.threshold:
            deltas[k], split_at[k] = gains[best], thresholds[best]
    ranked = rank_candidates(deltas, rule.threshold)
    return [(k, float(split_at[k])) for k in ranked if not np.isnan(split_at[k])]


def _reference_fit(rule, X, y, key) -> Partition:
    """Depth first, left child first; one ``fold_in(key, i)`` per proposal, in that order."""
    n, d = X.shape
    feature, threshold, left, right = [-1], [np.nan], [-1], [-1]
    lower, upper = [np.zeros(d)], [np.ones(d)]
    stack, proposals = [(0, np.arange(n), 0)], itertools.count()
    while stack:
        node, rows, depth = stack.pop()
        Xn, yn = X[rows], None if y is None else y[rows]
        if depth >= rule.max_depth:
            continue
        table = Xn if yn is None else np.column_stack([Xn, yn])
        if n and np.unique(table, axis=0).shape[0] <= rule.min_samples_split:
            continue
        node_key = None if key is None else jax.random.fold_in(key, next(proposals))
        for f, t in _propose(rule, Xn, yn, lower[node], upper[node], node_key):
            go = Xn[:, f] < t
            if n and min(go.sum(), (~go).sum()) < rule.min_samples_leaf:
                continue
            ids = (len(feature), len(feature) + 1)
            feature[node], threshold[node], (left[node], right[node]) = f, t, ids
            lo_right, up_left = lower[node].copy(), upper[node].copy()
            up_left[f] = lo_right[f] = t
            feature += [-1, -1]
            threshold += [np.nan, np.nan]
            left += [-1, -1]
            right += [-1, -1]
            lower += [lower[node], lo_right]
            upper += [up_left, upper[node]]
            stack += [(ids[1], rows[~go], depth + 1), (ids[0], rows[go], depth + 1)]
            break
    return Partition.from_arrays(
        feature=feature,
        threshold=threshold,
        left=left,
        right=right,
        lower=np.asarray(lower),
        upper=np.asarray(upper),
    )


def _dataset(rng: np.random.Generator, n: int, d: int, kind: str):
    if kind == "grid":  # many tied values and duplicate rows
        X = rng.integers(0, 4, (n, d)) / 3.0
    elif kind == "copies":  # half the rows are one row; a duplicated feature
        X = rng.uniform(size=(n, d))
        X[: n // 2] = X[:1]
        X[:, -1] = X[:, 0]
    else:
        X = rng.uniform(size=(n, d))
    return X


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.slow
def test_partitions_equal_the_transcription(seed: int) -> None:
    rng = np.random.default_rng(seed)
    key = jax.random.key(seed)
    for n, kind in itertools.product((0, 7, 160), ("uniform", "grid", "copies")):
        d = int(rng.integers(1, 5))
        X = _dataset(rng, n, d, kind)
        labels = {
            "normal": rng.normal(size=n),
            "binary": rng.integers(0, 2, n).astype(float),  # exact ties between gains
            "classes": rng.integers(0, 9, n).astype(float),  # 9 classes: pairwise sums in I
        }
        depth, split, leaf = [(2, 5, 2), (5, 0, 0), (7, 2, 1), (4, 20, 10)][seed % 4]
        sizes = {"max_depth": depth, "min_samples_split": split, "min_samples_leaf": leaf}
        rules = [
            MaxEdgePartitioner(**sizes),
            CartPartitioner(**sizes),
            CartPartitioner(thresholds="exact", **sizes),
            RandomMaxEdgePartitioner(**sizes),
        ]
        for crit in ("gini", "entropy"):
            rules += [
                MaxEdgePartitioner(criterion=crit, **sizes),
                CartPartitioner(criterion=crit, search_number=3, **sizes),
            ]
        for rule, (name, y) in itertools.product(rules, labels.items()):
            if CRITERIA[getattr(rule, "criterion", "mse")].classification and name == "normal":
                continue
            ys = [y] if isinstance(rule, CartPartitioner) else [y, None]
            for labels_used in ys:
                k = key if isinstance(rule, RandomMaxEdgePartitioner) else None
                fast = rule.fit(X, labels_used, key=k)
                reference = _reference_fit(rule, X, labels_used, k)
                assert fast.to_json() == reference.to_json(), (rule, n, kind, name)


def test_sorted_quantiles_are_numpys_bit_for_bit() -> None:
    rng = np.random.default_rng(0)
    for size in (1, 2, 3, 7, 10, 11, 64, 1000):
        values = np.sort(rng.normal(size=size) * 10.0 ** rng.uniform(-5, 5))
        for count in (1, 3, 10, 17):
            levels = (2.0 * np.arange(count) + 1.0) / (2.0 * count)
            np.testing.assert_array_equal(
                sorted_quantiles(values, np.array([0]), np.array([size]), levels)[0],
                np.quantile(values, levels),
            )
    # several segments of one flat array in one call
    segments = [np.sort(rng.normal(size=size)) for size in (1, 4, 30)]
    levels = (2.0 * np.arange(10) + 1.0) / 20.0
    counts = np.array([s.shape[0] for s in segments])
    out = sorted_quantiles(np.concatenate(segments), np.cumsum(counts) - counts, counts, levels)
    for row, segment in zip(out, segments, strict=True):
        np.testing.assert_array_equal(row, np.quantile(segment, levels))


def test_distinct_row_ids_match_numpy_unique() -> None:
    rng = np.random.default_rng(1)
    table = rng.integers(0, 3, (500, 3)).astype(float)
    table[::7, 0] = -0.0  # equal to 0.0, as np.unique compares
    ids, order = distinct_row_ids(table)
    _, expected = np.unique(table, axis=0, return_inverse=True)
    same = ids[:, None] == ids[None, :]
    assert np.array_equal(same, expected[:, None] == expected[None, :])
    assert np.all(np.diff(ids[order]) >= 0)
    assert ids.max() + 1 == np.unique(table, axis=0).shape[0]


@pytest.mark.parametrize("name", sorted(CRITERIA))
def test_totals_are_the_column_sums_of_the_statistics(name: str) -> None:
    rng = np.random.default_rng(2)
    criterion = CRITERIA[name]
    for size in (1, 2, 9, 130, 4000):
        y = rng.integers(0, 11, size).astype(float)
        if name == "mse":
            y = y * rng.normal(size=size) * 1e3
        rows_in_order = np.ascontiguousarray(criterion.stats(y)).sum(axis=0)
        np.testing.assert_array_equal(criterion.totals(y), rows_in_order)


def test_stable_argsort_rows_is_numpys_stable_argsort() -> None:
    rng = np.random.default_rng(3)
    for values in (rng.uniform(size=(3, 500)), rng.integers(0, 4, (3, 500)) / 3.0):
        values[0, ::5] = -0.0 * values[0, ::5]  # signed zeros compare equal
        np.testing.assert_array_equal(
            stable_argsort_rows(values), np.argsort(values, axis=1, kind="stable")
        )
