"""The round's chunk plumbing: regrouping rows into routing batches keeps every row in order, and
the aggregate simulation does not depend on how the rows were chunked."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ldptree import LPCTClassifier
from ldptree.estimators._protocol import rebatch


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
