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
  That ratio explodes where ``c^_j`` is small but positive, so by default (``readout="auto"``)
  it is shrunk towards the public leaf mean with the public-only precision weight
  ``w_j = c^_j^2 / (c^_j^2 + a)``, ``a = n V / h^2`` (:mod:`ldptree.estimators._readout`);
  ``readout="ratio"`` is the reference's read-out (the papers' numbers). Either way the leaf
  values are then clipped into the public label bound (``clip_predictions=False``: not).

Privacy: the partition, the scaling box and the label bound come from public data or the user,
so the only private release is each holder's single report. Before any private row is touched the
mechanism's report law is certified by :func:`~ldptree.accounting.verify_ldp` for the published
partition (a mechanism whose certificate fails is refused unless ``allow_uncertified=True``); the
certified ``(epsilon, delta)`` is recorded in a :class:`~ldptree.accounting.PrivacyLedger`
(``privacy_ledger_``) whose total is ``privacy_``, and the certificate is ``privacy_certificate_``.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import attrs
import numpy as np

from ldptree._typing import BoolArray, FloatArray
from ldptree._validation import (
    as_key,
    check_bool,
    check_choice,
    check_epsilon,
    check_int,
    check_real,
)
from ldptree.accounting import LedgerScope, PrivacyAccount
from ldptree.accounting._ledger import PrivacyLedger
from ldptree.accounting._spend import PrivacySpend
from ldptree.accounting._verify import LDPCertificate
from ldptree.estimators._auto_depth import auto_depth
from ldptree.estimators._base import BaseEstimator, RegressorMixin
from ldptree.estimators._composition import (
    check_components,
    grown_depth,
    is_named,
    make_partitioner,
    route,
)
from ldptree.estimators._default_mechanism import regression_mechanism
from ldptree.estimators._inputs import (
    check_data_free_depth,
    fit_scaler,
    resolve_label_bound,
)
from ldptree.estimators._plan import FitPlan, Planned
from ldptree.estimators._readout import (
    RatioReadOut,
    ShrinkReadOut,
    cell_means,
    check_readout,
    checked_leaves,
    clip_to_bound,
    holder_variance,
    shrinkage_strength,
)
from ldptree.estimators._shrunk_choice import shrunk_choice
from ldptree.mechanisms._choose import MechanismChoice
from ldptree.mechanisms._random import split
from ldptree.mechanisms._variance import SupportsVariance
from ldptree.partitions._partition import Partition
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import (
    AggregatorFactory,
    CellEstimates,
    LeafFit,
    Mechanism,
    Partitioner,
    PublicCells,
    ReadOut,
    ReportT,
    StatsT,
)
from ldptree.rounds import Round, certified_spend, charged_ledger, release_key

_OUTSIDE = ("clamp", "zero")
#: ``readout=`` choices (class docstring).
READOUTS = ("auto", "shrink", "ratio")


