"""``aggregator=``: user-written aggregators in LPDT, LPCT and PHIST, the aggregate simulation as
an aggregator, and the components checked at the start of ``fit``. All deterministic."""

from __future__ import annotations

import functools
from typing import Any

import attrs
import jax
import numpy as np
import pytest

from ldptree import LPCTClassifier, LPCTPrunedClassifier, LPDTRegressor
from ldptree.baselines import PHISTClassifier, PHISTRegressor
from ldptree.mechanisms import LaplaceCellClassMechanism, RRLaplaceMechanism
from ldptree.partitions import MaxEdgePartitioner
from ldptree.protocols import AggregatorFactory, SimulatesHolders
from ldptree.rounds import (
    PrivateRows,
    ReportCollector,
    Round,
    SimulatedSumAggregator,
    SumAggregator,
    release_key,
    run,
)
from ldptree.rounds._aggregators import to_host


@attrs.frozen
class _State:
    n: int = 0
    stats: Any = None
    chunks: tuple[int, ...] = ()


@attrs.frozen
class ChunkCountingSum:
    """A user's aggregator, written from the mechanism's summarize/debias only: sums the
    statistics and records the number of reports per chunk in ``log`` at finalize."""

    mechanism: Any
    n_cells: int
    log: list[_State] = attrs.field(factory=list, eq=False)

    def init(self) -> _State:
        return _State()

    def update(self, state: _State, reports: Any) -> _State:
        m = int(jax.tree_util.tree_leaves(reports)[0].shape[0])
        stats = jax.tree_util.tree_map(to_host, self.mechanism.summarize(reports, self.n_cells))
        return self.merge(state, _State(m, stats, (m,)))

    def merge(self, a: _State, b: _State) -> _State:
        if a.stats is None or b.stats is None:
            stats = b.stats if a.stats is None else a.stats
        else:
            stats = jax.tree_util.tree_map(np.add, a.stats, b.stats)
        return _State(a.n + b.n, stats, a.chunks + b.chunks)

    def finalize(self, state: _State) -> Any:
        self.log.append(state)
        return self.mechanism.debias(state.stats, state.n)


def run_round(partition, mechanism, X, y, *, key, chunk_size, aggregator=SumAggregator):
    """One round over the rows ``X, y`` (already scaled) with the fit's noise ``key``."""
    round_ = Round(
        partition=partition,
        mechanism=mechanism,
        key=release_key(key, mechanism, partition),
        aggregator=aggregator,
        chunk_size=chunk_size,
    )
    return run([round_], PrivateRows.of(X, y))[0]


@pytest.fixture(scope="module")
def data() -> dict[str, Any]:
    rng = np.random.default_rng(3)
    X, Xq = rng.uniform(size=(300, 2)), rng.uniform(size=(80, 2))
    return {
        "X": X,
        "y": X[:, 0] - X[:, 1],
        "codes": (X[:, 0] > 0.5).astype(int),
        "Xq": Xq,
        "yq": Xq[:, 0] - Xq[:, 1],
        "codes_q": (Xq[:, 0] > 0.5).astype(int),
    }


def _same(a: Any, b: Any) -> None:
    assert a.n == b.n
    assert np.array_equal(np.asarray(a.count), np.asarray(b.count))
    assert np.array_equal(np.asarray(a.label_sum), np.asarray(b.label_sum))


def test_user_aggregator_in_lpdt_equals_the_default(data: dict[str, Any]) -> None:
    log: list[_State] = []
    kw: dict[str, Any] = {"epsilon": 2.0, "max_depth": 3, "chunk_size": 128, "random_state": 1}
    fit = {"X_public": data["Xq"], "y_public": data["yq"]}
    mine = LPDTRegressor(aggregator=functools.partial(ChunkCountingSum, log=log), **kw)
    mine.fit(data["X"], data["y"], **fit)
    default = LPDTRegressor(**kw).fit(data["X"], data["y"], **fit)
    assert [s.chunks for s in log] == [(128, 128, 44)]  # every holder, chunk by chunk
    _same(mine.estimates_, default.estimates_)  # the generic path equals the fused sum
    assert np.array_equal(mine.predict(data["X"]), default.predict(data["X"]))


