"""The estimators' default mechanism: variance-aware (``"auto"``) or the papers' (``"paper"``).

``mechanism="auto"`` (the default of :class:`~ldptree.LPDTRegressor` and the LPCT classifiers)
picks, once the partition is grown on public data, the library mechanism with the smallest
predicted error of the per-cell estimates for that number of cells, epsilon and label bound (or
class count); for regression with public labels the prediction is the candidates' exact variance
at the public labels' moments (:func:`~ldptree.mechanisms.choose_regression_mechanism`,
:func:`~ldptree.mechanisms.choose_class_mechanism`). The inputs are public, so the choice costs
no privacy; the fitted ``mechanism_choice_`` says what was chosen and what it was compared with.
``mechanism="paper"`` is the papers' mechanism (randomized response with ``budget_split = 1/2``
plus a Laplace-type label for LPDT, Laplace noise on the cell and cell-by-class one-hots for
LPCT), as the experiment registry's paper rows use.
"""

from __future__ import annotations

from typing import Any

from ldptree._validation import check_choice, check_open_unit
from ldptree.estimators._composition import check_mechanism, is_named
from ldptree.mechanisms._choose import (
    MechanismChoice,
    choose_class_mechanism,
    choose_regression_mechanism,
)
from ldptree.mechanisms._registry import mechanism_registry
from ldptree.protocols import Mechanism

__all__ = ["class_mechanism", "regression_mechanism"]


def _split(budget_split: Any) -> float | None:
    if isinstance(budget_split, str):
        check_choice(budget_split, "budget_split", ("auto",))
        return None
    return check_open_unit(budget_split, "budget_split")


def regression_mechanism(
    mechanism: Any,
    epsilon: float,
    bound: tuple[float, float],
    n_cells: int,
    budget_split: Any,
    *,
    public_labels: Any = None,
    public_cells: Any = None,
) -> tuple[Mechanism, MechanismChoice | None]:
    """The regression mechanism for a partition of ``n_cells`` cells and the choice behind it.

    ``budget_split="auto"``: the paper's ``1/2`` for ``"paper"``, the computed optimum for
    ``"auto"``; a number fixes the split (every family is then compared at that split).
    ``public_labels`` and their ``public_cells`` (public data only): ``"auto"`` ranks by the exact
    variances at their moments, otherwise by the bounds."""
    if not is_named(mechanism):
        return check_mechanism(mechanism, epsilon), None
    rho = _split(budget_split)
    if mechanism == "paper":
        split = 0.5 if rho is None else rho
        paper = mechanism_registry().named("paper", "regression")
        return paper.build(epsilon, label_bound=bound, budget_split=split), None
    choice = choose_regression_mechanism(
        n_cells,
        epsilon,
        bound,
        budget_split=rho,
        public_labels=public_labels,
        public_cells=public_cells,
    )
    return choice.mechanism, choice


def class_mechanism(
    mechanism: Any, epsilon: float, n_classes: int, n_cells: int, *, simulated: bool
) -> tuple[Mechanism, MechanismChoice | None]:
    """The class mechanism for ``n_cells`` cells and ``n_classes`` classes and the choice.

    With the aggregate simulation (``simulated``) only mechanisms that can draw summed reports
    qualify, so ``"auto"`` is the papers' Laplace mechanism there."""
    if not is_named(mechanism):
        return check_mechanism(mechanism, epsilon), None
    if mechanism == "paper" or simulated:
        paper = mechanism_registry().named("paper", "classification")
        return paper.build(epsilon, n_classes=n_classes), None
    choice = choose_class_mechanism(n_cells, epsilon, n_classes)
    return choice.mechanism, choice