class LPDTRegressor(RegressorMixin, Planned, BaseEstimator):
    """Locally private decision tree regressor with public data (module docstring).

    Parameters
    ----------
    epsilon:
        Per-holder privacy budget ``eps > 0`` (each holder's whole release is eps-LDP).
    max_depth:
        Tree depth ``s``, or ``"auto"``: ``max(1, round(log2 t*))`` with
        ``t* = (n h^2 / (d V))^{d / (2d + 2)}`` (:mod:`ldptree.estimators._auto_depth`: the LPDT
        paper's bias-variance balance with explicit constants) from the number of private rows
        ``n``, the width ``d``, the mechanism's per-holder variance ``V`` and the label bound's
        half-width ``h``; public, so fixed before any report. Needs ``n`` up front (arrays).
        With a :class:`~ldptree.protocols.Partitioner` object as ``rule`` it must equal the
        rule's own ``max_depth`` (else a ``ValueError`` naming both), or be ``None``: the
        rule's own depth.
    min_samples_leaf:
        ``n_l``: minimal number of *public* points in each child of a split.
    min_samples_split:
        Nodes with at most this many public points (or distinct rows) are not split.
    budget_split:
        ``rho in (0, 1)``: share of ``eps`` spent on the cell; the label gets ``(1 - rho) eps``.
        ``"auto"`` (default): computed from the partition size, ``eps`` and the label bound for
        ``mechanism="auto"`` (:func:`~ldptree.mechanisms.optimal_split`), the papers' ``1/2``
        for ``mechanism="paper"``.
    label_bound:
        ``M`` (meaning ``[-M, M]``) or ``(lo, hi)``. ``None`` takes ``[min, max]`` of ``y_public``;
        never estimated from private labels. Private labels are clipped into it by the mechanism.
    rule:
        ``"max_edge"`` (LPDT-M), ``"cart"`` (LPDT-V), ``"random_max_edge"``, or a
        :class:`~ldptree.protocols.Partitioner` instance (which fixes its own leaf sizes; its
        depth is checked against ``max_depth``). The named rules rank splits by variance
        reduction (``"mse"``).
    mechanism:
        ``"auto"`` (default; ``None`` too): once the partition is grown, the library mechanism
        and split with the smallest predicted error of a cell mean for its ``L`` cells, ``eps``
        and the label bound: the exact variances at the public labels' moments, and under the
        shrinkage read-out (named, ``"auto"`` or a :class:`ShrinkReadOut`) with ``n`` known
        that read-out's error averaged over the count noise (public inputs: no privacy cost;
        :func:`~ldptree.mechanisms.choose_regression_mechanism`,
        :mod:`ldptree.estimators._shrunk_choice`), reported in ``mechanism_choice_``.
        ``"paper"``: the LPDT paper's randomized response on the
        one-hot cell + a Laplace-type label (:class:`~ldptree.mechanisms.RRLaplaceMechanism`).
        Or a :class:`~ldptree.protocols.Mechanism` whose ``epsilon`` equals ``epsilon`` and which
        privatizes ``(cell, real label)`` records (``labels() -> RealLabels``; checked at the
        start of ``fit``, a ``TypeError`` otherwise).
    aggregator:
        ``None`` (the exact streaming sum, :class:`~ldptree.rounds.SumAggregator`) or an
        :class:`~ldptree.protocols.AggregatorFactory`: a callable ``(mechanism, n_cells) ->``
        :class:`~ldptree.protocols.Aggregator`, e.g. your own aggregator class
        (``docs/tutorials/custom-aggregator.md``).
    readout:
        ``"auto"`` (default): ``"shrink"`` when the mechanism says its variance (the default
        one does), else ``"ratio"``. ``"shrink"``: ``(s^_j c^_j + a m_j) / (c^_j^2 + a)`` with
        ``m_j`` the public leaf mean and ``a = n V / h^2`` from ``n``, the mechanism's
        per-holder variance ``V`` and the label bound's half-width ``h`` (public, fixed before
        any report); bounded, and equal to the ratio up to ``O(1/n)`` in well-filled cells.
        ``"ratio"``: the reference's ``s^_j / c^_j`` (parity with the papers). Or a
        :class:`~ldptree.protocols.ReadOut` object: ``readout(estimates, public) -> LeafFit``
        from the round's debiased estimates and the fit's public
        :class:`~ldptree.protocols.PublicCells` (``docs/tutorials/custom-readout.md``); it runs
        in ``fit``, :func:`~ldptree.estimators.fit_many` and on any source, and is kept by
        ``clone``.
    min_private_ratio:
        ``tau``: cells with debiased count ``<= tau n`` predict their public leaf mean (under
        either read-out). ``0`` (the reference) only catches non-positive counts. ``"auto"``:
        ``tau = 2 sqrt(v / n)`` with ``v`` the mechanism's per-holder ``count_variance``, i.e.
        fall back where the count is within two noise standard deviations of zero; it uses
        only ``n``, ``eps`` and ``rho`` (public), so it is fixed before any report is seen.
    outside:
        Prediction for points outside the public feature box: ``"clamp"`` routes them to the
        boundary cell (as during private attribution); ``"zero"`` predicts 0 as the papers do.
    clip_predictions:
        ``True`` (default): leaf values are clipped into the label bound ``[lo, hi]``. Every
        label lies in the bound, so the regression function does too, and clipping brings a
        leaf value no further from it (free post-processing; it matters for noisy cells at small
        ``eps`` or large depth). ``False``: the raw read-out, as the papers and the reference
        compute it (``outside="zero"`` predicts 0 either way).
    feature_margin:
        Widen the public min-max box by this fraction of its width on each side.
    chunk_size:
        Holders privatized and aggregated per batch (bounds memory at ``chunk_size * n_cells``).
    privacy_budget:
        Optional cap on the per-holder epsilon this fit may spend; a release above it is refused
        with a ``ValueError`` before any private row is touched. Or a
        :class:`~ldptree.accounting.LedgerScope` (or :class:`~ldptree.accounting.PrivacyAccount`)
        shared with other fits: the release is charged to the scope's holders, refused before
        any private row is touched when it would exceed a budget of the scope.
    allow_uncertified:
        ``False`` (default): the mechanism must pass :func:`~ldptree.accounting.verify_ldp` for
        the published partition, else the fit is refused before any private row is touched.
        ``True`` runs a mechanism that cannot be certified (research), charging its declared
        epsilon; ``privacy_certificate_`` is then ``None``.
    random_state:
        ``None``, an int seed or a JAX key; drives all privacy noise (and randomized rules).

    Attributes
    ----------
    mechanism_choice_
        The :class:`~ldptree.mechanisms.MechanismChoice` behind ``mechanism="auto"`` (its
        ``describe()`` names the mechanism, the split and the predicted gain), else ``None``.
    partition_, scaler_, mechanism_, estimates_, leaf_values_, public_leaf_mean_
        The published partition and scaling, the mechanism run, the debiased cell estimates and
        the read-out (clipped into the label bound unless ``clip_predictions=False``).
    used_fallback_, label_bound_, n_features_in_
        Where the public leaf mean replaced the private ratio; the label range; the width.
    max_depth_
        The depth the partition was grown to: ``max_depth`` (or its ``"auto"`` value), which the
        rule received; with ``max_depth=None`` the rule's declared depth, or the depth of the
        grown partition for a rule that declares none.
    readout_, shrinkage_
        The read-out used (``"shrink"``, ``"ratio"`` or the ``readout`` object) and its ``a``
        (``0.0`` for the ratio, ``None`` for a read-out object).
    privacy_
        A :class:`~ldptree.accounting.PrivacySpend`: the certified epsilon and the delta of the
        mechanism as sampled.
    privacy_ledger_
        Its :class:`~ldptree.accounting.PrivacyLedger`.
    privacy_certificate_
        The :class:`~ldptree.accounting.LDPCertificate` (``None`` if uncertified).
    """

    # fitted state (set by ``fit`` or a plan's ``finish``; absent before)
    n_features_in_: int
    max_depth_: int
    scaler_: RangeScaler
    partition_: Partition
    mechanism_: Mechanism[Any, Any]
    mechanism_choice_: MechanismChoice | None
    label_bound_: tuple[float, float]
    estimates_: CellEstimates
    public_leaf_mean_: FloatArray | None
    leaf_values_: FloatArray
    used_fallback_: BoolArray
    readout_: str | ReadOut | None
    shrinkage_: float | None
    privacy_: PrivacySpend
    privacy_ledger_: PrivacyLedger
    privacy_certificate_: LDPCertificate | None

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int | str | None = 4,
        min_samples_leaf: int = 2,
        *,
        min_samples_split: int = 5,
        budget_split: float | str = "auto",
        label_bound: float | tuple[float, float] | None = None,
        rule: str | Partitioner = "max_edge",
        mechanism: Mechanism[ReportT, StatsT] | str | None = "auto",
        aggregator: AggregatorFactory | None = None,
        readout: str | ReadOut = "auto",
        min_private_ratio: float | str = 0.0,
        outside: str = "clamp",
        clip_predictions: bool = True,
        feature_margin: float = 0.0,
        chunk_size: int = 65536,
        privacy_budget: float | LedgerScope | PrivacyAccount | None = None,
        allow_uncertified: bool = False,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    # -- building blocks ------------------------------------------------------------------------
    def _partitioner(self, max_depth: Any) -> Partitioner:
        return make_partitioner(
            self.rule,
            max_depth=max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            criterion="mse",
            criteria=("mse",),
        )

    def _mechanism(
        self,
        epsilon: float,
        bound: tuple[float, float],
        n_cells: int,
        *,
        paper: bool = False,
        public_labels: Any = None,
        public_cells: Any = None,
    ) -> tuple[Mechanism, MechanismChoice | None]:
        """The mechanism for ``n_cells`` cells (``paper``: the papers' in place of ``"auto"``;
        ``public_labels`` / ``public_cells``: ``"auto"`` ranks by exact variances at them)."""
        name = "paper" if paper and is_named(self.mechanism) else self.mechanism
        return regression_mechanism(
            name,
            epsilon,
            bound,
            n_cells,
            self.budget_split,
            public_labels=public_labels,
            public_cells=public_cells,
        )

    # -- the fit skeleton's hooks (fit, plan: estimators.Planned) --------------------------------
    def _settings(self) -> _Settings:
        """The hyper-parameters checked before any data is read (the start of ``fit``)."""
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
        clip = check_bool(self.clip_predictions, "clip_predictions")
        user_readout = check_readout(self.readout, READOUTS)
        if user_readout is not None and (auto_ratio or min_ratio != 0.0):
            raise ValueError(
                f"min_private_ratio={self.min_private_ratio!r} applies to the built-in read-outs; "
                f"readout={user_readout!r} decides its own fallback: leave min_private_ratio=0"
            )
        return _Settings(
            aggregator, epsilon, auto_ratio, min_ratio, chunk, margin, clip, user_readout
        )

    def _plan(
        self, settings: _Settings, Xq: Any, yq: Any, d: int, n: int | None
    ) -> FitPlan[LPDTRegressor]:
        """The plan from checked public data ``(Xq, yq)`` (``None``: none), the width ``d`` and
        the declared number of holders ``n``."""
        aggregator, epsilon, auto_ratio, min_ratio = (
            settings.aggregator,
            settings.epsilon,
            settings.auto_ratio,
            settings.min_ratio,
        )
        clip, user_readout = settings.clip, settings.user_readout
        bound = resolve_label_bound(self.label_bound, yq)
        depth = self.max_depth
        if isinstance(depth, str):  # the papers' mechanism's variance when the default is named
            depth_mechanism, _ = self._mechanism(epsilon, bound, 1, paper=True)
            depth = _resolve_depth(depth, depth_mechanism, n, d, bound)
        partitioner = self._partitioner(depth)
        if Xq is None:
            choose = functools.partial(self._mechanism, epsilon, bound)
            check_data_free_depth(depth, choose, self.mechanism)
        key_partition, key_noise = split(as_key(self.random_state))

        scaler = fit_scaler(Xq, d, settings.margin)
        Xq_scaled = np.empty((0, d)) if Xq is None else scaler.transform(Xq)
        partition = partitioner.fit(Xq_scaled, yq, key=key_partition)
        public_cells = None if yq is None else np.asarray(partition.cells(Xq_scaled))
        mechanism, choice = self._mechanism(
            epsilon, bound, partition.n_leaves, public_labels=yq, public_cells=public_cells
        )
        # the shrinkage runs: named (or "auto", which every candidate resolves to it), or the
        # built-in ShrinkReadOut passed as an object
        shrinks = (user_readout is None and self.readout != "ratio") or isinstance(
            user_readout, ShrinkReadOut
        )
        if choice is not None and choice.basis == "exact" and n is not None and shrinks:
            choice = _shrunk_choice(
                choice, settings, bound, n, yq, public_cells, partition.n_leaves
            )
            mechanism = choice.mechanism
        charge = certified_spend(
            mechanism,
            n_cells=partition.n_leaves,
            label_bound=bound,
            allow_uncertified=self.allow_uncertified,
        )
        ledger = charged_ledger(self.privacy_budget, charge)
        ledger = ledger.post_process("aggregation, debiasing and leaf read-out")
        if auto_ratio:  # public: the mechanism's variance and the number of holders
            _auto_ratio(mechanism, 1, partition.n_leaves)  # refuse an unknown variance now
        readout = (
            None
            if user_readout is not None
            else _resolve_readout(str(self.readout), mechanism, partition.n_leaves, bound)
        )
        public = _public_cells(partition, mechanism, None if Xq is None else Xq_scaled, yq, bound)
        plan = Round(
            partition=partition,
            mechanism=mechanism,
            key=release_key(key_noise, mechanism, partition),
            aggregator=aggregator,
            scaler=scaler,
            chunk_size=settings.chunk,
        )

        def finish(round_estimates: CellEstimates | None) -> LPDTRegressor:
            assert round_estimates is not None  # an LPDT fit always has a round
            estimates = round_estimates
            ratio = (
                _auto_ratio(mechanism, estimates.n, partition.n_leaves) if auto_ratio else min_ratio
            )
            leaves, strength = _read_out(user_readout, readout, ratio, estimates, public)
            values = clip_to_bound(leaves.values, bound) if clip else leaves.values

            self.n_features_in_ = d
            self.max_depth_ = grown_depth(self.rule, depth, partition)
            self.scaler_ = scaler
            self.partition_ = partition
            self.mechanism_ = mechanism
            self.mechanism_choice_ = choice
            self.label_bound_ = bound
            self.estimates_ = estimates
            self.public_leaf_mean_ = public.label_mean
            self.leaf_values_ = values
            self.used_fallback_ = leaves.used_fallback
            self.readout_ = user_readout if user_readout is not None else readout
            self.shrinkage_ = strength
            return self

        return FitPlan.of_round(plan, charge.certificate, ledger, n, finish, choice=choice)

    def predict(self, X: Any) -> FloatArray:
        """Piecewise-constant predictions ``float[n]``; post-processing, so no privacy cost."""
        self._check_fitted("leaf_values_", X)
        cells, inside = route(X, self.n_features_in_, self.scaler_, self.partition_)
        pred = self.leaf_values_[cells]
        if self.outside == "zero":
            pred = np.where(inside, pred, 0.0)
        return np.asarray(pred, dtype=np.float64)