@pytest.mark.parametrize("kind", [LPCTClassifier, LPCTPrunedClassifier])
def test_user_aggregator_in_classifiers_equals_the_default(data: dict[str, Any], kind: Any) -> None:
    log: list[_State] = []
    kw: dict[str, Any] = {"epsilon": 2.0, "max_depth": 2, "chunk_size": 100, "random_state": 1}
    if kind is LPCTPrunedClassifier:
        kw["min_depth"] = 1
    fit = {"X_public": data["Xq"], "y_public": data["codes_q"]}
    mine = kind(aggregator=functools.partial(ChunkCountingSum, log=log), **kw)
    mine.fit(data["X"], data["codes"], **fit)
    default = kind(**kw).fit(data["X"], data["codes"], **fit)
    assert [s.chunks for s in log] == [(100, 100, 100)]
    _same(mine.estimates_, default.estimates_)
    assert np.array_equal(mine.predict(data["X"]), default.predict(data["X"]))


@pytest.mark.parametrize("kind", [PHISTRegressor, PHISTClassifier])
def test_user_aggregator_in_histograms_equals_the_default(data: dict[str, Any], kind: Any) -> None:
    log: list[_State] = []
    y = data["y"] if kind is PHISTRegressor else data["codes"]
    yq = data["yq"] if kind is PHISTRegressor else data["codes_q"]
    kw: dict[str, Any] = {"epsilon": 2.0, "num_cell": 3, "random_state": 1}
    mine = kind(aggregator=functools.partial(ChunkCountingSum, log=log), **kw)
    mine.fit(data["X"], y, X_public=data["Xq"], y_public=yq)
    default = kind(**kw).fit(data["X"], y, X_public=data["Xq"], y_public=yq)
    assert sum(log[0].chunks) == 300 and log[0].n == 300
    _same(mine.estimates_, default.estimates_)


def test_factory_is_bound_to_the_fit_mechanism_and_partition(data: dict[str, Any]) -> None:
    bound: list[Any] = []

    def factory(mechanism: Any, n_cells: int) -> SumAggregator:
        bound.append((mechanism, n_cells))
        return SumAggregator(mechanism, n_cells)

    assert isinstance(factory, AggregatorFactory)
    model = LPDTRegressor(epsilon=1.0, max_depth=2, aggregator=factory, random_state=0)
    model.fit(data["X"], data["y"], X_public=data["Xq"], y_public=data["yq"])
    assert bound == [(model.mechanism_, model.partition_.n_leaves)]


def test_simulated_aggregator_draws_the_summed_reports(data: dict[str, Any]) -> None:
    """run_round with SimulatedSumAggregator is debias(simulate_summary(...)) of all records, for
    any chunking (the records are kept in order)."""
    mechanism = LaplaceCellClassMechanism(epsilon=1.0, n_classes=2)
    partition = MaxEdgePartitioner(max_depth=2).fit(data["Xq"], data["codes_q"].astype(float))
    key = jax.random.key(7)
    codes = data["codes"]
    got = [
        run_round(
            partition,
            mechanism,
            data["X"],
            codes,
            key=key,
            chunk_size=size,
            aggregator=SimulatedSumAggregator,
        ).estimates
        for size in (50, 1000)
    ]
    cells = np.asarray(partition.cells(data["X"]))
    summary = mechanism.simulate_summary(
        release_key(key, mechanism, partition), cells, codes, partition.n_leaves
    )
    want = mechanism.debias(summary, 300)
    _same(got[0], want)
    _same(got[1], want)
    assert isinstance(SimulatedSumAggregator(mechanism, 4), SimulatesHolders)
    assert not isinstance(SumAggregator(mechanism, 4), SimulatesHolders)


def test_simulation_option_is_the_simulated_aggregator(data: dict[str, Any]) -> None:
    fit = {"X_public": data["Xq"], "y_public": data["codes_q"]}
    kw: dict[str, Any] = {"epsilon": 2.0, "max_depth": 2, "random_state": 0}
    by_name = LPCTClassifier(simulation="aggregate", **kw).fit(data["X"], data["codes"], **fit)
    by_class = LPCTClassifier(aggregator=SimulatedSumAggregator, **kw)
    by_class.fit(data["X"], data["codes"], **fit)
    # the same simulated sums, drawn by the papers' mechanism (the only one that can simulate)
    assert type(by_name.mechanism_).__name__ == "LaplaceCellClassMechanism"
    assert by_name.estimates_.n == by_class.estimates_.n == data["X"].shape[0]
    assert np.array_equal(
        np.asarray(by_name.estimates_.count), np.asarray(by_class.estimates_.count)
    )
    assert np.array_equal(
        np.asarray(by_name.estimates_.label_sum), np.asarray(by_class.estimates_.label_sum)
    )


