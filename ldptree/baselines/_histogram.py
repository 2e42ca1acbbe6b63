"""PHIST and APHIST: private histograms as compositions.

Each is ``uniform grid`` (:class:`~ldptree.baselines.GridPartitioner`, data-independent) x
``Laplace on U and V = Y U`` (:class:`~ldptree.mechanisms.LaplaceCellLabelMechanism` for regression,
:class:`~ldptree.mechanisms.LaplaceCellClassMechanism` for binary classification) x a truncated
ratio read-out, with ``mu^_j = c^_j / n`` (privatised marginal) and ``nu^_j = s^_j / n``:

* PHIST regression (Berrett-Gyorfi-Walk): ``m^_j = s^_j / c^_j`` if ``mu^_j > t`` else ``0``;
* APHIST regression (Gyorfi-Kroll; our reading of it, not verified against theirs):
  ``mu-_j = (mu^_j + h^d) / 2``, ``m^_j = nu^_j / mu-_j`` if ``mu-_j >= t`` else ``0``;
* PHIST classification (Berrett-Butucea): ``eta^_j = s^_j / c^_j`` if ``c^_j >= min_samples_cell``
  else ``0``; predict ``classes_[1{eta^ > 1/2}]``.

Private data is used only for estimation; the scaling box is the public min-max box when public
features are given, else ``[0, 1]^d``. Truncation to 0 follows the paper (not the label centre);
the regressors then clip every cell value into the label bound (``clip_predictions=False``: not).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import as_key, check_bool, check_epsilon, check_int, check_real
from ldptree.accounting import LedgerScope, PrivacyAccount
from ldptree.baselines._grid import MAX_CELLS, GridPartitioner, check_grid_size
from ldptree.estimators import (
    BaseEstimator,
    ClassifierMixin,
    FitPlan,
    Planned,
    RegressorMixin,
    check_class_labels,
    check_components,
    check_mechanism,
    clip_to_bound,
    encode_labels,
    fit_scaler,
    private_class_counts,
    ratio_with_fallback,
    resolve_classes,
    resolve_label_bound,
    route,
    simulates_holders,
)
from ldptree.mechanisms import LaplaceCellClassMechanism, LaplaceCellLabelMechanism
from ldptree.protocols import AggregatorFactory, CellEstimates, Mechanism, ReportT, StatsT
from ldptree.rounds import Round, certified_spend, charged_ledger, chunk_rows, release_key

_REPORT_NUMBERS = 2**24  # holders per chunk x cells: bounds the report batch in memory


class _Histogram(Planned, BaseEstimator):
    """Shared fit (:class:`~ldptree.estimators.Planned`): grid, mechanism, one private round,
    then the subclass's read-out. Subclasses give ``_readout_settings()`` (checked first),
    ``_public(epsilon, y_public)`` (the default mechanism, the label conversion, the label bound
    and the classes, from public data) and ``_finish(estimates, readout_settings)``."""

    #: The estimator's name in :data:`~ldptree.estimators._fits.ESTIMATOR_NEEDS`.
    _kind: str

    def _settings(self) -> tuple[Any, AggregatorFactory, float, int, int]:
        readout = self._readout_settings()
        if isinstance(self.mechanism, str):  # no variance-aware choice for the histograms
            raise ValueError(
                f"{self._kind} takes mechanism=None (the papers' Laplace release) or a "
                f"Mechanism object, got {self.mechanism!r}"
            )
        aggregator = check_components(
            self._kind,
            rule=GridPartitioner(self.num_cell, self.max_cells),
            mechanism=self.mechanism,
            aggregator=self.aggregator,
            simulation=self.simulation,
        )
        epsilon = check_epsilon(self.epsilon, "epsilon")
        chunk = check_int(self.chunk_size, "chunk_size", minimum=1)
        max_cells = check_int(self.max_cells, "max_cells", minimum=1)
        return readout, aggregator, epsilon, chunk, max_cells

    def _plan(self, settings: Any, Xq: Any, yq: Any, d: int, n: int | None) -> FitPlan[Any]:
        readout, aggregator, epsilon, chunk, max_cells = settings
        n_cells = check_grid_size(self.num_cell, d, max_cells)  # the memory guard first
        scaler = fit_scaler(Xq, d, 0.0)
        Xq_scaled = np.empty((0, d)) if Xq is None else scaler.transform(Xq)
        partition = GridPartitioner(self.num_cell, max_cells).fit(Xq_scaled)
        # per-holder reports: a piece holds chunk x cells numbers
        simulated = simulates_holders(aggregator)
        chunk = chunk_rows(
            chunk, numbers=n_cells, budget=_REPORT_NUMBERS, cap=True, simulated=simulated
        )
        default, labels, bound, classes = self._public(epsilon, yq)
        # the user's mechanism, else the default; certified for this grid (and charged) before
        # any private row is privatized
        mechanism = default if self.mechanism is None else check_mechanism(self.mechanism, epsilon)
        charge = certified_spend(mechanism, n_cells=partition.n_leaves, label_bound=bound)
        ledger = charged_ledger(self.privacy_budget, charge)
        ledger = ledger.post_process("aggregation and truncated read-out")
        round_ = Round(
            partition=partition,
            mechanism=mechanism,
            key=release_key(as_key(self.random_state), mechanism, partition),
            aggregator=aggregator,
            scaler=scaler,
            labels=labels,
            chunk_size=chunk,
        )

        def finish(estimates: CellEstimates | None) -> Any:
            assert estimates is not None  # a histogram fit always has a round
            self.n_features_in_ = d
            self.scaler_ = scaler
            self.partition_ = partition
            self.epsilon_ = epsilon
            self.mechanism_ = mechanism
            self.estimates_ = estimates
            if classes is not None:
                self.classes_ = classes
            else:
                self.label_bound_ = bound
            self._finish(estimates, readout)
            return self

        return FitPlan.of_round(round_, charge.certificate, ledger, n, finish, classes=classes)

    def _readout_settings(self) -> Any:
        raise NotImplementedError

    def _public(self, epsilon: float, yq: Any) -> tuple[Mechanism, Any, Any, Any]:
        raise NotImplementedError

    def _finish(self, estimates: CellEstimates, readout: Any) -> None:
        raise NotImplementedError

    def _cells(self, X: Any) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        self._check_fitted("leaf_values_", X)
        return route(X, self.n_features_in_, self.scaler_, self.partition_)


class _HistogramRegressor(RegressorMixin, _Histogram):
    label_bound: float | tuple[float, float] | None
    truncation: float
    clip_predictions: bool

    def _readout_settings(self) -> tuple[float, bool]:
        t = check_real(self.truncation, "truncation")
        if not 0.0 <= t < 1.0:
            raise ValueError(f"truncation must be in [0, 1), got {t}")
        return t, check_bool(self.clip_predictions, "clip_predictions")

    def _public(self, epsilon: float, yq: Any) -> tuple[Mechanism, Any, Any, Any]:
        bound = resolve_label_bound(self.label_bound, yq)
        return LaplaceCellLabelMechanism(epsilon=epsilon, label_bound=bound), None, bound, None

    def _finish(self, estimates: CellEstimates, readout: tuple[float, bool]) -> None:
        t, clip = readout
        values, self.truncated_ = self._readout(estimates, t)
        self.leaf_values_ = clip_to_bound(values, self.label_bound_) if clip else values

    def _readout(self, estimates: CellEstimates, t: float) -> tuple[FloatArray, np.ndarray]:
        raise NotImplementedError

    def predict(self, X: Any) -> FloatArray:
        """Cell values ``float[n]``; rows outside the scaling box get the boundary cell."""
        cells, _ = self._cells(X)
        return np.asarray(self.leaf_values_[cells], dtype=np.float64)


_REGRESSOR_DOC = """
    Parameters
    ----------
    epsilon:
        Per-holder budget ``eps > 0`` (``eps / 2`` on ``U``, ``eps / 2`` on ``V``).
    num_cell:
        Bins per feature, ``1 / h``; the grid has ``num_cell^d`` cells.
    truncation:
        ``t in [0, 1)``: cells whose (adjusted) estimated marginal is below ``t`` predict 0.
    label_bound:
        ``M`` or ``(lo, hi)``; ``None`` takes ``[min, max]`` of ``y_public`` (never private labels).
    clip_predictions:
        ``True`` (default): cell values, truncated ones included, are clipped into the label
        bound (free post-processing: the regression function lies in it). ``False``: the
        papers' read-out (a truncated cell predicts 0 even when 0 is outside the bound).
    max_cells:
        Refuse (``ValueError``) grids with more than this many cells, before allocating.
    chunk_size:
        Holders per batch (capped so that ``chunk * num_cell^d <= 2^24``).
    privacy_budget:
        Optional cap on the epsilon this fit may spend, or a shared
        :class:`~ldptree.accounting.LedgerScope` charged before the release (as for
        :class:`~ldptree.LPDTRegressor`).
    simulation:
        ``"per_holder"`` (the protocol, default) or ``"aggregate"``: experiments only, the summed
        reports drawn in law in ``O(num_cell^d)`` instead of ``O(n num_cell^d)``
        (:class:`~ldptree.rounds.SimulatedSumAggregator`, a simulation device).
    aggregator:
        ``None`` (the exact streaming sum) or an :class:`~ldptree.protocols.AggregatorFactory`
        ``(mechanism, n_cells) -> Aggregator``; not combined with ``simulation="aggregate"``.
    mechanism:
        ``None`` (Laplace on ``U`` and ``V``) or any :class:`~ldptree.protocols.Mechanism` on
        ``(cell, real label)`` records (``labels() -> RealLabels``) with ``epsilon`` equal to
        ``epsilon``; certified on the grid before any private row is privatized.
    random_state:
        ``None``, an int seed or a JAX key; drives all privacy noise.

    Attributes
    ----------
    partition_, scaler_, mechanism_, estimates_, leaf_values_, truncated_, label_bound_,
    privacy_ (certified epsilon, delta as sampled), privacy_certificate_, privacy_ledger_,
    n_features_in_