@attrs.frozen
class _Settings:
    """LPDT's hyper-parameters, checked (:meth:`LPDTRegressor._settings`)."""

    aggregator: AggregatorFactory
    epsilon: float
    auto_ratio: bool
    min_ratio: float
    chunk: int
    margin: float
    clip: bool
    user_readout: Any


#: ``min_private_ratio="auto"`` falls back where a debiased count is within this many noise
#: standard deviations of zero.
AUTO_RATIO_SDS = 2.0


def _auto_ratio(mechanism: Mechanism, n: int, n_cells: int) -> float:
    """``tau = 2 sqrt(v / n)``: ``v`` the mechanism's per-holder ``count_variance``, or for a
    :class:`~ldptree.mechanisms.SupportsVariance` mechanism the count variance averaged over a
    cell's own holders (share ``1 / L``) and the others."""
    variance = getattr(mechanism, "count_variance", None)
    if not isinstance(variance, float) and isinstance(mechanism, SupportsVariance):
        variance = mechanism.cell_variance(n_cells).mixed(1.0 / n_cells)[0]
    if not isinstance(variance, float):
        raise ValueError(
            "min_private_ratio='auto' needs a mechanism with a count_variance or cell_variance "
            f"(per-holder variance of a debiased cell count); {type(mechanism).__name__} has "
            "neither: pass a number"
        )
    return AUTO_RATIO_SDS * math.sqrt(variance / max(n, 1))