def test_simulated_aggregator_refuses_reports_and_unsupported_mechanisms() -> None:
    mechanism = LaplaceCellClassMechanism(epsilon=1.0)
    simulated = SimulatedSumAggregator(mechanism, 2)
    with pytest.raises(TypeError, match="takes records"):
        simulated.update(simulated.init(), {"cell": np.zeros((1, 2))})
    with pytest.raises(ValueError, match="no records were aggregated"):
        simulated.finalize(simulated.init())

    class NoSimulation:
        epsilon = 1.0

    with pytest.raises(TypeError, match="no simulate_summary"):
        SimulatedSumAggregator(NoSimulation(), 2)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("aggregator", "simulation", "error", "match"),
    [
        (5, "per_holder", TypeError, "aggregator must be None or a callable"),
        ("sum", "per_holder", TypeError, "aggregator must be None or a callable"),
        (SumAggregator, "aggregate", ValueError, "not both"),
    ],
    ids=["int", "str", "with-simulation"],
)
def test_bad_aggregator_is_refused_at_fit_start(
    aggregator: Any, simulation: str, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        LPCTClassifier(aggregator=aggregator, simulation=simulation).fit("not data", None)


def test_bound_aggregator_instance_is_refused() -> None:
    instance = SumAggregator(RRLaplaceMechanism(epsilon=1.0, label_bound=1.0), 4)
    with pytest.raises(TypeError, match=r"aggregator must be None or a callable.*SumAggregator"):
        LPDTRegressor(aggregator=instance).fit("not data", None)


@pytest.mark.parametrize("kind", [LPDTRegressor, LPCTClassifier, LPCTPrunedClassifier])
@pytest.mark.parametrize("rule", [42, None, 1.5, object()], ids=["int", "None", "float", "obj"])
def test_rule_of_the_wrong_type_is_a_type_error_at_fit_start(kind: Any, rule: Any) -> None:
    with pytest.raises(TypeError, match=r"rule must be one of .* or a Partitioner"):
        kind(rule=rule).fit("not data", "not labels")


def test_unknown_rule_name_is_a_value_error_at_fit_start() -> None:
    with pytest.raises(ValueError, match=r"rule must be one of"):
        LPCTClassifier(rule="maxedge").fit("not data", "not labels")


def test_mechanism_not_implementing_the_protocol_is_refused_at_fit_start() -> None:
    with pytest.raises(TypeError, match="mechanism must implement the Mechanism protocol"):
        LPDTRegressor(mechanism=42).fit("not data", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mechanism must be one of"):
        LPDTRegressor(mechanism="rr").fit("not data", None)


def test_report_collector_sums_like_the_default_and_keeps_the_reports(
    data: dict[str, Any],
) -> None:
    mechanism = RRLaplaceMechanism(epsilon=1.0, label_bound=1.0)
    partition = MaxEdgePartitioner(max_depth=2).fit(data["Xq"], data["yq"])
    key = jax.random.key(2)
    chunks = [(data["X"][:120], data["y"][:120]), (data["X"][120:], data["y"][120:])]
    round_ = Round(
        partition=partition,
        mechanism=mechanism,
        key=release_key(key, mechanism, partition),
        aggregator=ReportCollector,
        chunk_size=100,
    )
    result = run([round_], PrivateRows.of(chunks))[0]
    collector, state = result.aggregator, result.state
    assert isinstance(collector, ReportCollector)
    _same(
        collector.finalize(state),
        run_round(partition, mechanism, data["X"], data["y"], key=key, chunk_size=300).estimates,
    )
    reports = collector.reports(state)
    whole = mechanism.privatize(
        release_key(key, mechanism, partition),
        partition.cells(data["X"]),
        jax.numpy.asarray(data["y"], dtype=jax.numpy.float32),
        partition.n_leaves,
    )
    for got, want in zip(
        jax.tree_util.tree_leaves(reports), jax.tree_util.tree_leaves(whole), strict=True
    ):
        assert np.array_equal(got, np.asarray(want))


def test_deconv_runs_the_round_on_the_trivial_partition(data: dict[str, Any]) -> None:
    """DECONV's label total (its one cell statistic) is the sum of the kept released labels."""
    from ldptree.baselines import DECONVRegressor

    model = DECONVRegressor(epsilon=2.0, chunk_size=70, random_state=0)
    model.fit(data["X"], data["y"], X_public=data["Xq"], y_public=data["yq"])
    assert model.noisy_features_.shape == (300, 2) and model.noisy_labels_.shape == (300,)
    assert model.estimates_.n == 300 and model.estimates_.count.tolist() == [300.0]
    assert np.isclose(model.estimates_.label_sum[0], model.noisy_labels_.sum(), rtol=1e-9)
