"""Tuning modes: how a cell (method, dataset, epsilon, repetition) turns a grid into results.

Every row records the spend that the fitted models' own ledgers state (``privacy_``: epsilon
and delta per holder, per group of holders, in the ``privacy`` column), never the nominal epsilon
of the cell; a model whose ledger says more than the cell's ``eps`` is refused (``_Charges``).

* :class:`FixedParams`: one fit with given parameters; every holder releases once.
* :class:`OracleTuning` (the papers' practice): every grid point is fitted on
  all training holders and scored on the test set; tables pick the grid point with the best mean
  test score over repetitions (the LPCT notebook's rule). **Not private**: choosing by test score
  is optimistic, and ``k`` fits on the same holders cost each of them the sum of the ``k`` models'
  spends (``k eps`` for models that spend their budget); every row says so
  (``private_pipeline = False``, ``holder_epsilon`` that sum).
* :class:`PrivateTuning`: a fraction of the training holders becomes validation
  holders, who release their ``k`` clipped losses as integer codes with exactly sampled discrete
  Laplace noise (:mod:`._private_validation`);
  the curator keeps the model with the smallest noisy validation loss. With
  ``training="disjoint"`` (default) the remaining holders are split into ``k`` groups, one per
  grid point, so *every holder releases exactly once*: training holders their ``eps`` report,
  validation holders their ``eps`` noisy losses. The groups are disjoint, so by parallel
  composition the whole pipeline is ``eps``-LDP per holder. ``training="shared"`` is the paper's
  App. D.2 reading, where every training holder reports to all ``k`` models: recorded as
  ``holder_epsilon = k eps`` and not an ``eps``-LDP pipeline. The selected model is never refitted
  (a refit would make holders release twice). Without a grid for an LPDT method it uses the
  default private grid of :mod:`._private_grid` (size from ``n`` and ``eps``, depths from the
  LPDT paper's rate) instead of the 132-point oracle grid; a one-point grid needs no
  validation, so all training holders train it; for a grid the user named that is too fine for
  its holders, the runner raises one ``UserWarning`` per method naming the sizes
  (:meth:`PrivateTuning.selection_warning`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs
import numpy as np

from ldptree._validation import NotApplicableError, check_open_unit
from ldptree.accounting import PrivacyLedger, PrivacySpend
from ldptree.estimators import fit_many
from ldptree.estimators._many import staged_start
from ldptree.experiments._grids import Grid, grid_preset
from ldptree.experiments._guards import disabled_guards
from ldptree.experiments._metrics import Metric
from ldptree.experiments._private_grid import LPDT_ORACLE_GRIDS, grid_warning, lpdt_private_grid
from ldptree.experiments._private_validation import (
    loss_release_certificate,
    noise_scale,
    paper_noise_scale,
    privatize_losses,
)
from ldptree.experiments._registry import MethodSpec
from ldptree.experiments._splits import Split


@attrs.frozen
class Outcome:
    """One result row of a cell before the runner adds the cell's coordinates."""

    grid_index: int
    params: dict[str, Any]
    value: float
    seconds: float
    selected: bool | None
    n_train: int
    n_validation: int
    holder_epsilon: float
    private_pipeline: bool
    spend: str
    validation_score: float | None = None
    privacy: str = ""  # JSON of the cell's privacy ledger (_Charges.to_json)
    guards: str = ""  # the protective settings this configuration turns off (._guards)


@attrs.frozen(eq=False)
class Cell:
    """Everything a tuning mode needs to run one cell; ``seed(*labels)`` derives fit seeds."""

    spec: MethodSpec
    split: Split
    epsilon: float
    metric: Metric
    seed: Callable[..., int]


class Tuning(Protocol):
    """A tuning mode: ``run(cell)`` fits and scores; ``describe`` enters the fingerprint."""

    @property
    def mode(self) -> str: ...

    def run(self, cell: Cell) -> list[Outcome]: ...

    def describe(self, spec: MethodSpec, n_private: int) -> dict[str, Any]: ...


def _to_choice(value: Mapping[str, Any] | None) -> dict[str, str | Grid]:
    out = dict(value or {})
    for method, grid in out.items():
        if not isinstance(grid, str | Grid):
            raise TypeError(f"grids[{method!r}] must be a preset name or a Grid")
    return out


