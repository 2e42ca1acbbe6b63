"""The three protocols every estimator composes: Partitioner x Mechanism x Aggregator.

One round of the protocol:

1. The curator fits a :class:`Partitioner` on public data only and publishes the resulting
   :class:`~ldptree.partitions.Partition` ``pi = {A_1, ..., A_L}``.
2. Holder ``i`` encodes its record as ``(j_i, y_i)`` with ``X_i in A_{j_i}`` and releases one report
   ``R_i ~ M(. | j_i, y_i)`` from a :class:`Mechanism`. ``M`` is epsilon-LDP when for all records
   ``r, r'`` and reports ``s``: ``M(s | r) <= e^epsilon M(s | r')``. This is the only code that
   touches private data.
3. The curator folds reports into per-cell sufficient statistics with an :class:`Aggregator`, a
   commutative monoid (``init``/``update``/``merge``), and ``finalize`` returns unbiased estimates
   of the per-cell count ``c_j = sum_i 1{j_i = j}`` and label sum ``s_j = sum_i y_i 1{j_i = j}``.
   Estimators take the aggregator as an :class:`AggregatorFactory` (``aggregator=``), bound to the
   mechanism and the number of cells once the partition is published.

Estimators read predictions out of those estimates (LPDT: ``s_j / c_j``, LPDT paper eq. (5)).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

import attrs
import jax
from typing_extensions import TypeVar as DefaultTypeVar

from ldptree._typing import FloatArray, PRNGKey
from ldptree.partitions._partition import Partition

__all__ = [
    "Aggregator",
    "AggregatorFactory",
    "CellEstimates",
    "FoldsSummaries",
    "FusedSummary",
    "LeafFit",
    "Mechanism",
    "OwnRoundEstimator",
    "Partition",
    "Partitioner",
    "PreparesSummary",
    "PublicCells",
    "ReadOut",
    "ReportT",
    "SimulatesFromCounts",
    "SimulatesHolders",
    "StatsT",
    "SupportsAggregateSimulation",
    "declares",
]

Report = Any  # a pytree of arrays with a leading holder axis
Stats = Any  # a pytree of per-cell sums

#: A mechanism's report type (what ``privatize`` returns and ``summarize`` takes) and its
#: statistics type (what ``summarize`` returns and ``debias`` takes). ``Mechanism`` written bare
#: is ``Mechanism[Any, Any]``; a function taking ``Mechanism[ReportT, StatsT]`` makes the type
#: checker infer both from the argument, so a mechanism whose three methods do not fit together
#: (e.g. ``summarize`` taking another type than ``privatize`` returns) is a type error.
ReportT = DefaultTypeVar("ReportT", default=Any)
StatsT = DefaultTypeVar("StatsT", default=Any)


@attrs.frozen(eq=False)
class CellEstimates:
    """Unbiased per-cell estimates from aggregated reports.

    ``count[j]`` (``float[L]``) estimates ``c_j`` and ``label_sum[j]`` estimates ``s_j``; ``n`` is
    the exact number of reports aggregated (report counts are public in the one-round protocol).

    ``label_sum`` is ``float[L]`` for a scalar label (regression: ``sum_i y_i 1{j_i = j}``; binary
    classification: the class-1 count) and ``float[L, K]`` for per-class counts
    ``sum_i 1{j_i = j, y_i = k}`` (multi-class).

    A JAX pytree (``count`` and ``label_sum`` are its leaves, ``n`` is static), so estimates can
    be returned from ``jax.jit`` and batched by ``jax.vmap``.
    """

    count: FloatArray
    label_sum: FloatArray
    n: int


jax.tree_util.register_pytree_node(
    CellEstimates,
    lambda e: ((e.count, e.label_sum), e.n),
    lambda n, children: CellEstimates(count=children[0], label_sum=children[1], n=n),
)


@attrs.frozen(eq=False)
class LeafFit:
    """A read-out: per-leaf ``values`` (regression: ``float[L]``; classification: ``eta``,
    ``float[L, K]``), where a fallback replaced the private estimate (``bool[L]``), and the
    private estimates it was read from (``None`` when nothing private was collected). A JAX
    pytree."""

    values: FloatArray
    used_fallback: Any
    estimates: CellEstimates | None


jax.tree_util.register_pytree_node(
    LeafFit,
    lambda f: ((f.values, f.used_fallback, f.estimates), None),
    lambda _, c: LeafFit(values=c[0], used_fallback=c[1], estimates=c[2]),
)


@attrs.frozen(eq=False)
class PublicCells:
    """What a :class:`ReadOut` may use besides the private estimates: public or declared
    quantities only, all fixed before any report is seen.

    ``partition`` and ``mechanism`` are the published ones; ``counts`` (``float[L]``) the public
    rows per cell; ``label_mean`` (regression, ``float[L]``) the public leaf mean, the bound's
    midpoint (or the public mean) in a cell without public rows, the built-ins' fallback;
    ``class_counts`` (classification, ``float[L, K]``) the public rows per (cell, class);
    ``label_bound`` the declared label range (regression); ``holder_variance`` ``V``, the
    variance one holder adds to a cell's label sum of labels centred in the bound (the
    mechanism's own statement, ``None`` if it makes none), so a cell with debiased count
    ``c^_j`` has a ratio ``s^_j / c^_j`` of noise variance about ``n V / c^_j^2``."""

    partition: Partition
    mechanism: Any
    counts: FloatArray
    label_mean: FloatArray | None = None
    class_counts: FloatArray | None = None
    label_bound: tuple[float, float] | None = None
    holder_variance: float | None = None

    @property
    def n_cells(self) -> int:
        return self.partition.n_leaves


@runtime_checkable
class ReadOut(Protocol):
    """Per-leaf values from a round's debiased estimates: post-processing, no privacy cost.

    ``readout(estimates, public) -> LeafFit``: ``estimates`` is the round's
    :class:`CellEstimates` (``n`` reports), ``public`` the :class:`PublicCells` of the fit. The
    values are ``float[L]`` for a regressor (its predictions) and ``float[L, K]`` for a
    classifier (``eta``: the predicted class is the arg-max, probabilities its projection onto
    the simplex). A read-out must not read private data other than ``estimates``; written with
    array operations that work on NumPy and ``jax.numpy`` alike, it runs under ``jax.jit``.
    Estimators take one as ``readout=`` (besides the built-in names) and keep it under
    ``clone``/``get_params``, so an immutable object (e.g. ``attrs.frozen``) is best."""

    def __call__(self, estimates: CellEstimates, public: PublicCells) -> LeafFit: ...


@runtime_checkable
class Partitioner(Protocol):
    """Grows a partition of ``[0, 1]^d`` from public data; deterministic given ``key``."""

    def fit(self, X_public: Any, y_public: Any = None, *, key: PRNGKey | None = None) -> Partition:
        """``float[n_q, d]`` (already scaled), optional ``float[n_q]`` -> :class:`Partition`."""
        ...


@runtime_checkable
class Mechanism(Protocol[ReportT, StatsT]):
    """A local randomizer for records ``(cell, label)`` and the algebra to debias its reports.

    Implementations are immutable and declare ``epsilon``, the whole per-holder budget.

    * ``privatize(key, cells, labels, n_cells, *, first_holder=0)``: vectorised over holders, pure
      and jittable. Holder ``first_holder + i`` draws its randomness from
      ``fold_in(key, first_holder + i)``, so reports do not depend on how holders are chunked.
      Holder indices are 32-bit: ``first_holder >= 0`` and ``first_holder + n <= 2^32`` (the
      built-ins refuse a concrete value outside; under ``jit`` the caller must keep to it).
      Labels are clipped to the declared bound inside.
    * ``summarize(reports, n_cells)``: per-chunk sufficient statistics (a pytree of arrays whose
      leaves add up across chunks exactly).
    * ``debias(stats, n)``: the affine map from summed statistics to :class:`CellEstimates`.
    * ``log_prob(report, cell, label, n_cells)``: log-likelihood of one holder's report given one
      record, in float64, for the accountant and for likelihood-based tests.

    Generic in the report type ``ReportT`` (``privatize`` returns it, ``summarize`` takes it) and
    the statistics type ``StatsT`` (``summarize`` returns it, ``debias`` takes it): the estimators,
    the round and :func:`~ldptree.accounting.verify_ldp` take ``Mechanism[ReportT, StatsT]``, so
    ``mypy --strict`` rejects a mechanism whose methods do not fit together.

    Optional: the capability :class:`FusedSummary` (one kernel from records to summed reports,
    vectorisable over releases) and ``spend`` (a ``PrivacySpend``).

    Verification interface (optional, :class:`~ldptree.accounting.VerifiableMechanism`): a
    mechanism whose claim should be *certified* by :func:`~ldptree.accounting.verify_ldp` also
    implements ``report_law(n_cells) -> ReportLaw``: its report as independent blocks of
    coordinates, each released by a :class:`~ldptree.accounting.Channel` (a finite output set
    with exact log-probabilities, a grid-Laplace code, continuous Laplace noise, or any object
    with the channel methods) whose inputs are functions of the record (the record's own cell
    vs. the other cells, the label, or the whole record). Describe the law *as realised*
    (e.g. flip probabilities after integer thresholding) from the same constants ``privatize``
    uses, and attach a :class:`~ldptree.accounting.Sampling` to channels whose sampler only
    approximates the declared law. See :mod:`ldptree.accounting._law` and ``docs/privacy.md``.
    """

    @property
    def epsilon(self) -> float: ...

    def privatize(
        self,
        key: PRNGKey,
        cells: jax.Array,
        labels: jax.Array,
        n_cells: int,
        *,
        first_holder: int = 0,
    ) -> ReportT: ...

    def summarize(self, reports: ReportT, n_cells: int) -> StatsT: ...

    def debias(self, stats: StatsT, n: int) -> CellEstimates: ...

    def log_prob(self, report: Report, cell: int, label: float, n_cells: int) -> float: ...


@runtime_checkable
class PreparesSummary(Protocol):
    """Mechanism capability: ``prepare_summary(key, cells, labels, n_cells)`` compiles (or loads)
    the kernel :meth:`FusedSummary.privatize_summarize` runs on records of these shapes, without
    running it and without reading a record's value. A round calls it on its first piece beside
    the piece's routing, so that a process's first fit compiles both side by side."""

    def prepare_summary(self, key: PRNGKey, cells: Any, labels: Any, n_cells: int) -> None: ...


@runtime_checkable
class FusedSummary(Protocol):
    """Mechanism capability: one kernel from records to summed reports (no report materialised),
    which many releases can also run as one ``jax.vmap`` call.

    * ``privatize_summarize(key, cells, labels, n_cells, *, first_holder=0, n_holders=None)`` is
      exactly ``summarize(privatize(key, cells[:m], labels[:m], n_cells, first_holder=...))``
      with ``m = n_holders`` (default: every record; later rows only pad the batch to a length
      already compiled), for at most ``max_summary_rows`` records. Concrete records reach it as
      NumPy arrays (real labels float32, class codes integers): no device round trip.
    * For the batch (:func:`~ldptree.estimators.fit_many`): ``summary_inputs(key, cells, labels,
      n_cells, first_holder, rows=None)`` gives ``(spec, consts, args)`` (a hashable static
      description, the release's constants, its inputs padded to ``rows``), the pure
      ``summary_kernel(spec, consts, *args)`` (one function object for every release it may be
      batched with) returns the sums, and ``summary_stats(spec, sums, n_cells)`` names them.
      Releases whose kernel, ``spec`` and input shapes agree run in one call, each with its own
      key, records and constants: every release's statistics are its own, bit for bit.
    * ``args`` is ``(key data, cells, labels, first_holder, n_valid)``: a round resident on a
      device (:mod:`ldptree.rounds._resident`) calls ``summary_kernel`` inside its own compiled
      loop on blocks of the records it routed there, passing the block's cells, labels, first
      holder and ``n_valid`` (the holders from the block's first row on: any integer, below 0
      or above the block's rows included) in those places. ``summary_kernel`` must therefore be
      traceable, pure, and sum integer statistics exactly for up to ``max_summary_rows``
      holders.
    """

    @property
    def max_summary_rows(self) -> int: ...

    def privatize_summarize(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        *,
        first_holder: int = 0,
        n_holders: int | None = None,
    ) -> Stats: ...

    def summary_inputs(
        self,
        key: PRNGKey,
        cells: Any,
        labels: Any,
        n_cells: int,
        first_holder: Any,
        rows: int | None = None,
        *,
        n_holders: int | None = None,
    ) -> tuple[Any, Any, tuple[Any, ...]]: ...

    @property
    def summary_kernel(self) -> Callable[..., tuple[jax.Array, ...]]: ...

    def summary_stats(self, spec: Any, sums: Any, n_cells: int) -> Stats: ...


@runtime_checkable
class SupportsAggregateSimulation(Protocol):
    """A mechanism that can draw the *sums* of all holders' reports directly (a simulation device).

    ``simulate_summary(key, cells, labels, n_cells)`` returns statistics that ``debias`` accepts,
    drawn from (or close to, as documented by the mechanism) the law of the summed per-holder
    reports. It reads the whole private sample at once, so it is a simulation device for
    experiments, never the protocol.
    """

    def simulate_summary(self, key: PRNGKey, cells: Any, labels: Any, n_cells: int) -> Stats: ...


@runtime_checkable
class SimulatesFromCounts(Protocol):
    """A mechanism whose aggregate simulation needs only the records' counts per (cell, label
    level), so that the simulation's memory does not grow with the number of holders.

    ``record_counts(cells, labels, n_cells)`` returns those counts (integers ``[n_cells,
    levels]``, summable over chunks), or ``None`` when the levels are random (e.g. real labels
    rounded at random), in which case the records must be kept; ``simulate_counts(key, counts,
    n_cells)`` equals ``simulate_summary`` of any records with those counts, bit for bit.
    """

    def record_counts(self, cells: Any, labels: Any, n_cells: int) -> Any: ...

    def simulate_counts(self, key: PRNGKey, counts: Any, n_cells: int) -> Stats: ...


S = TypeVar("S")


@runtime_checkable
class Aggregator(Protocol[S]):
    """A streaming monoid over reports: ``update``/``merge`` are associative and exact, so one
    process, chunked streaming and a distributed reduction give identical results."""

    def init(self) -> S: ...

    def update(self, state: S, reports: Report) -> S: ...

    def merge(self, a: S, b: S) -> S: ...

    def finalize(self, state: S) -> CellEstimates: ...


@runtime_checkable
class FoldsSummaries(Protocol[S]):
    """Aggregator capability: ``from_summary(n, stats)`` is the state of ``n`` holders whose
    reports' statistics (``mechanism.summarize``) sum, leaf by leaf, to ``stats`` (widened for
    exact sums: int64/float64 on the host, JAX's widest types under a trace). It must equal
    ``update(init(), reports)`` for such reports and be pure (it may run in worker threads or on
    cluster workers). With ``merge`` the round then takes each chunk's sums from the mechanism's
    fused kernel (:class:`FusedSummary`), no report materialised, and ``fit_many`` batches it;
    an aggregator without it receives every chunk's reports through ``update``."""

    def from_summary(self, n: int, stats: Stats) -> S: ...

    def merge(self, a: S, b: S) -> S: ...


@runtime_checkable
class AggregatorFactory(Protocol):
    """What an estimator's ``aggregator=`` takes: a callable ``(mechanism, n_cells) ->``
    :class:`Aggregator`, called once per fit, after the partition is published (so ``n_cells`` is
    known) and before any report exists.

    An aggregator class whose constructor takes ``(mechanism, n_cells)`` is one (the default,
    :class:`~ldptree.rounds.SumAggregator`, is); so is a ``functools.partial`` of a class with
    more parameters. What the aggregator may rely on is the mechanism's own algebra: ``update``
    receives one chunk of reports as ``mechanism.privatize`` returns them, and ``finalize`` must
    return unbiased :class:`CellEstimates` (usually ``mechanism.debias`` of summed
    ``mechanism.summarize`` statistics).
    """

    def __call__(self, mechanism: Mechanism[Any, Any], n_cells: int) -> Aggregator[Any]: ...


@runtime_checkable
class SimulatesHolders(Protocol[S]):
    """An aggregator that is a *simulation device*: it folds the holders' records, not reports.

    ``update_records(state, key, cells, labels, *, first_holder)`` receives a chunk of routed
    records (cells ``int[m]`` and labels as the estimator encodes them) and the release's noise
    key, and ``finalize`` draws the estimates in law (e.g. the summed reports at once, from the
    mechanism's ``simulate_summary``). It sees private data, which a curator in the protocol
    never does, so it is for experiments only; the round calls ``update_records`` instead of
    privatizing when an aggregator has it.
    """

    def update_records(
        self, state: S, key: PRNGKey, cells: Any, labels: Any, *, first_holder: int
    ) -> S: ...


_DECLARED: dict[tuple[type, type], bool] = {}


def declares(component: Any, capability: type) -> bool:
    """``isinstance(component, capability)``, decided once per class (capabilities are declared
    by classes): the check reads every member, properties too, too slow for a round's chunks."""
    key = (type(component), capability)
    found = _DECLARED.get(key)
    if found is None:
        found = _DECLARED[key] = isinstance(component, capability)
    return found


@runtime_checkable
class OwnRoundEstimator(Protocol):
    """The one documented exception to "every estimator is Partitioner x Mechanism x Aggregator".

    An estimator whose private release does not fit the one round (reports debiased into per-cell
    :class:`CellEstimates`) runs its own protocol and says which in ``private_round``, a sentence
    naming it (``docs/architecture.md``, "Estimators outside the one round"). Its privacy is still
    accounted per holder (``privacy_``, ``privacy_ledger_``). The library's two are
    :class:`~ldptree.baselines.PSGDClassifier` (sequentially interactive: each holder's randomizer
    depends on the model built from earlier messages) and :class:`~ldptree.baselines.PGLMClassifier`
    (one Gaussian release of GLM sufficient statistics, which are not per-cell counts and label
    sums).
    """

    private_round: ClassVar[str]
