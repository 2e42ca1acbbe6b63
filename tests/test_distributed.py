"""The engine's Dask executor on a local two-worker cluster (127.0.0.1 only): the monoid reduced
across workers gives the one-process result bit for bit."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from ldptree.distributed import Dask, Reports, load_reports, save_reports
from ldptree.mechanisms import LaplaceCellClassMechanism, RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner
from ldptree.rounds import PrivateRows, Round, SumAggregator, release_key, run

#: Seconds any wait on the cluster may take before the test fails.
TIMEOUT = 120


@pytest.fixture(scope="module")
def client(dask_client: Any) -> Any:
    return dask_client


@pytest.fixture(scope="module")
def setup() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    Xq = rng.random((400, 2))
    partition = MaxEdgePartitioner(max_depth=3).fit(Xq, Xq[:, 0])
    X = rng.random((2500, 2))
    y = np.sin(6 * X[:, 0]) + rng.normal(0, 0.1, 2500)
    mechanism = RRLaplaceMechanism(epsilon=2.0, label_bound=(-1.5, 1.5), budget_split=0.5)
    return {"partition": partition, "X": X, "y": y, "mechanism": mechanism}


def _round(partition: Any, mechanism: Any, key: Any, chunk_size: int) -> Round:
    return Round(
        partition=partition,
        mechanism=mechanism,
        key=release_key(key, mechanism, partition),
        chunk_size=chunk_size,
    )


def run_round(partition: Any, mechanism: Any, X: Any, y: Any, *, key: Any, chunk_size: int) -> Any:
    """The round in this process."""
    return run([_round(partition, mechanism, key, chunk_size)], PrivateRows.of(X, y))[0].estimates


def simulate_round(
    client: Any,
    partition: Any,
    mechanism: Any,
    chunks: Any,
    *,
    key: Any,
    chunk_size: int,
    max_pending: int = 8,
    timeout: float,
) -> Any:
    """The round with the holders' work on the cluster."""
    executor = Dask(client, max_pending=max_pending, timeout=timeout)
    round_ = _round(partition, mechanism, key, chunk_size)
    return run([round_], PrivateRows.of(chunks), executor=executor)[0].estimates


def _equal(a: Any, b: Any) -> None:
    np.testing.assert_array_equal(np.asarray(a.count), np.asarray(b.count))
    np.testing.assert_array_equal(np.asarray(a.label_sum), np.asarray(b.label_sum))
    assert a.n == b.n


@pytest.mark.slow
def test_simulate_round_equals_run_round(client: Any, setup: dict[str, Any]) -> None:
    s = setup
    key = jax.random.key(7)
    local = run_round(s["partition"], s["mechanism"], s["X"], s["y"], key=key, chunk_size=300)
    pieces = ((s["X"][i : i + 900], s["y"][i : i + 900]) for i in range(0, 2500, 900))
    remote = simulate_round(
        client,
        s["partition"],
        s["mechanism"],
        pieces,
        key=key,
        chunk_size=256,
        max_pending=2,
        timeout=TIMEOUT,
    )
    _equal(remote, local)
    # another key gives other reports, so the equality above could fail
    other = run_round(
        s["partition"], s["mechanism"], s["X"], s["y"], key=jax.random.key(8), chunk_size=300
    )
    assert not np.array_equal(np.asarray(other.count), np.asarray(local.count))


@pytest.mark.slow
def test_simulate_round_with_class_codes(client: Any, setup: dict[str, Any]) -> None:
    s = setup
    codes = (s["X"][:, 1] * 3).astype(np.int32)
    mechanism = LaplaceCellClassMechanism(epsilon=1.0, n_classes=3)
    key = jax.random.key(3)
    local = run_round(s["partition"], mechanism, s["X"], codes, key=key, chunk_size=1000)
    remote = simulate_round(
        client,
        s["partition"],
        mechanism,
        [(s["X"], codes)],
        key=key,
        chunk_size=700,
        timeout=TIMEOUT,
    )
    # per-class counts [L, K], equal bit for bit to the one-process round
    assert np.asarray(remote.label_sum).shape == (s["partition"].n_leaves, 3)
    np.testing.assert_array_equal(np.asarray(remote.count), np.asarray(local.count))
    np.testing.assert_array_equal(np.asarray(remote.label_sum), np.asarray(local.label_sum))
    assert remote.n == local.n == codes.shape[0]


@pytest.mark.slow
def test_aggregate_reports_from_arrays_futures_and_files(
    client: Any, setup: dict[str, Any], tmp_path: Path
) -> None:
    s = setup
    m, n_cells = s["mechanism"], s["partition"].n_leaves
    key = jax.random.key(11)
    cells = s["partition"].cells(s["X"])
    labels = jax.numpy.asarray(s["y"], dtype=np.float32)
    bounds = [0, 700, 1500, 1600, 2500]
    parts = [
        m.privatize(key, cells[a:b], labels[a:b], n_cells, first_holder=a)
        for a, b in itertools.pairwise(bounds)
    ]
    aggregator = SumAggregator(mechanism=m, n_cells=n_cells)
    whole = aggregator.finalize(
        aggregator.update(aggregator.init(), m.privatize(key, cells, labels, n_cells))
    )
    executor = Dask(client, timeout=TIMEOUT)
    collected = Round(partition=s["partition"], mechanism=m)  # reports drawn: no key needed
    paths = []
    for i, part in enumerate(parts[2:]):
        paths.append(tmp_path / f"reports-{i}.npz")
        save_reports(paths[-1], part)
    mixed = [parts[0], client.scatter([parts[1]])[0], *paths]
    result = run([collected], Reports(mixed, like=parts[0]), executor=executor)[0].estimates
    _equal(result, whole)
    with pytest.raises(ValueError, match="like"):
        run([collected], Reports(paths), executor=executor)
    with pytest.raises(ValueError, match="holds 1 arrays"):
        np.savez(tmp_path / "bad.npz", np.zeros(3))
        load_reports(tmp_path / "bad.npz", parts[0])