def resolve_grid(
    grids: Mapping[str, str | Grid],
    spec: MethodSpec,
    n_private: int,
    n_features: int | None = None,
) -> Grid:
    """The grid for ``spec``: an override by method name, else the method's default preset
    (presets that depend on the dimension apply their rule when ``n_features`` is given)."""
    choice = grids.get(spec.name, spec.default_grid)
    if isinstance(choice, Grid):
        return choice
    if not choice:
        raise ValueError(
            f"method {spec.name!r} has no default grid; name one for it (tuning.grids, or "
            "OracleTuning/PrivateTuning's grids)"
        )
    return grid_preset(choice, n_private=n_private, n_features=n_features)


def _fit(cell: Cell, params: Mapping[str, Any], seed: int, X: Any, y: Any) -> tuple[Any, float]:
    """The fitted model of ``params`` and its seconds."""
    start = time.perf_counter()
    split = cell.split
    model = cell.spec.build(cell.epsilon, params, seed)
    model.fit(X, y, X_public=split.X_public, y_public=split.y_public)
    return model, time.perf_counter() - start


def _guards(cell: Cell, params: Mapping[str, Any]) -> str:
    """The protective settings the estimator of ``params`` runs without (:mod:`._guards`)."""
    return "; ".join(disabled_guards(cell.spec.build(cell.epsilon, params, 0)))


def _fit_grid(cell: Cell, points: list[dict[str, Any]]) -> list[tuple[Any, float]] | None:
    """Every grid point's fitted model and seconds, the fits run together
    (:func:`ldptree.estimators.fit_many`: one routing per distinct partition, one vectorised
    kernel call per group of rounds sharing a compiled shape; the same predictions bit for bit as
    fitting point by point). A point's seconds are the grid's wall time divided by the number of
    points. ``None`` when a point refuses (:class:`NotApplicableError`) or the method's fits are
    not staged (nothing to run together): the caller then fits point by point and skips the
    refusals."""
    start = time.perf_counter()
    s = cell.split
    try:
        models = [
            cell.spec.build(cell.epsilon, params, cell.seed("fit", index))
            for index, params in enumerate(points)
        ]
        if not all(staged_start(model) is not None for model in models):
            return None  # e.g. the histograms: fitting them here would only fit them twice
        fit_many(models, s.X_train, s.y_train, X_public=s.X_public, y_public=s.y_public)
    except NotApplicableError:
        return None
    seconds = (time.perf_counter() - start) / max(len(points), 1)
    return [(model, seconds) for model in models]


@attrs.frozen
class FixedParams:
    """Fit once with ``params`` (module docstring)."""

    params: Mapping[str, Any] = attrs.field(factory=dict, converter=dict)
    mode: str = attrs.field(default="fixed", init=False)

    def run(self, cell: Cell) -> list[Outcome]:
        s = cell.split
        model, seconds = _fit(cell, self.params, cell.seed("fit", 0), s.X_train, s.y_train)
        ledger = _Charges(cell.epsilon, shared=False)
        ledger.charge(cell, model, "training")  # refuses a model above the cell's budget
        spent = ledger.ledger.total
        return [
            Outcome(
                grid_index=0,
                params=dict(self.params),
                value=cell.metric.score(model.predict(s.X_test), s.y_test),
                seconds=seconds,
                selected=True,
                n_train=s.X_train.shape[0],
                n_validation=0,
                holder_epsilon=_holder_epsilon(cell, spent.epsilon),
                private_pipeline=_private_model(cell),
                spend=(
                    PUBLIC_ONLY
                    if cell.spec.public_only
                    else f"one report per training holder: {spent} (the model's own ledger)"
                ),
                privacy=ledger.to_json(),
                guards=_guards(cell, self.params),
            )
        ]

    def describe(self, spec: MethodSpec, n_private: int) -> dict[str, Any]:
        del spec, n_private
        return {"mode": self.mode, "params": repr(sorted(self.params.items()))}


