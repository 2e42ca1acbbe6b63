"""A variance-aware default: the mechanism and split with the smallest predicted error.

Given what the curator publishes anyway (the partition's ``L`` cells, the budget ``epsilon``, the
declared label bound or the class count and, for regression, the public labels), every ``auto``
candidate of the mechanism registry (:func:`~ldptree.mechanisms.mechanism_registry`, in its
order) is evaluated by a prediction of ``n`` times the variance of one cell's debiased mean
``s^_j / c^_j``. By the delta method around the true ``(s_j, c_j)`` with cell mean ``mu_j`` and
a cell holding ``n / L`` holders, that is ``L^2`` times the per-holder variance of
``s^_j - mu_j c^_j`` averaged over the holders (a share ``1 / L`` inside the cell):

* regression with public labels (the estimators' default): the **exact** per-holder variances
  (:meth:`~ldptree.mechanisms.SupportsExactVariance.exact_cell_variance`),

      E = L^2 [ (1 / L) v_in + (1 - 1 / L) v_out ],

  ``v_in`` the own-cell label-sum variance at the moments of the public labels' residuals from
  their public leaf means, ``v_out`` the others' at the moments of the public labels centred at
  their mean ``c``, both for the mechanism with its bound shifted by ``-c``. The mechanisms here
  are shift invariant (a label enters only through its position in the bound), so the label
  sum of the shifted mechanism is ``s^_j - c c^_j``; measuring the own cell's labels from their
  leaf mean instead of ``c`` is the one approximation (exact where leaf means are equal).
  Moments are those of the label as each mechanism encodes it (clipped, rounded to its levels:
  :func:`~ldptree.mechanisms.label_moments`);
* regression without public labels (or a candidate without an exact variance): the worst-case
  bound of :mod:`ldptree.mechanisms._split`, ``E = L^2 (sqrt(V_s) + m sqrt(V_c))^2`` from the
  candidates' ``cell_variance`` (``m`` half the label range);
* classification: the bound with ``m = 1`` (a class proportion lies in ``[0, 1]``) and ``V_s``
  the variance of one per-class count.

Families with a ``budget_split`` are evaluated at the split minimising the bound's ``E``
(:func:`~ldptree.mechanisms.optimal_split`; that split depends on ``epsilon`` alone, is
computed once and cached, and searching it by the exact ``E`` instead would cost about 0.3 s per
family and fit). The choice uses public quantities only, so it costs
no privacy, and does not depend on ``n`` (every prediction scales as ``1 / n``). It is a
*prediction* of the ratio read-out's error: the documentation's comparison measures where the
chosen mechanism really wins.
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

import attrs
import numpy as np

from ldptree._validation import check_int, to_epsilon, to_label_bound
from ldptree.mechanisms._registry import MechanismRegistry, mechanism_registry
from ldptree.mechanisms._split import optimal_split, predicted_error
from ldptree.mechanisms._variance import SupportsExactVariance, SupportsVariance, label_moments

__all__ = ["MechanismChoice", "choose_class_mechanism", "choose_regression_mechanism"]


@attrs.frozen
class MechanismChoice:
    """The chosen mechanism and what the choice compared.

    ``name`` the family (``"krr-joint"`` families carry their levels, e.g. ``"krr-joint/2"``);
    ``mechanism`` the chosen mechanism (with the caller's label bound); ``budget_split`` its
    split (``None`` for one-release families); ``predicted`` its predicted ``E``; ``candidates``
    every ``(name, budget_split, E)`` evaluated, best first; ``basis`` ``"exact"`` (exact
    variances at public-label moments), ``"exact-shrink"`` (the shrinkage read-out's error,
    :mod:`ldptree.estimators._shrunk_choice`) or ``"bound"`` (worst-case bounds).
    """

    name: str
    mechanism: Any
    budget_split: float | None
    predicted: float
    candidates: tuple[tuple[str, float | None, float], ...]
    basis: str = "bound"

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
    public_labels: Any = None,
    public_cells: Any = None,
) -> MechanismChoice:
    """The regression mechanism with the smallest predicted error of a cell mean (module
    docstring). ``budget_split`` fixes the split for every family instead of computing it;
    ``registry`` (default :func:`~ldptree.mechanisms.mechanism_registry`) lists the candidates.

    ``public_labels`` (``float[m]``, public data only) ranks by the exact variances at their
    moments, with ``public_cells`` (``int[m]``, each label's cell) giving the leaf means the own
    cell's labels are measured from (without it: the overall public mean); without public
    labels the worst-case bounds rank."""
    n_cells = check_int(n_cells, "n_cells", minimum=1)
    bound = to_label_bound(label_bound)
    eps = to_epsilon(epsilon)
    split = None if budget_split is None else float(budget_split)
    registry = mechanism_registry() if registry is None else registry
    best = _regression_table(n_cells, eps, bound[1] - bound[0], split, registry)
    basis = "bound"
    if public_labels is not None:
        residuals, centred, centre = public_residuals(public_labels, public_cells, n_cells, bound)
        shifted = (bound[0] - centre, bound[1] - centre)
        exact = _exact_table(best, n_cells, eps, shifted, residuals, centred, registry)
        if exact is not None:
            best, basis = exact, "exact"
    name, rho, predicted = best[0]
    mechanism = rebuilt_candidate(name, rho, epsilon, bound, registry)
    return MechanismChoice(name, mechanism, rho, predicted, best, basis)


def rebuilt_candidate(
    name: str,
    rho: float | None,
    epsilon: float,
    bound: tuple[float, float],
    registry: MechanismRegistry | None = None,
) -> Any:
    """The regression candidate ``(name, budget_split)`` of a choice's table, built at
    ``bound``."""
    registry = mechanism_registry() if registry is None else registry
    candidate, entry = registry.candidate(name, "regression")
    rhos = {"budget_split": rho} if entry.splits else {}
    return entry.factory(candidate)(epsilon=epsilon, label_bound=bound, **rhos)


def public_residuals(
    labels: Any, cells: Any, n_cells: int, bound: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray, float]:
    """``(residuals, centred, c)``: the public labels clipped to the bound, minus their leaf
    means (``cells``) or their mean ``c``, and minus ``c``."""
    y = np.asarray(labels, dtype=np.float64).reshape(-1)
    if y.size == 0 or not np.all(np.isfinite(y)):
        raise ValueError("public_labels must hold at least one label, all finite")
    y = np.clip(y, *bound)
    centre = float(y.mean())
    if cells is None:
        return y - centre, y - centre, centre
    leaf = np.asarray(cells).reshape(-1)
    if leaf.shape != y.shape or not np.issubdtype(leaf.dtype, np.integer):
        raise ValueError("public_cells must be integers, one per public label")
    if leaf.size and (leaf.min() < 0 or leaf.max() >= n_cells):
        raise ValueError(f"public_cells must lie in [0, n_cells={n_cells})")
    size = np.maximum(np.bincount(leaf, minlength=n_cells), 1)
    means = np.bincount(leaf, y, n_cells) / size
    return y - means[leaf], y - centre, centre


def exact_error(mechanism: Any, n_cells: int, residuals: Any, centred: Any) -> float:
    """``E = L^2 [(1/L) v_in + (1 - 1/L) v_out]`` of the module docstring for a mechanism whose
    bound is already shifted by the public mean: ``v_in`` its own-cell label-sum variance at the
    moments of ``residuals``, ``v_out`` the others' at those of ``centred``."""
    inside = mechanism.exact_cell_variance(n_cells, **_moments(mechanism, residuals))
    outside = mechanism.exact_cell_variance(n_cells, **_moments(mechanism, centred))
    share = 1.0 / n_cells
    v = share * inside.label_sum_inside + (1.0 - share) * outside.label_sum_outside
    return float(n_cells**2 * v)


def _moments(mechanism: Any, labels: Any) -> dict[str, float]:
    m1, m2 = label_moments(mechanism, labels)
    return {"label_mean": m1, "label_second_moment": m2}


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


def _exact_table(
    table: tuple[Row, ...],
    n_cells: int,
    epsilon: float,
    shifted: tuple[float, float],
    residuals: np.ndarray,
    centred: np.ndarray,
    registry: MechanismRegistry,
) -> tuple[Row, ...] | None:
    """The bound table's candidates (at its splits) ranked by :func:`exact_error`; ``None``
    (the bounds rank) when a candidate states no exact variance (a registered mechanism
    without ``exact_cell_variance``), so that the table compares like with like."""
    rows: list[Row] = []
    for name, rho, _ in table:
        mechanism = rebuilt_candidate(name, rho, epsilon, shifted, registry)
        if not isinstance(mechanism, SupportsExactVariance):
            return None
        rows.append((name, rho, exact_error(mechanism, n_cells, residuals, centred)))
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
