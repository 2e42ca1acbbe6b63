"""A public split of the holders: each round over one part reads exactly that part's holders,
as a round over those rows alone would (bit for bit, every executor). Deterministic."""

from __future__ import annotations

from typing import Any

import attrs
import jax
import numpy as np
import pytest

from ldptree.mechanisms import LaplaceCellClassMechanism, RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner, RangeScaler
from ldptree.rounds import (
    Batched,
    HolderPart,
    HolderSplit,
    PrivateRows,
    Round,
    Serial,
    SimulatedSumAggregator,
    Threads,
    release_key,
    run,
)


def test_parts_do_not_depend_on_chunking_and_cover_every_holder_once() -> None:
    split = HolderSplit(5, seed=123)
    whole = split.parts_of(0, 1000)
    pieces = np.concatenate([split.parts_of(s, 7) for s in range(0, 1001, 7)])[:1000]
    np.testing.assert_array_equal(whole, pieces)
    sizes = split.sizes(1000)
    assert sizes.sum() == 1000 and set(np.unique(whole)) == set(range(5))
    np.testing.assert_array_equal(sizes, np.bincount(whole, minlength=5))
    # a different seed is a different assignment
    assert not np.array_equal(whole, HolderSplit(5, seed=124).parts_of(0, 1000))
    np.testing.assert_array_equal(HolderSplit(1).parts_of(3, 4), np.zeros(4))


def test_part_sizes_are_balanced() -> None:
    """Multinomial sizes: each within 5 standard deviations of n / T (fixed seed, so the test is
    deterministic; over random seeds it would fail with probability below 1e-5)."""
    n, parts = 200_000, 8
    sizes = HolderSplit(parts, seed=2024).sizes(n)
    sd = np.sqrt(n * (1 / parts) * (1 - 1 / parts))
    assert np.all(np.abs(sizes - n / parts) < 5 * sd)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_parts": 0}, "n_parts"),
        ({"n_parts": 2, "seed": -1}, "seed"),
        ({"n_parts": 2, "seed": 1 << 64}, "seed"),
    ],
)
def test_bad_splits(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        HolderSplit(**kwargs)
    with pytest.raises(ValueError, match="index"):
        HolderPart(HolderSplit(2), 2)


# one release key for every part and for the rows alone, on purpose: the comparison is bit for bit
@pytest.mark.filterwarnings("ignore::ldptree.accounting.KeyReuseWarning")
@pytest.mark.parametrize("kind", ["sum", "simulated"])
@pytest.mark.parametrize("executor", [Serial(), Threads(), Batched()], ids=str)
def test_a_round_over_a_part_equals_a_round_over_its_rows(kind: str, executor: Any) -> None:
    rng = np.random.default_rng(1)
    Xq, X = rng.uniform(size=(100, 2)), rng.uniform(size=(900, 2))
    y = np.sin(3 * X[:, 0]) if kind == "sum" else (X[:, 0] > 0.5).astype(int)
    scaler = RangeScaler.fit(Xq)
    partition = MaxEdgePartitioner(max_depth=2).fit(scaler.transform(Xq))
    if kind == "sum":
        mechanism: Any = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0)
        extra: dict[str, Any] = {}
    else:
        mechanism = LaplaceCellClassMechanism(epsilon=1.0, n_classes=2)
        extra = {"aggregator": SimulatedSumAggregator}
    split = HolderSplit(3, seed=9)
    base = Round(
        partition=partition,
        mechanism=mechanism,
        key=release_key(jax.random.key(0), mechanism, partition),
        scaler=scaler,
        chunk_size=64,
        **extra,
    )
    rounds = [attrs.evolve(base, holders=split.part(p)) for p in range(3)]
    together = run(rounds, PrivateRows.of(X, y), executor=executor)
    parts = split.parts_of(0, X.shape[0])
    for p, result in enumerate(together):
        keep = parts == p
        alone = run([base], PrivateRows.of(X[keep], y[keep]), executor=Serial())[0]
        assert result.estimates.n == int(keep.sum())
        np.testing.assert_array_equal(
            np.asarray(result.estimates.count), np.asarray(alone.estimates.count)
        )
        np.testing.assert_array_equal(
            np.asarray(result.estimates.label_sum), np.asarray(alone.estimates.label_sum)
        )


def test_complement_is_every_holder_outside_the_part() -> None:
    split = HolderSplit(4, seed=7)
    X = np.arange(200, dtype=np.float64).reshape(100, 2)
    y = np.arange(100, dtype=np.float64)
    own = HolderPart(split, 1)
    rest = HolderPart(split, 1, complement=True)
    got = {
        part: np.concatenate([b for _, b in part.select([(X[:37], y[:37]), (X[37:], y[37:])])])
        for part in (own, rest)
    }
    parts = split.parts_of(0, 100)
    np.testing.assert_array_equal(got[own], y[parts == 1])
    np.testing.assert_array_equal(got[rest], y[parts != 1])
    assert own.size(100) + rest.size(100) == 100 and rest.size(100) == len(got[rest])
    # with one part the complement is nobody
    lone = HolderPart(HolderSplit(1), 0, complement=True)
    assert sum(len(b) for _, b in lone.select([(X, y)])) == 0 and lone.size(100) == 0
    with pytest.raises(TypeError):
        HolderPart(split, 0, complement=1)  # type: ignore[arg-type]