"""


class PHISTRegressor(_HistogramRegressor):
    __doc__ = (
        """Private histogram regression (Berrett-Gyorfi-Walk): ``m^_j = s^_j / c^_j`` if
    ``c^_j / n > t`` else 0 (module docstring).
    """
        + _REGRESSOR_DOC
    )

    _kind = "PHISTRegressor"

    def __init__(
        self,
        epsilon: float = 1.0,
        num_cell: int = 2,
        truncation: float = 0.01,
        *,
        label_bound: float | tuple[float, float] | None = None,
        clip_predictions: bool = True,
        max_cells: int = MAX_CELLS,
        chunk_size: int = 65536,
        privacy_budget: float | LedgerScope | PrivacyAccount | None = None,
        simulation: str = "per_holder",
        aggregator: AggregatorFactory | None = None,
        mechanism: Mechanism[ReportT, StatsT] | None = None,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    def _readout(
        self, estimates: CellEstimates, t: float
    ) -> tuple[FloatArray, np.ndarray[Any, Any]]:
        return ratio_with_fallback(estimates, np.zeros(estimates.count.shape), min_ratio=t)


class APHISTRegressor(PHISTRegressor):
    __doc__ = (
        """Adjusted private histogram (Gyorfi-Kroll, our reading): ``mu-_j = (c^_j / n + h^d)
    / 2`` and ``m^_j = (s^_j / n) / mu-_j`` if ``mu-_j >= t`` else 0 (module docstring).
    """
        + _REGRESSOR_DOC
    )

    _kind = "APHISTRegressor"

    def _readout(
        self, estimates: CellEstimates, t: float
    ) -> tuple[FloatArray, np.ndarray[Any, Any]]:
        n_cells = estimates.count.shape[0]
        averaged = (estimates.count / estimates.n + 1.0 / n_cells) / 2.0
        truncated = averaged < t
        safe = np.where(truncated, 1.0, averaged)
        values = np.where(truncated, 0.0, estimates.label_sum / estimates.n / safe)
        return values, truncated


class PHISTClassifier(ClassifierMixin, _Histogram):
    """Private histogram classifier (Berrett-Butucea, binary): ``eta^_j = s^_j / c^_j`` where
    ``c^_j >= min_samples_cell``, else 0; ``predict = classes_[1{eta^ > 1/2}]``.

    Parameters
    ----------
    epsilon, num_cell, max_cells, chunk_size, privacy_budget, simulation, aggregator,
    random_state:
        As :class:`PHISTRegressor`.
    mechanism:
        ``None`` (Laplace on ``U`` and ``V = Y U``) or a mechanism on ``(cell, class code)``
        records over two classes (``labels() -> ClassLabels(n_classes=2)``).
    min_samples_cell:
        Cells with estimated count below it get ``eta^ = 0`` (the reference's default 2).
    classes:
        The two class labels, if ``y_public`` does not show both (never learned from private y).

    Attributes
    ----------
    classes_, partition_, scaler_, mechanism_, estimates_, leaf_values_ (``eta^``),
    truncated_, privacy_ (certified epsilon, delta as sampled), privacy_certificate_,
    privacy_ledger_, n_features_in_
    """

    _kind = "PHISTClassifier"

    def __init__(
        self,
        epsilon: float = 1.0,
        num_cell: int = 2,
        min_samples_cell: float = 2.0,
        *,
        classes: Any = None,
        max_cells: int = MAX_CELLS,
        chunk_size: int = 65536,
        privacy_budget: float | LedgerScope | PrivacyAccount | None = None,
        simulation: str = "per_holder",
        aggregator: AggregatorFactory | None = None,
        mechanism: Mechanism[ReportT, StatsT] | None = None,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    _label_check = staticmethod(check_class_labels)

    def _readout_settings(self) -> float:
        return check_real(self.min_samples_cell, "min_samples_cell")

    def _public(self, epsilon: float, yq: Any) -> tuple[Mechanism, Any, Any, Any]:
        classes = resolve_classes(self.classes, yq)
        if classes.shape[0] != 2:
            raise ValueError(
                f"PHISTClassifier is binary, but there are {classes.shape[0]} classes (from "
                "y_public/classes)"
            )
        mechanism = LaplaceCellClassMechanism(epsilon=epsilon, n_classes=2)
        return mechanism, functools.partial(encode_labels, classes=classes, name="y"), None, classes

    def _finish(self, estimates: CellEstimates, floor: float) -> None:
        usable = estimates.count >= floor
        safe = np.where(usable, estimates.count, 1.0)
        # the class-1 count, whether the mechanism releases it alone or per class ([L, 2])
        ones = private_class_counts(estimates, 2)[:, 1]
        self.leaf_values_ = np.where(usable, ones / safe, 0.0)
        self.truncated_ = ~usable

    def predict_proba(self, X: Any) -> FloatArray:
        """``float[n, 2]``: ``(1 - eta^, eta^)`` of each row's cell, ``eta^`` clipped to [0, 1]."""
        cells, _ = self._cells(X)
        eta = np.clip(self.leaf_values_[cells], 0.0, 1.0)
        return np.stack([1.0 - eta, eta], axis=1)

    def predict(self, X: Any) -> np.ndarray[Any, Any]:
        """``classes_[1{eta^ > 1/2}]``."""
        cells, _ = self._cells(X)
        labels: np.ndarray[Any, Any] = self.classes_[(self.leaf_values_[cells] > 0.5).astype(int)]
        return labels