@attrs.frozen
class OracleTuning:
    """Every grid point scored on the test set (module docstring); ``grids`` by method name."""

    grids: Mapping[str, str | Grid] = attrs.field(factory=dict, converter=_to_choice)
    mode: str = attrs.field(default="oracle", init=False)

    def run(self, cell: Cell) -> list[Outcome]:
        s = cell.split
        grid = resolve_grid(self.grids, cell.spec, *s.X_train.shape)
        fits: list[tuple[int, dict[str, Any], Any, float]] = []
        refused = []
        fitted = _fit_grid(cell, list(grid.configurations()))
        # every grid point is fitted on the same holders: their ledgers compose sequentially
        ledger = _Charges(cell.epsilon, shared=True)
        for index, params in enumerate(grid.configurations()):
            try:
                model, seconds = (
                    fitted[index]
                    if fitted is not None
                    else _fit(cell, params, cell.seed("fit", index), s.X_train, s.y_train)
                )
            except NotApplicableError as error:  # e.g. a histogram grid too large: skip the point
                refused.append(str(error))
                continue
            ledger.charge(cell, model, "training")
            fits.append((index, params, model, seconds))
        if not fits:
            raise NotApplicableError(f"every grid point was refused; the first: {refused[0]}")
        spent = ledger.ledger.total
        spend = (
            f"NON-PRIVATE oracle: grid point chosen by test score; {PUBLIC_ONLY}"
            if cell.spec.public_only
            else f"NON-PRIVATE oracle: {len(fits)} fits on the same holders ({spent} in all, "
            "from the models' own ledgers), grid point chosen by test score"
        )
        return [
            Outcome(
                grid_index=index,
                params=params,
                value=cell.metric.score(model.predict(s.X_test), s.y_test),
                seconds=seconds,
                selected=None,
                n_train=s.X_train.shape[0],
                n_validation=0,
                holder_epsilon=_holder_epsilon(cell, spent.epsilon),
                private_pipeline=False,
                spend=spend,
                privacy=ledger.to_json(),
                guards=_guards(cell, params),
            )
            for index, params, model, seconds in fits
        ]

    def describe(self, spec: MethodSpec, n_private: int) -> dict[str, Any]:
        return {"mode": self.mode, "grid": resolve_grid(self.grids, spec, n_private).describe()}


def _to_fraction(value: Any) -> float:
    return check_open_unit(value, "validation_fraction")


