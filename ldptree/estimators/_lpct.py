"""LPCT and LPCT-prune: locally private classification trees with public data (LPCT paper).

Compositions, like :class:`~ldptree.LPDTRegressor`:

* **Partitioner** (public features and labels only; min-max scaling from public data): max-edge
  (LPCT, the paper's simulations), random max-edge (LPCT-R), CART (LPCT-CART/-V, the paper's real
  data), or any :class:`~ldptree.protocols.Partitioner`, which then sees class codes as floats.
* **Mechanism**: :class:`~ldptree.mechanisms.LaplaceCellClassMechanism`: Laplace on the cell
  one-hot and on the cell-by-class one-hot, ``eps/2`` each (multi-class is ours).
* **Read-out**: the lambda-weighted ratio (:mod:`._lpct_readout`, paper eq. (8)) for
  :class:`LPCTClassifier`; the pruning walk (:mod:`._prune`, paper Algorithm 2) for
  :class:`LPCTPrunedClassifier`.

Privacy: the partition, scaling box, classes and depth defaults come from public data, the user,
or report counts (public in the one-round protocol); the only private release is each holder's
single report, recorded in ``privacy_``. Read-outs are post-processing. The reference code's bug
of growing the unpruned partition on private data is not reproduced.

Classes (:mod:`._classes`): ``classes_`` comes from ``y_public`` and/or ``classes``, never from
``y``; private labels outside it are released as null records.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, TypeVar

import attrs
import numpy as np

from ldptree._typing import BoolArray, FloatArray, IntArray
from ldptree._validation import (
    as_key,
    check_choice,
    check_epsilon,
    check_int,
    check_positive,
    check_real,
)
from ldptree.accounting import LedgerScope, PrivacyAccount
from ldptree.accounting._ledger import PrivacyLedger
from ldptree.accounting._spend import PrivacySpend
from ldptree.accounting._verify import LDPCertificate
from ldptree.estimators._base import BaseEstimator, ClassifierMixin
from ldptree.estimators._classes import check_class_labels, encode_labels, resolve_classes
from ldptree.estimators._composition import (
    check_components,
    check_mechanism,
    grown_depth,
    is_named,
    make_partitioner,
    route,
    simulates_holders,
)
from ldptree.estimators._default_mechanism import class_mechanism
from ldptree.estimators._fits import check_mechanism_fits
from ldptree.estimators._inputs import (
    check_data_free_depth,
    fit_scaler,
)
from ldptree.estimators._lpct_readout import (
    FALLBACKS,
    check_lam,
    lpct_leaves,
    private_class_counts,
    public_class_counts,
    simplex_projection,
)
from ldptree.estimators._plan import FitPlan, Planned
from ldptree.estimators._prune import PRUNE_RULES, lpct_pruned_leaves
from ldptree.estimators._readout import check_readout, checked_leaves
from ldptree.mechanisms._choose import MechanismChoice
from ldptree.mechanisms._random import split
from ldptree.partitions._partition import Partition
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import (
    AggregatorFactory,
    CellEstimates,
    Mechanism,
    Partitioner,
    PublicCells,
    ReadOut,
    ReportT,
    StatsT,
)
from ldptree.rounds import (
    Round,
    budget_ledger,
    certified_spend,
    charged_ledger,
    chunk_rows,
    release_key,
)

T = TypeVar("T")
_CRITERIA = ("entropy", "gini")
#: ``readout=`` names of :class:`LPCTClassifier` (besides a read-out object).
READOUTS = ("weighted",)
_OUTSIDE = ("clamp", "zero")


class _LPCTBase(ClassifierMixin, BaseEstimator):
    """The one-round fit and the prediction API shared by the two classifiers."""

    #: The estimator's name in :data:`~ldptree.estimators._fits.ESTIMATOR_NEEDS`.
    _kind: str

    # fitted state (set by ``fit`` or a plan's ``finish``; absent before)
    classes_: np.ndarray[Any, Any]
    max_depth_: int
    n_features_in_: int
    n_public_: int
    scaler_: RangeScaler
    partition_: Partition
    mechanism_: Mechanism[Any, Any] | None
    mechanism_choice_: MechanismChoice | None
    public_class_counts_: FloatArray
    estimates_: CellEstimates | None
    leaf_eta_: FloatArray
    leaf_proba_: FloatArray
    leaf_class_: IntArray
    privacy_: PrivacySpend
    privacy_ledger_: PrivacyLedger
    privacy_certificate_: LDPCertificate | None

    def _components(self) -> AggregatorFactory:
        """The rule, mechanism and aggregator checked before any data is read (the start of
        ``fit``); returns the aggregator factory of the round."""
        return check_components(
            self._kind,
            rule=self.rule,
            mechanism=self.mechanism,
            aggregator=self.aggregator,
            simulation=self.simulation,
        )

    def _round_settings(self) -> tuple[float, float]:
        """``(epsilon, feature_margin)`` checked, and ``outside``."""
        epsilon = check_epsilon(self.epsilon, "epsilon")
        margin = check_real(self.feature_margin, "feature_margin")
        check_choice(self.outside, "outside", _OUTSIDE)
        return epsilon, margin

    def _partitioner(self, max_depth: Any) -> Partitioner:
        return make_partitioner(
            self.rule,
            max_depth=max_depth,
            min_samples_split=self.min_samples_split,
            min_samples_leaf=self.min_samples_leaf,
            criterion=self.criterion,
            criteria=_CRITERIA,
        )

    def _stage(
        self,
        epsilon: float,
        margin: float,
        Xq: FloatArray | None,
        yq: Any,
        d: int,
        *,
        max_depth: Any,
        collect: bool,
        aggregator: AggregatorFactory,
        binary: bool = False,
    ) -> _Stage:
        """The public stage from checked public data ``(Xq, yq)`` (``None``: none) of width
        ``d``: classes, the partition grown on public data, the mechanism certified and charged,
        and (if ``collect``) the private round through ``aggregator``. Sets nothing on the
        estimator (:meth:`_set_stage` and the plan's ``finish`` do, when the fit finishes)."""
        classes = resolve_classes(self.classes, yq)
        n_classes = classes.shape[0]
        if binary and n_classes != 2:
            raise ValueError(
                f"{type(self).__name__} is binary, but there are {n_classes} classes (from "
                "y_public/classes); use LPCTClassifier for multi-class"
            )
        codes_q = None if yq is None else encode_labels(yq, classes, "y_public")
        partitioner = self._partitioner(max_depth)
        if not is_named(self.mechanism):  # a user's mechanism is refused before the partition
            check_mechanism_fits(
                self._kind, check_mechanism(self.mechanism, epsilon), n_classes=n_classes
            )
        # the aggregate simulation draws summed reports: only mechanisms that can qualify
        simulated = simulates_holders(aggregator)
        if Xq is None:
            choose = functools.partial(
                class_mechanism, self.mechanism, epsilon, n_classes, simulated=simulated
            )
            check_data_free_depth(max_depth, choose, self.mechanism)
        key_partition, key_noise = split(as_key(self.random_state))

        scaler = fit_scaler(Xq, d, margin)
        Xq_scaled = np.empty((0, d)) if Xq is None else scaler.transform(Xq)
        y_grow = None if codes_q is None else codes_q.astype(np.float64)
        partition = partitioner.fit(Xq_scaled, y_grow, key=key_partition)
        n_cells = partition.n_leaves
        mechanism, choice = class_mechanism(
            self.mechanism, epsilon, n_classes, n_cells, simulated=simulated
        )
        check_mechanism_fits(self._kind, mechanism, n_classes=n_classes)
        if codes_q is None:
            public = np.zeros((n_cells, n_classes))
        else:
            public_cells = np.asarray(partition.cells(Xq_scaled)).astype(np.int64)
            public = public_class_counts(public_cells, codes_q.astype(np.int64), n_cells, n_classes)

        ledger = budget_ledger(self.privacy_budget)
        certificate = None
        if collect:  # certified and charged before any private row is privatized
            charge = certified_spend(
                mechanism, n_cells=n_cells, allow_uncertified=self.allow_uncertified
            )
            certificate = charge.certificate
            ledger = charged_ledger(self.privacy_budget, charge)
        plan = None
        if collect:
            plan = Round(
                partition=partition,
                mechanism=mechanism,
                key=release_key(key_noise, mechanism, partition),
                aggregator=aggregator,
                scaler=scaler,
                labels=functools.partial(encode_labels, classes=classes, name="y"),
                chunk_size=self._chunk(mechanism, n_cells, simulated),
            )
        return _Stage(
            classes=classes,
            max_depth=grown_depth(self.rule, max_depth, partition),
            n_features=d,
            n_public=0 if Xq is None else int(Xq.shape[0]),
            scaler=scaler,
            partition=partition,
            mechanism=mechanism if collect else None,
            choice=choice if collect else None,
            public=public,
            ledger=ledger.post_process("aggregation and read-out from public counts"),
            certificate=certificate,
            round=plan,
        )

    def _set_stage(self, stage: _Stage) -> None:
        """The fitted attributes of the public stage."""
        self.classes_ = stage.classes
        self.max_depth_ = stage.max_depth
        self.n_features_in_ = stage.n_features
        self.n_public_ = stage.n_public
        self.scaler_ = stage.scaler
        self.partition_ = stage.partition
        self.mechanism_ = stage.mechanism
        self.mechanism_choice_ = stage.choice
        self.public_class_counts_ = stage.public

    def _chunk(self, mechanism: Mechanism, n_cells: int, simulated: bool) -> int:
        """``chunk_size``, or about 4M released numbers per piece (rows only routed when
        ``simulated``: no reports are drawn per piece)."""
        width = getattr(mechanism, "report_width", None)
        per_holder = int(width(n_cells)) if callable(width) else 2 * n_cells
        return chunk_rows(self.chunk_size, numbers=per_holder, simulated=simulated)

    def _set_leaves(self, eta: FloatArray) -> None:
        self.leaf_eta_ = eta
        self.leaf_proba_ = simplex_projection(eta)
        self.leaf_class_ = np.argmax(eta, axis=1)

    # -- prediction (post-processing: no privacy cost) -------------------------------------------
    def _route(self, X: Any) -> tuple[IntArray, BoolArray]:
        self._check_fitted("leaf_eta_", X)
        cells, inside = route(X, self.n_features_in_, self.scaler_, self.partition_)
        if self.outside == "zero":
            return cells, inside
        return cells, np.ones_like(inside)

    def _rows(self, leaf_proba: FloatArray, cells: IntArray, inside: BoolArray) -> FloatArray:
        first = np.eye(self.classes_.shape[0])[0]
        rows: FloatArray = np.where(inside[:, None], leaf_proba[cells], first[None, :])
        return rows

    def predict_proba(self, X: Any) -> FloatArray:
        """``float[n, K]`` class probabilities in the order of ``classes_``: the cell's estimate
        ``eta`` projected onto the simplex (argmax preserved). With ``outside="zero"``, rows outside
        the public box get probability 1 for ``classes_[0]`` (the papers' "predict 0")."""
        cells, inside = self._route(X)
        return self._rows(self.leaf_proba_, cells, inside)

    def predict(self, X: Any) -> np.ndarray[Any, Any]:
        """Class labels: ``classes_[argmax_k eta_k]`` of each row's cell."""
        cells, inside = self._route(X)
        codes = np.where(inside, self.leaf_class_[cells], 0)
        return self.classes_[codes]


class LPCTClassifier(Planned, _LPCTBase):
    """Locally private classification tree with public data (LPCT; paper §3-4).

    ``eta^_k(x) = (V^_jk + lam V^Q_jk) / (U^_j + lam U^Q_j)`` for ``x`` in cell ``A_j``; predicts
    ``argmax_k``. ``lam = 0`` is **LPCT-P** (private only), ``lam = inf`` is **LPCT-Q** (public
    only: then no private report is collected and ``privacy_.epsilon == 0``). Binary and
    multi-class (one-hot class vectors, see the mechanism).

    Parameters
    ----------
    epsilon:
        Per-holder budget ``eps > 0``.
    max_depth:
        Depth of the partition. With a :class:`~ldptree.protocols.Partitioner` object as
        ``rule`` it must equal the rule's own ``max_depth`` (else a ``ValueError`` naming both),
        or be ``None``: the rule's own depth.
    min_samples_leaf, min_samples_split:
        Public-count stopping rules of the partition.
    lam:
        ``lambda in [0, inf]``: weight of a public point relative to a private one. The paper
        tunes it on a grid (oracle, non-private in its experiments); it is not chosen here.
    rule:
        ``"max_edge"`` (default, LPCT), ``"random_max_edge"`` (LPCT-R), ``"cart"`` (LPCT-CART,
        10 quantile thresholds per feature), or a :class:`~ldptree.protocols.Partitioner`
        (its depth checked against ``max_depth``).
    criterion:
        ``"gini"`` (the paper's stated choice, default) or ``"entropy"`` (the reference code).
    classes:
        All class labels, if ``y_public`` does not show every class (classes are never learned
        from private labels).
    fallback:
        ``"none"`` (paper: ``0/0 = 0``, negative denominators kept) or ``"prior"`` (cells with a
        non-positive denominator use the public class frequencies).
    readout:
        ``"weighted"`` (default): the lambda-weighted ratio above (``lam``, ``fallback``). Or a
        :class:`~ldptree.protocols.ReadOut` object, ``readout(estimates, public) -> LeafFit``
        with ``eta`` values ``float[L, K]`` from the round's estimates (per-class counts:
        :func:`~ldptree.estimators.private_class_counts`) and the fit's public
        :class:`~ldptree.protocols.PublicCells` (``class_counts``); ``lam`` and ``fallback``
        are then not used, and the round is always collected.
    mechanism:
        ``"auto"`` (default; ``None`` too): once the partition is grown, the library class
        mechanism with the smallest predicted error of a cell's class proportions for its ``L``
        cells, ``eps`` and ``K`` (public inputs: no privacy cost;
        :func:`~ldptree.mechanisms.choose_class_mechanism`; with ``simulation="aggregate"`` the
        papers' mechanism, the only one that draws summed reports), reported in
        ``mechanism_choice_``. ``"paper"``: the LPCT paper's Laplace noise on the cell and
        cell-by-class one-hots (:class:`~ldptree.mechanisms.LaplaceCellClassMechanism`). Or a
        :class:`~ldptree.protocols.Mechanism` on ``(cell, class code)`` records whose estimates
        carry per-class counts; its ``epsilon`` must equal ``epsilon``. It must privatize
        ``(cell, class code)`` records over the classes of the fit (``labels() ->
        ClassLabels(n_classes=K)``; checked at the start of ``fit``, a ``TypeError`` otherwise).
    aggregator:
        ``None`` (the exact streaming sum) or an :class:`~ldptree.protocols.AggregatorFactory`
        ``(mechanism, n_cells) -> Aggregator`` (``docs/tutorials/custom-aggregator.md``).
    simulation:
        ``"per_holder"`` (the protocol: every holder's report is drawn and aggregated) or
        ``"aggregate"`` (experiments: per-cell sums drawn in law by
        :class:`~ldptree.rounds.SimulatedSumAggregator`, a simulation device; not combined
        with ``aggregator``).
    outside:
        Points outside the public feature box: ``"clamp"`` (routed to the boundary cell) or
        ``"zero"`` (predict ``classes_[0]``, the papers' rule).
    feature_margin:
        Widen the public min-max box by this fraction of its width on each side.
    chunk_size:
        Holders per batch (default: about 4M released numbers per batch).
    privacy_budget, allow_uncertified:
        As for :class:`~ldptree.LPDTRegressor` (a cap or a shared ledger scope, checked before
        any private row is touched; whether an uncertifiable mechanism may run, for research).
    random_state:
        ``None``, an int seed or a JAX key: drives the privacy noise and random rules.

    Attributes
    ----------
    classes_, partition_, scaler_, mechanism_, mechanism_choice_, estimates_, public_class_counts_,
    private_class_counts_, leaf_eta_, leaf_proba_, leaf_class_, used_fallback_, lam_, readout_
    (``"weighted"`` or the ``readout`` object), max_depth_
    (the depth the partition was grown to: as :class:`~ldptree.LPDTRegressor`), privacy_
    (certified epsilon, delta as sampled), privacy_certificate_ (``None`` when uncertified or
    nothing private is collected), privacy_ledger_, n_features_in_, n_public_
    """

    _label_check = staticmethod(check_class_labels)

    _kind = "LPCTClassifier"

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int | None = 4,
        min_samples_leaf: int = 2,
        *,
        lam: float = 1.0,
        min_samples_split: int = 5,
        rule: str | Partitioner = "max_edge",
        criterion: str = "gini",
        classes: Any = None,
        fallback: str = "none",
        readout: str | ReadOut = "weighted",
        mechanism: Mechanism[ReportT, StatsT] | str | None = "auto",
        aggregator: AggregatorFactory | None = None,
        simulation: str = "per_holder",
        outside: str = "clamp",
        feature_margin: float = 0.0,
        chunk_size: int | None = None,
        privacy_budget: float | LedgerScope | PrivacyAccount | None = None,
        allow_uncertified: bool = False,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    def _settings(self) -> tuple[AggregatorFactory, float, Any, float, float]:
        aggregator = self._components()
        lam = check_lam(self.lam)
        check_choice(self.fallback, "fallback", FALLBACKS)
        user_readout = check_readout(self.readout, READOUTS)
        return (aggregator, lam, user_readout, *self._round_settings())

    def _plan(
        self,
        settings: tuple[AggregatorFactory, float, Any, float, float],
        Xq: FloatArray | None,
        yq: Any,
        d: int,
        n: int | None,
    ) -> FitPlan[LPCTClassifier]:
        aggregator, lam, user_readout, epsilon, margin = settings
        stage = self._stage(
            epsilon,
            margin,
            Xq,
            yq,
            d,
            max_depth=self.max_depth,
            collect=user_readout is not None or not math.isinf(lam),
            aggregator=aggregator,
        )

        def finish(round_estimates: CellEstimates | None) -> LPCTClassifier:
            self._set_stage(stage)
            self.estimates_ = estimates = round_estimates
            self.private_class_counts_: FloatArray | None = (
                None
                if estimates is None
                else private_class_counts(estimates, self.classes_.shape[0])
            )
            self.lam_ = lam
            self.readout_ = READOUTS[0] if user_readout is None else user_readout
            if user_readout is None:
                eta, fell_back = self._eta(lam)
            else:
                assert estimates is not None  # a read-out object always has its round
                public = stage.public
                cells = PublicCells(
                    partition=stage.partition,
                    mechanism=self.mechanism_,
                    counts=public.sum(axis=1),
                    class_counts=public,
                )
                leaves = checked_leaves(user_readout(estimates, cells), public.shape)
                eta, fell_back = leaves.values, leaves.used_fallback
            self.used_fallback_ = fell_back
            self._set_leaves(eta)
            return self

        return stage.plan(n, finish)

    def _eta(self, lam: float) -> tuple[FloatArray, np.ndarray[Any, Any]]:
        if not isinstance(self.readout, str):
            raise ValueError(
                f"readout={self.readout!r} is not the lambda-weighted ratio: there is no path over "
                "lam to read out"
            )
        if self.estimates_ is None and not math.isinf(lam):
            raise ValueError(
                "this model was fitted with lam=inf (public only) and collected no private "
                "reports; refit with a finite lam to read out other values"
            )
        leaves = lpct_leaves(
            self.estimates_, self.public_class_counts_, lam=lam, fallback=self.fallback
        )
        return leaves.values, leaves.used_fallback

    def predict_proba_path(self, X: Any, lams: Any) -> FloatArray:
        """``float[n_lams, n, K]``: :meth:`predict_proba` for several ``lam`` from this one
        release (post-processing, no extra privacy cost; needs a finite ``lam`` at fit time unless
        every ``lam`` is ``inf``)."""
        cells, inside = self._route(X)
        values = np.atleast_1d(np.asarray(lams, dtype=np.float64))
        return np.stack(
            [
                self._rows(simplex_projection(self._eta(check_lam(lam, "lams"))[0]), cells, inside)
                for lam in values.tolist()
            ]
        )


class LPCTPrunedClassifier(Planned, _LPCTBase):
    """LPCT-prune: one release on a deep max-edge tree, then per-leaf data-driven depth and
    ``lambda`` (paper §5, Algorithm 2; rules in :mod:`ldptree.estimators._prune`).

    Binary classification only (the statistic is ``|eta - 1/2|``); public labels are required.

    Parameters
    ----------
    epsilon:
        Per-holder budget ``eps > 0``, spent once (LPCT v1 semantics; the reference HEAD's
        ``eps/2`` + refit path is not offered).
    max_depth:
        ``p_max``; ``None`` = the reference simulations' ``floor(log2(n_P eps^2 + n_Q^3) / 3)``
        with ``n_P`` the number of reports and ``n_Q`` the public rows (both public), or, with
        a :class:`~ldptree.protocols.Partitioner` object as ``rule``, the rule's own depth (an
        integer must equal the rule's ``max_depth``, as for :class:`LPCTClassifier`).
    min_depth:
        Shallowest node a leaf may be pruned to; ``None`` = ``floor(log2(n_P eps^2 + 1) / 3)``;
        capped at ``max_depth``.
    min_samples_leaf, min_samples_split:
        Public-count stopping rules (the reference simulations used 1 and {1, 5}).
    C:
        Constant multiplying the confidence radius (paper eq. (13)); the stopping rule is
        ``T >= 1``, so a larger ``C`` prunes more. The reference code has ``C = 1``.
    prune_rule:
        ``"corrected"`` (default, ours: private data weighted, never discarded) or
        ``"reference"`` (the code's branch logic without its statefulness).
    rule, criterion, classes, mechanism, aggregator, simulation, outside, feature_margin,
    chunk_size, privacy_budget, allow_uncertified, random_state:
        As for :class:`LPCTClassifier`.

    Attributes
    ----------
    classes_, partition_, scaler_, mechanism_, mechanism_choice_, estimates_, public_class_counts_,
    prune_,
    leaf_node_, leaf_eta_, leaf_proba_, leaf_class_, max_depth_, min_depth_, privacy_,
    privacy_certificate_, privacy_ledger_, n_features_in_, n_public_
    """

    _label_check = staticmethod(check_class_labels)

    _kind = "LPCTPrunedClassifier"

    def __init__(
        self,
        epsilon: float = 1.0,
        max_depth: int | None = None,
        min_samples_leaf: int = 1,
        *,
        min_depth: int | None = None,
        C: float = 1.0,
        prune_rule: str = "corrected",
        min_samples_split: int = 1,
        rule: str | Partitioner = "max_edge",
        criterion: str = "gini",
        classes: Any = None,
        mechanism: Mechanism[ReportT, StatsT] | str | None = "auto",
        aggregator: AggregatorFactory | None = None,
        simulation: str = "per_holder",
        outside: str = "clamp",
        feature_margin: float = 0.0,
        chunk_size: int | None = None,
        privacy_budget: float | LedgerScope | PrivacyAccount | None = None,
        allow_uncertified: bool = False,
        random_state: Any = None,
    ) -> None:
        self._keep(locals())

    def _depths(self, n_private: int, n_public: int, epsilon: float) -> tuple[int, int]:
        signal = n_private * epsilon**2
        if self.max_depth is None:
            max_depth = math.floor(math.log2(signal + float(n_public) ** 3) / 3.0)
        else:
            max_depth = check_int(self.max_depth, "max_depth", minimum=0)
        if self.min_depth is None:
            min_depth = math.floor(math.log2(signal + 1.0) / 3.0)
        else:
            min_depth = check_int(self.min_depth, "min_depth", minimum=0)
        return max(max_depth, 0), min(max(min_depth, 0), max(max_depth, 0))

    def _settings(self) -> tuple[AggregatorFactory, float, str, float, float]:
        aggregator = self._components()
        c = check_positive(self.C, "C")
        rule = check_choice(self.prune_rule, "prune_rule", PRUNE_RULES)
        return (aggregator, c, rule, *self._round_settings())

    def _plan(
        self,
        settings: tuple[AggregatorFactory, float, str, float, float],
        Xq: FloatArray | None,
        yq: Any,
        d: int,
        n: int | None,
    ) -> FitPlan[LPCTPrunedClassifier]:
        aggregator, c, rule, epsilon, margin = settings
        if Xq is None or yq is None:
            raise ValueError(
                "LPCT-prune needs public data: pass X_public and y_public (its statistic compares "
                "private and public estimates)"
            )
        # report and public row counts are public; the default depths depend on them
        if n is None and (self.max_depth is None or self.min_depth is None):
            raise ValueError(
                "the default max_depth and min_depth of LPCT-prune depend on the number of "
                "holders: pass n_holders (public) to plan, or max_depth and min_depth (an "
                "iterable of (X_chunk, y_chunk) pairs does not say its number of rows up front)"
            )
        n_private = n or 0
        n_public = 0 if Xq is None else int(Xq.shape[0])
        max_depth, min_depth = self._depths(n_private, n_public, epsilon)
        own_depth = self.max_depth is None and not isinstance(self.rule, str)
        stage = self._stage(
            epsilon,
            margin,
            Xq,
            yq,
            d,
            # a rule object without max_depth grows to its own depth, which the walk then uses
            max_depth=None if own_depth else max_depth,
            collect=True,
            aggregator=aggregator,
            binary=True,
        )
        partition, public = stage.partition, stage.public
        max_depth = stage.max_depth
        min_depth = min(min_depth, max_depth)

        def finish(round_estimates: CellEstimates | None) -> LPCTPrunedClassifier:
            assert round_estimates is not None  # collect=True
            self._set_stage(stage)
            self.estimates_ = estimates = round_estimates
            result = lpct_pruned_leaves(
                partition,
                estimates,
                public,
                epsilon=epsilon,
                max_depth=max_depth,
                min_depth=min_depth,
                rule=rule,
                c=c,
            )
            self.max_depth_, self.min_depth_ = max_depth, min_depth
            self.prune_ = result
            self.leaf_node_ = result.leaf_node
            eta = result.leaf_eta
            self._set_leaves(np.column_stack([1.0 - eta, eta]))
            return self

        return stage.plan(n_private, finish)


@attrs.frozen(eq=False)
class _Stage:
    """The public stage of an LPCT fit (:meth:`_LPCTBase._stage`)."""

    classes: np.ndarray[Any, Any]
    max_depth: int
    n_features: int
    n_public: int
    scaler: RangeScaler
    partition: Partition
    mechanism: Mechanism | None
    choice: MechanismChoice | None
    public: FloatArray
    ledger: PrivacyLedger
    certificate: LDPCertificate | None
    round: Round | None

    def plan(self, n_holders: int | None, finish: Callable[[Any], T]) -> FitPlan[T]:
        return FitPlan(
            partition=self.partition,
            scaler=self.scaler,
            mechanism=self.mechanism,
            choice=self.choice,
            round=self.round,
            certificate=self.certificate,
            ledger=self.ledger,
            n_holders=n_holders,
            finish=finish,
            classes=self.classes,
        )
