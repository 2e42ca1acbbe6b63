"""LPDT: the locally private decision tree for regression (LPDT paper, Algorithm 1).

A composition, not a code path of its own:

* **Partitioner** (public data only): the max-edge rule (``rule="max_edge"``, LPDT-M), the CART
  rule (``rule="cart"``, LPDT-V: variance reduction at 10 quantile thresholds per feature), the
  random max-edge rule, or any :class:`~ldptree.protocols.Partitioner`; features are
  min-max scaled on public data.
* **Mechanism**: :class:`~ldptree.mechanisms.RRLaplaceMechanism` with budget split ``rho``, or any
  mechanism passed as ``mechanism``.
* **Aggregator + read-out**: exact streaming sums, then for ``x in A_j``

      f^(x) = sum_i Y~_i U~_ij / sum_i U~_ij            (paper eq. (5))

  with the public leaf mean as fallback when the debiased count ``c^_j <= tau n`` (``tau`` =
  ``min_private_ratio``; the reference's default ``tau = 0`` only catches non-positive counts).

Privacy: the partition, the scaling box and the label bound come from public data or the user,
so the only private release is each holder's single report. Before any private row is touched the
mechanism's report law is certified by :func:`~ldptree.accounting.verify_ldp` for the published
partition (a mechanism whose certificate fails is refused unless ``allow_uncertified=True``); the
certified ``(epsilon, delta)`` is recorded in a :class:`~ldptree.accounting.PrivacyLedger`
(``privacy_ledger_``) whose total is ``privacy_``, and the certificate is ``privacy_certificate_``.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import numpy as np

from ldptree._typing import FloatArray
from ldptree._validation import (
    as_key,
    check_choice,
    check_epsilon,
    check_int,
    check_open_unit,
    check_real,
)
from ldptree.estimators._base import BaseEstimator, RegressorMixin
from ldptree.estimators._certify import certified_spend
from ldptree.estimators._composition import (
    check_components,
    check_mechanism,
    make_partitioner,
    route,
)
from ldptree.estimators._protocol import (
    budget_ledger,
    check_fit_rows,
    fit_scaler,
    resolve_label_bound,
    stream_round,
)
from ldptree.estimators._readout import cell_means, ratio_with_fallback
from ldptree.mechanisms._rr_laplace import RRLaplaceMechanism
from ldptree.protocols import AggregatorFactory, Mechanism, Partitioner, ReportT, StatsT

_OUTSIDE = ("clamp", "zero")


class LPDTRegressor(RegressorMixin, BaseEstimator):
    """Locally private decision tree regressor with public data (module docstring).

    Parameters
    ----------
    epsilon:
        Per-holder privacy budget ``eps > 0`` (each holder's whole release is eps-LDP).
    max_depth:
        Tree depth ``s``.
    min_samples_leaf:
        ``n_l``: minimal number of *public* points in each child of a split.
    min_samples_split:
        Nodes with at most this many public points (or distinct rows) are not split.
    budget_split:
        ``rho in (0, 1)``: share of ``eps`` spent on the cell; the label gets ``(1 - rho) eps``.
    label_bound:
        ``M`` (meaning ``[-M, M]``) or ``(lo, hi)``. ``None`` takes ``[min, max]`` of ``y_public``;
        never estimated from private labels. Private labels are clipped into it by the mechanism.
    rule:
        ``"max_edge"`` (LPDT-M), ``"cart"`` (LPDT-V), ``"random_max_edge"``, or a
        :class:`~ldptree.protocols.Partitioner` instance (which then fixes its own depth and
        leaf sizes). The named rules rank splits by variance reduction (``"mse"``).
    mechanism:
        A :class:`~ldptree.protocols.Mechanism` to use instead of the default randomized
        response + Laplace; its ``epsilon`` must equal ``epsilon``. It must privatize
        ``(cell, real label)`` records (``labels() -> RealLabels``; checked at the start of
        ``fit``, a ``TypeError`` otherwise).
    aggregator:
        ``None`` (the exact streaming sum, :class:`~ldptree.estimators.SumAggregator`) or an
        :class:`~ldptree.protocols.AggregatorFactory`: a callable ``(mechanism, n_cells) ->``
        :class:`~ldptree.protocols.Aggregator`, e.g. your own aggregator class
        (``docs/tutorials/custom-aggregator.md``).
    min_private_ratio:
        ``tau``: cells with debiased count ``<= tau n`` predict their public leaf mean. ``0`` (the
        reference) only catches non-positive counts. ``"auto"``: ``tau = 2 sqrt(v / n)`` with
        ``v`` the mechanism's per-holder ``count_variance``, i.e. fall back where the count is
        within two noise standard deviations of zero; it uses only ``n``, ``eps`` and ``rho``
        (public), so it is fixed before any report is seen.
    outside:
        Prediction for points outside the public feature box: ``"clamp"`` routes them to the
        boundary cell (as during private attribution); ``"zero"`` predicts 0 as the papers do.
    feature_margin:
        Widen the public min-max box by this fraction of its width on each side.
    chunk_size:
        Holders privatized and aggregated per batch (bounds memory at ``chunk_size * n_cells``).
    privacy_budget:
        Optional cap on the per-holder epsilon this fit may spend; a release above it is refused
        with a ``ValueError`` before any private row is touched.
    allow_uncertified:
        ``False`` (default): the mechanism must pass :func:`~ldptree.accounting.verify_ldp` for
        the published partition, else the fit is refused before any private row is touched.
        ``True`` runs a mechanism that cannot be certified (research), charging its declared
        epsilon; ``privacy_certificate_`` is then ``None``.
    random_state:
        ``None``, an int seed or a JAX key; drives all privacy noise (and randomized rules).

    Attributes
    ----------
    partition_, scaler_, mechanism_, estimates_, leaf_values_, public_leaf_mean_
        The published partition and scaling, the mechanism run, the debiased cell estimates and
        the read-out.
    used_fallback_, label_bound_, n_features_in_
        Where the public leaf mean replaced the private ratio; the label range; the width.
    privacy_
        A :class:`~ldptree.accounting.PrivacySpend`: the certified epsilon and the delta of the
        mechanism as sampled.
    privacy_ledger_
        Its :class:`~ldptree.accounting.PrivacyLedger`.
    privacy_certificate_
        The :class:`~ldptree.accounting.LDPCertificate` (``None`` if uncertified).
    """

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int = 4,
        min_samples_leaf: int = 2,
        *,
        min_samples_split: int = 5,
        budget_split: float = 0.5,
        label_bound: float | tuple[float, float] | None = None,
        rule: str | Partitioner = "max_edge",
        mechanism: Mechanism[ReportT, StatsT] | None = None,
        aggregator: AggregatorFactory | None = None,
        min_private_ratio: float | str = 0.0,
        outside: str = "clamp",
        feature_margin: float = 0.0,
        chunk_size: int = 65536,
        privacy_budget: float | None = None,
        allow_uncertified: bool = False,
        random_state: Any = None,
    ) -> None:
        self.epsilon = epsilon
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.min_samples_split = min_samples_split
        self.budget_split = budget_split
        self.label_bound = label_bound
        self.rule = rule
        self.mechanism = mechanism
        self.aggregator = aggregator
        self.min_private_ratio = min_private_ratio
        self.outside = outside
        self.feature_margin = feature_margin
        self.chunk_size = chunk_size
        self.privacy_budget = privacy_budget
        self.allow_uncertified = allow_uncertified
        self.random_state = random_state

    # -- building blocks ------------------------------------------------------------------------
    def _partitioner(self) -> Partitioner:
        return make_partitioner(
            self.rule,
            max_depth=self.max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            criterion="mse",
            criteria=("mse",),
        )

    def _mechanism(self, epsilon: float, bound: tuple[float, float]) -> Mechanism:
        if self.mechanism is None:
            rho = check_open_unit(self.budget_split, "budget_split")
            return RRLaplaceMechanism(epsilon=epsilon, label_bound=bound, budget_split=rho)
        return check_mechanism(self.mechanism, epsilon)

    # -- estimator API --------------------------------------------------------------------------
    def fit(
        self, X: Any, y: Any = None, *, X_public: Any = None, y_public: Any = None
    ) -> LPDTRegressor:
        """Grow the partition on public data, privatize ``(X, y)`` holder by holder, aggregate.

        ``X`` may be memory-mapped (``np.load(path, mmap_mode="r")``): it is read, checked and
        converted ``chunk_size`` rows at a time, never copied whole. ``X`` may also be an
        iterable of ``(X_chunk, y_chunk)`` pairs with ``y=None``; holders are numbered in the
        order their rows arrive, so the fit equals the in-memory fit on the concatenation."""
        aggregator = check_components(
            "LPDTRegressor", rule=self.rule, mechanism=self.mechanism, aggregator=self.aggregator
        )
        epsilon = check_epsilon(self.epsilon, "epsilon")
        auto_ratio = isinstance(self.min_private_ratio, str)
        if auto_ratio and self.min_private_ratio != "auto":
            raise ValueError(
                f"min_private_ratio must be a number or 'auto', got {self.min_private_ratio!r}"
            )
        min_ratio = 0.0 if auto_ratio else check_real(self.min_private_ratio, "min_private_ratio")
        chunk = check_int(self.chunk_size, "chunk_size", minimum=1)
        margin = check_real(self.feature_margin, "feature_margin")
        if margin < 0:
            raise ValueError(f"feature_margin must be >= 0, got {margin}")
        check_choice(self.outside, "outside", _OUTSIDE)
        y = self._check_fit_input(X, y)
        rows, Xq, yq = check_fit_rows(X, y, X_public, y_public)
        d = rows.n_features
        partitioner = self._partitioner()
        bound = resolve_label_bound(self.label_bound, yq)
        mechanism = self._mechanism(epsilon, bound)
        key_partition, key_noise = jax.random.split(as_key(self.random_state))

        scaler = fit_scaler(Xq, d, margin)
        Xq_scaled = np.empty((0, d)) if Xq is None else scaler.transform(Xq)
        partition = partitioner.fit(Xq_scaled, yq, key=key_partition)
        charge = certified_spend(
            mechanism,
            n_cells=partition.n_leaves,
            label_bound=bound,
            allow_uncertified=self.allow_uncertified,
        )
        ledger = budget_ledger(self.privacy_budget).record(charge.entry, charge.spend)
        if auto_ratio:  # public: the mechanism's variance and the number of holders
            _auto_ratio(mechanism, 1)  # refuse a mechanism without count_variance before the round
        chunks = ((scaler.transform(Xc), yc) for Xc, yc in rows.chunks(chunk))
        estimates = stream_round(
            partition, mechanism, chunks, key=key_noise, chunk_size=chunk, aggregator=aggregator
        )
        if auto_ratio:
            min_ratio = _auto_ratio(mechanism, estimates.n)

        default = float(yq.mean()) if yq is not None else (bound[0] + bound[1]) / 2.0
        if yq is not None:
            public_cells = np.asarray(partition.cells(Xq_scaled))
            public_mean = cell_means(public_cells, yq, partition.n_leaves, default)
        else:
            public_mean = np.full(partition.n_leaves, default)
        values, fallback = ratio_with_fallback(estimates, public_mean, min_ratio=min_ratio)

        self.n_features_in_ = d
        self.scaler_ = scaler
        self.partition_ = partition
        self.mechanism_ = mechanism
        self.label_bound_ = bound
        self.estimates_ = estimates
        self.public_leaf_mean_ = public_mean
        self.leaf_values_ = values
        self.used_fallback_ = fallback
        self.privacy_ledger_ = ledger.post_process("aggregation, debiasing and leaf read-out")
        self.privacy_ = ledger.total
        self.privacy_certificate_ = charge.certificate
        return self

    def predict(self, X: Any) -> FloatArray:
        """Piecewise-constant predictions ``float[n]``; post-processing, so no privacy cost."""
        self._check_fitted("leaf_values_", X)
        cells, inside = route(X, self.n_features_in_, self.scaler_, self.partition_)
        pred = self.leaf_values_[cells]
        if self.outside == "zero":
            pred = np.where(inside, pred, 0.0)
        return np.asarray(pred, dtype=np.float64)


#: ``min_private_ratio="auto"`` falls back where a debiased count is within this many noise
#: standard deviations of zero.
AUTO_RATIO_SDS = 2.0


def _auto_ratio(mechanism: Mechanism, n: int) -> float:
    variance = getattr(mechanism, "count_variance", None)
    if not isinstance(variance, float):
        raise ValueError(
            "min_private_ratio='auto' needs a mechanism with a count_variance (per-holder variance "
            f"of a debiased cell count); {type(mechanism).__name__} has none: pass a number"
        )
    return AUTO_RATIO_SDS * math.sqrt(variance / max(n, 1))