def _shrunk_choice(
    choice: MechanismChoice,
    settings: _Settings,
    bound: tuple[float, float],
    n: int,
    yq: Any,
    cells: Any,
    n_cells: int,
) -> MechanismChoice:
    """``"auto"`` re-ranked by the shrinkage read-out's predicted error for ``n`` holders
    (:mod:`ldptree.estimators._shrunk_choice`), with each candidate's own strength ``a`` and
    fallback threshold: public quantities only."""

    def strength(mechanism: Mechanism) -> float:
        a = shrinkage_strength(mechanism, n_cells, n, bound)
        return math.inf if a is None else a

    def floor(mechanism: Mechanism) -> float:
        if isinstance(settings.user_readout, ShrinkReadOut):
            return n * settings.user_readout.min_ratio
        if settings.auto_ratio:
            return n * _auto_ratio(mechanism, n, n_cells)
        return n * settings.min_ratio

    return shrunk_choice(
        choice,
        n_cells=n_cells,
        epsilon=settings.epsilon,
        bound=bound,
        n=n,
        public_labels=yq,
        public_cells=cells,
        strength=strength,
        floor=floor,
    )


def _public_cells(
    partition: Any, mechanism: Mechanism, Xq_scaled: Any, yq: Any, bound: tuple[float, float]
) -> PublicCells:
    """The public side of the read-out: public rows and leaf means per cell (the public mean,
    or the bound's midpoint without public labels, in empty cells), the bound and ``V``."""
    n_cells = partition.n_leaves
    default = float(yq.mean()) if yq is not None else (bound[0] + bound[1]) / 2.0
    cells = None if Xq_scaled is None else np.asarray(partition.cells(Xq_scaled))
    if yq is not None and cells is not None:
        mean = cell_means(cells, yq, n_cells, default)
    else:
        mean = np.full(n_cells, default)
    counts = np.zeros(n_cells) if cells is None else np.bincount(cells, minlength=n_cells)
    return PublicCells(
        partition=partition,
        mechanism=mechanism,
        counts=counts.astype(np.float64),
        label_mean=mean,
        label_bound=bound,
        holder_variance=holder_variance(mechanism, n_cells, bound),
    )


