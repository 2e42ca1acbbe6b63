"""Streaming private inputs: memory maps and iterables of chunks give the in-memory fit, bit for
bit; bad chunks are refused naming the argument."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ldptree import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree._validation import check_vector
from ldptree.datasets import lpdt_uniform
from ldptree.rounds._rows import (
    _memory_map,
    is_chunk_stream,
    is_memory_mapped,
    private_rows,
    release_pages,
)


@pytest.fixture(scope="module")
def regression() -> dict[str, Any]:
    rng = np.random.default_rng(3)
    X, y = lpdt_uniform(5000, 3, rng)
    Xq, yq = lpdt_uniform(500, 3, rng)
    return {"X": X.astype(np.float32), "y": y.astype(np.float32), "Xq": Xq, "yq": yq}


def _memmap(tmp_path: Path, name: str, arr: np.ndarray) -> np.ndarray:
    path = tmp_path / f"{name}.npy"
    np.save(path, arr)
    return np.load(path, mmap_mode="r")


def _pieces(X: np.ndarray, y: np.ndarray, sizes: list[int]) -> Iterator[tuple[Any, Any]]:
    """Uneven chunks (some empty, some longer than chunk_size) covering all rows in order."""
    start = 0
    for size in [*sizes, X.shape[0]]:
        yield X[start : start + size], y[start : start + size].tolist()
        start += size


def _same_fit(a: Any, b: Any) -> None:
    for name in ("count", "label_sum"):
        np.testing.assert_array_equal(getattr(a.estimates_, name), getattr(b.estimates_, name))
    assert a.estimates_.n == b.estimates_.n
    np.testing.assert_array_equal(
        a.leaf_values_ if hasattr(a, "leaf_values_") else a.leaf_eta_,
        b.leaf_values_ if hasattr(b, "leaf_values_") else b.leaf_eta_,
    )


def test_lpdt_memmap_and_chunk_iterable_equal_the_in_memory_fit(
    regression: dict[str, Any], tmp_path: Path
) -> None:
    d = regression
    params = {"epsilon": 2.0, "max_depth": 3, "chunk_size": 700, "random_state": 5}
    public = {"X_public": d["Xq"], "y_public": d["yq"]}
    # the former path: a list is converted to float64 as a whole
    reference = LPDTRegressor(**params).fit(d["X"].tolist(), d["y"].tolist(), **public)
    Xm, ym = _memmap(tmp_path, "X", d["X"]), _memmap(tmp_path, "y", d["y"])
    mapped = LPDTRegressor(**params).fit(Xm, ym, **public)
    streamed = LPDTRegressor(**params).fit(
        _pieces(d["X"], d["y"], [1, 0, 1500, 33]), None, **public
    )
    for m in (mapped, streamed):
        _same_fit(m, reference)
        assert m.n_features_in_ == 3
    # reading the memory map (and handing its pages back) left the file's data unchanged
    np.testing.assert_array_equal(Xm, d["X"])
    # a different key gives a different fit (the comparison above could fail)
    other = LPDTRegressor(**{**params, "random_state": 6}).fit(Xm, ym, **public)
    assert not np.array_equal(other.estimates_.count, reference.estimates_.count)


def test_lpdt_auto_ratio_counts_the_streamed_rows(regression: dict[str, Any]) -> None:
    d = regression
    params = {"epsilon": 1.0, "max_depth": 2, "min_private_ratio": "auto", "random_state": 0}
    public = {"X_public": d["Xq"], "y_public": d["yq"]}
    reference = LPDTRegressor(**params).fit(d["X"], d["y"], **public)
    streamed = LPDTRegressor(**params).fit(iter([(d["X"], d["y"])]), **public)
    np.testing.assert_array_equal(streamed.used_fallback_, reference.used_fallback_)
    np.testing.assert_array_equal(streamed.leaf_values_, reference.leaf_values_)


def _blobs(n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((n, 2))
    return X, np.minimum((X[:, 0] * 3).astype(int), 2)


@pytest.mark.parametrize("simulation", ["per_holder", "aggregate"])
def test_lpct_memmap_and_chunk_iterable_equal_the_in_memory_fit(
    tmp_path: Path, simulation: str
) -> None:
    X, y = _blobs(3000, 0)
    Xq, yq = _blobs(300, 1)
    params = {"epsilon": 2.0, "max_depth": 3, "chunk_size": 512, "random_state": 1}

    def fit(X_: Any, y_: Any) -> LPCTClassifier:
        return LPCTClassifier(**params, simulation=simulation).fit(X_, y_, X_public=Xq, y_public=yq)

    reference = fit(X.tolist(), y.tolist())
    mapped = fit(_memmap(tmp_path, "X", X), _memmap(tmp_path, "y", y))
    streamed = fit(_pieces(X, y, [10, 2000]), None)
    for m in (mapped, streamed):
        np.testing.assert_array_equal(m.estimates_.count, reference.estimates_.count)
        np.testing.assert_array_equal(m.estimates_.label_sum, reference.estimates_.label_sum)
        np.testing.assert_array_equal(m.leaf_eta_, reference.leaf_eta_)
        assert m.estimates_.n == reference.estimates_.n == 3000


def test_pruned_classifier_streams_with_explicit_depths() -> None:
    X, y = _blobs(2000, 2)
    Xq, yq = _blobs(400, 3)
    y, yq = y % 2, yq % 2
    public = {"X_public": Xq, "y_public": yq}
    with pytest.raises(ValueError, match="max_depth and min_depth"):
        LPCTPrunedClassifier(random_state=0).fit(iter([(X, y)]), **public)
    params = {"max_depth": 3, "min_depth": 1, "random_state": 0}
    reference = LPCTPrunedClassifier(**params).fit(X, y, **public)
    streamed = LPCTPrunedClassifier(**params).fit(_pieces(X, y, [999]), **public)
    np.testing.assert_array_equal(streamed.leaf_eta_, reference.leaf_eta_)


def test_bad_chunks_are_refused_naming_them(tmp_path: Path) -> None:
    X = np.random.default_rng(0).random((300, 2))
    y = X[:, 0]
    m = LPDTRegressor(max_depth=1, label_bound=1.0, chunk_size=100, random_state=0)
    bad = X.copy()
    bad[250, 1] = np.nan  # in the last chunk: found while reading it
    with pytest.raises(ValueError, match="X contains NaN"):
        m.fit(_memmap(tmp_path, "bad", bad), y)
    with pytest.raises(ValueError, match="X chunk 1 has 3 features but chunk 0 has 2"):
        m.fit(iter([(X, y), (np.ones((2, 3)), [0.0, 0.0])]))
    with pytest.raises(ValueError, match=r"y chunk 1 has length 1 but X has 2 rows"):
        m.fit(iter([(X, y), (np.ones((2, 2)), [0.0])]))
    with pytest.raises(TypeError, match="item 0 is a ndarray"):
        m.fit(iter([X]))
    with pytest.raises(ValueError, match="empty iterable"):
        m.fit(iter([]))
    with pytest.raises(ValueError, match="has no rows"):
        m.fit(iter([(np.ones((0, 2)), [])]))
    with pytest.raises(ValueError, match="y has length 5 but X has 300 rows"):
        m.fit(_memmap(tmp_path, "X", X), np.zeros(5))
    with pytest.raises(ValueError, match="requires y to be passed"):
        m.fit(X, None)


def test_chunks_are_bounded_and_an_iterable_is_read_once(tmp_path: Path) -> None:
    X = np.arange(20.0, dtype=np.float32).reshape(10, 2)
    rows = private_rows(_memmap(tmp_path, "X", X), np.zeros(10), check_labels=check_vector)
    sizes = [(c.shape[0], c.dtype) for c, _ in rows.chunks(4)]
    assert sizes == [(4, np.float64), (4, np.float64), (2, np.float64)] and rows.n == 10
    stream = private_rows(iter([(X, np.zeros(10))]), None, check_labels=check_vector)
    assert stream.n is None and stream.n_features == 2
    assert sum(c.shape[0] for c, _ in stream.chunks(3)) == 10
    with pytest.raises(ValueError, match="already read"):
        next(stream.chunks(3))
    assert is_chunk_stream([(X, X[:, 0])], None) and not is_chunk_stream(X, None)
    assert not is_chunk_stream([(X, X[:, 0])], X[:, 0])


def test_pages_are_released_only_for_read_only_memory_maps(tmp_path: Path) -> None:
    path = tmp_path / "X.npy"
    np.save(path, np.ones((4096, 2)))
    read_only = np.load(path, mmap_mode="r")
    # found through slices and through a plain view (what np.asarray makes of a memmap)
    assert _memory_map(read_only[10:20]) is not None
    assert _memory_map(np.asarray(read_only)[10:20]) is not None
    # a copy-on-write map may hold the caller's private changes: never advised
    assert _memory_map(np.load(path, mmap_mode="c")) is None
    assert _memory_map(np.ones(3)) is None
    assert is_memory_mapped(np.asarray(read_only)) and not is_memory_mapped(np.ones(3))
    release_pages(read_only[100:3000])
    np.testing.assert_array_equal(read_only, 1.0)  # the data read again are unchanged
