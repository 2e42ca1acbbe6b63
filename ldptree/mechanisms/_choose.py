"""A variance-aware default: the mechanism and split with the smallest predicted error.

Given what the curator publishes anyway (the partition's ``L`` cells, the budget ``epsilon`` and
the declared label bound or the class count), every ``auto`` candidate of the mechanism registry
(:func:`~ldptree.mechanisms.mechanism_registry`, in its order) is evaluated by the
error proxy of :mod:`ldptree.mechanisms._split`, computed from the candidates' own per-holder
variance bounds (:meth:`cell_variance`):

* regression: ``E = L^2 (sqrt(V_s) + m sqrt(V_c))^2`` bounds ``n`` times the variance of one cell's
  debiased mean ``s^_j / c^_j`` (delta method, a cell holding ``n / L`` holders, ``m`` half the
  label range since the mechanisms here are shift invariant);
* classification: the same with ``m = 1`` (a class proportion lies in ``[0, 1]``) and ``V_s`` the
  variance of one per-class count.

Families with a ``budget_split`` are evaluated at their computed optimal split
(:func:`~ldptree.mechanisms.optimal_split`). The choice uses public quantities only, so it costs
no privacy, and does not depend on ``n`` (every proxy scales as ``1 / n``). It is a *prediction*:
the proxy is an upper bound whose slack differs between families, so the documentation's
comparison measures where the chosen mechanism really wins.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import attrs

from ldptree._validation import check_int, to_epsilon, to_label_bound
from ldptree.mechanisms._registry import MechanismRegistry, mechanism_registry
from ldptree.mechanisms._split import optimal_split, predicted_error
from ldptree.mechanisms._variance import SupportsVariance

__all__ = ["MechanismChoice", "choose_class_mechanism", "choose_regression_mechanism"]


@attrs.frozen
class MechanismChoice:
    """The chosen mechanism and what the choice compared.

    ``name`` the family (``"krr-joint"`` families carry their levels, e.g. ``"krr-joint/2"``);
    ``mechanism`` the chosen mechanism (with the caller's label bound); ``budget_split`` its
    split (``None`` for one-release families); ``predicted`` its proxy ``E``; ``candidates`` every
    ``(name, budget_split, E)`` evaluated, best first.
    """

    name: str
    mechanism: Any
    budget_split: float | None
    predicted: float
    candidates: tuple[tuple[str, float | None, float], ...]

    def describe(self) -> str:
        """One line for ledgers and logs, e.g. ``"rr-duchi (budget_split=0.58, predicted error
        0.53x the paper's)"``."""
        paper = next((e for name, _, e in self.candidates if name in ("rr-laplace", "laplace")), 0)
        ratio = f", predicted error {self.predicted / paper:.2g}x the paper's" if paper else ""
        split = "" if self.budget_split is None else f"budget_split={self.budget_split:.3g}"
        inner = ", ".join(part for part in (split, ratio.lstrip(", ")) if part)
        return f"{self.name} ({inner})" if inner else self.name


def choose_regression_mechanism(
    n_cells: int,
    epsilon: float,
    label_bound: Any,
    *,
    budget_split: float | None = None,
    registry: MechanismRegistry | None = None,
) -> MechanismChoice:
    """The regression mechanism with the smallest predicted error of a cell mean (module
    docstring). ``budget_split`` fixes the split for every family instead of computing it;
    ``registry`` (default :func:`~ldptree.mechanisms.mechanism_registry`) lists the candidates."""
    n_cells = check_int(n_cells, "n_cells", minimum=1)
    bound = to_label_bound(label_bound)
    split = None if budget_split is None else float(budget_split)
    registry = mechanism_registry() if registry is None else registry
    best = _regression_table(n_cells, to_epsilon(epsilon), bound[1] - bound[0], split, registry)
    name, rho, predicted = best[0]
    candidate, entry = registry.candidate(name, "regression")
    rhos = {"budget_split": rho} if entry.splits else {}
    mechanism = entry.factory(candidate)(epsilon=epsilon, label_bound=bound, **rhos)
    return MechanismChoice(name, mechanism, rho, predicted, best)


def choose_class_mechanism(
    n_cells: int, epsilon: float, n_classes: int, *, registry: MechanismRegistry | None = None
) -> MechanismChoice:
    """The class mechanism with the smallest predicted error of a cell's class proportions
    (``registry`` as for :func:`choose_regression_mechanism`)."""
    n_cells = check_int(n_cells, "n_cells", minimum=1)
    k = check_int(n_classes, "n_classes", minimum=2)
    registry = mechanism_registry() if registry is None else registry
    best = _class_table(n_cells, to_epsilon(epsilon), k, registry)
    name, _, predicted = best[0]
    candidate, entry = registry.candidate(name, "classification")
    mechanism = entry.factory(candidate)(epsilon=epsilon, n_classes=k)
    return MechanismChoice(name, mechanism, None, predicted, best)


Row = tuple[str, float | None, float]


@lru_cache(maxsize=256)
def _regression_table(
    n_cells: int, epsilon: float, width: float, split: float | None, registry: MechanismRegistry
) -> tuple[Row, ...]:
    # Shift invariance (module docstring): the proxy depends on the bound only through its width.
    centred = (-width / 2.0, width / 2.0)
    rows: list[Row] = []
    for candidate, entry in registry.candidates("regression"):
        factory = entry.factory(candidate)
        if not entry.splits:
            mech = factory(epsilon=epsilon, label_bound=centred)
            rows.append((candidate.name, None, predicted_error(mech, n_cells, centred)))
        elif split is None:
            choice = optimal_split(factory, n_cells, epsilon, centred)
            rows.append((candidate.name, choice.budget_split, choice.predicted))
        else:
            mech = factory(epsilon=epsilon, label_bound=centred, budget_split=split)
            rows.append((candidate.name, split, predicted_error(mech, n_cells, centred)))
    return _ranked(rows)


@lru_cache(maxsize=256)
def _class_table(
    n_cells: int, epsilon: float, n_classes: int, registry: MechanismRegistry
) -> tuple[Row, ...]:
    rows: list[Row] = []
    for candidate, entry in registry.candidates("classification"):
        mech = entry.factory(candidate)(epsilon=epsilon, n_classes=n_classes)
        if not isinstance(mech, SupportsVariance):  # pragma: no cover - every family implements it
            raise TypeError(f"{candidate.name} does not implement cell_variance")
        count, label_sum = mech.cell_variance(n_cells).mixed(1.0 / n_cells)
        error = n_cells**2 * (math.sqrt(label_sum) + math.sqrt(count)) ** 2
        rows.append((candidate.name, None, float(error)))
    return _ranked(rows)


def _ranked(rows: list[Row]) -> tuple[Row, ...]:
    if not rows:
        raise ValueError("registry has no candidates for mechanism='auto' for this task")
    # Ties go to the earlier family (the papers' mechanism is listed first).
    order = {name: i for i, (name, _, _) in enumerate(rows)}
    return tuple(sorted(rows, key=lambda r: (r[2], order[r[0]])))
