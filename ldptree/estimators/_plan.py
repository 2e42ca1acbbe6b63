"""The public stage of a fit, as a value: everything decided before any private value is read.

A fit is three steps: the *plan* (checks, the scaling box and partition grown on public data, the
mechanism and why it was chosen, its certificate and charge: host work on public data and
declarations only), the *round* (holders' reports folded into cell estimates by the engine,
:func:`ldptree.rounds.run`), and the *read-out* (:meth:`FitPlan.finish`). ``fit`` is exactly
these three (``estimator.plan`` on the public data with ``n_holders`` = the number of private
rows, then the round over those rows, then ``finish``), so a plan run elsewhere ends in the same
model: in a deployment the round is the holders' reports, collected by
:class:`ldptree.protocol.Collector`, and the plan publishes what it chose (:meth:`FitPlan.publish`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar, cast

import attrs
import numpy as np

from ldptree._validation import check_int, check_matrix, check_vector
from ldptree.accounting._ledger import PrivacyLedger
from ldptree.accounting._spend import PrivacySpend
from ldptree.accounting._verify import LDPCertificate
from ldptree.estimators._base import keeps_state_on_error
from ldptree.estimators._inputs import check_fit_rows, check_public_data
from ldptree.estimators._many import PendingFit
from ldptree.mechanisms._choose import MechanismChoice
from ldptree.partitions._partition import Partition
from ldptree.partitions._scaling import RangeScaler
from ldptree.protocols import CellEstimates
from ldptree.rounds import Executor, PrivateRows, Reports, Round, run
from ldptree.rounds._rows import LabelCheck

if TYPE_CHECKING:
    from ldptree.protocol import Collector

__all__ = ["FitPlan", "Planned", "declared_shape", "public_plan"]

T = TypeVar("T")


@attrs.frozen(eq=False)
class FitPlan(Generic[T]):
    """A fit up to its round, fixed before any private value is read (module docstring).

    Attributes
    ----------
    partition, scaler:
        The published partition and the public scaling box (raw features to the unit cube).
    mechanism:
        The mechanism each holder runs (``None`` when the fit collects no report, e.g. LPCT with
        ``lam=inf``); ``choice`` says why ``mechanism="auto"`` picked it (``None`` otherwise:
        its :meth:`~ldptree.mechanisms.MechanismChoice.describe` names the mechanism, the split
        and the predicted gain).
    round:
        The :class:`~ldptree.rounds.Round` the engine runs (``None`` without reports). Its
        ``key`` is the simulation's release key; a deployment's holders draw from their own
        operating system instead and the engine folds their reports with ``key`` unused.
    certificate, ledger:
        The mechanism's certificate for ``partition`` (``None`` when uncertified or nothing is
        collected) and the ledger the fitted model will carry (``privacy_ledger_``), already
        charged with the round: ``privacy`` is its total, the model's ``privacy_``.
    classes:
        The classifier's classes (``classes_`` of the fitted model; ``None`` for a regressor):
        a holder reports its label's *code*, its index here (``round.labels`` encodes labels).
    n_holders:
        The number of holders declared for the plan (``None``: not declared). Only choices that
        need it read it (LPDT's ``max_depth="auto"``, LPCT-prune's default depths); ``fit``
        declares the number of private rows it is given. The read-out reads the number of
        reports from the estimates themselves.
    """

    partition: Partition
    scaler: RangeScaler
    mechanism: Any
    choice: MechanismChoice | None
    round: Round | None
    certificate: LDPCertificate | None
    ledger: PrivacyLedger
    n_holders: int | None
    _finish: Callable[[CellEstimates | None], T] = attrs.field(alias="finish")
    classes: np.ndarray[Any, Any] | None = None

    @property
    def privacy(self) -> PrivacySpend:
        """The per-holder spend of the fitted model (its ``privacy_``)."""
        return self.ledger.total

    @classmethod
    def of_round(
        cls,
        round: Round,
        certificate: LDPCertificate | None,
        ledger: PrivacyLedger,
        n_holders: int | None,
        finish: Callable[[CellEstimates | None], T],
        *,
        choice: MechanismChoice | None = None,
        classes: np.ndarray[Any, Any] | None = None,
    ) -> FitPlan[T]:
        """The plan of a fit that collects ``round`` (its partition, box and mechanism are the
        plan's)."""
        assert round.scaler is not None  # a fit's round scales the raw rows
        return cls(
            partition=round.partition,
            scaler=round.scaler,
            mechanism=round.mechanism,
            choice=choice,
            round=round,
            certificate=certificate,
            ledger=ledger,
            n_holders=n_holders,
            finish=finish,
            classes=classes,
        )

    def finish(self, estimates: CellEstimates | None) -> T:
        """The fitted estimator, completed from the round's cell ``estimates`` exactly as
        ``fit`` completes it (the same read-out, on the estimator that made this plan, whose
        fitted attributes it sets, the plan's charge included: ``privacy_ledger_``,
        ``privacy_``, ``privacy_certificate_``; ``None`` only for a plan without a round)."""
        if (estimates is None) != (self.round is None):
            raise ValueError(
                "estimates must be the round's CellEstimates"
                if self.round is not None
                else "this plan collects no reports: finish it with estimates=None"
            )
        fitted: Any = self._finish(estimates)
        fitted.privacy_ledger_ = self.ledger
        fitted.privacy_ = self.privacy
        fitted.privacy_certificate_ = self.certificate
        return cast(T, fitted)

    def run(self, source: PrivateRows | Reports, *, executor: Executor | None = None) -> T:
        """The round over ``source`` (the holders' rows, or reports already released) through
        the engine (:func:`ldptree.rounds.run`), then :meth:`finish`."""
        if self.round is None:
            return self.finish(None)
        return self.finish(run([self.round], source, executor=executor)[0].estimates)

    def collect(self, collector: Collector) -> T:
        """The fitted estimator from the reports a :class:`~ldptree.protocol.Collector` has
        committed: the engine folds them (streamed, with this plan's aggregator) and
        :meth:`finish` reads them out. The collector must be collecting this plan's round (its
        partition, box and mechanism; ``ValueError`` otherwise)."""
        published = collector.published
        if self.round is None:
            raise ValueError("this plan collects no reports")
        same = (
            published.partition.equals(self.partition)
            and np.array_equal(published.scaler.lo, self.scaler.lo)
            and np.array_equal(published.scaler.hi, self.scaler.hi)
            and published.mechanism == self.mechanism
        )
        if not same:
            raise ValueError(
                "the collector collects another round (its partition, box or mechanism differs "
                "from this plan's)"
            )
        if collector.n_reports == 0:
            raise ValueError("no report has been committed yet")
        return self.run(Reports(collector.report_batches()))

    def publish(self, *, nonce: str | None = None) -> dict[str, Any]:
        """What the curator publishes for this plan's round (:func:`ldptree.protocol.publish`
        of its partition, box, mechanism and a classifier's classes, so that holders report
        their own labels; a fresh nonce unless ``nonce`` is given)."""
        from ldptree.protocol import publish  # the deployment layer sits above the estimators

        if self.mechanism is None:
            raise ValueError("this plan collects no reports: there is no round to publish")
        return publish(
            self.partition, self.scaler, self.mechanism, classes=self.classes, nonce=nonce
        )


def declared_shape(X_public: Any, n_features: Any, n_holders: Any) -> tuple[int, int | None]:
    """A plan's width (from ``X_public``, else the declared ``n_features``; both must agree)
    and its declared number of holders (``None``: not declared)."""
    n = None if n_holders is None else check_int(n_holders, "n_holders", minimum=1)
    declared = None if n_features is None else check_int(n_features, "n_features", minimum=1)
    if X_public is None:
        if declared is None:
            raise ValueError("a plan without public data needs n_features (the number of features)")
        return declared, n
    width = check_matrix(X_public, "X_public", allow_empty=True).shape[1]
    if declared is not None and declared != width:
        raise ValueError(f"n_features={declared} but X_public has {width} features")
    return width, n


def public_plan(estimator: Any, plan: FitPlan[T]) -> FitPlan[T]:
    """``plan`` made by ``estimator.plan`` (not ``fit``): its ``finish`` also drops feature
    names left by an earlier ``fit`` (a plan's model has none), and leaves the estimator as it
    was if the read-out raises."""
    inner = plan._finish

    def finish(estimates: CellEstimates | None) -> T:
        before = dict(estimator.__dict__)
        try:
            estimator.__dict__.pop("feature_names_in_", None)
            return inner(estimates)
        except BaseException:
            estimator.__dict__.clear()
            estimator.__dict__.update(before)
            raise

    return attrs.evolve(plan, finish=finish)


class Planned:
    """The fit skeleton of an estimator whose fit is its plan, its round and its read-out
    (module docstring): ``fit`` is ``plan`` on the public data with ``n_holders`` the number of
    private rows, the round over those rows, then ``finish``; :func:`~ldptree.estimators.
    fit_many` runs the round with others'. A subclass gives ``_settings()`` (its hyper-parameters
    checked before any data is read), ``_plan(settings, X_public, y_public, n_features,
    n_holders)`` (checked public data, ``None`` when absent) and ``_label_check`` (how labels are
    validated); ``_check_fit_input`` comes from :class:`~ldptree.estimators.BaseEstimator`."""

    _label_check: ClassVar[LabelCheck] = staticmethod(check_vector)

    @keeps_state_on_error
    def fit(self, X: Any, y: Any = None, *, X_public: Any = None, y_public: Any = None) -> Self:
        """Grow the partition on public data, collect one report per private row, read out.

        ``X`` may be memory-mapped (``np.load(path, mmap_mode="r")``): it is read, checked and
        converted ``chunk_size`` rows at a time, never copied whole. ``X`` may also be an
        iterable of ``(X_chunk, y_chunk)`` pairs with ``y=None``; holders are numbered in the
        order their rows arrive, so the fit equals the in-memory fit on the concatenation."""
        return self._start_fit(X, y, X_public=X_public, y_public=y_public).run()

    def _start_fit(
        self, X: Any, y: Any = None, *, X_public: Any = None, y_public: Any = None
    ) -> PendingFit[Self]:
        """:meth:`fit` up to its round: the private input checked, then the plan with
        ``n_holders`` the number of private rows (:func:`~ldptree.estimators.fit_many` runs the
        rounds of many fits together)."""
        settings = self._settings()
        y = self._check_fit_input(X, y)  # type: ignore[attr-defined]
        rows, Xq, yq = check_fit_rows(X, y, X_public, y_public, check_labels=self._label_check)
        plan = self._plan(settings, Xq, yq, rows.n_features, rows.n)
        return PendingFit(plan.round, rows, plan.finish)

    def plan(
        self,
        X_public: Any = None,
        y_public: Any = None,
        *,
        n_holders: int | None = None,
        n_features: int | None = None,
    ) -> FitPlan[Self]:
        """The public stage of :meth:`fit`, from public data and declarations only: the scaling
        box and partition grown on ``(X_public, y_public)``, the mechanism (and why ``"auto"``
        chose it), its certificate and charge, the round, and ``finish`` (the read-out).

        ``n_holders`` declares the number of holders (public; only choices that need it read
        it, e.g. LPDT's ``max_depth="auto"``); ``n_features`` the width, needed without public
        data. ``plan.run(source)`` or ``plan.finish(estimates)`` then fits this estimator as
        ``fit`` would on those holders; ``plan.publish()`` publishes the round for a deployment
        (``docs/deployment.md``; a classifier's holders report the index of their label in
        ``plan.classes``, as ``plan.round.labels`` encodes it). The estimator is unchanged
        until ``finish``."""
        settings = self._settings()
        d, n = declared_shape(X_public, n_features, n_holders)
        Xq, yq = check_public_data(X_public, y_public, d, self._label_check)
        return public_plan(self, self._plan(settings, Xq, yq, d, n))

    def _settings(self) -> Any:
        raise NotImplementedError

    def _plan(self, settings: Any, Xq: Any, yq: Any, d: int, n: int | None) -> FitPlan[Any]:
        raise NotImplementedError
