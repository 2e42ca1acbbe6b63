"""The one chunker: regrouping rows into routing batches keeps every row in order, the aggregate
simulation does not depend on how the rows were chunked, and a padded last piece changes no
sum."""

from __future__ import annotations

import itertools
from typing import Any

import jax
import numpy as np
import pytest

from ldptree import LPCTClassifier
from ldptree.mechanisms import RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner
from ldptree.rounds import PrivateRows, Round, Serial, Threads, mechanism_labels, run
from ldptree.rounds._chunks import mark_last, rebatch


@pytest.mark.parametrize("size", [1, 3, 4, 10, 100])
def test_rebatch_gives_the_same_rows_in_batches_of_exactly_size(size: int) -> None:
    rng = np.random.default_rng(0)
    lengths = [0, 3, 1, 7, 2, 0, 5]
    X = rng.normal(size=(sum(lengths), 2))
    y = np.arange(sum(lengths))
    starts = np.concatenate([[0], np.cumsum(lengths)])
    chunks = [(X[a:b], y[a:b]) for a, b in itertools.pairwise(starts)]
    batches = list(rebatch(chunks, size))
    assert [b[0].shape[0] for b in batches[:-1]] == [size] * (len(batches) - 1)
    assert 0 < batches[-1][0].shape[0] <= size
    np.testing.assert_array_equal(np.concatenate([b[0] for b in batches]), X)
    np.testing.assert_array_equal(np.concatenate([b[1] for b in batches]), y)
    assert list(rebatch([], size)) == []


def test_aggregate_simulation_is_the_same_for_any_chunk_size() -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(size=(3000, 3))
    y = (X[:, 0] > 0.5).astype(int)
    Xq = rng.uniform(size=(300, 3))
    yq = (Xq[:, 0] > 0.5).astype(int)
    fits = [
        LPCTClassifier(
            epsilon=2.0, max_depth=3, simulation="aggregate", chunk_size=chunk, random_state=3
        ).fit(X, y, X_public=Xq, y_public=yq)
        for chunk in (None, 7, 1000)
    ]
    for other in fits[1:]:
        np.testing.assert_array_equal(other.estimates_.count, fits[0].estimates_.count)
        np.testing.assert_array_equal(other.estimates_.label_sum, fits[0].estimates_.label_sum)


@pytest.mark.parametrize(
    ("sizes", "marked"),
    [
        ([4, 4, 3], 8),
        ([2, 4, 3], 6),
        ([4, 3, 3], 7),
        ([3], -1),
        ([4, 4], -1),
        ([2, 3], -1),
        ([], -1),
    ],
)
def test_mark_last_marks_only_a_short_last_piece_after_a_full_one(
    sizes: list[int], marked: int
) -> None:
    pieces = [(np.full((m, 2), float(i)), np.arange(m)) for i, m in enumerate(sizes)]
    padded_at = [-1]
    out = list(mark_last(iter(pieces), 4, padded_at))
    assert padded_at == [marked]
    assert [(X.shape[0], float(X[0, 0])) for X, _ in out] == [
        (m, float(i)) for i, m in enumerate(sizes)
    ]


@pytest.mark.parametrize(
    ("sizes", "expected"),
    [
        ([2600], [(1000, None), (1000, None), (1000, 600)]),
        ([1000, 1000, 1000, 17], [(1000, None)] * 3 + [(1000, 17)]),
        ([1500, 300], [(1000, None), (500, None), (1000, 300)]),
        ([700], [(700, None)]),  # a lone short chunk keeps its length
    ],
)
def test_a_padded_last_chunk_gives_the_unpadded_sums(
    sizes: list[int], expected: list[tuple[int, int | None]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The concurrent round pads a stream's short last chunk to ``chunk_size`` rows (one compiled
    shape) and passes the holder count; the sums equal the plain loop's, which never pads."""
    rng = np.random.default_rng(2)
    Xq, yq = rng.uniform(size=(300, 2)), rng.normal(size=300)
    partition = MaxEdgePartitioner(max_depth=3).fit(Xq, yq)
    mech = RRLaplaceMechanism(epsilon=2.0, label_bound=2.0)
    n = sum(sizes)
    X, y = rng.uniform(size=(n, 2)), rng.normal(size=n)
    bounds = np.cumsum([0, *sizes])
    calls: list[tuple[int, int | None]] = []
    fused = RRLaplaceMechanism.privatize_summarize

    def spy(self: Any, key: Any, cells: Any, labels: Any, n_cells: int, **kw: Any) -> Any:
        calls.append((int(cells.shape[0]), kw.get("n_holders")))
        return fused(self, key, cells, labels, n_cells, **kw)

    def stream() -> Any:
        return ((X[a:b], y[a:b]) for a, b in itertools.pairwise(bounds))

    round_ = Round(partition=partition, mechanism=mech, key=jax.random.key(4), chunk_size=1000)

    def state(executor: Any) -> Any:
        return run([round_], PrivateRows.of(stream()), executor=executor)[0].state

    plain = state(Serial())
    monkeypatch.setattr(RRLaplaceMechanism, "privatize_summarize", spy)
    piped = state(Threads())
    assert piped.n == plain.n == n
    for name in plain.stats:
        np.testing.assert_array_equal(np.asarray(piped.stats[name]), np.asarray(plain.stats[name]))
    # chunks run in worker threads, so the calls are compared in any order
    assert sorted(calls, key=str) == sorted(expected, key=str)


def test_holder_labels_convert_on_the_host_as_jax_does() -> None:
    rng = np.random.default_rng(5)
    reals = np.concatenate([rng.normal(size=50), [1 + 2.0**-24, 1 + 3 * 2.0**-24, -0.0, 3.3e38]])
    codes = rng.integers(0, 4, 20)
    for y in (reals, reals.astype(np.float32), codes, codes.astype(np.int8)):
        got = mechanism_labels(y)
        want = jax.numpy.asarray(y)
        if jax.numpy.issubdtype(want.dtype, jax.numpy.floating):
            want = want.astype(np.float32)
        assert isinstance(got, jax.Array) and got.dtype == want.dtype
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
    traced = jax.jit(mechanism_labels)(reals)
    np.testing.assert_array_equal(np.asarray(traced), np.asarray(mechanism_labels(reals)))