def _read_out(
    user: ReadOut | None,
    readout: str | None,
    min_ratio: float,
    estimates: CellEstimates,
    public: PublicCells,
) -> tuple[LeafFit, float | None]:
    """The leaves and the shrinkage ``a`` (``None`` for a user's read-out object)."""
    if user is not None:
        return checked_leaves(user(estimates, public), (public.n_cells,)), None
    if readout == "shrink":  # public: n, the mechanism's variance and the label bound
        shrink = ShrinkReadOut(min_ratio)
        return shrink(estimates, public), shrink.strength(public, estimates.n)
    return RatioReadOut(min_ratio)(estimates, public), 0.0


def _resolve_readout(
    readout: str, mechanism: Mechanism, n_cells: int, bound: tuple[float, float]
) -> str:
    """``"shrink"`` or ``"ratio"``; ``readout="shrink"`` with a mechanism that does not say its
    variance is refused before any private row is touched."""
    if readout == "ratio":
        return readout
    known = shrinkage_strength(mechanism, n_cells, 1, bound) is not None
    if readout == "shrink" and not known:
        raise ValueError(
            "readout='shrink' needs a mechanism with count_variance and label_variance, or "
            f"cell_variance; {type(mechanism).__name__} has neither: pass readout='ratio'"
        )
    return "shrink" if known else "ratio"


def _resolve_depth(
    value: str, mechanism: Mechanism, n: int | None, d: int, bound: tuple[float, float]
) -> int:
    """``max_depth="auto"`` (class docstring) before any private row is touched."""
    if value != "auto":
        raise ValueError(f"max_depth must be an integer >= 0 or 'auto', got {value!r}")
    if n is None:
        raise ValueError(
            "max_depth='auto' needs the number of private rows up front (n_holders for a plan); "
            "an iterable of chunks does not say it: pass an integer max_depth"
        )
    relative = shrinkage_strength(mechanism, 2, 1, bound)  # V / h^2: a for one holder
    if relative is None:
        raise ValueError(
            f"max_depth='auto' needs a mechanism that says its variance; "
            f"{type(mechanism).__name__} does not: pass an integer max_depth"
        )
    return 1 if not math.isfinite(relative) else auto_depth(n, d, relative)
