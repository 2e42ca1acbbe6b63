"""A user's aggregator that declares the summary capability, written as in the tutorial (no
subclass of a library class): it runs on the built-in sum's fast path (the mechanism's fused
kernel, no report materialised) in LPDT and LPCT, in fit_many's vectorised batch, on a memory
map and on Dask, with the built-in sum's results bit for bit. Deterministic."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs
import jax
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPDTRegressor
from ldptree.estimators import fit_many
from ldptree.mechanisms import KitMechanism, LaplaceFeatureLabelMechanism, RRLaplaceMechanism
from ldptree.protocols import FoldsSummaries, FusedSummary
from ldptree.rounds import Dask, ReportCollector, SumAggregator


def exact(x: Any) -> np.ndarray[Any, Any]:
    a = np.asarray(x)
    return a.astype(np.int64 if np.issubdtype(a.dtype, np.integer) else np.float64)


@attrs.frozen
class CountingState:
    n: int = 0
    stats: Any = None
    chunks: tuple[int, ...] = ()


@attrs.frozen
class ChunkCountingSum:
    """The tutorial's aggregator: sums, and the number of holders of each chunk."""

    mechanism: Any
    n_cells: int

    def init(self) -> CountingState:
        return CountingState()

    def update(self, state: CountingState, reports: Any) -> CountingState:
        m = int(jax.tree_util.tree_leaves(reports)[0].shape[0])
        return self.merge(
            state, self.from_summary(m, self.mechanism.summarize(reports, self.n_cells))
        )

    def from_summary(self, n: int, stats: Any) -> CountingState:
        return CountingState(n, jax.tree_util.tree_map(exact, stats), (n,))

    def merge(self, a: CountingState, b: CountingState) -> CountingState:
        if a.stats is None or b.stats is None:
            stats = b.stats if a.stats is None else a.stats
        else:
            stats = jax.tree_util.tree_map(np.add, a.stats, b.stats)
        return CountingState(a.n + b.n, stats, a.chunks + b.chunks)

    def finalize(self, state: CountingState) -> Any:
        return self.mechanism.debias(state.stats, state.n)


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    rng = np.random.default_rng(5)
    X, Xq = rng.uniform(size=(2000, 2)), rng.uniform(size=(300, 2))
    folder: Path = tmp_path_factory.mktemp("rows")
    np.save(folder / "X.npy", X)
    return {
        "X": np.load(folder / "X.npy", mmap_mode="r"),  # a memory map
        "y": X[:, 0] - X[:, 1],
        "codes": (X[:, 0] > 0.5).astype(int),
        "Xq": Xq,
        "yq": Xq[:, 0] - Xq[:, 1],
        "codes_q": (Xq[:, 0] > 0.5).astype(int),
    }


def _models(aggregator: Any) -> list[Any]:
    common: dict[str, Any] = {"epsilon": 2.0, "max_depth": 3, "aggregator": aggregator}
    return [
        LPDTRegressor(random_state=1, chunk_size=500, **common),
        LPDTRegressor(random_state=2, budget_split=0.3, **common),
        LPCTClassifier(random_state=3, chunk_size=700, **common),
        LPCTClassifier(random_state=4, mechanism="paper", **common),
    ]


def _fit(models: list[Any], data: dict[str, Any], **many: Any) -> list[Any]:
    """``models`` fitted one by one, or (``many``: ``fit_many``'s options) the regressors in
    one ``fit_many`` call and the classifiers in another."""
    public = {"X_public": data["Xq"]}
    regressors = [m for m in models if isinstance(m, LPDTRegressor)]
    classifiers = [m for m in models if not isinstance(m, LPDTRegressor)]
    rounds = [(regressors, data["y"], data["yq"]), (classifiers, data["codes"], data["codes_q"])]
    out: list[Any] = []
    for group, y, yq in rounds:
        if many:
            out += fit_many(group, data["X"], y, **public, y_public=yq, **many)
        else:
            out += [m.fit(data["X"], y, **public, y_public=yq) for m in group]
    return out


def _same(mine: Any, builtin: Any) -> bool:
    """The two fits saw all 2,000 holders and agree bit for bit: estimates and predictions."""
    rows = np.random.default_rng(6).uniform(size=(100, 2))
    return (
        mine.estimates_.n == builtin.estimates_.n == 2000
        and np.array_equal(mine.estimates_.count, builtin.estimates_.count)
        and np.array_equal(mine.estimates_.label_sum, builtin.estimates_.label_sum)
        and np.array_equal(mine.predict(rows), builtin.predict(rows))
    )


def test_the_capabilities_are_declared() -> None:
    mechanism = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    assert isinstance(ChunkCountingSum(mechanism, 4), FoldsSummaries)
    assert isinstance(SumAggregator(mechanism, 4), FoldsSummaries)
    assert not isinstance(ReportCollector(mechanism, 4), FoldsSummaries)  # it needs the reports
    assert isinstance(mechanism, FusedSummary)
    features = LaplaceFeatureLabelMechanism(epsilon=1.0, n_features=2, label_bound=1.0)
    assert not isinstance(features, FusedSummary)


@pytest.fixture
def no_reports(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fused kernel only: drawing reports one by one fails the test."""

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a report was materialised: the fast path was not taken")

    monkeypatch.setattr(KitMechanism, "privatize", refuse)


def test_fit_on_a_memory_map_takes_the_fast_path(data: dict[str, Any], no_reports: None):
    builtins = _fit(_models(None), data)
    for mine, builtin in zip(_fit(_models(ChunkCountingSum), data), builtins, strict=True):
        assert _same(mine, builtin)


def test_fit_many_runs_it_in_the_vectorised_batch(
    data: dict[str, Any], no_reports: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ldptree.rounds import _executors

    batched: list[Any] = []
    summarize_many = _executors.summarize_many

    def spy(jobs: Any) -> Any:
        batched.extend(job.mechanism for job in jobs)
        return summarize_many(jobs)

    monkeypatch.setattr(_executors, "summarize_many", spy)
    mine = _fit(_models(ChunkCountingSum), data, executor=None)
    monkeypatch.undo()
    # every piece of every round: chunks of 500 rows, all rows, 700 rows, all rows
    assert len(batched) == 4 + 1 + 3 + 1
    for a, b in zip(mine, _fit(_models(None), data), strict=True):
        assert _same(a, b)


def test_fit_many_on_dask(data: dict[str, Any], dask_client: Any) -> None:
    executor = Dask(dask_client, timeout=120)
    mine = _fit(_models(ChunkCountingSum), data, executor=executor)
    for a, b in zip(mine, _fit(_models(None), data), strict=True):
        assert _same(a, b)
