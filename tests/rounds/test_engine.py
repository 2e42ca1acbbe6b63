"""The engine's contract: every executor and every source gives the estimates of the serial
executor on in-memory arrays, bit for bit, for every kind of aggregator (folding summaries,
taking reports, simulating holders). Deterministic (fixed keys and data): no false failures."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from ldptree._validation import check_vector
from ldptree.estimators._classes import check_class_labels
from ldptree.mechanisms import LaplaceCellClassMechanism, RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner, RangeScaler
from ldptree.protocols import CellEstimates
from ldptree.rounds import (
    Batched,
    Dask,
    PrivateRows,
    ReportCollector,
    Reports,
    Round,
    Serial,
    SimulatedSumAggregator,
    SumAggregator,
    Threads,
    private_rows,
    release_key,
    run,
    save_reports,
)

N = 700  # pieces of 128 rows: five full ones and a short last one (padded by Threads)
CHUNK = 128
SIZES = [100, 0, 333, 200, 67]  # an iterable's chunks, cut and regrouped by the engine


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    rng = np.random.default_rng(0)
    Xq, X = rng.uniform(-1, 2, (200, 2)), rng.uniform(-1, 2, (N, 2))
    scaler = RangeScaler.fit(Xq)
    partition = MaxEdgePartitioner(max_depth=3).fit(scaler.transform(Xq))
    return {
        "X": X,
        "y": np.sin(3 * X[:, 0]),
        "codes": (X[:, 0] > 0.5).astype(int),
        "scaler": scaler,
        "partition": partition,
    }


def _round(data: dict[str, Any], kind: str) -> Round:
    """A round of one kind: ``sum`` (summaries through the fused kernel), ``collector``
    (reports through ``update``), ``simulated`` (records, a simulation device)."""
    partition = data["partition"]
    if kind == "sum":
        mechanism: Any = RRLaplaceMechanism(epsilon=2.0, label_bound=1.0)
        aggregator: Any = SumAggregator
    elif kind == "collector":
        mechanism, aggregator = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0), ReportCollector
    else:
        mechanism = LaplaceCellClassMechanism(epsilon=1.0, n_classes=2)
        aggregator = SimulatedSumAggregator
    return Round(
        partition=partition,
        mechanism=mechanism,
        key=release_key(jax.random.key(3), mechanism, partition),
        aggregator=aggregator,
        scaler=data["scaler"],
        chunk_size=CHUNK,
    )


def _labels(data: dict[str, Any], kind: str) -> Any:
    return data["codes"] if kind == "simulated" else data["y"]


def _serial(data: dict[str, Any], kind: str) -> CellEstimates:
    source = PrivateRows.of(data["X"], _labels(data, kind))
    return run([_round(data, kind)], source, executor=Serial())[0].estimates


def _same(a: CellEstimates, b: CellEstimates) -> bool:
    """Both rounds saw all ``N`` holders and give the same estimates, bit for bit."""
    return (
        a.n == b.n == N
        and np.array_equal(np.asarray(a.count), np.asarray(b.count))
        and np.array_equal(np.asarray(a.label_sum), np.asarray(b.label_sum))
    )


KINDS = ["sum", "collector", "simulated"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("executor", [Threads(), Batched()], ids=["threads", "batched"])
def test_every_executor_equals_the_serial_one(data: dict[str, Any], kind: str, executor: Any):
    source = PrivateRows.of(data["X"], _labels(data, kind))
    assert _same(
        run([_round(data, kind)], source, executor=executor)[0].estimates, _serial(data, kind)
    )


@pytest.mark.parametrize("executor", [Serial(), Threads(), Batched()], ids=str)
def test_several_rounds_over_one_source_equal_each_alone(data: dict[str, Any], executor: Any):
    rounds = [_round(data, "sum"), _round(data, "collector"), _round(data, "sum")]
    results = run(rounds, PrivateRows.of(data["X"], data["y"]), executor=executor)
    for result in results:
        assert result.aggregator.finalize(result.state).n == N
    assert _same(results[0].estimates, _serial(data, "sum"))
    assert _same(results[1].estimates, _serial(data, "collector"))
    assert _same(results[2].estimates, results[0].estimates)


def _chunks(X: Any, y: Any) -> list[tuple[Any, Any]]:
    bounds = np.cumsum([0, *SIZES])
    return [(X[a:b], y[a:b]) for a, b in itertools.pairwise(bounds)]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("source", ["checked", "memory_map", "chunks", "checked_chunks"])
def test_every_rows_source_equals_arrays(
    data: dict[str, Any], kind: str, source: str, tmp_path: Path
) -> None:
    X, y = data["X"], _labels(data, kind)
    check = check_class_labels if kind == "simulated" else check_vector
    if source == "checked":
        rows = private_rows(X, y, check_labels=check)
    elif source == "memory_map":
        np.save(tmp_path / "X.npy", X)
        np.save(tmp_path / "y.npy", y)
        mapped_X = np.load(tmp_path / "X.npy", mmap_mode="r")
        mapped_y = np.load(tmp_path / "y.npy", mmap_mode="r")
        rows = private_rows(mapped_X, mapped_y, check_labels=check)
    elif source == "chunks":
        rows = PrivateRows.of(iter(_chunks(X, y)))
    else:
        rows = private_rows(iter(_chunks(X, y)), None, check_labels=check)
    assert _same(run([_round(data, kind)], rows)[0].estimates, _serial(data, kind))


@pytest.mark.parametrize("files", [False, True], ids=["arrays", "files"])
def test_a_reports_source_equals_the_rows_round(
    data: dict[str, Any], files: bool, tmp_path: Path
) -> None:
    """The holders' reports drawn elsewhere (here: each piece privatized with its first holder's
    index), folded by the engine, give the round's estimates."""
    drawn = _round(data, "sum")
    cells = drawn.partition.cells(data["scaler"].transform(data["X"]))
    labels = jax.numpy.asarray(data["y"], dtype=np.float32)
    parts: list[Any] = [
        drawn.mechanism.privatize(drawn.key, cells[a:b], labels[a:b], drawn.n_cells, first_holder=a)
        for a, b in itertools.pairwise([0, 250, 251, N])
    ]
    like = parts[0]
    if files:
        for i, part in enumerate(parts):
            save_reports(tmp_path / f"{i}.npz", part)
        parts = [tmp_path / f"{i}.npz" for i in range(len(parts))]
    collected = Round(partition=drawn.partition, mechanism=drawn.mechanism)  # no key needed
    source = Reports(parts, like=like)
    for executor in (Serial(), Threads(), Batched()):
        assert _same(run([collected], source, executor=executor)[0].estimates, _serial(data, "sum"))


@pytest.mark.parametrize("kind", KINDS)
def test_dask_executor_equals_the_serial_one(
    data: dict[str, Any], kind: str, dask_client: Any
) -> None:
    executor = Dask(dask_client, max_pending=2, timeout=120)
    source = PrivateRows.of(iter(_chunks(data["X"], _labels(data, kind))))
    assert _same(
        run([_round(data, kind)], source, executor=executor)[0].estimates, _serial(data, kind)
    )


def test_the_engine_refuses_what_it_cannot_run(data: dict[str, Any]) -> None:
    keyless = Round(partition=data["partition"], mechanism=_round(data, "sum").mechanism)
    with pytest.raises(ValueError, match="release key"):
        run([keyless], PrivateRows.of(data["X"], data["y"]))
    with pytest.raises(TypeError, match="source must be PrivateRows or Reports"):
        run([_round(data, "sum")], (data["X"], data["y"]))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="chunk_size"):
        Round(partition=data["partition"], mechanism=keyless.mechanism, chunk_size=0)
    with pytest.raises(ValueError, match="parts is empty"):
        Reports([])
    assert run([], PrivateRows.of(data["X"], data["y"])) == []