def _check_training(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if value not in ("disjoint", "shared"):
        raise ValueError(f"{attribute.name} must be 'disjoint' or 'shared', got {value!r}")


@attrs.frozen
class PrivateTuning:
    """Private validation with noisy losses (module docstring)."""

    grids: Mapping[str, str | Grid] = attrs.field(factory=dict, converter=_to_choice)
    validation_fraction: float = attrs.field(default=0.2, converter=_to_fraction)
    training: str = attrs.field(default="disjoint", validator=_check_training)
    mode: str = attrs.field(default="private", init=False)

    def _uses_default(self, spec: MethodSpec) -> bool:
        return spec.name not in self.grids and spec.default_grid in LPDT_ORACLE_GRIDS

    def grid(self, spec: MethodSpec, n_private: int, n_features: int, epsilon: float) -> Grid:
        """The grid ``run`` tunes ``spec`` over (module docstring)."""
        if self._uses_default(spec):
            return lpdt_private_grid(n_private, n_features, epsilon, self.validation_fraction)
        return resolve_grid(self.grids, spec, n_private, n_features)

    def selection_warning(
        self, spec: MethodSpec, n_private: int, n_features: int, epsilon: float
    ) -> str | None:
        """The warning's text when a grid *the user named* for ``spec`` is too fine for
        ``n_private`` training holders at ``epsilon`` (:func:`._private_grid.grid_warning`),
        else ``None``. The runner warns once per method before any fit; the library's own
        default grids are not warned about (the user did not choose them)."""
        if spec.name not in self.grids:
            return None
        grid = self.grid(spec, n_private, n_features, epsilon)
        k = grid.size
        n_v = math.floor(self.validation_fraction * n_private)
        n_rest = n_private - n_v
        n_group = n_rest // k if self.training == "disjoint" else n_rest
        return grid_warning(k, n_v, n_group, epsilon, grid.name)

    def run(self, cell: Cell) -> list[Outcome]:
        s = cell.split
        n, d = s.X_train.shape
        grid = self.grid(cell.spec, n, d, cell.epsilon)
        k = grid.size
        if k == 1:
            return [self._single(cell, next(grid.configurations()))]
        n_v = int(np.floor(self.validation_fraction * n))
        holders = np.random.default_rng(cell.seed("holders")).permutation(n)
        validation, rest = holders[:n_v], holders[n_v:]
        groups = np.array_split(rest, k) if self.training == "disjoint" else [rest] * k
        if n_v < 1 or min(g.shape[0] for g in groups) < 1:
            raise ValueError(
                f"{n} training holders are too few for validation_fraction="
                f"{self.validation_fraction} and {k} {self.training} training groups"
            )
        X_val = s.X_train[validation]
        start = time.perf_counter()
        losses, test_preds = np.empty((n_v, k)), []
        ledger = _Charges(cell.epsilon, shared=self.training == "shared")
        for index, (params, group) in enumerate(zip(grid.configurations(), groups, strict=True)):
            X_eval = np.concatenate([X_val, s.X_test])
            pred = ledger.fit_predict(
                cell, params, cell.seed("fit", index), s.X_train[group], s.y_train[group], X_eval
            )
            pred = np.asarray(pred)
            losses[:, index] = cell.metric.loss(pred[:n_v], s.y_train[validation])
            test_preds.append(pred[n_v:])
        bound = cell.metric.loss_bound(s.y_public)
        ledger.charge_validation(k, bound)  # before the validation holders release anything
        noisy = privatize_losses(
            losses,
            bound=bound,
            epsilon=cell.epsilon,
            rng=np.random.default_rng(cell.seed("validation-noise")),
        )
        scores = noisy.mean(axis=0)
        best = int(np.argmin(scores))
        params = next(p for i, p in enumerate(grid.configurations()) if i == best)
        disjoint = self.training == "disjoint"
        spend = (
            f"{cell.epsilon:g}-LDP per holder: training groups and validation holders are "
            f"disjoint (parallel composition); validation discrete Laplace scale k B / eps = "
            f"{noise_scale(k, bound, cell.epsilon):.4g} (paper's M^2 sqrt(k)/eps = "
            f"{paper_noise_scale(k, bound, cell.epsilon):.4g}, not used), k = {k}"
        )
        if not disjoint:
            spend = (
                f"training holders report to all {k} models: {k * cell.epsilon:g}-LDP (basic "
                f"composition); validation holders {cell.epsilon:g}-LDP; discrete Laplace scale "
                f"{noise_scale(k, bound, cell.epsilon):.4g}"
            )
        if cell.spec.public_only:
            spend = (
                f"{PUBLIC_ONLY}; validation holders {cell.epsilon:g}-LDP, discrete Laplace scale "
                f"k B / eps = {noise_scale(k, bound, cell.epsilon):.4g}, k = {k}"
            )
        return [
            Outcome(
                grid_index=best,
                params=params,
                value=cell.metric.score(test_preds[best], s.y_test),
                seconds=time.perf_counter() - start,
                selected=True,
                n_train=int(groups[best].shape[0]),
                n_validation=n_v,
                holder_epsilon=_holder_epsilon(cell, 0.0, ledger.ledger.total.epsilon),
                private_pipeline=disjoint and _private_model(cell),
                spend=spend,
                validation_score=float(scores[best]),
                privacy=ledger.to_json(),
                guards=_guards(cell, params),
            )
        ]

    def _single(self, cell: Cell, params: dict[str, Any]) -> Outcome:
        """A one-point grid: nothing to select, so no validation; every training holder
        releases once to the single model, whose own ledger is the cell's."""
        s = cell.split
        start = time.perf_counter()
        ledger = _Charges(cell.epsilon, shared=False)
        pred = ledger.fit_predict(cell, params, cell.seed("fit", 0), s.X_train, s.y_train, s.X_test)
        return Outcome(
            grid_index=0,
            params=params,
            value=cell.metric.score(np.asarray(pred), s.y_test),
            seconds=time.perf_counter() - start,
            selected=True,
            n_train=s.X_train.shape[0],
            n_validation=0,
            holder_epsilon=_holder_epsilon(cell, 0.0, ledger.ledger.total.epsilon),
            private_pipeline=_private_model(cell),
            spend=(
                f"a one-point grid, so no validation release; {PUBLIC_ONLY}"
                if cell.spec.public_only
                else f"{cell.epsilon:g}-LDP per holder: a one-point grid, so no validation "
                "release; every training holder reports once to the single model"
            ),
            validation_score=None,
            privacy=ledger.to_json(),
            guards=_guards(cell, params),
        )

    def describe(self, spec: MethodSpec, n_private: int) -> dict[str, Any]:
        grid: Any = (
            "lpdt-private-auto: k and depths from n, d and epsilon"
            if self._uses_default(spec)
            else resolve_grid(self.grids, spec, n_private).describe()
        )
        return {
            "mode": self.mode,
            "grid": grid,
            "validation_fraction": self.validation_fraction,
            "training": self.training,
        }


#: The ``spend`` text of a method that trains on the public sample alone.
PUBLIC_ONLY = "public data only: the private holders release nothing to the model"


def _holder_epsilon(cell: Cell, fits: float, validation: float = 0.0) -> float:
    """What a training holder spends in ``cell``: the fits' epsilon plus the validation release
    (private tuning passes its ledger's total as ``validation``); ``inf`` for a non-private
    reference that trains on raw private records; only the validation release for a method
    that trains on public data alone (its fits cost the private holders nothing)."""
    if cell.spec.public_only:
        return validation
    if not cell.spec.private:
        return math.inf
    return fits + validation


def _private_model(cell: Cell) -> bool:
    """Whether the method's fits are private: an LDP method, or one that uses no private row."""
    return cell.spec.private or cell.spec.public_only


# --- the privacy ledger of a private-tuning cell ----------------------------------------------
class _Charges:
    """Charges every release of a cell to a :class:`PrivacyLedger`: what each fitted model's
    own ledger says it spent (``privacy_``), never the nominal epsilon of the cell.

    Every model was built with the cell's ``eps``, and one whose ledger says more is refused
    with ``ValueError`` (in every mode): the row would misstate its privacy. Disjoint groups
    (``shared=False``: a fixed fit, private tuning's training groups and validation holders)
    compose in *parallel* under a budget of ``eps``, so a release above it is refused before the
    validation holders release. Shared holders (``shared=True``: the oracle's grid, private
    tuning's ``training="shared"``, the paper's App. D.2) pay every model's spend (sequential
    composition, recorded as the sum).
    """

    def __init__(self, epsilon: float, *, shared: bool) -> None:
        self.epsilon = epsilon
        self.shared = shared
        # the cap is on epsilon; a method's declared delta (PGLM's Gaussian release) is recorded,
        # not refused: the cell is then (eps, delta)-LDP and its ledger says so
        budget = None if shared else PrivacySpend(epsilon=epsilon, delta=1.0)
        self.ledger = PrivacyLedger(budget=budget)
        self.models = 0

    def charge(self, cell: Cell, model: Any, group: str) -> None:
        """Record ``model``'s own spend for the holders ``group`` (module docstring)."""
        if not cell.spec.private:
            # a non-private reference releases raw records: nothing to charge, and the cell's
            # holder_epsilon says inf (``_holder_epsilon``); only the validation is charged
            return
        spend = getattr(model, "privacy_", None)
        if not isinstance(spend, PrivacySpend):
            raise ValueError(
                f"method {cell.spec.name!r} is private, but its fitted model states no spend "
                f"(privacy_, a PrivacySpend, got {type(spend).__name__}): results record the "
                "spend of the model's own ledger, never the nominal epsilon; give the estimator "
                "a privacy_ or register it with private=False"
            )
        if not spend.within(PrivacySpend(epsilon=self.epsilon, delta=1.0)):
            raise ValueError(
                f"method {cell.spec.name!r} was given epsilon={self.epsilon:g} but its fitted "
                f"model's ledger says it spent {spend} per holder, above the budget of the cell; "
                "the row is refused (it would misstate the privacy of the result)"
            )
        self.ledger = self.ledger.record(f"model {self.models} reports", spend, holders=group)
        self.models += 1

    def fit_predict(
        self, cell: Cell, params: Mapping[str, Any], seed: int, X: Any, y: Any, X_eval: Any
    ) -> Any:
        model, _ = _fit(cell, params, seed, X, y)
        self.charge(cell, model, "training" if self.shared else f"training-{self.models}")
        return model.predict(X_eval)

    def charge_validation(self, k: int, bound: float) -> None:
        """Charge the validation release its certified spend (the claim when the realised counts
        certify it, which :func:`loss_release_certificate` checks)."""
        cert = loss_release_certificate(k, bound, self.epsilon)
        self.ledger = self.ledger.record(
            f"{k} clipped losses as integer codes + exact discrete Laplace (scale k B / eps), "
            f"B = {bound:.4g}",
            PrivacySpend(epsilon=self.epsilon if cert.pure else max(cert.epsilon, self.epsilon)),
            holders="validation",
        )

    def to_json(self) -> str:
        groups = {g: self.ledger.spent(g).epsilon for g in self.ledger.groups}
        return json.dumps(
            {
                "composition": "sequential (shared holders)" if self.shared else "parallel",
                "budget": None if self.ledger.budget is None else self.ledger.budget.epsilon,
                "holder_epsilon": self.ledger.total.epsilon,
                "holder_delta": self.ledger.total.delta,
                "groups": groups,
            },
            sort_keys=True,
        )
