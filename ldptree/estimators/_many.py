"""Many fits of one data set at once: every round set up first, then run together.

A fit is: checks, the public partition, the mechanism and its charge (host work on public data);
then the *round*; then the read-out. An estimator with staged fits (:class:`~ldptree.
LPDTRegressor`, :class:`~ldptree.LPCTClassifier`, :class:`~ldptree.LPCTPrunedClassifier`, the
baselines PHIST, APHIST and DECONV: every :class:`~ldptree.estimators.Planned`) splits
``fit`` at the round (``_start_fit`` returns a :class:`PendingFit`: its
:class:`~ldptree.rounds.Round`, the rows it reads and the read-out, from the estimator's public
:class:`~ldptree.estimators.FitPlan`). :func:`fit_many` starts every
fit, runs the rounds in one call of the engine (:func:`ldptree.rounds.run`; by default the
:class:`~ldptree.rounds.Batched` executor: one routing per distinct partition, one vectorised
kernel call per group of rounds sharing a compiled shape, where on small data a round costs more
in dispatch than in arithmetic) and completes them. Every round keeps its own key, holders and
mechanism, so each estimator ends **bit for bit** as its own ``fit`` would leave it (tested):
this is a faster schedule, not another estimator.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar, cast

import attrs
import jax
import numpy as np

from ldptree.protocols import CellEstimates
from ldptree.rounds import Batched, Executor, PrivateRows, Round, run

T = TypeVar("T")


@attrs.frozen(eq=False)
class PendingFit(Generic[T]):
    """A started fit: its round (``None`` when the fit collects no reports), the private rows
    the round reads, and the read-out that completes the estimator from the round's estimates
    (:meth:`run` is ``fit``)."""

    round: Round | None
    rows: PrivateRows
    finish: Callable[[CellEstimates | None], T]

    def run(self, executor: Executor | None = None) -> T:
        """The fit: the round (on its own, by default in worker threads), then the read-out."""
        if self.round is None:
            return self.finish(None)
        return self.finish(run([self.round], self.rows, executor=executor)[0].estimates)


def staged_start(estimator: Any) -> Callable[..., PendingFit[Any]] | None:
    """The estimator's staged fit (``_start_fit``), or ``None`` when it has none or when its
    class overrides ``fit`` below the class that defines ``_start_fit`` (a subclass that
    changes ``fit`` is fitted with its own ``fit``, never silently replaced by the staged one)."""
    start = getattr(estimator, "_start_fit", None)
    if start is None:
        return None
    mro = type(estimator).__mro__
    owner = next(c for c in mro if "_start_fit" in vars(c))
    fit_owner = next((c for c in mro if "fit" in vars(c)), None)
    if fit_owner is not None and fit_owner is not owner and issubclass(fit_owner, owner):
        return None
    return cast(Callable[..., PendingFit[Any]], start)


def fit_many(
    estimators: Sequence[Any],
    X: Any,
    y: Any = None,
    *,
    X_public: Any = None,
    y_public: Any = None,
    executor: Executor | None = None,
) -> list[Any]:
    """Fit every estimator on the same data, with their rounds run together (module docstring).

    Each estimator ends exactly as ``estimator.fit(X, y, X_public=X_public, y_public=y_public)``
    leaves it; estimators without staged fits (``_start_fit``), or whose class overrides
    ``fit`` (:func:`staged_start`), are fitted with ``fit``. ``X``
    must be re-readable (an array or a memory map, not a one-shot iterable of chunks). With the
    default executor (:class:`~ldptree.rounds.Batched`) the scaled rows and their routes are held
    in memory for the whole call (one copy per distinct scaling and chunk size, one route per
    distinct partition): this is for grids on data that fit in memory; stream a large data set
    through each estimator's ``fit``, or pass another ``executor`` (e.g.
    :class:`~ldptree.rounds.Dask`). Returns the fitted estimators in order."""
    if not isinstance(X, np.ndarray | jax.Array) and not hasattr(X, "__array__"):
        raise TypeError(
            "fit_many reads X once per distinct scaling, so X must be an array or a memory map, "
            f"got {type(X).__name__}"
        )
    executor = Batched() if executor is None else executor
    pending: list[tuple[int, PendingFit[Any]]] = []
    fitted: list[Any] = list(estimators)
    for index, estimator in enumerate(estimators):
        start = staged_start(estimator)
        if start is None:
            fitted[index] = estimator.fit(X, y, X_public=X_public, y_public=y_public)
        else:
            pending.append((index, start(X, y, X_public=X_public, y_public=y_public)))
    # rows checked alike read alike: one source per kind of label check (real labels, classes)
    groups: dict[Any, list[tuple[int, PendingFit[Any]]]] = {}
    for index, p in pending:
        if p.round is not None:
            groups.setdefault(p.rows.label_check, []).append((index, p))
    done: dict[int, CellEstimates] = {}
    for members in groups.values():
        rounds = [p.round for _, p in members if p.round is not None]
        results = run(rounds, members[0][1].rows, executor=executor)
        done.update({index: r.estimates for (index, _), r in zip(members, results, strict=True)})
    for index, p in pending:
        fitted[index] = p.finish(done.get(index))
    return fitted
